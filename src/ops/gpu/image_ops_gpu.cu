/* src/ops/gpu/image_ops_gpu.cu: the GPU implementations (run_batch) of resize,
 * random_resized_crop, crop_mirror_normalize and the fused (random_resized_crop|resize) +
 * crop_mirror_normalize node. Per batch, on the GPU stage thread: geometry and random windows are
 * decided on the host (the CPU operators' generator, keyed by seed/op id/epoch/sample id, so GPU
 * and CPU pick the same windows and flips), resampling weights are computed on the host by the
 * CPU reference (stk__resample_weights), everything is packed into one pinned upload arena, copied
 * with one cudaMemcpyAsync, and ONE kernel processes the batch. Hot path; allocations only when
 * a batch needs more room than any before (grow-only, counted).
 *
 * Inputs: a GPU tensor list of HWC u8 images (shape [H, W, C], packed rows). Outputs: a GPU
 * tensor list; resize/random_resized_crop write HWC u8, crop_mirror_normalize and the fused node
 * write CHW/HWC float/float16/uint8 as the crop_mirror_normalize arguments say. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gpu/kernels.h"
extern "C" {
#include "core/gpu_backend.h"
#include "ops/cpu/image_ops.h"
}
#include "ops/gpu/gpu_ops.h"

/* TEMPORARY until the CPU image algorithms (src/ops/cpu/image_ops.c) land on main: weak
 * references keep this branch linking; state_init refuses to run without them. */
#pragma weak stk__resample_max_taps
#pragma weak stk__resample_weights
#pragma weak stk__random_crop_window
#pragma weak stk__interp_parse

/* ---- Per-sample geometry ------------------------------------------------------------------- */
typedef struct sample_geom {
  const uint8_t *src;
  int src_w, src_h, channels;
  stk__window roi;  /* source window that is resized */
  int out_w, out_h; /* resized size */
  int taps_x, taps_y;
  /* crop_mirror_normalize part (fused / cmn) */
  int crop_x, crop_y, crop_w, crop_h, mirror;
} sample_geom;

typedef struct gpu_op_state {
  stk__gpu_arena arena;
  int numa_node;
  sample_geom *geom;
  int geom_capacity;
} gpu_op_state;

static stk_status state_init(stk__op *op, char *err, size_t err_size) {
  if (!&stk__resample_weights || !&stk__resample_max_taps || !&stk__random_crop_window || !&stk__interp_parse) {
    stk__errorf(err, err_size, "GPU image operators need the CPU image algorithms, not linked in this build");
    return STK_ENOTSUP;
  }
  gpu_op_state *s = (gpu_op_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  int device = op->options && op->options->device_id >= 0 ? op->options->device_id : 0;
  if (stk__gpu_set_device(device) != STK_OK) {
    stk__errorf(err, err_size, "%s: CUDA device %d cannot be used", op->name ? op->name : op->schema->name, device);
    free(s);
    return STK_ENODEV;
  }
  s->numa_node = stk__gpu_device_numa_node(device);
  if (s->numa_node < 0) s->numa_node = 0; /* unknown: node 0, as the topology code resolves it */
  op->state = s;
  return STK_OK;
}

static void state_destroy(stk__op *op) {
  gpu_op_state *s = (gpu_op_state *)op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  free(s->geom);
  free(s);
  op->state = NULL;
}

static sample_geom *geom_get(gpu_op_state *s, int count, uint64_t *alloc_count) {
  if (count > s->geom_capacity) {
    sample_geom *g = (sample_geom *)realloc(s->geom, (size_t)count * sizeof *g);
    if (!g) return NULL;
    s->geom = g;
    s->geom_capacity = count;
    if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  }
  memset(s->geom, 0, (size_t)count * sizeof *s->geom);
  return s->geom;
}

static const char *op_label(const stk__op *op) { return op->name ? op->name : op->schema->name; }

static const char *sample_source(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size && ctx->plan->samples[i].source)
    return ctx->plan->samples[i].source;
  return "(unknown file)";
}

static int64_t sample_id_of(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size) return ctx->plan->samples[i].sample_id;
  return i;
}

