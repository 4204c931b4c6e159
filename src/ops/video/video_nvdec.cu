/* src/ops/video/video_nvdec.cu: NVDEC decode of one sequence (video_nvdec.h) -- the session keeps
 * the file's demuxer and bitstream filter and one cuvid decoder (recreated when the stream's format
 * changes); each sequence seeks to its keyframe, runs a fresh cuvid parser over the filtered
 * packets, and converts each wanted picture as the parser displays it (map, NV12 kernel into its
 * slot; the surface is unmapped once the kernel's event has completed, up to ring_size pictures
 * mapped at once, and all of them before the sequence returns). Hot path: per sample; per packet cuvidParseVideoData, per frame one kernel.
 * Host-side C code in a .cu file so it sits beside its kernels; compiled only with CUDA. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/nvcuvid_loader.h"
#include "base/common.h"
#include "ops/video/video_nvdec.h"
#include "base/tuning.h"

#define NVDEC_RING_MAX 8

/* STOKER_NVDEC_TRACE=1: where a session's time went (printed when it is freed). */
typedef struct nvdec_trace {
  uint64_t read_ns, parse_ns, decode_ns, map_ns, convert_ns, wait_ns, sequences, decoded, wanted, skipped;
} nvdec_trace;

struct stk__video_nvdec {
  const stk__nvcuvid_api *api;
  int device_id;
  stk__CUcontext context; /* the device's primary context (retained) */
  int64_t file_id;        /* file open in this session, -1 = none */
  stk__video_demuxer *demuxer;
  AVBSFContext *bsf;
  AVPacket *packet;
  stk__CUvideodecoder decoder;
  stk__CUVIDEOFORMAT format; /* of the decoder */
  int display_delay;         /* pictures NVDEC decodes ahead of the one displayed (parser's ulMaxDisplayDelay) */
  /* Mapped pictures whose conversion may still run (ring, oldest first): a surface goes back to
   * the decoder once its kernel's event has completed, so the thread does not wait on every
   * frame's kernel. ring_size 0: the kernel is waited for before each unmap. */
  int ring_size, ring_head, ring_count;
  unsigned long long ring_frame[NVDEC_RING_MAX];
  cudaEvent_t ring_event[NVDEC_RING_MAX]; /* made at the first sequence (none when ring_size is 0) */
  int skip_nonref;                        /* STOKER_NVDEC_SKIP_NONREF (default 1): H.264 non-reference pictures before a
                      sequence's first frame are not decoded */
  int tracing;
  nvdec_trace trace;
};

static uint64_t trace_now(const stk__video_nvdec *s) { return s->tracing ? stk__now_ns() : 0; }

/* The oldest mapped picture back to the decoder once its conversion kernel has run. */
static stk_status ring_release_oldest(stk__video_nvdec *s) {
  const uint64_t t0 = trace_now(s);
  cudaError_t ce = cudaEventSynchronize(s->ring_event[s->ring_head]);
  if (s->tracing) s->trace.wait_ns += stk__now_ns() - t0;
  s->api->cuvidUnmapVideoFrame64(s->decoder, s->ring_frame[s->ring_head]);
  s->ring_head = (s->ring_head + 1) % s->ring_size;
  s->ring_count--;
  return ce == cudaSuccess ? STK_OK : STK_ECUDA;
}

/* Every mapped picture back (end of a sequence, or an error): their kernels have then run. */
static stk_status ring_drain(stk__video_nvdec *s) {
  stk_status st = STK_OK;
  while (s->ring_count > 0) {
    stk_status r = ring_release_oldest(s);
    if (st == STK_OK) st = r;
  }
  return st;
}

/* State of one decode_sequence call, seen by the parser's callbacks. */
typedef struct sequence_job {
  stk__video_nvdec *session;
  const stk__video_span *span;
  const stk__video_format *fmt;
  unsigned char *out;
  size_t frame_bytes;
  cudaStream_t stream;
  unsigned char *done;
  int remaining;
  int64_t packet_frame; /* frame number of the packet being parsed (one whole picture a packet) */
  int skip_nonref;      /* H.264: a non-reference picture before the sequence is not decoded */
  stk_status status;
  char *err;
  size_t err_size;
} sequence_job;

