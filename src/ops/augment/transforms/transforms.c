/* src/ops/augment/transforms/transforms.c: DALI's 2-D affine transform generators
 * (fn.transforms.rotation, scale, translation, shear, crop, combine) -- schemas and CPU
 * implementations: each sample's output is a float32 [2, 3] matrix (x' = m0 x + m1 y + m2,
 * y' = m3 x + m4 y + m5, source to destination), made from its arguments (each may be bound per
 * sample) and, with an input transform T, composed as M T (T first; reverse_order: T M). combine
 * composes its inputs, the first applied first. Bind one to warp_affine's matrix with
 * inverse_map=False. CPU only (a few numbers a sample; a GPU operator reads them from the host).
 * Hot path (trivial): run_sample per sample. */
#include <math.h>
#include <string.h>

#include "ops/common/nd_op.h"
#include "ops/op_impls.h"

#define DEG (3.14159265358979323846 / 180.0)

typedef stk_status (*build_fn)(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size);

/* out = a b (2x3 affines as 3x3 with a last row 0 0 1). */
static void compose(const double *a, const double *b, double *out) {
  double r[6] = {a[0] * b[0] + a[1] * b[3], a[0] * b[1] + a[1] * b[4], a[0] * b[2] + a[1] * b[5] + a[2],
                 a[3] * b[0] + a[4] * b[3], a[3] * b[1] + a[4] * b[4], a[3] * b[2] + a[4] * b[5] + a[5]};
  memcpy(out, r, sizeof r);
}

/* m about `center` (argument, [x, y]; none: the origin): T(c) m T(-c). */
static stk_status about_center(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  double c[2];
  int n = 0;
  stk_status s = stk__nd_arg_list(op, inputs, "center", c, 2, &n, err, err_size);
  if (s != STK_OK || n == 0) return s;
  if (n != 2) {
    stk__errorf(err, err_size, "argument 'center' expects [x, y]");
    return STK_EINVAL;
  }
  const double to[6] = {1, 0, c[0], 0, 1, c[1]}, from[6] = {1, 0, -c[0], 0, 1, -c[1]};
  compose(m, from, m);
  compose(to, m, m);
  return STK_OK;
}

static stk_status pair(const stk__op *op, stk__tensor *const *inputs, const char *name, double fallback, double *v,
                       char *err, size_t err_size) {
  int n = 0;
  stk_status s = stk__nd_arg_list(op, inputs, name, v, 2, &n, err, err_size);
  if (s != STK_OK) return s;
  if (n == 0) v[0] = v[1] = fallback;
  else if (n == 1) v[1] = v[0];
  return STK_OK;
}

static stk_status build_rotation(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  double angle = 0;
  stk_status s = stk__nd_arg_scalar(op, inputs, "angle", &angle, err, err_size);
  if (s != STK_OK) return s;
  const double c = cos(angle * DEG), sn = sin(angle * DEG), r[6] = {c, -sn, 0, sn, c, 0};
  memcpy(m, r, sizeof r);
  return about_center(op, inputs, m, err, err_size);
}

static stk_status build_scale(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  double v[2];
  stk_status s = pair(op, inputs, "scale", 1.0, v, err, err_size);
  if (s != STK_OK) return s;
  const double r[6] = {v[0], 0, 0, 0, v[1], 0};
  memcpy(m, r, sizeof r);
  return about_center(op, inputs, m, err, err_size);
}

static stk_status build_translation(const stk__op *op, stk__tensor *const *inputs, double *m, char *err,
                                    size_t err_size) {
  double v[2];
  stk_status s = pair(op, inputs, "offset", 0.0, v, err, err_size);
  const double r[6] = {1, 0, v[0], 0, 1, v[1]};
  memcpy(m, r, sizeof r);
  return s;
}

static stk_status build_shear(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  double v[2];
  stk_status s = STK_OK;
  if (stk__arg_is_set(op, "angles")) {
    s = pair(op, inputs, "angles", 0.0, v, err, err_size);
    v[0] = tan(v[0] * DEG);
    v[1] = tan(v[1] * DEG);
  } else {
    s = pair(op, inputs, "shear", 0.0, v, err, err_size);
  }
  if (s != STK_OK) return s;
  const double r[6] = {1, v[0], 0, v[1], 1, 0};
  memcpy(m, r, sizeof r);
  return about_center(op, inputs, m, err, err_size);
}

