/* src/ops/augment/warp_affine/warp.c: the CPU side of the warp operators (warp.h): the reference
 * sampler, the shared interp_type / fill_value parse, the per-sample frame and run_sample. Each
 * arithmetic step is one float operation in the order the kernel (warp_kernels.cu) repeats without
 * contraction. Hot path: per sample. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/warp_affine/warp.h"
#include "ops/common/dtype.h"
#include "ops/common/image.h"

static inline float fetch(const stk__warp_desc *d, int x, int y, int c) {
  if (x < 0 || y < 0 || x >= d->src_w || y >= d->src_h) {
    if (d->has_fill) return d->fill;
    x = x < 0 ? 0 : (x >= d->src_w ? d->src_w - 1 : x);
    y = y < 0 ? 0 : (y >= d->src_h ? d->src_h - 1 : y);
  }
  const size_t at = ((size_t)y * d->src_w + x) * d->channels + c;
  return d->dtype == STK_DTYPE_UINT8 ? (float)((const uint8_t *)d->src)[at] : ((const float *)d->src)[at];
}

/* A source coordinate kept where the int conversion is defined (NaN and far points: outside). */
static inline float bounded(float v) { return !(v > -1e7f) ? -1e7f : (v > 1e7f ? 1e7f : v); }

void stk__warp_run(const stk__warp_desc *d) {
  for (int y = 0; y < d->dst_h; y++) {
    for (int x = 0; x < d->dst_w; x++) {
      volatile float cx = (float)x + 0.5f, cy = (float)y + 0.5f; /* no contraction: the kernel's steps */
      volatile float ax = d->m[0] * cx, bx = d->m[1] * cy, ay = d->m[3] * cx, by = d->m[4] * cy;
      const float sx = bounded((ax + bx) + d->m[2]), sy = bounded((ay + by) + d->m[5]);
      const size_t out = ((size_t)y * d->dst_w + x) * d->channels;
      for (int c = 0; c < d->channels; c++) {
        float v;
        if (d->nearest) {
          v = fetch(d, (int)floorf(sx), (int)floorf(sy), c);
        } else {
          const float fx = sx - 0.5f, fy = sy - 0.5f, x0 = floorf(fx), y0 = floorf(fy);
          const float wx = fx - x0, wy = fy - y0;
          const int ix = (int)x0, iy = (int)y0;
          volatile float t0 = fetch(d, ix, iy, c) * (1.0f - wx), t1 = fetch(d, ix + 1, iy, c) * wx;
          volatile float b0 = fetch(d, ix, iy + 1, c) * (1.0f - wx), b1 = fetch(d, ix + 1, iy + 1, c) * wx;
          volatile float top = (t0 + t1) * (1.0f - wy), bottom = (b0 + b1) * wy;
          v = top + bottom;
        }
        if (d->out_dtype == STK_DTYPE_UINT8) ((uint8_t *)d->dst)[out + c] = stk__u8_from_float(v);
        else ((float *)d->dst)[out + c] = v;
      }
    }
  }
}

stk_status stk__warp_common_parse(const stk__op *op, stk__warp_common *c, char *err, size_t err_size) {
  const char *interp = stk__arg_string(op, "interp_type");
  if (strcmp(interp, "INTERP_LINEAR") == 0 || strcmp(interp, "linear") == 0) c->nearest = 0;
  else if (strcmp(interp, "INTERP_NN") == 0 || strcmp(interp, "nearest") == 0 || strcmp(interp, "nn") == 0)
    c->nearest = 1;
  else {
    stk__errorf(err, err_size,
                "argument 'interp_type' expects INTERP_LINEAR or INTERP_NN (linear, nearest), got "
                "\"%s\"",
                interp);
    return STK_EINVAL;
  }
  c->out_dtype = -1;
  const char *dtype = stk__arg_string(op, "dtype");
  stk_dtype parsed;
  if (dtype[0] &&
      (stk__dtype_parse(dtype, &parsed) != STK_OK || (parsed != STK_DTYPE_UINT8 && parsed != STK_DTYPE_FLOAT32))) {
    stk__errorf(err, err_size, "argument 'dtype' expects \"uint8\" or \"float\", got \"%s\"", dtype);
    return STK_EINVAL;
  }
  if (dtype[0]) c->out_dtype = parsed;
  c->has_fill = stk__arg_is_set(op, "fill_value");
  c->fill = (float)stk__arg_float(op, "fill_value");
  return STK_OK;
}

