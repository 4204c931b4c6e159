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

#include "device/device.h"
#include "ops/cpu/image_ops.h"
#include "ops/gpu/gpu_ops.h"
#include "ops/gpu/kernels.h"

/* ---- Arguments, read once at init ----------------------------------------------------------
 * The CPU operator's own init runs first on the same op (then its state is dropped), so argument
 * validation and its messages are the CPU's; the values below are read the way the CPU operators
 * read them (src/ops/cpu/resize.c, random_resized_crop.c, crop_mirror_normalize.c). */
typedef enum oob_policy { OOB_ERROR = 0, OOB_PAD, OOB_TRIM } oob_policy;

typedef struct resize_args {
  int is_rrc;                 /* random_resized_crop, else resize */
  stk__resize_params params;  /* resize: DALI's output-size rules (stk__resize_plan) */
  int rrc_w, rrc_h;           /* random_resized_crop: output size */
  double area_min, area_max, ratio_min, ratio_max;
  int attempts;
  stk__interp interp;
  int antialias;
} resize_args;

typedef struct cmn_args {
  int crop_w, crop_h; /* 0 = whole extent */
  double pos_x, pos_y;
  size_t mean_count, std_count;
  float mean[4], inv_std[4], fill[5], shift;
  int mirror_constant;
  int layout_chw;
  stk_dtype dtype;
  int pad_output;
  oob_policy oob;
} cmn_args;

/* ---- Per-sample geometry ------------------------------------------------------------------- */
typedef struct sample_geom {
  const uint8_t *src;
  int src_w, src_h, channels;
  double roi[4];    /* source interval that is resized: x0, y0, x1, y1 (fractional with subpixel_scale) */
  int out_w, out_h; /* resized size */
  int taps_x, taps_y;
  /* crop_mirror_normalize part (fused / cmn) */
  int crop_x, crop_y, crop_w, crop_h, mirror;
} sample_geom;

typedef struct gpu_op_state {
  stk__gpu_arena arena;
  int numa_node;
  resize_args resize;
  cmn_args cmn;
  sample_geom *geom;
  int geom_capacity;
} gpu_op_state;

static const char *op_label(const stk__op *op) { return op->name ? op->name : op->schema->name; }

/* Runs the CPU implementation's init on op (argument checks, CPU messages) and drops its state. */
static stk_status validate_with_cpu(stk__op *op, char *err, size_t err_size) {
  const stk__op_impl *cpu = op->schema ? op->schema->cpu : NULL;
  if (!cpu || !cpu->init) return STK_OK;
  void *saved = op->state;
  op->state = NULL;
  stk_status st = cpu->init(op, err, err_size);
  if (st == STK_OK && cpu->destroy) cpu->destroy(op);
  op->state = saved;
  return st;
}

/* A float list given as one value (both) or [height, width]; unset = leave as is. */
static void extents(const stk__op *op, const char *name, double *height, double *width) {
  size_t count = 0;
  const double *v = stk__arg_float_list(op, name, &count);
  if (count == 0) return;
  *height = v[0];
  *width = count >= 2 ? v[1] : v[0];
}

static void range(const stk__op *op, const char *name, double *lo, double *hi) {
  size_t count = 0;
  const double *v = stk__arg_float_list(op, name, &count);
  if (count == 0) return;
  *lo = v[0];
  *hi = count >= 2 ? v[1] : v[0];
}

