/* tests/test_gpu_auto_aug.c: the GPU implementation of `_auto_aug.apply` and
 * `experimental.equalize` against the CPU reference, both built through the registry with the same
 * arguments: a two-stage table holding every kind, each sample of a batch of uint8 images of
 * assorted sizes (1 and 3 channels) picking its own pair of entries through a bound `entry` input,
 * so every kind runs in both stages, beside other kinds, in one batch. Shapes must match exactly;
 * values: the kernels share the CPU's arithmetic (auto_aug.h), so table, colour and sharpen kinds
 * must be equal; the warp sampler may differ by one level at floorf ties (at most 0.5% of values,
 * as tests/test_gpu_geometry.c allows). A second run allocates nothing. Skips without a CUDA
 * device. Run on the GPU machine: ctest -R test_gpu_auto_aug --output-on-failure. */
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/gpu_ops.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define E 18 /* entries per row */
#define N (2 * E)
static const char *const kKinds[E] = {
    "identity", "invert",      "posterize",     "solarize",        "solarize_add",    "brightness",
    "contrast", "equalize",    "auto_contrast", "color",           "sharpness",       "shear_x",
    "shear_y",  "translate_x", "translate_y",   "translate_x_rel", "translate_y_rel", "rotate"};
static const double kParams[E] = {0, 0, 224, 100, 60, 1.4, 0.5, 0, 0, 1.7, 1.9, 0.3, -0.25, 7, -4, 0.2, -0.3, 23};
static stk__tensor g_host[N], g_entry[N];
static stk__tensor_list g_in, g_entry_list;
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__worker g_worker;

static stk__op *make(const char *name, const char *device) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  if (strcmp(name, "_auto_aug.apply") == 0) {
    const char *kinds[2 * E];
    double params[2 * E];
    for (int k = 0; k < E; k++) { /* row 1: the kinds in reverse */
      kinds[k] = kKinds[k], params[k] = kParams[k];
      kinds[E + k] = kKinds[E - 1 - k], params[E + k] = kParams[E - 1 - k];
    }
    stk_args_set_string_list(a, "kinds", kinds, 2 * E);
    stk_args_set_float_list(a, "params", params, 2 * E);
    stk_args_set_int(a, "num_stages", 2);
    stk_args_set_float(a, "fill_value", 128);
    stk_args_set_input(a, "entry", "entry");
  }
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, device, a, NULL, 17, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, device, g_err);
  stk_args_destroy(a);
  return st == STK_OK ? op : NULL;
}

static void compare(const char *name, size_t allowed_per_mille) {
  stk__op *cpu = make(name, "cpu"), *gpu = make(name, "gpu");
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  for (int run = 0; cpu && gpu && run < 2; run++) {
    stk__batch_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.epoch = 1;
    ctx.batch_size = N;
    ctx.plan = &g_plan;
    ctx.cuda_stream = g_stream;
    ctx.err = g_err;
    ctx.err_size = sizeof g_err;
    ctx.alloc_count = &g_allocs;
    stk__tensor_list *ins[2] = {&g_in, &g_entry_list}, *outs[1] = {&out};
    uint64_t before = g_allocs;
    stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
    if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
    CHECK_MSG(st == STK_OK, "%s on the GPU: %s", name, g_err);
    if (st != STK_OK) break;
    if (run == 1)
      CHECK_MSG(g_allocs == before, "%s: the second batch allocated %llu times", name,
                (unsigned long long)(g_allocs - before));
  }
  size_t differing = 0, total = 0;
  int worst = 0, mismatched = 0;
  for (int i = 0; cpu && gpu && i < N && out.samples; i++) {
    stk__sample_ctx sc;
    memset(&sc, 0, sizeof sc);
    sc.epoch = 1;
    sc.sample_id = g_samples[i].sample_id;
    sc.err = g_err;
    sc.err_size = sizeof g_err;
    sc.thread_scratch = &g_worker;
    stk__tensor ref = {0};
    stk__tensor *ins[2] = {&g_host[i], &g_entry[i]}, *outs[1] = {&ref};
    CHECK_MSG(cpu->impl->run_sample(cpu, &sc, ins, outs) == STK_OK, "%s on the CPU: %s", name, g_err);
    const stk__tensor *t = &out.samples[i];
    if (t->nbytes != ref.nbytes || t->ndim != ref.ndim || memcmp(t->shape, ref.shape, sizeof(int64_t) * ref.ndim)) {
      mismatched++;
      stk__tensor_free(&ref);
      continue;
    }
    uint8_t *g = malloc(t->nbytes ? t->nbytes : 1);
    CHECK(stk__gpu_memcpy_d2h(g, t->data, t->nbytes, g_stream) == STK_OK);
    size_t here = 0;
    for (size_t k = 0; k < t->nbytes; k++) {
      int d = abs((int)g[k] - (int)((uint8_t *)ref.data)[k]);
      here += d != 0;
      worst = d > worst ? d : worst;
    }
    if (here)
      printf("%s: sample %d (entries %d, %d): %zu values differ\n", name, i, ((int32_t *)g_entry[i].data)[0],
             ((int32_t *)g_entry[i].data)[1], here);
    differing += here;
    total += t->nbytes;
    free(g);
    stk__tensor_free(&ref);
  }
  CHECK_MSG(mismatched == 0, "%s: %d samples differ in shape", name, mismatched);
  CHECK_MSG(differing * 1000 <= total * allowed_per_mille && (differing == 0 || worst <= 1),
            "%s: %zu of %zu values differ from the CPU (worst %d levels)", name, differing, total, worst);
  printf("%s: %zu of %zu values differ\n", name, differing, total);
  stk__gpu_tensor_list_free(&out);
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
}

static void gpu_matches_cpu_for_every_kind_in_both_stages(void) { compare("_auto_aug.apply", 5); }
static void gpu_equalize_matches_cpu(void) { compare("experimental.equalize", 0); }

static void make_inputs(void) {
  for (int i = 0; i < N; i++) {
    const int64_t shape[3] = {9 + (i * 7) % 40, 11 + (i * 13) % 50, i % 5 == 4 ? 1 : 3};
    CHECK(stk__tensor_resize(&g_host[i], STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
    uint32_t s = 11u + (uint32_t)i;
    for (size_t k = 0; k < g_host[i].nbytes; k++) {
      s = s * 1664525u + 1013904223u;
      ((uint8_t *)g_host[i].data)[k] = (uint8_t)(i % 3 == 0 ? 60 + (s >> 26) : (s >> 24)); /* some narrow */
    }
    const int64_t two[1] = {2};
    CHECK(stk__tensor_resize(&g_entry[i], STK_DTYPE_INT32, 1, two, "") == STK_OK);
    ((int32_t *)g_entry[i].data)[0] = i % E;
    ((int32_t *)g_entry[i].data)[1] = (i / E + 5 * i) % E;
    g_samples[i].sample_id = 500 + 3 * i;
  }
  g_entry_list.count = N;
  g_entry_list.samples = g_entry;
  g_entry_list.device = STK_DEVICE_CPU;
  g_plan.epoch = 1;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  gpu_test_upload(&g_in, g_host, N, g_stream, &g_allocs);
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(gpu_matches_cpu_for_every_kind_in_both_stages),
    STK_TEST_CASE(gpu_equalize_matches_cpu),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_auto_aug", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_tensor_list_free(&g_in);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) {
    stk__tensor_free(&g_host[i]);
    stk__tensor_free(&g_entry[i]);
  }
  for (int s = 0; s < STK__SCRATCH_SLOTS; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_auto_aug");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
