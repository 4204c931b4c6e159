/* bench/nd_copy_cost.c: CPU time of the geometry operators' copy (stk__nd_copy_run, src/ops/common/
 * nd_copy.c) on two parts of an ImageNet-sized HWC uint8 image (500 x 384 x 3): a 224 x 224 crop
 * inside it and a pad to 512 x 512 (fill around it), as the CPU flip/crop/pad run them (their
 * dimensions merged first by stk__nd_coalesce where this tree has it; built with
 * -DSTK_NO_COALESCE for a tree without). One thread, the median and range of ROUNDS rounds of 2,000
 * copies each. Built and run by bench/nd-copy-cost.sh. Not on a hot path. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/common/nd_copy.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The part: out_h x out_w x 3 of the 500 x 384 x 3 input from (top, left), packed output. */
static void part_of(stk__nd_copy *c, int64_t out_h, int64_t out_w, int64_t top, int64_t left, const void *src,
                    void *dst) {
  const int64_t in[3] = {500, 384, 3}, out[3] = {out_h, out_w, 3};
  stk__nd_identity(c, 3, out, 1);
  for (int d = 0; d < 3; d++) c->src_extent[d] = in[d];
  stk__nd_packed_strides(3, in, c->src_stride);
  c->src_start[0] = top;
  c->src_start[1] = left;
  c->src = src;
  c->dst = dst;
#ifndef STK_NO_COALESCE
  stk__nd_coalesce(c);
#endif
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5, copies = 2000;
  if (rounds < 1 || rounds > 100) {
    fprintf(stderr, "usage: nd_copy_cost [ROUNDS 1..100]\n");
    return 2;
  }
  unsigned char *src = malloc(500 * 384 * 3), *dst = malloc(512 * 512 * 3);
  double *us = malloc((size_t)rounds * sizeof *us);
  if (!src || !dst || !us) return 1;
  memset(src, 7, 500 * 384 * 3);
  const struct {
    const char *name;
    int64_t h, w, top, left;
  } rows[2] = {{"crop 224x224 of 500x384x3", 224, 224, 138, 80}, {"pad 500x384x3 to 512x512", 512, 512, -6, -64}};
  for (int r = 0; r < 2; r++) {
    stk__nd_copy c;
    part_of(&c, rows[r].h, rows[r].w, rows[r].top, rows[r].left, src, dst);
    stk__nd_copy_run(&c); /* warm: the pages touched once */
    for (int k = 0; k < rounds; k++) {
      const double t0 = now();
      for (int i = 0; i < copies; i++) stk__nd_copy_run(&c);
      us[k] = (now() - t0) / copies * 1e6;
    }
    qsort(us, (size_t)rounds, sizeof *us, cmp);
    printf("%-28s %d-D part: %.1f us a copy (%.1f-%.1f over %d rounds)\n", rows[r].name, c.ndim, us[rounds / 2], us[0],
           us[rounds - 1], rounds);
  }
  free(src);
  free(dst);
  free(us);
  return 0;
}
