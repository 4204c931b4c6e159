/* tests/test_gpu_sequence_ops.c: resize, crop_mirror_normalize and the fused resize ->
 * crop_mirror_normalize node on FHWC sequences on the GPU (issue 17), against the CPU operators built
 * with the same arguments (tests/test_sequence_ops.c checks the CPU against the per-frame image
 * operators). A batch of 3 sequences of different sizes and frame counts, mirror bound per sample.
 * Shapes and layouts must be identical; values: u8 <= 1 level, float <= 1e-4 relative to
 * max(1, |cpu|), the fused node <= 1/std + 1e-4 (as tests/test_gpu_ops.c). Also: an image layout
 * for a sequence is refused. Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"
#include "ops/common/gpu_ops.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)
#define N 3
static const int kF[N] = {4, 2, 3}, kW[N] = {37, 64, 120}, kH[N] = {53, 48, 80};
static stk__tensor g_host[N]; /* FHWC u8 host sequences */
static uint8_t g_coin[N] = {1, 0, 1};
static stk__tensor g_coin_t[N];
static stk__tensor_list g_coin_list, g_in;
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static stk__worker g_worker;

static stk__op *make_op(const char *name, const char *device, const stk_args *args) {
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, device, args, NULL, 5, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, device, g_err);
  return st == STK_OK ? op : NULL;
}

static stk_status cpu_run(stk__op *op, int i, stk__tensor *in, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.sample_id = g_samples[i].sample_id;
  ctx.sample_in_batch = i;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.thread_scratch = &g_worker;
  stk__tensor *inputs[2] = {in, &g_coin_t[i]}, *outs[1] = {out};
  return op->impl->run_sample(op, &ctx, inputs, outs);
}

static stk_status gpu_run(stk__op *op, stk__tensor_list *out) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.batch_size = N;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  stk__tensor_list *ins[2] = {&g_in, &g_coin_list}, *outs[1] = {out};
  g_err[0] = 0;
  stk_status st = op->impl->run_batch(op, &ctx, ins, outs);
  if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
  return st;
}

static double value(const void *p, stk_dtype dtype, size_t i) {
  if (dtype == STK_DTYPE_FLOAT32) return ((const float *)p)[i];
  if (dtype == STK_DTYPE_FLOAT16) return stk__half_to_float(((const uint16_t *)p)[i]);
  return ((const uint8_t *)p)[i];
}

/* GPU output (gpu_op on the batch) against the CPU chain (cpu_first then cpu_op; cpu_first may be
 * NULL) sample by sample: same ndim, shape, layout; values within tolerance (u8: levels). */
static void check_against_cpu(const char *what, stk__op *gpu_op, stk__op *cpu_first, stk__op *cpu_op,
                              double tolerance) {
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  CHECK_MSG(gpu_run(gpu_op, &out) == STK_OK, "%s: %s", what, g_err);
  for (int i = 0; i < N && out.count == N; i++) {
    stk__tensor mid = {0}, want = {0};
    stk__tensor *cpu_out = cpu_first ? &mid : &want;
    CHECK_MSG(cpu_run(cpu_first ? cpu_first : cpu_op, i, &g_host[i], cpu_out) == STK_OK, "%s", g_err);
    if (cpu_first) CHECK_MSG(cpu_run(cpu_op, i, &mid, &want) == STK_OK, "%s", g_err);
    const stk__tensor *t = &out.samples[i];
    CHECK_MSG(t->ndim == want.ndim && t->ndim == 4 && memcmp(t->shape, want.shape, sizeof t->shape[0] * 4) == 0 &&
                  strcmp(t->layout, want.layout) == 0 && t->dtype == want.dtype && t->nbytes == want.nbytes,
              "%s: sample %d shape/layout %s vs the CPU's %s", what, i, t->layout, want.layout);
    if (t->nbytes == want.nbytes) {
      void *host = malloc(t->nbytes);
      CHECK(stk__gpu_memcpy_d2h(host, t->data, t->nbytes, g_stream) == STK_OK);
      double worst = 0;
      for (size_t k = 0; k < t->nbytes / stk_dtype_size(t->dtype); k++) {
        double a = value(host, t->dtype, k), b = value(want.data, want.dtype, k);
        double d = fabs(a - b) / (t->dtype == STK_DTYPE_UINT8 ? 1.0 : fmax(1.0, fabs(b)));
        if (d > worst) worst = d;
      }
      CHECK_MSG(worst <= tolerance, "%s: sample %d differs by %g (tolerance %g)", what, i, worst, tolerance);
      free(host);
    }
    stk__tensor_free(&mid);
    stk__tensor_free(&want);
  }
  stk__gpu_tensor_list_free(&out);
}

static stk_args *resize_args(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  stk_args_set_float(a, "resize_x", 45);
  stk_args_set_float(a, "resize_y", 34);
  return a;
}