stk_status stk__warp_invert(const double *m, double *out) {
  const double det = m[0] * m[4] - m[1] * m[3];
  if (det == 0 || !isfinite(det)) return STK_EINVAL;
  out[0] = m[4] / det;
  out[1] = -m[1] / det;
  out[3] = -m[3] / det;
  out[4] = m[0] / det;
  out[2] = -(out[0] * m[2] + out[1] * m[5]);
  out[5] = -(out[3] * m[2] + out[4] * m[5]);
  return STK_OK;
}

stk_status stk__warp_state_init(stk__warp_state *st, const stk__op *op, const stk__warp_kind *kind, char *err,
                                size_t err_size) {
  st->kind = kind;
  st->params = calloc(1, kind->params_size);
  if (!st->params) return STK_ENOMEM;
  stk_status s = kind->parse(op, st->params, err, err_size);
  if (s != STK_OK) {
    free(st->params);
    st->params = NULL;
  }
  return s;
}

stk_status stk__warp_plan_sample(const stk__op *op, const stk__warp_state *st, stk__tensor *const *inputs,
                                 int num_inputs, stk__warp_desc *d, char *err, size_t err_size) {
  const stk__tensor *in = inputs[0];
  const int sequence = in->ndim == 4 && strcmp(in->layout, "FHWC") == 0, at = sequence;
  if ((in->ndim != 3 && !sequence) || in->shape[at + 2] < 1 || in->shape[at + 2] > 16 ||
      (in->dtype != STK_DTYPE_UINT8 && in->dtype != STK_DTYPE_FLOAT32) ||
      (in->ndim == 3 && in->layout[0] && strcmp(in->layout, "HWC"))) {
    stk__errorf(err, err_size, "expects HWC images or FHWC sequences, uint8 or float, of 1 to 16 channels");
    return STK_EINVAL;
  }
  const stk__warp_common *c = st->params;
  memset(d, 0, sizeof *d);
  d->src = in->data;
  d->frames = sequence ? (int)in->shape[0] : 1;
  d->src_h = (int)in->shape[at];
  d->src_w = (int)in->shape[at + 1];
  d->channels = (int)in->shape[at + 2];
  d->dtype = in->dtype;
  d->out_dtype = c->out_dtype >= 0 ? c->out_dtype : (int)in->dtype;
  d->nearest = c->nearest;
  d->has_fill = c->has_fill;
  d->fill = c->fill;
  stk_status s = st->kind->plan(op, st->params, inputs, num_inputs, d, err, err_size);
  if (s == STK_OK && (d->dst_w < 0 || d->dst_h < 0 || d->dst_w > 65535 || d->dst_h > 65535)) {
    stk__errorf(err, err_size, "the output size %dx%d is out of range", d->dst_w, d->dst_h);
    s = STK_EINVAL;
  }
  return s;
}

stk_status stk__warp_cpu_init(stk__op *op, const stk__warp_kind *kind, char *err, size_t err_size) {
  stk__warp_state *st = calloc(1, sizeof *st);
  if (!st) return STK_ENOMEM;
  stk_status s = stk__warp_state_init(st, op, kind, err, err_size);
  if (s != STK_OK) {
    free(st);
    return s;
  }
  op->state = st;
  return STK_OK;
}

void stk__warp_cpu_destroy(stk__op *op) {
  stk__warp_state *st = op->state;
  if (!st) return;
  free(st->params);
  free(st);
  op->state = NULL;
}

stk_status stk__warp_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                stk__tensor *const *outputs) {
  stk__warp_desc d;
  stk_status s = stk__warp_plan_sample(op, op->state, inputs, op->num_inputs, &d, ctx->err, ctx->err_size);
  if (s != STK_OK) return s;
  const int sequence = inputs[0]->ndim == 4;
  const int64_t shape[4] = {d.frames, d.dst_h, d.dst_w, d.channels};
  s = stk__tensor_resize(outputs[0], (stk_dtype)d.out_dtype, 3 + sequence, shape + !sequence,
                         sequence ? "FHWC" : "HWC");
  if (s != STK_OK) return s;
  const size_t in_frame = stk__warp_in_frame(&d), out_frame = stk__warp_out_frame(&d);
  const void *src = d.src;
  for (int f = 0; f < d.frames; f++) { /* every frame alike (DALI: per-sample arguments) */
    d.src = (const uint8_t *)src + (size_t)f * in_frame;
    d.dst = (uint8_t *)outputs[0]->data + (size_t)f * out_frame;
    stk__warp_run(&d);
  }
  return STK_OK;
}