/* Reads the source images of a GPU tensor list into geom (src, size, channels). */
static stk_status read_sources(const stk__op *op, const stk__batch_ctx *ctx, const stk__tensor_list *in,
                               sample_geom *geom) {
  if (in->device != STK_DEVICE_GPU) {
    stk__errorf(ctx->err, ctx->err_size, "%s: input must be on the GPU (use a mixed decoder or .gpu())", op_label(op));
    return STK_EINVAL;
  }
  for (int i = 0; i < in->count; i++) {
    const stk__tensor *t = &in->samples[i];
    if (t->dtype != STK_DTYPE_UINT8 || t->ndim != 3 || t->shape[2] < 1 || t->shape[2] > 4 || t->shape[0] <= 0 ||
        t->shape[1] <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: sample %d (%s) must be a non-empty HWC uint8 image with 1..4 channels",
                  op_label(op), i, sample_source(ctx, i));
      return STK_EINVAL;
    }
    geom[i].src = (const uint8_t *)t->data;
    geom[i].src_h = (int)t->shape[0];
    geom[i].src_w = (int)t->shape[1];
    geom[i].channels = (int)t->shape[2];
  }
  return STK_OK;
}

/* ---- Resampling parameters of resize / random_resized_crop ---------------------------------- */
typedef struct resample_args {
  stk__interp interp;
  int antialias;
} resample_args;

static stk_status read_resample_args(const stk__op *op, resample_args *out, char *err, size_t err_size) {
  const char *interp = stk__arg_string(op, "interp_type");
  out->interp = STK__INTERP_LINEAR;
  if (interp[0] && stk__interp_parse(interp, &out->interp) != STK_OK) {
    stk__errorf(err, err_size, "%s: interp_type \"%s\" is not nearest, linear or cubic", op_label(op), interp);
    return STK_EINVAL;
  }
  const stk__arg_value *aa = stk__arg(op, "antialias");
  out->antialias = aa && aa->has_value ? stk__arg_bool(op, "antialias") : 1;
  return STK_OK;
}

static int round_positive(double v) {
  int r = (int)floor(v + 0.5);
  return r < 1 ? 1 : r;
}

/* Output size of `resize` for a w x h image (DALI semantics: resize_x/resize_y, resize_shorter,
 * resize_longer, mode default/stretch/not_larger/not_smaller; a missing side keeps the aspect). */
static void resize_output_size(const stk__op *op, int w, int h, int *out_w, int *out_h) {
  double rx = stk__arg_float(op, "resize_x"), ry = stk__arg_float(op, "resize_y");
  double shorter = stk__arg_float(op, "resize_shorter"), longer = stk__arg_float(op, "resize_longer");
  const char *mode = stk__arg_string(op, "mode");
  if (shorter > 0) {
    double scale = shorter / (w < h ? w : h);
    *out_w = w < h ? (int)shorter : round_positive(w * scale);
    *out_h = w < h ? round_positive(h * scale) : (int)shorter;
  } else if (longer > 0) {
    double scale = longer / (w > h ? w : h);
    *out_w = w >= h ? (int)longer : round_positive(w * scale);
    *out_h = w >= h ? round_positive(h * scale) : (int)longer;
  } else if (rx > 0 && ry > 0) {
    if (strcmp(mode, "not_larger") == 0 || strcmp(mode, "not_smaller") == 0) {
      double sx = rx / w, sy = ry / h;
      double scale = strcmp(mode, "not_larger") == 0 ? (sx < sy ? sx : sy) : (sx > sy ? sx : sy);
      *out_w = round_positive(w * scale);
      *out_h = round_positive(h * scale);
    } else {
      *out_w = (int)rx;
      *out_h = (int)ry;
    }
  } else if (rx > 0) {
    *out_w = (int)rx;
    *out_h = round_positive(h * rx / w);
  } else if (ry > 0) {
    *out_h = (int)ry;
    *out_w = round_positive(w * ry / h);
  } else {
    *out_w = w;
    *out_h = h;
  }
}

static void float_pair(const stk__op *op, const char *name, double def0, double def1, double *a, double *b) {
  size_t n = 0;
  const double *v = stk__arg_float_list(op, name, &n);
  *a = n >= 1 ? v[0] : def0;
  *b = n >= 2 ? v[1] : (n == 1 ? v[0] : def1);
}

/* Geometry of the first op of a resize chain: resize (whole image) or random_resized_crop (a
 * random window drawn exactly as the CPU operator draws it). */
