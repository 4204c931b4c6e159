/* src/ops/common/image_gpu.cu: the batch helpers the GPU image operators share (image_gpu.h): state,
 * per-sample geometry, source checks, the resize step's planning on the host with the CPU
 * operators' own functions, and the upload of the CPU reference's resampling tables. Hot path
 * (per batch); allocates only when a batch needs more room than any before. */
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_gpu.h"
#include "ops/op_impls.h"
#include "base/tuning.h"

stk_status stk__gpu_image_state_new(stk__op *op, char *err, size_t err_size, stk__gpu_image_state **out) {
  stk__gpu_image_state *s = (stk__gpu_image_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status dev = stk__gpu_op_device(op, &s->numa_node, err, err_size);
  if (dev != STK_OK) {
    free(s);
    return dev;
  }
  /* Knobs (src/base/tuning.c): the weight tables on the GPU stage alone; the fused kernel's grid
   * (-1: 4 looping blocks per SM, stk__gpu_fused_default_blocks; 0: one block a tile) and the
   * launches a batch is split into. A bad value fails here, naming the variable. */
  s->serial_weights = stk__tuning_int(STK__KNOB_GPU_SERIAL_WEIGHTS) != 0;
  double blocks = 0, launches = 0;
  if (stk__tuning_read(STK__KNOB_FUSED_BLOCKS, &blocks, NULL, NULL, err, err_size) != STK_OK ||
      stk__tuning_read(STK__KNOB_FUSED_SPLIT, &launches, NULL, NULL, err, err_size) != STK_OK) {
    free(s);
    return STK_EINVAL;
  }
  s->fused_blocks = blocks < 0 ? stk__gpu_fused_default_blocks() : (int)blocks;
  s->fused_launches = (int)launches;
  *out = s;
  return STK_OK;
}

void stk__gpu_image_state_destroy(stk__op *op) {
  stk__gpu_image_state *s = (stk__gpu_image_state *)op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  free(s->geom);
  stk__axis_tables_free(&s->axis_tables);
  free(s);
  op->state = NULL;
}

stk_status stk__gpu_resize_step_get(const stk__op *op, stk__gpu_resize_step *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  out->random_crop = op->schema == &stk__op_random_resized_crop;
  stk_status st = out->random_crop ? stk__random_resized_crop_params_get(op, &out->crop, err, err_size)
                                   : stk__resize_op_params_get(op, &out->resize, err, err_size);
  if (st != STK_OK) return st;
  out->interp = out->random_crop ? out->crop.interp : out->resize.interp;
  out->antialias = out->random_crop ? out->crop.antialias : out->resize.antialias;
  return STK_OK;
}

stk__gpu_sample_geom *stk__gpu_geom_get(stk__gpu_image_state *s, int count, uint64_t *alloc_count) {
  if (count > s->geom_capacity) {
    stk__gpu_sample_geom *g = (stk__gpu_sample_geom *)realloc(s->geom, (size_t)count * sizeof *g);
    if (!g) return NULL;
    s->geom = g;
    s->geom_capacity = count;
    if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  }
  memset(s->geom, 0, (size_t)count * sizeof *s->geom);
  return s->geom;
}

const char *stk__gpu_sample_source(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size && ctx->plan->samples[i].source)
    return ctx->plan->samples[i].source;
  return "(unknown file)";
}

int64_t stk__gpu_sample_id(const stk__batch_ctx *ctx, int i) {
  if (ctx->plan && ctx->plan->samples && i < ctx->plan->batch_size) return ctx->plan->samples[i].sample_id;
  return i;
}

int stk__gpu_count_frames(const stk__batch_ctx *ctx, const stk__tensor_list *in) {
  if (in->device != STK_DEVICE_GPU) {
    stk__errorf(ctx->err, ctx->err_size, "input must be on the GPU (use a mixed decoder or .gpu())");
    return -1;
  }
  int64_t images = 0;
  for (int i = 0; i < in->count; i++) {
    stk__u8_frames f;
    char why[256] = "";
    if (stk__check_u8_frames(&in->samples[i], &f, why, sizeof why) != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d (%s): %s", i, stk__gpu_sample_source(ctx, i), why);
      return -1;
    }
    images += f.frames;
  }
  if (images > 65535) { /* one grid z per image */
    stk__errorf(ctx->err, ctx->err_size, "a batch of %lld frames is more than the GPU kernels take (65535)",
                (long long)images);
    return -1;
  }
  return (int)images;
}

