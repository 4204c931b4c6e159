/* tests/test_gpu_ops.c: the GPU augmentation operators (resize, crop_mirror_normalize, the fused
 * random_resized_crop + crop_mirror_normalize node) against the CPU reference algorithms of
 * src/ops/cpu/image_ops.h on random images of assorted sizes; determinism (same seed -> same
 * windows as the CPU generator, same bytes across runs) and no allocation after warm-up.
 * Tolerances: resize u8 <= 1 level; crop_mirror_normalize float <= 1e-3 relative, uint8 <= 1
 * level; fused float <= 1 u8 level / std + 1e-3 (its resize step may round one level apart).
 * Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/gpu_backend.h"
#include "gpu_fake_op.h"
#include "gpu_testutil.h"
#include "ops/cpu/image_ops.h"
#include "ops/gpu/gpu_ops.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

/* The CPU reference may not be linked in a partial tree: skip rather than fail to link. */
#pragma weak stk__resize_u8
#pragma weak stk__resize_scratch_bytes
#pragma weak stk__crop_mirror_normalize
#pragma weak stk__random_crop_window
#pragma weak stk__resample_weights

#define N 5
static const int kW[N] = {37, 120, 64, 200, 17};
static const int kH[N] = {53, 80, 64, 150, 300};
static uint8_t *g_host[N];

static void *g_stream;
static uint64_t g_allocs;
static char g_err[512];
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;

static stk__batch_ctx make_ctx(void) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.batch_size = N;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  return ctx;
}

