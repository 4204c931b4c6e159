/* tests/test_gpu_geometry.c: the GPU geometry operators against their CPU implementations, built
 * through the registry (stk__op_new_standalone) with the same arguments, on random samples of
 * assorted odd sizes and several dtypes: the element-moving operators (flip, transpose, crop,
 * slice, pad, paste, erase, reshape, squeeze, expand_dims, cat, stack) must give the same shapes,
 * layouts and bytes (tolerance: none -- both sides move raw elements); rotate and warp_affine may
 * differ by one level on at most 0.5% of the values (the same float arithmetic, contracted
 * differently). Also: per-sample arguments bound to a host node (flip's horizontal), an argument
 * error on the GPU naming the sample, and no allocation on a second batch (after warm-up).
 * Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/op_impls.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define N 5
static const int kH[N] = {7, 33, 16, 1, 20};
static const int kW[N] = {9, 12, 16, 5, 31};
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__worker g_worker;
static stk__tensor g_host[2][N];  /* two inputs (cat/stack take both) */
static stk__tensor_list g_dev[2]; /* the same on the GPU */
static int32_t g_flag[N] = {1, 0, 0, 1, 1};
static stk__tensor g_flag_t[N];
static stk__tensor_list g_flag_list;

static size_t dtype_size(stk_dtype d) { return stk_dtype_size(d); }

/* Both inputs: [H, W, 3] samples of dtype (layout HWC), random bytes, on the host and the GPU. */
static void make_inputs(stk_dtype dtype) {
  for (int k = 0; k < 2; k++) {
    size_t max = 1;
    for (int i = 0; i < N; i++) {
      const int64_t shape[3] = {kH[i], kW[i], 3};
      CHECK(stk__tensor_resize(&g_host[k][i], dtype, 3, shape, "HWC") == STK_OK);
      uint8_t *p = (uint8_t *)g_host[k][i].data;
      uint32_t state = 777u + (uint32_t)(i * 31 + k);
      for (size_t b = 0; b < g_host[k][i].nbytes; b++) {
        state = state * 1664525u + 1013904223u;
        p[b] = (uint8_t)(state >> 24) & (dtype == STK_DTYPE_FLOAT32 ? 0x3f : 0xff); /* finite floats */
      }
      if (g_host[k][i].nbytes > max) max = g_host[k][i].nbytes;
    }
    CHECK(stk__gpu_tensor_list_reserve(&g_dev[k], N, max, &g_allocs) == STK_OK);
    for (int i = 0; i < N; i++) {
      stk__tensor *t = &g_dev[k].samples[i];
      stk__tensor_take_shape(t, &g_host[k][i], STK_DEVICE_GPU);
      CHECK(stk__gpu_memcpy_h2d_async(t->data, g_host[k][i].data, t->nbytes, g_stream) == STK_OK);
    }
  }
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
  (void)dtype_size;
}

static stk__op *make_op(const char *name, const char *device, const stk_args *args, int inputs) {
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, device, args, NULL, 3, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, device, g_err);
  if (op && inputs > op->num_inputs) op->num_inputs = inputs; /* cat/stack: both inputs */
  return st == STK_OK ? op : NULL;
}

/* Runs `name` with `args` on CPU (sample by sample) and GPU (the batch) and compares. `inputs`: 1
 * or 2 regular inputs; `bind_flag`: the argument input (the flag list) follows them. worst_levels:
 * the largest difference allowed (0 = bytes equal), on at most 0.5% of the values. */
