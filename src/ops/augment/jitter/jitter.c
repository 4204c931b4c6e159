/* src/ops/augment/jitter/jitter.c: the `jitter` operator (DALI's fn.jitter) -- schema, parameter
 * parse, per-sample setup (jitter_params.h) and CPU implementation: every output pixel copies the
 * input pixel its draw names, or takes fill_value beyond the border. HWC of any dtype but float16
 * (DALI: uint8). mask may be bound per sample. Hot path: run_sample, one pass over the pixels. */
#include <string.h>

#include "ops/augment/jitter/jitter_params.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"

stk_status stk__jitter_parse(const stk__op *op, stk__jitter_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  const int64_t degree = stk__arg_int(op, "nDegree");
  if (degree < 0 || degree > 1 << 20) {
    stk__errorf(err, err_size, "argument 'nDegree' is %lld; it must lie in [0, 2^20]", (long long)degree);
    return STK_EINVAL;
  }
  const char *interp = stk__arg_string(op, "interp_type");
  if (strcmp(interp, "INTERP_NN") != 0 && strcmp(interp, "nearest") != 0 && strcmp(interp, "nn") != 0) {
    stk__errorf(err, err_size, "argument 'interp_type' expects INTERP_NN (moves are whole pixels), got \"%s\"", interp);
    return STK_EINVAL;
  }
  p->half = (int)(degree / 2);
  p->fill = stk__arg_float(op, "fill_value");
  const int64_t seed = stk__arg_int(op, "seed");
  p->seed = seed >= 0 ? (uint64_t)seed : op->seed;
  return STK_OK;
}

stk_status stk__jitter_sample_make(const stk__op *op, const stk__jitter_params *p, const stk__tensor *in, double mask,
                                   uint64_t epoch, int64_t sample_id, stk__jitter_sample *s, char *err,
                                   size_t err_size) {
  memset(s, 0, sizeof *s);
  const size_t elem = stk_dtype_size(in->dtype);
  if (in->ndim != 3 || (in->layout[0] && strcmp(in->layout, "HWC") != 0) || in->dtype == STK_DTYPE_FLOAT16 ||
      (size_t)in->shape[2] * elem > STK__JITTER_MAX_PIXEL_BYTES) {
    stk__errorf(err, err_size,
                "the input must be HWC (3-d, layout \"%s\" here) of any dtype but float16 with at most %d bytes a pixel",
                in->layout, STK__JITTER_MAX_PIXEL_BYTES);
    return STK_EINVAL;
  }
  s->height = in->shape[0];
  s->width = in->shape[1];
  s->pixel_bytes = (int)(in->shape[2] * (int64_t)elem);
  for (int64_t c = 0; c < in->shape[2]; c++) stk__dtype_store(s->fill, in->dtype, (size_t)c, p->fill);
  s->half = mask != 0 ? p->half : 0;
  s->key[0] = (uint32_t)p->seed;
  s->key[1] = (uint32_t)(p->seed >> 32);
  s->ctr[0] = (uint32_t)(uint64_t)sample_id;
  s->ctr[1] = (uint32_t)epoch;
  s->ctr[2] = ((uint32_t)op->id << 16) | 0x4000u;
  return STK_OK;
}

static stk_status jitter_init(stk__op *op, char *err, size_t err_size) {
  stk__jitter_params p;
  stk_status st = stk__jitter_parse(op, &p, err, err_size);
  return st == STK_OK ? stk__op_keep_state(op, &p, sizeof p) : st;
}

static stk_status jitter_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const stk__jitter_params *p = op->state;
  const stk__tensor *in = inputs[0];
  stk__jitter_sample s;
  stk_status st = stk__jitter_sample_make(op, p, in, stk__arg_sample_float(op, inputs, "mask"), ctx->epoch,
                                          ctx->sample_id, &s, ctx->err, ctx->err_size);
  if (st == STK_OK) st = stk__sample_output_resize(ctx, outputs, 0, in->dtype, in->ndim, in->shape, in->layout);
  if (st != STK_OK) return st;
  const uint8_t *src = in->data;
  uint8_t *dst = outputs[0]->data;
  for (int64_t y = 0; y < s.height; y++)
    for (int64_t x = 0; x < s.width; x++) {
      int64_t sy, sx;
      const uint8_t *from = stk__jitter_source(&s, y, x, &sy, &sx) ? src + (sy * s.width + sx) * s.pixel_bytes : s.fill;
      memcpy(dst + (y * s.width + x) * s.pixel_bytes, from, (size_t)s.pixel_bytes);
    }
  return STK_OK;
}

const stk__op_impl stk__cpu_impl_jitter = {.init = jitter_init, .destroy = stk__op_free_state, .run_sample = jitter_run};

static const stk__arg_schema jitter_args[] = {
    {"nDegree", STK_ARG_INT, "2", 0, 0, "each pixel moves by a whole number in [-nDegree/2, nDegree/2] along y and x"},
    {"fill_value", STK_ARG_FLOAT, "0.0", 0, 0, "value of pixels whose source lies outside the image"},
    {"interp_type", STK_ARG_STRING, "INTERP_NN", 0, 0, "INTERP_NN (the only one: moves are whole pixels)"},
    {"mask", STK_ARG_INT, "1", 0, 1, "0: copy the sample unchanged, 1: jitter it; may be bound per sample"},
    {"seed", STK_ARG_INT, "-1", 0, 0, "random seed; -1 = the pipeline's"},
};

const stk__op_schema stk__op_jitter = {
    .name = "jitter",
    .doc = "Moves each pixel of an HWC image by a random whole-pixel offset within nDegree/2 (fill_value beyond "
           "the border); keyed by seed, operator, epoch and sample.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = jitter_args,
    .num_args = (int)(sizeof jitter_args / sizeof jitter_args[0]),
    .array_outputs = 1u << 0,
};
