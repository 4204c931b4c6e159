/* src/ops/augment/cast/test_gpu_cast.c: the GPU `cast` against the CPU `cast`, byte for byte, for
 * every (input, output) pair of the 12 dtypes, both built through the registry. Each input dtype
 * gets a batch of samples of different shapes (1-d, 2-d, 3-d, 0-d, an empty one) whose first
 * elements are edge values -- NaN (with payloads), +-inf, -0, halves (0.5, 2.5, -2.5, ...),
 * values just outside every integer range, negatives for the unsigned types, 2^53 + 1, float16
 * overflow and subnormals, non-0/1 bool bytes -- and the rest pseudo-random values and raw bit
 * patterns. Also: one batch mixing input dtypes, a second batch allocating nothing, and a bad
 * `dtype` refused. Skips (exit 77, with the reason) without CUDA or a device.
 * Run on the GPU machine: build-cuda/tests/test_gpu_cast (or ctest -R test_gpu_cast). */
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

#define N     5  /* samples a batch */
#define TYPES 12 /* stk_dtype values 0 .. STK_DTYPE_FLOAT64 */
static const int kNdim[N] = {1, 2, 3, 0, 2};
static const int64_t kShape[N][3] = {{61}, {7, 13}, {3, 5, 4}, {0}, {0, 9}};

// clang-format off
static const double kEdges[] = {
    0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, 127.5, -128.5, 255.5, 256.0, -1.0, 32767.5,
    -32768.5, 65535.5, 65536.0, 65504.0, 65520.0, 2147483647.5, -2147483648.5, 4294967295.5, 4294967296.0,
    9007199254740993.0, 9223372036854775807.0, -9223372036854775808.0, 18446744073709551615.0, -3e19, 1e30, -1e30,
    3.4028234663852886e38, 1e300, -1e300, 5.960464477539063e-08, 2.98e-08, 1e-40, NAN, -NAN, INFINITY, -INFINITY};
/* integer bit patterns, stored truncated to the sample's width (so each type sees its own edges) */
static const int64_t kIntEdges[] = {
    0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535, 65536, INT32_MAX,
    (int64_t)INT32_MAX + 1, INT32_MIN, (int64_t)INT32_MIN - 1, UINT32_MAX, ((int64_t)1 << 53) + 1, INT64_MAX,
    INT64_MIN, INT64_MAX - 511};
/* float16 bit patterns: NaN with payloads, +-inf, subnormals, the largest finite, -0 */
static const uint16_t kHalfEdges[] = {0x7e01, 0xfc01, 0x7d00, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x7bff, 0xfbff, 0x8000};
// clang-format on

static stk__tensor g_host[TYPES][N];
static stk__tensor_list g_in[TYPES];
static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__worker g_worker;

static uint64_t next_random(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s ^ (*s >> 29);
}

/* Element k of a sample of `dtype`: edge values first (float16: then its bit patterns), then random
 * values and raw bit patterns. */
static void fill_element(void *data, stk_dtype dtype, size_t k, uint64_t *seed) {
  const size_t edges = sizeof kEdges / sizeof kEdges[0], int_edges = sizeof kIntEdges / sizeof kIntEdges[0];
  const size_t half_edges = sizeof kHalfEdges / sizeof kHalfEdges[0];
  const uint64_t r = next_random(seed);
  const size_t size = stk_dtype_size(dtype);
  if (!stk__dtype_is_float(dtype)) {
    int64_t raw = k < int_edges ? kIntEdges[k] : (int64_t)r;
    memcpy((unsigned char *)data + k * size, &raw, size); /* little-endian: the low bytes */
    return;
  }
  if (dtype == STK_DTYPE_FLOAT16 && k >= edges && k < edges + half_edges) {
    ((uint16_t *)data)[k] = kHalfEdges[k - edges];
    return;
  }
  if (k >= edges && r % 4 == 0) { /* raw bits: any NaN payload, denormal or huge value */
    memcpy((unsigned char *)data + k * size, &r, size);
    return;
  }
  static const double kScale[] = {1, 300, 70000, 5e9, 2e19};
  double v = k < edges ? kEdges[k] : ((double)(r >> 11) / 9007199254740992.0 - 0.5) * kScale[(r >> 3) % 5];
  if (k >= edges && (r & 4)) v = floor(v) + 0.5; /* a half: the rounding rule */
  stk__dtype_store(data, dtype, k, v);
}

