/* src/ops/augment/arithmetic/test_math.c: math.elementwise and _conditional.merge through the
 * registry (stk__op_new_standalone, as a pipeline makes them): DALI's type promotion table, result
 * values against hand-computed ones (wrap-around, truncating division, C remainder, true division,
 * constants on either side, comparisons, bitwise, unary functions, clamp), broadcasting of a
 * per-sample scalar and the error naming mismatched shapes, the type errors DALI raises, float16
 * rounding identical to ops/common/dtype.h, the merge's per-sample choice and its errors; and the
 * GPU implementations against the CPU ones, byte for byte (skips without a CUDA device).
 * Not on any hot path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/arithmetic/math_params.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"
#include "case_list.h"
#include "testutil.h"

static char g_err[1024];

/* A host tensor of `n` elements of dtype copied from `values` (shape [n], or [] when n == 0 and scalar). */
static stk__tensor make_tensor(stk_dtype dtype, int ndim, const int64_t *shape, const void *values) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  CHECK(stk__tensor_resize(&t, dtype, ndim, shape, "") == STK_OK);
  if (t.nbytes) memcpy(t.data, values, t.nbytes);
  return t;
}

static stk__op *make_op(const char *op_name, stk_args *args, int num_inputs) {
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone("math.elementwise", "cpu", args, NULL, 1, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s: %s", op_name, g_err);
  if (op) op->num_inputs = num_inputs; /* as the graph sets it from the node's inputs */
  stk_args_destroy(args);
  return op;
}

static stk_args *args_op(const char *op_name) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  CHECK(stk_args_set_string(a, "op", op_name) == STK_OK);
  return a;
}

/* Runs a CPU op on one sample; returns the status, output in *out. */
static stk_status run(stk__op *op, stk__tensor *a, stk__tensor *b, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  g_err[0] = 0;
  stk__tensor *inputs[2] = {a, b}, *outputs[1] = {out};
  return op->impl->run_sample(op, &ctx, inputs, outputs);
}

/* Binary op of two [n] tensors; checks the output dtype and bytes. */
static void check_binary(const char *name, stk_dtype da, const void *va, stk_dtype db, const void *vb, int64_t n,
                         stk_dtype want_dtype, const void *want) {
  stk__op *op = make_op(name, args_op(name), 2);
  if (!op) return;
  stk__tensor a = make_tensor(da, 1, &n, va), b = make_tensor(db, 1, &n, vb), out;
  memset(&out, 0, sizeof out);
  stk_status st = run(op, &a, &b, &out);
  CHECK_MSG(st == STK_OK, "%s %s,%s: %s", name, stk_dtype_name(da), stk_dtype_name(db), g_err);
  if (st == STK_OK) {
    CHECK_MSG(out.dtype == want_dtype, "%s %s,%s gave %s, want %s", name, stk_dtype_name(da), stk_dtype_name(db),
              stk_dtype_name(out.dtype), stk_dtype_name(want_dtype));
    CHECK_MSG(out.dtype == want_dtype && memcmp(out.data, want, (size_t)n * stk_dtype_size(want_dtype)) == 0,
              "%s %s,%s: wrong values", name, stk_dtype_name(da), stk_dtype_name(db));
  }
  stk__tensor_free(&a), stk__tensor_free(&b), stk__tensor_free(&out);
  stk__op_free_standalone(op);
}

static void promotion_follows_dali_table(void) {
  static const struct {
    stk_dtype a, b, want;
  } rows[] = {
      {STK_DTYPE_UINT8, STK_DTYPE_UINT8, STK_DTYPE_UINT8},     {STK_DTYPE_UINT8, STK_DTYPE_INT32, STK_DTYPE_INT32},
      {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT32}, {STK_DTYPE_INT8, STK_DTYPE_UINT8, STK_DTYPE_INT16},
      {STK_DTYPE_INT16, STK_DTYPE_UINT8, STK_DTYPE_INT16},     {STK_DTYPE_INT32, STK_DTYPE_UINT32, STK_DTYPE_INT64},
      {STK_DTYPE_INT64, STK_DTYPE_UINT64, STK_DTYPE_INT64},    {STK_DTYPE_UINT16, STK_DTYPE_UINT64, STK_DTYPE_UINT64},
      {STK_DTYPE_BOOL, STK_DTYPE_UINT8, STK_DTYPE_UINT8},      {STK_DTYPE_BOOL, STK_DTYPE_INT8, STK_DTYPE_INT8},
      {STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT32}, {STK_DTYPE_FLOAT64, STK_DTYPE_INT64, STK_DTYPE_FLOAT64},
      {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT64, STK_DTYPE_FLOAT64}, {STK_DTYPE_INT64, STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT16},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    CHECK_MSG(stk__math_promote(rows[i].a, rows[i].b) == rows[i].want, "%s with %s",
              stk_dtype_name(rows[i].a), stk_dtype_name(rows[i].b));
    CHECK(stk__math_promote(rows[i].b, rows[i].a) == rows[i].want); /* commutative */
  }
}

