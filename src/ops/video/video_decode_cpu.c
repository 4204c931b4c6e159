/* src/ops/video/video_decode_cpu.c: libavcodec software decode + colour conversion of one sequence
 * (video_decode_cpu.h). Hot path: per sample on a worker thread; per frame the decode and one
 * conversion straight into the output: 8-bit 4:2:0 with ops/video/video_color.h (the GPU path's
 * arithmetic), other pixel formats with libswscale (uint8 RGB direct, YCbCr and float through a
 * scratch frame). */
#include "ops/video/video_decode_cpu.h"

#include "ops/video/video_color.h"

#include <stdlib.h>
#include <string.h>

struct stk__video_cpu_decoder {
  int threads;
  int64_t file_id; /* file open in this session, -1 = none */
  stk__video_demuxer *demuxer;
  AVCodecContext *codec;
  struct SwsContext *sws;
  AVPacket *packet;
  int packet_pending; /* packet holds data the decoder has not accepted yet */
  int draining;       /* end of stream reached: the decoder was sent NULL */
  int64_t last_frame; /* highest frame number output since the last seek, -1 = none */
  uint8_t *scratch;   /* planar YCbCr / uint8 RGB before float conversion */
  size_t scratch_size;
};

stk_status stk__video_cpu_decoder_new(int threads, stk__video_cpu_decoder **out) {
  *out = NULL;
  if (stk__ffmpeg_load(NULL, 0) != STK_OK) return STK_ENOLIB;
  stk__video_cpu_decoder *d = calloc(1, sizeof *d);
  if (!d || !(d->packet = av_packet_alloc())) {
    free(d);
    return STK_ENOMEM;
  }
  d->threads = threads > 0 ? threads : 1;
  d->file_id = -1;
  d->last_frame = -1;
  *out = d;
  return STK_OK;
}

static void close_file(stk__video_cpu_decoder *d) {
  avcodec_free_context(&d->codec);
  stk__video_demuxer_free(d->demuxer);
  d->demuxer = NULL;
  av_packet_unref(d->packet);
  d->packet_pending = d->draining = 0;
  d->file_id = -1;
  d->last_frame = -1;
}

void stk__video_cpu_decoder_free(stk__video_cpu_decoder *d) {
  if (!d) return;
  close_file(d);
  sws_freeContext(d->sws);
  av_packet_free(&d->packet);
  free(d->scratch);
  free(d);
}

static stk_status open_file(stk__video_cpu_decoder *d, const stk__video_span *span, char *err, size_t err_size) {
  close_file(d);
  stk_status st = stk__video_demuxer_open(span->path, NULL, 0, span->path, &d->demuxer, err, err_size);
  if (st != STK_OK) return st;
  const AVCodecParameters *par = stk__video_demuxer_codecpar(d->demuxer);
  const AVCodec *codec = avcodec_find_decoder(par->codec_id);
  d->codec = codec ? avcodec_alloc_context3(codec) : NULL;
  if (!d->codec) {
    close_file(d);
    return STK_ENOMEM;
  }
  int rc = avcodec_parameters_to_context(d->codec, par);
  d->codec->thread_count = d->threads;
  d->codec->pkt_timebase = span->index->time_base;
  /* Errors that the decoder would otherwise conceal become errors the caller sees. */
  d->codec->err_recognition |= AV_EF_EXPLODE;
  if (rc >= 0) rc = avcodec_open2(d->codec, codec, NULL);
  if (rc < 0) {
    char why[128];
    av_strerror(rc, why, sizeof why);
    stk__errorf(err, err_size, "%s: cannot open the %s decoder: %s", span->path, codec->name, why);
    close_file(d);
    return STK_EBADIMAGE;
  }
  d->file_id = span->file_id;
  return STK_OK;
}

/* Positions the session so the next frames out are from the keyframe before span->first (or reads
 * on when no keyframe lies between the last frame decoded and span->first). */
static stk_status position(stk__video_cpu_decoder *d, const stk__video_span *span, char *err, size_t err_size) {
  const stk__video_index *ix = span->index;
  int64_t key = stk__video_index_keyframe_before(ix, span->first);
  if (d->file_id == span->file_id && !d->draining && d->last_frame < span->first &&
      ix->key_frame[key] <= d->last_frame + 1)
    return STK_OK;
  if (d->file_id != span->file_id) {
    stk_status st = open_file(d, span, err, err_size);
    if (st != STK_OK) return st;
    if (key == 0) return STK_OK; /* a fresh file starts at its first keyframe */
  }
  stk_status st = stk__video_demuxer_seek(d->demuxer, ix->key_dts[key], err, err_size);
  if (st != STK_OK) return st;
  avcodec_flush_buffers(d->codec);
  av_packet_unref(d->packet);
  d->packet_pending = d->draining = 0;
  d->last_frame = -1;
  return STK_OK;
}