static stk_status plan_resize_geometry(const stk__op *op, const stk__batch_ctx *ctx, sample_geom *geom, int count) {
  int is_rrc = strcmp(op->schema->name, "random_resized_crop") == 0;
  double area_min = 0.08, area_max = 1.0, ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  int attempts = 10, size_w = 0, size_h = 0;
  if (is_rrc) {
    float_pair(op, "random_area", 0.08, 1.0, &area_min, &area_max);
    float_pair(op, "random_aspect_ratio", 3.0 / 4.0, 4.0 / 3.0, &ratio_min, &ratio_max);
    if (stk__arg(op, "num_attempts") && stk__arg(op, "num_attempts")->has_value)
      attempts = (int)stk__arg_int(op, "num_attempts");
    double sh = 0, sw = 0;
    float_pair(op, "size", 0, 0, &sh, &sw); /* [height, width], as DALI's shape order */
    size_h = (int)sh;
    size_w = (int)sw;
    if (size_w <= 0 || size_h <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: size must be given as [height, width] > 0", op_label(op));
      return STK_EINVAL;
    }
  }
  for (int i = 0; i < count; i++) {
    sample_geom *g = &geom[i];
    if (is_rrc) {
      stk__rng rng;
      stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, sample_id_of(ctx, i));
      g->roi = stk__random_crop_window(&rng, g->src_w, g->src_h, area_min, area_max, ratio_min, ratio_max, attempts);
      g->out_w = size_w;
      g->out_h = size_h;
    } else {
      g->roi.x = 0;
      g->roi.y = 0;
      g->roi.w = g->src_w;
      g->roi.h = g->src_h;
      resize_output_size(op, g->src_w, g->src_h, &g->out_w, &g->out_h);
    }
    if (g->roi.w <= 0 || g->roi.h <= 0 || g->out_w <= 0 || g->out_h <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: sample %d (%s): empty window or output size", op_label(op), i,
                  sample_source(ctx, i));
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

/* Bytes the axis tables of one sample need in the arena (with alignment slack). */
static size_t axis_bytes(int out_size, int taps) { return (size_t)out_size * (4 + 4 * (size_t)taps) + 64; }

static void compute_taps(sample_geom *g, const resample_args *ra) {
  g->taps_x = stk__resample_max_taps(g->src_w, g->out_w, g->roi.x, g->roi.x + g->roi.w, ra->interp, ra->antialias);
  g->taps_y = stk__resample_max_taps(g->src_h, g->out_h, g->roi.y, g->roi.y + g->roi.h, ra->interp, ra->antialias);
}

/* Fills the x/y weight tables of one sample into the arena and points the axes at their device
 * copies. */
static void push_axes(stk__gpu_arena *arena, const sample_geom *g, const resample_args *ra, stk__gpu_axis *ax,
                      stk__gpu_axis *ay) {
  size_t fx = stk__gpu_arena_push(arena, (size_t)g->out_w * 4);
  size_t wx = stk__gpu_arena_push(arena, (size_t)g->out_w * g->taps_x * 4);
  ax->taps = stk__resample_weights(g->src_w, g->out_w, g->roi.x, g->roi.x + g->roi.w, ra->interp, ra->antialias,
                                   (int32_t *)(arena->host + fx), (float *)(arena->host + wx));
  ax->first = (const int32_t *)(arena->device + fx);
  ax->weights = (const float *)(arena->device + wx);
  size_t fy = stk__gpu_arena_push(arena, (size_t)g->out_h * 4);
  size_t wy = stk__gpu_arena_push(arena, (size_t)g->out_h * g->taps_y * 4);
  ay->taps = stk__resample_weights(g->src_h, g->out_h, g->roi.y, g->roi.y + g->roi.h, ra->interp, ra->antialias,
                                   (int32_t *)(arena->host + fy), (float *)(arena->host + wy));
  ay->first = (const int32_t *)(arena->device + fy);
  ay->weights = (const float *)(arena->device + wy);
}

static void set_sample_meta(stk__tensor *t, stk_dtype dtype, int64_t d0, int64_t d1, int64_t d2, const char *layout) {
  t->dtype = dtype;
  t->ndim = 3;
  t->shape[0] = d0;
  t->shape[1] = d1;
  t->shape[2] = d2;
  strncpy(t->layout, layout, sizeof t->layout - 1);
  t->layout[sizeof t->layout - 1] = '\0';
  t->nbytes = (size_t)(d0 * d1 * d2) * stk_dtype_size(dtype);
  t->device = STK_DEVICE_GPU;
}

static stk_status cuda_failure(const stk__op *op, const stk__batch_ctx *ctx, stk_status st, const char *what) {
  if (st != STK_OK && ctx->err && ctx->err[0] == '\0')
    stk__errorf(ctx->err, ctx->err_size, "%s: %s failed (%s)", op_label(op), what, stk_strerror(st));
  return st;
}

/* ---- resize / random_resized_crop ---------------------------------------------------------- */
static stk_status resize_like_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                        stk__tensor_list *const *outputs) {
  gpu_op_state *s = (gpu_op_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  int n = in->count;
  sample_geom *geom = geom_get(s, n > 0 ? n : 1, ctx->alloc_count);
  if (!geom) return STK_ENOMEM;
  stk_status st = read_sources(op, ctx, in, geom);
  if (st == STK_OK) st = plan_resize_geometry(op, ctx, geom, n);
  resample_args ra;
  if (st == STK_OK) st = read_resample_args(op, &ra, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  size_t max_bytes = 1, arena_bytes = (size_t)n * sizeof(stk__gpu_resize_desc) + 64;
  int max_w = 0, max_h = 0;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    compute_taps(g, &ra);
    size_t bytes = (size_t)g->out_w * g->out_h * g->channels;
    if (bytes > max_bytes) max_bytes = bytes;
    if (g->out_w > max_w) max_w = g->out_w;
    if (g->out_h > max_h) max_h = g->out_h;
    arena_bytes += axis_bytes(g->out_w, g->taps_x) + axis_bytes(g->out_h, g->taps_y);
  }
  stk__tensor_list *out = outputs[0];
  st = stk__gpu_tensor_list_reserve(out, n, max_bytes, ctx->alloc_count);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "reserving the output batch on the GPU");
  st = stk__gpu_arena_reserve(&s->arena, arena_bytes, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "reserving the parameter upload buffer");
  size_t descs_at = stk__gpu_arena_push(&s->arena, (size_t)n * sizeof(stk__gpu_resize_desc));
  stk__gpu_resize_desc *descs = (stk__gpu_resize_desc *)(s->arena.host + descs_at);
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    stk__gpu_resize_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->channels = g->channels;
    d->dst = (uint8_t *)out->samples[i].data;
    d->dst_w = g->out_w;
    d->dst_h = g->out_h;
    push_axes(&s->arena, g, &ra, &d->x, &d->y);
    set_sample_meta(&out->samples[i], STK_DTYPE_UINT8, g->out_h, g->out_w, g->channels, "HWC");
  }
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "uploading per-sample parameters");
  st = stk__gpu_resize_batch((const stk__gpu_resize_desc *)(s->arena.device + descs_at), n, max_w, max_h, stream);
  return cuda_failure(op, ctx, st, "the batched resize kernel launch");
}

