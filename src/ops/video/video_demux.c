/* src/ops/video/video_demux.c: libavformat demux for readers.video -- open a file or a memory buffer,
 * pick the video stream, build the frame/keyframe index once per file, seek to keyframes.
 * Hot path: stk__video_demuxer_read (per packet). Opening and indexing run at start-up (the index)
 * or when a worker moves to another file. See video_demux.h for the frame numbering. */
#include "ops/video/video_demux.h"
#include "base/tuning.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEMORY_IO_BUFFER 65536

typedef struct memory_source {
  const uint8_t *data;
  size_t size, pos;
} memory_source;

struct stk__video_demuxer {
  AVFormatContext *fmt;
  AVIOContext *io; /* custom I/O over `fd` (a file) or over `memory` */
  int fd;          /* the file, opened by stk__open_regular (-1 for a memory buffer) */
  memory_source memory;
  int stream;     /* index of the video stream in fmt */
  char name[512]; /* for messages */
  /* After a seek in H.264: packets decoding before the wanted keyframe are dropped by read.
   * av_seek_frame may land on an earlier keyframe (MP4 with B-frames: its index compares the
   * edit-list-shifted timestamps, so the keyframe's own dts lands one keyframe early: a whole
   * extra GOP decoded). */
  int64_t drop_before_dts;
  int dropping;
  /* HEVC (unless STOKER_HEVC_CRA_START=0): a seek drops to the wanted keyframe as for H.264, and
   * when that keyframe is a CRA picture its NAL units are rewritten as BLA_W_LP, the type the
   * standard gives a CRA that starts a bitstream (its RASL leading pictures, which need the GOP
   * before, are then discarded by the decoder instead of decoded wrongly). Off: HEVC keeps where
   * the container's seek lands (often a whole GOP earlier). */
  int hevc_cra_start;
  int rewrite_cra; /* the next packet of the stream is the seek's first: rewrite a CRA there */
};

/* FFmpeg logs to stderr by default; a library must not print on its own behalf, so the level
 * drops to quiet once -- only when it is still FFmpeg's default, so an application that chose a
 * level for its own FFmpeg use keeps it. Errors reach the caller as statuses and messages. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void quiet_ffmpeg_log(void) {
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
}

/* A container may name other files (HLS and DASH playlists, concat lists, image sequences):
 * readers.video reads the one file it was given, so every further open is refused. */
static int refuse_nested_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                              AVDictionary **options) {
  return AVERROR(EPERM);
}

static void describe(int averr, char *buf, size_t size) {
  if (av_strerror(averr, buf, size) < 0) snprintf(buf, size, "FFmpeg error %d", averr);
}

static int memory_read(void *opaque, uint8_t *buf, int size) {
  memory_source *m = opaque;
  size_t left = m->size - m->pos;
  if (left == 0) return AVERROR_EOF;
  size_t n = (size_t)size < left ? (size_t)size : left;
  memcpy(buf, m->data + m->pos, n);
  m->pos += n;
  return (int)n;
}

static int64_t memory_seek(void *opaque, int64_t offset, int whence) {
  memory_source *m = opaque;
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return (int64_t)m->size;
  int64_t base = whence == SEEK_CUR ? (int64_t)m->pos : whence == SEEK_END ? (int64_t)m->size : 0;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return AVERROR(EINVAL);
  int64_t target = base + offset;
  if (target < 0 || target > (int64_t)m->size) return AVERROR(EINVAL);
  m->pos = (size_t)target;
  return target;
}

/* A file's bytes come through its descriptor (so it was opened by the one guarded open: a FIFO
 * named x.mp4 is refused at once instead of blocking FFmpeg's own open for ever). */
static int file_read(void *opaque, uint8_t *buf, int size) {
  const stk__video_demuxer *d = opaque;
  ssize_t n;
  do n = read(d->fd, buf, (size_t)size);
  while (n < 0 && errno == EINTR);
  if (n < 0) return AVERROR(errno);
  return n == 0 ? AVERROR_EOF : (int)n;
}

static int64_t file_seek(void *opaque, int64_t offset, int whence) {
  const stk__video_demuxer *d = opaque;
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) {
    struct stat s;
    return fstat(d->fd, &s) == 0 ? (int64_t)s.st_size : AVERROR(errno);
  }
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return AVERROR(EINVAL);
  off_t at = lseek(d->fd, (off_t)offset, whence);
  return at < 0 ? AVERROR(errno) : (int64_t)at;
}

