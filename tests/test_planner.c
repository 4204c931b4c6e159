/* tests/test_planner.c: the affinity planner on every generated machine shape: the expected plan
 * of every mode x cores x balanced combination written out, the failure rules (GPU with no
 * allowed core, bucket with fewer cores than GPUs, bad options), overlapping candidate sets, and
 * property tests over random allowed sets (disjoint unique modes, sets inside the allowed CPUs
 * and the GPU's local CPUs, equal balanced sizes, determinism). */
#include <string.h>

#include "case_list.h"
#include "fixture_util.h"

/* The plan as text: each rank's cpulist, " | " between ranks; a failing rank is "!". */
static const char *plan_text(const stk_plan_rank *ranks, int nproc) {
  static char text[65536];
  size_t len = 0;
  text[0] = '\0';
  for (int i = 0; i < nproc; i++) {
    if (i) len += (size_t)snprintf(text + len, sizeof text - len, " | ");
    if (ranks[i].status != STK_OK) len += (size_t)snprintf(text + len, sizeof text - len, "!");
    else len += stk_cpuset_format(&ranks[i].cpus, text + len, sizeof text - len);
  }
  return text;
}

static stk_status plan(stk_topology *topo, int nproc, const char *mode, const char *cores, int balanced,
                       const char *allowed, stk_plan_rank *ranks) {
  stk_plan_options options;
  stk_plan_options_default(&options);
  options.nproc_per_node = nproc;
  CHECK(stk_affinity_mode_parse(mode, &options.mode) == STK_OK);
  CHECK(stk_cores_mode_parse(cores, &options.cores) == STK_OK);
  options.balanced = balanced;
  if (allowed) {
    options.use_allowed = 1;
    CHECK(stk_cpuset_parse(allowed, &options.allowed, NULL, 0) == STK_OK);
  }
  return stk_plan_compute(topo, &options, ranks);
}

/* One expected plan for both balanced settings (unbalanced == NULL: the same as balanced). */
typedef struct plan_case {
  const char *mode;
  const char *cores;
  const char *balanced;
  const char *unbalanced;
} plan_case;