static void compare(const char *name, const stk_args *args, int inputs, int bind_flag, int worst_levels) {
  stk__op *cpu = make_op(name, "cpu", args, inputs), *gpu = make_op(name, "gpu", args, inputs);
  if (!cpu || !gpu) goto done;
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk__tensor_list *ins[3] = {&g_dev[0], &g_dev[1], &g_flag_list}, *outs[1] = {&out};
  if (bind_flag) ins[inputs] = &g_flag_list;
  for (int round = 0; round < 2; round++) {
    stk__batch_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.batch_size = N;
    ctx.cuda_stream = g_stream;
    ctx.err = g_err;
    ctx.err_size = sizeof g_err;
    ctx.alloc_count = &g_allocs;
    uint64_t before = g_allocs;
    g_err[0] = 0;
    stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
    if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
    CHECK_MSG(st == STK_OK, "%s on the GPU: %s", name, g_err);
    if (st != STK_OK) break;
    if (round == 1)
      CHECK_MSG(g_allocs == before, "%s: %llu allocations on the second batch", name,
                (unsigned long long)(g_allocs - before));
  }
  size_t differing = 0, total = 0;
  for (int i = 0; i < N && out.count == N; i++) {
    stk__tensor host;
    memset(&host, 0, sizeof host);
    stk__sample_ctx sctx;
    memset(&sctx, 0, sizeof sctx);
    sctx.err = g_err;
    sctx.err_size = sizeof g_err;
    sctx.thread_scratch = &g_worker;
    stk__tensor *cin[3] = {&g_host[0][i], &g_host[1][i], &g_flag_t[i]}, *couts[1] = {&host};
    if (bind_flag) cin[inputs] = &g_flag_t[i];
    CHECK_MSG(cpu->impl->run_sample(cpu, &sctx, cin, couts) == STK_OK, "%s on the CPU: %s", name, g_err);
    const stk__tensor *t = &out.samples[i];
    int same_shape = t->ndim == host.ndim && t->dtype == host.dtype && strcmp(t->layout, host.layout) == 0 &&
                     memcmp(t->shape, host.shape, sizeof(int64_t) * (size_t)host.ndim) == 0;
    CHECK_MSG(same_shape, "%s sample %d: GPU shape/layout differs from the CPU's", name, i);
    if (same_shape && host.nbytes) {
      uint8_t *dev = malloc(host.nbytes);
      CHECK(stk__gpu_memcpy_d2h(dev, t->data, host.nbytes, g_stream) == STK_OK);
      const uint8_t *ref = host.data;
      for (size_t b = 0; b < host.nbytes; b++) {
        int d = abs((int)dev[b] - (int)ref[b]);
        differing += d != 0;
        CHECK_MSG(d <= worst_levels, "%s sample %d byte %zu: GPU %d, CPU %d", name, i, b, dev[b], ref[b]);
        if (d > worst_levels) break;
      }
      total += host.nbytes;
      free(dev);
    }
    stk__tensor_free(&host);
  }
  CHECK_MSG(differing * 200 <= total, "%s: %zu of %zu bytes differ", name, differing, total);
  stk__gpu_tensor_list_free(&out);
done:
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
}

static stk_args *args_new(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  return a;
}

static void test_flip_matches_cpu(void) {
  stk_args *a = args_new();
  stk_args_set_int(a, "vertical", 1);
  compare("flip", a, 1, 0, 0);
  stk_args_set_input(a, "horizontal", "flag");
  compare("flip", a, 1, 1, 0);
  stk_args_destroy(a);
}

static void test_transpose_matches_cpu(void) {
  stk_args *a = args_new();
  const int64_t perm[3] = {2, 0, 1};
  stk_args_set_int_list(a, "perm", perm, 3);
  compare("transpose", a, 1, 0, 0);
  stk_args_destroy(a);
}

static void test_crop_and_slice_match_cpu(void) {
  stk_args *a = args_new();
  const double crop[2] = {9, 14}, fill[3] = {1, 2, 3};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float(a, "crop_pos_x", 0.3);
  stk_args_set_string(a, "out_of_bounds_policy", "pad");
  stk_args_set_float_list(a, "fill_values", fill, 3);
  compare("crop", a, 1, 0, 0);
  stk_args_destroy(a);
  a = args_new();
  const double start[2] = {-2, 1}, shape[2] = {6, 40};
  stk_args_set_float_list(a, "start", start, 2);
  stk_args_set_float_list(a, "shape", shape, 2);
  stk_args_set_string(a, "out_of_bounds_policy", "trim_to_shape");
  compare("slice", a, 1, 0, 0);
  stk_args_destroy(a);
}

static void test_pad_and_paste_match_cpu(void) {
  stk_args *a = args_new();
  const int64_t align[1] = {8};
  stk_args_set_string(a, "axis_names", "HW");
  stk_args_set_int_list(a, "align", align, 1);
  stk_args_set_float(a, "fill_value", 5);
  compare("pad", a, 1, 0, 0);
  stk_args_destroy(a);
  a = args_new();
  stk_args_set_float(a, "ratio", 1.7);
  stk_args_set_float(a, "paste_y", 0.1);
  compare("paste", a, 1, 0, 0);
  stk_args_destroy(a);
}

static void test_erase_matches_cpu(void) {
  stk_args *a = args_new();
  const double anchor[4] = {2, 3, 10, 0}, shape[4] = {4, 5, 100, 2}, fill[3] = {9, 8, 7};
  stk_args_set_float_list(a, "anchor", anchor, 4);
  stk_args_set_float_list(a, "shape", shape, 4);
  stk_args_set_float_list(a, "fill_value", fill, 3);
  compare("erase", a, 1, 0, 0);
  stk_args_destroy(a);
}