static int cuvid_codec(enum AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264:
      return STK__CUVID_H264;
    case AV_CODEC_ID_HEVC:
      return STK__CUVID_HEVC;
    case AV_CODEC_ID_VP8:
      return STK__CUVID_VP8;
    case AV_CODEC_ID_VP9:
      return STK__CUVID_VP9;
    case AV_CODEC_ID_AV1:
      return STK__CUVID_AV1;
    case AV_CODEC_ID_MPEG4:
      return STK__CUVID_MPEG4;
    case AV_CODEC_ID_MPEG2VIDEO:
      return STK__CUVID_MPEG2;
    default:
      return -1;
  }
}

static void job_fail(sequence_job *job, stk_status st, const char *what, int rc) {
  if (job->status != STK_OK) return;
  job->status = st;
  const char *text = NULL;
  if (rc && job->session->api->cuGetErrorString) job->session->api->cuGetErrorString(rc, &text);
  stk__errorf(job->err, job->err_size, "%s: NVDEC: %s%s%s", job->span->path, what, text ? ": " : "", text ? text : "");
}

/* Parser: a new sequence header. Creates (or keeps) the decoder; returns the surfaces to use. */
static int on_sequence(void *user, stk__CUVIDEOFORMAT *f) {
  sequence_job *job = (sequence_job *)user;
  stk__video_nvdec *s = job->session;
  const int surfaces = f->min_num_decode_surfaces + 4;
  if (s->decoder && s->format.codec == f->codec && s->format.coded_width == f->coded_width &&
      s->format.coded_height == f->coded_height && s->format.chroma_format == f->chroma_format &&
      s->format.bit_depth_luma_minus8 == f->bit_depth_luma_minus8 &&
      s->format.min_num_decode_surfaces == f->min_num_decode_surfaces)
    return surfaces;
  if (f->chroma_format != STK__CUVID_CHROMA_420 || f->bit_depth_luma_minus8 != 0) {
    job_fail(job, STK_EBADIMAGE, "only 8-bit 4:2:0 video is decoded on the GPU (use device=\"cpu\")", 0);
    return 0;
  }
  stk__CUVIDDECODECAPS caps;
  memset(&caps, 0, sizeof caps);
  caps.eCodecType = f->codec, caps.eChromaFormat = f->chroma_format, caps.nBitDepthMinus8 = 0;
  if (s->api->cuvidGetDecoderCaps(&caps) != 0 || !caps.bIsSupported || f->coded_width > caps.nMaxWidth ||
      f->coded_height > caps.nMaxHeight) {
    job_fail(job, STK_ENOTSUP, "this GPU's NVDEC cannot decode this codec at this size", 0);
    return 0;
  }
  ring_drain(s); /* pictures of the old decoder */
  if (s->decoder) s->api->cuvidDestroyDecoder(s->decoder);
  s->decoder = NULL;
  stk__CUVIDDECODECREATEINFO info;
  memset(&info, 0, sizeof info);
  info.CodecType = f->codec;
  info.ChromaFormat = f->chroma_format;
  info.OutputFormat = STK__CUVID_SURFACE_NV12;
  info.bitDepthMinus8 = 0;
  info.DeinterlaceMode = f->progressive_sequence ? STK__CUVID_DEINTERLACE_WEAVE : STK__CUVID_DEINTERLACE_ADAPTIVE;
  info.ulNumOutputSurfaces = (unsigned long)(s->ring_size > 0 ? s->ring_size + 1 : 2);
  info.ulCreationFlags = STK__CUVID_CREATE_PREFER_CUVID;
  info.ulNumDecodeSurfaces = (unsigned long)surfaces;
  info.ulWidth = f->coded_width, info.ulHeight = f->coded_height;
  info.ulMaxWidth = f->coded_width, info.ulMaxHeight = f->coded_height;
  info.display_area.left = (short)f->display_area.left, info.display_area.top = (short)f->display_area.top;
  info.display_area.right = (short)f->display_area.right, info.display_area.bottom = (short)f->display_area.bottom;
  info.ulTargetWidth = (unsigned long)(f->display_area.right - f->display_area.left);
  info.ulTargetHeight = (unsigned long)(f->display_area.bottom - f->display_area.top);
  int rc = s->api->cuvidCreateDecoder(&s->decoder, &info);
  if (rc != 0) {
    s->decoder = NULL;
    job_fail(job, STK_ECUDA, "cuvidCreateDecoder failed", rc);
    return 0;
  }
  s->format = *f;
  return surfaces;
}