static void check_cases(const char *shape, int nproc, const char *allowed, const plan_case *cases, int count) {
  stk_topology *topo = fixture_load(shape);
  if (!topo) return;
  stk_plan_rank ranks[16];
  for (int c = 0; c < count; c++) {
    for (int balanced = 1; balanced >= 0; balanced--) {
      const char *expected = balanced || !cases[c].unbalanced ? cases[c].balanced : cases[c].unbalanced;
      stk_status status = plan(topo, nproc, cases[c].mode, cases[c].cores, balanced, allowed, ranks);
      const char *got = plan_text(ranks, nproc);
      CHECK_MSG(strcmp(got, expected) == 0, "%s nproc=%d %s %s %s:\n   got      %s\n   expected %s", shape, nproc,
                cases[c].mode, cases[c].cores, balanced ? "balanced" : "unbalanced", got, expected);
      CHECK(status == (strchr(expected, '!') ? STK_EPLAN : STK_OK));
    }
  }
  stk_topology_destroy(topo);
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void dgx_every_mode_cores_and_balance_as_nvidia(void) {
  static const plan_case cases[] = {
      {"none", "all_logical", "0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79", NULL},
      {"none", "single_logical", "0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79 | 0-79", NULL},
      {"socket", "all_logical",
       "0-19,40-59 | 0-19,40-59 | 0-19,40-59 | 0-19,40-59 | 20-39,60-79 | 20-39,60-79 | 20-39,60-79 | 20-39,60-79",
       NULL},
      {"socket", "single_logical", "0-19 | 0-19 | 0-19 | 0-19 | 20-39 | 20-39 | 20-39 | 20-39", NULL},
      {"socket_single", "all_logical", "0,40 | 0,40 | 0,40 | 0,40 | 20,60 | 20,60 | 20,60 | 20,60", NULL},
      {"socket_single", "single_logical", "0 | 0 | 0 | 0 | 20 | 20 | 20 | 20", NULL},
      {"socket_single_unique", "all_logical", "0,40 | 1,41 | 2,42 | 3,43 | 20,60 | 21,61 | 22,62 | 23,63", NULL},
      {"socket_single_unique", "single_logical", "0 | 1 | 2 | 3 | 20 | 21 | 22 | 23", NULL},
      {"socket_unique_contiguous", "all_logical",
       "0-4,40-44 | 5-9,45-49 | 10-14,50-54 | 15-19,55-59 | 20-24,60-64 | 25-29,65-69 | 30-34,70-74 | 35-39,75-79",
       NULL},
      {"socket_unique_contiguous", "single_logical", "0-4 | 5-9 | 10-14 | 15-19 | 20-24 | 25-29 | 30-34 | 35-39", NULL},
      {"socket_unique_interleaved", "all_logical",
       "0,4,8,12,16,40,44,48,52,56 | 1,5,9,13,17,41,45,49,53,57 | 2,6,10,14,18,42,46,50,54,58 | "
       "3,7,11,15,19,43,47,51,55,59 | "
       "20,24,28,32,36,60,64,68,72,76 | 21,25,29,33,37,61,65,69,73,77 | 22,26,30,34,38,62,66,70,74,78 | "
       "23,27,31,35,39,63,67,71,75,79",
       NULL},
      {"socket_unique_interleaved", "single_logical",
       "0,4,8,12,16 | 1,5,9,13,17 | 2,6,10,14,18 | 3,7,11,15,19 | 20,24,28,32,36 | 21,25,29,33,37 | 22,26,30,34,38 | "
       "23,27,31,35,39",
       NULL},
  };
  check_cases("dgx-2s20c2t-8gpu", 8, NULL, cases, COUNT(cases));

  /* Five ranks: GPU 4 is alone in its bucket (20 cores); balanced keeps it at the others' 5. */
  static const plan_case five[] = {
      {"socket_unique_contiguous", "all_logical", "0-4,40-44 | 5-9,45-49 | 10-14,50-54 | 15-19,55-59 | 20-24,60-64",
       "0-4,40-44 | 5-9,45-49 | 10-14,50-54 | 15-19,55-59 | 20-39,60-79"},
      {"socket_unique_interleaved", "single_logical", "0,4,8,12,16 | 1,5,9,13,17 | 2,6,10,14,18 | 3,7,11,15,19 | 20-24",
       "0,4,8,12,16 | 1,5,9,13,17 | 2,6,10,14,18 | 3,7,11,15,19 | 20-39"},
  };
  check_cases("dgx-2s20c2t-8gpu", 5, NULL, five, COUNT(five));
  static const plan_case two[] = {
      {"socket_unique_contiguous", "all_logical", "0-9,40-49 | 10-19,50-59", NULL},
      {"socket_single_unique", "single_logical", "0 | 1", NULL},
  };
  check_cases("dgx-2s20c2t-8gpu", 2, NULL, two, COUNT(two));
}

static void restricted_cpuset_plans_inside_the_allowed_cpus(void) {
  /* The recorded process may use 0-9,20-24,40-49,60-64: node 0 keeps 10 cores, node 1 only 5. */
  static const plan_case cases[] = {
      {"none", "all_logical",
       "0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | "
       "0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64",
       NULL},
      {"none", "single_logical",
       "0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | "
       "0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64 | 0-9,20-24,40-49,60-64",
       NULL},
      {"socket", "all_logical",
       "0-9,40-49 | 0-9,40-49 | 0-9,40-49 | 0-9,40-49 | 20-24,60-64 | 20-24,60-64 | 20-24,60-64 | 20-24,60-64", NULL},
      {"socket", "single_logical", "0-9 | 0-9 | 0-9 | 0-9 | 20-24 | 20-24 | 20-24 | 20-24", NULL},
      {"socket_single", "all_logical", "0,40 | 0,40 | 0,40 | 0,40 | 20,60 | 20,60 | 20,60 | 20,60", NULL},
      {"socket_single", "single_logical", "0 | 0 | 0 | 0 | 20 | 20 | 20 | 20", NULL},
      {"socket_single_unique", "all_logical", "0,40 | 1,41 | 2,42 | 3,43 | 20,60 | 21,61 | 22,62 | 23,63", NULL},
      {"socket_single_unique", "single_logical", "0 | 1 | 2 | 3 | 20 | 21 | 22 | 23", NULL},
      {"socket_unique_contiguous", "all_logical", "0,40 | 1,41 | 2,42 | 3,43 | 20,60 | 21,61 | 22,62 | 23,63",
       "0-1,40-41 | 2-3,42-43 | 4-5,44-45 | 6-7,46-47 | 20,60 | 21,61 | 22,62 | 23,63"},
      {"socket_unique_contiguous", "single_logical", "0 | 1 | 2 | 3 | 20 | 21 | 22 | 23",
       "0-1 | 2-3 | 4-5 | 6-7 | 20 | 21 | 22 | 23"},
      {"socket_unique_interleaved", "all_logical", "0,40 | 1,41 | 2,42 | 3,43 | 20,60 | 21,61 | 22,62 | 23,63",
       "0,4,8,40,44,48 | 1,5,9,41,45,49 | 2,6,42,46 | 3,7,43,47 | 20,24,60,64 | 21,61 | 22,62 | 23,63"},
      {"socket_unique_interleaved", "single_logical", "0 | 1 | 2 | 3 | 20 | 21 | 22 | 23",
       "0,4,8 | 1,5,9 | 2,6 | 3,7 | 20,24 | 21 | 22 | 23"},
  };
  check_cases("restricted-dgx", 8, NULL, cases, COUNT(cases));
}

static void nps4_buckets_follow_numa_nodes(void) {
  static const plan_case cases[] = {
      {"none", "all_logical", "0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255", NULL},
      {"none", "single_logical", "0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255 | 0-255", NULL},
      {"socket", "all_logical",
       "16-31,144-159 | 16-31,144-159 | 48-63,176-191 | 48-63,176-191 | 80-95,208-223 | 80-95,208-223 | "
       "112-127,240-255 | 112-127,240-255",
       NULL},
      {"socket", "single_logical", "16-31 | 16-31 | 48-63 | 48-63 | 80-95 | 80-95 | 112-127 | 112-127", NULL},
      {"socket_single", "all_logical", "16,144 | 16,144 | 48,176 | 48,176 | 80,208 | 80,208 | 112,240 | 112,240", NULL},
      {"socket_single", "single_logical", "16 | 16 | 48 | 48 | 80 | 80 | 112 | 112", NULL},
      {"socket_single_unique", "all_logical", "16,144 | 17,145 | 48,176 | 49,177 | 80,208 | 81,209 | 112,240 | 113,241",
       NULL},
      {"socket_single_unique", "single_logical", "16 | 17 | 48 | 49 | 80 | 81 | 112 | 113", NULL},
      {"socket_unique_contiguous", "all_logical",
       "16-23,144-151 | 24-31,152-159 | 48-55,176-183 | 56-63,184-191 | 80-87,208-215 | 88-95,216-223 | "
       "112-119,240-247 | 120-127,248-255",
       NULL},
      {"socket_unique_contiguous", "single_logical",
       "16-23 | 24-31 | 48-55 | 56-63 | 80-87 | 88-95 | 112-119 | 120-127", NULL},
      {"socket_unique_interleaved", "all_logical",
       "16,18,20,22,24,26,28,30,144,146,148,150,152,154,156,158 | "
       "17,19,21,23,25,27,29,31,145,147,149,151,153,155,157,159 | "
       "48,50,52,54,56,58,60,62,176,178,180,182,184,186,188,190 | "
       "49,51,53,55,57,59,61,63,177,179,181,183,185,187,189,191 | "
       "80,82,84,86,88,90,92,94,208,210,212,214,216,218,220,222 | "
       "81,83,85,87,89,91,93,95,209,211,213,215,217,219,221,223 | "
       "112,114,116,118,120,122,124,126,240,242,244,246,248,250,252,254 | "
       "113,115,117,119,121,123,125,127,241,243,245,247,249,251,253,255",
       NULL},
      {"socket_unique_interleaved", "single_logical",
       "16,18,20,22,24,26,28,30 | 17,19,21,23,25,27,29,31 | 48,50,52,54,56,58,60,62 | 49,51,53,55,57,59,61,63 | "
       "80,82,84,86,88,90,92,94 | 81,83,85,87,89,91,93,95 | 112,114,116,118,120,122,124,126 | "
       "113,115,117,119,121,123,125,127",
       NULL},
  };
  check_cases("nps4-2s64c2t-8gpu", 8, NULL, cases, COUNT(cases));
}

static void numa_node_minus_one_uses_the_whole_machine(void) {
  static const plan_case cases[] = {
      {"none", "all_logical", "0-15", NULL},
      {"none", "single_logical", "0-15", NULL},
      {"socket", "all_logical", "0-15", NULL},
      {"socket", "single_logical", "0-7", NULL},
      {"socket_single", "all_logical", "0,8", NULL},
      {"socket_single", "single_logical", "0", NULL},
      {"socket_single_unique", "all_logical", "0,8", NULL},
      {"socket_single_unique", "single_logical", "0", NULL},
      {"socket_unique_contiguous", "all_logical", "0-15", NULL},
      {"socket_unique_contiguous", "single_logical", "0-7", NULL},
      {"socket_unique_interleaved", "all_logical", "0-15", NULL},
      {"socket_unique_interleaved", "single_logical", "0-7", NULL},
  };
  check_cases("vm-1s16-1gpu", 1, NULL, cases, COUNT(cases));
}

static void four_threads_per_core_stay_together(void) {
  /* Cores of 4 threads: {0-3} {4-7} {8-11} {12-15} on node 0 (GPUs 0, 1), {16-19}..{28-31} on node 8 (GPU 2). */
  static const plan_case cases[] = {
      {"none", "all_logical", "0-31 | 0-31 | 0-31", NULL},
      {"none", "single_logical", "0-31 | 0-31 | 0-31", NULL},
      {"socket", "all_logical", "0-15 | 0-15 | 16-31", NULL},
      {"socket", "single_logical", "0,4,8,12 | 0,4,8,12 | 16,20,24,28", NULL},
      {"socket_single", "all_logical", "0-3 | 0-3 | 16-19", NULL},
      {"socket_single", "single_logical", "0 | 0 | 16", NULL},
      {"socket_single_unique", "all_logical", "0-3 | 4-7 | 16-19", NULL},
      {"socket_single_unique", "single_logical", "0 | 4 | 16", NULL},
      {"socket_unique_contiguous", "all_logical", "0-7 | 8-15 | 16-23", "0-7 | 8-15 | 16-31"},
      {"socket_unique_contiguous", "single_logical", "0,4 | 8,12 | 16,20", "0,4 | 8,12 | 16,20,24,28"},
      {"socket_unique_interleaved", "all_logical", "0-3,8-11 | 4-7,12-15 | 16-23", "0-3,8-11 | 4-7,12-15 | 16-31"},
      {"socket_unique_interleaved", "single_logical", "0,8 | 4,12 | 16,20", "0,8 | 4,12 | 16,20,24,28"},
  };
  check_cases("smt4-2s4c4t-3gpu", 3, NULL, cases, COUNT(cases));
}

static void overlapping_candidate_sets_never_share_a_cpu(void) {
  /* GPU 1's numa_node is -1, so its candidates (all 16 CPUs) overlap GPU 0's (node 0) and GPU 2's
   * (node 1) without being identical. The most constrained buckets take their share first; GPU 1
   * takes its share from what is left, so the unique modes never share a CPU. */
  static const plan_case cases[] = {
      {"none", "all_logical", "0-15 | 0-15 | 0-15", NULL},
      {"none", "single_logical", "0-15 | 0-15 | 0-15", NULL},
      {"socket", "all_logical", "0-3,8-11 | 0-15 | 4-7,12-15", NULL},
      {"socket", "single_logical", "0-3 | 0-7 | 4-7", NULL},
      {"socket_single", "all_logical", "0,8 | 0,8 | 4,12", NULL},
      {"socket_single", "single_logical", "0 | 0 | 4", NULL},
      {"socket_single_unique", "all_logical", "0,8 | 1,9 | 4,12", NULL},
      {"socket_single_unique", "single_logical", "0 | 1 | 4", NULL},
      {"socket_unique_contiguous", "all_logical", "0-1,8-9 | 2-3,10-11 | 4-5,12-13", NULL},
      {"socket_unique_contiguous", "single_logical", "0-1 | 2-3 | 4-5", NULL},
      {"socket_unique_interleaved", "all_logical", "0-1,8-9 | 2-3,10-11 | 4-5,12-13", NULL},
      {"socket_unique_interleaved", "single_logical", "0-1 | 2-3 | 4-5", NULL},
  };
  check_cases("mixed-unknown-2s8c", 3, NULL, cases, COUNT(cases));
}

static void unplannable_gpus_fail_alone_with_reasons(void) {
  stk_topology *topo = fixture_load("dgx-2s20c2t-8gpu");
  if (!topo) return;
  stk_plan_rank ranks[16];

  /* Only socket 0 allowed: GPUs 4-7 fail alone, naming both lists; GPUs 0-3 keep their 5 cores. */
  stk_status status = plan(topo, 8, "socket_unique_contiguous", "all_logical", 1, "0-19,40-59", ranks);
  CHECK(status == STK_EPLAN);
  CHECK_STR(plan_text(ranks, 8), "0-4,40-44 | 5-9,45-49 | 10-14,50-54 | 15-19,55-59 | ! | ! | ! | !");
  CHECK(ranks[5].status == STK_EPLAN);
  CHECK_MSG(
      strstr(ranks[5].error, "20-39,60-79") && strstr(ranks[5].error, "0-19,40-59") && strstr(ranks[5].error, "GPU 5"),
      "error: %s", ranks[5].error);
  status = plan(topo, 8, "socket", "all_logical", 1, "0-19,40-59", ranks);
  CHECK(status == STK_EPLAN);
  CHECK_STR(plan_text(ranks, 8), "0-19,40-59 | 0-19,40-59 | 0-19,40-59 | 0-19,40-59 | ! | ! | ! | !");

  /* Node 0 keeps 3 cores for its 4 GPUs: that bucket fails and says so; node 1 is unaffected. */
  status = plan(topo, 8, "socket_unique_interleaved", "single_logical", 1, "0-2,40-42,20-39,60-79", ranks);
  CHECK(status == STK_EPLAN);
  CHECK_STR(plan_text(ranks, 8), "! | ! | ! | ! | 20,24,28,32,36 | 21,25,29,33,37 | 22,26,30,34,38 | 23,27,31,35,39");
  CHECK_MSG(strstr(ranks[2].error, "only 3 allowed cores") && strstr(ranks[2].error, "GPUs 0,1,2,3") &&
                strstr(ranks[2].error, "0-2,40-42"),
            "error: %s", ranks[2].error);
  status = plan(topo, 8, "socket_single_unique", "all_logical", 1, "0-2,40-42,20-39,60-79", ranks);
  CHECK(status == STK_EPLAN);
  CHECK_STR(plan_text(ranks, 8), "0,40 | 1,41 | 2,42 | ! | 20,60 | 21,61 | 22,62 | 23,63");
  CHECK_MSG(strstr(ranks[3].error, "taken"), "error: %s", ranks[3].error);
  /* The same restriction in the non-unique modes is fine: sharing is allowed there. */
  status = plan(topo, 8, "socket_single", "single_logical", 1, "0-2,40-42,20-39,60-79", ranks);
  CHECK(status == STK_OK);

  /* Bad options: the reason is in ranks[0].error. */
  CHECK(plan(topo, 9, "socket", "all_logical", 1, NULL, ranks) == STK_EINVAL);
  CHECK_MSG(strstr(ranks[0].error, "9") && strstr(ranks[0].error, "8"), "error: %s", ranks[0].error);
  CHECK(plan(topo, 0, "socket", "all_logical", 1, NULL, ranks) == STK_EINVAL);
  CHECK(plan(topo, 2, "socket", "all_logical", 1, "100-200", ranks) == STK_EINVAL);
  CHECK_MSG(strstr(ranks[0].error, "100-200"), "error: %s", ranks[0].error);
  CHECK(plan(topo, 2, "socket", "all_logical", 1, "", ranks) == STK_EINVAL);
  stk_plan_options options;
  stk_plan_options_default(&options);
  CHECK(options.nproc_per_node == 1 && options.mode == STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS);
  CHECK(options.cores == STK_CORES_ALL_LOGICAL && options.balanced == 1 && options.use_allowed == 0);
  options.mode = (stk_affinity_mode)99;
  CHECK(stk_plan_compute(topo, &options, ranks) == STK_EINVAL);
  stk_plan_options_default(&options);
  options.cores = (stk_cores_mode)7;
  CHECK(stk_plan_compute(topo, &options, ranks) == STK_EINVAL);
  CHECK(stk_plan_compute(topo, NULL, ranks) == STK_EINVAL);
  CHECK(stk_plan_compute(topo, &options, NULL) == STK_EINVAL);
  stk_topology_destroy(topo);

  topo = fixture_load("nonuma-4cpu-nogpu");
  if (!topo) return;
  stk_plan_options_default(&options);
  CHECK(stk_plan_compute(topo, &options, ranks) == STK_EINVAL);
  CHECK_MSG(strstr(ranks[0].error, "no GPU"), "error: %s", ranks[0].error);
  stk_topology_destroy(topo);
}

static void mode_names_parse_and_print(void) {
  const char *modes[] = {"none",
                         "socket",
                         "socket_single",
                         "socket_single_unique",
                         "socket_unique_interleaved",
                         "socket_unique_contiguous"};
  for (int m = 0; m < 6; m++) {
    stk_affinity_mode mode;
    CHECK(stk_affinity_mode_parse(modes[m], &mode) == STK_OK);
    CHECK((int)mode == m);
    CHECK_STR(stk_affinity_mode_name(mode), modes[m]);
  }
  stk_affinity_mode mode;
  CHECK(stk_affinity_mode_parse("sockets", &mode) == STK_EINVAL);
  CHECK(stk_affinity_mode_parse("", &mode) == STK_EINVAL);
  CHECK(stk_affinity_mode_parse(NULL, &mode) == STK_EINVAL);
  CHECK_STR(stk_affinity_mode_name((stk_affinity_mode)42), "unknown");
  stk_cores_mode cores;
  CHECK(stk_cores_mode_parse("all_logical", &cores) == STK_OK && cores == STK_CORES_ALL_LOGICAL);
  CHECK(stk_cores_mode_parse("single_logical", &cores) == STK_OK && cores == STK_CORES_SINGLE_LOGICAL);
  CHECK(stk_cores_mode_parse("all", &cores) == STK_EINVAL);
  CHECK_STR(stk_cores_mode_name(STK_CORES_SINGLE_LOGICAL), "single_logical");
}

/* ---- properties over random allowed sets ------------------------------------------------------ */

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static unsigned next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state >> 11);
}

