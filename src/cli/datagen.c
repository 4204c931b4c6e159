/* src/cli/datagen.c: `stoker datagen DIR` -- writes a synthetic, ImageNet-like JPEG data set
 * (one subdirectory per class) encoded with libjpeg-turbo. Not a library hot path, but it should
 * be quick: images are generated and encoded on all online CPUs (up to 16 threads).
 *
 * Each image is a pure function of (seed, image index): sizes around 500x375 (long side 500 for
 * 80% of images, both orientations), quality 85..96 (or --quality), 4:4:4 chroma for 70% and
 * 4:2:0 for the rest, content = a two-colour gradient + shapes + a sinusoidal texture + per-pixel
 * noise, so the entropy decoder has real work to do (flat images decode unrealistically fast).
 * Uses only libjpeg and libc; the generator is a counter-based hash (splitmix64). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "commands.h"
#include "datagen_shards.h"

typedef struct datagen_options {
  const char *dir;
  long count, classes;
  uint64_t seed;
  int quality; /* 0 = vary per image */
  int progress; /* 1: a counter on stderr; -1 (unset): on when stderr is a terminal */
} datagen_options;

/* ---- Counter-based randomness --------------------------------------------------------------- */
static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

typedef struct draw_stream {
  uint64_t key, counter;
} draw_stream;

static uint64_t draw_u64(draw_stream *s) { return mix64(s->key ^ mix64(s->counter++)); }
static double draw_unit(draw_stream *s) { return (double)(draw_u64(s) >> 11) / 9007199254740992.0; }
static int draw_int(draw_stream *s, int lo, int hi) { return lo + (int)(draw_unit(s) * (hi - lo + 1)); }

/* ---- Image content -------------------------------------------------------------------------- */
typedef struct image_spec {
  int width, height, quality, subsampling;
} image_spec;

static image_spec choose_spec(draw_stream *s, int fixed_quality) {
  image_spec spec;
  int long_side = draw_unit(s) < 0.8 ? 500 : draw_int(s, 320, 640);
  double pick = draw_unit(s), ratio;
  if (pick < 0.5) ratio = 0.75;
  else if (pick < 0.75) ratio = 2.0 / 3.0;
  else ratio = 0.56 + 0.44 * draw_unit(s);
  int short_side = (int)(long_side * ratio + 0.5);
  if (draw_unit(s) < 0.75) spec.width = long_side, spec.height = short_side;
  else spec.width = short_side, spec.height = long_side;
  spec.quality = fixed_quality ? fixed_quality : draw_int(s, 85, 96);
  spec.subsampling = draw_unit(s) < 0.7 ? 444 : 420;
  return spec;
}

static uint8_t clamp_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

typedef struct shape {
  int kind; /* 0 disc, 1 rectangle, 2 ellipse */
  int cx, cy, rx, ry;
  int color[3];
  int alpha; /* of 256 */
} shape;

static void paint(uint8_t *px, const image_spec *spec, draw_stream *s) {
  const int w = spec->width, h = spec->height;
  int c0[3], c1[3];
  for (int c = 0; c < 3; c++) c0[c] = draw_int(s, 0, 255), c1[c] = draw_int(s, 0, 255);
  double angle = draw_unit(s) * 6.283185307179586;
  double gx = cos(angle), gy = sin(angle);
  double span = fabs(gx) * w + fabs(gy) * h;
  double origin = (gx < 0 ? -gx * w : 0) + (gy < 0 ? -gy * h : 0);

  shape shapes[10];
  int num_shapes = draw_int(s, 4, 10);
  for (int i = 0; i < num_shapes; i++) {
    shape *sh = &shapes[i];
    sh->kind = draw_int(s, 0, 2);
    sh->cx = draw_int(s, 0, w - 1), sh->cy = draw_int(s, 0, h - 1);
    sh->rx = draw_int(s, w / 20 + 1, w / 4 + 2);
    sh->ry = sh->kind == 0 ? sh->rx : draw_int(s, h / 20 + 1, h / 4 + 2);
    for (int c = 0; c < 3; c++) sh->color[c] = draw_int(s, 0, 255);
    sh->alpha = draw_int(s, 150, 256);
  }
  /* Texture: stripes from a 256-entry sine table along a random direction. */
  int8_t wave[256];
  int amplitude = draw_int(s, 8, 30);
  for (int i = 0; i < 256; i++) wave[i] = (int8_t)(amplitude * sin(i * 6.283185307179586 / 256.0));
  double freq = 0.5 + 6.0 * draw_unit(s), wangle = draw_unit(s) * 3.141592653589793;
  int fx = (int)(cos(wangle) * freq * 256), fy = (int)(sin(wangle) * freq * 256);
  int noise_amp = draw_int(s, 6, 24);

  for (int y = 0; y < h; y++) {
    uint64_t row_state = draw_u64(s);
    uint8_t *row = px + (size_t)y * w * 3;
    for (int x = 0; x < w; x++) {
      int t = (int)(256.0 * ((x * gx + y * gy + origin) / span));
      int rgb[3];
      for (int c = 0; c < 3; c++) rgb[c] = c0[c] + (((c1[c] - c0[c]) * t) >> 8);
      for (int i = 0; i < num_shapes; i++) {
        const shape *sh = &shapes[i];
        int dx = x - sh->cx, dy = y - sh->cy, inside;
        if (sh->kind == 1) inside = abs(dx) <= sh->rx && abs(dy) <= sh->ry;
        else
          inside = (int64_t)dx * dx * sh->ry * sh->ry + (int64_t)dy * dy * sh->rx * sh->rx <=
                   (int64_t)sh->rx * sh->rx * sh->ry * sh->ry;
        if (inside)
          for (int c = 0; c < 3; c++) rgb[c] += ((sh->color[c] - rgb[c]) * sh->alpha) >> 8;
      }
      int texture = wave[((x * fx + y * fy) >> 8) & 255];
      row_state ^= row_state << 13, row_state ^= row_state >> 7, row_state ^= row_state << 17;
      for (int c = 0; c < 3; c++) {
        int noise = (int)((row_state >> (c * 16)) & 0xFFFF) * (2 * noise_amp + 1) / 65536 - noise_amp;
        row[x * 3 + c] = clamp_u8(rgb[c] + texture + noise);
      }
    }
  }
}

