/* src/ops/common/image_gpu.h: what the GPU implementations of the image operators share
 * (resize_gpu.cu, cmn_gpu.cu, fused_resize_cmn_gpu.cu; helpers in image_gpu.cu): the operator
 * state (the operators' parameters, parsed by the same src/ops/common/ functions as the CPU
 * implementations, plus the upload arena), the per-sample geometry a batch is planned into, and the
 * batch helpers. Per batch, on the GPU stage thread: geometry and random windows are decided on
 * the host with the CPU operators' own functions, resampling weights are the CPU reference's
 * tables (stk__resample_weights), everything goes into one pinned upload arena, one
 * cudaMemcpyAsync, and ONE kernel processes the batch. Included by .cu files only. Hot path;
 * allocations only when a batch needs more room than any before (grow-only, counted).
 *
 * Inputs: a GPU tensor list of HWC u8 images (shape [H, W, C], packed rows) or, for resize,
 * crop_mirror_normalize and the fused node, FHWC u8 sequences ([F, H, W, C]: planned frame by frame,
 * every frame of a sample alike). Outputs: a GPU tensor list; resize/random_resized_crop write HWC
 * (FHWC) u8, crop_mirror_normalize and the fused node write CHW/HWC (FCHW/CFHW/FHWC)
 * float/float16/uint8 as the crop_mirror_normalize arguments say. Messages carry no
 * operator name: the engine adds it. */
#ifndef STOKER_OPS_GPU_IMAGE_GPU_H
#define STOKER_OPS_GPU_IMAGE_GPU_H

#include "ops/common/kernels.h"
extern "C" {
#include "device/device.h"
#include "ops/common/axis_tables.h"
#include "ops/augment/crop_mirror_normalize/cmn_params.h"
#include "ops/augment/random_resized_crop/random_resized_crop_params.h"
#include "ops/augment/resize/resize_params.h"
}
#include "ops/common/gpu_ops.h"