/* ---- crop_mirror_normalize ----------------------------------------------------------------- */
static stk_status read_normalize(const stk__op *op, int channels, stk__gpu_normalize *n, char *err, size_t err_size) {
  memset(n, 0, sizeof *n);
  size_t mean_count = 0, std_count = 0;
  const double *mean = stk__arg_float_list(op, "mean", &mean_count);
  const double *stdv = stk__arg_float_list(op, "std", &std_count);
  if ((mean_count != 0 && mean_count != 1 && (int)mean_count != channels) ||
      (std_count != 0 && std_count != 1 && (int)std_count != channels)) {
    stk__errorf(err, err_size, "%s: mean/std need 1 or %d values (got %zu and %zu)", op_label(op), channels,
                mean_count, std_count);
    return STK_EINVAL;
  }
  for (int c = 0; c < channels; c++) {
    double m = mean_count ? mean[mean_count == 1 ? 0 : c] : 0.0;
    double sd = std_count ? stdv[std_count == 1 ? 0 : c] : 1.0;
    if (sd == 0.0) {
      stk__errorf(err, err_size, "%s: std must not be 0", op_label(op));
      return STK_EINVAL;
    }
    n->mean[c] = (float)m;
    n->inv_std[c] = (float)(1.0 / sd);
  }
  n->channels = channels;
  int pad = stk__arg(op, "pad_output") ? stk__arg_bool(op, "pad_output") : 0;
  n->out_channels = pad && channels == 3 ? 4 : channels;
  const char *layout = stk__arg_string(op, "output_layout");
  n->layout_chw = !(layout[0] && strcmp(layout, "HWC") == 0);
  if (layout[0] && strcmp(layout, "HWC") != 0 && strcmp(layout, "CHW") != 0) {
    stk__errorf(err, err_size, "%s: output_layout \"%s\" is not CHW or HWC", op_label(op), layout);
    return STK_EINVAL;
  }
  n->dtype = STK_DTYPE_FLOAT32;
  const stk__arg_value *dt = stk__arg(op, "dtype");
  if (dt && dt->has_value) {
    if (dt->type == STK_ARG_STRING) {
      const char *name = dt->s ? dt->s : "";
      if (strcmp(name, "float") == 0 || strcmp(name, "float32") == 0 || strcmp(name, "FLOAT") == 0)
        n->dtype = STK_DTYPE_FLOAT32;
      else if (strcmp(name, "float16") == 0 || strcmp(name, "FLOAT16") == 0 || strcmp(name, "half") == 0)
        n->dtype = STK_DTYPE_FLOAT16;
      else if (strcmp(name, "uint8") == 0 || strcmp(name, "UINT8") == 0)
        n->dtype = STK_DTYPE_UINT8;
      else {
        stk__errorf(err, err_size, "%s: dtype \"%s\" is not float, float16 or uint8", op_label(op), name);
        return STK_EINVAL;
      }
    } else {
      n->dtype = (int)dt->i;
    }
  }
  if (n->dtype != STK_DTYPE_FLOAT32 && n->dtype != STK_DTYPE_FLOAT16 && n->dtype != STK_DTYPE_UINT8) {
    stk__errorf(err, err_size, "%s: dtype must be float, float16 or uint8", op_label(op));
    return STK_EINVAL;
  }
  return STK_OK;
}

