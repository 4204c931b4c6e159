/* src/ops/video/video_ffmpeg.h: FFmpeg's libraries for readers.video, loaded at run time with dlopen
 * behind one function table (like nvJPEG and NVDEC), so stoker's binaries start and the image
 * pipelines run on machines without FFmpeg; only readers.video needs it, and says so clearly.
 * The libraries are opened by the SONAME of the headers the build compiled against
 * (libavformat.so.<LIBAVFORMAT_VERSION_MAJOR>, ...), so the structure layouts match.
 *
 * Every file of the video path includes this header instead of FFmpeg's: after the table, each
 * FFmpeg function name below is a macro for its table entry, so call sites read as plain FFmpeg
 * calls. stk__ffmpeg_load must have succeeded before any of them is called (the demuxer, the
 * decoders and the readers' init call it). Not a hot path itself (one indirect call per use).
 *
 * Thread contract: stk__ffmpeg_load is thread-safe (pthread_once); the table is read-only after. */
#ifndef STOKER_OPS_CPU_VIDEO_FFMPEG_H
#define STOKER_OPS_CPU_VIDEO_FFMPEG_H

#include <stddef.h>

#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "core/op.h"

/* X(library, function): every FFmpeg function the video path calls. */
#define STK__FFMPEG_FUNCTIONS(X)                                                                                      \
  X(avutil, av_malloc)                                                                                                \
  X(avutil, av_free)                                                                                                  \
  X(avutil, av_freep) X(avutil, av_strerror) X(avutil, av_log_get_level) X(avutil, av_log_set_level)                  \
      X(avutil, av_frame_alloc) X(avutil, av_frame_free) X(avutil, av_frame_unref) X(avutil, av_dict_set) X(          \
          avutil, av_dict_free) X(avutil, av_get_pix_fmt_name) X(avcodec, av_packet_alloc) X(avcodec, av_packet_free) \
          X(avcodec, av_packet_unref) X(avcodec, av_packet_make_writable) X(avcodec, avcodec_find_decoder) X(         \
              avcodec, avcodec_get_name) X(avcodec, avcodec_alloc_context3) X(avcodec, avcodec_free_context)          \
              X(avcodec, avcodec_parameters_to_context) X(avcodec, avcodec_parameters_copy) X(avcodec, avcodec_open2) \
                  X(avcodec, avcodec_send_packet) X(avcodec, avcodec_receive_frame) X(avcodec, avcodec_flush_buffers) \
                      X(avcodec, av_bsf_get_by_name) X(avcodec, av_bsf_alloc) X(avcodec, av_bsf_init)                 \
                          X(avcodec, av_bsf_free) X(avcodec, av_bsf_flush) X(avcodec, av_bsf_send_packet)             \
                              X(avcodec, av_bsf_receive_packet) X(avformat, avformat_alloc_context)                   \
                                  X(avformat, avformat_open_input) X(avformat, avformat_close_input)                  \
                                      X(avformat, avformat_find_stream_info) X(avformat, av_find_best_stream)         \
                                          X(avformat, av_read_frame) X(avformat, av_seek_frame)                       \
                                              X(avformat, avformat_seek_file) X(avformat, avio_alloc_context)         \
                                                  X(avformat, avio_context_free) X(avformat, avio_open2)              \
                                                      X(avformat, avio_closep) X(swscale, sws_getCachedContext)       \
                                                          X(swscale, sws_setColorspaceDetails)                        \
                                                              X(swscale, sws_getCoefficients) X(swscale, sws_scale)   \
                                                                  X(swscale, sws_freeContext)

typedef struct stk__ffmpeg_api {
#define STK__FFMPEG_FIELD_(library, name) __typeof__(name) *name;
  STK__FFMPEG_FUNCTIONS(STK__FFMPEG_FIELD_)
#undef STK__FFMPEG_FIELD_
} stk__ffmpeg_api;

/* Filled by stk__ffmpeg_load; read through the macros below. */
STK_INTERNAL extern stk__ffmpeg_api stk__ffmpeg;

/* Loads libavutil, libavcodec, libavformat and libswscale once per process. STK_ENOLIB with a
 * message naming the missing library (and how to install it) when one cannot be loaded. */