static stk_status read_resize_args(const stk__op *op, resize_args *r, char *err, size_t err_size) {
  memset(r, 0, sizeof *r);
  r->is_rrc = strcmp(op->schema->name, "random_resized_crop") == 0;
  if (stk__interp_parse(stk__arg_string(op, "interp_type"), &r->interp) != STK_OK) {
    stk__errorf(err, err_size, "%s: interp_type \"%s\" is not nearest, linear or cubic", op_label(op),
                stk__arg_string(op, "interp_type"));
    return STK_EINVAL;
  }
  r->antialias = stk__arg_bool(op, "antialias");
  if (r->is_rrc) {
    double h = 0, w = 0;
    extents(op, "size", &h, &w); /* [height, width], one value = square */
    r->rrc_h = (int)(h + 0.5);
    r->rrc_w = (int)(w + 0.5);
    range(op, "random_area", &r->area_min, &r->area_max);
    range(op, "random_aspect_ratio", &r->ratio_min, &r->ratio_max);
    r->attempts = (int)stk__arg_int(op, "num_attempts");
    if (r->rrc_w < 1 || r->rrc_h < 1) {
      stk__errorf(err, err_size, "%s: size must be [height, width] >= 1", op_label(op));
      return STK_EINVAL;
    }
    return STK_OK;
  }
  if (stk__resize_mode_parse(stk__arg_string(op, "mode"), &r->params.mode) != STK_OK) {
    stk__errorf(err, err_size, "%s: mode \"%s\" is not default, stretch, not_larger or not_smaller", op_label(op),
                stk__arg_string(op, "mode"));
    return STK_EINVAL;
  }
  r->params.subpixel_scale = stk__arg_bool(op, "subpixel_scale");
  r->params.resize_x = stk__arg_float(op, "resize_x");
  r->params.resize_y = stk__arg_float(op, "resize_y");
  r->params.resize_shorter = stk__arg_float(op, "resize_shorter");
  r->params.resize_longer = stk__arg_float(op, "resize_longer");
  extents(op, "size", &r->params.resize_y, &r->params.resize_x);
  extents(op, "max_size", &r->params.max_size_y, &r->params.max_size_x);
  return STK_OK;
}

static stk_status read_cmn_args(const stk__op *op, cmn_args *c, char *err, size_t err_size) {
  memset(c, 0, sizeof *c);
  double ch = 0, cw = 0;
  size_t count = 0;
  stk__arg_float_list(op, "crop", &count);
  if (count > 0)
    extents(op, "crop", &ch, &cw);
  else {
    ch = stk__arg_float(op, "crop_h");
    cw = stk__arg_float(op, "crop_w");
  }
  c->crop_h = (int)(ch + 0.5);
  c->crop_w = (int)(cw + 0.5);
  c->pos_x = stk__arg_float(op, "crop_pos_x");
  c->pos_y = stk__arg_float(op, "crop_pos_y");
  const double *mean = stk__arg_float_list(op, "mean", &c->mean_count);
  const double *stdv = stk__arg_float_list(op, "std", &c->std_count);
  if (c->mean_count < 1 || c->mean_count > 4 || c->std_count < 1 || c->std_count > 4) {
    stk__errorf(err, err_size, "%s: mean and std need 1 to 4 values", op_label(op));
    return STK_EINVAL;
  }
  double scale = stk__arg_float(op, "scale");
  for (int k = 0; k < 4; k++) {
    double m = mean[c->mean_count == 1 ? 0 : (k < (int)c->mean_count ? k : 0)];
    double sd = stdv[c->std_count == 1 ? 0 : (k < (int)c->std_count ? k : 0)];
    if (sd == 0 || !isfinite(sd)) {
      stk__errorf(err, err_size, "%s: std values must be finite and non-zero", op_label(op));
      return STK_EINVAL;
    }
    c->mean[k] = (float)m;
    c->inv_std[k] = (float)(scale / sd);
  }
  c->shift = (float)stk__arg_float(op, "shift");
  size_t fill_count = 0;
  const double *fill = stk__arg_float_list(op, "fill_values", &fill_count);
  for (int k = 0; k < 5; k++)
    c->fill[k] = fill_count ? (float)fill[fill_count == 1 ? 0 : (k < (int)fill_count ? k : 0)] : 0.0f;
  const char *layout = stk__arg_string(op, "output_layout");
  c->layout_chw = strcmp(layout, "HWC") != 0;
  if (stk__dtype_parse(stk__arg_string(op, "dtype"), &c->dtype) != STK_OK ||
      (c->dtype != STK_DTYPE_FLOAT32 && c->dtype != STK_DTYPE_FLOAT16 && c->dtype != STK_DTYPE_UINT8)) {
    stk__errorf(err, err_size, "%s: dtype \"%s\" is not float, float16 or uint8", op_label(op),
                stk__arg_string(op, "dtype"));
    return STK_EINVAL;
  }
  c->pad_output = stk__arg_bool(op, "pad_output");
  const char *oob = stk__arg_string(op, "out_of_bounds_policy");
  c->oob = strcmp(oob, "pad") == 0 ? OOB_PAD : strcmp(oob, "trim_to_shape") == 0 ? OOB_TRIM : OOB_ERROR;
  c->mirror_constant = stk__arg_int(op, "mirror") != 0;
  return STK_OK;
}

