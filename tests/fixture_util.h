/* tests/fixture_util.h: generates the recorded sysfs trees (tests/fixtures/make_fixtures.sh) into
 * a fresh temporary directory for one test (or names the set ctest generated once for every case),
 * and loads a topology from one of them. Test-only. */
#ifndef STOKER_TEST_FIXTURE_UTIL_H
#define STOKER_TEST_FIXTURE_UTIL_H
#include <stdio.h>
#include <stdlib.h>

#include "stoker/topology.h"
#include "testutil.h"

static char fixture_dir[4096];  /* this process's own directory: the trees a test writes go here */
static char fixture_tree[4096]; /* the generated fixtures (read only): fixture_dir, or the shared set */
static int fixture_tree_owned;

/* Builds every fixture under a new temporary directory; exits the test on failure. Under ctest the
 * generator runs once for all the cases (the topology_fixtures fixture in tests/CMakeLists.txt)
 * and STOKER_TEST_FIXTURES names its directory: then only the empty fixture_dir is made here. */
static void fixtures_build(const char *tag) {
  char *dir = stk_test_tmpdir(tag);
  if (!dir) {
    fprintf(stderr, "cannot make a temporary directory\n");
    exit(1);
  }
  snprintf(fixture_dir, sizeof fixture_dir, "%s", dir);
  free(dir);
  const char *shared = getenv("STOKER_TEST_FIXTURES");
  fixture_tree_owned = !shared || !*shared;
  snprintf(fixture_tree, sizeof fixture_tree, "%s", fixture_tree_owned ? fixture_dir : shared);
  if (!fixture_tree_owned) return;
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "bash '%s' '%s' >/dev/null", stk_test_source_path("tests/fixtures/make_fixtures.sh"),
           fixture_dir);
  if (stk_test_run(cmd, NULL) != 0) {
    fprintf(stderr, "fixture generator failed: %s\n", cmd);
    exit(1);
  }
}

static void fixtures_remove(void) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fixture_dir);
  stk_test_run(cmd, NULL);
}

/* Path of one fixture (static buffer). */
static const char *fixture_path(const char *shape) {
  static char path[8192];
  snprintf(path, sizeof path, "%s/%s", fixture_tree, shape);
  return path;
}

/* Loads a fixture; NULL (with the error printed and counted) on failure. */
static stk_topology *fixture_load(const char *shape) {
  stk_topology *topo = NULL;
  if (stk_topology_new(&topo) != STK_OK) return NULL;
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = fixture_path(shape);
  stk_status status = stk_topology_load(topo, &options);
  CHECK_MSG(status == STK_OK, "load %s: %s", shape, stk_topology_last_error(topo));
  if (status != STK_OK) {
    stk_topology_destroy(topo);
    return NULL;
  }
  return topo;
}

__attribute__((unused)) static const char *cpus_text(const stk_cpuset *set) {
  static char buf[4][16384];
  static int next;
  char *out = buf[next++ % 4];
  stk_cpuset_format(set, out, sizeof buf[0]);
  return out;
}

#endif
