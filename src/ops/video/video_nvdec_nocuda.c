/* src/ops/video/video_nvdec_nocuda.c: the NVDEC path of readers.video in a build without CUDA --
 * every entry of video_nvdec.h says it is not built (the CUDA build compiles video_nvdec.cu and
 * video_nvdec_kernels.cu instead). Not a hot path. */
#if !defined(STOKER_HAVE_CUDA)
#include "ops/video/video_nvdec.h"

stk_status stk__video_nvdec_new(int device_id, stk__video_nvdec **out, char *err, size_t err_size) {
  *out = NULL;
  stk__errorf(err, err_size, "readers.video on the GPU: this stoker was built without CUDA");
  return STK_ENOTSUP;
}

void stk__video_nvdec_free(stk__video_nvdec *session) {}

stk_status stk__video_nvdec_decode_sequence(stk__video_nvdec *session, const stk__video_span *span,
                                            const stk__video_format *fmt, void *out, void *cuda_stream, char *err,
                                            size_t err_size) {
  stk__errorf(err, err_size, "readers.video on the GPU: this stoker was built without CUDA");
  return STK_ENOTSUP;
}

stk_status stk__video_nv12_convert(const unsigned char *nv12, size_t pitch, size_t chroma_offset, int width, int height,
                                   const stk__video_color *color, const stk__video_format *fmt, void *out,
                                   void *cuda_stream) {
  return STK_ENOTSUP;
}
#endif
