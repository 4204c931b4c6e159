/* src/ops/common/nd_copy.h: the one data movement behind the geometry operators that only move
 * elements (flip, transpose, crop, slice, pad, paste, erase, reshape, squeeze, expand_dims, cat,
 * stack): an N-D strided copy with fill. Each output element of a part (one region of one sample's
 * output) reads one input element, or a fill value where the input coordinate falls outside the
 * input (crop/slice/pad/paste) or the element lies inside an erase box. Every operator's plan
 * (stk__nd_plan, ops/common/nd_op.h) describes its sample as parts; the CPU reference here and the
 * batched CUDA kernel (nd_copy_kernels.cu) run the same descriptors, so the GPU is tested against
 * this file. Any dtype: elements are moved as raw bytes of elem_size 1, 2, 4 or 8. C-callable from
 * .cu files. Hot path: per sample. */
#ifndef STOKER_OPS_COMMON_ND_COPY_H
#define STOKER_OPS_COMMON_ND_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__ND_DIMS  6  /* STK_MAX_DIMS */
#define STK__ND_FILLS 16 /* fill values one per channel, at most */

/* One part: output element at index o (o[d] in [0, shape[d])) is written at
 *   dst + (dst_offset + sum_d o[d] * dst_stride[d]) * elem_size
 * and reads input coordinate c[d] = src_start[d] + step[d] * o[d] at
 *   src + (sum_d c[d] * src_stride[d]) * elem_size
 * unless some c[d] lies outside [0, src_extent[d]) or o lies inside one of the erase boxes: then it
 * gets fill[fill_dim < 0 ? 0 : o[fill_dim] % fill_count] (raw bytes of the output dtype). A
 * dimension with no input counterpart (a new axis) has src_stride 0, src_start 0, src_extent 1. */
typedef struct stk__nd_copy {
  const void *src;
  void *dst; /* the sample's output base; dst_offset counts from it */
  int64_t dst_offset;
  int64_t shape[STK__ND_DIMS];
  int64_t dst_stride[STK__ND_DIMS];
  int64_t src_stride[STK__ND_DIMS];
  int64_t src_start[STK__ND_DIMS];
  int64_t src_extent[STK__ND_DIMS];
  int32_t step[STK__ND_DIMS]; /* +1, or -1 (flip) */
  int ndim, elem_size;
  int fill_dim, fill_count;
  uint64_t fill[STK__ND_FILLS];
  const int64_t *boxes; /* num_boxes x ndim x {lo, hi}: half-open, in the part's output coordinates */
  int num_boxes;
  int inside32; /* the GPU kernel's 32-bit no-fill loop may run it (stk__nd_inside32; 0: the checking loop) */
} stk__nd_copy;

/* The part's element count (product of shape; 1 for ndim 0). */
STK_INTERNAL int64_t stk__nd_count(const stk__nd_copy *c);

/* Sets c to copy the whole of a packed tensor of `ndim` extents `shape` into a packed output of
 * the same shape (identity: strides packed, starts 0, extents = shape, step +1, no fill, no boxes). */
STK_INTERNAL void stk__nd_identity(stk__nd_copy *c, int ndim, const int64_t *shape, int elem_size);

/* Packed (row-major) strides, in elements, of `shape`. */
STK_INTERNAL void stk__nd_packed_strides(int ndim, const int64_t *shape, int64_t *strides);

/* Merges c's adjacent dimensions where the part is one run over both (an HWC crop or pad keeps each
 * row of pixels whole: H, W, C becomes H, W x C), so a kernel unravels fewer dimensions per element.
 * Writes and reads exactly the same elements as before (tests/test_nd_copy.c checks it). */
STK_INTERNAL void stk__nd_coalesce(stk__nd_copy *c);

/* Whether every element of c reads the input (no erase boxes; in every dimension the coordinates
 * start + step * o, o in [0, shape), lie in [0, extent)) with strides >= 0 and its element count
 * and both largest offsets under 2^31: then the GPU kernel copies it in 32-bit unsigned arithmetic
 * without a fill check per element. Host side, once a part (the GPU run sets c->inside32 from it). */
STK_INTERNAL int stk__nd_inside32(const stk__nd_copy *c);

/* The GPU kernel's own loops (nd_copy_kernels.cu) run on the host, thread by thread of a grid of
 * `threads`, over host memory: what the kernel computes for part c, element for element, so the
 * CPU tests check its index arithmetic (tests cannot run the kernel without a GPU). CUDA builds
 * only (STOKER_HAVE_CUDA); not on a hot path. */
STK_INTERNAL void stk__nd_copy_emulate(const stk__nd_copy *c, int threads);

/* The CPU reference: runs one part (src, dst set). */
STK_INTERNAL void stk__nd_copy_run(const stk__nd_copy *c);

/* Raw bytes of `value` in `dtype` (rounded to nearest, saturated for integers; float16 to nearest
 * even), for stk__nd_copy.fill. */
STK_INTERNAL uint64_t stk__nd_fill_bits(double value, stk_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
