/* src/ops/decode/jpeg_verified.c: the set of JPEG fingerprints a checking decode accepted
 * (jpeg_verified.h says why). An open-addressing table of 64-bit fingerprints (0 = empty slot),
 * linear probing from the fingerprint's low bits (XXH3's bits are already well mixed), doubled
 * when 3/4 full up to STK__JPEG_VERIFIED_MAX_SLOTS. Hot path: has/add under one mutex, per JPEG. */
#include "ops/decode/jpeg_verified.h"

#include <pthread.h>
#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define FIRST_SLOTS 1024

struct stk__jpeg_verified {
  pthread_mutex_t lock;
  uint64_t *slots; /* capacity entries, 0 = empty */
  size_t capacity; /* a power of two, or 0 before the first add */
  size_t count;
};

stk__jpeg_verified *stk__jpeg_verified_new(void) {
  stk__jpeg_verified *set = calloc(1, sizeof *set);
  if (!set) return NULL;
  if (pthread_mutex_init(&set->lock, NULL) != 0) {
    free(set);
    return NULL;
  }
  return set;
}

void stk__jpeg_verified_free(stk__jpeg_verified *set) {
  if (!set) return;
  pthread_mutex_destroy(&set->lock);
  free(set->slots);
  free(set);
}

uint64_t stk__jpeg_fingerprint(const uint8_t *data, size_t size) {
  const uint64_t hash = XXH3_64bits(data, size);
  return hash ? hash : 1;
}

/* The slot holding fingerprint, or the empty slot where it would go. */
static size_t find_slot(const uint64_t *slots, size_t capacity, uint64_t fingerprint) {
  size_t i = (size_t)fingerprint & (capacity - 1);
  while (slots[i] != 0 && slots[i] != fingerprint) i = (i + 1) & (capacity - 1);
  return i;
}

int stk__jpeg_verified_has(stk__jpeg_verified *set, uint64_t fingerprint) {
  pthread_mutex_lock(&set->lock);
  const int found = set->capacity && set->slots[find_slot(set->slots, set->capacity, fingerprint)] == fingerprint;
  pthread_mutex_unlock(&set->lock);
  return found;
}

/* Doubles the table (first: FIRST_SLOTS); 0 at the size limit or out of memory. Lock held. */
static int grow(stk__jpeg_verified *set) {
  const size_t capacity = set->capacity ? set->capacity * 2 : FIRST_SLOTS;
  if (capacity > STK__JPEG_VERIFIED_MAX_SLOTS) return 0;
  uint64_t *slots = calloc(capacity, sizeof *slots);
  if (!slots) return 0;
  for (size_t i = 0; i < set->capacity; i++)
    if (set->slots[i]) slots[find_slot(slots, capacity, set->slots[i])] = set->slots[i];
  free(set->slots);
  set->slots = slots;
  set->capacity = capacity;
  return 1;
}

int stk__jpeg_verified_add(stk__jpeg_verified *set, uint64_t fingerprint) {
  if (!fingerprint) return 0;
  pthread_mutex_lock(&set->lock);
  int added = 1;
  if ((set->count + 1) * 4 > set->capacity * 3 && !grow(set)) added = 0;
  if (added) {
    const size_t i = find_slot(set->slots, set->capacity, fingerprint);
    if (!set->slots[i]) set->slots[i] = fingerprint, set->count++;
  }
  pthread_mutex_unlock(&set->lock);
  return added;
}

size_t stk__jpeg_verified_count(stk__jpeg_verified *set) {
  pthread_mutex_lock(&set->lock);
  const size_t count = set->count;
  pthread_mutex_unlock(&set->lock);
  return count;
}