static void make_inputs(void) {
  for (int d = 0; d < TYPES; d++) {
    uint64_t seed = 99u + (uint64_t)d;
    for (int i = 0; i < N; i++) {
      stk__tensor *t = &g_host[d][i];
      CHECK(stk__tensor_resize(t, (stk_dtype)d, kNdim[i], kShape[i], i == 2 ? "HWC" : "") == STK_OK);
      const size_t n = stk__tensor_numel(t);
      for (size_t k = 0; k < n; k++) fill_element(t->data, (stk_dtype)d, k, &seed);
    }
    gpu_test_upload(&g_in[d], g_host[d], N, g_stream, &g_allocs);
    g_in[d].count = N;
  }
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

static stk__op *make(const char *dtype, const char *device) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  stk_args_set_string(a, "dtype", dtype);
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone("cast", device, a, NULL, 17, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "cast(dtype=%s) on %s: %s", dtype, device, g_err);
  stk_args_destroy(a);
  return st == STK_OK ? op : NULL;
}

static stk_status run_gpu(stk__op *gpu, stk__tensor_list *in, stk__tensor_list *out) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.batch_size = in->count;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  stk__tensor_list *ins[1] = {in}, *outs[1] = {out};
  stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
  return st == STK_OK ? stk__gpu_stream_synchronize(g_stream) : st;
}

static stk_status run_cpu(stk__op *cpu, const stk__tensor *in, stk__tensor *out) {
  stk__sample_ctx sc;
  memset(&sc, 0, sizeof sc);
  sc.err = g_err;
  sc.err_size = sizeof g_err;
  sc.thread_scratch = &g_worker;
  stk__tensor *ins[1] = {(stk__tensor *)in}, *outs[1] = {out};
  return cpu->impl->run_sample(cpu, &sc, ins, outs);
}

/* GPU sample `t` against the CPU's `ref` from input `in`: metadata equal, bytes equal (the first
 * differing element is printed with its input). Returns 1 when equal. */
static int same_sample(const char *what, int i, const stk__tensor *in, const stk__tensor *t, const stk__tensor *ref) {
  if (t->nbytes != ref->nbytes || t->ndim != ref->ndim || t->dtype != ref->dtype ||
      memcmp(t->shape, ref->shape, sizeof(int64_t) * (size_t)ref->ndim) != 0 || strcmp(t->layout, ref->layout) != 0) {
    CHECK_MSG(0, "%s: sample %d differs in shape, dtype or layout (%zu vs %zu bytes, \"%s\" vs \"%s\")", what, i,
              t->nbytes, ref->nbytes, t->layout, ref->layout);
    return 0;
  }
  uint8_t *g = malloc(t->nbytes ? t->nbytes : 1);
  CHECK(g && stk__gpu_memcpy_d2h(g, t->data, t->nbytes, g_stream) == STK_OK);
  const size_t size = stk_dtype_size(t->dtype), n = t->nbytes / size;
  int equal = 1;
  for (size_t k = 0; k < n && equal; k++) {
    if (memcmp(g + k * size, (const uint8_t *)ref->data + k * size, size) == 0) continue;
    uint64_t gb = 0, cb = 0, ib = 0;
    memcpy(&gb, g + k * size, size);
    memcpy(&cb, (const uint8_t *)ref->data + k * size, size);
    memcpy(&ib, (const uint8_t *)in->data + k * stk_dtype_size(in->dtype), stk_dtype_size(in->dtype));
    CHECK_MSG(0, "%s: sample %d element %zu: input bits 0x%llx (%.17g) -> GPU 0x%llx, CPU 0x%llx", what, i, k,
              (unsigned long long)ib, stk__dtype_load(in->data, in->dtype, k), (unsigned long long)gb,
              (unsigned long long)cb);
    equal = 0;
  }
  free(g);
  return equal;
}

