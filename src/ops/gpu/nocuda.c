/* src/ops/gpu/nocuda.c: the GPU backend of a build without CUDA: every call says so.
 * Compiled always; empty when STOKER_HAVE_CUDA is defined (backend.cu provides the real one). */
#include "core/gpu_backend.h"

#if !defined(STOKER_HAVE_CUDA)
int stk__gpu_built(void) { return 0; }
stk_status stk__gpu_open(int device_id, char *err, size_t err_size) {
  stk__errorf(err, err_size, "device_id %d requested, but this stoker was built without CUDA (nvcc not found)",
              device_id);
  return STK_ENOTSUP;
}
stk_status stk__gpu_set_device(int device_id) { return STK_ENOTSUP; }
int stk__gpu_device_numa_node(int device_id) { return -1; }
stk_status stk__gpu_stream_create(void **stream, int priority) { *stream = NULL; return STK_ENOTSUP; }
void stk__gpu_stream_destroy(void *stream) {}
stk_status stk__gpu_stream_synchronize(void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_event_create(void **event) { *event = NULL; return STK_ENOTSUP; }
void stk__gpu_event_destroy(void *event) {}
stk_status stk__gpu_event_record(void *event, void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_event_synchronize(void *event) { return STK_ENOTSUP; }
int stk__gpu_event_done(void *event) { return -1; }
stk_status stk__gpu_stream_wait_event(void *stream, void *event) { return STK_ENOTSUP; }
stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count) { *ptr = NULL; return STK_ENOTSUP; }
void stk__gpu_free(void *ptr, void *stream) {}
stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node, uint64_t *alloc_count) {
  *ptr = NULL;
  return STK_ENOTSUP;
}
void stk__gpu_pinned_free(void *ptr) {}
stk_status stk__gpu_pinned_block_get(void **ptr, size_t *bytes, int numa_node, uint64_t *alloc_count) {
  *ptr = NULL;
  return STK_ENOTSUP;
}
void stk__gpu_pinned_block_put(void *ptr, size_t bytes, int numa_node) {}
stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream) { return STK_ENOTSUP; }
uint64_t stk__gpu_bytes_held(void) { return 0; }
stk_status stk__gpu_tensor_list_reserve(stk__tensor_list *list, int count, size_t sample_bytes, uint64_t *alloc_count) {
  return STK_ENOTSUP;
}
void stk__gpu_tensor_list_free(stk__tensor_list *list) {}
#endif
