/* tests/test_numa_binding.c: torchrun's --numa-binding modes on recorded trees. Each case names
 * the property it checks; the expected CPU sets are worked out by hand from torch/numa/binding.py
 * (PyTorch 2.9) for the torch rules, and from docs/topology.md for stoker's sound answers where
 * torch fails or wastes. Also the rank -> GPU resolution (LOCAL_RANK / SLURM_LOCALID through
 * CUDA_VISIBLE_DEVICES, by bus id and UUID). Test-only. */
#include <stdio.h>
#include <string.h>

#include "case_list.h"
#include "fixture_util.h"
#include "stoker/topology.h"

/* Plans nproc ranks; `expected` holds one cpulist per rank, or "!text" = that rank fails with a
 * message containing text. memory (may be NULL) = the expected memory node per rank. */
static void expect_binding(const char *shape, stk_numa_binding mode, stk_numa_rules rules, int nproc,
                           const char *allowed, const int *visible, int visible_count, const char *const *expected,
                           const int *memory) {
  stk_topology *topo = fixture_load(shape);
  if (!topo) return;
  stk_numa_binding_options options;
  stk_numa_binding_options_default(&options);
  options.mode = mode;
  options.rules = rules;
  options.nproc_per_node = nproc;
  if (allowed) {
    options.use_allowed = 1;
    CHECK(stk_cpuset_parse(allowed, &options.allowed, NULL, 0) == STK_OK);
  }
  for (int i = 0; i < visible_count; i++) options.visible_gpus[i] = visible[i];
  options.visible_count = visible_count;
  stk_plan_rank ranks[STK_MAX_VISIBLE_GPUS];
  stk_status status = stk_numa_binding_compute(topo, &options, ranks);
  CHECK_MSG(status == STK_OK || status == STK_EPLAN, "%s: status %s (%s)", shape, stk_status_name(status),
            ranks[0].error);
  for (int r = 0; r < nproc && (status == STK_OK || status == STK_EPLAN); r++) {
    const char *want = expected[r];
    if (want[0] == '!') {
      CHECK_MSG(ranks[r].status == STK_EPLAN && strstr(ranks[r].error, want + 1),
                "%s %s/%s rank %d: expected failure '%s', got %s [%s]", shape, stk_numa_binding_name(mode),
                stk_numa_rules_name(rules), r, want + 1, cpus_text(&ranks[r].cpus), ranks[r].error);
      continue;
    }
    CHECK_MSG(ranks[r].status == STK_OK && strcmp(cpus_text(&ranks[r].cpus), want) == 0,
              "%s %s/%s rank %d: got [%s] (%s), expected [%s]", shape, stk_numa_binding_name(mode),
              stk_numa_rules_name(rules), r, cpus_text(&ranks[r].cpus), ranks[r].error, want);
    if (memory)
      CHECK_MSG(ranks[r].memory_node == memory[r], "%s rank %d: memory node %d, expected %d", shape, r,
                ranks[r].memory_node, memory[r]);
  }
  stk_topology_destroy(topo);
}

#define BOTH_RULES(shape, mode, nproc, allowed, expected, memory)                                  \
  do {                                                                                             \
    expect_binding(shape, mode, STK_NUMA_RULES_TORCH, nproc, allowed, NULL, 0, expected, memory);  \
    expect_binding(shape, mode, STK_NUMA_RULES_STOKER, nproc, allowed, NULL, 0, expected, memory); \
  } while (0)

#define NPS1  "epyc-nps1-2s64c2t-8gpu"
#define NPS4  "epyc-nps4-2s64c2t-8gpu"
#define GB200 "gb200-2s72c-4gpu"

static void node_mode_binds_the_gpus_node_like_torch(void) {
  const char *nps1[] = {"0-63,128-191",   "0-63,128-191",   "0-63,128-191",   "0-63,128-191",
                        "64-127,192-255", "64-127,192-255", "64-127,192-255", "64-127,192-255"};
  const int memory[] = {0, 0, 0, 0, 1, 1, 1, 1};
  BOTH_RULES(NPS1, STK_NUMA_BINDING_NODE, 8, NULL, nps1, memory);
  const char *nps4[] = {"0-15,128-143",  "0-15,128-143",  "16-31,144-159", "48-63,176-191",
                        "64-79,192-207", "64-79,192-207", "80-95,208-223", "112-127,240-255"};
  const int memory4[] = {0, 0, 1, 3, 4, 4, 5, 7};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_NODE, 8, NULL, nps4, memory4);
}

