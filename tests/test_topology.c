/* tests/test_topology.c: topology discovery from the generated sysfs trees (every shape in
 * tests/fixtures/make_fixtures.sh: sockets, hyperthread cores of 1/2/4 threads, NUMA nodes with
 * non-contiguous ids or none at all, GPUs in bus-id order, numa_node -1, recorded cpusets),
 * the JSON document, bad trees (missing, empty, malformed files), and the live system. */
#include <string.h>
#include <unistd.h>

#include "case_list.h"
#include "fixture_util.h"

#define CHECK_CPUS(set, expected) \
  CHECK_MSG(strcmp(cpus_text(set), (expected)) == 0, "%s is \"%s\", expected \"%s\"", #set, cpus_text(set), (expected))

static void check_node(stk_topology *topo, int i, int id, const char *cpus) {
  stk_cpuset set;
  CHECK(stk_topology_numa_node_id(topo, i) == id);
  stk_topology_numa_node_cpus(topo, i, &set);
  CHECK_CPUS(&set, cpus);
}

static void check_socket(stk_topology *topo, int i, int id, const char *cpus) {
  stk_cpuset set;
  CHECK(stk_topology_socket_id(topo, i) == id);
  stk_topology_socket_cpus(topo, i, &set);
  CHECK_CPUS(&set, cpus);
}

static void check_core(stk_topology *topo, int i, const char *cpus) {
  stk_cpuset set;
  stk_topology_core_cpus(topo, i, &set);
  CHECK_MSG(strcmp(cpus_text(&set), cpus) == 0, "core %d is \"%s\", expected \"%s\"", i, cpus_text(&set), cpus);
}

static void check_gpu(stk_topology *topo, int index, const char *bus_id, int raw, int node, const char *local) {
  stk_gpu_info gpu;
  CHECK(stk_topology_gpu(topo, index, &gpu) == STK_OK);
  CHECK(gpu.index == index);
  CHECK_MSG(strcmp(gpu.pci_bus_id, bus_id) == 0, "gpu %d is %s, expected %s", index, gpu.pci_bus_id, bus_id);
  CHECK(gpu.numa_node_raw == raw);
  CHECK(gpu.numa_node == node);
  CHECK(gpu.numa_node_unknown == (raw < 0));
  CHECK(gpu.vendor == 0x10de);
  CHECK(gpu.has_nvml == 0);
  CHECK_CPUS(&gpu.local_cpus, local);
  stk_cpuset used;
  CHECK(stk_topology_gpu_local_cpus(topo, index, &used) == STK_OK);
  CHECK(stk_cpuset_equal(&used, &gpu.local_cpus));
}

static void dgx_sockets_nodes_cores_and_gpus_in_bus_id_order(void) {
  stk_topology *topo = fixture_load("dgx-2s20c2t-8gpu");
  if (!topo) return;
  stk_cpuset set;
  stk_topology_cpus_online(topo, &set);
  CHECK_CPUS(&set, "0-79");
  stk_topology_allowed_cpus(topo, &set);
  CHECK_CPUS(&set, "0-79");
  CHECK(stk_topology_num_numa_nodes(topo) == 2);
  check_node(topo, 0, 0, "0-19,40-59");
  check_node(topo, 1, 1, "20-39,60-79");
  CHECK(stk_topology_numa_node_mem_kb(topo, 0) == 134217728u);
  CHECK(stk_topology_numa_node_mem_kb(topo, 5) == 0);
  CHECK(stk_topology_num_sockets(topo) == 2);
  check_socket(topo, 0, 0, "0-19,40-59");
  check_socket(topo, 1, 1, "20-39,60-79");
  CHECK(stk_topology_num_cores(topo) == 40);
  check_core(topo, 0, "0,40");
  check_core(topo, 19, "19,59");
  check_core(topo, 20, "20,60");
  check_core(topo, 39, "39,79");
  CHECK(stk_topology_cpu_core(topo, 40) == 0);
  CHECK(stk_topology_cpu_core(topo, 61) == 21);
  CHECK(stk_topology_cpu_socket(topo, 61) == 1);
  CHECK(stk_topology_cpu_numa_node(topo, 45) == 0);
  CHECK(stk_topology_cpu_numa_node(topo, 80) == -1);
  CHECK(stk_topology_cpu_core(topo, -1) == -1);
  /* Eight GPUs in bus-id order; the NVMe, NIC, NVSwitch and audio function are not GPUs. */
  CHECK(stk_topology_num_gpus(topo) == 8);
  const char *n0 = "0-19,40-59", *n1 = "20-39,60-79";
  check_gpu(topo, 0, "0000:07:00.0", 0, 0, n0);
  check_gpu(topo, 1, "0000:0f:00.0", 0, 0, n0);
  check_gpu(topo, 2, "0000:47:00.0", 0, 0, n0);
  check_gpu(topo, 3, "0000:4e:00.0", 0, 0, n0);
  check_gpu(topo, 4, "0000:87:00.0", 1, 1, n1);
  check_gpu(topo, 5, "0000:90:00.0", 1, 1, n1);
  check_gpu(topo, 6, "0000:b7:00.0", 1, 1, n1);
  check_gpu(topo, 7, "0000:bd:00.0", 1, 1, n1);
  stk_gpu_info gpu;
  CHECK(stk_topology_gpu(topo, 3, &gpu) == STK_OK && gpu.pci_class == 0x030000);
  CHECK(stk_topology_gpu(topo, 0, &gpu) == STK_OK && gpu.pci_class == 0x030200 && gpu.device == 0x20b0);
  CHECK(stk_topology_gpu(topo, 8, &gpu) == STK_ENODEV);
  CHECK(stk_topology_gpu(topo, -1, &gpu) == STK_ENODEV);
  CHECK(stk_topology_gpu_local_cpus(topo, 8, &set) == STK_ENODEV);
  stk_topology_destroy(topo);
}

static void recorded_cpuset_narrows_the_allowed_cpus(void) {
  stk_topology *topo = fixture_load("restricted-dgx");
  if (!topo) return;
  stk_cpuset set;
  stk_topology_allowed_cpus(topo, &set);
  CHECK_CPUS(&set, "0-9,20-24,40-49,60-64");
  stk_topology_cpus_online(topo, &set);
  CHECK_CPUS(&set, "0-79");
  stk_topology_destroy(topo);
}

static void nps4_nodes_split_each_socket_in_four(void) {
  stk_topology *topo = fixture_load("nps4-2s64c2t-8gpu");
  if (!topo) return;
  stk_cpuset set;
  stk_topology_cpus_online(topo, &set);
  CHECK_CPUS(&set, "0-255");
  CHECK(stk_topology_num_numa_nodes(topo) == 8);
  check_node(topo, 0, 0, "0-15,128-143");
  check_node(topo, 1, 1, "16-31,144-159");
  check_node(topo, 4, 4, "64-79,192-207");
  check_node(topo, 7, 7, "112-127,240-255");
  CHECK(stk_topology_num_sockets(topo) == 2);
  check_socket(topo, 1, 1, "64-127,192-255");
  CHECK(stk_topology_num_cores(topo) == 128);
  check_core(topo, 127, "127,255");
  CHECK(stk_topology_num_gpus(topo) == 8);
  check_gpu(topo, 0, "0000:03:00.0", 1, 1, "16-31,144-159");
  check_gpu(topo, 1, "0000:13:00.0", 1, 1, "16-31,144-159");
  check_gpu(topo, 6, "0000:c3:00.0", 7, 7, "112-127,240-255");
  stk_topology_destroy(topo);
}

static void numa_node_minus_one_resolves_to_node_0_flagged(void) {
  stk_topology *topo = fixture_load("vm-1s16-1gpu");
  if (!topo) return;
  CHECK(stk_topology_num_numa_nodes(topo) == 1);
  check_node(topo, 0, 0, "0-15");
  CHECK(stk_topology_num_sockets(topo) == 1);
  /* thread_siblings_list only (no core_cpus_list): still 8 cores of 2. */
  CHECK(stk_topology_num_cores(topo) == 8);
  check_core(topo, 0, "0,8");
  check_core(topo, 7, "7,15");
  CHECK(stk_topology_num_gpus(topo) == 1);
  check_gpu(topo, 0, "0000:00:05.0", -1, 0, "0-15");
  stk_topology_destroy(topo);
}

static void four_threads_per_core_grouped_from_core_ids(void) {
  stk_topology *topo = fixture_load("smt4-2s4c4t-3gpu");
  if (!topo) return;
  CHECK(stk_topology_num_numa_nodes(topo) == 2);
  check_node(topo, 0, 0, "0-15");
  check_node(topo, 1, 8, "16-31");
  CHECK(stk_topology_cpu_numa_node(topo, 20) == 8);
  /* No sibling lists: four threads per core grouped from (package, core_id). */
  CHECK(stk_topology_num_cores(topo) == 8);
  check_core(topo, 0, "0-3");
  check_core(topo, 1, "4-7");
  check_core(topo, 4, "16-19");
  check_core(topo, 7, "28-31");
  CHECK(stk_topology_cpu_core(topo, 22) == 5);
  check_socket(topo, 1, 1, "16-31");
  CHECK(stk_topology_num_gpus(topo) == 3);
  check_gpu(topo, 0, "0004:04:00.0", 0, 0, "0-15");
  check_gpu(topo, 1, "0004:05:00.0", 0, 0, "0-15");
  check_gpu(topo, 2, "0035:03:00.0", 8, 8, "16-31");
  stk_topology_destroy(topo);
}

static void kernel_without_numa_is_one_node_with_all_cpus(void) {
  stk_topology *topo = fixture_load("nonuma-4cpu-nogpu");
  if (!topo) return;
  CHECK(stk_topology_num_numa_nodes(topo) == 1);
  check_node(topo, 0, 0, "0-3");
  CHECK(stk_topology_numa_node_mem_kb(topo, 0) == 268435456u);
  CHECK(stk_topology_num_sockets(topo) == 1);
  check_socket(topo, 0, 0, "0-3");
  CHECK(stk_topology_num_cores(topo) == 4);
  check_core(topo, 2, "2");
  CHECK(stk_topology_num_gpus(topo) == 0); /* the Intel VGA device is not an NVIDIA GPU */
  stk_topology_destroy(topo);
}

static void json_document_describes_the_whole_machine(void) {
  stk_topology *topo = fixture_load("mixed-unknown-2s8c");
  if (!topo) return;
  char *json = NULL;
  CHECK(stk_topology_to_json(topo, &json) == STK_OK);
  const char *expected =
      "{\"cpus_online\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"
      "\"allowed_cpus\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],"
      "\"numa_nodes\":[{\"id\":0,\"cpus\":[0,1,2,3,8,9,10,11]},{\"id\":1,\"cpus\":[4,5,6,7,12,13,14,15]}],"
      "\"sockets\":[{\"id\":0,\"cpus\":[0,1,2,3,8,9,10,11]},{\"id\":1,\"cpus\":[4,5,6,7,12,13,14,15]}],"
      "\"gpus\":[{\"index\":0,\"pci_bus_id\":\"0000:17:00.0\",\"numa_node_raw\":0,\"numa_node\":0,\"local_cpus\":[0,1,"
      "2,3,8,9,10,11]},"
      "{\"index\":1,\"pci_bus_id\":\"0000:65:00.0\",\"numa_node_raw\":-1,\"numa_node\":0,\"local_cpus\":[0,1,2,3,4,5,6,"
      "7,8,9,10,11,12,13,14,15]},"
      "{\"index\":2,\"pci_bus_id\":\"0000:b3:00.0\",\"numa_node_raw\":1,\"numa_node\":1,\"local_cpus\":[4,5,6,7,12,13,"
      "14,15]}]}";
  CHECK_MSG(json && strcmp(json, expected) == 0, "json:\n%s\nexpected:\n%s", json ? json : "(null)", expected);
  stk_free(json);
  CHECK(stk_topology_to_json(topo, NULL) == STK_EINVAL);
  stk_topology_destroy(topo);

  topo = fixture_load("nonuma-4cpu-nogpu");
  if (!topo) return;
  CHECK(stk_topology_to_json(topo, &json) == STK_OK);
  CHECK(json && strstr(json, "\"gpus\":[]}") != NULL);
  stk_free(json);
  stk_topology_destroy(topo);
}

static stk_status load_root(const char *root, char *error, size_t error_size) {
  stk_topology *topo = NULL;
  stk_topology_new(&topo);
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = root;
  stk_status status = stk_topology_load(topo, &options);
  snprintf(error, error_size, "%s", stk_topology_last_error(topo));
  if (status != STK_OK) CHECK(stk_topology_num_gpus(topo) == 0); /* a failed load leaves nothing half-read */
  stk_topology_destroy(topo);
  return status;
}

static void run_shell(const char *fmt, const char *arg1, const char *arg2) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, fmt, arg1, arg2);
  CHECK_MSG(stk_test_run(cmd, NULL) == 0, "%s", cmd);
}