/* Feeds the decoder one packet (or the end-of-stream NULL). STK_EOF_EPOCH when fully drained. */
static stk_status feed(stk__video_cpu_decoder *d, const char *path, char *err, size_t err_size) {
  if (d->draining) return STK_EOF_EPOCH;
  if (!d->packet_pending) {
    stk_status st = stk__video_demuxer_read(d->demuxer, d->packet, err, err_size);
    if (st == STK_EOF_EPOCH) {
      d->draining = 1;
      avcodec_send_packet(d->codec, NULL);
      return STK_OK;
    }
    if (st != STK_OK) return st;
    d->packet_pending = 1;
  }
  int rc = avcodec_send_packet(d->codec, d->packet);
  if (rc == AVERROR(EAGAIN)) return STK_OK; /* receive first; the packet stays pending */
  av_packet_unref(d->packet);
  d->packet_pending = 0;
  if (rc < 0) {
    char why[128];
    av_strerror(rc, why, sizeof why);
    stk__errorf(err, err_size, "%s: corrupt video data (decoder: %s)", path, why);
    return STK_EBADIMAGE;
  }
  return STK_OK;
}

static stk_status ensure_scratch(stk__video_cpu_decoder *d, size_t bytes) {
  if (bytes <= d->scratch_size) return STK_OK;
  uint8_t *p = realloc(d->scratch, bytes);
  if (!p) return STK_ENOMEM;
  d->scratch = p;
  d->scratch_size = bytes;
  return STK_OK;
}

/* The per-pixel matrix of a row vectorises only with 32-bit integer min/max/multiply (SSE4.1, AVX2:
 * 4-5x faster than baseline x86-64's scalar loop): compiled for each, picked at load (ifunc). */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STK__NO_IFUNC 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) /* ThreadSanitizer crashes at start-up on ifunc resolvers */
#define STK__NO_IFUNC 1
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(STK__NO_IFUNC)
#define STK__ROW_CLONES __attribute__((target_clones("avx2", "sse4.1", "default")))
#else
#define STK__ROW_CLONES
#endif

/* One row of uint8 output: luma, chroma across (x16) -> RGB (rgb) or YCbCr, interleaved. */
STK__ROW_CLONES static void pixels_u8(const uint8_t *luma, const int32_t *hcb, const int32_t *hcr, int w,
                                      const stk__video_color c, int rgb, uint8_t *o) {
  if (rgb)
    for (int x = 0; x < w; x++) stk__video_pixel(c, luma[x], hcb[x], hcr[x], 1, o + 3 * x);
  else
    for (int x = 0; x < w; x++) stk__video_pixel(c, luma[x], hcb[x], hcr[x], 0, o + 3 * x);
}

/* 8-bit 4:2:0 into dst with ops/video/video_color.h's integer arithmetic, the GPU path's: chroma
 * interpolated vertically, then across (exact integers, so the order of the two passes does not
 * change the result), then the matrix per pixel, each pass a plain loop over a row. */
static stk_status convert_420(stk__video_cpu_decoder *d, const AVFrame *frame, const stk__video_color *c,
                              const stk__video_format *fmt, void *dst) {
  const int w = frame->width, h = frame->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
  if (ensure_scratch(d, (size_t)(2 * cw + 2 * w) * sizeof(int32_t)) != STK_OK) return STK_ENOMEM;
  int32_t *vcb = (int32_t *)(void *)d->scratch, *vcr = vcb + cw, *hcb = vcr + cw, *hcr = hcb + w;
  const int rgb = fmt->image_type != STK__VIDEO_YCBCR;
  const float scale = fmt->normalized ? 1.0f / 255.0f : 1.0f;
  const int32_t hpos = c->h_pos2 ? 1 : 0;
  for (int y = 0; y < h; y++) {
    int y0, y1, wy;
    stk__video_chroma_tap(y, c->v_pos2, ch, &y0, &y1, &wy);
    const uint8_t *cb0 = frame->data[1] + (size_t)y0 * frame->linesize[1],
                  *cb1 = frame->data[1] + (size_t)y1 * frame->linesize[1];
    const uint8_t *cr0 = frame->data[2] + (size_t)y0 * frame->linesize[2],
                  *cr1 = frame->data[2] + (size_t)y1 * frame->linesize[2];
    for (int j = 0; j < cw; j++) {
      vcb[j] = cb0[j] * (4 - wy) + cb1[j] * wy;
      vcr[j] = cr0[j] * (4 - wy) + cr1[j] * wy;
    }
    stk__video_chroma_across(vcb, cw, w, hpos, hcb);
    stk__video_chroma_across(vcr, cw, w, hpos, hcr);
    const uint8_t *luma = frame->data[0] + (size_t)y * frame->linesize[0];
    const size_t row = (size_t)y * (size_t)w * 3;
    if (!fmt->as_float) {
      pixels_u8(luma, hcb, hcr, w, *c, rgb, (uint8_t *)dst + row);
      continue;
    }
    float *o = (float *)dst + row;
    for (int x = 0; x < w; x++) {
      uint8_t px[3];
      stk__video_pixel(*c, luma[x], hcb[x], hcr[x], rgb, px);
      o[3 * x] = (float)px[0] * scale, o[3 * x + 1] = (float)px[1] * scale, o[3 * x + 2] = (float)px[2] * scale;
    }
  }
  return STK_OK;
}