/* ---- Encoding ------------------------------------------------------------------------------- */
typedef struct encode_error {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} encode_error;

static void encode_error_exit(j_common_ptr cinfo) {
  encode_error *e = (encode_error *)cinfo->err;
  e->pub.format_message(cinfo, e->message);
  longjmp(e->jump, 1);
}

/* Encodes px into *out (malloc'd by libjpeg, caller frees). 0 on success. */
static int encode(const uint8_t *px, const image_spec *spec, unsigned char **out, unsigned long *out_size,
                  char *message, size_t message_size) {
  struct jpeg_compress_struct c;
  encode_error e;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = encode_error_exit;
  *out = NULL;
  *out_size = 0;
  if (setjmp(e.jump)) {
    snprintf(message, message_size, "%s", e.message);
    jpeg_destroy_compress(&c);
    free(*out);
    *out = NULL;
    return -1;
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, out, out_size);
  c.image_width = (JDIMENSION)spec->width;
  c.image_height = (JDIMENSION)spec->height;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, spec->quality, TRUE);
  int f = spec->subsampling == 420 ? 2 : 1;
  c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = f;
  c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
  c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
  c.optimize_coding = TRUE;
  jpeg_start_compress(&c, TRUE);
  JSAMPROW rows[16];
  while (c.next_scanline < c.image_height) {
    int n = 0;
    while (n < 16 && c.next_scanline + (JDIMENSION)n < c.image_height) {
      rows[n] = (JSAMPROW)(px + (size_t)(c.next_scanline + (JDIMENSION)n) * spec->width * 3);
      n++;
    }
    jpeg_write_scanlines(&c, rows, (JDIMENSION)n);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return 0;
}

/* ---- Workers -------------------------------------------------------------------------------- */
typedef struct datagen_shared {
  const datagen_options *options;
  long next;  /* next image index to make (atomic) */
  long done;  /* images written (atomic) */
  int failed; /* set on the first error (atomic) */
  pthread_mutex_t lock;
  char error[4200];
  uint64_t bytes, pixels_w, pixels_h;
} datagen_shared;

static void fail(datagen_shared *sh, const char *fmt, const char *a, const char *b) {
  pthread_mutex_lock(&sh->lock);
  if (!sh->failed) snprintf(sh->error, sizeof sh->error, fmt, a, b);
  __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&sh->lock);
}