static void integer_arithmetic_wraps_and_truncates(void) {
  const int8_t a8[4] = {100, -100, 7, -128}, b8[4] = {100, 100, 2, -1};
  const int8_t sum8[4] = {-56, 0, 9, 127};
  check_binary("add", STK_DTYPE_INT8, a8, STK_DTYPE_INT8, b8, 4, STK_DTYPE_INT8, sum8);
  const uint8_t u[3] = {3, 200, 10}, v[3] = {5, 100, 0};
  const uint8_t diff[3] = {254, 100, 10}, prod[3] = {15, 32, 0}, quot[3] = {0, 2, 0};
  check_binary("sub", STK_DTYPE_UINT8, u, STK_DTYPE_UINT8, v, 3, STK_DTYPE_UINT8, diff);
  check_binary("mul", STK_DTYPE_UINT8, u, STK_DTYPE_UINT8, v, 3, STK_DTYPE_UINT8, prod);
  check_binary("floordiv", STK_DTYPE_UINT8, u, STK_DTYPE_UINT8, v, 3, STK_DTYPE_UINT8, quot); /* x // 0 is 0 */
  const int32_t x[4] = {-7, 7, -7, 5}, y[4] = {2, -2, -2, 0};
  const int32_t tq[4] = {-3, -3, 3, 0}, tr[4] = {-1, 1, -1, 0}; /* C semantics: toward zero, sign of dividend */
  check_binary("floordiv", STK_DTYPE_INT32, x, STK_DTYPE_INT32, y, 4, STK_DTYPE_INT32, tq);
  check_binary("mod", STK_DTYPE_INT32, x, STK_DTYPE_INT32, y, 4, STK_DTYPE_INT32, tr);
  const int32_t p[3] = {2, -3, 2}, e[3] = {10, 3, -1}, pw[3] = {1024, -27, 0};
  check_binary("pow", STK_DTYPE_INT32, p, STK_DTYPE_INT32, e, 3, STK_DTYPE_INT32, pw);
  const uint8_t m[2] = {42, 8};
  const int32_t n[2] = {9, 2}, mix[2] = {378, 16};
  check_binary("mul", STK_DTYPE_UINT8, m, STK_DTYPE_INT32, n, 2, STK_DTYPE_INT32, mix); /* DALI's example */
}

static void division_and_float_ops(void) {
  const uint8_t m[2] = {42, 8}, n[2] = {9, 2};
  const float q[2] = {42.0f / 9.0f, 4.0f};
  check_binary("truediv", STK_DTYPE_UINT8, m, STK_DTYPE_UINT8, n, 2, STK_DTYPE_FLOAT32, q);
  const float fn[2] = {9, 2};
  check_binary("floordiv", STK_DTYPE_UINT8, m, STK_DTYPE_FLOAT32, fn, 2, STK_DTYPE_FLOAT32, q); /* DALI: no floor */
  const double d[2] = {-7.5, 7.5}, e[2] = {2, -2}, r[2] = {-1.5, 1.5};
  check_binary("mod", STK_DTYPE_FLOAT64, d, STK_DTYPE_FLOAT64, e, 2, STK_DTYPE_FLOAT64, r);
  const uint16_t h[2] = {stk__float_to_half(1.5f), stk__float_to_half(-2.25f)};
  const uint16_t hs[2] = {stk__float_to_half(3.0f), stk__float_to_half(-4.5f)};
  check_binary("add", STK_DTYPE_FLOAT16, h, STK_DTYPE_FLOAT16, h, 2, STK_DTYPE_FLOAT16, hs);
}