static stk_status build_crop(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  double fs[2], fe[2], ts[2], te[2];
  stk_status s = pair(op, inputs, "from_start", 0.0, fs, err, err_size);
  if (s == STK_OK) s = pair(op, inputs, "from_end", 1.0, fe, err, err_size);
  if (s == STK_OK) s = pair(op, inputs, "to_start", 0.0, ts, err, err_size);
  if (s == STK_OK) s = pair(op, inputs, "to_end", 1.0, te, err, err_size);
  if (s != STK_OK) return s;
  if (fe[0] == fs[0] || fe[1] == fs[1]) {
    stk__errorf(err, err_size, "the source box (from_start, from_end) is empty");
    return STK_EINVAL;
  }
  const double sx = (te[0] - ts[0]) / (fe[0] - fs[0]), sy = (te[1] - ts[1]) / (fe[1] - fs[1]);
  const double r[6] = {sx, 0, ts[0] - sx * fs[0], 0, sy, ts[1] - sy * fs[1]};
  memcpy(m, r, sizeof r);
  return STK_OK;
}

static stk_status build_identity(const stk__op *op, stk__tensor *const *inputs, double *m, char *err, size_t err_size) {
  (void)op, (void)inputs, (void)err, (void)err_size;
  const double r[6] = {1, 0, 0, 0, 1, 0};
  memcpy(m, r, sizeof r);
  return STK_OK;
}

static stk_status read_matrix(const stk__tensor *t, double *m, char *err, size_t err_size) {
  int n = 0;
  stk_status s = stk__nd_tensor_numbers(t, m, 6, &n, err, err_size, "the input transform");
  if (s == STK_OK && n != 6) {
    stk__errorf(err, err_size, "an input transform needs 6 values (2x3), got %d", n);
    s = STK_EINVAL;
  }
  return s;
}

/* The operator's matrix composed with its inputs (in order, each applied after the ones before). */
static stk_status transform_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                stk__tensor *const *outputs) {
  const build_fn build = *(const build_fn *)op->state;
  double m[6], t[6], acc[6] = {1, 0, 0, 0, 1, 0};
  const int reverse = stk__arg_bool(op, "reverse_order");
  stk_status s = STK_OK;
  for (int k = 0; s == STK_OK && k < op->num_inputs; k++) {
    s = read_matrix(inputs[k], t, ctx->err, ctx->err_size);
    if (s == STK_OK) reverse ? compose(acc, t, acc) : compose(t, acc, acc);
  }
  if (s == STK_OK) s = build(op, inputs, m, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  reverse ? compose(acc, m, m) : compose(m, acc, m);
  const int64_t shape[2] = {2, 3};
  s = stk__tensor_resize(outputs[0], STK_DTYPE_FLOAT32, 2, shape, "");
  if (s != STK_OK) return s;
  for (int k = 0; k < 6; k++) ((float *)outputs[0]->data)[k] = (float)m[k];
  return STK_OK;
}

#define TRANSFORM_IMPL(name, fn)                                              \
  static const build_fn name##_build = fn;                                    \
  static stk_status name##_init(stk__op *op, char *err, size_t err_size) {    \
    (void)err, (void)err_size;                                                \
    op->state = (void *)&name##_build; /* read-only: destroy frees nothing */ \
    return STK_OK;                                                            \
  }                                                                           \
  const stk__op_impl stk__cpu_impl_transforms_##name = {.init = name##_init, .run_sample = transform_run}

TRANSFORM_IMPL(rotation, build_rotation);
TRANSFORM_IMPL(scale, build_scale);
TRANSFORM_IMPL(translation, build_translation);
TRANSFORM_IMPL(shear, build_shear);
TRANSFORM_IMPL(crop, build_crop);
TRANSFORM_IMPL(combine, build_identity);
