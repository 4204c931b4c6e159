/* tests/test_gpu_filter_ops.c: the GPU implementations of normalize, gaussian_blur, one_hot and
 * jitter against their CPU implementations, both built through the registry with the same
 * arguments, operator id and seed, on a batch of assorted sizes (uint8 and float HWC images,
 * int32 class maps), one argument bound per sample where the operator takes one. Shapes and
 * dtypes must match exactly; values within each case's stated tolerance (normalize: double
 * statistics summed in another order, so integer outputs may sit one level apart at a rounding
 * edge; gaussian_blur: float passes, one level; one_hot and jitter: exact). normalize batch=True
 * is checked against the CPU given the batch's mean and stddev computed here. A second run
 * allocates nothing. Skips without a CUDA device.
 * Run on the GPU machine: ctest -R test_gpu_filter_ops --output-on-failure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "case_list.h"
#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/dtype.h"
#include "ops/common/gpu_ops.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define N 5
static const int kW[N] = {37, 120, 64, 17, 201};
static const int kH[N] = {53, 80, 64, 300, 99};
enum { IN_U8, IN_F32, IN_LABELS, IN_KINDS };
static stk__tensor g_host[IN_KINDS][N], g_arg[N];
static stk__tensor_list g_in[IN_KINDS], g_arg_list;
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__worker g_worker;

typedef struct gpu_case {
  const char *name; /* for messages */
  const char *op;
  void (*set_args)(stk_args *a);
  const char *bound; /* argument bound per sample (value base + i * step), or NULL */
  float base, step;
  int input;         /* IN_* */
  double atol, rtol; /* |gpu - cpu| <= atol + rtol * |cpu| */
} gpu_case;

static void no_args(stk_args *a) { (void)a; }
static void normalize_channels(stk_args *a) {
  stk_args_set_string(a, "axis_names", "HW");
  stk_args_set_int(a, "ddof", 1);
  stk_args_set_float(a, "epsilon", 0.25);
  stk_args_set_float(a, "scale", 64);
  stk_args_set_float(a, "shift", 128);
  stk_args_set_string(a, "dtype", "uint8");
}
static void normalize_given_mean(stk_args *a) { stk_args_set_float(a, "mean", 120); }

static void blur_sigma(stk_args *a) {
  double sigma = 1.5;
  stk_args_set_float_list(a, "sigma", &sigma, 1);
}
static void blur_windows(stk_args *a) {
  int64_t windows[2] = {5, 9};
  stk_args_set_int_list(a, "window_size", windows, 2);
}
/* wider than sample 3 (17 wide) and sample 0 (37): every column of those reflects, some twice */
static void blur_wide(stk_args *a) {
  int64_t windows[2] = {3, 41};
  stk_args_set_int_list(a, "window_size", windows, 2);
}

static void one_hot_last(stk_args *a) {
  stk_args_set_int(a, "num_classes", 10);
  stk_args_set_string(a, "axis_name", "C");
}
static void one_hot_first(stk_args *a) {
  stk_args_set_int(a, "num_classes", 12);
  stk_args_set_int(a, "axis", 0);
  stk_args_set_float(a, "on_value", 5);
  stk_args_set_float(a, "off_value", -1);
  stk_args_set_string(a, "dtype", "int32");
}

static void jitter_wide(stk_args *a) {
  stk_args_set_int(a, "nDegree", 4);
  stk_args_set_float(a, "fill_value", 3);
}

static const gpu_case kCases[] = {
    {"normalize (whole sample)", "normalize", no_args, NULL, 0, 0, IN_U8, 1e-5, 1e-5},
    {"normalize (per channel, uint8 out)", "normalize", normalize_channels, NULL, 0, 0, IN_F32, 1, 0},
    {"normalize (stddev per sample)", "normalize", normalize_given_mean, "stddev", 10, 15, IN_U8, 1e-5, 1e-5},
    {"gaussian_blur (sigma 1.5, uint8)", "gaussian_blur", blur_sigma, NULL, 0, 0, IN_U8, 1, 0},
    {"gaussian_blur (windows 5, 9, uint8)", "gaussian_blur", blur_windows, NULL, 0, 0, IN_U8, 1, 0},
    {"gaussian_blur (windows 3, 41, uint8)", "gaussian_blur", blur_wide, NULL, 0, 0, IN_U8, 1, 0},
    {"gaussian_blur (sigma per sample, float)", "gaussian_blur", no_args, "sigma", 0.5f, 0.7f, IN_F32, 1e-5, 1e-5},
    {"one_hot (last axis, named)", "one_hot", one_hot_last, NULL, 0, 0, IN_LABELS, 0, 0},
    {"one_hot (axis 0, int32 on/off)", "one_hot", one_hot_first, NULL, 0, 0, IN_LABELS, 0, 0},
    {"jitter (mask per sample, uint8)", "jitter", no_args, "mask", 0, 1, IN_U8, 0, 0},
    {"jitter (nDegree 4, fill, float)", "jitter", jitter_wide, NULL, 0, 0, IN_F32, 0, 0},
};