static stk_args *cmn_args(const char *layout, const char *dtype) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  const double crop[2] = {30, 28}, mean[3] = {124, 116, 104}, std[3] = {58, 57, 57};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", mean, 3);
  stk_args_set_float_list(a, "std", std, 3);
  stk_args_set_input(a, "mirror", "coin");
  stk_args_set_string(a, "output_layout", layout);
  stk_args_set_string(a, "dtype", dtype);
  return a;
}

static void test_resize(void) {
  stk_args *a = resize_args();
  stk__op *cpu = make_op("resize", "cpu", a), *gpu = make_op("resize", "gpu", a);
  if (cpu && gpu) check_against_cpu("resize 45x34", gpu, NULL, cpu, 1.0);
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
}

static void test_cmn_layouts(void) {
  static const char *layouts[3] = {"FCHW", "CFHW", "FHWC"}, *dtypes[3] = {"float", "float16", "uint8"};
  for (int l = 0; l < 3; l++)
    for (int d = 0; d < 3; d++) {
      stk_args *a = cmn_args(layouts[l], dtypes[d]);
      stk__op *cpu = make_op("crop_mirror_normalize", "cpu", a), *gpu = make_op("crop_mirror_normalize", "gpu", a);
      char what[64];
      snprintf(what, sizeof what, "cmn %s %s", layouts[l], dtypes[d]);
      /* float16: one half spacing at |x| < 4 beyond the float tolerance */
      if (cpu && gpu) check_against_cpu(what, gpu, NULL, cpu, d == 2 ? 1.0 : (d == 1 ? 1e-4 + 4.0 / 1024 : 1e-4));
      stk__op_free_standalone(cpu);
      stk__op_free_standalone(gpu);
      stk_args_destroy(a);
    }
  /* An image layout for a batch of sequences: refused, naming the argument. */
  stk_args *a = cmn_args("CHW", "float");
  stk__op *gpu = make_op("crop_mirror_normalize", "gpu", a);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  if (gpu) CHECK(gpu_run(gpu, &out) == STK_EINVAL && strstr(g_err, "output_layout"));
  stk__gpu_tensor_list_free(&out);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
}

/* The fused node (what the graph's fusion pass builds for resize -> crop_mirror_normalize). */
static void test_fused(void) {
  stk_args *ra = resize_args(), *ca = cmn_args("CFHW", "float");
  stk__op *rcpu = make_op("resize", "cpu", ra), *rgpu = make_op("resize", "gpu", ra);
  stk__op *ccpu = make_op("crop_mirror_normalize", "cpu", ca), *cgpu = make_op("crop_mirror_normalize", "gpu", ca);
  if (rcpu && rgpu && ccpu && cgpu) {
    stk__op fused = *cgpu;
    fused.state = NULL;
    fused.impl = stk__op_fused_impl_find(rgpu->schema, cgpu->schema);
    CHECK(fused.impl != NULL);
    fused.fused[0] = rgpu;
    fused.fused[1] = cgpu;
    if (fused.impl && fused.impl->init(&fused, g_err, sizeof g_err) == STK_OK) {
      check_against_cpu("fused resize + cmn CFHW", &fused, rcpu, ccpu, 1.0 / 57 + 1e-4);
      fused.impl->destroy(&fused);
    }
  }
  stk__op_free_standalone(rcpu);
  stk__op_free_standalone(rgpu);
  stk__op_free_standalone(ccpu);
  stk__op_free_standalone(cgpu);
  stk_args_destroy(ra);
  stk_args_destroy(ca);
}

static void make_inputs(void) {
  for (int i = 0; i < N; i++) {
    int64_t shape[4] = {kF[i], kH[i], kW[i], 3};
    memset(&g_host[i], 0, sizeof g_host[i]);
    CHECK(stk__tensor_resize(&g_host[i], STK_DTYPE_UINT8, 4, shape, "FHWC") == STK_OK);
    uint32_t state = 777u + (uint32_t)i;
    for (size_t k = 0; k < g_host[i].nbytes; k++) {
      state = state * 1664525u + 1013904223u;
      ((uint8_t *)g_host[i].data)[k] = (uint8_t)(state >> 24);
    }
    g_samples[i].sample_id = 500 + i;
    g_samples[i].source = "random sequence";
    memset(&g_coin_t[i], 0, sizeof g_coin_t[i]);
    g_coin_t[i].data = &g_coin[i];
    g_coin_t[i].nbytes = 1;
    g_coin_t[i].dtype = STK_DTYPE_UINT8;
    g_coin_t[i].device = STK_DEVICE_CPU;
  }
  g_coin_list.count = N;
  g_coin_list.samples = g_coin_t;
  g_coin_list.device = STK_DEVICE_CPU;
  g_plan.epoch = 3;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  gpu_test_upload(&g_in, g_host, N, g_stream, &g_allocs);
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_resize),
    STK_TEST_CASE(test_cmn_layouts),
    STK_TEST_CASE(test_fused),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_sequence_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_tensor_list_free(&g_in);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) stk__tensor_free(&g_host[i]);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_sequence_ops");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
