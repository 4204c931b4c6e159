/* src/device/gpu_tensor_list.c: GPU tensor lists of src/device/device.h -- one dense device
 * buffer per node output and batch slot, grow-only and counted, with per-sample views into it.
 * Plain C over stk__gpu_malloc/free, shared by both builds (without CUDA reserving fails with
 * STK_ENOTSUP). Hot path: reserve runs per batch per GPU output; it allocates only when a batch
 * needs more room than the slot's list held before. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

/* Samples lie back to back at exactly sample_bytes each, so a batch of equal-shaped samples is
 * one dense [N, ...] tensor (stk_batch_tensor / DLPack read it as such). cudaMalloc aligns the base
 * to 256 bytes and every sample's byte size is a multiple of its element size, so each sample
 * stays aligned for its dtype. Callers wanting wider alignment (the decoder) round up themselves. */
static size_t sample_stride(size_t sample_bytes) { return sample_bytes; }

/* Room for `count` sample views: the views array grows only past what it has made. The views are
 * the caller's to place. */
static stk_status reserve_views(stk__tensor_list *list, int count, uint64_t *alloc_count) {
  if (count < 0) return STK_EINVAL;
  /* Whoever filled samples (the executor's calloc, or an earlier reserve) left count <= the entries
   * allocated, so the larger of the two is a safe lower bound on what samples holds. Only growing
   * past that reallocates: a smaller batch (a short last batch, skipped files) followed by a full
   * one reuses the array. */
  int held = list->samples ? (list->samples_capacity > list->count ? list->samples_capacity : list->count) : 0;
  if (count > held || !list->samples) {
    int want_entries = count ? count : 1;
    stk__tensor *grown = (stk__tensor *)realloc(list->samples, (size_t)want_entries * sizeof *grown);
    if (!grown) return STK_ENOMEM;
    for (int i = held; i < want_entries; i++) memset(&grown[i], 0, sizeof grown[i]);
    list->samples = grown;
    held = want_entries;
    stk__count_alloc(alloc_count);
  }
  list->samples_capacity = held;
  list->count = count;
  list->dense = 1;
  list->device = STK_DEVICE_GPU;
  return STK_OK;
}

/* Room for `need` bytes of samples and `count` sample views: the storage grows (to `want`) only past
 * what the list holds, the views array only past what it has made (reserve_views). The storage it
 * replaces goes back once free_stream's queued work is done (NULL: at once). */
static stk_status reserve_room(stk__tensor_list *list, int count, size_t need, size_t want, void *free_stream,
                               uint64_t *alloc_count) {
  if (count < 0) return STK_EINVAL;
  if (need > list->base_capacity || !list->base) {
    void *fresh = NULL;
    stk_status st = stk__gpu_malloc(&fresh, want, alloc_count);
    if (st != STK_OK) return st;
    /* A slot's list: nothing reads the old storage any more (its slot is replanned only after its
     * batch's and its consumer's events); a list shared across batches: its stream's work may. */
    if (list->base) stk__gpu_free(list->base, free_stream);
    list->base = fresh;
    list->base_capacity = want;
  }
  return reserve_views(list, count, alloc_count);
}

/* Sample i's view at `offset` bytes into the storage, borrowed from it. */
static void place_sample(stk__tensor_list *list, int i, size_t offset, uint64_t *alloc_count) {
  stk__tensor *t = &list->samples[i];
  t->data = (uint8_t *)list->base + offset;
  t->capacity = 0; /* borrowed from list->base */
  t->device = STK_DEVICE_GPU;
  t->alloc_count = alloc_count;
}

/* reserve and reserve_exact: count samples `stride` apart, in storage grown (only past what the
 * list holds) to the samples' bytes plus `headroom` of them. */
static stk_status reserve_dense(stk__tensor_list *list, int count, size_t sample_bytes, int headroom,
                                uint64_t *alloc_count) {
  size_t stride = sample_stride(sample_bytes);
  size_t need = stride * (size_t)(count > 0 ? count : 0);
  stk_status st = reserve_room(list, count, need, headroom ? need + need / 4 + 256 : need, NULL, alloc_count);
  if (st != STK_OK) return st;
  for (int i = 0; i < count; i++) place_sample(list, i, stride * (size_t)i, alloc_count);
  return STK_OK;
}