void stk__video_demuxer_free(stk__video_demuxer *d) {
  if (!d) return;
  avformat_close_input(&d->fmt);
  if (d->io) {
    av_freep(&d->io->buffer);
    avio_context_free(&d->io);
  }
  if (d->fd >= 0) close(d->fd);
  free(d);
}

/* Chooses the video stream and checks that its codec can be decoded; other streams are discarded
 * so reading skips them. */
static stk_status select_stream(stk__video_demuxer *d, char *err, size_t err_size) {
  int stream = av_find_best_stream(d->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
  if (stream < 0) {
    stk__errorf(err, err_size, "%s: no video stream (%u stream(s), none of them video)", d->name, d->fmt->nb_streams);
    return STK_EBADIMAGE;
  }
  d->stream = stream;
  for (unsigned i = 0; i < d->fmt->nb_streams; i++)
    if ((int)i != stream) d->fmt->streams[i]->discard = AVDISCARD_ALL;
  const AVCodecParameters *par = d->fmt->streams[stream]->codecpar;
  if (par->codec_id == AV_CODEC_ID_NONE || !avcodec_find_decoder(par->codec_id)) {
    const char *codec = avcodec_get_name(par->codec_id);
    stk__errorf(err, err_size, "%s: unsupported video codec %s (no decoder for it)", d->name,
                codec ? codec : "(unknown)");
    return STK_EBADIMAGE;
  }
  if (par->width <= 0 || par->height <= 0 || par->width > 16384 || par->height > 16384) {
    stk__errorf(err, err_size, "%s: video stream has an invalid picture size %dx%d", d->name, par->width, par->height);
    return STK_EBADIMAGE;
  }
  return STK_OK;
}

stk_status stk__video_demuxer_open(const char *path, const uint8_t *data, size_t size, const char *name,
                                   stk__video_demuxer **out, char *err, size_t err_size) {
  *out = NULL;
  stk_status loaded = stk__ffmpeg_load(err, err_size);
  if (loaded != STK_OK) return loaded;
  pthread_once(&log_once, quiet_ffmpeg_log);
  stk__video_demuxer *d = calloc(1, sizeof *d);
  if (!d) return STK_ENOMEM;
  snprintf(d->name, sizeof d->name, "%s", name ? name : path ? path : "(memory)");
  d->hevc_cra_start = stk__tuning_int(STK__KNOB_HEVC_CRA_START) != 0;
  if (!(d->fmt = avformat_alloc_context())) {
    free(d);
    return STK_ENOMEM;
  }
  d->fd = -1;
  if (path) { /* opened here, local files only, so the container cannot choose another protocol */
    if ((d->fd = stk__open_regular(path, O_RDONLY, "video file", err, err_size)) < 0) {
      stk_status st = stk__open_missing(errno) ? STK_ENOENT : STK_EIO;
      stk__video_demuxer_free(d);
      return st;
    }
  } else {
    d->memory = (memory_source){.data = data, .size = size};
  }
  uint8_t *buffer = av_malloc(MEMORY_IO_BUFFER);
  d->io = !buffer ? NULL
          : path  ? avio_alloc_context(buffer, MEMORY_IO_BUFFER, 0, d, file_read, NULL, file_seek)
                  : avio_alloc_context(buffer, MEMORY_IO_BUFFER, 0, &d->memory, memory_read, NULL, memory_seek);
  if (!d->io) {
    av_free(buffer);
    stk__video_demuxer_free(d);
    return STK_ENOMEM;
  }
  d->fmt->pb = d->io;
  d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  d->fmt->io_open = refuse_nested_open;
  int rc = avformat_open_input(&d->fmt, path, NULL, NULL); /* frees fmt on failure */
  if (rc < 0) {
    char why[128];
    describe(rc, why, sizeof why);
    stk__errorf(err, err_size, "%s: cannot open as a video container: %s", d->name, why);
    stk__video_demuxer_free(d);
    return rc == AVERROR(EIO) ? STK_EIO : STK_EBADIMAGE;
  }
  /* Containers that carry the codec parameters in their header (MP4, MKV, WebM) need no probing;
   * the others (AVI, MPEG-TS, raw streams) are probed by decoding a few packets. */
  int probe = 1;
  for (unsigned i = 0; i < d->fmt->nb_streams; i++) {
    const AVCodecParameters *par = d->fmt->streams[i]->codecpar;
    if (par->codec_type == AVMEDIA_TYPE_VIDEO && par->codec_id != AV_CODEC_ID_NONE && par->width > 0) probe = 0;
  }
  if (probe && (rc = avformat_find_stream_info(d->fmt, NULL)) < 0) {
    char why[128];
    describe(rc, why, sizeof why);
    stk__errorf(err, err_size, "%s: cannot read the streams' parameters: %s", d->name, why);
    stk__video_demuxer_free(d);
    return STK_EBADIMAGE;
  }
  stk_status st = select_stream(d, err, err_size);
  if (st != STK_OK) {
    stk__video_demuxer_free(d);
    return st;
  }
  *out = d;
  return STK_OK;
}

int stk__video_demuxer_starts_at_cra(const stk__video_demuxer *d) {
  return d->fmt->streams[d->stream]->codecpar->codec_id == AV_CODEC_ID_HEVC && d->hevc_cra_start;
}

const AVCodecParameters *stk__video_demuxer_codecpar(const stk__video_demuxer *d) {
  return d->fmt->streams[d->stream]->codecpar;
}

/* Offset of the first Annex B start code (00 00 01) at or after `from`; `size` when there is none. */
static size_t next_start_code(const uint8_t *data, size_t from, size_t size) {
  for (size_t i = from; i + 3 <= size; i++)
    if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1) return i;
  return size;
}