static stk__op *make(const gpu_case *c, const char *device) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  c->set_args(a);
  if (c->bound) stk_args_set_input(a, c->bound, "arg");
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(c->op, device, a, NULL, 17, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", c->name, device, g_err);
  stk_args_destroy(a);
  return st == STK_OK ? op : NULL;
}

static stk_status run_gpu(stk__op *gpu, int input, stk__tensor_list *out) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.batch_size = N;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  stk__tensor_list *ins[2] = {&g_in[input], &g_arg_list}, *outs[1] = {out};
  stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
  return st == STK_OK ? stk__gpu_stream_synchronize(g_stream) : st;
}

static stk_status run_cpu(stk__op *cpu, const stk__tensor *in, int i, stk__tensor *out) {
  stk__sample_ctx sc;
  memset(&sc, 0, sizeof sc);
  sc.epoch = 3;
  sc.sample_id = g_samples[i].sample_id;
  sc.err = g_err;
  sc.err_size = sizeof g_err;
  sc.thread_scratch = &g_worker;
  stk__tensor *ins[2] = {(stk__tensor *)in, &g_arg[i]}, *outs[1] = {out};
  return cpu->impl->run_sample(cpu, &sc, ins, outs);
}

/* Compares GPU sample t with CPU result ref; counts values beyond the tolerance. */
static void compare_sample(const char *name, int i, const stk__tensor *t, const stk__tensor *ref, double atol,
                           double rtol, size_t *bad, double *worst) {
  if (t->nbytes != ref->nbytes || t->ndim != ref->ndim || t->dtype != ref->dtype ||
      memcmp(t->shape, ref->shape, sizeof(int64_t) * (size_t)ref->ndim) != 0 || strcmp(t->layout, ref->layout) != 0) {
    CHECK_MSG(0, "%s: sample %d differs in shape, dtype or layout (\"%s\" vs \"%s\")", name, i, t->layout,
              ref->layout);
    return;
  }
  uint8_t *g = malloc(t->nbytes ? t->nbytes : 1);
  CHECK(stk__gpu_memcpy_d2h(g, t->data, t->nbytes, g_stream) == STK_OK);
  const size_t n = t->nbytes / stk_dtype_size(t->dtype);
  for (size_t k = 0; k < n; k++) {
    double a = stk__dtype_load(g, t->dtype, k), b = stk__dtype_load(ref->data, ref->dtype, k);
    double d = fabs(a - b);
    if (d > *worst) *worst = d;
    if (d > atol + rtol * fabs(b)) (*bad)++;
  }
  free(g);
}

static void compare_case(const gpu_case *c) {
  for (int i = 0; i < N; i++) *(float *)g_arg[i].data = c->base + (float)i * c->step;
  stk__op *cpu = make(c, "cpu"), *gpu = make(c, "gpu");
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  for (int run = 0; cpu && gpu && run < 2; run++) {
    uint64_t before = g_allocs;
    stk_status st = run_gpu(gpu, c->input, &out);
    CHECK_MSG(st == STK_OK, "%s on the GPU: %s", c->name, g_err);
    if (st != STK_OK) break;
    if (run == 1)
      CHECK_MSG(g_allocs == before, "%s: the second batch allocated %llu times", c->name,
                (unsigned long long)(g_allocs - before));
  }
  size_t bad = 0;
  double worst = 0;
  for (int i = 0; cpu && gpu && i < N && out.samples; i++) {
    stk__tensor ref = {0};
    CHECK_MSG(run_cpu(cpu, &g_host[c->input][i], i, &ref) == STK_OK, "%s on the CPU: %s", c->name, g_err);
    compare_sample(c->name, i, &out.samples[i], &ref, c->atol, c->rtol, &bad, &worst);
    stk__tensor_free(&ref);
  }
  CHECK_MSG(bad == 0, "%s: %zu values beyond the tolerance (worst difference %g)", c->name, bad, worst);
  printf("%s: worst difference %g\n", c->name, worst);
  stk__gpu_tensor_list_free(&out);
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
}

static void gpu_matches_cpu_for_every_filter_operator(void) {
  for (size_t k = 0; k < sizeof kCases / sizeof kCases[0]; k++) compare_case(&kCases[k]);
}

