/* src/ops/augment/jitter/jitter_params.h: `jitter` (DALI's fn.jitter) -- its per-sample setup
 * shared by the CPU (jitter.c) and GPU (jitter_gpu.cu) implementations, and the per-pixel draw
 * both use: output pixel (y, x) of an HWC sample copies input pixel (y + dy, x + dx), dy and dx
 * integers uniform in [-nDegree/2, nDegree/2] (nDegree/2 rounded down), or fill_value where that
 * lies outside the image. The draw of pixel p comes from its own Philox4x32-10 block, counter
 * (p, sample id, epoch, operator id << 16 | 0x4000) under the seed (noise_math.h's generator),
 * so a sample's output depends only on (seed, operator, epoch, sample) -- not on threads, batch
 * or device. mask = 0 (per sample) copies the input. Per sample (setup), per pixel (draw). */
#ifndef STOKER_OPS_AUGMENT_JITTER_JITTER_PARAMS_H
#define STOKER_OPS_AUGMENT_JITTER_JITTER_PARAMS_H

#include "core/op.h"
#include "ops/augment/noise/noise_math.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK__JITTER_MAX_PIXEL_BYTES 64 /* channels x element size */

typedef struct stk__jitter_params {
  int half;         /* nDegree / 2 */
  double fill;      /* fill_value */
  uint64_t seed;
} stk__jitter_params;

typedef struct stk__jitter_sample {
  uint32_t key[2];
  uint32_t ctr[3];
  int half;  /* 0: a copy (nDegree < 2 or mask 0) */
  int64_t height, width;
  int pixel_bytes;
  uint8_t fill[STK__JITTER_MAX_PIXEL_BYTES]; /* fill_value in the sample's dtype, every channel */
} stk__jitter_sample;

STK_INTERNAL stk_status stk__jitter_parse(const stk__op *op, stk__jitter_params *p, char *err, size_t err_size);
/* The setup of one HWC sample (mask: its mask value); STK_EINVAL with a message (not HWC, too
 * many channels, float16). */
STK_INTERNAL stk_status stk__jitter_sample_make(const stk__op *op, const stk__jitter_params *p, const stk__tensor *in,
                                                double mask, uint64_t epoch, int64_t sample_id, stk__jitter_sample *s,
                                                char *err, size_t err_size);

/* The source pixel of output (y, x): 1 and (*sy, *sx) inside the image, 0 for fill. */
STK_HD static inline int stk__jitter_source(const stk__jitter_sample *s, int64_t y, int64_t x, int64_t *sy,
                                            int64_t *sx) {
  if (s->half == 0) {
    *sy = y;
    *sx = x;
    return 1;
  }
  const uint32_t in[4] = {(uint32_t)(y * s->width + x), s->ctr[0], s->ctr[1], s->ctr[2]};
  uint32_t r[4];
  stk__philox(in, s->key, r);
  const uint32_t span = 2u * (uint32_t)s->half + 1u;
  *sy = y + (int64_t)(r[0] % span) - s->half;
  *sx = x + (int64_t)(r[1] % span) - s->half;
  return *sy >= 0 && *sy < s->height && *sx >= 0 && *sx < s->width;
}

#ifdef __cplusplus
}
#endif
#endif
