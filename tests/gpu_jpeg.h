/* tests/gpu_jpeg.h: JPEG fixtures for the GPU decoder and pipeline tests (header-only, static):
 * photo-like content (smooth gradients, soft blobs, a medium-frequency wave so a window shifted by
 * a few pixels is clearly different, mild noise -- no hard edges, where nvJPEG's and libjpeg's
 * upsampling legitimately differ most), a libjpeg encoder with 4:4:4 / 4:2:2 / 4:2:0 / gray /
 * progressive / CMYK, and small file helpers. Not on any hot path. */
#ifndef STOKER_TESTS_GPU_JPEG_H
#define STOKER_TESTS_GPU_JPEG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#define GPU_JPEG_FN static __attribute__((unused))

/* w x h x channels bytes of photo-like content; malloc'd. */
GPU_JPEG_FN uint8_t *gpu_photo(int w, int h, int channels, unsigned seed) {
  uint8_t *p = (uint8_t *)malloc((size_t)w * h * channels);
  uint32_t state = seed * 2654435761u + 7u;
  double cx = w * (0.3 + 0.05 * (seed % 5)), cy = h * 0.55, r2 = (double)(w * w + h * h) / 18.0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      state = state * 1664525u + 1013904223u;
      double noise = (double)((int)(state >> 29) - 4) * 0.75; /* +-3 levels */
      double blob = 90.0 * exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) / r2);
      double wave = 30.0 * sin((x + 2 * y) * 2.0 * M_PI / 19.0);
      for (int c = 0; c < channels; c++) {
        double v = 40.0 + 120.0 * x / (w > 1 ? w - 1 : 1) * (c == 0) + 120.0 * y / (h > 1 ? h - 1 : 1) * (c == 1) +
                   60.0 * (c == 2) + blob * (c == 0 || c == 3 ? 1.0 : 0.5) + wave + noise;
        p[((size_t)y * w + x) * channels + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : (int)(v + 0.5));
      }
    }
  return p;
}

typedef struct gpu_jpeg_kind {
  const char *name;
  int w, h;
  int components;  /* 1 gray, 3 YCbCr, 4 CMYK (Adobe marker) */
  int subsampling; /* 444, 422, 420 (3 components) */
  int progressive;
  int quality;
} gpu_jpeg_kind;

/* Encodes with libjpeg; malloc'd bytes in *size. */
GPU_JPEG_FN uint8_t *gpu_jpeg_encode(const uint8_t *pixels, const gpu_jpeg_kind *k, size_t *size) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&c);
  unsigned char *mem = NULL;
  unsigned long mem_size = 0;
  jpeg_mem_dest(&c, &mem, &mem_size);
  c.image_width = (JDIMENSION)k->w;
  c.image_height = (JDIMENSION)k->h;
  c.input_components = k->components;
  c.in_color_space = k->components == 1 ? JCS_GRAYSCALE : k->components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, k->quality, TRUE);
  if (k->components == 3) {
    int hf = k->subsampling == 444 ? 1 : 2, vf = k->subsampling == 420 ? 2 : 1;
    c.comp_info[0].h_samp_factor = hf, c.comp_info[0].v_samp_factor = vf;
    c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1;
    c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1;
  }
  if (k->progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * k->w * k->components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  uint8_t *copy = (uint8_t *)malloc(mem_size);
  memcpy(copy, mem, mem_size);
  free(mem);
  *size = mem_size;
  return copy;
}

GPU_JPEG_FN uint8_t *gpu_jpeg_make(const gpu_jpeg_kind *k, unsigned seed, size_t *size) {
  uint8_t *pixels = gpu_photo(k->w, k->h, k->components, seed);
  uint8_t *jpeg = gpu_jpeg_encode(pixels, k, size);
  free(pixels);
  return jpeg;
}

GPU_JPEG_FN int gpu_write_file(const char *dir, const char *name, const void *data, size_t size) {
  char path[8400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  int ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

/* A folder tree readers.file reads: root/class0 and root/class1, each with `per_class` baseline
 * photo-like JPEGs (192 x 160 and 160 x 192: the same pixel count everywhere, so decoded slots
 * settle after warm-up; 4:4:4 and 4:2:0 in pairs; quality 93-95) the engines can all take. 1 when
 * every file was written. */
GPU_JPEG_FN int gpu_photo_tree(const char *root, int per_class) {
  int ok = 1;
  for (int cls = 0; cls < 2; cls++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/class%d", root, cls);
    mkdir(dir, 0755);
    for (int i = 0; i < per_class; i++) {
      gpu_jpeg_kind k = {"img", i % 2 ? 192 : 160, i % 2 ? 160 : 192, 3, i % 4 < 2 ? 444 : 420, 0, 95 - i % 3};
      size_t n;
      uint8_t *j = gpu_jpeg_make(&k, (unsigned)(cls * 100 + i), &n);
      char name[64];
      snprintf(name, sizeof name, "img%02d.jpg", i);
      ok = gpu_write_file(dir, name, j, n) && ok;
      free(j);
    }
  }
  return ok;
}

/* The first 8 bytes of a PNG, then junk: "a PNG named .jpg". */
static const uint8_t kGpuPngBytes[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                                         'I',  'H', 'D', 'R', 0,    0,    0,    16,   0, 0, 0, 16};
#endif
