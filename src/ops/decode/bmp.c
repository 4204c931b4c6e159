/* src/ops/decode/bmp.c: Windows BMP, parsed here (no library): the core (12-byte), INFO (40) and
 * V2..V5 (52, 56, 108, 124) headers; 1, 4 and 8 bits per pixel through a palette, 16, 24 and 32
 * bits direct (BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS); bottom-up and top-down rows. RLE
 * compression, embedded JPEG/PNG and OS/2 2.x headers are refused with a message. Every offset
 * is checked against the data's size before it is read (tests/fuzz/fuzz_bmp.c).
 *
 * Channels as PIL reads them: a palette whose entries are all gray gives 1 channel, any other
 * palette 3; 24 bits 3; 32 bits BI_RGB 3 (the fourth byte is padding); bit fields with an alpha
 * mask 4. Bit-field samples are scaled to 8 bits as round(v * 255 / max). Hot path: per sample. */
#include <string.h>

#include "ops/decode/image_format.h"

enum { BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3, BI_JPEG = 4, BI_PNG = 5, BI_ALPHABITFIELDS = 6 };

typedef struct bmp_header {
  int width, height, top_down, bpp, compression;
  size_t pixels;    /* offset of the pixel rows */
  size_t stride;    /* bytes per stored row */
  uint32_t mask[4]; /* R, G, B, A (bit fields; A may be 0) */
  const uint8_t *palette;
  int palette_entries, palette_entry_size;
  int gray_palette;
} bmp_header;

static uint32_t u16le(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t u32le(const uint8_t *p) { return u16le(p) | u16le(p + 2) << 16; }

static stk_status bad(char *err, size_t err_size, const char *what) {
  stk__errorf(err, err_size, "corrupt BMP: %s", what);
  return STK_EBADIMAGE;
}

/* Palette, masks and row layout after the DIB header's fixed fields are known. */
static stk_status parse_layout(const uint8_t *data, size_t size, size_t dib, uint32_t dib_size, uint32_t colors_used,
                               bmp_header *h, char *err, size_t err_size) {
  const int bpp = h->bpp;
  size_t after_dib = 14 + (size_t)dib_size;
  if (h->compression == BI_BITFIELDS || h->compression == BI_ALPHABITFIELDS) {
    if (bpp != 16 && bpp != 32) return bad(err, err_size, "bit fields need 16 or 32 bits per pixel");
    const int n = h->compression == BI_ALPHABITFIELDS ? 4 : 3;
    const size_t at = dib_size >= 52 ? dib + 40 : after_dib; /* V2+ carry the masks in the header */
    if (at + 4u * (size_t)n > size) return bad(err, err_size, "the data end in the bit masks");
    for (int k = 0; k < n; k++) h->mask[k] = u32le(data + at + 4 * k);
    if (dib_size >= 56) h->mask[3] = u32le(data + dib + 52);
    if (dib_size < 52) after_dib += 4u * (size_t)n;
    if (!h->mask[0] || !h->mask[1] || !h->mask[2]) return bad(err, err_size, "a colour bit mask is zero");
  } else if (bpp == 16) { /* BI_RGB 16 bits: 5-5-5 */
    h->mask[0] = 0x7C00, h->mask[1] = 0x03E0, h->mask[2] = 0x001F;
  }
  if (bpp <= 8) {
    h->palette_entry_size = dib_size == 12 ? 3 : 4;
    uint32_t max_entries = 1u << bpp;
    uint32_t entries = colors_used && colors_used < max_entries ? colors_used : max_entries;
    size_t bytes = (size_t)entries * (size_t)h->palette_entry_size;
    if (after_dib > size || bytes > size - after_dib) return bad(err, err_size, "the data end in the palette");
    h->palette = data + after_dib;
    h->palette_entries = (int)entries;
    h->gray_palette = 1;
    for (uint32_t i = 0; i < entries; i++) {
      const uint8_t *e = h->palette + (size_t)i * (size_t)h->palette_entry_size;
      if (e[0] != e[1] || e[1] != e[2]) h->gray_palette = 0;
    }
  }
  h->stride = (((size_t)h->width * (size_t)bpp + 31) / 32) * 4;
  if (h->pixels > size || h->stride * (size_t)h->height > size - h->pixels) {
    stk__errorf(err, err_size,
                "truncated BMP: %dx%d at %d bits needs %zu bytes of pixels from byte %zu, the file has %zu", h->width,
                h->height, bpp, h->stride * (size_t)h->height, h->pixels, size);
    return STK_EBADIMAGE;
  }
  return STK_OK;
}

static stk_status parse_header(const uint8_t *data, size_t size, bmp_header *h, char *err, size_t err_size) {
  memset(h, 0, sizeof *h);
  if (size < 26 || data[0] != 'B' || data[1] != 'M') return bad(err, err_size, "the file header is incomplete");
  h->pixels = u32le(data + 10);
  const size_t dib = 14;
  const uint32_t dib_size = u32le(data + dib);
  if (dib_size != 12 && dib_size != 40 && dib_size != 52 && dib_size != 56 && dib_size != 108 && dib_size != 124) {
    stk__errorf(err, err_size, "BMP header of %u bytes is not supported (OS/2 2.x or unknown)", dib_size);
    return STK_EBADIMAGE;
  }
  if (dib + dib_size > size) return bad(err, err_size, "the data end in the DIB header");
  uint32_t colors_used = 0;
  int32_t height;
  if (dib_size == 12) {
    h->width = (int)u16le(data + dib + 4);
    height = (int16_t)u16le(data + dib + 6);
    h->bpp = (int)u16le(data + dib + 10);
    h->compression = BI_RGB;
  } else {
    int32_t width = (int32_t)u32le(data + dib + 4);
    height = (int32_t)u32le(data + dib + 8);
    if (width <= 0 || width > STK__IMAGE_MAX_SIDE) return bad(err, err_size, "the width is out of range");
    h->width = width;
    h->bpp = (int)u16le(data + dib + 14);
    h->compression = (int)u32le(data + dib + 16);
    colors_used = u32le(data + dib + 32);
  }
  if (height == 0 || height < -STK__IMAGE_MAX_SIDE || height > STK__IMAGE_MAX_SIDE || h->width <= 0)
    return bad(err, err_size, "the size is out of range");
  h->top_down = height < 0;
  h->height = height < 0 ? -height : height;
  if (h->compression == BI_RLE8 || h->compression == BI_RLE4 || h->compression == BI_JPEG || h->compression == BI_PNG) {
    stk__errorf(err, err_size, "BMP with %s compression is not supported",
                h->compression == BI_RLE8   ? "RLE8"
                : h->compression == BI_RLE4 ? "RLE4"
                : h->compression == BI_JPEG ? "embedded JPEG"
                                            : "embedded PNG");
    return STK_EBADIMAGE;
  }
  if (h->compression != BI_RGB && h->compression != BI_BITFIELDS && h->compression != BI_ALPHABITFIELDS)
    return bad(err, err_size, "unknown compression");
  if (h->bpp != 1 && h->bpp != 4 && h->bpp != 8 && h->bpp != 16 && h->bpp != 24 && h->bpp != 32) {
    stk__errorf(err, err_size, "BMP with %d bits per pixel is not supported", h->bpp);
    return STK_EBADIMAGE;
  }
  return parse_layout(data, size, dib, dib_size, colors_used, h, err, err_size);
}

static int channels_of(const bmp_header *h) {
  if (h->bpp <= 8) return h->gray_palette ? 1 : 3;
  if ((h->compression == BI_BITFIELDS || h->compression == BI_ALPHABITFIELDS) && h->mask[3]) return 4;
  return 3;
}

stk_status stk__bmp_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  bmp_header h;
  stk_status st = parse_header(data, size, &h, err, err_size);
  if (st != STK_OK) return st;
  info->width = h.width;
  info->height = h.height;
  info->channels = channels_of(&h);
  info->depth = 8;
  return STK_OK;
}