static void comparisons_and_bitwise(void) {
  const int16_t a[4] = {-1, 5, 5, 300};
  const uint8_t b[4] = {255, 5, 4, 44};
  const uint8_t lt[4] = {1, 0, 0, 0}, eq[4] = {0, 1, 0, 0}, ge[4] = {0, 1, 1, 1};
  check_binary("lt", STK_DTYPE_INT16, a, STK_DTYPE_UINT8, b, 4, STK_DTYPE_BOOL, lt); /* -1 < 255: compared as int */
  check_binary("eq", STK_DTYPE_INT16, a, STK_DTYPE_UINT8, b, 4, STK_DTYPE_BOOL, eq);
  check_binary("ge", STK_DTYPE_INT16, a, STK_DTYPE_UINT8, b, 4, STK_DTYPE_BOOL, ge);
  const uint8_t x[2] = {42, 8}, y[2] = {9, 2}, o[2] = {43, 10}, an[2] = {8, 0}, xo[2] = {35, 10};
  check_binary("bitor", STK_DTYPE_UINT8, x, STK_DTYPE_UINT8, y, 2, STK_DTYPE_UINT8, o);
  check_binary("bitand", STK_DTYPE_UINT8, x, STK_DTYPE_UINT8, y, 2, STK_DTYPE_UINT8, an);
  check_binary("bitxor", STK_DTYPE_UINT8, x, STK_DTYPE_UINT8, y, 2, STK_DTYPE_UINT8, xo);
  const uint8_t t[4] = {0, 0, 1, 1}, s[4] = {0, 1, 0, 1}, tand[4] = {0, 0, 0, 1}, tor[4] = {0, 1, 1, 1};
  check_binary("mul", STK_DTYPE_BOOL, t, STK_DTYPE_BOOL, s, 4, STK_DTYPE_BOOL, tand);
  check_binary("bitor", STK_DTYPE_BOOL, t, STK_DTYPE_BOOL, s, 4, STK_DTYPE_BOOL, tor);
  const float nan2[2] = {NAN, 1}, one2[2] = {1, 1};
  const uint8_t ne[2] = {1, 0}, eq2[2] = {0, 1};
  check_binary("ne", STK_DTYPE_FLOAT32, nan2, STK_DTYPE_FLOAT32, one2, 2, STK_DTYPE_BOOL, ne);
  check_binary("eq", STK_DTYPE_FLOAT32, nan2, STK_DTYPE_FLOAT32, one2, 2, STK_DTYPE_BOOL, eq2);
}

/* One-tensor op with a constant: checks dtype and bytes. */
static void check_constant(const char *name, stk_dtype dt, const void *values, int64_t n, const char *cdtype,
                           int64_t ci, double cf, int left, stk_dtype want_dtype, const void *want) {
  stk_args *args = args_op(name);
  CHECK(stk_args_set_string(args, "scalar_dtype", cdtype) == STK_OK);
  CHECK(stk_args_set_int(args, "scalar_int", ci) == STK_OK);
  CHECK(stk_args_set_float(args, "scalar", cf) == STK_OK);
  CHECK(stk_args_set_bool(args, "scalar_left", left) == STK_OK);
  stk__op *op = make_op(name, args, 1);
  if (!op) return;
  stk__tensor a = make_tensor(dt, 1, &n, values), out;
  memset(&out, 0, sizeof out);
  stk_status st = run(op, &a, NULL, &out);
  CHECK_MSG(st == STK_OK, "%s: %s", name, g_err);
  CHECK_MSG(st == STK_OK && out.dtype == want_dtype, "%s with %s constant gave %s", name, cdtype,
            stk_dtype_name(out.dtype));
  CHECK_MSG(st == STK_OK && out.dtype == want_dtype && memcmp(out.data, want, out.nbytes) == 0, "%s %s: values", name,
            cdtype);
  stk__tensor_free(&a), stk__tensor_free(&out);
  stk__op_free_standalone(op);
}

