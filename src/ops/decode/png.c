/* src/ops/decode/png.c: PNG through libpng 1.6, loaded at run time (dlopen of libpng16.so.16)
 * behind the small function table below, so neither the library nor the wheel links it; Debian's
 * libpng-dev provides the header at build time. The header (IHDR, and whether a palette image has
 * a tRNS chunk) is read here by hand (fuzzed: tests/fuzz/fuzz_image_peek.c), so peeking needs no
 * library.
 *
 * Delivered pixels: palette -> RGB, or RGBA when it has tRNS; gray and RGB keep their channels
 * (a tRNS colour key on them is ignored, as PIL's convert("RGB") does); gray below 8 bits is
 * scaled to 8; 16-bit samples stay 16-bit (host order) and stk__image_emit scales them. Interlaced
 * (Adam7) files are read in passes into the whole buffer. libpng's errors longjmp to this file's
 * own jmp_buf, set in stk__png_decode and nowhere else, and become STK_EBADIMAGE with libpng's
 * message; its warnings are dropped. Hot path: stk__png_decode per sample. */
#include <dlfcn.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "ops/decode/image_format.h"

/* ---- The function table ---------------------------------------------------------------------- */
#define PNG_FUNCTIONS(X)                                                                                           \
  X(png_create_read_struct)                                                                                        \
  X(png_create_info_struct) X(png_destroy_read_struct) X(png_set_read_fn) X(png_get_io_ptr) X(png_read_info)       \
      X(png_get_IHDR) X(png_get_valid) X(png_set_palette_to_rgb) X(png_set_expand_gray_1_2_4_to_8) X(png_set_swap) \
          X(png_set_interlace_handling) X(png_read_update_info) X(png_get_channels) X(png_get_rowbytes)            \
              X(png_read_row) X(png_set_user_limits) X(png_get_error_ptr) X(png_get_libpng_ver)

typedef struct png_api {
#define PNG_FIELD_(name) __typeof__(name) *name;
  PNG_FUNCTIONS(PNG_FIELD_)
#undef PNG_FIELD_
} png_api;

static png_api g_png;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_loaded;
static char g_error[400];

static void load_once(void) {
  void *lib = dlopen("libpng16.so.16", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g_error, sizeof g_error,
             "PNG decoding needs libpng16.so.16, which could not be loaded (%s); install libpng16-16 (Debian/Ubuntu) "
             "or libpng (RHEL)",
             dlerror());
    return;
  }