/* Casts batch `in` (host copy `host`) to `to` on both devices; returns the number of differing samples. */
static int compare_batch(const char *what, stk__tensor_list *in, const stk__tensor *host, stk_dtype to) {
  stk__op *cpu = make(stk_dtype_name(to), "cpu"), *gpu = make(stk_dtype_name(to), "gpu");
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  int bad = 0;
  stk_status st = cpu && gpu ? run_gpu(gpu, in, &out) : STK_EINVAL;
  CHECK_MSG(st == STK_OK, "%s on the GPU: %s", what, g_err);
  for (int i = 0; st == STK_OK && i < in->count; i++) {
    stk__tensor ref = {0};
    CHECK_MSG(run_cpu(cpu, &host[i], &ref) == STK_OK, "%s on the CPU: %s", what, g_err);
    bad += !same_sample(what, i, &host[i], &out.samples[i], &ref);
    stk__tensor_free(&ref);
  }
  stk__gpu_tensor_list_free(&out);
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
  return bad;
}

static void gpu_matches_cpu_byte_for_byte_for_every_dtype_pair(void) {
  int pairs = 0, bad_pairs = 0;
  for (int from = 0; from < TYPES; from++)
    for (int to = 0; to < TYPES; to++) {
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", stk_dtype_name((stk_dtype)from), stk_dtype_name((stk_dtype)to));
      bad_pairs += compare_batch(what, &g_in[from], g_host[from], (stk_dtype)to) != 0;
      pairs++;
    }
  CHECK_MSG(bad_pairs == 0, "%d of %d dtype pairs differ between the GPU and the CPU", bad_pairs, pairs);
  printf("%d dtype pairs compared\n", pairs);
}

/* One batch whose samples have different dtypes (each its own descriptor on the GPU). */
static void samples_of_different_dtypes_in_one_batch_match_the_cpu(void) {
  stk__tensor host[N];
  stk__tensor_list in;
  memset(&in, 0, sizeof in);
  static const stk_dtype kFrom[N] = {STK_DTYPE_FLOAT64, STK_DTYPE_FLOAT16, STK_DTYPE_INT64, STK_DTYPE_UINT8,
                                     STK_DTYPE_FLOAT32};
  for (int i = 0; i < N; i++) host[i] = g_host[kFrom[i]][(i + 1) % N];
  gpu_test_upload(&in, host, N, g_stream, &g_allocs);
  in.count = N;
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
  CHECK(compare_batch("mixed batch -> int16", &in, host, STK_DTYPE_INT16) == 0);
  CHECK(compare_batch("mixed batch -> float16", &in, host, STK_DTYPE_FLOAT16) == 0);
  stk__gpu_tensor_list_free(&in);
}

static void second_batch_allocates_nothing(void) {
  stk__op *gpu = make("int8", "gpu");
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  out.device = STK_DEVICE_GPU;
  for (int run = 0; gpu && run < 2; run++) {
    uint64_t before = g_allocs;
    CHECK_MSG(run_gpu(gpu, &g_in[STK_DTYPE_FLOAT32], &out) == STK_OK, "cast on the GPU: %s", g_err);
    if (run == 1)
      CHECK_MSG(g_allocs == before, "the second batch allocated %llu times", (unsigned long long)(g_allocs - before));
  }
  stk__gpu_tensor_list_free(&out);
  if (gpu) stk__op_free_standalone(gpu);
}

static void unknown_dtype_is_refused_naming_the_argument(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  stk_args_set_string(a, "dtype", "complex64");
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone("cast", "gpu", a, NULL, 17, &op, g_err, sizeof g_err);
  CHECK_MSG(st != STK_OK, "cast(dtype=complex64) on the GPU was accepted");
  CHECK_MSG(strstr(g_err, "'dtype'") && strstr(g_err, "complex64"), "message does not name the argument: %s", g_err);
  if (op) stk__op_free_standalone(op);
  stk_args_destroy(a);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(gpu_matches_cpu_byte_for_byte_for_every_dtype_pair),
    STK_TEST_CASE(samples_of_different_dtypes_in_one_batch_match_the_cpu),
    STK_TEST_CASE(second_batch_allocates_nothing),
    STK_TEST_CASE(unknown_dtype_is_refused_naming_the_argument),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_cast", cases, STK_TEST_COUNT(cases), argc, argv);
  for (int d = 0; d < TYPES; d++) {
    stk__gpu_tensor_list_free(&g_in[d]);
    for (int i = 0; i < N; i++) stk__tensor_free(&g_host[d][i]);
  }
  stk__gpu_stream_destroy(g_stream);
  for (int s = 0; s < STK__SCRATCH_SLOTS; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_cast");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