stk_status stk__gpu_tensor_list_reserve(stk__tensor_list *list, int count, size_t sample_bytes, uint64_t *alloc_count) {
  /* Grow-only with headroom so slowly growing batches (ragged decodes) settle quickly. */
  return reserve_dense(list, count, sample_bytes, 1, alloc_count);
}

stk_status stk__gpu_tensor_list_reserve_exact(stk__tensor_list *list, int count, size_t sample_bytes,
                                              uint64_t *alloc_count) {
  /* Exact the first time; a list that must grow later (a batch of more samples: variable batch
   * sizes) takes reserve's headroom, as the demand is seen to move. */
  return reserve_dense(list, count, sample_bytes, list->base != NULL, alloc_count);
}

stk_status stk__gpu_tensor_list_reserve_sizes(stk__tensor_list *list, int count, const size_t *sample_bytes,
                                              uint64_t *alloc_count) {
  return stk__gpu_tensor_list_reserve_sizes_on(list, count, sample_bytes, NULL, alloc_count);
}

stk_status stk__gpu_tensor_list_reserve_sizes_on(stk__tensor_list *list, int count, const size_t *sample_bytes,
                                                 void *free_stream, uint64_t *alloc_count) {
  if (count < 0 || (count > 0 && !sample_bytes)) return STK_EINVAL;
  size_t need = 0, largest = 0;
  for (int i = 0; i < count; i++) {
    if (sample_bytes[i] > SIZE_MAX / 4 - need) return STK_ENOMEM;
    need += sample_bytes[i];
    if (sample_bytes[i] > largest) largest = sample_bytes[i];
  }
  /* Headroom: a quarter of the sum (a large batch's sum varies by a few percent from batch to batch)
   * plus two of its largest samples (a small batch's varies by whole images), but never more than
   * reserve would take for count samples of the largest size, which covers every later batch of as
   * many samples no larger. So the storage settles after warm-up as reserve's does, smaller. */
  size_t worst = largest * (size_t)count, want = need + need / 4 + 2 * largest + 256;
  if (largest && worst / largest == (size_t)count && worst <= SIZE_MAX / 2 && worst + worst / 4 + 256 < want)
    want = worst + worst / 4 + 256;
  stk_status st = reserve_room(list, count, need, want, free_stream, alloc_count);
  if (st != STK_OK) return st;
  size_t offset = 0;
  for (int i = 0; i < count; i++) {
    place_sample(list, i, offset, alloc_count);
    offset += sample_bytes[i];
  }
  return STK_OK;
}

stk_status stk__gpu_tensor_list_borrow(stk__tensor_list *list, const stk__tensor_list *from, int count,
                                       uint64_t *alloc_count) {
  if (!from || count > from->count) return STK_EINVAL;
  stk_status st = reserve_views(list, count, alloc_count);
  if (st != STK_OK) return st;
  for (int i = 0; i < count; i++) {
    stk__tensor *t = &list->samples[i];
    t->data = from->samples[i].data;
    t->capacity = 0; /* borrowed from from's storage */
    t->device = STK_DEVICE_GPU;
    t->alloc_count = alloc_count;
  }
  return STK_OK;
}

stk_status stk__gpu_tensor_list_adopt(stk__tensor_list *list, int count, size_t sample_bytes, void **storage,
                                      size_t *capacity, uint64_t *alloc_count) {
  if (count < 0 || !*storage || *capacity < sample_stride(sample_bytes) * (size_t)count) return STK_EINVAL;
  void *old = list->base;
  size_t old_capacity = list->base_capacity;
  list->base = *storage;
  list->base_capacity = *capacity;
  stk_status st = stk__gpu_tensor_list_reserve(list, count, sample_bytes, alloc_count); /* the views only */
  if (st != STK_OK) { /* the samples array could not grow: the list keeps what it had */
    list->base = old;
    list->base_capacity = old_capacity;
    return st;
  }
  *storage = old;
  *capacity = old_capacity;
  return STK_OK;
}

/* Frees the device storage and the samples array (the list is left empty; free(list->samples)
 * afterwards, as the executor does, is a no-op). */
void stk__gpu_tensor_list_free(stk__tensor_list *list) {
  if (!list) return;
  if (list->base && list->device == STK_DEVICE_GPU) stk__gpu_free(list->base, NULL);
  list->base = NULL;
  list->base_capacity = 0;
  free(list->samples);
  list->samples = NULL;
  list->samples_capacity = 0;
  list->count = 0;
}