static int on_decode(void *user, stk__CUVIDPICPARAMS *picture) {
  sequence_job *job = (sequence_job *)user;
  stk__video_nvdec *s = job->session;
  /* Before the sequence's first frame a non-reference picture is only in the way: nothing refers
   * to it and it is not shown, so the engine skips it (about half of x264's B-frames). */
  const stk__CUVIDPICPARAMS_head *head = (const stk__CUVIDPICPARAMS_head *)picture;
  if (job->skip_nonref && !head->ref_pic_flag && job->packet_frame >= 0 && job->packet_frame < job->span->first) {
    if (s->tracing) s->trace.skipped++;
    return 1;
  }
  const uint64_t t0 = trace_now(s);
  int rc = s->api->cuvidDecodePicture(s->decoder, picture);
  if (s->tracing) s->trace.decode_ns += stk__now_ns() - t0, s->trace.decoded++;
  if (rc != 0) job_fail(job, STK_EBADIMAGE, "cuvidDecodePicture failed (corrupt data?)", rc);
  return rc == 0;
}

/* Parser: a picture is ready in display order. Converts it into its slot when it is wanted. */
static int on_display(void *user, stk__CUVIDPARSERDISPINFO *info) {
  sequence_job *job = (sequence_job *)user;
  stk__video_nvdec *s = job->session;
  const stk__video_span *span = job->span;
  int64_t f = stk__video_index_frame_of(span->index, info->timestamp);
  if (f < span->first || (f - span->first) % span->stride || job->status != STK_OK) return 1;
  int64_t k = (f - span->first) / span->stride;
  if (k >= span->count || job->done[k]) return 1;
  if (s->ring_size > 0 && s->ring_count == s->ring_size && ring_release_oldest(s) != STK_OK) {
    job_fail(job, STK_ECUDA, "the colour conversion kernel failed", 0);
    return 0;
  }
  const uint64_t t_map = trace_now(s);
  stk__CUVIDPROCPARAMS params;
  memset(&params, 0, sizeof params);
  params.progressive_frame = info->progressive_frame;
  params.top_field_first = info->top_field_first;
  params.output_stream = job->stream;
  unsigned long long frame = 0;
  unsigned int pitch = 0;
  int rc = s->api->cuvidMapVideoFrame64(s->decoder, info->picture_index, &frame, &pitch, &params);
  if (rc != 0) {
    job_fail(job, STK_ECUDA, "cuvidMapVideoFrame64 failed", rc);
    return 0;
  }
  const uint64_t t_convert = trace_now(s);
  if (s->tracing) s->trace.map_ns += t_convert - t_map;
  stk__CUVIDGETDECODESTATUS status;
  memset(&status, 0, sizeof status);
  if (s->api->cuvidGetDecodeStatus(s->decoder, info->picture_index, &status) == 0 &&
      (status.decodeStatus == STK__CUVID_STATUS_ERROR || status.decodeStatus == STK__CUVID_STATUS_ERROR_CONCEALED)) {
    char what[96];
    snprintf(what, sizeof what, "frame %lld is corrupt (the decoder reported damaged data)", (long long)f);
    job_fail(job, STK_EBADIMAGE, what, 0);
  }
  const int width = span->index->width, height = span->index->height;
  const int shown_w = s->format.display_area.right - s->format.display_area.left;
  const int shown_h = s->format.display_area.bottom - s->format.display_area.top;
  if (job->status == STK_OK && (shown_w != width || shown_h != height)) {
    char what[128];
    snprintf(what, sizeof what, "frame %lld is %dx%d but the stream is %dx%d", (long long)f, shown_w, shown_h, width,
             height);
    job_fail(job, STK_EBADIMAGE, what, 0);
  }
  int queued = 0; /* the surface went into the ring: unmapped once its kernel has run */
  if (job->status == STK_OK) {
    const AVCodecParameters *par = stk__video_demuxer_codecpar(s->demuxer);
    const int bt709 = par->color_space == AVCOL_SPC_BT709;
    const int full = par->color_range == AVCOL_RANGE_JPEG || s->format.video_signal_description.video_full_range_flag;
    const size_t chroma_offset = (size_t)pitch * (size_t)((shown_h + 1) & ~1);
    stk__video_color color;
    stk__video_color_init(&color, bt709, full, (int)par->chroma_location);
    stk_status st =
        stk__video_nv12_convert((const unsigned char *)(uintptr_t)frame, pitch, chroma_offset, width, height, &color,
                                job->fmt, job->out + (size_t)k * job->frame_bytes, job->stream);
    /* the surface goes back to the decoder only after the kernel has read it */
    if (st == STK_OK && s->ring_size > 0) {
      const int slot = (s->ring_head + s->ring_count) % s->ring_size;
      if (cudaEventRecord(s->ring_event[slot], job->stream) == cudaSuccess) {
        s->ring_frame[slot] = frame;
        s->ring_count++;
        queued = 1;
      } else {
        st = STK_ECUDA;
      }
    }
    if (s->tracing) s->trace.convert_ns += stk__now_ns() - t_convert;
    if (st != STK_OK) job_fail(job, st, "the colour conversion kernel failed", 0);
  }
  if (!queued) {
    const uint64_t t_wait = trace_now(s);
    if (cudaStreamSynchronize(job->stream) != cudaSuccess)
      job_fail(job, STK_ECUDA, "the colour conversion kernel failed", 0);
    if (s->tracing) s->trace.wait_ns += stk__now_ns() - t_wait;
    s->api->cuvidUnmapVideoFrame64(s->decoder, frame);
  }
  if (job->status != STK_OK) return 0;
  if (s->tracing) s->trace.wanted++;
  job->done[k] = 1;
  job->remaining--;
  return 1;
}