static void socket_mode_binds_every_node_of_the_socket_like_torch(void) {
  const char *expected[] = {"0-63,128-191",   "0-63,128-191",   "0-63,128-191",   "0-63,128-191",
                            "64-127,192-255", "64-127,192-255", "64-127,192-255", "64-127,192-255"};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_SOCKET, 8, NULL, expected, NULL);
  BOTH_RULES(NPS1, STK_NUMA_BINDING_SOCKET, 8, NULL, expected, NULL);
}

static void exclusive_slices_physical_cores_like_torch(void) {
  const char *nps1[] = {"0-15,128-143",  "16-31,144-159", "32-47,160-175",  "48-63,176-191",
                        "64-79,192-207", "80-95,208-223", "96-111,224-239", "112-127,240-255"};
  BOTH_RULES(NPS1, STK_NUMA_BINDING_EXCLUSIVE, 8, NULL, nps1, NULL);
  const char *nps4[] = {"0-7,128-135",   "8-15,136-143",  "16-31,144-159", "48-63,176-191",
                        "64-71,192-199", "72-79,200-207", "80-95,208-223", "112-127,240-255"};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_EXCLUSIVE, 8, NULL, nps4, NULL);
  /* 5 cores for 2 ranks (cores 0-4 allowed on node 0 of NPS4): the first rank gets the extra one. */
  const char *uneven[] = {"0-2,128-130", "3-4,131-132"};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_EXCLUSIVE, 2, "0-4,128-132", uneven, NULL);
}

static void core_complex_gives_each_rank_its_own_l3_like_torch(void) {
  const char *nps1[] = {"0-7,128-135",   "8-15,136-143",  "16-23,144-151", "24-31,152-159",
                        "64-71,192-199", "72-79,200-207", "80-87,208-215", "88-95,216-223"};
  BOTH_RULES(NPS1, STK_NUMA_BINDING_CORE_COMPLEX, 8, NULL, nps1, NULL);
  const char *nps4[] = {"0-7,128-135",   "8-15,136-143",  "16-23,144-151", "48-55,176-183",
                        "64-71,192-199", "72-79,200-207", "80-87,208-215", "112-119,240-247"};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_CORE_COMPLEX, 8, NULL, nps4, NULL);
}

static void core_complex_prefers_complexes_with_more_allowed_cpus(void) {
  /* CPUs 0-3 outside the cpuset: complex 0 keeps 12 CPUs, complex 1 all 16, so rank 0 gets
   * complex 1 (torch sorts by (-allowed count, lowest CPU)). */
  const char *expected[] = {"8-15,136-143", "4-7,128-135"};
  BOTH_RULES(NPS4, STK_NUMA_BINDING_CORE_COMPLEX, 2, "4-127,128-255", expected, NULL);
}

static void exclusive_divides_among_ranks_not_visible_gpus(void) {
  /* 2 ranks on a node with 4 GPUs: torch slices for 4 and leaves half the node idle. */
  const char *torch[] = {"0-15,128-143", "16-31,144-159"};
  expect_binding(NPS1, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 2, NULL, NULL, 0, torch, NULL);
  const char *stoker[] = {"0-31,128-159", "32-63,160-191"};
  expect_binding(NPS1, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 2, NULL, NULL, 0, stoker, NULL);
}