static void upload_inputs(stk__tensor_list *list) {
  size_t max = 0;
  for (int i = 0; i < N; i++)
    if ((size_t)kW[i] * kH[i] * 3 > max) max = (size_t)kW[i] * kH[i] * 3;
  CHECK(stk__gpu_tensor_list_reserve(list, N, max, &g_allocs) == STK_OK);
  for (int i = 0; i < N; i++) {
    stk__tensor *t = &list->samples[i];
    t->dtype = STK_DTYPE_UINT8;
    t->ndim = 3;
    t->shape[0] = kH[i];
    t->shape[1] = kW[i];
    t->shape[2] = 3;
    t->nbytes = (size_t)kW[i] * kH[i] * 3;
    CHECK(stk__gpu_memcpy_h2d_async(t->data, g_host[i], t->nbytes, g_stream) == STK_OK);
  }
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

static void *download(const stk__tensor *t) {
  void *host = malloc(t->nbytes);
  CHECK(stk__gpu_memcpy_d2h(host, t->data, t->nbytes, g_stream) == STK_OK);
  return host;
}

static void test_resize(stk__tensor_list *in) {
  fake_op f;
  fake_op_init(&f, "resize", 1, 42, 1);
  fake_float(&f, "resize_x", 50);
  fake_float(&f, "resize_y", 41);
  fake_string(&f, "interp_type", (char *)"linear");
  fake_int(&f, "antialias", 1);
  CHECK(stk__gpu_impl_resize.init(&f.op, g_err, sizeof g_err) == STK_OK);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk__tensor_list *ins[1] = {in}, *outs[1] = {&out};
  stk__batch_ctx ctx = make_ctx();
  CHECK_MSG(stk__gpu_impl_resize.run_batch(&f.op, &ctx, ins, outs) == STK_OK, "%s", g_err);
  int worst = 0;
  for (int i = 0; i < N; i++) {
    CHECK(out.samples[i].shape[0] == 41 && out.samples[i].shape[1] == 50);
    uint8_t *gpu = download(&out.samples[i]);
    uint8_t cpu[50 * 41 * 3];
    stk__window roi = {0, 0, kW[i], kH[i]};
    void *scratch = malloc(stk__resize_scratch_bytes(kW[i], kH[i], 3, roi, 50, 41, STK__INTERP_LINEAR, 1));
    CHECK(stk__resize_u8(g_host[i], kW[i], kH[i], (size_t)kW[i] * 3, 3, roi, cpu, 50, 41, STK__INTERP_LINEAR, 1,
                         scratch) == STK_OK);
    for (int k = 0; k < 50 * 41 * 3; k++) {
      int d = abs((int)gpu[k] - (int)cpu[k]);
      if (d > worst) worst = d;
    }
    free(scratch);
    free(gpu);
  }
  printf("resize: max |gpu - cpu| = %d u8 levels (tolerance 1)\n", worst);
  CHECK(worst <= 1);
  stk__gpu_tensor_list_free(&out);
  stk__gpu_impl_resize.destroy(&f.op);
}

static void test_cmn(stk__tensor_list *in, const char *dtype, int mirror) {
  fake_op f;
  fake_op_init(&f, "crop_mirror_normalize", 2, 42, 1);
  const double crop[2] = {16, 12}, mean[3] = {123.675, 116.28, 103.53}, stdv[3] = {58.395, 57.12, 57.375};
  fake_flist(&f, "crop", crop, 2);
  fake_flist(&f, "mean", mean, 3);
  fake_flist(&f, "std", stdv, 3);
  fake_int(&f, "mirror", mirror);
  fake_string(&f, "dtype", (char *)dtype);
  fake_string(&f, "output_layout", (char *)"CHW");
  CHECK(stk__gpu_impl_crop_mirror_normalize.init(&f.op, g_err, sizeof g_err) == STK_OK);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk__tensor_list *ins[1] = {in}, *outs[1] = {&out};
  stk__batch_ctx ctx = make_ctx();
  CHECK_MSG(stk__gpu_impl_crop_mirror_normalize.run_batch(&f.op, &ctx, ins, outs) == STK_OK, "%s", g_err);
  stk_dtype dt = strcmp(dtype, "uint8") == 0 ? STK_DTYPE_UINT8 : strcmp(dtype, "float16") == 0 ? STK_DTYPE_FLOAT16
                                                                                                  : STK_DTYPE_FLOAT32;
  float m[3], inv[3];
  for (int c = 0; c < 3; c++) m[c] = (float)mean[c], inv[c] = (float)(1.0 / stdv[c]);
  double worst = 0;
  for (int i = 0; i < N; i++) {
    int cx = (int)floor(0.5 * (kW[i] - 12) + 0.5), cy = (int)floor(0.5 * (kH[i] - 16) + 0.5);
    void *gpu = download(&out.samples[i]);
    size_t elems = 12 * 16 * 3;
    void *cpu = malloc(elems * 4);
    CHECK(stk__crop_mirror_normalize(g_host[i], kW[i], kH[i], (size_t)kW[i] * 3, 3, cx, cy, 12, 16, mirror, m, inv,
                                     STK__LAYOUT_CHW, dt, 0, cpu) == STK_OK);
    for (size_t k = 0; k < elems; k++) {
      double a, b, d;
      if (dt == STK_DTYPE_FLOAT32) {
        a = ((float *)gpu)[k], b = ((float *)cpu)[k];
        d = fabs(a - b) / fmax(1.0, fabs(b));
      } else if (dt == STK_DTYPE_FLOAT16) {
        d = ((uint16_t *)gpu)[k] != ((uint16_t *)cpu)[k]; /* RNE of the same float */
      } else {
        d = abs((int)((uint8_t *)gpu)[k] - (int)((uint8_t *)cpu)[k]);
      }
      if (d > worst) worst = d;
    }
    free(gpu);
    free(cpu);
  }
  printf("crop_mirror_normalize %s mirror=%d: worst difference %g\n", dtype, mirror, worst);
  CHECK(dt == STK_DTYPE_FLOAT32 ? worst <= 1e-3 : dt == STK_DTYPE_FLOAT16 ? worst <= 1 : worst <= 1);
  stk__gpu_tensor_list_free(&out);
  stk__gpu_impl_crop_mirror_normalize.destroy(&f.op);
}

static void test_fused(stk__tensor_list *in) {
  fake_op rrc, cmn, fused;
  fake_op_init(&rrc, "random_resized_crop", 4, 1234, 1);
  const double size[2] = {40, 48}; /* [height, width] */
  fake_flist(&rrc, "size", size, 2);
  const double mean[3] = {123.675, 116.28, 103.53}, stdv[3] = {58.395, 57.12, 57.375};
  fake_op_init(&cmn, "crop_mirror_normalize", 5, 1234, 1);
  fake_flist(&cmn, "mean", mean, 3);
  fake_flist(&cmn, "std", stdv, 3);
  fake_int(&cmn, "mirror", 1);
  fake_op_init(&fused, "fused", 6, 1234, 1);
  fused.op.fused[0] = &rrc.op;
  fused.op.fused[1] = &cmn.op;
  CHECK(stk__gpu_impl_fused_resize_cmn.init(&fused.op, g_err, sizeof g_err) == STK_OK);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk__tensor_list *ins[1] = {in}, *outs[1] = {&out};
  stk__batch_ctx ctx = make_ctx();
  CHECK_MSG(stk__gpu_impl_fused_resize_cmn.run_batch(&fused.op, &ctx, ins, outs) == STK_OK, "%s", g_err);
  float *first[N];
  for (int i = 0; i < N; i++) first[i] = download(&out.samples[i]);
  uint64_t warm = g_allocs;
  /* Same batch again: same bytes, no allocation. */
  CHECK(stk__gpu_impl_fused_resize_cmn.run_batch(&fused.op, &ctx, ins, outs) == STK_OK);
  CHECK_MSG(g_allocs == warm, "%llu allocations after warm-up", (unsigned long long)(g_allocs - warm));
  double worst = 0;
  for (int i = 0; i < N; i++) {
    float *again = download(&out.samples[i]);
    CHECK(memcmp(again, first[i], out.samples[i].nbytes) == 0);
    free(again);
    /* CPU chain: the same window from the same generator, resize, then cmn (mirror). */
    stk__rng rng;
    stk__rng_init(&rng, 1234, 4, 3, g_samples[i].sample_id);
    stk__window win = stk__random_crop_window(&rng, kW[i], kH[i], 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, 10);
    uint8_t resized[48 * 40 * 3];
    void *scratch = malloc(stk__resize_scratch_bytes(kW[i], kH[i], 3, win, 48, 40, STK__INTERP_LINEAR, 1));
    CHECK(stk__resize_u8(g_host[i], kW[i], kH[i], (size_t)kW[i] * 3, 3, win, resized, 48, 40, STK__INTERP_LINEAR, 1,
                         scratch) == STK_OK);
    free(scratch);
    float m[3], inv[3], cpu[48 * 40 * 3];
    for (int c = 0; c < 3; c++) m[c] = (float)mean[c], inv[c] = (float)(1.0 / stdv[c]);
    CHECK(stk__crop_mirror_normalize(resized, 48, 40, 48 * 3, 3, 0, 0, 48, 40, 1, m, inv, STK__LAYOUT_CHW,
                                     STK_DTYPE_FLOAT32, 0, cpu) == STK_OK);
    for (int k = 0; k < 48 * 40 * 3; k++) {
      double d = fabs((double)first[i][k] - cpu[k]);
      if (d > worst) worst = d;
    }
    free(first[i]);
  }
  printf("fused rrc+cmn: max |gpu - cpu| = %g (tolerance 1/57.12 + 1e-3)\n", worst);
  CHECK(worst <= 1.0 / 57.12 + 1e-3);
  stk__gpu_tensor_list_free(&out);
  stk__gpu_impl_fused_resize_cmn.destroy(&fused.op);
}

int main(void) {
  gpu_test_require_device(0);
  if (!&stk__resize_u8 || !&stk__crop_mirror_normalize || !&stk__random_crop_window || !&stk__resample_weights)
    TEST_SKIP("the CPU reference image algorithms are not linked in this tree");
  CHECK(stk__gpu_stream_create(&g_stream) == STK_OK);
  uint32_t state = 12345;
  for (int i = 0; i < N; i++) {
    g_host[i] = malloc((size_t)kW[i] * kH[i] * 3);
    for (int k = 0; k < kW[i] * kH[i] * 3; k++) {
      state = state * 1664525u + 1013904223u;
      g_host[i][k] = (uint8_t)(state >> 24);
    }
    g_samples[i].sample_id = 1000 + i * 7;
    g_samples[i].source = "random image";
  }
  g_plan.epoch = 3;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  stk__tensor_list in;
  memset(&in, 0, sizeof in);
  upload_inputs(&in);
  test_resize(&in);
  test_cmn(&in, "float", 0);
  test_cmn(&in, "float", 1);
  test_cmn(&in, "float16", 1);
  test_cmn(&in, "uint8", 0);
  test_fused(&in);
  stk__gpu_tensor_list_free(&in);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) free(g_host[i]);
  return stk_test_finish("test_gpu_ops");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