static void close_file(stk__video_nvdec *s) {
  av_bsf_free(&s->bsf);
  stk__video_demuxer_free(s->demuxer);
  s->demuxer = NULL;
  s->file_id = -1;
}

/* Opens the span's file and the bitstream filter NVDEC's parser needs (Annex B for H.264/HEVC). */
static stk_status open_file(stk__video_nvdec *s, const stk__video_span *span, char *err, size_t err_size) {
  close_file(s);
  stk_status st = stk__video_demuxer_open(span->path, NULL, 0, span->path, &s->demuxer, err, err_size);
  if (st != STK_OK) return st;
  const AVCodecParameters *par = stk__video_demuxer_codecpar(s->demuxer);
  if (cuvid_codec(par->codec_id) < 0) {
    stk__errorf(err, err_size, "%s: codec %s is not decoded on the GPU (use device=\"cpu\")", span->path,
                avcodec_get_name(par->codec_id));
    close_file(s);
    return STK_ENOTSUP;
  }
  const char *name = par->codec_id == AV_CODEC_ID_H264   ? "h264_mp4toannexb"
                     : par->codec_id == AV_CODEC_ID_HEVC ? "hevc_mp4toannexb"
                                                         : "null";
  const AVBitStreamFilter *filter = av_bsf_get_by_name(name);
  int rc = filter ? av_bsf_alloc(filter, &s->bsf) : AVERROR_BSF_NOT_FOUND;
  if (rc >= 0) rc = avcodec_parameters_copy(s->bsf->par_in, par);
  if (rc >= 0) {
    s->bsf->time_base_in = span->index->time_base;
    rc = av_bsf_init(s->bsf);
  }
  if (rc < 0) {
    stk__errorf(err, err_size, "%s: cannot set up the %s bitstream filter", span->path, name);
    close_file(s);
    return STK_EBADIMAGE;
  }
  s->file_id = span->file_id;
  return STK_OK;
}

