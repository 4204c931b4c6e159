/* src/ops/decode/pnm.c: the Netpbm formats, parsed here (no library): P1/P4 (bitmap, ASCII and
 * binary), P2/P5 (gray) and P3/P6 (RGB), maxval 1..65535, '#' comments in the header. A bitmap's
 * 1 is black (0) and 0 white (255). Samples with maxval 255 or 65535 are taken as they are; other
 * maxvals are scaled to 8 bits (maxval < 256) or 16 bits as round(v * 255 / maxval) or
 * round(v * 65535 / maxval); a sample above maxval is an error. Bounds-checked throughout
 * (tests/fuzz/fuzz_pnm.c). PAM (P7) is not read. Hot path: per sample. */
#include <string.h>

#include "ops/decode/image_format.h"

typedef struct pnm_header {
  int kind; /* 1..6 */
  int width, height, maxval;
  size_t data; /* offset of the first sample */
} pnm_header;

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Skips blanks and comments from *pos (comments in the header and in ASCII samples). */
static void skip_blanks(const uint8_t *data, size_t size, size_t *pos) {
  while (*pos < size) {
    if (is_space(data[*pos])) (*pos)++;
    else if (data[*pos] == '#')
      while (*pos < size && data[*pos] != '\n' && data[*pos] != '\r') (*pos)++;
    else break;
  }
}

/* A decimal number of at most `max`; -1 when there is none or it is larger. */
static long read_number(const uint8_t *data, size_t size, size_t *pos, long max) {
  skip_blanks(data, size, pos);
  if (*pos >= size || data[*pos] < '0' || data[*pos] > '9') return -1;
  long value = 0;
  while (*pos < size && data[*pos] >= '0' && data[*pos] <= '9') {
    value = value * 10 + (data[*pos] - '0');
    if (value > max) return -1;
    (*pos)++;
  }
  return value;
}

static stk_status parse_header(const uint8_t *data, size_t size, pnm_header *h, char *err, size_t err_size) {
  memset(h, 0, sizeof *h);
  if (size < 3 || data[0] != 'P' || data[1] < '1' || data[1] > '6') {
    stk__errorf(err, err_size, "corrupt PNM: no P1..P6 magic number");
    return STK_EBADIMAGE;
  }
  h->kind = data[1] - '0';
  size_t pos = 2;
  long w = read_number(data, size, &pos, STK__IMAGE_MAX_SIDE), hh = read_number(data, size, &pos, STK__IMAGE_MAX_SIDE);
  long maxval = h->kind == 1 || h->kind == 4 ? 1 : read_number(data, size, &pos, 65535);
  if (w < 1 || hh < 1 || maxval < 1) {
    stk__errorf(err, err_size,
                "corrupt PNM: the header's width, height or maxval is missing or out of range "
                "(sides 1..65535, maxval 1..65535)");
    return STK_EBADIMAGE;
  }
  /* one blank ends the header of the binary formats; the ASCII ones skip blanks per sample */
  if (pos >= size || !is_space(data[pos])) {
    stk__errorf(err, err_size, "truncated PNM: the data end in the header");
    return STK_EBADIMAGE;
  }
  h->width = (int)w, h->height = (int)hh, h->maxval = (int)maxval;
  h->data = pos + 1;
  return STK_OK;
}

static int channels_of(const pnm_header *h) { return h->kind == 3 || h->kind == 6 ? 3 : 1; }
static int depth_of(const pnm_header *h) { return h->maxval > 255 ? 16 : 8; }

stk_status stk__pnm_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  pnm_header h;
  stk_status st = parse_header(data, size, &h, err, err_size);
  if (st != STK_OK) return st;
  info->width = h.width;
  info->height = h.height;
  info->channels = channels_of(&h);
  info->depth = depth_of(&h);
  return STK_OK;
}

static void put_sample(uint8_t *dst, size_t i, int depth, uint32_t v) {
  if (depth == 8) dst[i] = (uint8_t)v;
  else {
    uint16_t s = (uint16_t)v;
    memcpy(dst + 2 * i, &s, 2);
  }
}

static uint32_t scale(uint32_t v, int maxval, int depth) {
  const uint32_t top = depth == 8 ? 255u : 65535u;
  if ((uint32_t)maxval == top) return v;
  return (uint32_t)(((uint64_t)v * top + (uint64_t)maxval / 2) / (uint64_t)maxval);
}

static stk_status truncated(char *err, size_t err_size, size_t sample, size_t count) {
  stk__errorf(err, err_size, "truncated PNM: the data end at sample %zu of %zu", sample, count);
  return STK_EBADIMAGE;
}

stk_status stk__pnm_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst, char *err,
                           size_t err_size) {
  pnm_header h;
  stk_status st = parse_header(data, size, &h, err, err_size);
  if (st != STK_OK) return st;
  const int channels = channels_of(&h), depth = depth_of(&h);
  if (h.width != info->width || h.height != info->height || channels != info->channels || depth != info->depth) {
    stk__errorf(err, err_size, "corrupt PNM: the header changed between reads");
    return STK_EBADIMAGE;
  }
  const size_t count = (size_t)h.width * (size_t)h.height * (size_t)channels;
  size_t pos = h.data;
  if (h.kind == 4) { /* packed bits, rows padded to a byte */
    const size_t row_bytes = ((size_t)h.width + 7) / 8;
    if (pos > size || row_bytes * (size_t)h.height > size - pos) return truncated(err, err_size, 0, count);
    for (int y = 0; y < h.height; y++)
      for (int x = 0; x < h.width; x++) {
        const uint8_t byte = data[pos + (size_t)y * row_bytes + (size_t)x / 8];
        dst[(size_t)y * (size_t)h.width + (size_t)x] = (byte >> (7 - x % 8)) & 1 ? 0 : 255;
      }
    return STK_OK;
  }
  if (h.kind >= 5) { /* binary samples, big-endian when 16-bit */
    const size_t bytes = (size_t)(h.maxval > 255 ? 2 : 1);
    if (pos > size || count * bytes > size - pos) return truncated(err, err_size, (size - pos) / bytes, count);
    for (size_t i = 0; i < count; i++) {
      const uint8_t *p = data + pos + i * bytes;
      uint32_t v = bytes == 2 ? (uint32_t)p[0] << 8 | p[1] : p[0];
      if (v > (uint32_t)h.maxval) {
        stk__errorf(err, err_size, "corrupt PNM: sample %zu is %u, above maxval %d", i, v, h.maxval);
        return STK_EBADIMAGE;
      }
      put_sample(dst, i, depth, scale(v, h.maxval, depth));
    }
    return STK_OK;
  }
  pos = h.data - 1; /* ASCII: numbers separated by blanks (P1 digits may touch) */
  for (size_t i = 0; i < count; i++) {
    long v;
    if (h.kind == 1) {
      skip_blanks(data, size, &pos);
      v = pos < size && (data[pos] == '0' || data[pos] == '1') ? data[pos++] - '0' : -1;
    } else {
      v = read_number(data, size, &pos, h.maxval);
    }
    if (v < 0) {
      if (pos >= size) return truncated(err, err_size, i, count);
      stk__errorf(err, err_size, "corrupt PNM: sample %zu is not a number in 0..%d", i, h.maxval);
      return STK_EBADIMAGE;
    }
    put_sample(dst, i, depth, h.kind == 1 ? (v ? 0u : 255u) : scale((uint32_t)v, h.maxval, depth));
  }
  return STK_OK;
}