void stk__gpu_read_sources(const stk__tensor_list *in, stk__gpu_sample_geom *geom) {
  int k = 0;
  for (int i = 0; i < in->count; i++) {
    const stk__tensor *t = &in->samples[i];
    const int sequence = t->ndim == 4, frames = sequence ? (int)t->shape[0] : 1;
    const int64_t *hwc = t->shape + sequence;
    const size_t frame_bytes = (size_t)(hwc[0] * hwc[1] * hwc[2]);
    for (int f = 0; f < frames; f++, k++) {
      stk__gpu_sample_geom *g = &geom[k];
      g->sample = i;
      g->frame = f;
      g->frames = frames;
      g->sequence = sequence;
      g->src = (const uint8_t *)t->data + (size_t)f * frame_bytes;
      g->src_h = (int)hwc[0];
      g->src_w = (int)hwc[1];
      g->channels = (int)hwc[2];
    }
  }
}

stk_status stk__gpu_check_same_channels(const stk__batch_ctx *ctx, const stk__gpu_sample_geom *geom, int n) {
  for (int i = 1; i < n; i++)
    if (geom[i].channels != geom[0].channels) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d (%s) has %d channels, sample 0 has %d", geom[i].sample,
                  stk__gpu_sample_source(ctx, geom[i].sample), geom[i].channels, geom[0].channels);
      return STK_EINVAL;
    }
  return STK_OK;
}

/* resize: stk__resize_plan (the CPU operator's size rules and source interval); random_resized_crop:
 * the window drawn exactly as the CPU operator draws it (stk__random_resized_crop_window). */
stk_status stk__gpu_plan_resize(const stk__op *op, const stk__gpu_resize_step *r, const stk__batch_ctx *ctx,
                                stk__gpu_sample_geom *geom, int count) {
  for (int i = 0; i < count; i++) {
    stk__gpu_sample_geom *g = &geom[i];
    const int sample = g->sample;
    if (r->random_crop && g->sequence) { /* as on the CPU: random_resized_crop takes images */
      stk__errorf(ctx->err, ctx->err_size, "sample %d (%s): input must be an HWC image, not an FHWC sequence", sample,
                  stk__gpu_sample_source(ctx, sample));
      return STK_EINVAL;
    }
    if (r->random_crop) {
      stk__window win = stk__random_resized_crop_window(&r->crop, op, ctx->epoch, stk__gpu_sample_id(ctx, sample),
                                                        g->src_w, g->src_h);
      g->roi[0] = win.x;
      g->roi[1] = win.y;
      g->roi[2] = (double)win.x + win.w;
      g->roi[3] = (double)win.y + win.h;
      g->out_w = r->crop.out_w;
      g->out_h = r->crop.out_h;
    } else if (stk__resize_plan(&r->resize.size, g->src_w, g->src_h, &g->out_w, &g->out_h, g->roi) != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size,
                  "sample %d (%s): cannot resize a %dx%d image with these arguments (empty or over 65535 px)", sample,
                  stk__gpu_sample_source(ctx, sample), g->src_w, g->src_h);
      return STK_EINVAL;
    }
    if (!(g->roi[2] > g->roi[0]) || !(g->roi[3] > g->roi[1]) || g->out_w <= 0 || g->out_h <= 0) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d (%s): empty window or output size", sample,
                  stk__gpu_sample_source(ctx, sample));
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

int stk__gpu_resize_fixed_size(const stk__gpu_resize_step *r, int *w, int *h) {
  if (!r->random_crop) return stk__resize_fixed_size(&r->resize.size, w, h);
  *w = r->crop.out_w;
  *h = r->crop.out_h;
  return *w > 0 && *h > 0;
}

/* Bytes the axis tables of one sample need in the arena (with alignment slack). */
static size_t axis_bytes(int out_size, int taps) { return (size_t)out_size * (4 + 4 * (size_t)taps) + 64; }

size_t stk__gpu_compute_taps(stk__gpu_sample_geom *g, const stk__gpu_resize_step *r) {
  g->taps_x = stk__resample_max_taps(g->src_w, g->out_w, g->roi[0], g->roi[2], r->interp, r->antialias);
  g->taps_y = stk__resample_max_taps(g->src_h, g->out_h, g->roi[1], g->roi[3], r->interp, r->antialias);
  return axis_bytes(g->out_w, g->taps_x) + axis_bytes(g->out_h, g->taps_y);
}

/* stk__gpu_push_axes_batch's weight tables: chunk c of the images, each axis that owns its table. */
typedef struct axes_job {
  const stk__gpu_arena *arena;
  const stk__axis_key *keys;
  const stk__gpu_resize_step *r;
  uint8_t *ax; /* the first image's x axis; the y axis and the next image's at the strides */
  size_t y_offset, stride;
  int n, chunk;
} axes_job;

/* Axis j: image j / 2's x (j even) or y axis. */
static stk__gpu_axis *axis_at(uint8_t *ax0, size_t y_offset, size_t stride, int j) {
  return (stk__gpu_axis *)(ax0 + (size_t)(j / 2) * stride + (j % 2 ? y_offset : 0));
}