static void constants_promote_as_int32_and_float32(void) {
  const uint8_t m[2] = {42, 8};
  const int32_t plus10[2] = {52, 18};
  check_constant("add", STK_DTYPE_UINT8, m, 2, "int32", 10, 0, 0, STK_DTYPE_INT32, plus10); /* DALI: -> int32 */
  const float f[2] = {42, 8}, fplus[2] = {52, 18};
  check_constant("add", STK_DTYPE_FLOAT32, f, 2, "int32", 10, 0, 0, STK_DTYPE_FLOAT32, fplus);
  const float up[2] = {42 + 42.3f, 8 + 42.3f};
  check_constant("add", STK_DTYPE_UINT8, m, 2, "float32", 0, 42.3, 0, STK_DTYPE_FLOAT32, up);
  const double d[1] = {1.0}, dsum[1] = {1.0 + (double)0.1f}; /* a float constant is a float32 value */
  check_constant("add", STK_DTYPE_FLOAT64, d, 1, "float32", 0, 0.1, 0, STK_DTYPE_FLOAT64, dsum);
  const int32_t minus[2] = {10 - 42, 10 - 8};
  check_constant("sub", STK_DTYPE_UINT8, m, 2, "int32", 10, 0, 1, STK_DTYPE_INT32, minus); /* 10 - x */
  const uint8_t same[2] = {84, 16};
  check_constant("mul", STK_DTYPE_UINT8, m, 2, "uint8", 2, 0, 0, STK_DTYPE_UINT8, same); /* Constant(2, UINT8) */
  const float rdiv[2] = {1.0f / 42, 1.0f / 8};
  check_constant("truediv", STK_DTYPE_UINT8, m, 2, "int32", 1, 0, 1, STK_DTYPE_FLOAT32, rdiv);
  const uint8_t gt[2] = {1, 0};
  check_constant("gt", STK_DTYPE_UINT8, m, 2, "float32", 0, 8.5, 0, STK_DTYPE_BOOL, gt);
}

static void unary_functions_and_clamp(void) {
  const int64_t n = 3;
  const int32_t x[3] = {4, -9, 0};
  stk__tensor a = make_tensor(STK_DTYPE_INT32, 1, &n, x), out;
  memset(&out, 0, sizeof out);
  static const struct {
    const char *op;
    stk_dtype dtype;
  } rows[] = {{"neg", STK_DTYPE_INT32}, {"abs", STK_DTYPE_INT32}, {"sqrt", STK_DTYPE_FLOAT32},
              {"exp", STK_DTYPE_FLOAT32}, {"invert", STK_DTYPE_INT32}, {"floor", STK_DTYPE_INT32}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    stk__op *op = make_op(rows[r].op, args_op(rows[r].op), 1);
    if (!op) continue;
    CHECK_MSG(run(op, &a, NULL, &out) == STK_OK, "%s: %s", rows[r].op, g_err);
    CHECK_MSG(out.dtype == rows[r].dtype, "%s gave %s", rows[r].op, stk_dtype_name(out.dtype));
    for (int i = 0; i < 3 && out.dtype == rows[r].dtype; i++) {
      double got = out.dtype == STK_DTYPE_FLOAT32 ? ((float *)out.data)[i] : ((int32_t *)out.data)[i];
      double want = r == 0 ? -x[i] : r == 1 ? abs(x[i]) : r == 2 ? (float)sqrt(x[i]) : r == 3 ? (float)exp(x[i])
                    : r == 4 ? ~x[i] : x[i];
      CHECK_MSG(isnan(want) ? isnan(got) : got == want, "%s(%d) = %g, want %g", rows[r].op, x[i], got, want);
    }
    stk__op_free_standalone(op);
  }
  stk_args *args = args_op("clamp");
  CHECK(stk_args_set_float(args, "lo", -1) == STK_OK && stk_args_set_float(args, "hi", 2) == STK_OK);
  CHECK(stk_args_set_string(args, "scalar_dtype", "int32") == STK_OK);
  stk__op *op = make_op("clamp", args, 1);
  if (op) {
    CHECK(run(op, &a, NULL, &out) == STK_OK && out.dtype == STK_DTYPE_INT32);
    const int32_t want[3] = {2, -1, 0};
    CHECK(out.dtype == STK_DTYPE_INT32 && memcmp(out.data, want, sizeof want) == 0);
    stk__op_free_standalone(op);
  }
  stk__tensor_free(&a), stk__tensor_free(&out);
}

