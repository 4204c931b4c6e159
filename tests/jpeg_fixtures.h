/* tests/jpeg_fixtures.h: helpers shared by the JPEG/decoder/reader tests (header-only, static):
 * a structured test pattern, a libjpeg encoder with the knobs the tests need (components,
 * quality, subsampling, progressive, an EXIF orientation APP1 segment written here byte by byte),
 * and the reference: libjpeg's own plain full decode (no crop, no scaling, no orientation).
 * Not on any hot path. */
#ifndef STOKER_TESTS_JPEG_FIXTURES_H
#define STOKER_TESTS_JPEG_FIXTURES_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* A pattern with gradients, a disc and per-pixel noise, `channels` bytes per pixel. malloc'd. */
static uint8_t *fixture_pattern(int w, int h, int channels, unsigned seed) {
  uint8_t *p = (uint8_t *)malloc((size_t)w * h * channels);
  uint32_t state = seed * 2654435761u + 12345u;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      state = state * 1664525u + 1013904223u;
      int noise = (int)(state >> 27) - 16;
      int inside = (x - w / 3) * (x - w / 3) + (y - h / 2) * (y - h / 2) < (h / 3) * (h / 3);
      for (int c = 0; c < channels; c++) {
        int v = (x * 255 / (w > 1 ? w - 1 : 1)) * (c % 2) + (y * 255 / (h > 1 ? h - 1 : 1)) * ((c + 1) % 2);
        v = v / (c + 1) + (inside ? 90 * (c + 1) : 0) + noise;
        p[((size_t)y * w + x) * channels + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  return p;
}

typedef struct fixture_options {
  int quality;     /* 1..100 */
  int subsampling; /* 444, 422, 420, 440 or 411 (3-component input) */
  int progressive;
  int orientation;  /* 0 = no EXIF segment, 1..8 = write one */
  int big_endian;   /* EXIF in "MM" byte order */
  int arithmetic;   /* arithmetic coding instead of Huffman */
  int restart_rows; /* a restart marker every N MCU rows (0 = none) */
} fixture_options;

static fixture_options fixture_defaults(void) {
  fixture_options o = {95, 444, 0, 0, 0, 0, 0};
  return o;
}

static void put16(uint8_t *p, unsigned v, int be) {
  if (be) p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
  else p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v, int be) {
  if (be) p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
  else p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* "Exif\0\0" + TIFF header + IFD0 with one entry (and an unrelated tag before it). Returns length. */
static size_t fixture_exif_block(uint8_t *buf, int orientation, int be) {
  memcpy(buf, "Exif\0\0", 6);
  uint8_t *t = buf + 6;
  t[0] = t[1] = be ? 'M' : 'I';
  put16(t + 2, 42, be);
  put32(t + 4, 8, be);
  put16(t + 8, 2, be);
  /* entry 0: ImageDescription-like tag 0x010E, ASCII, count 4, inline "abc" */
  put16(t + 10, 0x010E, be), put16(t + 12, 2, be), put32(t + 14, 4, be), memcpy(t + 18, "abc", 4);
  /* entry 1: Orientation, SHORT, count 1 */
  put16(t + 22, 0x0112, be), put16(t + 24, 3, be), put32(t + 26, 1, be);
  put16(t + 30, (unsigned)orientation, be), put16(t + 32, 0, be);
  put32(t + 34, 0, be); /* next IFD */
  return 6 + 38;
}

/* Encodes w x h pixels of `components` (1 gray, 3 RGB, 4 CMYK written with an Adobe marker).
 * Returns malloc'd bytes and their size. */
static uint8_t *fixture_encode(const uint8_t *pixels, int w, int h, int components, fixture_options o,
                               size_t *size_out) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&c);
  unsigned char *mem = NULL;
  unsigned long mem_size = 0;
  jpeg_mem_dest(&c, &mem, &mem_size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = components;
  c.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, o.quality, TRUE);
  if (components == 3) { /* luma factors; chroma stays 1 x 1 */
    int hf = o.subsampling == 420 || o.subsampling == 422 ? 2 : o.subsampling == 411 ? 4 : 1;
    int vf = o.subsampling == 420 || o.subsampling == 440 ? 2 : 1;
    c.comp_info[0].h_samp_factor = hf, c.comp_info[0].v_samp_factor = vf;
    c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
    c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
  }
  if (o.progressive) jpeg_simple_progression(&c);
  if (o.arithmetic) c.arith_code = TRUE;
  if (o.restart_rows) c.restart_in_rows = o.restart_rows;
  jpeg_start_compress(&c, TRUE);
  if (o.orientation) {
    uint8_t exif[64];
    size_t n = fixture_exif_block(exif, o.orientation, o.big_endian);
    jpeg_write_marker(&c, JPEG_APP0 + 1, exif, (unsigned)n);
  }
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * w * components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  uint8_t *copy = (uint8_t *)malloc(mem_size);
  memcpy(copy, mem, mem_size);
  free(mem);
  *size_out = mem_size;
  return copy;
}

/* The reference decode: plain libjpeg, whole image, optional scale n/8, color space `space`
 * (JCS_RGB, JCS_GRAYSCALE, JCS_CMYK). malloc'd; NULL on any libjpeg error. */
typedef struct fixture_err {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} fixture_err;
static void fixture_error_exit(j_common_ptr cinfo) { longjmp(((fixture_err *)cinfo->err)->jump, 1); }
static void fixture_silent(j_common_ptr cinfo) { (void)cinfo; }

static uint8_t *fixture_reference(const uint8_t *data, size_t size, J_COLOR_SPACE space, int scale_num, int *w, int *h,
                                  int *channels) {
  struct jpeg_decompress_struct d;
  fixture_err e;
  d.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = fixture_error_exit;
  e.pub.output_message = fixture_silent;
  uint8_t *volatile out = NULL;
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&d);
    free(out);
    return NULL;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, data, (unsigned long)size);
  jpeg_read_header(&d, TRUE);
  d.out_color_space = space;
  d.scale_num = (unsigned)scale_num;
  d.scale_denom = 8;
  d.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&d);
  *w = (int)d.output_width, *h = (int)d.output_height, *channels = d.output_components;
  out = (uint8_t *)malloc((size_t)*w * *h * *channels);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = out + (size_t)d.output_scanline * *w * *channels;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return out;
}

/* The offset of the first SOS marker (0xFF 0xDA), where the entropy-coded data begins; 0 if none. */
__attribute__((unused)) static size_t fixture_find_sos(const uint8_t *d, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (d[i] == 0xFF && d[i + 1] == 0xDA) return i;
  return 0;
}

__attribute__((unused)) static int fixture_write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = size ? fwrite(data, 1, size, f) : 0;
  fclose(f);
  return n == size ? 0 : -1;
}

#endif