static void test_reshape_family_matches_cpu(void) {
  stk_args *a = args_new();
  const int64_t shape[2] = {-1, 3};
  stk_args_set_int_list(a, "shape", shape, 2);
  compare("reshape", a, 1, 0, 0);
  stk_args_destroy(a);
  a = args_new();
  const int64_t axes[2] = {0, 2};
  stk_args_set_int_list(a, "axes", axes, 2);
  stk_args_set_string(a, "new_axis_names", "AB");
  compare("expand_dims", a, 1, 0, 0);
  stk_args_destroy(a);
}

static void test_cat_and_stack_match_cpu(void) {
  stk_args *a = args_new();
  stk_args_set_string(a, "axis_name", "C");
  compare("cat", a, 2, 0, 0);
  stk_args_destroy(a);
  a = args_new();
  stk_args_set_int(a, "axis", 3);
  compare("stack", a, 2, 0, 0);
  stk_args_destroy(a);
}

static void test_rotate_and_warp_affine_match_cpu(void) {
  stk_args *a = args_new();
  stk_args_set_float(a, "angle", 33.0);
  stk_args_set_float(a, "fill_value", 17);
  compare("rotate", a, 1, 0, 1);
  stk_args_destroy(a);
  a = args_new();
  stk_args_set_float(a, "angle", -71.5);
  stk_args_set_string(a, "interp_type", "INTERP_NN");
  stk_args_set_bool(a, "keep_size", 1);
  compare("rotate", a, 1, 0, 1);
  stk_args_destroy(a);
  a = args_new();
  const double m[6] = {0.8, 0.3, -2.0, -0.25, 1.2, 3.5}, size[2] = {40, 21};
  stk_args_set_float_list(a, "matrix", m, 6);
  stk_args_set_float_list(a, "size", size, 2);
  stk_args_set_bool(a, "inverse_map", 0);
  compare("warp_affine", a, 1, 0, 1);
  stk_args_destroy(a);
}

static void test_resize_crop_mirror_matches_cpu(void) {
  stk_args *a = args_new();
  const double size[2] = {24, 30}, crop[2] = {20, 18};
  stk_args_set_float_list(a, "size", size, 2);
  stk_args_set_string(a, "mode", "stretch");
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_input(a, "mirror", "flag");
  compare("resize_crop_mirror", a, 1, 1, 1);
  stk_args_destroy(a);
}

/* warp_affine's matrix as a second positional input (a CPU node's list, uploaded: the GPU plan reads
 * it back after the batch's uploads), one matrix per sample. */
static void test_warp_affine_matrix_input_matches_cpu(void) {
  stk__tensor host[N], saved_host[N];
  stk__tensor_list dev, saved_dev = g_dev[1];
  memset(host, 0, sizeof host);
  memset(&dev, 0, sizeof dev);
  CHECK(stk__gpu_tensor_list_reserve(&dev, N, 6 * sizeof(float), &g_allocs) == STK_OK);
  for (int i = 0; i < N; i++) {
    const int64_t shape[2] = {2, 3};
    CHECK(stk__tensor_resize(&host[i], STK_DTYPE_FLOAT32, 2, shape, "") == STK_OK);
    const float m[6] = {1.0f + 0.1f * i, 0.2f, -1.5f * i, -0.1f, 0.9f, 2.0f};
    memcpy(host[i].data, m, sizeof m);
    stk__tensor_take_shape(&dev.samples[i], &host[i], STK_DEVICE_GPU);
    CHECK(stk__gpu_memcpy_h2d_async(dev.samples[i].data, m, sizeof m, g_stream) == STK_OK);
    saved_host[i] = g_host[1][i];
    g_host[1][i] = host[i];
  }
  g_dev[1] = dev;
  stk_args *a = args_new();
  compare("warp_affine", a, 2, 0, 1);
  stk_args_destroy(a);
  g_dev[1] = saved_dev;
  for (int i = 0; i < N; i++) {
    g_host[1][i] = saved_host[i];
    stk__tensor_free(&host[i]);
  }
  stk__gpu_tensor_list_free(&dev);
}