/* Seeks, then feeds filtered packets to a fresh parser until every wanted frame was displayed. */
static stk_status run_parser(stk__video_nvdec *s, sequence_job *job) {
  const stk__video_span *span = job->span;
  const stk__video_index *ix = span->index;
  int64_t key = stk__video_index_keyframe_before(ix, span->first);
  /* NVDEC's parser does not display the picture it starts on when that is a CRA read as a BLA (the
   * pictures after it are exact): a sequence that wants the keyframe's own
   * picture starts one keyframe earlier (1 sequence in a GOP's length of frames). */
  if (key > 0 && ix->key_frame[key] == span->first && stk__video_demuxer_starts_at_cra(s->demuxer)) key--;
  stk_status st = stk__video_demuxer_seek(s->demuxer, ix->key_dts[key], job->err, job->err_size);
  if (st != STK_OK) return st;
  av_bsf_flush(s->bsf);
  stk__CUVIDPARSERPARAMS params;
  memset(&params, 0, sizeof params);
  params.CodecType = (stk__cudaVideoCodec)cuvid_codec(stk__video_demuxer_codecpar(s->demuxer)->codec_id);
  params.ulMaxNumDecodeSurfaces = 1; /* the sequence callback says how many */
  /* > 0: the parser hands a picture for display only after decoding `display_delay` more, so the
   * engine decodes while this thread maps and converts (0 serialised decode and conversion). */
  params.ulMaxDisplayDelay = (unsigned)s->display_delay;
  params.pUserData = job;
  params.pfnSequenceCallback = on_sequence;
  params.pfnDecodePicture = on_decode;
  params.pfnDisplayPicture = on_display;
  stk__CUvideoparser parser = NULL;
  int rc = s->api->cuvidCreateVideoParser(&parser, &params);
  if (rc != 0) {
    job_fail(job, STK_ECUDA, "cuvidCreateVideoParser failed", rc);
    return job->status;
  }
  /* Once every frame of [first, last] has been fed (decode order puts each frame's references
   * before it), the end-of-stream flush displays what the parser still holds: the decode-ahead
   * (display_delay) then costs no frames past the sequence. */
  const int64_t last = span->first + (int64_t)(span->count - 1) * span->stride;
  int64_t fed_in_range = 0;
  int eof = 0;
  while (job->status == STK_OK && job->remaining > 0 && !eof && fed_in_range <= last - span->first) {
    uint64_t t_read = trace_now(s);
    st = stk__video_demuxer_read(s->demuxer, s->packet, job->err, job->err_size);
    if (st == STK_EOF_EPOCH) eof = 1, st = STK_OK;
    if (st != STK_OK) break;
    if (av_bsf_send_packet(s->bsf, eof ? NULL : s->packet) < 0) {
      av_packet_unref(s->packet);
      job_fail(job, STK_EBADIMAGE, "the bitstream filter refused a packet (corrupt data?)", 0);
      break;
    }
    if (s->tracing) s->trace.read_ns += stk__now_ns() - t_read;
    while (job->status == STK_OK && av_bsf_receive_packet(s->bsf, s->packet) == 0) {
      stk__CUVIDSOURCEDATAPACKET data;
      memset(&data, 0, sizeof data);
      data.payload = s->packet->data;
      data.payload_size = (unsigned long)s->packet->size;
      data.flags = STK__CUVID_PKT_TIMESTAMP | (job->skip_nonref ? STK__CUVID_PKT_ENDOFPICTURE : 0);
      data.timestamp = s->packet->pts != AV_NOPTS_VALUE ? s->packet->pts : s->packet->dts;
      job->packet_frame = stk__video_index_frame_of(ix, data.timestamp);
      const uint64_t t_parse = trace_now(s);
      rc = s->api->cuvidParseVideoData(parser, &data);
      if (s->tracing) s->trace.parse_ns += stk__now_ns() - t_parse;
      av_packet_unref(s->packet);
      const int64_t f = stk__video_index_frame_of(ix, data.timestamp);
      if (f >= span->first && f <= last) fed_in_range++;
      if (rc != 0) job_fail(job, STK_EBADIMAGE, "cuvidParseVideoData failed (corrupt data?)", rc);
    }
  }
  if (job->status == STK_OK && job->remaining > 0) { /* flush the pictures still held for display */
    stk__CUVIDSOURCEDATAPACKET end;
    memset(&end, 0, sizeof end);
    end.flags = STK__CUVID_PKT_ENDOFSTREAM;
    s->api->cuvidParseVideoData(parser, &end);
  }
  /* every mapped picture back before the parser (and, after an error, the decoder) goes: the
   * caller then finds every frame converted, as before */
  if (ring_drain(s) != STK_OK) job_fail(job, STK_ECUDA, "the colour conversion kernel failed", 0);
  s->api->cuvidDestroyVideoParser(parser);
  if (s->tracing) s->trace.sequences++;
  if (st != STK_OK) return st;
  if (job->status == STK_OK && job->remaining > 0) {
    int k = 0;
    while (k < span->count && job->done[k]) k++;
    stk__errorf(job->err, job->err_size, "%s: frame %lld of %lld could not be decoded (truncated or damaged file)",
                span->path, (long long)(span->first + k * span->stride), (long long)ix->num_frames);
    return STK_EBADIMAGE;
  }
  return job->status;
}