STK_INTERNAL stk_status stk__ffmpeg_load(char *err, size_t err_size);

#ifndef STK__FFMPEG_NO_REDIRECT
#define av_malloc                     (stk__ffmpeg.av_malloc)
#define av_free                       (stk__ffmpeg.av_free)
#define av_freep                      (stk__ffmpeg.av_freep)
#define av_strerror                   (stk__ffmpeg.av_strerror)
#define av_log_get_level              (stk__ffmpeg.av_log_get_level)
#define av_log_set_level              (stk__ffmpeg.av_log_set_level)
#define av_frame_alloc                (stk__ffmpeg.av_frame_alloc)
#define av_frame_free                 (stk__ffmpeg.av_frame_free)
#define av_frame_unref                (stk__ffmpeg.av_frame_unref)
#define av_dict_set                   (stk__ffmpeg.av_dict_set)
#define av_dict_free                  (stk__ffmpeg.av_dict_free)
#define av_get_pix_fmt_name           (stk__ffmpeg.av_get_pix_fmt_name)
#define av_packet_alloc               (stk__ffmpeg.av_packet_alloc)
#define av_packet_free                (stk__ffmpeg.av_packet_free)
#define av_packet_unref               (stk__ffmpeg.av_packet_unref)
#define av_packet_make_writable       (stk__ffmpeg.av_packet_make_writable)
#define avcodec_find_decoder          (stk__ffmpeg.avcodec_find_decoder)
#define avcodec_get_name              (stk__ffmpeg.avcodec_get_name)
#define avcodec_alloc_context3        (stk__ffmpeg.avcodec_alloc_context3)
#define avcodec_free_context          (stk__ffmpeg.avcodec_free_context)
#define avcodec_parameters_to_context (stk__ffmpeg.avcodec_parameters_to_context)
#define avcodec_parameters_copy       (stk__ffmpeg.avcodec_parameters_copy)
#define avcodec_open2                 (stk__ffmpeg.avcodec_open2)
#define avcodec_send_packet           (stk__ffmpeg.avcodec_send_packet)
#define avcodec_receive_frame         (stk__ffmpeg.avcodec_receive_frame)
#define avcodec_flush_buffers         (stk__ffmpeg.avcodec_flush_buffers)
#define av_bsf_get_by_name            (stk__ffmpeg.av_bsf_get_by_name)
#define av_bsf_alloc                  (stk__ffmpeg.av_bsf_alloc)
#define av_bsf_init                   (stk__ffmpeg.av_bsf_init)
#define av_bsf_free                   (stk__ffmpeg.av_bsf_free)
#define av_bsf_flush                  (stk__ffmpeg.av_bsf_flush)
#define av_bsf_send_packet            (stk__ffmpeg.av_bsf_send_packet)
#define av_bsf_receive_packet         (stk__ffmpeg.av_bsf_receive_packet)
#define avformat_alloc_context        (stk__ffmpeg.avformat_alloc_context)
#define avformat_open_input           (stk__ffmpeg.avformat_open_input)
#define avformat_close_input          (stk__ffmpeg.avformat_close_input)
#define avformat_find_stream_info     (stk__ffmpeg.avformat_find_stream_info)
#define av_find_best_stream           (stk__ffmpeg.av_find_best_stream)
#define av_read_frame                 (stk__ffmpeg.av_read_frame)
#define av_seek_frame                 (stk__ffmpeg.av_seek_frame)
#define avformat_seek_file            (stk__ffmpeg.avformat_seek_file)
#define avio_alloc_context            (stk__ffmpeg.avio_alloc_context)
#define avio_context_free             (stk__ffmpeg.avio_context_free)
#define avio_open2                    (stk__ffmpeg.avio_open2)
#define avio_closep                   (stk__ffmpeg.avio_closep)
#define sws_getCachedContext          (stk__ffmpeg.sws_getCachedContext)
#define sws_setColorspaceDetails      (stk__ffmpeg.sws_setColorspaceDetails)
#define sws_getCoefficients           (stk__ffmpeg.sws_getCoefficients)
#define sws_scale                     (stk__ffmpeg.sws_scale)
#define sws_freeContext               (stk__ffmpeg.sws_freeContext)
#endif

#endif