static void scalar_side_broadcasts_and_mismatch_names_shapes(void) {
  const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, one = 1;
  const float v[6] = {1, 2, 3, 4, 5, 6}, k = 10;
  stk__tensor a = make_tensor(STK_DTYPE_FLOAT32, 2, s23, v), s = make_tensor(STK_DTYPE_FLOAT32, 1, &one, &k);
  stk__tensor z = make_tensor(STK_DTYPE_FLOAT32, 0, NULL, &k), c = make_tensor(STK_DTYPE_FLOAT32, 2, s32, v), out;
  memset(&out, 0, sizeof out);
  stk__op *op = make_op("sub", args_op("sub"), 2);
  if (!op) return;
  CHECK(run(op, &a, &s, &out) == STK_OK && out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 3);
  CHECK(out.nbytes == 24 && ((float *)out.data)[5] == -4.0f);
  CHECK(run(op, &z, &a, &out) == STK_OK && out.ndim == 2 && out.shape[1] == 3 && ((float *)out.data)[0] == 9.0f);
  CHECK(run(op, &a, &c, &out) == STK_EINVAL);
  CHECK_MSG(strstr(g_err, "[2, 3]") && strstr(g_err, "[3, 2]"), "message: %s", g_err);
  stk__op_free_standalone(op);
  stk__tensor_free(&a), stk__tensor_free(&s), stk__tensor_free(&z), stk__tensor_free(&c), stk__tensor_free(&out);
}

static void type_errors_are_refused_with_a_message(void) {
  const int64_t n = 2;
  const float f[2] = {1, 2};
  const uint8_t t[2] = {1, 0};
  stk__tensor a = make_tensor(STK_DTYPE_FLOAT32, 1, &n, f), b = make_tensor(STK_DTYPE_BOOL, 1, &n, t), out;
  memset(&out, 0, sizeof out);
  static const struct {
    const char *op;
    int float_left;
    const char *says;
  } rows[] = {{"bitand", 1, "integer or bool"}, {"add", 0, "two bool"}, {"mod", 0, "bool"}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    stk__op *op = make_op(rows[r].op, args_op(rows[r].op), 2);
    if (!op) continue;
    CHECK(run(op, rows[r].float_left ? &a : &b, &b, &out) == STK_EINVAL);
    CHECK_MSG(strstr(g_err, rows[r].says) != NULL, "%s: %s", rows[r].op, g_err);
    stk__op_free_standalone(op);
  }
  stk__op *op = NULL;
  stk_args *args = args_op("frobnicate");
  CHECK(stk__op_new_standalone("math.elementwise", "cpu", args, NULL, 1, &op, g_err, sizeof g_err) == STK_EINVAL);
  CHECK(strstr(g_err, "frobnicate") != NULL);
  stk_args_destroy(args);
  op = make_op("add", args_op("add"), 1); /* a binary op given one tensor and no constant */
  if (op) {
    CHECK(run(op, &a, NULL, &out) == STK_EINVAL && strstr(g_err, "2 tensor input") != NULL);
    stk__op_free_standalone(op);
  }
  stk__tensor_free(&a), stk__tensor_free(&b), stk__tensor_free(&out);
}

static void float16_store_matches_dtype_h(void) {
  int bad = 0;
  for (uint32_t bits = 0; bits < 0xffffffffu - 0x00012345u; bits += 0x00012345u) {
    float f;
    memcpy(&f, &bits, sizeof f);
    if (isnan(f)) continue;
    if (stk__math_half_store(f) != stk__float_to_half(f)) bad++;
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    float a = stk__math_half_load((uint16_t)h), b = stk__half_to_float((uint16_t)h);
    if (!(isnan(a) && isnan(b)) && memcmp(&a, &b, sizeof a) != 0) bad++;
  }
  CHECK_MSG(bad == 0, "%d float16 conversions differ from ops/common/dtype.h", bad);
}

