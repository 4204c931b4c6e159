/* tests/test_gpu_colour_ops.c: the GPU implementations of the colour family and the noise
 * operators against their CPU implementations, both built through the registry with the same
 * arguments, operator id and seed, on a batch of uint8 images of assorted sizes with one argument
 * bound per sample (different per sample). Shapes must match exactly; values: the colour kernel
 * repeats the CPU's float arithmetic without FMA, so uint8 outputs must be equal; the noise kernel
 * uses the device's logf/cosf/sqrtf, so at most 0.1% of the values may differ, by one level.
 * A second run allocates nothing (no allocation after warm-up). Skips without a CUDA device.
 * Run on the GPU machine: ctest -R test_gpu_colour_ops --output-on-failure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/gpu_ops.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define N 5
static const int kW[N] = {37, 120, 64, 17, 201};
static const int kH[N] = {53, 80, 64, 300, 99};
static stk__tensor g_host[N], g_arg[N];
static stk__tensor_list g_in, g_arg_list;
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__worker g_worker;

typedef struct gpu_case {
  const char *op;
  const char *bound;  /* argument bound per sample */
  float base, step;   /* its value for sample i: base + i * step */
  const char *str_arg, *str_value;
  int noise;          /* 1: up to 0.1% of values one level apart */
} gpu_case;

static const gpu_case kCases[] = {
    {"brightness", "brightness", 0.6f, 0.3f, NULL, NULL, 0},
    {"contrast", "contrast", 0.5f, 0.4f, NULL, NULL, 0},
    {"brightness_contrast", "brightness_shift", -0.2f, 0.1f, NULL, NULL, 0},
    {"hue", "hue", -90.0f, 45.0f, NULL, NULL, 0},
    {"saturation", "saturation", 0.0f, 0.5f, NULL, NULL, 0},
    {"hsv", "value", 0.5f, 0.25f, NULL, NULL, 0},
    {"color_twist", "saturation", 0.2f, 0.4f, NULL, NULL, 0},
    {"color_space_conversion", NULL, 0, 0, "output_type", "YCbCr", 0},
    {"noise.gaussian", "stddev", 0.0f, 10.0f, NULL, NULL, 1},
    {"noise.shot", "factor", 0.5f, 1.0f, NULL, NULL, 1},
    {"noise.salt_and_pepper", "prob", 0.0f, 0.1f, NULL, NULL, 1},
};

static stk__op *make(const gpu_case *c, const char *device) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  if (c->bound) stk_args_set_input(a, c->bound, "arg");
  if (c->str_arg) stk_args_set_string(a, c->str_arg, c->str_value);
  if (strcmp(c->op, "color_space_conversion") == 0) stk_args_set_string(a, "image_type", "RGB");
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(c->op, device, a, NULL, 17, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", c->op, device, g_err);
  stk_args_destroy(a);
  return st == STK_OK ? op : NULL;
}

static void compare_case(const gpu_case *c) {
  for (int i = 0; i < N; i++) *(float *)g_arg[i].data = c->base + (float)i * c->step;
  stk__op *cpu = make(c, "cpu"), *gpu = make(c, "gpu");
  if (!cpu || !gpu) goto done;
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  for (int run = 0; run < 2; run++) {
    stk__batch_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.epoch = 3;
    ctx.batch_size = N;
    ctx.plan = &g_plan;
    ctx.cuda_stream = g_stream;
    ctx.err = g_err;
    ctx.err_size = sizeof g_err;
    ctx.alloc_count = &g_allocs;
    stk__tensor_list *ins[2] = {&g_in, &g_arg_list}, *outs[1] = {&out};
    uint64_t before = g_allocs;
    stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
    if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
    CHECK_MSG(st == STK_OK, "%s on the GPU: %s", c->op, g_err);
    if (st != STK_OK) break;
    if (run == 1) CHECK_MSG(g_allocs == before, "%s: the second batch allocated %llu times", c->op,
                            (unsigned long long)(g_allocs - before));
  }
  size_t differing = 0, total = 0;
  int worst = 0, shape_mismatch = 0;
  for (int i = 0; i < N && out.samples; i++) {
    stk__sample_ctx sc;
    memset(&sc, 0, sizeof sc);
    sc.epoch = 3;
    sc.sample_id = g_samples[i].sample_id;
    sc.err = g_err;
    sc.err_size = sizeof g_err;
    sc.thread_scratch = &g_worker;
    stk__tensor ref = {0};
    stk__tensor *ins[2] = {&g_host[i], &g_arg[i]}, *outs[1] = {&ref};
    CHECK_MSG(cpu->impl->run_sample(cpu, &sc, ins, outs) == STK_OK, "%s on the CPU: %s", c->op, g_err);
    const stk__tensor *t = &out.samples[i];
    if (t->nbytes != ref.nbytes || t->ndim != ref.ndim || t->dtype != ref.dtype ||
        memcmp(t->shape, ref.shape, sizeof(int64_t) * (size_t)ref.ndim) != 0) {
      shape_mismatch++;
      stk__tensor_free(&ref);
      continue;
    }
    uint8_t *g = malloc(t->nbytes ? t->nbytes : 1);
    CHECK(stk__gpu_memcpy_d2h(g, t->data, t->nbytes, g_stream) == STK_OK);
    for (size_t k = 0; k < t->nbytes; k++) {
      int d = abs((int)g[k] - (int)((uint8_t *)ref.data)[k]);
      differing += d != 0;
      worst = d > worst ? d : worst;
    }
    total += t->nbytes;
    free(g);
    stk__tensor_free(&ref);
  }
  CHECK_MSG(shape_mismatch == 0, "%s: %d samples differ in shape or dtype", c->op, shape_mismatch);
  if (c->noise)
    CHECK_MSG(worst <= 1 && differing * 1000 <= total, "%s: %zu of %zu values differ (worst %d)", c->op, differing,
              total, worst);
  else
    CHECK_MSG(differing == 0, "%s: %zu of %zu values differ from the CPU (worst %d levels)", c->op, differing, total,
              worst);
  printf("%s: %zu of %zu values differ\n", c->op, differing, total);
  stk__gpu_tensor_list_free(&out);
done:
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
}

static void gpu_matches_cpu_for_every_colour_and_noise_operator(void) {
  for (size_t k = 0; k < sizeof kCases / sizeof kCases[0]; k++) compare_case(&kCases[k]);
}

static void make_inputs(void) {
  for (int i = 0; i < N; i++) {
    int64_t shape[3] = {kH[i], kW[i], 3};
    CHECK(stk__tensor_resize(&g_host[i], STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
    uint32_t s = 7u + (uint32_t)i;
    for (size_t k = 0; k < g_host[i].nbytes; k++) {
      s = s * 1664525u + 1013904223u;
      ((uint8_t *)g_host[i].data)[k] = (uint8_t)(s >> 24);
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
  gpu_test_upload(&g_in, g_host, N, g_stream, &g_allocs);
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(gpu_matches_cpu_for_every_colour_and_noise_operator),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_colour_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_tensor_list_free(&g_in);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) {
    stk__tensor_free(&g_host[i]);
    stk__tensor_free(&g_arg[i]);
  }
  for (int s = 0; s < STK__SCRATCH_SLOTS; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_colour_ops");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