/* rotate on FHWC sequences of 3 frames (every frame alike; one descriptor per frame on the GPU). */
static void test_rotate_sequences_match_cpu(void) {
  stk__tensor host[N], saved_host[N];
  stk__tensor_list dev, saved_dev = g_dev[0];
  memset(host, 0, sizeof host);
  memset(&dev, 0, sizeof dev);
  size_t max = 1;
  for (int i = 0; i < N; i++) {
    const int64_t shape[4] = {3, kH[i], kW[i], 3};
    CHECK(stk__tensor_resize(&host[i], STK_DTYPE_UINT8, 4, shape, "FHWC") == STK_OK);
    for (int f = 0; f < 3; f++)
      memcpy((uint8_t *)host[i].data + f * g_host[0][i].nbytes, g_host[f % 2][i].data, g_host[0][i].nbytes);
    if (host[i].nbytes > max) max = host[i].nbytes;
  }
  CHECK(stk__gpu_tensor_list_reserve(&dev, N, max, &g_allocs) == STK_OK);
  for (int i = 0; i < N; i++) {
    stk__tensor_take_shape(&dev.samples[i], &host[i], STK_DEVICE_GPU);
    CHECK(stk__gpu_memcpy_h2d_async(dev.samples[i].data, host[i].data, host[i].nbytes, g_stream) == STK_OK);
    saved_host[i] = g_host[0][i];
    g_host[0][i] = host[i];
  }
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
  g_dev[0] = dev;
  stk_args *a = args_new();
  stk_args_set_float(a, "angle", 123.0);
  compare("rotate", a, 1, 0, 1);
  stk_args_destroy(a);
  g_dev[0] = saved_dev;
  for (int i = 0; i < N; i++) {
    g_host[0][i] = saved_host[i];
    stk__tensor_free(&host[i]);
  }
  stk__gpu_tensor_list_free(&dev);
}

/* A bad argument on the GPU fails with the sample named, as the CPU fails. */
static void test_gpu_error_names_the_sample(void) {
  stk_args *a = args_new();
  const double crop[2] = {100, 100};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk__op *gpu = make_op("crop", "gpu", a, 1);
  if (gpu) {
    stk__tensor_list out;
    memset(&out, 0, sizeof out);
    stk__tensor_list *ins[1] = {&g_dev[0]}, *outs[1] = {&out};
    stk__batch_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cuda_stream = g_stream;
    ctx.err = g_err;
    ctx.err_size = sizeof g_err;
    g_err[0] = 0;
    CHECK(gpu->impl->run_batch(gpu, &ctx, ins, outs) == STK_EINVAL);
    CHECK_MSG(strstr(g_err, "sample 0") && strstr(g_err, "out_of_bounds_policy"), "message: %s", g_err);
    stk__gpu_tensor_list_free(&out);
    stk__op_free_standalone(gpu);
  }
  stk_args_destroy(a);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_flip_matches_cpu),
    STK_TEST_CASE(test_transpose_matches_cpu),
    STK_TEST_CASE(test_crop_and_slice_match_cpu),
    STK_TEST_CASE(test_pad_and_paste_match_cpu),
    STK_TEST_CASE(test_erase_matches_cpu),
    STK_TEST_CASE(test_reshape_family_matches_cpu),
    STK_TEST_CASE(test_cat_and_stack_match_cpu),
    STK_TEST_CASE(test_rotate_and_warp_affine_match_cpu),
    STK_TEST_CASE(test_resize_crop_mirror_matches_cpu),
    STK_TEST_CASE(test_warp_affine_matrix_input_matches_cpu),
    STK_TEST_CASE(test_rotate_sequences_match_cpu),
    STK_TEST_CASE(test_gpu_error_names_the_sample),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  for (int i = 0; i < N; i++) {
    g_flag_t[i].data = &g_flag[i];
    g_flag_t[i].nbytes = sizeof g_flag[i];
    g_flag_t[i].dtype = STK_DTYPE_INT32;
    g_flag_t[i].ndim = 1;
    g_flag_t[i].shape[0] = 1;
    g_flag_t[i].device = STK_DEVICE_CPU;
  }
  g_flag_list.count = N;
  g_flag_list.samples = g_flag_t;
  g_flag_list.device = STK_DEVICE_CPU;
  make_inputs(STK_DTYPE_UINT8);
  int rc = stk_test_run_selected("test_gpu_geometry", cases, STK_TEST_COUNT(cases), argc, argv);
  for (int k = 0; k < 2; k++) {
    stk__gpu_tensor_list_free(&g_dev[k]);
    for (int i = 0; i < N; i++) stk__tensor_free(&g_host[k][i]);
  }
  stk__gpu_stream_destroy(g_stream);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_geometry");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
