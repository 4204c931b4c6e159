/* src/ops/video/video_nvdec.h: readers.video's GPU decode -- one sequence of one file decoded by NVDEC
 * (the driver's libnvcuvid.so.1, src/device/nvcuvid_loader.h) into device memory [F, H, W, 3],
 * with the same frame selection and output formats as the CPU path (video_decode_cpu.h).
 * Hot path: stk__video_nvdec_decode_sequence (per sample). In a build without CUDA every function
 * returns STK_ENOTSUP (video_nvdec_nocuda.c).
 *
 * Demux and seeking reuse the CPU side (video_demux.h: the start-up index, keyframe seeks); H.264
 * and HEVC in MP4/MKV go through libavcodec's h264_mp4toannexb / hevc_mp4toannexb filters for
 * NVDEC's parser. Codecs: H.264, HEVC, VP8, VP9, AV1, MPEG-4 part 2, MPEG-2 (8-bit 4:2:0; what the
 * GPU's NVDEC supports is asked with cuvidGetDecoderCaps). The colour conversion (NV12 to RGB/YCbCr,
 * uint8/float) is a CUDA kernel (video_nvdec_kernels.cu) doing the CPU path's integer arithmetic
 * (ops/video/video_color.h): the decoded pictures are identical, so the outputs equal the CPU
 * path's byte for byte (src/ops/video/test_gpu_video.c).
 *
 * Thread contract: a session belongs to one thread at a time. */
#ifndef STOKER_OPS_GPU_VIDEO_NVDEC_H
#define STOKER_OPS_GPU_VIDEO_NVDEC_H

#ifdef __cplusplus
extern "C" { /* the C headers below (and libavcodec's) have no C++ guards of their own */
#endif

#include "ops/video/video_color.h"
#include "ops/video/video_decode_cpu.h"

typedef struct stk__video_nvdec stk__video_nvdec;

/* A session on CUDA device `device_id`. STK_ENOLIB with the reason when the driver has no NVDEC
 * library, STK_ENOTSUP in a build without CUDA. */
STK_INTERNAL stk_status stk__video_nvdec_new(int device_id, stk__video_nvdec **out, char *err, size_t err_size);
STK_INTERNAL void stk__video_nvdec_free(stk__video_nvdec *session);
/* Decodes span's frames into device memory `out` (count frames of H x W x 3 as fmt says), on
 * `cuda_stream` (a cudaStream_t); returns when the frames are written. Errors name the file. */
STK_INTERNAL stk_status stk__video_nvdec_decode_sequence(stk__video_nvdec *session, const stk__video_span *span,
                                                         const stk__video_format *fmt, void *out, void *cuda_stream,
                                                         char *err, size_t err_size);

/* NV12 (luma rows, then interleaved CbCr rows at luma + chroma_offset, both `pitch` bytes apart) of
 * width x height to out (height x width x 3, uint8 or float as fmt says; RGB with `color`'s matrix,
 * range and chroma siting, or YCbCr as stored), on `cuda_stream`. */
STK_INTERNAL stk_status stk__video_nv12_convert(const unsigned char *nv12, size_t pitch, size_t chroma_offset,
                                                int width, int height, const stk__video_color *color,
                                                const stk__video_format *fmt, void *out, void *cuda_stream);

#ifdef __cplusplus
}
#endif

#endif