/* Converts one decoded frame into dst (H x W x 3 of fmt's type): 8-bit 4:2:0 (what the GPU path
 * decodes too) with video_color.h, so both paths give the same bytes; other pixel formats
 * (10-bit, 4:2:2, 4:4:4, ...) with libswscale. */
static stk_status convert(stk__video_cpu_decoder *d, const AVFrame *frame, const stk__video_format *fmt, void *dst,
                          char *err, size_t err_size) {
  if (frame->format == AV_PIX_FMT_YUV420P || frame->format == AV_PIX_FMT_YUVJ420P) {
    const AVCodecParameters *par = stk__video_demuxer_codecpar(d->demuxer);
    const int loc =
        frame->chroma_location != AVCHROMA_LOC_UNSPECIFIED ? (int)frame->chroma_location : (int)par->chroma_location;
    stk__video_color color;
    stk__video_color_init(&color, frame->colorspace == AVCOL_SPC_BT709,
                          frame->color_range == AVCOL_RANGE_JPEG || frame->format == AV_PIX_FMT_YUVJ420P, loc);
    return convert_420(d, frame, &color, fmt, dst);
  }
  const int w = frame->width, h = frame->height;
  const size_t pixels = (size_t)w * (size_t)h;
  const int ycbcr = fmt->image_type == STK__VIDEO_YCBCR;
  const enum AVPixelFormat target = ycbcr ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_RGB24;
  d->sws = sws_getCachedContext(d->sws, w, h, (enum AVPixelFormat)frame->format, w, h, target, SWS_BICUBIC, NULL, NULL,
                                NULL);
  if (!d->sws) {
    stk__errorf(err, err_size, "cannot convert pixel format %s to %s",
                av_get_pix_fmt_name((enum AVPixelFormat)frame->format), ycbcr ? "YCbCr" : "RGB");
    return STK_EBADIMAGE;
  }
  /* The stream's colour matrix and range (BT.601 when unspecified, as FFmpeg's CLI does); RGB
   * out is full range; YCbCr out keeps the stream's values. */
  const int src_full = frame->color_range == AVCOL_RANGE_JPEG;
  const int space = frame->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : (int)frame->colorspace;
  const int *coefficients = sws_getCoefficients(space);
  sws_setColorspaceDetails(d->sws, coefficients, src_full, coefficients, ycbcr ? src_full : 1, 0, 1 << 16, 1 << 16);
  const int direct = !ycbcr && !fmt->as_float;
  if (!direct && ensure_scratch(d, pixels * 3) != STK_OK) return STK_ENOMEM;
  uint8_t *base = direct ? (uint8_t *)dst : d->scratch;
  uint8_t *planes[4] = {base, NULL, NULL, NULL};
  int strides[4] = {3 * w, 0, 0, 0};
  if (ycbcr) {
    planes[1] = base + pixels, planes[2] = base + 2 * pixels;
    strides[0] = strides[1] = strides[2] = w;
  }
  sws_scale(d->sws, (const uint8_t *const *)frame->data, frame->linesize, 0, h, planes, strides);
  if (direct) return STK_OK;
  const float scale = fmt->normalized ? 1.0f / 255.0f : 1.0f;
  if (!fmt->as_float) { /* YCbCr uint8: interleave the planes */
    uint8_t *out = dst;
    for (size_t i = 0; i < pixels; i++)
      out[3 * i] = base[i], out[3 * i + 1] = base[pixels + i], out[3 * i + 2] = base[2 * pixels + i];
  } else if (ycbcr) {
    float *out = dst;
    for (size_t i = 0; i < pixels; i++) {
      out[3 * i] = (float)base[i] * scale;
      out[3 * i + 1] = (float)base[pixels + i] * scale;
      out[3 * i + 2] = (float)base[2 * pixels + i] * scale;
    }
  } else {
    float *out = dst;
    for (size_t i = 0; i < pixels * 3; i++) out[i] = (float)base[i] * scale;
  }
  return STK_OK;
}