static void *datagen_worker(void *arg) {
  datagen_shared *sh = (datagen_shared *)arg;
  const datagen_options *o = sh->options;
  uint8_t *px = malloc((size_t)640 * 640 * 3);
  uint64_t bytes = 0, sum_w = 0, sum_h = 0;
  if (!px) {
    fail(sh, "%s%s", "out of memory", "");
    return NULL;
  }
  for (;;) {
    long i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
    if (i >= o->count || __atomic_load_n(&sh->failed, __ATOMIC_RELAXED)) break;
    draw_stream s = {mix64(o->seed) ^ mix64((uint64_t)i * 0x632BE59BD9B4E019ull + 1), 0};
    image_spec spec = choose_spec(&s, o->quality);
    paint(px, &spec, &s);
    unsigned char *jpg;
    unsigned long size;
    char message[JMSG_LENGTH_MAX + 64];
    if (encode(px, &spec, &jpg, &size, message, sizeof message) != 0) {
      fail(sh, "JPEG encoding failed: %s%s", message, "");
      break;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/class_%03ld/img_%08ld.jpg", o->dir, i % o->classes, i);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(jpg, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    free(jpg);
    if (!ok) {
      fail(sh, "cannot write %s: %s", path, strerror(errno));
      break;
    }
    bytes += size, sum_w += (uint64_t)spec.width, sum_h += (uint64_t)spec.height;
    long done = __atomic_add_fetch(&sh->done, 1, __ATOMIC_RELAXED);
    if (o->progress && (done % 64 == 0 || done == o->count)) {
      pthread_mutex_lock(&sh->lock);
      fprintf(stderr, "\rdatagen: %ld/%ld", done, o->count);
      fflush(stderr);
      pthread_mutex_unlock(&sh->lock);
    }
  }
  free(px);
  pthread_mutex_lock(&sh->lock);
  sh->bytes += bytes, sh->pixels_w += sum_w, sh->pixels_h += sum_h;
  pthread_mutex_unlock(&sh->lock);
  return NULL;
}

/* ---- Command -------------------------------------------------------------------------------- */
static void datagen_usage(FILE *out) {
  fprintf(out,
          "usage: stoker datagen DIR [--count N] [--classes K] [--seed S] [--quality Q] [--shards N] [--[no-]progress]\n"
          "       stoker datagen --video DIR ... (sample video clips; see stoker datagen --video --help)\n"
          "\n"
          "Writes N synthetic JPEGs (default 512) into K class folders DIR/class_000.. (default 8),\n"
          "ImageNet-like: around 500x375 in both orientations, quality 85..96 (or Q), mostly 4:4:4\n"
          "chroma, structured content with noise. The same seed (default 0) gives the same files.\n");
}

static int parse_long(const char *text, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int make_dir(const char *path) { return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1; }

int stk_cli_datagen_video(int argc, char **argv); /* src/cli/datagen_video.c */

int stk_cli_datagen(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--video")) return stk_cli_datagen_video(argc, argv);
  datagen_options o = {NULL, 512, 8, 0, 0, -1};
  long shards = 0; /* --shards N: also write a sharded copy (datagen_shards.c) */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    long v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      datagen_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
      o.progress = !strcmp(a, "--progress");
    } else if (!strcmp(a, "--count") || !strcmp(a, "--classes") || !strcmp(a, "--seed") || !strcmp(a, "--quality")) {
      long lo = !strcmp(a, "--seed") ? 0 : 1;
      long hi = !strcmp(a, "--quality") ? 100 : !strcmp(a, "--classes") ? 100000 : 100000000;
      if (!strcmp(a, "--seed")) hi = 0x7FFFFFFFL;
      if (!value || parse_long(value, lo, hi, &v) != 0) {
        stk_cli_error("datagen", "%s needs an integer in [%ld, %ld]", a, lo, hi);
        return 2;
      }
      if (!strcmp(a, "--count")) o.count = v;
      else if (!strcmp(a, "--classes")) o.classes = v;
      else if (!strcmp(a, "--seed")) o.seed = (uint64_t)v;
      else o.quality = (int)v;
      i++;
    } else if (!strcmp(a, "--shards")) {
      if (!value || parse_long(value, 1, 1000000, &shards) != 0) {
        stk_cli_error("datagen", "--shards needs an integer in [1, 1000000]");
        return 2;
      }
      i++;
    } else if (a[0] == '-') {
      stk_cli_error("datagen", "unknown option %s (see --help)", a);
      return 2;
    } else if (!o.dir) {
      o.dir = a;
    } else {
      stk_cli_error("datagen", "one directory only (got %s and %s)", o.dir, a);
      return 2;
    }
  }
  if (!o.dir) {
    datagen_usage(stderr);
    return 2;
  }
  if (o.progress < 0) o.progress = isatty(STDERR_FILENO);
  if (make_dir(o.dir) != 0) {
    stk_cli_error("datagen", "cannot create %s: %s", o.dir, strerror(errno));
    return 1;
  }
  for (long k = 0; k < o.classes && k < o.count; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/class_%03ld", o.dir, k);
    if (make_dir(path) != 0) {
      stk_cli_error("datagen", "cannot create %s: %s", path, strerror(errno));
      return 1;
    }
  }

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  datagen_shared sh;
  memset(&sh, 0, sizeof sh);
  sh.options = &o;
  pthread_mutex_init(&sh.lock, NULL);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
  if (threads > o.count) threads = (int)o.count;
  pthread_t tid[16];
  int started = 0;
  for (int t = 0; t < threads; t++)
    if (pthread_create(&tid[t], NULL, datagen_worker, &sh) == 0) started++;
    else break;
  if (started == 0) datagen_worker(&sh);
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&sh.lock);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (o.progress) fputc('\n', stderr);
  if (sh.failed) {
    stk_cli_error("datagen", "%s", sh.error);
    return 1;
  }
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  long n = o.count;
  printf("datagen: %ld files in %ld classes under %s, mean size %.0fx%.0f, mean %.0f bytes, %.2f s\n", n,
         o.classes < n ? o.classes : n, o.dir, (double)sh.pixels_w / n, (double)sh.pixels_h / n, (double)sh.bytes / n,
         seconds);
  return shards ? stk_cli_datagen_shards(o.dir, shards, o.seed) : 0;
}
