/* src/ops/common/axis_tables.c: which resampling axes share a weight table (axis_tables.h). */
#include "ops/common/axis_tables.h"

#include <stdlib.h>
#include <string.h>

static int same_key(const stk__axis_key *a, const stk__axis_key *b) {
  return a->in_size == b->in_size && a->out_size == b->out_size && a->roi_start == b->roi_start &&
         a->roi_end == b->roi_end;
}

static uint64_t key_hash(const stk__axis_key *k) {
  uint64_t lo, hi;
  double start = k->roi_start + 0.0, end = k->roi_end + 0.0; /* -0.0 and 0.0 compare equal: one hash */
  memcpy(&lo, &start, sizeof lo);
  memcpy(&hi, &end, sizeof hi);
  uint64_t h = (uint64_t)(uint32_t)k->in_size * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)k->out_size;
  h = (h ^ lo) * 0xC2B2AE3D27D4EB4Full;
  h = (h ^ hi) * 0x165667B19E3779F9ull;
  return h ^ (h >> 31);
}

/* *p to room for want elements of size bytes when it has fewer (*cap), counted. */
static stk_status grow(void **p, int *cap, int want, size_t size, uint64_t *alloc_count) {
  if (want <= *cap) return STK_OK;
  void *bigger = realloc(*p, (size_t)want * size);
  if (!bigger) return STK_ENOMEM;
  *p = bigger;
  *cap = want;
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
  return STK_OK;
}

stk_status stk__axis_tables_reserve(stk__axis_tables *t, int count, uint64_t *alloc_count) {
  if (count < 0) return STK_EINVAL;
  int slots = 64;
  while (slots < 2 * count) slots *= 2;
  stk_status st = grow((void **)&t->keys, &t->keys_cap, count, sizeof *t->keys, alloc_count);
  return st == STK_OK ? grow((void **)&t->slots, &t->slots_cap, slots, sizeof *t->slots, alloc_count) : st;
}

int stk__axis_tables_share(stk__axis_tables *t, int count, int share) {
  int owners = 0;
  if (!share) {
    for (int j = 0; j < count; j++) t->keys[j].owner = j;
    return count;
  }
  const uint64_t mask = (uint64_t)t->slots_cap - 1;
  memset(t->slots, 0xff, (size_t)t->slots_cap * sizeof *t->slots); /* -1: empty */
  for (int j = 0; j < count; j++) {
    stk__axis_key *k = &t->keys[j];
    uint64_t slot = key_hash(k) & mask;
    while (t->slots[slot] >= 0 && !same_key(&t->keys[t->slots[slot]], k)) slot = (slot + 1) & mask;
    if (t->slots[slot] >= 0) {
      k->owner = t->slots[slot];
    } else {
      t->slots[slot] = j;
      k->owner = j;
      owners++;
    }
  }
  return owners;
}

void stk__axis_tables_free(stk__axis_tables *t) {
  free(t->keys);
  free(t->slots);
  memset(t, 0, sizeof *t);
}
