/* src/ops/augment/noise/noise_math.h: the per-element noise of noise.gaussian, noise.shot and
 * noise.salt_and_pepper, written once for the CPU loop (noise.c) and the CUDA kernel
 * (noise_gpu.cu): element e of a sample draws from its own Philox4x32-10 block, counter
 * (e, sample id, epoch, operator id << 16 | 0x8000) under the seed, so a value depends only on
 * (seed, operator, epoch, sample, element) -- not on threads, batch or device. Math in float
 * (logf, cosf, sqrtf): CPU and GPU agree to an ulp or two before rounding, so uint8 outputs may
 * differ by one level in rare elements (the GPU test states it). Inline, hot path. */
#ifndef STOKER_OPS_AUGMENT_NOISE_NOISE_MATH_H
#define STOKER_OPS_AUGMENT_NOISE_NOISE_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define STK_HD __host__ __device__
#else
#define STK_HD
#endif

typedef enum stk__noise_kind { STK__NOISE_GAUSSIAN = 0, STK__NOISE_SHOT, STK__NOISE_SALT_AND_PEPPER } stk__noise_kind;

/* A sample's noise: kind, its values, and the RNG key of the sample. */
typedef struct stk__noise_sample {
  int kind;
  float mean, stddev;                  /* gaussian */
  float factor;                        /* shot */
  float prob, salt_vs_pepper, salt, pepper; /* salt_and_pepper */
  int per_channel, channels;
  uint32_t key[2];  /* seed */
  uint32_t ctr[3];  /* sample id (low 32 bits), epoch (low 32 bits), operator id << 16 | 0x8000 */
  float lo, hi;     /* the output type's range for clamping (no clamping for float: -inf, inf) */
  int round_u8;     /* 1: uint8 output, rounded half up */
} stk__noise_sample;

STK_HD static inline void stk__philox(const uint32_t in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t c0 = in[0], c1 = in[1], c2 = in[2], c3 = in[3], k0 = key_in[0], k1 = key_in[1];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* Uniform in (0, 1] and [0, 1) from 24 random bits. */
STK_HD static inline float stk__noise_u01(uint32_t bits) { return (float)((bits >> 8) + 1u) * (1.0f / 16777216.0f); }
STK_HD static inline float stk__noise_u01_closed0(uint32_t bits) { return (float)(bits >> 8) * (1.0f / 16777216.0f); }

STK_HD static inline float stk__noise_normal(const uint32_t r[4]) {
  return sqrtf(-2.0f * logf(stk__noise_u01(r[0]))) * cosf(6.2831853f * stk__noise_u01_closed0(r[1]));
}

/* Poisson(lambda): inversion of the CDF for lambda <= 16 from one uniform, else the rounded normal
 * approximation lambda + sqrt(lambda) N (>= 0). */
STK_HD static inline float stk__noise_poisson(float lambda, const uint32_t r[4]) {
  if (!(lambda > 0.0f)) return 0.0f;
  if (lambda > 16.0f) {
    float v = floorf(lambda + sqrtf(lambda) * stk__noise_normal(r) + 0.5f);
    return v < 0.0f ? 0.0f : v;
  }
  float u = stk__noise_u01_closed0(r[2]), p = expf(-lambda), cdf = p;
  int k = 0;
  while (u > cdf && k < 200) {
    k++;
    p = p * lambda / (float)k;
    cdf = cdf + p;
  }
  return (float)k;
}

/* The four random words of draw `draw_index` of the sample. */
STK_HD static inline void stk__noise_draw(const stk__noise_sample *s, long long draw_index, uint32_t r[4]) {
  uint32_t ctr[4] = {(uint32_t)draw_index, s->ctr[0], s->ctr[1], s->ctr[2] ^ (uint32_t)((unsigned long long)draw_index >> 32)};
  stk__philox(ctr, s->key, r);
}

/* salt_and_pepper: whether draw r replaces its values, and by what (*value, before clamping). */
STK_HD static inline int stk__noise_salt_pepper(const stk__noise_sample *s, const uint32_t r[4], float *value) {
  if (!(stk__noise_u01_closed0(r[0]) < s->prob)) return 0;
  *value = stk__noise_u01_closed0(r[1]) < s->salt_vs_pepper ? s->salt : s->pepper;
  return 1;
}

/* A noisy value clamped to the type's range and, for uint8, rounded. */
STK_HD static inline float stk__noise_finish(const stk__noise_sample *s, float y) {
  y = y < s->lo ? s->lo : (y > s->hi ? s->hi : y);
  if (s->round_u8) y = floorf(y + 0.5f);
  return y;
}

/* The noisy value of element e (channel `channel` of its pixel) whose input is x. */
STK_HD static inline float stk__noise_apply(const stk__noise_sample *s, long long e, int channel, float x) {
  /* salt and pepper shared by the channels of a pixel: the pixel's block decides */
  long long draw_index = s->kind == STK__NOISE_SALT_AND_PEPPER && !s->per_channel ? e - channel : e;
  uint32_t r[4];
  stk__noise_draw(s, draw_index, r);
  float y = x;
  if (s->kind == STK__NOISE_GAUSSIAN) {
    y = x + (s->mean + s->stddev * stk__noise_normal(r));
  } else if (s->kind == STK__NOISE_SHOT) {
    y = s->factor > 0.0f ? stk__noise_poisson(x / s->factor, r) * s->factor : x;
  } else {
    stk__noise_salt_pepper(s, r, &y);
  }
  return stk__noise_finish(s, y);
}

#endif