/* batch=True: the GPU's statistics over the whole batch equal the naive batch mean and variance,
 * checked through the CPU implementation given them as constants. */
static void normalize_batch_statistics_span_the_batch(void) {
  double sum = 0, sq = 0, count = 0;
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < g_host[IN_U8][i].nbytes; k++) {
      sum += ((uint8_t *)g_host[IN_U8][i].data)[k];
      count++;
    }
  const double mean = sum / count;
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < g_host[IN_U8][i].nbytes; k++) {
      double d = ((uint8_t *)g_host[IN_U8][i].data)[k] - mean;
      sq += d * d;
    }
  const double stddev = sqrt(sq / count);
  stk_args *a = NULL, *b = NULL;
  CHECK(stk_args_new(&a) == STK_OK && stk_args_new(&b) == STK_OK);
  stk_args_set_bool(a, "batch", 1);
  stk_args_set_float(b, "mean", mean);
  stk_args_set_float(b, "stddev", stddev);
  stk__op *gpu = NULL, *cpu = NULL;
  CHECK_MSG(stk__op_new_standalone("normalize", "gpu", a, NULL, 17, &gpu, g_err, sizeof g_err) == STK_OK, "%s", g_err);
  CHECK_MSG(stk__op_new_standalone("normalize", "cpu", b, NULL, 17, &cpu, g_err, sizeof g_err) == STK_OK, "%s", g_err);
  stk_args_destroy(a);
  stk_args_destroy(b);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  if (gpu && cpu && run_gpu(gpu, IN_U8, &out) == STK_OK) {
    size_t bad = 0;
    double worst = 0;
    for (int i = 0; i < N; i++) {
      stk__tensor ref = {0};
      CHECK(run_cpu(cpu, &g_host[IN_U8][i], i, &ref) == STK_OK);
      compare_sample("normalize batch=True", i, &out.samples[i], &ref, 1e-5, 1e-5, &bad, &worst);
      stk__tensor_free(&ref);
    }
    CHECK_MSG(bad == 0, "normalize batch=True: %zu values off (worst %g)", bad, worst);
  } else {
    CHECK_MSG(0, "normalize batch=True on the GPU: %s", g_err);
  }
  stk__gpu_tensor_list_free(&out);
  if (gpu) stk__op_free_standalone(gpu);
  if (cpu) stk__op_free_standalone(cpu);
}

static void make_inputs(void) {
  for (int i = 0; i < N; i++) {
    int64_t shape[3] = {kH[i], kW[i], 3};
    CHECK(stk__tensor_resize(&g_host[IN_U8][i], STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
    CHECK(stk__tensor_resize(&g_host[IN_F32][i], STK_DTYPE_FLOAT32, 3, shape, "HWC") == STK_OK);
    CHECK(stk__tensor_resize(&g_host[IN_LABELS][i], STK_DTYPE_INT32, 2, shape, "HW") == STK_OK);
    uint32_t s = 7u + (uint32_t)i;
    for (size_t k = 0; k < g_host[IN_U8][i].nbytes; k++) {
      s = s * 1664525u + 1013904223u;
      ((uint8_t *)g_host[IN_U8][i].data)[k] = (uint8_t)(s >> 24);
      ((float *)g_host[IN_F32][i].data)[k] = (float)(s >> 20) * 0.01f - 10.0f;
      if (k < (size_t)kH[i] * kW[i]) ((int32_t *)g_host[IN_LABELS][i].data)[k] = (int32_t)(s >> 28) - 2; /* -2 .. 13 */
    }
    CHECK(stk__tensor_resize(&g_arg[i], STK_DTYPE_FLOAT32, 0, NULL, "") == STK_OK);
    g_samples[i].sample_id = 1000 + 13 * i;
  }
  g_arg_list.count = N;
  g_arg_list.samples = g_arg;
  g_arg_list.device = STK_DEVICE_CPU;
  g_plan.epoch = 3;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  for (int kind = 0; kind < IN_KINDS; kind++) gpu_test_upload(&g_in[kind], g_host[kind], N, g_stream, &g_allocs);
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(gpu_matches_cpu_for_every_filter_operator),
    STK_TEST_CASE(normalize_batch_statistics_span_the_batch),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_filter_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  for (int kind = 0; kind < IN_KINDS; kind++) {
    stk__gpu_tensor_list_free(&g_in[kind]);
    for (int i = 0; i < N; i++) stk__tensor_free(&g_host[kind][i]);
  }
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) stk__tensor_free(&g_arg[i]);
  for (int s = 0; s < STK__SCRATCH_SLOTS; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_filter_ops");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