/* One masked field scaled to 8 bits: round(v * 255 / max). */
static uint8_t field(uint32_t pixel, uint32_t mask) {
  int shift = 0;
  while (!(mask & 1u)) mask >>= 1, shift++;
  uint64_t max = mask, v = (pixel >> shift) & mask;
  return (uint8_t)((v * 255u + max / 2) / max);
}

static void palette_row(const bmp_header *h, const uint8_t *src, uint8_t *dst, int channels) {
  const int per_byte = 8 / h->bpp, mask = (1 << h->bpp) - 1;
  for (int x = 0; x < h->width; x++) {
    int shift = (per_byte - 1 - x % per_byte) * h->bpp;
    int index = (src[x / per_byte] >> shift) & mask;
    /* an index past the palette's entries reads entry 0 (as PIL pads the palette with black) */
    const uint8_t *e = index < h->palette_entries ? h->palette + (size_t)index * (size_t)h->palette_entry_size : NULL;
    uint8_t b = e ? e[0] : 0, g = e ? e[1] : 0, r = e ? e[2] : 0;
    if (channels == 1) dst[x] = r;
    else dst[3 * x] = r, dst[3 * x + 1] = g, dst[3 * x + 2] = b;
  }
}

static void direct_row(const bmp_header *h, const uint8_t *src, uint8_t *dst, int channels) {
  for (int x = 0; x < h->width; x++) {
    uint8_t *o = dst + (size_t)x * (size_t)channels;
    if (h->bpp == 24 || (h->bpp == 32 && h->compression == BI_RGB)) {
      const uint8_t *p = src + (size_t)x * (size_t)(h->bpp / 8);
      o[0] = p[2], o[1] = p[1], o[2] = p[0];
      continue;
    }
    uint32_t pixel = h->bpp == 16 ? u16le(src + 2 * (size_t)x) : u32le(src + 4 * (size_t)x);
    for (int k = 0; k < channels; k++) o[k] = field(pixel, h->mask[k]);
  }
}

stk_status stk__bmp_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst, char *err,
                           size_t err_size) {
  bmp_header h;
  stk_status st = parse_header(data, size, &h, err, err_size);
  if (st != STK_OK) return st;
  const int channels = channels_of(&h);
  if (h.width != info->width || h.height != info->height || channels != info->channels || info->depth != 8)
    return bad(err, err_size, "the header changed between reads");
  const size_t out_stride = (size_t)h.width * (size_t)channels;
  for (int y = 0; y < h.height; y++) {
    const int stored = h.top_down ? y : h.height - 1 - y;
    const uint8_t *src = data + h.pixels + (size_t)stored * h.stride;
    uint8_t *row = dst + (size_t)y * out_stride;
    if (h.bpp <= 8) palette_row(&h, src, row, channels);
    else direct_row(&h, src, row, channels);
  }
  return STK_OK;
}
