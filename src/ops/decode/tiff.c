/* src/ops/decode/tiff.c: TIFF through libtiff, loaded at run time (dlopen of libtiff.so.6 or .5)
 * behind the small function table below; Debian's libtiff-dev provides the header at build time.
 * The first image (directory) of the file is read, from memory (client procedures over the
 * encoded bytes).
 *
 * Two paths. Strip images of unsigned 8- or 16-bit samples, interleaved, in gray (MinIsBlack,
 * with or without an extra sample), RGB (with or without alpha) or 8-bit palette are read
 * scanline by scanline and delivered as stored (palette entries >> 8, as PIL reads them), so they
 * match PIL exactly. Everything else libtiff can read (tiles, YCbCr, JPEG-in-TIFF, CMYK,
 * bilevel, MinIsWhite, separate planes) goes through its RGBA interface (8-bit; unassociated
 * alpha is premultiplied there, a libtiff rule). Errors carry libtiff's message where the loaded
 * libtiff has per-handle handlers (4.5+); older ones are silenced and the message is generic.
 * Hot path: stk__tiff_decode per sample. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

#include "ops/decode/image_format.h"

#define TIFF_FUNCTIONS(X)                                                                                        \
  X(TIFFClientOpen)                                                                                              \
  X(TIFFClose) X(TIFFGetField) X(TIFFGetFieldDefaulted) X(TIFFIsTiled) X(TIFFScanlineSize64) X(TIFFReadScanline) \
      X(TIFFReadRGBAImageOriented) X(TIFFRGBAImageOK) X(TIFFSetErrorHandler) X(TIFFSetWarningHandler)
/* 4.5+: per-handle error handlers (optional) */
#define TIFF_OPTIONAL(X)                                                                               \
  X(TIFFOpenOptionsAlloc)                                                                              \
  X(TIFFOpenOptionsFree) X(TIFFOpenOptionsSetErrorHandlerExtR) X(TIFFOpenOptionsSetWarningHandlerExtR) \
      X(TIFFClientOpenExt)

typedef struct tiff_api {
#define TIFF_FIELD_(name) __typeof__(name) *name;
  TIFF_FUNCTIONS(TIFF_FIELD_)
  TIFF_OPTIONAL(TIFF_FIELD_)
#undef TIFF_FIELD_
  int per_handle; /* the optional ones are all there */
} tiff_api;

static tiff_api g_tiff;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_loaded;
static char g_error[400];

static void load_once(void) {
  const char *names[] = {"libtiff.so.6", "libtiff.so.5"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g_error, sizeof g_error,
             "TIFF decoding needs libtiff.so.6, which could not be loaded (%s); install libtiff6 (Debian/Ubuntu) "
             "or libtiff (RHEL)",
             dlerror());
    return;
  }
#define TIFF_LOAD_(name)                                                                    \
  if (!(*(void **)&g_tiff.name = dlsym(lib, #name))) {                                      \
    snprintf(g_error, sizeof g_error, "libtiff was loaded but lacks %s (too old?)", #name); \
    dlclose(lib);                                                                           \
    return;                                                                                 \
  }
  TIFF_FUNCTIONS(TIFF_LOAD_)
#undef TIFF_LOAD_
  g_tiff.per_handle = 1;
#define TIFF_LOAD_OPTIONAL_(name) \
  if (!(*(void **)&g_tiff.name = dlsym(lib, #name))) g_tiff.per_handle = 0;
  TIFF_OPTIONAL(TIFF_LOAD_OPTIONAL_)
#undef TIFF_LOAD_OPTIONAL_
  if (!g_tiff.per_handle) { /* no per-handle handlers: keep libtiff from printing to stderr */
    g_tiff.TIFFSetErrorHandler(NULL);
    g_tiff.TIFFSetWarningHandler(NULL);
  }
  g_loaded = 1;
}

static const tiff_api *tiff_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_tiff;
  stk__errorf(err, err_size, "%s", g_error);
  return NULL;
}

/* ---- Reading from memory -------------------------------------------------------------------- */
typedef struct tiff_source {
  const uint8_t *data;
  uint64_t size, pos;
  char message[256]; /* libtiff's first error */
} tiff_source;

static tmsize_t on_read(thandle_t h, void *buf, tmsize_t n) {
  tiff_source *s = (tiff_source *)h;
  if (n <= 0 || s->pos >= s->size) return 0;
  uint64_t left = s->size - s->pos, take = (uint64_t)n < left ? (uint64_t)n : left;
  memcpy(buf, s->data + s->pos, (size_t)take);
  s->pos += take;
  return (tmsize_t)take;
}
static tmsize_t on_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h, (void)buf, (void)n;
  return 0;
}
static toff_t on_seek(thandle_t h, toff_t off, int whence) {
  tiff_source *s = (tiff_source *)h;
  uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
  if (off > UINT64_MAX - base) return (toff_t)-1;
  s->pos = base + off;
  return s->pos;
}
static int on_close(thandle_t h) {
  (void)h;
  return 0;
}
static toff_t on_size(thandle_t h) { return ((tiff_source *)h)->size; }
static int on_map(thandle_t h, void **base, toff_t *size) {
  (void)h, (void)base, (void)size;
  return 0;
}
static void on_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif, (void)module;
  tiff_source *s = (tiff_source *)user;
  if (s && !s->message[0]) vsnprintf(s->message, sizeof s->message, fmt, ap);
  return 1; /* handled: libtiff does not call the global handler */
}
static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
  return 1;
}

static TIFF *open_memory(const tiff_api *a, tiff_source *s) {
  if (!a->per_handle)
    return a->TIFFClientOpen("memory", "rm", s, on_read, on_write, on_seek, on_close, on_size, on_map, on_unmap);
  TIFFOpenOptions *opts = a->TIFFOpenOptionsAlloc();
  if (!opts) return NULL;
  a->TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, s);
  a->TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, s);
  TIFF *tif =
      a->TIFFClientOpenExt("memory", "rm", s, on_read, on_write, on_seek, on_close, on_size, on_map, on_unmap, opts);
  a->TIFFOpenOptionsFree(opts);
  return tif;
}

