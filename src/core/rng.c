/* src/core/rng.c: Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
 * Every random decision in stoker is keyed by (seed, operator id, epoch, sample id), so the same
 * seed gives the same crops and flips whatever the thread count, prefetch depth or timing, and
 * the CPU and GPU implementations draw identical values. Hot path (a few calls per sample). */
#include "core/op.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static void philox_round(uint32_t ctr[4], const uint32_t key[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * ctr[0];
  uint64_t p1 = (uint64_t)PHILOX_M1 * ctr[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ ctr[1] ^ key[0];
  uint32_t n1 = lo1;
  uint32_t n2 = hi0 ^ ctr[3] ^ key[1];
  uint32_t n3 = lo0;
  ctr[0] = n0;
  ctr[1] = n1;
  ctr[2] = n2;
  ctr[3] = n3;
}

static void philox_block(const uint32_t in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t ctr[4] = {in[0], in[1], in[2], in[3]};
  uint32_t key[2] = {key_in[0], key_in[1]};
  for (int r = 0; r < 10; r++) {
    philox_round(ctr, key);
    key[0] += PHILOX_W0;
    key[1] += PHILOX_W1;
  }
  for (int i = 0; i < 4; i++) out[i] = ctr[i];
}

void stk__rng_init(stk__rng *rng, uint64_t seed, uint32_t op_id, uint64_t epoch, int64_t sample_id) {
  /* Key: the seed. Counter: (sample id low, sample id high, epoch, op id << 16 | block index). */
  rng->key[0] = (uint32_t)seed;
  rng->key[1] = (uint32_t)(seed >> 32);
  rng->ctr[0] = (uint32_t)(uint64_t)sample_id;
  rng->ctr[1] = (uint32_t)((uint64_t)sample_id >> 32);
  rng->ctr[2] = (uint32_t)epoch;
  rng->ctr[3] = op_id << 16; /* low 16 bits: block index within this sample's stream */
  rng->used = 4;
}

uint32_t stk__rng_u32(stk__rng *rng) {
  if (rng->used >= 4) {
    philox_block(rng->ctr, rng->key, rng->out);
    rng->ctr[3]++;
    rng->used = 0;
  }
  return rng->out[rng->used++];
}

double stk__rng_uniform(stk__rng *rng) {
  uint64_t hi = stk__rng_u32(rng) >> 5; /* 27 bits */
  uint64_t lo = stk__rng_u32(rng) >> 6; /* 26 bits */
  return (double)(hi * 67108864.0 + lo) / 9007199254740992.0;
}
