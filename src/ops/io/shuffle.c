/* src/ops/io/shuffle.c: the readers' draws and permutation (shuffle.h). */
#include "ops/io/shuffle.h"

#include <string.h>

#include "core/op.h"

int64_t stk__shuffle_index(uint32_t domain, uint64_t seed, uint64_t epoch, int64_t stream, int64_t draw,
                           int64_t bound) {
  stk__rng rng;
  stk__rng_init(&rng, seed, domain, epoch, (int64_t)(((uint64_t)stream << 40) | (uint64_t)draw));
  int64_t j = (int64_t)(stk__rng_uniform(&rng) * (double)bound);
  return j < bound ? j : bound - 1;
}

void stk__shuffle_permute(void *items, size_t elem_size, int64_t n, uint32_t domain, uint64_t seed, uint64_t epoch,
                          int64_t stream) {
  unsigned char *base = items, tmp[256];
  if (elem_size > sizeof tmp) return;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = stk__shuffle_index(domain, seed, epoch, stream, i, i + 1);
    if (j == i) continue;
    memcpy(tmp, base + (size_t)i * elem_size, elem_size);
    memcpy(base + (size_t)i * elem_size, base + (size_t)j * elem_size, elem_size);
    memcpy(base + (size_t)j * elem_size, tmp, elem_size);
  }
}