/* Checks a decoded frame and, when it is one of the span's, converts it into its slot. */
static stk_status take_frame(stk__video_cpu_decoder *d, const AVFrame *frame, const stk__video_span *span,
                             const stk__video_format *fmt, uint8_t *out, uint8_t *done, int *remaining, char *err,
                             size_t err_size) {
  const stk__video_index *ix = span->index;
  int64_t ts = frame->best_effort_timestamp != AV_NOPTS_VALUE ? frame->best_effort_timestamp : frame->pts;
  int64_t f = stk__video_index_frame_of(ix, ts);
  if (f < 0) return STK_OK; /* a frame the index does not know (e.g. a leading frame dropped on seek) */
  if (f > d->last_frame) d->last_frame = f;
  int64_t k = (f - span->first) / span->stride;
  if (f < span->first || (f - span->first) % span->stride || k >= span->count || done[k]) return STK_OK;
  if (frame->flags & AV_FRAME_FLAG_CORRUPT || frame->decode_error_flags) {
    stk__errorf(err, err_size, "%s: frame %lld is corrupt (the decoder reported damaged data)", span->path,
                (long long)f);
    return STK_EBADIMAGE;
  }
  if (frame->width != ix->width || frame->height != ix->height) {
    stk__errorf(err, err_size, "%s: frame %lld is %dx%d but the stream is %dx%d (size changes mid-stream)", span->path,
                (long long)f, frame->width, frame->height, ix->width, ix->height);
    return STK_EBADIMAGE;
  }
  const size_t frame_bytes = (size_t)ix->width * (size_t)ix->height * 3 * (fmt->as_float ? sizeof(float) : 1);
  stk_status st = convert(d, frame, fmt, out + (size_t)k * frame_bytes, err, err_size);
  if (st != STK_OK) return st;
  done[k] = 1;
  (*remaining)--;
  return STK_OK;
}

static stk_status decode_span(stk__video_cpu_decoder *d, const stk__video_span *span, const stk__video_format *fmt,
                              uint8_t *out, uint8_t *done, AVFrame *frame, char *err, size_t err_size) {
  int remaining = span->count;
  const int64_t last_wanted = span->first + (int64_t)(span->count - 1) * span->stride;
  stk_status st = position(d, span, err, err_size);
  while (st == STK_OK && remaining > 0) {
    int rc = avcodec_receive_frame(d->codec, frame);
    if (rc == AVERROR(EAGAIN)) {
      st = feed(d, span->path, err, err_size);
      continue;
    }
    if (rc == AVERROR_EOF) {
      st = STK_EOF_EPOCH;
      break;
    }
    if (rc < 0) {
      char why[128];
      av_strerror(rc, why, sizeof why);
      stk__errorf(err, err_size, "%s: corrupt video data (decoder: %s)", span->path, why);
      st = STK_EBADIMAGE;
      break;
    }
    st = take_frame(d, frame, span, fmt, out, done, &remaining, err, err_size);
    av_frame_unref(frame);
    if (st == STK_OK && remaining > 0 && d->last_frame > last_wanted + 16) break; /* passed them: missing */
  }
  if (st == STK_OK && remaining > 0) st = STK_EOF_EPOCH;
  if (st == STK_EOF_EPOCH) {
    int k = 0;
    while (k < span->count && done[k]) k++;
    stk__errorf(err, err_size, "%s: frame %lld of %lld could not be decoded (truncated or damaged file)", span->path,
                (long long)(span->first + k * span->stride), (long long)span->index->num_frames);
    st = STK_EBADIMAGE;
  }
  return st;
}

stk_status stk__video_cpu_decode_sequence(stk__video_cpu_decoder *d, const stk__video_span *span,
                                          const stk__video_format *fmt, void *out, char *err, size_t err_size) {
  if (span->count <= 0) return STK_OK;
  if (span->stride < 1 || span->first < 0 ||
      span->first + (int64_t)(span->count - 1) * span->stride >= span->index->num_frames) {
    stk__errorf(err, err_size, "%s: frames %lld..%lld (stride %lld) are outside the video's %lld frames", span->path,
                (long long)span->first, (long long)(span->first + (int64_t)(span->count - 1) * span->stride),
                (long long)span->stride, (long long)span->index->num_frames);
    return STK_EINTERNAL;
  }
  uint8_t *done = calloc((size_t)span->count, 1);
  AVFrame *frame = av_frame_alloc();
  stk_status st = done && frame ? STK_OK : STK_ENOMEM;
  if (st == STK_OK) st = decode_span(d, span, fmt, (uint8_t *)out, done, frame, err, err_size);
  if (st != STK_OK) close_file(d); /* start clean next time */
  av_frame_free(&frame);
  free(done);
  return st;
}
