/* src/ops/cpu/random_resized_crop.c: the `random_resized_crop` operator (DALI's
 * fn.random_resized_crop / torchvision's RandomResizedCrop) -- schema and CPU implementation: a
 * window of random area and aspect ratio (stk__random_crop_window, keyed by seed, operator,
 * epoch and sample), resized to `size` with stk__resize_u8. Hot path: run_sample per sample. */
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/image_ops.h"

typedef struct rrc_state {
  int out_w, out_h;
  double area_min, area_max, ratio_min, ratio_max;
  int attempts;
  stk__interp interp;
  int antialias;
} rrc_state;

static stk_status range_arg(stk__op *op, const char *name, double *lo, double *hi, char *err, size_t err_size) {
  size_t count;
  const double *v = stk__arg_float_list(op, name, &count);
  if (count != 2 && count != 1) {
    stk__errorf(err, err_size, "%s: argument '%s' expects [min, max], got %zu values", op->name, name, count);
    return STK_EINVAL;
  }
  *lo = v[0];
  *hi = count == 2 ? v[1] : v[0];
  if (!(*lo > 0) || *hi < *lo) {
    stk__errorf(err, err_size, "%s: argument '%s' expects 0 < min <= max, got [%g, %g]", op->name, name, *lo, *hi);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status rrc_init(stk__op *op, char *err, size_t err_size) {
  rrc_state st;
  memset(&st, 0, sizeof st);
  size_t count;
  const double *size = stk__arg_float_list(op, "size", &count);
  if (count != 1 && count != 2) {
    stk__errorf(err, err_size, "%s: argument 'size' expects one value or [height, width], got %zu values", op->name,
                count);
    return STK_EINVAL;
  }
  double h = size[0], w = count == 2 ? size[1] : size[0];
  if (!(h >= 1 && w >= 1 && h <= 65535 && w <= 65535)) {
    stk__errorf(err, err_size, "%s: argument 'size' must be between 1 and 65535, got [%g, %g]", op->name, h, w);
    return STK_EINVAL;
  }
  st.out_h = (int)(h + 0.5);
  st.out_w = (int)(w + 0.5);
  stk_status s = range_arg(op, "random_area", &st.area_min, &st.area_max, err, err_size);
  if (s != STK_OK) return s;
  if (st.area_max > 1.0) {
    stk__errorf(err, err_size, "%s: argument 'random_area' must lie in (0, 1], got max %g", op->name, st.area_max);
    return STK_EINVAL;
  }
  s = range_arg(op, "random_aspect_ratio", &st.ratio_min, &st.ratio_max, err, err_size);
  if (s != STK_OK) return s;
  int64_t attempts = stk__arg_int(op, "num_attempts");
  if (attempts < 0 || attempts > 1000000) {
    stk__errorf(err, err_size, "%s: argument 'num_attempts' must be in [0, 1000000], got %lld", op->name,
                (long long)attempts);
    return STK_EINVAL;
  }
  st.attempts = (int)attempts;
  if (stk__interp_parse(stk__arg_string(op, "interp_type"), &st.interp) != STK_OK) {
    stk__errorf(err, err_size,
                "%s: argument 'interp_type' expects INTERP_LINEAR, INTERP_NN, INTERP_CUBIC (or linear, nearest, "
                "cubic), got \"%s\"",
                op->name, stk__arg_string(op, "interp_type"));
    return STK_EINVAL;
  }
  st.antialias = stk__arg_bool(op, "antialias");
  return stk__op_keep_state(op, &st, sizeof st);
}

static stk_status rrc_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs, stk__tensor *const *outputs) {
  const rrc_state *st = op->state;
  const stk__tensor *in = inputs[0];
  stk_status checked = stk__check_hwc_u8_image(in, ctx->err, ctx->err_size);
  if (checked != STK_OK) return checked;
  const int h = (int)in->shape[0], w = (int)in->shape[1], c = (int)in->shape[2];
  stk__rng rng;
  stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, ctx->sample_id);
  stk__window win =
      stk__random_crop_window(&rng, w, h, st->area_min, st->area_max, st->ratio_min, st->ratio_max, st->attempts);
  const int64_t shape[3] = {st->out_h, st->out_w, c};
  stk_status s = stk__tensor_resize(outputs[0], STK_DTYPE_UINT8, 3, shape, "HWC");
  if (s != STK_OK) return s;
  size_t bytes = stk__resize_scratch_bytes(w, h, c, win, st->out_w, st->out_h, st->interp, st->antialias);
  void *scratch = stk__scratch_get(ctx, 0, bytes);
  if (!scratch) return STK_ENOMEM;
  s = stk__resize_u8(in->data, w, h, (size_t)w * (size_t)c, c, win, outputs[0]->data, st->out_w, st->out_h,
                     st->interp, st->antialias, scratch);
  if (s != STK_OK)
    stk__errorf(ctx->err, ctx->err_size, "resizing the %dx%d window of a %dx%d image failed", win.w, win.h, w, h);
  return s;
}

static const stk__op_impl rrc_cpu = {.init = rrc_init, .destroy = stk__op_free_state, .run_sample = rrc_run};

static const stk__arg_schema rrc_args[] = {
    {"size", STK_ARG_FLOAT_LIST, NULL, 1, 0, "output size [height, width] (one value = square)"},
    {"random_area", STK_ARG_FLOAT_LIST, "[0.08, 1.0]", 0, 0,
     "range of the window's area as a fraction of the image's, drawn uniformly"},
    {"random_aspect_ratio", STK_ARG_FLOAT_LIST, "[0.75, 1.3333333333333333]", 0, 0,
     "range of the window's width/height, drawn log-uniformly"},
    {"num_attempts", STK_ARG_INT, "10", 0, 0,
     "tries before falling back to the central crop with the aspect ratio clamped into range"},
    {"interp_type", STK_ARG_STRING, "INTERP_LINEAR", 0, 0,
     "INTERP_LINEAR | INTERP_NN | INTERP_CUBIC (also linear | nearest | cubic)"},
    {"antialias", STK_ARG_BOOL, "True", 0, 0, "widen linear/cubic filters by the scale when downscaling"},
};

const stk__op_schema stk__op_random_resized_crop = {
    .name = "random_resized_crop",
    .doc = "Crops a random window (area fraction uniform in random_area, aspect ratio log-uniform in "
           "random_aspect_ratio, up to num_attempts tries, then a central fallback) and resizes it to size. "
           "The window is keyed by (seed, operator, epoch, sample).",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
    .args = rrc_args,
    .num_args = (int)(sizeof rrc_args / sizeof rrc_args[0]),
    .is_reader = 0,
    .cpu = &rrc_cpu,
};
