/* src/ops/gpu/video_nvdec_kernels.cu: NV12 -> RGB / YCbCr conversion of NVDEC's decoded surfaces,
 * written straight into frame k of a sequence [F, H, W, 3] (the sequence gather: each mapped surface
 * lands at its slot). Hot path: once per decoded frame. CPU reference: libswscale in
 * video_decode_cpu.c (tolerance in tests/test_gpu_video.c: the chroma upsampling here is bilinear
 * with MPEG-2 siting, libswscale's bicubic).
 *
 * One thread per output pixel. Luma Y at (x, y); chroma sampled at ((x - 0.5) / 2, (y - 0.5) / 2)
 * of the half-size CbCr plane, clamped at the edges. RGB: limited range (Y 16..235, C 16..240)
 * or full range, Kr/Kb = 0.299/0.114 (BT.601) or 0.2126/0.0722 (BT.709). */
#include <cuda_runtime.h>

#include "ops/gpu/video_nvdec.h"

template <typename T>
__device__ __forceinline__ T to_out(float v, float scale);
template <>
__device__ __forceinline__ unsigned char to_out<unsigned char>(float v, float) {
  return (unsigned char)fminf(fmaxf(rintf(v), 0.0f), 255.0f);
}
template <>
__device__ __forceinline__ float to_out<float>(float v, float scale) {
  return rintf(fminf(fmaxf(v, 0.0f), 255.0f)) * scale;
}

__device__ __forceinline__ float chroma_at(const unsigned char *uv, size_t pitch, int cw, int ch, float cx, float cy,
                                           int channel) {
  cx = fminf(fmaxf(cx, 0.0f), (float)(cw - 1));
  cy = fminf(fmaxf(cy, 0.0f), (float)(ch - 1));
  int x0 = (int)cx, y0 = (int)cy;
  int x1 = min(x0 + 1, cw - 1), y1 = min(y0 + 1, ch - 1);
  float fx = cx - (float)x0, fy = cy - (float)y0;
  const unsigned char *r0 = uv + (size_t)y0 * pitch, *r1 = uv + (size_t)y1 * pitch;
  float top = r0[2 * x0 + channel] * (1.0f - fx) + r0[2 * x1 + channel] * fx;
  float bottom = r1[2 * x0 + channel] * (1.0f - fx) + r1[2 * x1 + channel] * fx;
  return top * (1.0f - fy) + bottom * fy;
}

template <typename T>
__global__ void nv12_convert_kernel(const unsigned char *luma, const unsigned char *uv, size_t pitch, int width,
                                    int height, int bt709, int full_range, int ycbcr, float scale, T *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const int cw = (width + 1) / 2, ch = (height + 1) / 2;
  float Y = luma[(size_t)y * pitch + x];
  float Cb = chroma_at(uv, pitch, cw, ch, x * 0.5f, (y - 0.5f) * 0.5f, 0);
  float Cr = chroma_at(uv, pitch, cw, ch, x * 0.5f, (y - 0.5f) * 0.5f, 1);
  T *px = out + ((size_t)y * width + x) * 3;
  if (ycbcr) {
    px[0] = to_out<T>(Y, scale), px[1] = to_out<T>(Cb, scale), px[2] = to_out<T>(Cr, scale);
    return;
  }
  const float kr = bt709 ? 0.2126f : 0.299f, kb = bt709 ? 0.0722f : 0.114f, kg = 1.0f - kr - kb;
  float yn, cb, cr;
  if (full_range) yn = Y, cb = Cb - 128.0f, cr = Cr - 128.0f;
  else
    yn = (Y - 16.0f) * (255.0f / 219.0f), cb = (Cb - 128.0f) * (255.0f / 224.0f),
    cr = (Cr - 128.0f) * (255.0f / 224.0f);
  float r = yn + 2.0f * (1.0f - kr) * cr;
  float b = yn + 2.0f * (1.0f - kb) * cb;
  float g = (yn - kr * r - kb * b) / kg;
  px[0] = to_out<T>(r, scale), px[1] = to_out<T>(g, scale), px[2] = to_out<T>(b, scale);
}

extern "C" stk_status stk__video_nv12_convert(const unsigned char *nv12, size_t pitch, size_t chroma_offset, int width,
                                              int height, int bt709, int full_range, const stk__video_format *fmt,
                                              void *out, void *cuda_stream) {
  if (width <= 0 || height <= 0) return STK_EINVAL;
  dim3 block(32, 8), grid((unsigned)(width + 31) / 32, (unsigned)(height + 7) / 8);
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  const int ycbcr = fmt->image_type == STK__VIDEO_YCBCR;
  if (fmt->as_float)
    nv12_convert_kernel<float><<<grid, block, 0, stream>>>(nv12, nv12 + chroma_offset, pitch, width, height, bt709,
                                                           full_range, ycbcr, fmt->normalized ? 1.0f / 255.0f : 1.0f,
                                                           (float *)out);
  else
    nv12_convert_kernel<unsigned char><<<grid, block, 0, stream>>>(
        nv12, nv12 + chroma_offset, pitch, width, height, bt709, full_range, ycbcr, 1.0f, (unsigned char *)out);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}