static int count_cores(const stk_topology *topo, const stk_cpuset *cpus) {
  int count = 0;
  stk_cpuset seen_cores;
  stk_cpuset_zero(&seen_cores);
  for (int cpu = stk_cpuset_first(cpus); cpu >= 0; cpu = stk_cpuset_next(cpus, cpu)) {
    int core = stk_topology_cpu_core(topo, cpu);
    if (!stk_cpuset_has(&seen_cores, core)) count++;
    stk_cpuset_add(&seen_cores, core);
  }
  return count;
}

static void check_properties(const char *shape) {
  stk_topology *topo = fixture_load(shape);
  if (!topo) return;
  stk_cpuset online;
  stk_topology_cpus_online(topo, &online);
  int gpu_count = stk_topology_num_gpus(topo);
  stk_plan_rank ranks[16], again[16];
  for (int round = 0; round < 300; round++) {
    stk_plan_options options;
    stk_plan_options_default(&options);
    options.nproc_per_node = 1 + (int)(next_random() % (unsigned)gpu_count);
    options.mode = (stk_affinity_mode)(next_random() % 6);
    options.cores = (stk_cores_mode)(next_random() % 2);
    options.balanced = (int)(next_random() % 2);
    options.use_allowed = 1;
    stk_cpuset_zero(&options.allowed);
    int density = 5 + (int)(next_random() % 96);
    for (int cpu = stk_cpuset_first(&online); cpu >= 0; cpu = stk_cpuset_next(&online, cpu))
      if ((int)(next_random() % 100) < density) stk_cpuset_add(&options.allowed, cpu);
    if (stk_cpuset_is_empty(&options.allowed)) stk_cpuset_add(&options.allowed, stk_cpuset_first(&online));
    int nproc = options.nproc_per_node;
    stk_status status = stk_plan_compute(topo, &options, ranks);
    CHECK(status == STK_OK || status == STK_EPLAN);
    CHECK(stk_plan_compute(topo, &options, again) == status);
    int unique = options.mode == STK_AFFINITY_SOCKET_SINGLE_UNIQUE ||
                 options.mode == STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS ||
                 options.mode == STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED;
    int shares =
        options.mode == STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS || options.mode == STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED;
    int balanced_size = -1, failures = 0;
    for (int i = 0; i < nproc; i++) {
      CHECK(ranks[i].gpu == i);
      CHECK(ranks[i].status == again[i].status && stk_cpuset_equal(&ranks[i].cpus, &again[i].cpus)); /* deterministic */
      if (ranks[i].status != STK_OK) {
        failures++;
        CHECK(ranks[i].error[0] != '\0');
        continue;
      }
      CHECK(!stk_cpuset_is_empty(&ranks[i].cpus));
      CHECK_MSG(stk_cpuset_is_subset(&ranks[i].cpus, &options.allowed), "%s rank %d outside allowed", shape, i);
      if (options.mode == STK_AFFINITY_NONE) continue;
      stk_cpuset local;
      stk_topology_gpu_local_cpus(topo, i, &local);
      CHECK_MSG(stk_cpuset_is_subset(&ranks[i].cpus, &local), "%s rank %d outside its GPU's local CPUs", shape, i);
      int cores = count_cores(topo, &ranks[i].cpus);
      if (options.cores == STK_CORES_SINGLE_LOGICAL) CHECK(cores == stk_cpuset_count(&ranks[i].cpus));
      if (options.mode == STK_AFFINITY_SOCKET_SINGLE || options.mode == STK_AFFINITY_SOCKET_SINGLE_UNIQUE)
        CHECK(cores == 1);
      if (unique)
        for (int j = 0; j < i; j++)
          if (ranks[j].status == STK_OK)
            CHECK_MSG(!stk_cpuset_intersects(&ranks[i].cpus, &ranks[j].cpus), "%s %s: ranks %d and %d share CPUs",
                      shape, stk_affinity_mode_name(options.mode), j, i);
      if (shares && options.balanced) {
        if (balanced_size < 0) balanced_size = cores;
        CHECK_MSG(cores == balanced_size, "%s balanced: rank %d has %d cores, others %d", shape, i, cores,
                  balanced_size);
      }
    }
    CHECK((status == STK_OK) == (failures == 0));
  }
  stk_topology_destroy(topo);
}

