/* src/ops/video/video_demux.h: the container side of readers.video, shared by the CPU decoder
 * (video_decode_cpu.c) and the NVDEC path (src/ops/gpu/video_nvdec*.cu): opening a file (or a
 * memory buffer) with libavformat, the per-file frame index built once at start-up, and keyframe
 * seeking. Not a hot path except stk__video_demuxer_read (once per packet).
 *
 * Frames are numbered in presentation order: frame i is the video stream's packet with the i-th
 * smallest timestamp (pts, or dts where the container has no pts). The index keeps every frame's
 * timestamp and whether it is a keyframe, so a sequence starting at frame i is decoded from the
 * last keyframe at or before i (stk__video_index_keyframe_before), never from the file's start.
 *
 * Thread contract: an index is read-only after stk__video_index_build and may be shared by every
 * thread; a demuxer belongs to one thread at a time. */
#ifndef STOKER_OPS_CPU_VIDEO_DEMUX_H
#define STOKER_OPS_CPU_VIDEO_DEMUX_H

#include <stddef.h>
#include <stdint.h>

#include "ops/video/video_ffmpeg.h"

/* What start-up learned about one file. */
typedef struct stk__video_index {
  int width, height; /* coded picture size from the container (decoders confirm it) */
  enum AVCodecID codec_id;
  int64_t num_frames;
  int64_t *pts;       /* num_frames timestamps, ascending (presentation order); owned */
  int64_t *key_dts;   /* per keyframe (num_keyframes): the decode timestamp to seek to; owned */
  int64_t *key_frame; /* per keyframe: its frame number (ascending); owned */
  int64_t num_keyframes;
  AVRational time_base;    /* of pts / key_dts */
  double frame_rate;       /* frames per second from the (constant) frame spacing */
  int variable_frame_rate; /* 1: frame spacing is not constant (refused unless skip_vfr_check) */
} stk__video_index;

typedef struct stk__video_demuxer stk__video_demuxer;

/* Opens `path` (or, when path is NULL, the memory buffer data[0..size), not copied: it must
 * outlive the demuxer) and selects its best video stream. `name` is the file named in messages.
 * Errors: STK_ENOENT/STK_EIO (cannot open), STK_EBADIMAGE (not a container libavformat reads, no
 * video stream, a codec this FFmpeg cannot decode); the message names the file and the reason. */
STK_INTERNAL stk_status stk__video_demuxer_open(const char *path, const uint8_t *data, size_t size, const char *name,
                                                stk__video_demuxer **out, char *err, size_t err_size);
STK_INTERNAL void stk__video_demuxer_free(stk__video_demuxer *demuxer);
/* The video stream's codec parameters (borrowed, lives as long as the demuxer). */
STK_INTERNAL const AVCodecParameters *stk__video_demuxer_codecpar(const stk__video_demuxer *demuxer);
/* 1 when a seek to an HEVC keyframe starts decoding at that keyframe (a CRA read as a BLA; the
 * default, STOKER_HEVC_CRA_START=0 turns it off), 0 otherwise. */
STK_INTERNAL int stk__video_demuxer_starts_at_cra(const stk__video_demuxer *demuxer);
/* Next packet of the video stream into pkt (unreferenced by the caller after use). Returns
 * STK_OK, STK_EOF_EPOCH at the end of the stream, STK_EBADIMAGE on a read error (message). */
STK_INTERNAL stk_status stk__video_demuxer_read(stk__video_demuxer *demuxer, AVPacket *pkt, char *err, size_t err_size);
/* Positions the demuxer at the keyframe whose decode timestamp is key_dts (H.264, and HEVC unless
 * STOKER_HEVC_CRA_START=0: the next reads start there, packets before it, where the container's
 * seek lands earlier, are dropped, and an HEVC CRA there is read as a BLA; other codecs: there or
 * at an earlier keyframe). */
STK_INTERNAL stk_status stk__video_demuxer_seek(stk__video_demuxer *demuxer, int64_t key_dts, char *err,
                                                size_t err_size);

/* Reads every packet of the video stream once and fills `index` (zeroed first). A file with no
 * frames, no timestamps, duplicate timestamps or (unless skip_vfr_check) a variable frame rate is
 * STK_EBADIMAGE with the reason. The demuxer is left at the end of the stream. */
STK_INTERNAL stk_status stk__video_index_build(stk__video_demuxer *demuxer, int skip_vfr_check, stk__video_index *index,
                                               char *err, size_t err_size);
STK_INTERNAL void stk__video_index_free(stk__video_index *index);
/* Position in index->key_frame of the last keyframe at or before `frame` (0 when none is). */
STK_INTERNAL int64_t stk__video_index_keyframe_before(const stk__video_index *index, int64_t frame);
/* Frame number of timestamp `pts`, or -1 when no frame has it. */
STK_INTERNAL int64_t stk__video_index_frame_of(const stk__video_index *index, int64_t pts);
/* Seconds of frame `frame` (pts * time_base). */
STK_INTERNAL double stk__video_index_seconds(const stk__video_index *index, int64_t frame);

#endif