static stk_status fail(const tiff_source *s, const char *what, char *err, size_t err_size) {
  stk__errorf(err, err_size, "corrupt TIFF: %s%s%s", what, s->message[0] ? ": " : "", s->message);
  return STK_EBADIMAGE;
}

/* ---- Layout ------------------------------------------------------------------------------- */
typedef struct tiff_layout {
  uint32_t width, height;
  uint16_t bits, samples, photometric, planar, format, extra;
  int scanline; /* 1: the scanline path, else RGBA */
  int channels, depth;
} tiff_layout;

static void read_layout(const tiff_api *a, TIFF *tif, tiff_layout *l) {
  memset(l, 0, sizeof *l);
  uint16_t *extra_types = NULL;
  a->TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &l->width);
  a->TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &l->height);
  a->TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &l->bits);
  a->TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &l->samples);
  a->TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &l->planar);
  a->TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &l->format);
  a->TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &l->extra, &extra_types);
  if (!a->TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &l->photometric))
    l->photometric = l->samples >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  const int plain =
      !a->TIFFIsTiled(tif) && (l->planar == PLANARCONFIG_CONTIG || l->samples == 1) && l->format == SAMPLEFORMAT_UINT;
  const int alpha = l->extra > 0;
  if (plain && (l->bits == 8 || l->bits == 16) && l->photometric == PHOTOMETRIC_MINISBLACK && l->samples >= 1) {
    l->scanline = 1, l->channels = l->samples >= 2 && alpha ? 2 : 1, l->depth = l->bits;
  } else if (plain && (l->bits == 8 || l->bits == 16) && l->photometric == PHOTOMETRIC_RGB && l->samples >= 3) {
    l->scanline = 1, l->channels = l->samples >= 4 && alpha ? 4 : 3, l->depth = l->bits;
  } else if (plain && l->bits == 8 && l->photometric == PHOTOMETRIC_PALETTE && l->samples == 1) {
    l->scanline = 1, l->channels = 3, l->depth = 8;
  } else {
    const int gray = (l->photometric == PHOTOMETRIC_MINISBLACK || l->photometric == PHOTOMETRIC_MINISWHITE);
    l->channels = gray && !alpha ? 1 : alpha ? 4 : 3;
    l->depth = 8;
  }
}

stk_status stk__tiff_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  const tiff_api *a = tiff_load(err, err_size);
  if (!a) return STK_ENOLIB;
  tiff_source s = {.data = data, .size = size};
  TIFF *tif = open_memory(a, &s);
  if (!tif) return fail(&s, "the header does not read", err, err_size);
  tiff_layout l;
  read_layout(a, tif, &l);
  a->TIFFClose(tif);
  if (l.width == 0 || l.height == 0 || l.width > STK__IMAGE_MAX_SIDE || l.height > STK__IMAGE_MAX_SIDE) {
    stk__errorf(err, err_size, "TIFF of %ux%u pixels: sides must be 1..%d", l.width, l.height, STK__IMAGE_MAX_SIDE);
    return STK_EBADIMAGE;
  }
  info->width = (int)l.width;
  info->height = (int)l.height;
  info->channels = l.channels;
  info->depth = l.depth;
  return STK_OK;
}