static void merge_takes_the_branch_the_predicate_names(void) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  CHECK(stk_args_set_input(args, "predicate", "cond") == STK_OK);
  stk__op *op = NULL;
  CHECK_MSG(stk__op_new_standalone("_conditional.merge", "cpu", args, NULL, 1, &op, g_err, sizeof g_err) == STK_OK,
            "%s", g_err);
  stk_args_destroy(args);
  if (!op) return;
  const int64_t n2 = 2, n3 = 3, one = 1;
  const int32_t a[2] = {1, 2}, b[3] = {7, 8, 9}, yes = 1, no = 0;
  stk__tensor ta = make_tensor(STK_DTYPE_INT32, 1, &n2, a), tb = make_tensor(STK_DTYPE_INT32, 1, &n3, b);
  stk__tensor p1 = make_tensor(STK_DTYPE_INT32, 1, &one, &yes), p0 = make_tensor(STK_DTYPE_INT32, 1, &one, &no), out;
  memset(&out, 0, sizeof out);
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  stk__tensor *in1[3] = {&ta, &tb, &p1}, *in0[3] = {&ta, &tb, &p0}, *outs[1] = {&out};
  CHECK(op->impl->run_sample(op, &ctx, in1, outs) == STK_OK && out.shape[0] == 2 && memcmp(out.data, a, 8) == 0);
  CHECK(op->impl->run_sample(op, &ctx, in0, outs) == STK_OK && out.shape[0] == 3 && memcmp(out.data, b, 12) == 0);
  const float fb[3] = {7, 8, 9};
  stk__tensor tf = make_tensor(STK_DTYPE_FLOAT32, 1, &n3, fb);
  stk__tensor *bad[3] = {&ta, &tf, &p1};
  CHECK(op->impl->run_sample(op, &ctx, bad, outs) == STK_EINVAL);
  CHECK_MSG(strstr(g_err, "int32") && strstr(g_err, "float"), "message: %s", g_err);
  stk__tensor *not_scalar[3] = {&ta, &tb, &ta};
  CHECK(op->impl->run_sample(op, &ctx, not_scalar, outs) == STK_EINVAL && strstr(g_err, "scalar"));
  stk__tensor_free(&ta), stk__tensor_free(&tb), stk__tensor_free(&tf), stk__tensor_free(&p1);
  stk__tensor_free(&p0), stk__tensor_free(&out);
  stk__op_free_standalone(op);
}


/* ---- GPU against CPU ------------------------------------------------------------------------------ */
#if defined(STOKER_HAVE_CUDA)
#include "gpu_testutil.h"
#include "ops/common/gpu_ops.h"

#define GPU_N 4
static const int64_t kSizes[GPU_N] = {1000, 1, 4097, 33}; /* sample 1: a per-sample scalar */

/* Random bytes of dtype that are valid values (floats in [-50, 50), integers any bits). */
static void fill_random(void *data, stk_dtype dtype, size_t n, uint32_t *seed) {
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    uint32_t r = *seed >> 8;
    double f = (double)r / (1u << 24) * 100.0 - 50.0;
    switch (dtype) {
      case STK_DTYPE_FLOAT32: ((float *)data)[i] = (float)f; break;
      case STK_DTYPE_FLOAT64: ((double *)data)[i] = f; break;
      case STK_DTYPE_FLOAT16: ((uint16_t *)data)[i] = stk__float_to_half((float)f); break;
      case STK_DTYPE_BOOL: ((uint8_t *)data)[i] = r & 1; break;
      default: memcpy((uint8_t *)data + i * stk_dtype_size(dtype), &r, stk_dtype_size(dtype) < 3 ? stk_dtype_size(dtype) : 3);
        if (stk_dtype_size(dtype) > 3) memset((uint8_t *)data + i * stk_dtype_size(dtype) + 3, (r & 1) ? 0xff : 0, stk_dtype_size(dtype) - 3);
    }
  }
}

static void upload(stk__tensor_list *list, stk__tensor *host, void *stream) {
  size_t sizes[GPU_N];
  for (int i = 0; i < GPU_N; i++) sizes[i] = (host[i].nbytes + 255) & ~(size_t)255;
  CHECK(stk__gpu_tensor_list_reserve_sizes(list, GPU_N, sizes, NULL) == STK_OK);
  for (int i = 0; i < GPU_N; i++) {
    stk__tensor_set_shape(&list->samples[i], host[i].dtype, host[i].ndim, host[i].shape, "", host[i].nbytes);
    list->samples[i].device = STK_DEVICE_GPU;
    CHECK(stk__gpu_memcpy_h2d_async(list->samples[i].data, host[i].data, host[i].nbytes, stream) == STK_OK);
  }
  CHECK(stk__gpu_stream_synchronize(stream) == STK_OK);
}

static int transcendental(const char *op) {
  static const char *const names[] = {"exp", "log", "log2", "log10", "sin", "cos", "tan", "fpow", "pow", "cbrt",
                                      "atan2", "tanh"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(op, names[i]) == 0) return 1;
  return 0;
}

