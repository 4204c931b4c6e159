/* src/ops/augment/warp_affine/warp.h: what `warp_affine` and `rotate` share, CPU and GPU: the
 * per-image descriptor (sizes and the destination-to-source matrix), the sampling rule, the CPU
 * reference the batched kernel (warp_kernels.cu) is tested against, and the operator frame (parse +
 * per-sample plan, as ops/common/nd_op.h's) whose plan both implementations run. C-callable from
 * .cu files. Hot path: per sample.
 *
 * Sampling (DALI's convention): output pixel (x, y) has its centre at (x + 0.5, y + 0.5); the
 * matrix m maps it to source point (sx, sy) = (m0 cx + m1 cy + m2, m3 cx + m4 cy + m5), in the same
 * pixel-centre coordinates. Nearest: pixel (floor sx, floor sy). Linear: the four pixels around
 * (sx - 0.5, sy - 0.5), weighted. A pixel outside the source reads fill_value, or, without one, the
 * nearest border pixel. Images: HWC (or FHWC sequences, every frame alike), uint8 or float32, 1..16
 * channels; output uint8 or float32
 * (`dtype`, default the input's), u8 results rounded half up and clamped. */
#ifndef STOKER_OPS_AUGMENT_WARP_AFFINE_WARP_H
#define STOKER_OPS_AUGMENT_WARP_AFFINE_WARP_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__warp_desc {
  const void *src;
  void *dst;
  int src_w, src_h, dst_w, dst_h, channels;
  int dtype;     /* stk_dtype of the input: UINT8 or FLOAT32 */
  int out_dtype; /* of the output: UINT8 or FLOAT32 (the `dtype` argument; default the input's) */
  int nearest;
  int has_fill;
  float fill;
  float m[6]; /* destination -> source, pixel-centre coordinates */
  int frames; /* an FHWC sequence's frame count (every frame warped alike), 1 for an HWC image */
} stk__warp_desc;

/* The CPU reference: one image or frame (src, dst set). */
STK_INTERNAL void stk__warp_run(const stk__warp_desc *d);

/* What every warp operator's params start with: interp_type, fill_value and dtype. */
typedef struct stk__warp_common {
  int nearest, has_fill;
  float fill;
  int out_dtype; /* -1: the input's */
} stk__warp_common;
STK_INTERNAL stk_status stk__warp_common_parse(const stk__op *op, stk__warp_common *c, char *err, size_t err_size);

/* An operator: parse (params begin with stk__warp_common), and the per-sample plan filling the
 * descriptor's sizes and matrix (the frame fills src, channels, dtype and the common fields). */
typedef stk_status (*stk__warp_plan_fn)(const stk__op *op, const void *params, stk__tensor *const *inputs,
                                        int num_inputs, stk__warp_desc *d, char *err, size_t err_size);
typedef struct stk__warp_kind {
  stk_status (*parse)(const stk__op *op, void *params, char *err, size_t err_size);
  stk__warp_plan_fn plan;
  size_t params_size;
} stk__warp_kind;

typedef struct stk__warp_state {
  const stk__warp_kind *kind;
  void *params;
} stk__warp_state;

STK_INTERNAL stk_status stk__warp_state_init(stk__warp_state *st, const stk__op *op, const stk__warp_kind *kind,
                                             char *err, size_t err_size);
/* One sample's descriptor: the input checked (HWC or FHWC, u8/float32), the plan run. */
/* Bytes of one input frame and one output frame of d. */
static inline size_t stk__warp_in_frame(const stk__warp_desc *d) {
  return (size_t)d->src_w * d->src_h * d->channels * (d->dtype == STK_DTYPE_UINT8 ? 1 : 4);
}
static inline size_t stk__warp_out_frame(const stk__warp_desc *d) {
  return (size_t)d->dst_w * d->dst_h * d->channels * (d->out_dtype == STK_DTYPE_UINT8 ? 1 : 4);
}
STK_INTERNAL stk_status stk__warp_plan_sample(const stk__op *op, const stk__warp_state *st, stk__tensor *const *inputs,
                                              int num_inputs, stk__warp_desc *d, char *err, size_t err_size);
STK_INTERNAL stk_status stk__warp_cpu_init(stk__op *op, const stk__warp_kind *kind, char *err, size_t err_size);
STK_INTERNAL void stk__warp_cpu_destroy(stk__op *op);
STK_INTERNAL stk_status stk__warp_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                             stk__tensor *const *outputs);
/* out = inverse of the 2x3 affine m; STK_EINVAL when it is singular. */
STK_INTERNAL stk_status stk__warp_invert(const double *m, double *out);

STK_INTERNAL extern const stk__warp_kind stk__warp_kind_affine; /* warp_affine.c */
STK_INTERNAL extern const stk__warp_kind stk__warp_kind_rotate; /* rotate.c */

#ifdef __cplusplus
}
#endif
#endif