static stk_status axes_chunk(void *arg, int c, int thread_index) {
  (void)thread_index;
  const axes_job *job = (const axes_job *)arg;
  const int end = (c + 1) * job->chunk < job->n ? (c + 1) * job->chunk : job->n;
  for (int j = 2 * c * job->chunk; j < 2 * end; j++) {
    const stk__axis_key *k = &job->keys[j];
    if (k->owner != j) continue;
    const stk__gpu_axis *axis = axis_at(job->ax, job->y_offset, job->stride, j);
    uint8_t *first = job->arena->host + ((const uint8_t *)axis->first - job->arena->device);
    uint8_t *weights = job->arena->host + ((const uint8_t *)axis->weights - job->arena->device);
    int taps = stk__resample_weights(k->in_size, k->out_size, k->roi_start, k->roi_end, job->r->interp,
                                     job->r->antialias, (int32_t *)first, (float *)weights);
    if (taps != axis->taps) return STK_EINTERNAL; /* the table's stride is the planned one (compute_taps) */
  }
  return STK_OK;
}

stk_status stk__gpu_push_axes_batch(stk__batch_ctx *ctx, stk__gpu_image_state *s, const stk__gpu_sample_geom *geom,
                                    int n, stk__gpu_axis *ax0, stk__gpu_axis *ay0, size_t stride) {
  if (n <= 0) return STK_OK;
  stk_status st = stk__axis_tables_reserve(&s->axis_tables, 2 * n, ctx->alloc_count);
  if (st != STK_OK) return st;
  stk__axis_key *keys = s->axis_tables.keys;
  for (int j = 0; j < 2 * n; j++) { /* image by image, x then y */
    const stk__gpu_sample_geom *g = &geom[j / 2];
    const int y = j % 2;
    keys[j].in_size = y ? g->src_h : g->src_w;
    keys[j].out_size = y ? g->out_h : g->out_w;
    keys[j].roi_start = g->roi[y];
    keys[j].roi_end = g->roi[y + 2];
  }
  stk__axis_tables_share(&s->axis_tables, 2 * n, !s->serial_weights);
  stk__gpu_arena *arena = &s->arena;
  uint8_t *base = (uint8_t *)ax0;
  const size_t y_offset = (size_t)((uint8_t *)ay0 - base);
  for (int j = 0; j < 2 * n; j++) { /* the owners' places, in order; the others point at their owner's */
    stk__gpu_axis *axis = axis_at(base, y_offset, stride, j);
    /* stk__resample_weights returns stk__resample_max_taps' count, which compute_taps planned */
    axis->taps = j % 2 ? geom[j / 2].taps_y : geom[j / 2].taps_x;
    if (keys[j].owner != j) {
      const stk__gpu_axis *owner = axis_at(base, y_offset, stride, keys[j].owner);
      axis->first = owner->first;
      axis->weights = owner->weights;
      continue;
    }
    axis->first = (const int32_t *)(arena->device + stk__gpu_arena_push(arena, (size_t)keys[j].out_size * 4));
    axis->weights =
        (const float *)(arena->device + stk__gpu_arena_push(arena, (size_t)keys[j].out_size * axis->taps * 4));
  }
  enum { CHUNK = 16 }; /* ~0.2 ms of ImageNet-sized tables an item: few items under the lock */
  axes_job job = {arena, keys, &s->resize, base, y_offset, stride, n, CHUNK};
  const int chunks = (n + CHUNK - 1) / CHUNK;
  if (s->serial_weights)
    for (int c = 0; c < chunks && st == STK_OK; c++) st = axes_chunk(&job, c, 0);
  else st = stk__parallel_for_helped(ctx, chunks, axes_chunk, &job);
  return st;
}

void stk__gpu_set_sample_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape, const char *layout) {
  t->dtype = dtype;
  t->ndim = ndim;
  size_t elements = 1;
  for (int d = 0; d < ndim; d++) {
    t->shape[d] = shape[d];
    elements *= (size_t)shape[d];
  }
  strncpy(t->layout, layout, sizeof t->layout - 1);
  t->layout[sizeof t->layout - 1] = '\0';
  t->nbytes = elements * stk_dtype_size(dtype);
  t->device = STK_DEVICE_GPU;
}

void stk__gpu_set_sample_meta(stk__tensor *t, stk_dtype dtype, int64_t d0, int64_t d1, int64_t d2, const char *layout) {
  const int64_t shape[3] = {d0, d1, d2};
  stk__gpu_set_sample_shape(t, dtype, 3, shape, layout);
}

stk_status stk__gpu_failure(const stk__batch_ctx *ctx, stk_status st, const char *what) {
  if (st != STK_OK && ctx->err && ctx->err[0] == '\0')
    stk__errorf(ctx->err, ctx->err_size, "%s failed (%s)", what, stk_strerror(st));
  return st;
}