#define PNG_LOAD_(name)                                                                                   \
  if (!(*(void **)&g_png.name = dlsym(lib, #name))) {                                                     \
    snprintf(g_error, sizeof g_error, "libpng16.so.16 was loaded but lacks %s (not libpng 1.6?)", #name); \
    dlclose(lib);                                                                                         \
    return;                                                                                               \
  }
  PNG_FUNCTIONS(PNG_LOAD_)
#undef PNG_LOAD_
  g_loaded = 1; /* stays loaded for the process's life */
}

static const png_api *png_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_png;
  stk__errorf(err, err_size, "%s", g_error);
  return NULL;
}

/* ---- Header, by hand -------------------------------------------------------------------------- */
static uint32_t u32be(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

stk_status stk__png_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  if (size < 33 || memcmp(data + 12, "IHDR", 4) != 0 || u32be(data + 8) != 13) {
    stk__errorf(err, err_size,
                size < 33 ? "truncated PNG: %zu bytes, the IHDR chunk needs 33"
                          : "corrupt PNG: the first chunk is not a 13-byte IHDR (%zu bytes)",
                size);
    return STK_EBADIMAGE;
  }
  const uint32_t width = u32be(data + 16), height = u32be(data + 20);
  const int bits = data[24], type = data[25];
  int channels;
  switch (type) {
    case 0:
      channels = (bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16) ? 1 : 0;
      break;
    case 2:
      channels = bits == 8 || bits == 16 ? 3 : 0;
      break;
    case 3:
      channels = (bits == 1 || bits == 2 || bits == 4 || bits == 8) ? 3 : 0;
      break;
    case 4:
      channels = bits == 8 || bits == 16 ? 2 : 0;
      break;
    case 6:
      channels = bits == 8 || bits == 16 ? 4 : 0;
      break;
    default:
      channels = 0;
  }
  if (!channels) {
    stk__errorf(err, err_size, "corrupt PNG: colour type %d with bit depth %d is not valid", type, bits);
    return STK_EBADIMAGE;
  }
  if (width == 0 || height == 0 || width > STK__IMAGE_MAX_SIDE || height > STK__IMAGE_MAX_SIDE) {
    stk__errorf(err, err_size, "PNG of %ux%u pixels: sides must be 1..%d", width, height, STK__IMAGE_MAX_SIDE);
    return STK_EBADIMAGE;
  }
  if (type == 3) { /* a palette with tRNS is delivered with alpha: look for tRNS before IDAT */
    size_t pos = 33;
    while (pos + 8 <= size) {
      const uint32_t length = u32be(data + pos);
      if (!memcmp(data + pos + 4, "IDAT", 4)) break;
      if (!memcmp(data + pos + 4, "tRNS", 4)) {
        channels = 4;
        break;
      }
      if (length > size - pos - 8 || size - pos - 8 - length < 4) break; /* the decode reports it */
      pos += 12 + (size_t)length;
    }
  }
  info->width = (int)width;
  info->height = (int)height;
  info->channels = channels;
  info->depth = bits == 16 ? 16 : 8;
  return STK_OK;
}

/* ---- Decode ----------------------------------------------------------------------------------- */
typedef struct png_reader {
  const uint8_t *data;
  size_t size, pos;
  jmp_buf jump;
  char message[200];
} png_reader;

static void on_error(png_structp png, png_const_charp message) {
  png_reader *r = (png_reader *)g_png.png_get_error_ptr(png);
  snprintf(r->message, sizeof r->message, "%s", message ? message : "libpng error");
  longjmp(r->jump, 1);
}

static void on_warning(png_structp png, png_const_charp message) {
  (void)png;
  (void)message;
}

static void on_read(png_structp png, png_bytep out, size_t length) {
  png_reader *r = (png_reader *)g_png.png_get_io_ptr(png);
  if (length > r->size - r->pos) {
    snprintf(r->message, sizeof r->message, "truncated PNG: the data end at byte %zu", r->size);
    longjmp(r->jump, 1);
  }
  memcpy(out, r->data + r->pos, length);
  r->pos += length;
}

/* The transforms that deliver what stk__png_peek announced. */
static void set_transforms(const png_api *a, png_structp png, png_infop pinfo) {
  png_uint_32 w, h;
  int bits, type;
  a->png_get_IHDR(png, pinfo, &w, &h, &bits, &type, NULL, NULL, NULL);
  if (type == PNG_COLOR_TYPE_PALETTE) a->png_set_palette_to_rgb(png); /* tRNS becomes alpha */
  if (type == PNG_COLOR_TYPE_GRAY && bits < 8) a->png_set_expand_gray_1_2_4_to_8(png);
  const uint16_t one = 1;
  if (bits == 16 && *(const uint8_t *)&one == 1) a->png_set_swap(png); /* host order */
}

stk_status stk__png_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst, char *err,
                           size_t err_size) {
  const png_api *a = png_load(err, err_size);
  if (!a) return STK_ENOLIB;
  png_reader reader = {.data = data, .size = size, .pos = 0};
  png_structp png = a->png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, on_error, on_warning);
  png_infop pinfo = png ? a->png_create_info_struct(png) : NULL;
  if (!pinfo) {
    if (png) a->png_destroy_read_struct(&png, NULL, NULL);
    stk__errorf(err, err_size, "libpng could not start (out of memory, or libpng %s does not match the headers %s)",
                a->png_get_libpng_ver(NULL), PNG_LIBPNG_VER_STRING);
    return STK_ENOMEM;
  }
  const size_t row_bytes = (size_t)info->width * (size_t)info->channels * (size_t)(info->depth / 8);
  if (setjmp(reader.jump)) {
    a->png_destroy_read_struct(&png, &pinfo, NULL);
    stk__errorf(err, err_size, "corrupt PNG: %s", reader.message);
    return STK_EBADIMAGE;
  }
  a->png_set_user_limits(png, STK__IMAGE_MAX_SIDE, STK__IMAGE_MAX_SIDE);
  a->png_set_read_fn(png, &reader, on_read);
  a->png_read_info(png, pinfo);
  set_transforms(a, png, pinfo);
  const int passes = a->png_set_interlace_handling(png);
  a->png_read_update_info(png, pinfo);
  if ((int)a->png_get_channels(png, pinfo) != info->channels || a->png_get_rowbytes(png, pinfo) != row_bytes) {
    snprintf(reader.message, sizeof reader.message, "libpng delivers %d channels, %zu bytes a row; expected %d, %zu",
             (int)a->png_get_channels(png, pinfo), (size_t)a->png_get_rowbytes(png, pinfo), info->channels, row_bytes);
    longjmp(reader.jump, 1);
  }
  for (int pass = 0; pass < passes; pass++)
    for (int y = 0; y < info->height; y++) a->png_read_row(png, dst + (size_t)y * row_bytes, NULL);
  a->png_destroy_read_struct(&png, &pinfo, NULL);
  return STK_OK;
}