static void random_allowed_sets_keep_every_plan_property(void) {
  const char *shapes[] = {"dgx-2s20c2t-8gpu", "restricted-dgx",   "nps4-2s64c2t-8gpu",
                          "vm-1s16-1gpu",     "smt4-2s4c4t-3gpu", "mixed-unknown-2s8c"};
  for (int s = 0; s < 6; s++) check_properties(shapes[s]);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(mode_names_parse_and_print),
    STK_TEST_CASE(dgx_every_mode_cores_and_balance_as_nvidia),
    STK_TEST_CASE(restricted_cpuset_plans_inside_the_allowed_cpus),
    STK_TEST_CASE(nps4_buckets_follow_numa_nodes),
    STK_TEST_CASE(numa_node_minus_one_uses_the_whole_machine),
    STK_TEST_CASE(four_threads_per_core_stay_together),
    STK_TEST_CASE(overlapping_candidate_sets_never_share_a_cpu),
    STK_TEST_CASE(unplannable_gpus_fail_alone_with_reasons),
    STK_TEST_CASE(random_allowed_sets_keep_every_plan_property),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fixtures_build("planner");
  int status = stk_test_run_cases("test_planner", cases, STK_TEST_COUNT(cases), argc, argv);
  fixtures_remove();
  return status;
}