/* Units in the last place between two floats of `dtype` (0 when the bytes are equal). */
static double ulps(const void *a, const void *b, stk_dtype dtype, size_t i) {
  if (dtype == STK_DTYPE_FLOAT32) {
    float x = ((const float *)a)[i], y = ((const float *)b)[i];
    if (memcmp(&x, &y, 4) == 0 || (isnan(x) && isnan(y))) return 0;
    return fabs((double)x - y) / fmax(nextafterf(fabsf(y), INFINITY) - fabsf(y), 1e-45);
  }
  if (dtype == STK_DTYPE_FLOAT64) {
    double x = ((const double *)a)[i], y = ((const double *)b)[i];
    if (memcmp(&x, &y, 8) == 0 || (isnan(x) && isnan(y))) return 0;
    return fabs(x - y) / fmax(nextafter(fabs(y), INFINITY) - fabs(y), 1e-300);
  }
  if (dtype == STK_DTYPE_FLOAT16) { /* half units in the last place, from the bit patterns */
    uint16_t x = ((const uint16_t *)a)[i], y = ((const uint16_t *)b)[i];
    int x_nan = (x & 0x7c00) == 0x7c00 && (x & 0x3ff), y_nan = (y & 0x7c00) == 0x7c00 && (y & 0x3ff);
    if (x == y || (x_nan && y_nan)) return 0;
    if (x_nan || y_nan || ((x ^ y) & 0x8000)) return 1e9;
    return fabs((double)(x & 0x7fff) - (double)(y & 0x7fff));
  }
  size_t e = stk_dtype_size(dtype);
  return memcmp((const uint8_t *)a + i * e, (const uint8_t *)b + i * e, e) == 0 ? 0 : 1e9;
}

static void compare_one(const char *name, stk_dtype da, stk_dtype db, int binary, void *stream) {
  stk__tensor ha[GPU_N], hb[GPU_N];
  uint32_t seed = 12345;
  for (int i = 0; i < GPU_N; i++) {
    int64_t n = kSizes[i], nb = i == 1 ? 1 : kSizes[i];
    memset(&ha[i], 0, sizeof ha[i]), memset(&hb[i], 0, sizeof hb[i]);
    CHECK(stk__tensor_resize(&ha[i], da, 1, &n, "") == STK_OK);
    CHECK(stk__tensor_resize(&hb[i], db, 1, i == 2 ? &(int64_t){1} : &nb, "") == STK_OK); /* sample 2: b scalar */
    fill_random(ha[i].data, da, stk__tensor_numel(&ha[i]), &seed);
    fill_random(hb[i].data, db, stk__tensor_numel(&hb[i]), &seed);
  }
  stk__op *cpu = make_op(name, args_op(name), binary ? 2 : 1);
  stk__op *gpu = NULL;
  stk_args *args = args_op(name);
  CHECK_MSG(stk__op_new_standalone("math.elementwise", "gpu", args, NULL, 1, &gpu, g_err, sizeof g_err) == STK_OK,
            "%s", g_err);
  stk_args_destroy(args);
  stk__tensor_list la, lb, lo;
  memset(&la, 0, sizeof la), memset(&lb, 0, sizeof lb), memset(&lo, 0, sizeof lo);
  if (cpu && gpu) {
    gpu->num_inputs = binary ? 2 : 1;
    upload(&la, ha, stream);
    upload(&lb, hb, stream);
    stk__batch_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.batch_size = GPU_N;
    ctx.cuda_stream = stream;
    ctx.err = g_err;
    ctx.err_size = sizeof g_err;
    stk__tensor_list *ins[2] = {&la, &lb}, *outs[1] = {&lo};
    g_err[0] = 0;
    stk_status st = gpu->impl->run_batch(gpu, &ctx, ins, outs);
    if (st == STK_OK) st = stk__gpu_stream_synchronize(stream);
    CHECK_MSG(st == STK_OK, "%s gpu: %s", name, g_err);
    double limit = transcendental(name) ? 2.0 : 0.0;
    for (int i = 0; st == STK_OK && i < GPU_N; i++) {
      stk__tensor out;
      memset(&out, 0, sizeof out);
      CHECK(run(cpu, &ha[i], binary ? &hb[i] : NULL, &out) == STK_OK);
      const stk__tensor *g = &lo.samples[i];
      CHECK_MSG(g->dtype == out.dtype && g->nbytes == out.nbytes && g->ndim == out.ndim, "%s %s,%s sample %d: shape",
                name, stk_dtype_name(da), stk_dtype_name(db), i);
      if (g->nbytes == out.nbytes && out.nbytes) {
        void *back = malloc(out.nbytes);
        CHECK(stk__gpu_memcpy_d2h(back, g->data, out.nbytes, stream) == STK_OK);
        double worst = 0;
        for (size_t k = 0; k < stk__tensor_numel(&out); k++) worst = fmax(worst, ulps(back, out.data, out.dtype, k));
        CHECK_MSG(worst <= limit, "%s %s,%s sample %d: GPU differs from CPU by %g ulp (allowed %g)", name,
                  stk_dtype_name(da), stk_dtype_name(db), i, worst, limit);
        free(back);
      }
      stk__tensor_free(&out);
    }
  }
  stk__gpu_tensor_list_free(&la), stk__gpu_tensor_list_free(&lb), stk__gpu_tensor_list_free(&lo);
  for (int i = 0; i < GPU_N; i++) stk__tensor_free(&ha[i]), stk__tensor_free(&hb[i]);
  if (cpu) stk__op_free_standalone(cpu);
  if (gpu) stk__op_free_standalone(gpu);
}