static void exclusive_divides_hyperthreads_when_cores_run_short(void) {
  const char *torch[] = {"!1 allowed physical cores", "!1 allowed physical cores"};
  expect_binding("dgx-2s20c2t-8gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 2, "0,40", NULL, 0, torch, NULL);
  const char *stoker[] = {"0", "40"};
  expect_binding("dgx-2s20c2t-8gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 2, "0,40", NULL, 0, stoker,
                 NULL);
}

static void socket_survives_a_possible_node_without_allowed_cpus(void) {
  /* Node 2 (cores 32-47 of socket 0) emptied by the cpuset: torch raises for every GPU. */
  const char *allowed = "0-31,48-159,176-255";
  const char *torch[] = {"!possible node 2 has no allowed CPUs", "!possible node 2 has no allowed CPUs"};
  expect_binding(NPS4, STK_NUMA_BINDING_SOCKET, STK_NUMA_RULES_TORCH, 2, allowed, NULL, 0, torch, NULL);
  const char *stoker[] = {"0-31,48-63,128-159,176-191", "0-31,48-63,128-159,176-191"};
  expect_binding(NPS4, STK_NUMA_BINDING_SOCKET, STK_NUMA_RULES_STOKER, 2, allowed, NULL, 0, stoker, NULL);
}

static void memory_only_nodes_gb200(void) {
  /* GPU 3 names its own memory node 5 (no CPUs); nodes 2-5 are GPU memory; possible 0-33. */
  const char *node_torch[] = {"0-71", "0-71", "72-143", "!node 5 has no allowed CPUs"};
  expect_binding(GB200, STK_NUMA_BINDING_NODE, STK_NUMA_RULES_TORCH, 4, NULL, NULL, 0, node_torch, NULL);
  const char *node_stoker[] = {"0-71", "0-71", "72-143", "72-143"};
  const int memory[] = {0, 0, 1, 1}; /* rank 3's pages on the CPU node, not in GPU memory */
  expect_binding(GB200, STK_NUMA_BINDING_NODE, STK_NUMA_RULES_STOKER, 4, NULL, NULL, 0, node_stoker, memory);
  const char *socket_torch[] = {"!possible node 2 has no allowed CPUs", "!possible node 2", "!possible node 2",
                                "!node 5 has no allowed CPUs"};
  expect_binding(GB200, STK_NUMA_BINDING_SOCKET, STK_NUMA_RULES_TORCH, 4, NULL, NULL, 0, socket_torch, NULL);
  expect_binding(GB200, STK_NUMA_BINDING_SOCKET, STK_NUMA_RULES_STOKER, 4, NULL, NULL, 0, node_stoker, memory);
  const char *exclusive_torch[] = {"0-35", "36-71", "72-143", "!0 allowed physical cores"};
  expect_binding(GB200, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 4, NULL, NULL, 0, exclusive_torch, NULL);
  const char *split[] = {"0-35", "36-71", "72-107", "108-143"};
  expect_binding(GB200, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 4, NULL, NULL, 0, split, memory);
}

static void core_complex_never_shares_a_complex(void) {
  /* Grace: one L3 per socket, two GPUs on node 0: torch gives both the whole complex, and rank 3
   * (node 5, no CPUs) divides by zero. */
  const char *torch[] = {"0-71", "0-71", "72-143", "!modulo 0"};
  expect_binding(GB200, STK_NUMA_BINDING_CORE_COMPLEX, STK_NUMA_RULES_TORCH, 4, NULL, NULL, 0, torch, NULL);
  const char *stoker[] = {"0-35", "36-71", "72-107", "108-143"};
  expect_binding(GB200, STK_NUMA_BINDING_CORE_COMPLEX, STK_NUMA_RULES_STOKER, 4, NULL, NULL, 0, stoker, NULL);
}

static void core_complex_without_cache_sysfs_is_an_exclusive_share(void) {
  const char *torch[] = {"!cache", "!cache"};
  expect_binding("dgx-2s20c2t-8gpu", STK_NUMA_BINDING_CORE_COMPLEX, STK_NUMA_RULES_TORCH, 2, NULL, NULL, 0, torch,
                 NULL);
  const char *stoker[] = {"0-9,40-49", "10-19,50-59"};
  expect_binding("dgx-2s20c2t-8gpu", STK_NUMA_BINDING_CORE_COMPLEX, STK_NUMA_RULES_STOKER, 2, NULL, NULL, 0, stoker,
                 NULL);
}

static void unknown_numa_node_spreads_ranks_over_nodes(void) {
  /* A 2-node VM whose GPUs say numa_node -1: torch puts both on node 0. */
  const char *torch[] = {"0-3,8-11", "0-3,8-11"};
  expect_binding("vm-2node-2gpu", STK_NUMA_BINDING_NODE, STK_NUMA_RULES_TORCH, 2, NULL, NULL, 0, torch, NULL);
  const char *stoker[] = {"0-3,8-11", "4-7,12-15"};
  const int memory[] = {-1, -1}; /* a guess binds no memory */
  expect_binding("vm-2node-2gpu", STK_NUMA_BINDING_NODE, STK_NUMA_RULES_STOKER, 2, NULL, NULL, 0, stoker, memory);
  const char *torch_exclusive[] = {"0-1,8-9", "2-3,10-11"};
  expect_binding("vm-2node-2gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 2, NULL, NULL, 0, torch_exclusive,
                 NULL);
  expect_binding("vm-2node-2gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 2, NULL, NULL, 0, stoker, NULL);
  /* One node: -1 is harmless, both rules bind the whole machine. */
  const char *one[] = {"0-15"};
  BOTH_RULES("vm-1s16-1gpu", STK_NUMA_BINDING_NODE, 1, NULL, one, NULL);
}

static void smt4_without_sibling_lists_still_divides_cores(void) {
  const char *torch[] = {"!thread_siblings_list", "!thread_siblings_list", "!thread_siblings_list"};
  expect_binding("smt4-2s4c4t-3gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 3, NULL, NULL, 0, torch, NULL);
  const char *stoker[] = {"0-7", "8-15", "16-31"};
  expect_binding("smt4-2s4c4t-3gpu", STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 3, NULL, NULL, 0, stoker, NULL);
}

static void visible_devices_remap_ranks_to_gpus(void) {
  /* CUDA_VISIBLE_DEVICES=4,5,6,7 on NPS1: CUDA device r is GPU 4+r, all four on node 1. */
  const int visible[] = {4, 5, 6, 7};
  const char *expected[] = {"64-79,192-207", "80-95,208-223", "96-111,224-239", "112-127,240-255"};
  expect_binding(NPS1, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_TORCH, 4, NULL, visible, 4, expected, NULL);
  expect_binding(NPS1, STK_NUMA_BINDING_EXCLUSIVE, STK_NUMA_RULES_STOKER, 4, NULL, visible, 4, expected, NULL);
}

static void every_binding_stays_inside_the_allowed_cpus(void) {
  const char *shapes[] = {
      NPS1, NPS4, GB200, "dgx-2s20c2t-8gpu", "restricted-dgx", "vm-2node-2gpu", "mixed-unknown-2s8c"};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    stk_topology *topo = fixture_load(shapes[s]);
    if (!topo) continue;
    stk_cpuset allowed;
    stk_topology_allowed_cpus(topo, &allowed);
    for (int mode = STK_NUMA_BINDING_NODE; mode <= STK_NUMA_BINDING_CORE_COMPLEX; mode++) {
      stk_numa_binding_options options;
      stk_numa_binding_options_default(&options);
      options.mode = (stk_numa_binding)mode;
      options.nproc_per_node = stk_topology_num_gpus(topo);
      stk_plan_rank ranks[STK_MAX_VISIBLE_GPUS];
      CHECK_MSG(stk_numa_binding_compute(topo, &options, ranks) == STK_OK, "%s %s: stoker rules failed: %s", shapes[s],
                stk_numa_binding_name(options.mode), ranks[0].error);
      for (int r = 0; r < options.nproc_per_node; r++)
        CHECK_MSG(stk_cpuset_is_subset(&ranks[r].cpus, &allowed) && !stk_cpuset_is_empty(&ranks[r].cpus),
                  "%s %s rank %d: %s", shapes[s], stk_numa_binding_name(options.mode), r, cpus_text(&ranks[r].cpus));
      /* exclusive and core-complex never give one CPU to two ranks under stoker's rules */
      for (int a = 0; mode >= STK_NUMA_BINDING_EXCLUSIVE && a < options.nproc_per_node; a++)
        for (int b = a + 1; b < options.nproc_per_node; b++)
          CHECK_MSG(!stk_cpuset_intersects(&ranks[a].cpus, &ranks[b].cpus), "%s %s: ranks %d and %d share CPUs",
                    shapes[s], stk_numa_binding_name(options.mode), a, b);
    }
    stk_topology_destroy(topo);
  }
}

static void bad_options_are_refused(void) {
  stk_topology *topo = fixture_load(NPS1);
  if (!topo) return;
  stk_numa_binding_options options;
  stk_numa_binding_options_default(&options);
  stk_plan_rank ranks[STK_MAX_VISIBLE_GPUS];
  options.nproc_per_node = 9;
  CHECK(stk_numa_binding_compute(topo, &options, ranks) == STK_EINVAL &&
        strstr(ranks[0].error, "larger than the visible GPU count 8"));
  options.nproc_per_node = 1;
  options.visible_count = 1;
  options.visible_gpus[0] = 8;
  CHECK(stk_numa_binding_compute(topo, &options, ranks) == STK_EINVAL && strstr(ranks[0].error, "does not exist"));
  stk_numa_binding mode;
  CHECK(stk_numa_binding_parse("core_complex", &mode) == STK_OK && mode == STK_NUMA_BINDING_CORE_COMPLEX);
  CHECK(stk_numa_binding_parse("sockets", &mode) == STK_EINVAL);
  CHECK_STR(stk_numa_binding_name(STK_NUMA_BINDING_CORE_COMPLEX), "core-complex");
  stk_topology_destroy(topo);
}

/* ---- rank -> GPU ------------------------------------------------------------------------------ */

static stk_status resolve(const char *shape, const char *const *env, stk_rank_gpu *out) {
  stk_topology *topo = fixture_load(shape);
  if (!topo) return STK_EINTERNAL;
  stk_rank_gpu_options options;
  stk_rank_gpu_options_default(&options);
  options.env = env;
  stk_status status = stk_rank_gpu_resolve(topo, &options, out);
  stk_topology_destroy(topo);
  return status;
}

static void local_rank_resolves_through_visible_indices(void) {
  stk_rank_gpu gpu;
  const char *env[] = {"LOCAL_RANK=1",  "LOCAL_WORLD_SIZE=2",       "RANK=9",
                       "WORLD_SIZE=16", "CUDA_VISIBLE_DEVICES=4,6", NULL};
  CHECK(resolve(NPS1, env, &gpu) == STK_OK);
  CHECK(gpu.gpu == 6 && gpu.cuda_device == 1 && gpu.local_world_size == 2 && gpu.rank == 9 && gpu.world_size == 16);
  CHECK_STR(gpu.pci_bus_id, "0000:a1:00.0");
  CHECK_STR(gpu.rank_source, "LOCAL_RANK");
}

static void local_rank_resolves_through_visible_uuids(void) {
  stk_rank_gpu gpu;
  /* GPU 5's whole UUID, then a prefix naming GPU 2 only. */
  const char *env[] = {"LOCAL_RANK=1", "CUDA_VISIBLE_DEVICES=GPU-5e5c0d15-5e1f-4c3a-9b7d-000000000015, GPU-2e5c", NULL};
  CHECK_MSG(resolve(NPS1, env, &gpu) == STK_OK, "%s", gpu.error);
  CHECK(gpu.visible_count == 2 && gpu.visible_gpus[0] == 5 && gpu.visible_gpus[1] == 2 && gpu.gpu == 2);
  CHECK_STR(gpu.uuid, "GPU-2e5c0d12-5e1f-4c3a-9b7d-000000000012");
}

static void slurm_task_with_one_visible_gpu_uses_it(void) {
  stk_rank_gpu gpu;
  const char *env[] = {"SLURM_LOCALID=5", "SLURM_NTASKS_PER_NODE=8(x2)", "CUDA_VISIBLE_DEVICES=7", NULL};
  CHECK_MSG(resolve(NPS1, env, &gpu) == STK_OK, "%s", gpu.error);
  CHECK(gpu.local_rank == 5 && gpu.cuda_device == 0 && gpu.gpu == 7 && gpu.local_world_size == 8);
}

static void cuda_bus_ids_win_over_the_environment(void) {
  stk_topology *topo = fixture_load(NPS1);
  if (!topo) return;
  const char *env[] = {"OMPI_COMM_WORLD_LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=0,1", NULL};
  const char *bus_ids[] = {"00000000:E1:00.0", "00000000:01:00.0"}; /* CUDA's 8-digit domain, upper case */
  stk_rank_gpu_options options;
  stk_rank_gpu_options_default(&options);
  options.env = env;
  options.cuda_device_count = 2;
  options.cuda_pci_bus_ids = bus_ids;
  stk_rank_gpu gpu;
  CHECK_MSG(stk_rank_gpu_resolve(topo, &options, &gpu) == STK_OK, "%s", gpu.error);
  CHECK(gpu.gpu == 7 && gpu.visible_gpus[1] == 0);
  stk_topology_destroy(topo);
}

static void visible_list_ends_where_cuda_stops(void) {
  stk_rank_gpu gpu;
  const char *env[] = {"LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=3,9,1", NULL};
  CHECK(resolve(NPS1, env, &gpu) == STK_OK);
  CHECK(gpu.visible_count == 1 && gpu.gpu == 3 && strstr(gpu.note, "\"9\""));
  const char *ambiguous[] = {"LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=GPU-", NULL};
  CHECK(resolve(NPS1, ambiguous, &gpu) == STK_EINVAL && gpu.visible_count == 0);
  const char *mig[] = {"LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=MIG-1234", NULL};
  CHECK(resolve(NPS1, mig, &gpu) == STK_ENOTSUP && strstr(gpu.error, "MIG"));
}

static void launcher_variables_are_checked(void) {
  stk_rank_gpu gpu;
  const char *none[] = {"CUDA_VISIBLE_DEVICES=0", NULL};
  CHECK(resolve(NPS1, none, &gpu) == STK_ENOENT && strstr(gpu.error, "LOCAL_RANK"));
  const char *bad[] = {"LOCAL_RANK=one", NULL};
  CHECK(resolve(NPS1, bad, &gpu) == STK_EINVAL && strstr(gpu.error, "LOCAL_RANK=\"one\""));
  const char *too_far[] = {"LOCAL_RANK=2", "CUDA_VISIBLE_DEVICES=0,1", NULL};
  CHECK(resolve(NPS1, too_far, &gpu) == STK_EINVAL && strstr(gpu.error, "has no GPU"));
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(node_mode_binds_the_gpus_node_like_torch),
    STK_TEST_CASE(socket_mode_binds_every_node_of_the_socket_like_torch),
    STK_TEST_CASE(exclusive_slices_physical_cores_like_torch),
    STK_TEST_CASE(core_complex_gives_each_rank_its_own_l3_like_torch),
    STK_TEST_CASE(core_complex_prefers_complexes_with_more_allowed_cpus),
    STK_TEST_CASE(exclusive_divides_among_ranks_not_visible_gpus),
    STK_TEST_CASE(exclusive_divides_hyperthreads_when_cores_run_short),
    STK_TEST_CASE(socket_survives_a_possible_node_without_allowed_cpus),
    STK_TEST_CASE(memory_only_nodes_gb200),
    STK_TEST_CASE(core_complex_never_shares_a_complex),
    STK_TEST_CASE(core_complex_without_cache_sysfs_is_an_exclusive_share),
    STK_TEST_CASE(unknown_numa_node_spreads_ranks_over_nodes),
    STK_TEST_CASE(smt4_without_sibling_lists_still_divides_cores),
    STK_TEST_CASE(visible_devices_remap_ranks_to_gpus),
    STK_TEST_CASE(every_binding_stays_inside_the_allowed_cpus),
    STK_TEST_CASE(bad_options_are_refused),
    STK_TEST_CASE(local_rank_resolves_through_visible_indices),
    STK_TEST_CASE(local_rank_resolves_through_visible_uuids),
    STK_TEST_CASE(slurm_task_with_one_visible_gpu_uses_it),
    STK_TEST_CASE(cuda_bus_ids_win_over_the_environment),
    STK_TEST_CASE(visible_list_ends_where_cuda_stops),
    STK_TEST_CASE(launcher_variables_are_checked),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fixtures_build("numa-binding");
  int status = stk_test_run_cases("test_numa_binding", cases, STK_TEST_COUNT(cases), argc, argv);
  fixtures_remove();
  return status;
}