extern "C" {

/* The geometry of one image of a batch: a sample, or one frame of an FHWC sequence sample (a batch
 * of N sequences of F frames is planned as N*F images, each frame of a sample alike). */
typedef struct stk__gpu_sample_geom {
  int sample, frame;    /* index of the sample in the batch, and of the frame in it (0 for an image) */
  int frames, sequence; /* the sample's frame count; 1 when it is an FHWC sequence */
  const uint8_t *src;
  int src_w, src_h, channels;
  double roi[4];    /* source interval that is resized: x0, y0, x1, y1 (fractional with subpixel_scale) */
  int out_w, out_h; /* resized size */
  int taps_x, taps_y;
  stk__window crop; /* crop_mirror_normalize part (fused / cmn) */
  int mirror;
  void *dst;    /* where the image's output starts (crop_mirror_normalize / fused) */
  size_t plane; /* elements between its channel planes (CHW-style layouts) */
} stk__gpu_sample_geom;

/* The resize step of resize, random_resized_crop and the fused node. */
typedef struct stk__gpu_resize_step {
  int random_crop; /* 1: random_resized_crop's window and size; 0: resize's size rules */
  stk__resize_op_params resize;
  stk__random_resized_crop_params crop;
  stk__interp interp;
  int antialias;
} stk__gpu_resize_step;

typedef struct stk__gpu_image_state {
  stk__gpu_arena arena;
  int numa_node;
  stk__gpu_resize_step resize; /* resize, random_resized_crop, fused */
  stk__cmn_params cmn;         /* crop_mirror_normalize, fused */
  stk__gpu_sample_geom *geom;
  int geom_capacity;
  int serial_weights;           /* STOKER_GPU_SERIAL_WEIGHTS=1: weight tables on the GPU stage alone (A/B) */
  int fused_blocks;             /* the fused kernel's looping blocks (0: one a tile); STOKER_FUSED_BLOCKS */
  int fused_launches;           /* the fused kernel's launches a batch (1); STOKER_FUSED_SPLIT */
  int fixed_w, fixed_h;         /* the resize step's output size where its arguments fix it, else 0 (install) */
  stk__axis_tables axis_tables; /* stk__gpu_push_axes_batch's: which axes share a table (grow-only) */
} stk__gpu_image_state;

/* A new state on the op's device (options->device_id), NUMA node looked up. */
STK_INTERNAL stk_status stk__gpu_image_state_new(stk__op *op, char *err, size_t err_size, stk__gpu_image_state **out);
STK_INTERNAL void stk__gpu_image_state_destroy(stk__op *op);
/* The resize step's parameters, parsed by the operator's own parse (src/ops/common/). */
STK_INTERNAL stk_status stk__gpu_resize_step_get(const stk__op *op, stk__gpu_resize_step *out, char *err,
                                                 size_t err_size);

/* count zeroed geometry entries (grow-only, counted), or NULL. */
STK_INTERNAL stk__gpu_sample_geom *stk__gpu_geom_get(stk__gpu_image_state *s, int count, uint64_t *alloc_count);
/* The file sample i came from (for messages), and its dataset sample id (RNG key). */
STK_INTERNAL const char *stk__gpu_sample_source(const stk__batch_ctx *ctx, int i);
STK_INTERNAL int64_t stk__gpu_sample_id(const stk__batch_ctx *ctx, int i);
/* The number of images of a GPU list of HWC u8 images and FHWC u8 sequences (its frames), or -1
 * with a message in ctx->err when a sample is neither. */
STK_INTERNAL int stk__gpu_count_frames(const stk__batch_ctx *ctx, const stk__tensor_list *in);
/* Fills sample/frame/src/size/channels of each image (one entry per frame) of a checked list. */
STK_INTERNAL void stk__gpu_read_sources(const stk__tensor_list *in, stk__gpu_sample_geom *geom);
STK_INTERNAL stk_status stk__gpu_check_same_channels(const stk__batch_ctx *ctx, const stk__gpu_sample_geom *geom,
                                                     int n);
/* The resize step's output size and source interval per image (roi, out_w, out_h); count images. */
STK_INTERNAL stk_status stk__gpu_plan_resize(const stk__op *op, const stk__gpu_resize_step *r,
                                             const stk__batch_ctx *ctx, stk__gpu_sample_geom *geom, int count);
/* Tap counts of a planned sample, and the arena bytes its two axis tables need. */
STK_INTERNAL size_t stk__gpu_compute_taps(stk__gpu_sample_geom *g, const stk__gpu_resize_step *r);
/* The x/y weight tables of a batch's n samples into the arena, the axes pointed at their device
 * copies. Axes with the same key share one table, made once (ops/common/axis_tables.h). The
 * owners' places are reserved in order on this thread, their weights computed on the worker pool
 * in chunks of 16 samples (stk__parallel_for_helped: this thread computes chunks too). Sample i's
 * axes are at ax0 and ay0 plus i * stride bytes (the descriptors' x and y). The weights cost a few
 * milliseconds a batch of 256 ImageNet-sized images on one thread, and the GPU stage that makes
 * them is passed by every batch in order: on one thread they were most of the fused node's time.
 * STOKER_GPU_SERIAL_WEIGHTS=1: every axis its own table, made on this thread alone (an A/B). */
STK_INTERNAL stk_status stk__gpu_push_axes_batch(stk__batch_ctx *ctx, stk__gpu_image_state *s,
                                                 const stk__gpu_sample_geom *geom, int n, stk__gpu_axis *ax0,
                                                 stk__gpu_axis *ay0, size_t stride);
/* Sets dtype/shape/layout/nbytes of one output sample on the GPU: any ndim (shape), or 3-D (d0..d2). */
STK_INTERNAL void stk__gpu_set_sample_shape(stk__tensor *t, stk_dtype dtype, int ndim, const int64_t *shape,
                                            const char *layout);
STK_INTERNAL void stk__gpu_set_sample_meta(stk__tensor *t, stk_dtype dtype, int64_t d0, int64_t d1, int64_t d2,
                                           const char *layout);
/* st, with "<what> failed (<status>)" in ctx->err when it is an error and nothing was said yet. */
STK_INTERNAL stk_status stk__gpu_failure(const stk__batch_ctx *ctx, stk_status st, const char *what);

/* crop_mirror_normalize's batch steps (cmn_gpu.cu), shared with the fused node. */
STK_INTERNAL stk_status stk__gpu_cmn_normalize(const stk__cmn_params *c, int channels, stk__gpu_normalize *n,
                                               const stk__batch_ctx *ctx);
/* Crop and mirror of image geom->sample (w x h), into geom->crop / geom->mirror; the output
 * layout checked against the input kind (image or sequence). */
STK_INTERNAL stk_status stk__gpu_cmn_sample(const stk__op *cmn, const stk__cmn_params *c, const stk__batch_ctx *ctx,
                                            stk__tensor_list *const *inputs, int w, int h, stk__gpu_sample_geom *g);
/* Reserves the output samples (n images in geom, one entry per frame) and sets their shapes
 * (stk__cmn_output_shape, as on the CPU); each image's geom->dst and geom->plane. in_w x in_h: a
 * size every input image has whatever the data (the fused node's resize to a fixed size), 0 when
 * none; with it, or with crop in both dimensions, the storage is sized exactly (no headroom). */
STK_INTERNAL stk_status stk__gpu_cmn_reserve_output(const stk__batch_ctx *ctx, stk__tensor_list *out,
                                                    const stk__cmn_params *c, stk__gpu_sample_geom *geom, int n,
                                                    const stk__gpu_normalize *norm, int in_w, int in_h, int *max_w,
                                                    int *max_h);
/* The fused resize -> crop_mirror_normalize batch (fused_resize_cmn_gpu.cu) on state s (both steps
 * installed): `first` holds the resize arguments (resize or random_resized_crop: its id keys the
 * random windows), `cmn` the crop and mirror ones (its mirror input's slot indexes inputs). Also
 * run by resize_crop_mirror, which is both. */
STK_INTERNAL stk_status stk__gpu_fused_resize_cmn_run(stk__gpu_image_state *s, const stk__op *first,
                                                      const stk__op *cmn, stk__batch_ctx *ctx,
                                                      stk__tensor_list *const *inputs,
                                                      stk__tensor_list *const *outputs);
/* 1 with that size when every image the resize step makes has the same size whatever the data
 * (random_resized_crop's size; resize's stk__resize_fixed_size), 0 otherwise. */
STK_INTERNAL int stk__gpu_resize_fixed_size(const stk__gpu_resize_step *r, int *w, int *h);

} /* extern "C" */
#endif
