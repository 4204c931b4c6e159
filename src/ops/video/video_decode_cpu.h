/* src/ops/video/video_decode_cpu.h: readers.video's CPU decode -- one sequence of frames of one file
 * decoded with libavcodec's software decoders and converted with libswscale into [F, H, W, C].
 * Hot path: stk__video_cpu_decode_sequence runs once per sample on a worker thread.
 *
 * A decoder session belongs to one worker thread and keeps its file open between samples: a
 * sequence that starts after the last frame it decoded, with no keyframe in between, is decoded by
 * reading on (sequential reads never seek); otherwise it seeks to the last keyframe at or before
 * the sequence's first frame (from the file's index, video_demux.h) and decodes from there. */
#ifndef STOKER_OPS_CPU_VIDEO_DECODE_CPU_H
#define STOKER_OPS_CPU_VIDEO_DECODE_CPU_H

#include "ops/video/video_demux.h"

typedef enum stk__video_image_type { STK__VIDEO_RGB = 0, STK__VIDEO_YCBCR = 1 } stk__video_image_type;

/* How decoded frames are written. */
typedef struct stk__video_format {
  stk__video_image_type image_type; /* RGB (full range, the stream's colour matrix) or YCbCr (the
                                       stream's own values, chroma upsampled to full size) */
  int as_float;                     /* 0: uint8; 1: float32 */
  int normalized;                   /* float only: values / 255 (in [0, 1]) instead of [0, 255] */
} stk__video_format;

/* Where the frames of one sample come from: frames first + k * stride, k = 0 .. count - 1. */
typedef struct stk__video_span {
  int64_t file_id; /* identifies the file for the session's reuse */
  const char *path;
  const stk__video_index *index;
  int64_t first, stride;
  int count;
} stk__video_span;

typedef struct stk__video_cpu_decoder stk__video_cpu_decoder;

/* threads: libavcodec threads of this session (>= 1). */
STK_INTERNAL stk_status stk__video_cpu_decoder_new(int threads, stk__video_cpu_decoder **out);
STK_INTERNAL void stk__video_cpu_decoder_free(stk__video_cpu_decoder *decoder);

/* Decodes span's frames into out: count frames of H x W x 3 (index->height, index->width), uint8
 * or float as fmt says, contiguous. Errors (STK_EBADIMAGE with the file and the reason): a frame
 * the decoder reports corrupt, a decode error, a frame that never comes (truncated file), a
 * picture size that changes mid-stream. The session is reset after an error. */
STK_INTERNAL stk_status stk__video_cpu_decode_sequence(stk__video_cpu_decoder *decoder, const stk__video_span *span,
                                                       const stk__video_format *fmt, void *out, char *err,
                                                       size_t err_size);

#endif
