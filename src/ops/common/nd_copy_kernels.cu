/* src/ops/common/nd_copy_kernels.cu: the batched N-D strided copy with fill (nd_copy.h) on the GPU:
 * one launch for every part of a batch, grid (blocks over the largest part's elements, parts);
 * each thread takes output elements of its part in a grid-stride loop, unravels the index over the
 * part's shape (row-major), reads its input element or writes the fill value (outside the input,
 * or inside an erase box). Elements are moved as raw 1/2/4/8-byte words, so every dtype is exact:
 * the GPU test (tests/test_gpu_geometry.c) asks for the same bytes as the CPU reference
 * (nd_copy.c). Hot path. */
#include <cuda_runtime.h>
#include <string.h>

#include "ops/common/nd_gpu.h"

/* The loops below also run on the host (stk__nd_copy_emulate): unrolled on the device only. */
#ifdef __CUDA_ARCH__
#define STK_UNROLL _Pragma("unroll")
#else
#define STK_UNROLL
#endif

static const int kThreads = 256;
/* Elements a thread takes in its grid-stride loop where the grid still fills the GPU: each thread
 * first reads its part's descriptor into registers (nd_copy_inside), work that one byte of a flip
 * does not pay for. */
static const int kPerThread = 8;
static const int64_t kMinBlocks = 2048; /* the grid's blocks, at least (16 a multiprocessor on 128) */

/* A part that may write fill (an input coordinate outside the input, or erase boxes): each element
 * checks. I: the index type of the unravel -- 32-bit for parts under 2^31 elements (the common
 * case: 64-bit division is many instructions on the GPU), 64-bit otherwise. */
template <typename T, typename I>
__host__ __device__ static void nd_copy_filled(const stk__nd_copy &d, int64_t count, int64_t first, int64_t step) {
  const int nd = d.ndim;
  for (I i = (I)first; (int64_t)i < count; i += (I)step) {
    int64_t dst_at = d.dst_offset, src_at = 0, o[STK__ND_DIMS];
    I rest = i;
    bool fill = false;
    for (int k = nd - 1; k >= 0; k--) {
      const I extent = (I)d.shape[k];
      o[k] = (int64_t)(rest % extent);
      rest /= extent;
      const int64_t coord = d.src_start[k] + d.step[k] * o[k];
      fill = fill || coord < 0 || coord >= d.src_extent[k];
      dst_at += o[k] * d.dst_stride[k];
      src_at += coord * d.src_stride[k];
    }
    for (int b = 0; !fill && b < d.num_boxes; b++) {
      const int64_t *box = d.boxes + (size_t)b * nd * 2;
      bool inside = true;
      for (int k = 0; inside && k < nd; k++) inside = o[k] >= box[2 * k] && o[k] < box[2 * k + 1];
      fill = inside;
    }
    T value;
    if (fill) {
      const int f = d.fill_dim < 0 || d.fill_count <= 1 ? 0 : (int)(o[d.fill_dim] % d.fill_count);
      memcpy(&value, &d.fill[f], sizeof value); /* the fill's first bytes (nd_copy.h) */
    } else {
      value = ((const T *)d.src)[src_at];
    }
    ((T *)d.dst)[dst_at] = value;
  }
}

/* A part every element of which reads the input (no coordinate outside it, no erase boxes: flips,
 * transposes, in-bounds crops and slices, cat, stack): the descriptor read once into registers (the
 * loop unrolled over STK__ND_DIMS keeps its arrays there), the step folded into the input stride.
 * I (unsigned) carries the index and both offsets: its arithmetic is modular, so a flip's negative
 * stride still lands on the true offset, which stk__nd_inside32 checked fits I on the host (other
 * parts take nd_copy_filled's loop). */