static void gpu_matches_cpu_byte_for_byte(void) {
  gpu_test_require_device(0);
  CHECK(stk__gpu_set_device(0) == STK_OK);
  void *stream = NULL;
  CHECK(stk__gpu_stream_create(&stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  static const char *const binary_ops[] = {"add", "sub", "mul", "truediv", "floordiv", "mod", "min", "max",
                                           "pow", "eq", "lt", "ge", "bitand", "bitxor", "fpow", "atan2"};
  static const stk_dtype pairs[][2] = {
      {STK_DTYPE_UINT8, STK_DTYPE_UINT8},     {STK_DTYPE_INT8, STK_DTYPE_UINT8},   {STK_DTYPE_INT32, STK_DTYPE_INT64},
      {STK_DTYPE_UINT16, STK_DTYPE_UINT64},   {STK_DTYPE_FLOAT32, STK_DTYPE_UINT8}, {STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT16},
      {STK_DTYPE_FLOAT64, STK_DTYPE_FLOAT32}, {STK_DTYPE_BOOL, STK_DTYPE_INT16},   {STK_DTYPE_UINT32, STK_DTYPE_INT32}};
  for (size_t o = 0; o < sizeof binary_ops / sizeof binary_ops[0]; o++)
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
      stk__math_params params;
      memset(&params, 0, sizeof params);
      params.op = stk__math_op_find(binary_ops[o]);
      stk__math_plan plan;
      if (stk__math_plan_make(&params, pairs[p][0], pairs[p][1], &plan, g_err, sizeof g_err) != STK_OK) continue;
      compare_one(binary_ops[o], pairs[p][0], pairs[p][1], 1, stream);
    }
  static const char *const unary_ops[] = {"neg", "abs", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan",
                                          "floor", "ceil", "fabs", "log2", "log10", "invert"};
  static const stk_dtype types[] = {STK_DTYPE_UINT8, STK_DTYPE_INT16, STK_DTYPE_INT64, STK_DTYPE_FLOAT16,
                                    STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT64};
  for (size_t o = 0; o < sizeof unary_ops / sizeof unary_ops[0]; o++)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
      stk__math_params params;
      memset(&params, 0, sizeof params);
      params.op = stk__math_op_find(unary_ops[o]);
      stk__math_plan plan;
      if (stk__math_plan_make(&params, types[t], types[t], &plan, g_err, sizeof g_err) != STK_OK) continue;
      compare_one(unary_ops[o], types[t], types[t], 0, stream);
    }
  stk__gpu_stream_destroy(stream);
}
#else
static void gpu_matches_cpu_byte_for_byte(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif

static const stk_test_case cases[] = {
    STK_TEST_CASE(promotion_follows_dali_table),
    STK_TEST_CASE(integer_arithmetic_wraps_and_truncates),
    STK_TEST_CASE(division_and_float_ops),
    STK_TEST_CASE(comparisons_and_bitwise),
    STK_TEST_CASE(constants_promote_as_int32_and_float32),
    STK_TEST_CASE(unary_functions_and_clamp),
    STK_TEST_CASE(scalar_side_broadcasts_and_mismatch_names_shapes),
    STK_TEST_CASE(type_errors_are_refused_with_a_message),
    STK_TEST_CASE(float16_store_matches_dtype_h),
    STK_TEST_CASE(merge_takes_the_branch_the_predicate_names),
    STK_TEST_CASE(gpu_matches_cpu_byte_for_byte),
};

int main(int argc, char **argv) { return stk_test_run_cases("test_math", cases, STK_TEST_COUNT(cases), argc, argv); }