static void malformed_trees_fail_naming_file_and_value(void) {
  char error[1024];
  char missing[8192];
  snprintf(missing, sizeof missing, "%s/no-such-tree", fixture_dir);
  CHECK(load_root(missing, error, sizeof error) == STK_ENOENT);
  CHECK_MSG(strstr(error, "no-such-tree") != NULL, "error does not name the root: %s", error);

  char empty[8192];
  snprintf(empty, sizeof empty, "%s/empty-tree", fixture_dir);
  run_shell("mkdir -p '%s'%s", empty, "");
  CHECK(load_root(empty, error, sizeof error) == STK_ENOENT);
  CHECK_MSG(strstr(error, "sys/devices/system/cpu/online") != NULL, "error: %s", error);

  /* A trailing slash names the same tree. */
  char slash[8300];
  snprintf(slash, sizeof slash, "%s/", fixture_path("vm-1s16-1gpu"));
  CHECK(load_root(slash, error, sizeof error) == STK_OK);

  /* Malformed files: the error names the file and quotes the text. */
  char broken[8192];
  snprintf(broken, sizeof broken, "%s/broken", fixture_dir);
  run_shell("cp -r '%s' '%s'", fixture_path("vm-1s16-1gpu"), broken);
  run_shell("printf '0-15,zz\\n' > '%s/sys/devices/system/cpu/online'%s", broken, "");
  CHECK(load_root(broken, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "cpu/online") && strstr(error, "0-15,zz"), "error: %s", error);

  run_shell("printf '0-15\\n' > '%s/sys/devices/system/cpu/online'%s", broken, "");
  run_shell("printf '7-3\\n' > '%s/sys/bus/pci/devices/0000:00:05.0/local_cpulist'%s", broken, "");
  CHECK(load_root(broken, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "local_cpulist") && strstr(error, "7-3"), "error: %s", error);

  run_shell("mkdir -p '%s/proc/self'%s", broken, "");
  run_shell("printf 'Cpus_allowed_list:\\t1-x\\n' > '%s/proc/self/status'%s", broken, "");
  run_shell("printf '0-15\\n' > '%s/sys/bus/pci/devices/0000:00:05.0/local_cpulist'%s", broken, "");
  CHECK(load_root(broken, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "Cpus_allowed_list"), "error: %s", error);
  run_shell("rm -f '%s/proc/self/status'%s", broken, "");

  /* An empty local_cpulist and no mask: the GPU's CPUs fall back to every online CPU. */
  run_shell("printf '\\n' > '%s/sys/bus/pci/devices/0000:00:05.0/local_cpulist'%s", broken, "");
  run_shell("rm -f '%s/sys/bus/pci/devices/0000:00:05.0/local_cpus'%s", broken, "");
  stk_topology *topo = NULL;
  stk_topology_new(&topo);
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = broken;
  CHECK(stk_topology_load(topo, &options) == STK_OK);
  stk_cpuset set;
  CHECK(stk_topology_gpu_local_cpus(topo, 0, &set) == STK_OK);
  CHECK_CPUS(&set, "0-15");
  /* Only the hex mask: read from local_cpus. */
  run_shell("rm -f '%s/sys/bus/pci/devices/0000:00:05.0/local_cpulist'%s", broken, "");
  run_shell("printf '00000f0f\\n' > '%s/sys/bus/pci/devices/0000:00:05.0/local_cpus'%s", broken, "");
  CHECK(stk_topology_load(topo, &options) == STK_OK); /* loading twice replaces the first */
  stk_gpu_info gpu;
  CHECK(stk_topology_gpu(topo, 0, &gpu) == STK_OK);
  CHECK_CPUS(&gpu.local_cpus, "0-3,8-11");
  stk_topology_destroy(topo);

  CHECK(stk_topology_new(NULL) == STK_EINVAL);
  CHECK(stk_topology_load(NULL, NULL) == STK_EINVAL);
  stk_topology_destroy(NULL);
}