/* The NAL units of one HEVC packet: length-prefixed when the stream's extradata is an hvcC record
 * (MP4, MKV: its lengthSizeMinusOne), else Annex B start codes. Rewrites every CRA_NUT (21) NAL
 * header as BLA_W_LP (16), keeping the header's other bits. */
static stk_status cra_as_bla(stk__video_demuxer *d, AVPacket *pkt, char *err, size_t err_size) {
  const AVCodecParameters *par = d->fmt->streams[d->stream]->codecpar;
  const int length_size =
      par->extradata_size >= 23 && par->extradata[0] == 1 ? (par->extradata[21] & 3) + 1 : 0; /* 0: Annex B */
  int writable = 0;
  size_t pos = 0, size = (size_t)pkt->size;
  while (pos < size) {
    size_t header = 0, next = size;
    if (length_size) {
      if (size - pos < (size_t)length_size) break;
      size_t length = 0;
      for (int i = 0; i < length_size; i++) length = length << 8 | pkt->data[pos + (size_t)i];
      header = pos + (size_t)length_size;
      if (length > size - header) break;
      next = header + length;
    } else {
      const size_t code = next_start_code(pkt->data, pos, size);
      if (code == size) break;
      header = code + 3;
      next = next_start_code(pkt->data, header, size);
    }
    if (header < size && ((pkt->data[header] >> 1) & 0x3f) == 21) {
      if (!writable && av_packet_make_writable(pkt) < 0) {
        stk__errorf(err, err_size, "%s: out of memory copying a packet", d->name);
        return STK_ENOMEM;
      }
      writable = 1;
      pkt->data[header] = (uint8_t)((pkt->data[header] & 0x81) | (16 << 1));
    }
    pos = next;
  }
  return STK_OK;
}

stk_status stk__video_demuxer_read(stk__video_demuxer *d, AVPacket *pkt, char *err, size_t err_size) {
  for (;;) {
    int rc = av_read_frame(d->fmt, pkt);
    if (rc == AVERROR_EOF) return STK_EOF_EPOCH;
    if (rc < 0) {
      char why[128];
      describe(rc, why, sizeof why);
      stk__errorf(err, err_size, "%s: reading the container failed: %s", d->name, why);
      return STK_EBADIMAGE;
    }
    if (pkt->stream_index == d->stream && d->dropping && pkt->dts != AV_NOPTS_VALUE && pkt->dts < d->drop_before_dts) {
      av_packet_unref(pkt);
      continue;
    }
    if (pkt->stream_index == d->stream) {
      d->dropping = 0;
      if (d->rewrite_cra) {
        d->rewrite_cra = 0;
        stk_status st = cra_as_bla(d, pkt, err, err_size);
        if (st != STK_OK) {
          av_packet_unref(pkt);
          return st;
        }
      }
      if (pkt->flags & AV_PKT_FLAG_CORRUPT) {
        stk__errorf(err, err_size, "%s: corrupt or truncated packet at byte %lld", d->name, (long long)pkt->pos);
        av_packet_unref(pkt);
        return STK_EBADIMAGE;
      }
      return STK_OK;
    }
    av_packet_unref(pkt);
  }
}