static stk_status state_new(stk__op *op, char *err, size_t err_size, gpu_op_state **out) {
  gpu_op_state *s = (gpu_op_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  int device = op->options && op->options->device_id >= 0 ? op->options->device_id : 0;
  if (stk__gpu_set_device(device) != STK_OK) {
    stk__errorf(err, err_size, "%s: CUDA device %d cannot be used", op_label(op), device);
    free(s);
    return STK_ENODEV;
  }
  s->numa_node = stk__gpu_device_numa_node(device);
  if (s->numa_node < 0) s->numa_node = 0; /* unknown: node 0, as the topology code resolves it */
  *out = s;
  return STK_OK;
}

static stk_status resize_init(stk__op *op, char *err, size_t err_size) {
  stk_status st = validate_with_cpu(op, err, err_size);
  gpu_op_state *s = NULL;
  if (st == STK_OK) st = state_new(op, err, err_size, &s);
  if (st == STK_OK) st = read_resize_args(op, &s->resize, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  op->state = s;
  return STK_OK;
}

static stk_status cmn_init(stk__op *op, char *err, size_t err_size) {
  stk_status st = validate_with_cpu(op, err, err_size);
  gpu_op_state *s = NULL;
  if (st == STK_OK) st = state_new(op, err, err_size, &s);
  if (st == STK_OK) st = read_cmn_args(op, &s->cmn, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
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

/* Geometry of the first op of a resize chain: resize (stk__resize_plan, the CPU operator's size
 * rules and source interval) or random_resized_crop (the window drawn exactly as the CPU
 * operator draws it, keyed by seed / op id / epoch / sample id). */
static stk_status plan_resize_geometry(const stk__op *op, const resize_args *r, const stk__batch_ctx *ctx,
                                       sample_geom *geom, int count) {
  for (int i = 0; i < count; i++) {
    sample_geom *g = &geom[i];
    if (r->is_rrc) {
      stk__rng rng;
      stk__rng_init(&rng, op->seed, (uint32_t)op->id, ctx->epoch, sample_id_of(ctx, i));
      stk__window win = stk__random_crop_window(&rng, g->src_w, g->src_h, r->area_min, r->area_max, r->ratio_min,
                                                r->ratio_max, r->attempts);
      g->roi[0] = win.x;
      g->roi[1] = win.y;
      g->roi[2] = (double)win.x + win.w;
      g->roi[3] = (double)win.y + win.h;
      g->out_w = r->rrc_w;
      g->out_h = r->rrc_h;
    } else if (stk__resize_plan(&r->params, g->src_w, g->src_h, &g->out_w, &g->out_h, g->roi) != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size,
                  "%s: sample %d (%s): cannot resize a %dx%d image with these arguments (empty or over 65535 px)",
                  op_label(op), i, sample_source(ctx, i), g->src_w, g->src_h);
      return STK_EINVAL;
    }
    if (!(g->roi[2] > g->roi[0]) || !(g->roi[3] > g->roi[1]) || g->out_w <= 0 || g->out_h <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "%s: sample %d (%s): empty window or output size", op_label(op), i,
                  sample_source(ctx, i));
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

/* Bytes the axis tables of one sample need in the arena (with alignment slack). */
static size_t axis_bytes(int out_size, int taps) { return (size_t)out_size * (4 + 4 * (size_t)taps) + 64; }

static void compute_taps(sample_geom *g, const resize_args *r) {
  g->taps_x = stk__resample_max_taps(g->src_w, g->out_w, g->roi[0], g->roi[2], r->interp, r->antialias);
  g->taps_y = stk__resample_max_taps(g->src_h, g->out_h, g->roi[1], g->roi[3], r->interp, r->antialias);
}

/* Fills the x/y weight tables of one sample into the arena (stk__resample_weights, the CPU
 * reference's own tables) and points the axes at their device copies. */
static void push_axes(stk__gpu_arena *arena, const sample_geom *g, const resize_args *r, stk__gpu_axis *ax,
                      stk__gpu_axis *ay) {
  size_t fx = stk__gpu_arena_push(arena, (size_t)g->out_w * 4);
  size_t wx = stk__gpu_arena_push(arena, (size_t)g->out_w * g->taps_x * 4);
  ax->taps = stk__resample_weights(g->src_w, g->out_w, g->roi[0], g->roi[2], r->interp, r->antialias,
                                   (int32_t *)(arena->host + fx), (float *)(arena->host + wx));
  ax->first = (const int32_t *)(arena->device + fx);
  ax->weights = (const float *)(arena->device + wx);
  size_t fy = stk__gpu_arena_push(arena, (size_t)g->out_h * 4);
  size_t wy = stk__gpu_arena_push(arena, (size_t)g->out_h * g->taps_y * 4);
  ay->taps = stk__resample_weights(g->src_h, g->out_h, g->roi[1], g->roi[3], r->interp, r->antialias,
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
  if (st == STK_OK) st = plan_resize_geometry(op, &s->resize, ctx, geom, n);
  if (st != STK_OK) return st;
  size_t max_bytes = 1, arena_bytes = (size_t)n * sizeof(stk__gpu_resize_desc) + 64;
  int max_w = 0, max_h = 0;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    compute_taps(g, &s->resize);
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
    push_axes(&s->arena, g, &s->resize, &d->x, &d->y);
    set_sample_meta(&out->samples[i], STK_DTYPE_UINT8, g->out_h, g->out_w, g->channels, "HWC");
  }
  stk__gpu_tensor_list_settle(out);
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return cuda_failure(op, ctx, st, "uploading per-sample parameters");
  st = stk__gpu_resize_batch((const stk__gpu_resize_desc *)(s->arena.device + descs_at), n, max_w, max_h, stream);
  return cuda_failure(op, ctx, st, "the batched resize kernel launch");
}

/* ---- crop_mirror_normalize ----------------------------------------------------------------- */
/* The batch's normalization for `channels`-channel input; the same per-image checks as the CPU. */
static stk_status make_normalize(const stk__op *op, const cmn_args *c, int channels, stk__gpu_normalize *n,
                                 const stk__batch_ctx *ctx) {
  if ((c->mean_count > 1 && (int)c->mean_count != channels) || (c->std_count > 1 && (int)c->std_count != channels)) {
    stk__errorf(ctx->err, ctx->err_size, "%s: the images have %d channels but mean has %zu and std %zu values",
                op_label(op), channels, c->mean_count, c->std_count);
    return STK_EINVAL;
  }
  memset(n, 0, sizeof *n);
  memcpy(n->mean, c->mean, sizeof n->mean);
  memcpy(n->inv_std, c->inv_std, sizeof n->inv_std);
  memcpy(n->fill, c->fill, sizeof n->fill);
  n->shift = c->shift;
  n->channels = channels;
  n->out_channels = c->pad_output && channels == 3 ? 4 : channels;
  n->layout_chw = c->layout_chw;
  n->dtype = c->dtype;
  return STK_OK;
}

/* Per-sample mirror flag: the constant, or the argument input (one scalar per sample, e.g.
 * random.coin_flip, normally a host tensor list). `inputs` is the array of the node that runs:
 * for a fused node the engine puts crop_mirror_normalize's argument inputs after the first
 * operator's inputs and rewrites their input_slot (src/core/pipeline.c, fuse_gpu_nodes). */
static stk_status read_mirror(const stk__op *cmn, const cmn_args *c, const stk__batch_ctx *ctx,
                              stk__tensor_list *const *inputs, int i, int *mirror) {
  const stk__arg_value *v = stk__arg(cmn, "mirror");
  *mirror = c->mirror_constant;
  if (!v || v->input_slot < 0) return STK_OK;
  const stk__tensor_list *list = inputs[v->input_slot];
  if (!list || i >= list->count || !list->samples) return STK_EINVAL;
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

/* The crop of crop_mirror_normalize on a w x h image, placed like the CPU operator
 * (stk__crop_start) and checked / trimmed by out_of_bounds_policy. */
static stk_status cmn_crop(const stk__op *op, const cmn_args *c, const stk__batch_ctx *ctx, int i, int w, int h,
                           sample_geom *g) {
  int crop_w = c->crop_w ? c->crop_w : w, crop_h = c->crop_h ? c->crop_h : h;
  int x = stk__crop_start(c->pos_x, w, crop_w), y = stk__crop_start(c->pos_y, h, crop_h);
  if (x < 0 || y < 0 || x + crop_w > w || y + crop_h > h) {
    if (c->oob == OOB_ERROR) {
      stk__errorf(ctx->err, ctx->err_size,
                  "%s: sample %d (%s): the %dx%d crop at (%d, %d) does not fit the %dx%d image "
                  "(out_of_bounds_policy=\"error\"; use \"pad\" or \"trim_to_shape\")",
                  op_label(op), i, sample_source(ctx, i), crop_w, crop_h, x, y, w, h);
      return STK_EINVAL;
    }
    if (c->oob == OOB_TRIM) {
      int x1 = x + crop_w > w ? w : x + crop_w, y1 = y + crop_h > h ? h : y + crop_h;
      x = x < 0 ? 0 : x;
      y = y < 0 ? 0 : y;
      crop_w = x1 - x;
      crop_h = y1 - y;
    }
  }
  g->crop_x = x;
  g->crop_y = y;
  g->crop_w = crop_w;
  g->crop_h = crop_h;
  return STK_OK;
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
  stk__gpu_tensor_list_settle(out);
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
  st = make_normalize(op, &s->cmn, geom[0].channels, &norm, ctx);
  if (st != STK_OK) return st;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    st = cmn_crop(op, &s->cmn, ctx, i, g->src_w, g->src_h, g);
    if (st != STK_OK) return st;
    st = read_mirror(op, &s->cmn, ctx, inputs, i, &g->mirror);
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
  stk_status st = validate_with_cpu(op->fused[0], err, err_size);
  if (st == STK_OK) st = validate_with_cpu(op->fused[1], err, err_size);
  gpu_op_state *s = NULL;
  if (st == STK_OK) st = state_new(op, err, err_size, &s);
  if (st == STK_OK) st = read_resize_args(op->fused[0], &s->resize, err, err_size);
  if (st == STK_OK) st = read_cmn_args(op->fused[1], &s->cmn, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  op->state = s;
  return STK_OK;
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
  if (st == STK_OK) st = plan_resize_geometry(first, &s->resize, ctx, geom, n);
  if (st != STK_OK || n == 0) return st;
  stk__gpu_normalize norm;
  st = make_normalize(cmn, &s->cmn, geom[0].channels, &norm, ctx);
  if (st != STK_OK) return st;
  size_t arena_bytes = (size_t)n * sizeof(stk__gpu_fused_desc) + 64;
  for (int i = 0; i < n; i++) {
    sample_geom *g = &geom[i];
    compute_taps(g, &s->resize);
    arena_bytes += axis_bytes(g->out_w, g->taps_x) + axis_bytes(g->out_h, g->taps_y);
    st = cmn_crop(cmn, &s->cmn, ctx, i, g->out_w, g->out_h, g);
    if (st != STK_OK) return st;
    st = read_mirror(cmn, &s->cmn, ctx, inputs, i, &g->mirror);
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
    push_axes(&s->arena, g, &s->resize, &d->x, &d->y);
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
const stk__op_impl stk__gpu_impl_resize = {resize_init, state_destroy, NULL, NULL, NULL, NULL, resize_like_run_batch};
const stk__op_impl stk__gpu_impl_random_resized_crop = {resize_init, state_destroy, NULL, NULL,
                                                         NULL,        NULL,          resize_like_run_batch};
const stk__op_impl stk__gpu_impl_crop_mirror_normalize = {cmn_init, state_destroy, NULL, NULL, NULL, NULL,
                                                           cmn_run_batch};
const stk__op_impl stk__gpu_impl_fused_resize_cmn = {fused_init, state_destroy, NULL, NULL, NULL, NULL, fused_run_batch};
}