static void live_system_loads(void) {
  stk_topology *topo = NULL;
  CHECK(stk_topology_new(&topo) == STK_OK);
  stk_topology_options options;
  stk_topology_options_default(&options);
  CHECK(options.use_nvml == 1 && options.sysfs_root == NULL);
  stk_status status = stk_topology_load(topo, &options);
  CHECK_MSG(status == STK_OK, "live load: %s", stk_topology_last_error(topo));
  if (status == STK_OK) {
    stk_cpuset online, allowed, affinity;
    stk_topology_cpus_online(topo, &online);
    stk_topology_allowed_cpus(topo, &allowed);
    CHECK(stk_get_affinity(0, &affinity) == STK_OK);
    CHECK(stk_cpuset_equal(&allowed, &affinity));
    CHECK(stk_cpuset_count(&online) == (int)sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(stk_topology_num_numa_nodes(topo) >= 1);
    CHECK(stk_topology_num_cores(topo) >= 1);
    /* Every online cpu is in exactly one core and one socket. */
    stk_cpuset covered;
    stk_cpuset_zero(&covered);
    for (int i = 0; i < stk_topology_num_cores(topo); i++) {
      stk_cpuset core;
      stk_topology_core_cpus(topo, i, &core);
      CHECK(!stk_cpuset_intersects(&core, &covered));
      stk_cpuset_or(&covered, &covered, &core);
    }
    CHECK(stk_cpuset_equal(&covered, &online));
    char *json = NULL;
    CHECK(stk_topology_to_json(topo, &json) == STK_OK);
    stk_free(json);
  }
  stk_topology_destroy(topo);
}

/* A FIFO planted anywhere in a tree is never opened for reading: the load ends (here in well
 * under the alarm's 20 s) with the file treated as unreadable, or a one-line error. */
static void fifo_in_a_tree_never_hangs(void) {
  char tree[8192], error[1024];
  snprintf(tree, sizeof tree, "%s/fifo-tree", fixture_dir);
  run_shell("cp -r '%s' '%s'", fixture_path("vm-1s16-1gpu"), tree);
  run_shell(
      "rm -f '%s/sys/devices/system/cpu/cpu0/topology/physical_package_id' && mkfifo "
      "'%s/sys/devices/system/cpu/cpu0/topology/physical_package_id'",
      tree, tree);
  run_shell(
      "rm -f '%s/sys/bus/pci/devices/0000:00:05.0/numa_node' && mkfifo '%s/sys/bus/pci/devices/0000:00:05.0/numa_node'",
      tree, tree);
  alarm(20);
  CHECK_MSG(load_root(tree, error, sizeof error) == STK_OK, "FIFO in topology files: %s", error);
  run_shell("rm -f '%s/sys/devices/system/cpu/online' && mkfifo '%s/sys/devices/system/cpu/online'", tree, tree);
  CHECK(load_root(tree, error, sizeof error) == STK_ENOENT);
  CHECK_MSG(strstr(error, "cpu/online") && strstr(error, "Invalid argument") && !strchr(error, '\n'), "error: %s",
            error);
  alarm(0);
}

static void numa_node_garbage_is_a_one_line_error(void) {
  char tree[8192], error[1024];
  snprintf(tree, sizeof tree, "%s/garbage-tree", fixture_dir);
  run_shell("cp -r '%s' '%s'", fixture_path("dgx-2s20c2t-8gpu"), tree);
  run_shell("printf 'zero\\n' > '%s/sys/bus/pci/devices/0000:07:00.0/numa_node'%s", tree, "");
  CHECK(load_root(tree, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "0000:07:00.0/numa_node: \"zero\" is not an integer") && !strchr(error, '\n'), "error: %s",
            error);
  run_shell("printf -- '-7\\n' > '%s/sys/bus/pci/devices/0000:07:00.0/numa_node'%s", tree, "");
  CHECK(load_root(tree, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "\"-7\" is not a NUMA node"), "error: %s", error);
  /* A cpulist value is quoted without its trailing newline. */
  run_shell("printf '0\\n' > '%s/sys/bus/pci/devices/0000:07:00.0/numa_node'%s", tree, "");
  run_shell("printf '0-19,4x\\n' > '%s/sys/devices/system/node/node0/cpulist'%s", tree, "");
  CHECK(load_root(tree, error, sizeof error) == STK_EPARSE);
  CHECK_MSG(strstr(error, "\"0-19,4x\"") && !strchr(error, '\n'), "error: %s", error);
}

static void numa_node_that_is_not_online_is_unknown_with_a_warning(void) {
  char tree[8192];
  snprintf(tree, sizeof tree, "%s/node4096-tree", fixture_dir);
  run_shell("cp -r '%s' '%s'", fixture_path("dgx-2s20c2t-8gpu"), tree);
  run_shell("printf '4096\\n' > '%s/sys/bus/pci/devices/0000:0f:00.0/numa_node'%s", tree, "");
  stk_topology *topo = NULL;
  CHECK(stk_topology_new(&topo) == STK_OK);
  stk_topology_options options;
  stk_topology_options_default(&options);
  options.sysfs_root = tree;
  CHECK_MSG(stk_topology_load(topo, &options) == STK_OK, "%s", stk_topology_last_error(topo));
  stk_gpu_info gpu;
  CHECK(stk_topology_gpu(topo, 1, &gpu) == STK_OK);
  CHECK(gpu.numa_node_raw == 4096 && gpu.numa_node_unknown == 1 && gpu.numa_node == 0);
  CHECK_MSG(strstr(stk_topology_warnings(topo), "names NUMA node 4096, which is not online"), "warnings: %s",
            stk_topology_warnings(topo));
  stk_topology_destroy(topo);
}

static void driver_uuids_and_models_are_read_without_nvml(void) {
  stk_topology *topo = fixture_load("gb200-2s72c-4gpu");
  if (!topo) return;
  stk_gpu_info gpu;
  CHECK(stk_topology_gpu(topo, 2, &gpu) == STK_OK);
  CHECK_STR(gpu.uuid, "GPU-b2002222-7c1e-4f3a-8d2b-000000000002");
  CHECK_STR(gpu.name, "NVIDIA GB200");
  CHECK(gpu.has_nvml == 0);
  CHECK(stk_topology_num_numa_nodes(topo) == 6); /* 2 CPU nodes, 4 memory-only */
  stk_cpuset cpus;
  stk_topology_numa_node_cpus(topo, 3, &cpus);
  CHECK(stk_cpuset_is_empty(&cpus) && stk_topology_numa_node_mem_kb(topo, 3) > 0);
  CHECK_STR(stk_topology_warnings(topo), "");
  stk_topology_destroy(topo);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(dgx_sockets_nodes_cores_and_gpus_in_bus_id_order),
    STK_TEST_CASE(recorded_cpuset_narrows_the_allowed_cpus),
    STK_TEST_CASE(nps4_nodes_split_each_socket_in_four),
    STK_TEST_CASE(numa_node_minus_one_resolves_to_node_0_flagged),
    STK_TEST_CASE(four_threads_per_core_grouped_from_core_ids),
    STK_TEST_CASE(kernel_without_numa_is_one_node_with_all_cpus),
    STK_TEST_CASE(json_document_describes_the_whole_machine),
    STK_TEST_CASE(malformed_trees_fail_naming_file_and_value),
    STK_TEST_CASE(fifo_in_a_tree_never_hangs),
    STK_TEST_CASE(numa_node_garbage_is_a_one_line_error),
    STK_TEST_CASE(numa_node_that_is_not_online_is_unknown_with_a_warning),
    STK_TEST_CASE(driver_uuids_and_models_are_read_without_nvml),
    STK_TEST_CASE(live_system_loads),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  fixtures_build("topology");
  int status = stk_test_run_cases("test_topology", cases, STK_TEST_COUNT(cases), argc, argv);
  fixtures_remove();
  return status;
}