/* The scanline path: each stored row, its first `channels` samples per pixel (palette: looked up). */
static stk_status read_scanlines(const tiff_api *a, TIFF *tif, const tiff_layout *l, const tiff_source *s, uint8_t *dst,
                                 char *err, size_t err_size) {
  const size_t bps = l->depth / 8, line = (size_t)a->TIFFScanlineSize64(tif);
  if (line < (size_t)l->width * l->samples * bps)
    return fail(s, "scanline size does not match the layout", err, err_size);
  uint8_t *row = malloc(line);
  if (!row) return STK_ENOMEM;
  uint16_t *map[3] = {NULL, NULL, NULL};
  if (l->photometric == PHOTOMETRIC_PALETTE && !a->TIFFGetField(tif, TIFFTAG_COLORMAP, &map[0], &map[1], &map[2])) {
    free(row);
    return fail(s, "a palette image without a colour map", err, err_size);
  }
  const size_t out_pixel = (size_t)l->channels * bps, in_pixel = (size_t)l->samples * bps;
  for (uint32_t y = 0; y < l->height; y++) {
    if (a->TIFFReadScanline(tif, row, y, 0) < 0) {
      free(row);
      return fail(s, "a scanline does not decode", err, err_size);
    }
    uint8_t *out = dst + (size_t)y * (size_t)l->width * out_pixel;
    for (uint32_t x = 0; x < l->width; x++) {
      if (map[0]) {
        const uint8_t index = row[x];
        out[3 * x] = (uint8_t)(map[0][index] >> 8);
        out[3 * x + 1] = (uint8_t)(map[1][index] >> 8);
        out[3 * x + 2] = (uint8_t)(map[2][index] >> 8);
      } else {
        memcpy(out + x * out_pixel, row + x * in_pixel, out_pixel);
      }
    }
  }
  free(row);
  return STK_OK;
}

/* The RGBA path: libtiff's RGBA interface, then the channels kept. */
static stk_status read_rgba(const tiff_api *a, TIFF *tif, const tiff_layout *l, tiff_source *s, uint8_t *dst, char *err,
                            size_t err_size) {
  char why[1024] = "";
  if (!a->TIFFRGBAImageOK(tif, why)) {
    stk__errorf(err, err_size, "TIFF layout not supported: %s", why);
    return STK_EBADIMAGE;
  }
  uint32_t *raster = malloc((size_t)l->width * l->height * sizeof *raster);
  if (!raster) return STK_ENOMEM;
  if (!a->TIFFReadRGBAImageOriented(tif, l->width, l->height, raster, ORIENTATION_TOPLEFT, 1)) {
    free(raster);
    return fail(s, "the image data do not decode", err, err_size);
  }
  const size_t n = (size_t)l->width * l->height;
  for (size_t i = 0; i < n; i++) {
    const uint32_t p = raster[i];
    uint8_t *o = dst + i * (size_t)l->channels;
    o[0] = (uint8_t)TIFFGetR(p);
    if (l->channels >= 3) o[1] = (uint8_t)TIFFGetG(p), o[2] = (uint8_t)TIFFGetB(p);
    if (l->channels == 4) o[3] = (uint8_t)TIFFGetA(p);
  }
  free(raster);
  return STK_OK;
}

stk_status stk__tiff_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst, char *err,
                            size_t err_size) {
  const tiff_api *a = tiff_load(err, err_size);
  if (!a) return STK_ENOLIB;
  tiff_source s = {.data = data, .size = size};
  TIFF *tif = open_memory(a, &s);
  if (!tif) return fail(&s, "the header does not read", err, err_size);
  tiff_layout l;
  read_layout(a, tif, &l);
  stk_status st;
  if ((int)l.width != info->width || (int)l.height != info->height || l.channels != info->channels ||
      l.depth != info->depth)
    st = fail(&s, "the header changed between reads", err, err_size);
  else if (l.scanline) st = read_scanlines(a, tif, &l, &s, dst, err, err_size);
  else st = read_rgba(a, tif, &l, &s, dst, err, err_size);
  a->TIFFClose(tif);
  return st;
}