template <typename T, typename I>
__host__ __device__ static void nd_copy_inside(const stk__nd_copy &d, int64_t count, int64_t first, int64_t step) {
  const int nd = d.ndim;
  I shape[STK__ND_DIMS], dst_stride[STK__ND_DIMS], src_stride[STK__ND_DIMS], src_base = 0;
STK_UNROLL
  for (int k = 0; k < STK__ND_DIMS; k++) {
    shape[k] = k < nd ? (I)d.shape[k] : (I)1;
    dst_stride[k] = k < nd ? (I)d.dst_stride[k] : (I)0;
    src_stride[k] = k < nd ? (I)((int64_t)d.step[k] * d.src_stride[k]) : (I)0;
    src_base += k < nd ? (I)(d.src_start[k] * d.src_stride[k]) : (I)0;
  }
  const T *src = (const T *)d.src;
  T *dst = (T *)d.dst + d.dst_offset;
  for (I i = (I)first; i < (I)count; i += (I)step) {
    I dst_at = 0, src_at = src_base, rest = i;
STK_UNROLL
    for (int k = STK__ND_DIMS - 1; k >= 0; k--) {
      if (k < nd) {
        const I q = rest / shape[k], o = rest - q * shape[k];
        rest = q;
        dst_at += o * dst_stride[k];
        src_at += o * src_stride[k];
      }
    }
    dst[dst_at] = src[src_at];
  }
}

/* Thread `first` of `step` (its index in the grid and the grid's size) copies its share of part d. */
template <typename T>
__host__ __device__ static void nd_copy_part(const stk__nd_copy &d, int64_t count, int64_t first, int64_t step) {
  if (d.inside32) { /* decided on the host, once a part (stk__nd_inside32) */
    nd_copy_inside<T, uint32_t>(d, count, first, step);
  } else if (count < (1ll << 31)) {
    nd_copy_filled<T, uint32_t>(d, count, first, step);
  } else {
    nd_copy_filled<T, int64_t>(d, count, first, step);
  }
}

/* Part d's element size picks T. */
__host__ __device__ static void nd_copy_any(const stk__nd_copy &d, int64_t first, int64_t step) {
  int64_t n = 1;
  for (int k = 0; k < d.ndim; k++) n *= d.shape[k];
  switch (d.elem_size) {
    case 1:
      nd_copy_part<uint8_t>(d, n, first, step);
      break;
    case 2:
      nd_copy_part<uint16_t>(d, n, first, step);
      break;
    case 4:
      nd_copy_part<uint32_t>(d, n, first, step);
      break;
    default:
      nd_copy_part<unsigned long long>(d, n, first, step);
      break;
  }
}

__global__ void stk_nd_copy_kernel(const stk__nd_copy *__restrict__ descs, int count) {
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
  for (int p = blockIdx.y; p < count; p += gridDim.y) nd_copy_any(descs[p], first, step);
}

extern "C" void stk__nd_copy_emulate(const stk__nd_copy *d, int threads) {
  for (int t = 0; t < threads; t++) nd_copy_any(*d, t, threads);
}

extern "C" stk_status stk__gpu_nd_copy_batch(const stk__nd_copy *descs_device, int count, int64_t max_elements,
                                             cudaStream_t stream) {
  if (count <= 0 || max_elements <= 0) return STK_OK;
  const int64_t rows = count < 65535 ? count : 65535;
  const int64_t one_each = (max_elements + kThreads - 1) / kThreads; /* blocks for one element a thread */
  int64_t blocks = (max_elements + (int64_t)kThreads * kPerThread - 1) / ((int64_t)kThreads * kPerThread);
  if (blocks * rows < kMinBlocks) blocks = (kMinBlocks + rows - 1) / rows; /* few or small parts */
  if (blocks > one_each) blocks = one_each;
  if (blocks > 4096) blocks = 4096; /* the grid-stride loop covers the rest */
  dim3 grid((unsigned)blocks, (unsigned)rows);
  stk_nd_copy_kernel<<<grid, kThreads, 0, stream>>>(descs_device, count);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}