stk_status stk__video_demuxer_seek(stk__video_demuxer *d, int64_t key_dts, char *err, size_t err_size) {
  int rc = av_seek_frame(d->fmt, d->stream, key_dts, AVSEEK_FLAG_BACKWARD);
  if (rc < 0) /* some containers index by presentation time only: from the start then */
    rc = avformat_seek_file(d->fmt, d->stream, INT64_MIN, INT64_MIN, key_dts, AVSEEK_FLAG_BACKWARD);
  if (rc < 0) {
    char why[128];
    describe(rc, why, sizeof why);
    stk__errorf(err, err_size, "%s: cannot seek to timestamp %lld: %s", d->name, (long long)key_dts, why);
    return STK_EBADIMAGE;
  }
  d->drop_before_dts = key_dts;
  /* H.264: its keyframes are IDR pictures, a clean start. HEVC: a keyframe may be a CRA whose
   * leading pictures need the GOP before it: read as a BLA (above). Others keep where the
   * container's seek lands. */
  d->rewrite_cra = stk__video_demuxer_starts_at_cra(d);
  d->dropping = d->fmt->streams[d->stream]->codecpar->codec_id == AV_CODEC_ID_H264 || d->rewrite_cra;
  return STK_OK;
}

/* ---- Index ---------------------------------------------------------------------------------- */
static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

typedef struct i64_array {
  int64_t *items;
  int64_t count, capacity;
} i64_array;

static int push(i64_array *a, int64_t value) {
  if (a->count == a->capacity) {
    int64_t cap = a->capacity ? a->capacity * 2 : 256;
    int64_t *p = realloc(a->items, (size_t)cap * sizeof *p);
    if (!p) return 0;
    a->items = p;
    a->capacity = cap;
  }
  a->items[a->count++] = value;
  return 1;
}

void stk__video_index_free(stk__video_index *ix) {
  if (!ix) return;
  free(ix->pts);
  free(ix->key_dts);
  free(ix->key_frame);
  memset(ix, 0, sizeof *ix);
}

/* Frame spacing: constant (within rounding of one tick or 1%) unless the file is VFR. */
static stk_status check_frame_rate(stk__video_index *ix, const char *name, int skip_vfr_check, char *err,
                                   size_t err_size) {
  int64_t min_step = INT64_MAX, max_step = 0;
  for (int64_t i = 1; i < ix->num_frames; i++) {
    int64_t step = ix->pts[i] - ix->pts[i - 1];
    if (step == 0) {
      stk__errorf(err, err_size, "%s: two frames share timestamp %lld", name, (long long)ix->pts[i]);
      return STK_EBADIMAGE;
    }
    if (step < min_step) min_step = step;
    if (step > max_step) max_step = step;
  }
  double seconds_per_tick = av_q2d(ix->time_base);
  if (ix->num_frames > 1) {
    double mean = (double)(ix->pts[ix->num_frames - 1] - ix->pts[0]) / (double)(ix->num_frames - 1);
    ix->frame_rate = mean > 0 && seconds_per_tick > 0 ? 1.0 / (mean * seconds_per_tick) : 0.0;
    int64_t slack = min_step / 100 > 1 ? min_step / 100 : 1;
    ix->variable_frame_rate = max_step - min_step > slack;
  }
  if (ix->variable_frame_rate && !skip_vfr_check) {
    stk__errorf(err, err_size,
                "%s: variable frame rate (frame spacing varies from %.6f s to %.6f s); readers.video needs a "
                "constant frame rate (pass skip_vfr_check=true to read it anyway)",
                name, (double)min_step * seconds_per_tick, (double)max_step * seconds_per_tick);
    return STK_EBADIMAGE;
  }
  return STK_OK;
}

