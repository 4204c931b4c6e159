/* bench/weights_cost.c: what the resize weight tables cost on the host, per sample, for
 * ImageNet-sized images resized to a shorter side of 256 (rn50-val's resize; the GPU resize and the
 * fused resize+crop_mirror_normalize compute them on the host for every sample of every batch,
 * stk__resample_weights, then upload them). A diagnostic, not a protocol row; not built by CMake:
 *   cc -O2 -Isrc -Iinclude bench/weights_cost.c src/ops/augment/resize/resample.c -lm -o /tmp/weights_cost
 *   /tmp/weights_cost */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops/augment/resize/resample.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  int32_t *first = malloc(4096 * sizeof *first);
  float *weights = malloc(4096 * 64 * sizeof *weights);
  if (!first || !weights) return 1;
  const int samples = 20000;
  long taps = 0;
  double t0 = now();
  for (int i = 0; i < samples; i++) { /* sizes 400-599 x 350-499, like the ImageNet-like set (mean 463 x 398) */
    int w = 400 + i % 200, h = 350 + i % 150;
    int ow = w > h ? (int)((double)w * 256 / h) : 256, oh = w > h ? 256 : (int)((double)h * 256 / w);
    taps += stk__resample_weights(w, ow, 0, w, STK__INTERP_LINEAR, 1, first, weights);
    taps += stk__resample_weights(h, oh, 0, h, STK__INTERP_LINEAR, 1, first, weights);
  }
  double seconds = now() - t0;
  printf(
      "linear, antialiased, shorter side 256: %.2f us a sample (both axes, %.1f taps an axis), %.2f ms a batch of "
      "256\n",
      seconds / samples * 1e6, (double)taps / (2.0 * samples), seconds / samples * 256 * 1e3);
  free(first);
  free(weights);
  return 0;
}