extern "C" stk_status stk__video_nvdec_new(int device_id, stk__video_nvdec **out, char *err, size_t err_size) {
  *out = NULL;
  const stk__nvcuvid_api *api = stk__nvcuvid_load(err, err_size);
  if (!api) return STK_ENOLIB;
  if (stk__ffmpeg_load(err, err_size) != STK_OK) return STK_ENOLIB;
  stk__video_nvdec *s = (stk__video_nvdec *)calloc(1, sizeof *s);
  if (!s || !(s->packet = av_packet_alloc())) {
    free(s);
    return STK_ENOMEM;
  }
  s->api = api;
  s->device_id = device_id;
  s->display_delay = (int)stk__tuning_int(STK__KNOB_NVDEC_DISPLAY_DELAY); /* knobs: src/base/tuning.c */
  s->ring_size = (int)stk__tuning_int(STK__KNOB_NVDEC_OUTPUT_SURFACES);    /* 0..NVDEC_RING_MAX */
  s->skip_nonref = stk__tuning_int(STK__KNOB_NVDEC_SKIP_NONREF) != 0;
  s->tracing = stk__tuning_int(STK__KNOB_NVDEC_TRACE) != 0;
  s->file_id = -1;
  int rc = api->cuDevicePrimaryCtxRetain(&s->context, device_id);
  if (rc != 0) {
    stk__errorf(err, err_size, "NVDEC: no CUDA context on device %d (error %d)", device_id, rc);
    av_packet_free(&s->packet);
    free(s);
    return STK_ENODEV;
  }
  *out = s;
  return STK_OK;
}

static void trace_print(const stk__video_nvdec *s) {
  const nvdec_trace *t = &s->trace;
  fprintf(stderr,
          "stoker: NVDEC trace: %llu sequences, %llu pictures decoded (%llu skipped), %llu frames delivered; ms: read "
          "%.1f, "
          "parse %.1f (of which DecodePicture %.1f, map %.1f, convert %.1f), kernel waits %.1f; output "
          "surfaces %d, display delay %d\n",
          (unsigned long long)t->sequences, (unsigned long long)t->decoded, (unsigned long long)t->skipped,
          (unsigned long long)t->wanted, t->read_ns / 1e6, t->parse_ns / 1e6, t->decode_ns / 1e6, t->map_ns / 1e6,
          t->convert_ns / 1e6, t->wait_ns / 1e6, s->ring_size, s->display_delay);
}

extern "C" void stk__video_nvdec_free(stk__video_nvdec *s) {
  if (!s) return;
  if (s->tracing) trace_print(s);
  for (int i = 0; i < NVDEC_RING_MAX; i++)
    if (s->ring_event[i]) cudaEventDestroy(s->ring_event[i]);
  if (s->decoder) {
    s->api->cuCtxPushCurrent(s->context);
    s->api->cuvidDestroyDecoder(s->decoder);
    stk__CUcontext popped;
    s->api->cuCtxPopCurrent(&popped);
  }
  close_file(s);
  av_packet_free(&s->packet);
  s->api->cuDevicePrimaryCtxRelease(s->device_id);
  free(s);
}

extern "C" stk_status stk__video_nvdec_decode_sequence(stk__video_nvdec *s, const stk__video_span *span,
                                                       const stk__video_format *fmt, void *out, void *cuda_stream,
                                                       char *err, size_t err_size) {
  if (span->count <= 0) return STK_OK;
  if (s->file_id != span->file_id) {
    stk_status st = open_file(s, span, err, err_size);
    if (st != STK_OK) return st;
  }
  sequence_job job;
  memset(&job, 0, sizeof job);
  job.session = s, job.span = span, job.fmt = fmt, job.out = (unsigned char *)out;
  job.frame_bytes = (size_t)span->index->width * (size_t)span->index->height * 3 * (fmt->as_float ? sizeof(float) : 1);
  job.stream = (cudaStream_t)cuda_stream;
  job.remaining = span->count;
  job.packet_frame = -1;
  job.skip_nonref = s->skip_nonref && stk__video_demuxer_codecpar(s->demuxer)->codec_id == AV_CODEC_ID_H264;
  job.err = err, job.err_size = err_size;
  job.done = (unsigned char *)calloc((size_t)span->count, 1);
  if (!job.done) return STK_ENOMEM;
  s->api->cuCtxPushCurrent(s->context);
  stk_status st = STK_OK;
  for (int i = 0; i < s->ring_size && st == STK_OK; i++) /* once per session */
    if (!s->ring_event[i] && cudaEventCreateWithFlags(&s->ring_event[i], cudaEventDisableTiming) != cudaSuccess)
      st = STK_ECUDA;
  if (st == STK_OK) st = run_parser(s, &job);
  else stk__errorf(err, err_size, "%s: NVDEC: cannot create CUDA events", span->path);
  stk__CUcontext popped;
  s->api->cuCtxPopCurrent(&popped);
  free(job.done);
  if (st != STK_OK) close_file(s);
  return st;
}
