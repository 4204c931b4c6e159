/* tests/case_list.h: named test cases for one test file (a TEST_LIST in the libuv manner), so a
 * red run names the behaviour that broke: each case is a function and the property it checks,
 * `test_x` runs them all and prints "ok"/"FAIL" per name, `test_x NAME` runs one. Test-only. */
#ifndef STOKER_TEST_CASE_LIST_H
#define STOKER_TEST_CASE_LIST_H
#include <stdio.h>
#include <string.h>

#include "testutil.h"

typedef struct stk_test_case {
  const char *name; /* the property, e.g. "exclusive_divides_among_ranks_not_visible_gpus" */
  void (*run)(void);
} stk_test_case;

/* Runs every case (or the one named in argv[1]); returns the process exit status. */
static int stk_test_run_cases(const char *file, const stk_test_case *cases, int count, int argc, char **argv) {
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
    fprintf(stderr, "%s: no case named %s\n", file, argv[1]);
    return 2;
  }
  if (failed_cases) printf("%s: %d of %d cases failed\n", file, failed_cases, ran);
  return stk_test_finish(file);
}

#define STK_TEST_CASE(fn) {#fn, fn}

#endif