/* Reads the packets: every frame's timestamp, and each keyframe's (decode timestamp, pts). */
static stk_status scan_packets(stk__video_demuxer *d, i64_array *pts, i64_array *key_dts, i64_array *key_pts, char *err,
                               size_t err_size) {
  AVPacket *pkt = av_packet_alloc();
  if (!pkt) return STK_ENOMEM;
  stk_status st;
  while ((st = stk__video_demuxer_read(d, pkt, err, err_size)) == STK_OK) {
    int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    int64_t dts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : ts;
    int key = (pkt->flags & AV_PKT_FLAG_KEY) != 0, ok = 1;
    av_packet_unref(pkt);
    if (ts == AV_NOPTS_VALUE) {
      stk__errorf(err, err_size, "%s: frame %lld has no timestamp (a raw elementary stream? put it in a container)",
                  d->name, (long long)pts->count);
      st = STK_EBADIMAGE;
      break;
    }
    ok = push(pts, ts) && (!key || (push(key_dts, dts) && push(key_pts, ts)));
    if (!ok) {
      st = STK_ENOMEM;
      break;
    }
  }
  av_packet_free(&pkt);
  return st == STK_EOF_EPOCH ? STK_OK : st;
}

stk_status stk__video_index_build(stk__video_demuxer *d, int skip_vfr_check, stk__video_index *ix, char *err,
                                  size_t err_size) {
  memset(ix, 0, sizeof *ix);
  const AVStream *stream = d->fmt->streams[d->stream];
  ix->width = stream->codecpar->width;
  ix->height = stream->codecpar->height;
  ix->codec_id = stream->codecpar->codec_id;
  ix->time_base = stream->time_base;
  i64_array pts = {0}, key_dts = {0}, key_pts = {0};
  stk_status st = scan_packets(d, &pts, &key_dts, &key_pts, err, err_size);
  if (st == STK_OK && pts.count == 0) {
    stk__errorf(err, err_size, "%s: the video stream has no frames", d->name);
    st = STK_EBADIMAGE;
  }
  if (st == STK_OK && key_pts.count == 0) {
    stk__errorf(err, err_size, "%s: the video stream has no keyframe to start decoding from", d->name);
    st = STK_EBADIMAGE;
  }
  if (st == STK_OK) {
    ix->pts = pts.items, ix->num_frames = pts.count;
    pts.items = NULL;
    qsort(ix->pts, (size_t)ix->num_frames, sizeof *ix->pts, compare_i64);
    st = check_frame_rate(ix, d->name, skip_vfr_check, err, err_size);
  }
  if (st == STK_OK) {
    /* Keyframes by frame number: their order in decode order is their order in time. */
    ix->num_keyframes = key_pts.count;
    ix->key_dts = key_dts.items, key_dts.items = NULL;
    ix->key_frame = malloc((size_t)ix->num_keyframes * sizeof *ix->key_frame);
    if (!ix->key_frame) st = STK_ENOMEM;
    for (int64_t k = 0; st == STK_OK && k < ix->num_keyframes; k++) {
      ix->key_frame[k] = stk__video_index_frame_of(ix, key_pts.items[k]);
      if (k > 0 && ix->key_frame[k] < ix->key_frame[k - 1]) {
        stk__errorf(err, err_size, "%s: keyframes out of order (timestamps go backwards)", d->name);
        st = STK_EBADIMAGE;
      }
    }
  }
  free(pts.items);
  free(key_dts.items);
  free(key_pts.items);
  if (st != STK_OK) stk__video_index_free(ix);
  if (st == STK_ENOMEM) stk__errorf(err, err_size, "%s: out of memory indexing the video", d->name);
  return st;
}

int64_t stk__video_index_frame_of(const stk__video_index *ix, int64_t pts) {
  int64_t lo = 0, hi = ix->num_frames - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ix->pts[mid] == pts) return mid;
    if (ix->pts[mid] < pts) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

int64_t stk__video_index_keyframe_before(const stk__video_index *ix, int64_t frame) {
  int64_t lo = 0, hi = ix->num_keyframes - 1, found = 0;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ix->key_frame[mid] <= frame) found = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  return found;
}

double stk__video_index_seconds(const stk__video_index *ix, int64_t frame) {
  return (double)ix->pts[frame] * av_q2d(ix->time_base);
}
