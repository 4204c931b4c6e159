/* src/ops/video/video_nvdec_kernels.cu: NV12 -> RGB / YCbCr conversion of NVDEC's decoded surfaces,
 * written straight into frame k of a sequence [F, H, W, 3] (the sequence gather: each mapped surface
 * lands at its slot). Hot path: once per decoded frame. One thread per output pixel; the arithmetic
 * (integer: bilinear chroma at the stream's siting, Q16 colour matrix) is the CPU path's own
 * (ops/video/video_color.h), so both paths give the same bytes (src/ops/video/test_gpu_video.c). */
#include <cuda_runtime.h>

#include "ops/video/video_color.h"
#include "ops/video/video_nvdec.h"

__device__ __forceinline__ int32_t chroma16(const unsigned char *uv, size_t pitch, int cw, int ch,
                                            const stk__video_color &c, int x, int y, int channel) {
  int x0, x1, wx, y0, y1, wy;
  stk__video_chroma_tap(x, c.h_pos2, cw, &x0, &x1, &wx);
  stk__video_chroma_tap(y, c.v_pos2, ch, &y0, &y1, &wy);
  const unsigned char *r0 = uv + (size_t)y0 * pitch, *r1 = uv + (size_t)y1 * pitch;
  int32_t top = r0[2 * x0 + channel] * (4 - wx) + r0[2 * x1 + channel] * wx;
  int32_t bottom = r1[2 * x0 + channel] * (4 - wx) + r1[2 * x1 + channel] * wx;
  return top * (4 - wy) + bottom * wy;
}

template <typename T>
__global__ void nv12_convert_kernel(const unsigned char *luma, const unsigned char *uv, size_t pitch, int width,
                                    int height, stk__video_color c, int rgb, float scale, T *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const int cw = (width + 1) / 2, ch = (height + 1) / 2;
  uint8_t px[3];
  stk__video_pixel(c, luma[(size_t)y * pitch + x], chroma16(uv, pitch, cw, ch, c, x, y, 0),
                   chroma16(uv, pitch, cw, ch, c, x, y, 1), rgb, px);
  T *o = out + ((size_t)y * width + x) * 3;
  if (sizeof(T) == 1) o[0] = (T)px[0], o[1] = (T)px[1], o[2] = (T)px[2];
  else o[0] = (T)(px[0] * scale), o[1] = (T)(px[1] * scale), o[2] = (T)(px[2] * scale);
}

extern "C" stk_status stk__video_nv12_convert(const unsigned char *nv12, size_t pitch, size_t chroma_offset, int width,
                                              int height, const stk__video_color *color, const stk__video_format *fmt,
                                              void *out, void *cuda_stream) {
  if (width <= 0 || height <= 0) return STK_EINVAL;
  dim3 block(32, 8), grid((unsigned)(width + 31) / 32, (unsigned)(height + 7) / 8);
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  const int rgb = fmt->image_type != STK__VIDEO_YCBCR;
  if (fmt->as_float)
    nv12_convert_kernel<float><<<grid, block, 0, stream>>>(nv12, nv12 + chroma_offset, pitch, width, height, *color,
                                                           rgb, fmt->normalized ? 1.0f / 255.0f : 1.0f, (float *)out);
  else
    nv12_convert_kernel<unsigned char><<<grid, block, 0, stream>>>(nv12, nv12 + chroma_offset, pitch, width, height,
                                                                   *color, rgb, 1.0f, (unsigned char *)out);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}