/* Per-sample mirror flag: a constant, or an argument input (a host tensor list, one scalar per
 * sample, e.g. random.coin_flip); `inputs` is the array of the node that runs (for a fused node
 * the engine lines up crop_mirror_normalize's argument-input slots in it). */
static stk_status read_mirror(const stk__op *cmn, const stk__batch_ctx *ctx, stk__tensor_list *const *inputs, int i,
                              int *mirror) {
  const stk__arg_value *v = stk__arg(cmn, "mirror");
  *mirror = 0;
  if (!v) return STK_OK;
  if (v->input_slot >= 0) {
    const stk__tensor_list *list = inputs[v->input_slot];
    if (!list || i >= list->count) return STK_EINVAL;
    const stk__tensor *t = &list->samples[i];
    if (t->device == STK_DEVICE_GPU) {
      uint8_t raw[8] = {0};
      size_t bytes = stk_dtype_size(t->dtype);
      if (bytes == 0 || bytes > sizeof raw) return STK_EINVAL;
      stk_status st = stk__gpu_memcpy_d2h(raw, t->data, bytes, ctx->cuda_stream);
      if (st != STK_OK) return st;
      stk__tensor host = *t;
      host.data = raw;
      host.nbytes = bytes;
      *mirror = stk__tensor_scalar(&host) != 0.0;
    } else {
      *mirror = stk__tensor_scalar(t) != 0.0;
    }
    return STK_OK;
  }
  *mirror = v->has_value ? stk__arg_int(cmn, "mirror") != 0 : 0;
  return STK_OK;
}

/* The crop of crop_mirror_normalize on a w x h image: `crop` = [crop_h, crop_w] (or crop_h /
 * crop_w), placed at crop_pos_x/y in [0, 1] (default 0.5 = centre); no crop = the whole image. */
static void cmn_crop(const stk__op *cmn, int w, int h, int *cx, int *cy, int *cw, int *ch) {
  double crop_h = 0, crop_w = 0;
  float_pair(cmn, "crop", 0, 0, &crop_h, &crop_w);
  if (stk__arg_is_set(cmn, "crop_h")) crop_h = stk__arg_float(cmn, "crop_h");
  if (stk__arg_is_set(cmn, "crop_w")) crop_w = stk__arg_float(cmn, "crop_w");
  *cw = crop_w > 0 ? (int)crop_w : w;
  *ch = crop_h > 0 ? (int)crop_h : h;
  const stk__arg_value *px = stk__arg(cmn, "crop_pos_x"), *py = stk__arg(cmn, "crop_pos_y");
  double pos_x = px && px->has_value ? stk__arg_float(cmn, "crop_pos_x") : 0.5;
  double pos_y = py && py->has_value ? stk__arg_float(cmn, "crop_pos_y") : 0.5;
  *cx = (int)floor(pos_x * (w - *cw) + 0.5);
  *cy = (int)floor(pos_y * (h - *ch) + 0.5);
}

