/* tests/case_list.h: named test cases for one test file (a TEST_LIST in the libuv manner), so a
 * red run names the behaviour that broke: each case is a function and the property it checks,
 * `test_x` runs them all and prints "ok"/"FAIL" per name, `test_x NAME` runs one, `test_x --list`
 * names them. tests/CMakeLists.txt reads the STK_TEST_CASE(...) lines (one a line) and registers
 * one ctest entry per case, `test_x.NAME`, so a red CI names the behaviour that broke. A file's
 * setup in main() runs once per process, so once per case under ctest: keep it cheap, or share
 * it through a ctest fixture (the topology fixtures: tests/fixture_util.h). Test-only. */
#ifndef STOKER_TEST_CASE_LIST_H
#define STOKER_TEST_CASE_LIST_H
#include <stdio.h>
#include <string.h>

#include "testutil.h"

typedef struct stk_test_case {
  const char *name; /* the property, e.g. "exclusive_divides_among_ranks_not_visible_gpus" */
  void (*run)(void);
} stk_test_case;

/* `test_x --list`: the case names, one a line (tests/CMakeLists.txt registers one ctest entry per
 * STK_TEST_CASE line; this is the same list for a person). Returns 1 when it listed. */
static inline int stk_test_list_cases(const stk_test_case *cases, int count, int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--list") != 0) return 0;
  for (int i = 0; i < count; i++) printf("%s\n", cases[i].name);
  return 1;
}

/* Runs every case (or the one named in argv[1]), printing "ok"/"FAIL" per name; returns 0, or 2
 * when no case has that name. The caller calls stk_test_finish (after its own teardown). */
static inline int stk_test_run_selected(const char *file, const stk_test_case *cases, int count, int argc,
                                        char **argv) {
  int ran = 0, failed_cases = 0;
  for (int i = 0; i < count; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    int before = stk_test_failures;
    cases[i].run();
    ran++;
    int failed = stk_test_failures != before;
    failed_cases += failed;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", cases[i].name);
  }
  if (argc > 1 && ran == 0) {
    fprintf(stderr, "%s: no case named %s (--list names them)\n", file, argv[1]);
    return 2;
  }
  if (failed_cases) printf("%s: %d of %d cases failed\n", file, failed_cases, ran);
  return 0;
}

/* --list, or runs the cases and returns the process exit status (for files with no teardown). */
static inline int stk_test_run_cases(const char *file, const stk_test_case *cases, int count, int argc, char **argv) {
  if (stk_test_list_cases(cases, count, argc, argv)) return 0;
  int rc = stk_test_run_selected(file, cases, count, argc, argv);
  return rc ? rc : stk_test_finish(file);
}

#define STK_TEST_COUNT(cases) ((int)(sizeof(cases) / sizeof((cases)[0])))
#define STK_TEST_CASE(fn) \
  { #fn, fn }

#endif
