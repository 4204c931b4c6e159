/* bench/jpeg_check_cost.c: CPU micro-measure of the JPEG corrupt-data rule (docs/robustness.md),
 * built and run by bench/jpeg-check-cost.sh against a build's libstoker.a. For every JPEG named
 * on the command line (read into memory first), the best of --rounds passes over all of them of:
 *   decode  stk__jpeg_decode, whole image, RGB (the CPU decoder, which always applies the rule)
 *   check   stk__jpeg_check_entropy (the mixed decoder's validate_entropy pass on the worker)
 *   scaled  with --hint N: stk__jpeg_decode at the smallest DCT scale (1/8..8/8) that keeps both
 *           sides >= N (the CPU decoder's hint_size): what a CPU share could save where the next
 *           operator resizes the image down to N anyway (the mixed decoder decodes full size)
 * and prints one row each: files, megapixels, seconds, ms per image, Mpixel/s. Not a test: the
 * lead runs it before and after a change on the same machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/decode/jpeg.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int rounds = 3, first = 1, hint = 0;
  while (argc > first + 1 && (!strcmp(argv[first], "--rounds") || !strcmp(argv[first], "--hint"))) {
    if (!strcmp(argv[first], "--rounds")) rounds = atoi(argv[first + 1]);
    else hint = atoi(argv[first + 1]);
    first += 2;
  }
  int n = argc - first;
  if (n < 1 || rounds < 1 || hint < 0) {
    fprintf(stderr, "usage: jpeg_check_cost [--rounds R] [--hint N] FILE.jpg...\n");
    return 2;
  }
  uint8_t **data = calloc((size_t)n, sizeof *data);
  size_t *size = calloc((size_t)n, sizeof *size);
  double mpix = 0;
  for (int i = 0; i < n; i++) {
    FILE *f = fopen(argv[first + i], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) return fprintf(stderr, "cannot read %s\n", argv[first + i]), 1;
    size[i] = (size_t)ftell(f);
    rewind(f);
    data[i] = malloc(size[i] ? size[i] : 1);
    if (fread(data[i], 1, size[i], f) != size[i]) return fprintf(stderr, "cannot read %s\n", argv[first + i]), 1;
    fclose(f);
    stk__jpeg_info info;
    char e[256];
    if (stk__jpeg_peek(data[i], size[i], &info, e, sizeof e) == STK_OK) mpix += info.width * (double)info.height / 1e6;
  }
  stk__tensor out = {0};
  static const char *names[] = {"decode", "check", "scaled"};
  for (int mode = 0; mode < (hint ? 3 : 2); mode++) {
    double best = 1e30;
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
      bad = 0;
      double t0 = now();
      for (int i = 0; i < n; i++) {
        char e[256];
        const int min = mode == 2 ? hint : 0;
        stk_status st = mode == 1 ? stk__jpeg_check_entropy(data[i], size[i], e, sizeof e)
                                  : stk__jpeg_decode(data[i], size[i], STK__COLOR_RGB, NULL, min, min, &out, NULL, e,
                                                     sizeof e);
        bad += st != STK_OK;
      }
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("%-6s files=%d refused=%d megapixels=%.1f seconds=%.3f ms_per_image=%.3f mpixel_per_s=%.1f\n",
           names[mode], n, bad, mpix, best, best * 1e3 / n, mpix / best);
  }
  stk__tensor_free(&out);
  return 0;
}