static stk_status cmn_reserve_output(const stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *out,
                                     const sample_geom *geom, int n, const stk__gpu_normalize *norm, int *max_w,
                                     int *max_h) {
  size_t max_bytes = 1;
  *max_w = *max_h = 0;
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)geom[i].crop_w * geom[i].crop_h * norm->out_channels * stk_dtype_size((stk_dtype)norm->dtype);
    if (bytes > max_bytes) max_bytes = bytes;
    if (geom[i].crop_w > *max_w) *max_w = geom[i].crop_w;
    if (geom[i].crop_h > *max_h) *max_h = geom[i].crop_h;
  }
  stk_status st = stk__gpu_tensor_list_reserve(out, n, max_bytes, ctx->alloc_count);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "reserving the output batch on the GPU");
  for (int i = 0; i < n; i++) {
    if (norm->layout_chw)
      set_sample_meta(&out->samples[i], (stk_dtype)norm->dtype, norm->out_channels, geom[i].crop_h, geom[i].crop_w,
                      "CHW");
    else
      set_sample_meta(&out->samples[i], (stk_dtype)norm->dtype, geom[i].crop_h, geom[i].crop_w, norm->out_channels,
                      "HWC");
  }
  return STK_OK;
}

static stk_status check_same_channels(const stk__op *op, const stk__batch_ctx *ctx, const sample_geom *geom, int n) {
  for (int i = 1; i < n; i++)
    if (geom[i].channels != geom[0].channels) {
      stk__errorf(ctx->err, ctx->err_size, "%s: sample %d (%s) has %d channels, sample 0 has %d", op_label(op), i,
                  sample_source(ctx, i), geom[i].channels, geom[0].channels);
      return STK_EINVAL;
    }
  return STK_OK;
}

static stk_status cmn_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                stk__tensor_list *const *outputs) {
  gpu_op_state *s = (gpu_op_state *)op->state;
  const stk__tensor_list *in = inputs[0];
  int n = in->count;
  sample_geom *geom = geom_get(s, n > 0 ? n : 1, ctx->alloc_count);
  if (!geom) return STK_ENOMEM;
  stk_status st = read_sources(op, ctx, in, geom);
  if (st == STK_OK) st = check_same_channels(op, ctx, geom, n);
  if (st != STK_OK || n == 0) return st;
  stk__gpu_normalize norm;
  st = read_normalize(op, geom[0].channels, &norm, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    cmn_crop(op, g->src_w, g->src_h, &g->crop_x, &g->crop_y, &g->crop_w, &g->crop_h);
    st = read_mirror(op, ctx, inputs, i, &g->mirror);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "%s: could not read mirror for sample %d", op_label(op), i);
      return st;
    }
  }
  int max_w, max_h;
  st = cmn_reserve_output(op, ctx, outputs[0], geom, n, &norm, &max_w, &max_h);
  if (st != STK_OK) return st;
  st = stk__gpu_arena_reserve(&s->arena, (size_t)n * sizeof(stk__gpu_cmn_desc) + 64, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "reserving the parameter upload buffer");
  size_t descs_at = stk__gpu_arena_push(&s->arena, (size_t)n * sizeof(stk__gpu_cmn_desc));
  stk__gpu_cmn_desc *descs = (stk__gpu_cmn_desc *)(s->arena.host + descs_at);
  for (int i = 0; i < n; i++) {
    const sample_geom *g = &geom[i];
    stk__gpu_cmn_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->crop_x = g->crop_x;
    d->crop_y = g->crop_y;
    d->crop_w = g->crop_w;
    d->crop_h = g->crop_h;
    d->mirror = g->mirror;
    d->dst = outputs[0]->samples[i].data;
  }
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "uploading per-sample parameters");
  st = stk__gpu_crop_mirror_normalize_batch((const stk__gpu_cmn_desc *)(s->arena.device + descs_at), n, max_w, max_h,
                                            &norm, stream);
  return cuda_failure(op, ctx, st, "the batched crop_mirror_normalize kernel launch");
}

/* ---- fused (random_resized_crop | resize) + crop_mirror_normalize -------------------------- */
static stk_status fused_init(stk__op *op, char *err, size_t err_size) {
  if (!op->fused[0] || !op->fused[1]) {
    stk__errorf(err, err_size, "fused GPU node built without its two original operators");
    return STK_EINTERNAL;
  }
  return state_init(op, err, err_size);
}

static stk_status fused_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                  stk__tensor_list *const *outputs) {
  gpu_op_state *s = (gpu_op_state *)op->state;
  const stk__op *first = op->fused[0], *cmn = op->fused[1];
  const stk__tensor_list *in = inputs[0];
  int n = in->count;
  sample_geom *geom = geom_get(s, n > 0 ? n : 1, ctx->alloc_count);
  if (!geom) return STK_ENOMEM;
  stk_status st = read_sources(first, ctx, in, geom);
  if (st == STK_OK) st = check_same_channels(first, ctx, geom, n);
  if (st == STK_OK) st = plan_resize_geometry(first, ctx, geom, n);
  resample_args ra;
  if (st == STK_OK) st = read_resample_args(first, &ra, ctx->err, ctx->err_size);
  if (st != STK_OK || n == 0) return st;
  stk__gpu_normalize norm;
  st = read_normalize(cmn, geom[0].channels, &norm, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  size_t arena_bytes = (size_t)n * sizeof(stk__gpu_fused_desc) + 64;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    compute_taps(g, &ra);
    arena_bytes += axis_bytes(g->out_w, g->taps_x) + axis_bytes(g->out_h, g->taps_y);
    cmn_crop(cmn, g->out_w, g->out_h, &g->crop_x, &g->crop_y, &g->crop_w, &g->crop_h);
    st = read_mirror(cmn, ctx, inputs, i, &g->mirror);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "%s: could not read mirror for sample %d", op_label(cmn), i);
      return st;
    }
  }
  int max_w, max_h;
  st = cmn_reserve_output(cmn, ctx, outputs[0], geom, n, &norm, &max_w, &max_h);
  if (st != STK_OK) return st;
  st = stk__gpu_arena_reserve(&s->arena, arena_bytes, s->numa_node, ctx->alloc_count);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "reserving the parameter upload buffer");
  size_t descs_at = stk__gpu_arena_push(&s->arena, (size_t)n * sizeof(stk__gpu_fused_desc));
  stk__gpu_fused_desc *descs = (stk__gpu_fused_desc *)(s->arena.host + descs_at);
  for (int i = 0; i < n; i++) {
    const sample_geom *g = &geom[i];
    stk__gpu_fused_desc *d = &descs[i];
    d->src = g->src;
    d->src_w = g->src_w;
    d->src_h = g->src_h;
    d->src_stride = g->src_w * g->channels;
    d->resized_w = g->out_w;
    d->resized_h = g->out_h;
    push_axes(&s->arena, g, &ra, &d->x, &d->y);
    d->crop_x = g->crop_x;
    d->crop_y = g->crop_y;
    d->crop_w = g->crop_w;
    d->crop_h = g->crop_h;
    d->mirror = g->mirror;
    d->dst = outputs[0]->samples[i].data;
  }
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "uploading per-sample parameters");
  st = stk__gpu_fused_resize_cmn_batch((const stk__gpu_fused_desc *)(s->arena.device + descs_at), n, max_w, max_h,
                                       &norm, stream);
  return cuda_failure(op, ctx, st, "the fused resize+crop_mirror_normalize kernel launch");
}

extern "C" {
const stk__op_impl stk__gpu_impl_resize = {state_init, state_destroy, NULL, NULL, NULL, NULL, resize_like_run_batch};
const stk__op_impl stk__gpu_impl_random_resized_crop = {state_init, state_destroy, NULL, NULL,
                                                         NULL,       NULL,          resize_like_run_batch};
const stk__op_impl stk__gpu_impl_crop_mirror_normalize = {state_init, state_destroy, NULL, NULL,
                                                           NULL,       NULL,          cmn_run_batch};
const stk__op_impl stk__gpu_impl_fused_resize_cmn = {fused_init, state_destroy, NULL, NULL, NULL, NULL, fused_run_batch};
}
