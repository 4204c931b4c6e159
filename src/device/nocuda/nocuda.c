/* src/device/nocuda/nocuda.c: the device runtime of a build without CUDA -- the no-CUDA twin of
 * src/device/cuda/ behind src/device/device.h. Every call that would need a GPU fails with
 * STK_ENOTSUP (stk__gpu_open says why); releases and queries are harmless no-ops. The build
 * compiles this folder instead of src/device/cuda/ when nvcc is absent or STOKER_CUDA=OFF.
 * Not a hot path. */
#include "device/device.h"

/* ---- Devices, streams, events, copies (twin of cuda/runtime.cu) ------------------------------ */
int stk__gpu_built(void) { return 0; }

stk_status stk__gpu_open(int device_id, char *err, size_t err_size) {
  stk__errorf(err, err_size, "device_id %d requested, but this stoker was built without CUDA (nvcc not found)",
              device_id);
  return STK_ENOTSUP;
}

stk_status stk__gpu_set_device(int device_id) { return STK_ENOTSUP; }
int stk__gpu_device_numa_node(int device_id) { return -1; }

stk_status stk__gpu_pci_bus_id(int device_id, char *out, size_t out_size) {
  if (out_size) out[0] = '\0';
  return STK_ENOTSUP;
}

stk_status stk__gpu_stream_create(void **stream, int priority) {
  *stream = NULL;
  return STK_ENOTSUP;
}
void stk__gpu_stream_destroy(void *stream) {}
stk_status stk__gpu_stream_synchronize(void *stream) { return STK_ENOTSUP; }

stk_status stk__gpu_event_create(void **event) {
  *event = NULL;
  return STK_ENOTSUP;
}
void stk__gpu_event_destroy(void *event) {}
stk_status stk__gpu_event_record(void *event, void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_event_synchronize(void *event) { return STK_ENOTSUP; }
int stk__gpu_event_done(void *event) { return -1; }
stk_status stk__gpu_stream_wait_event(void *stream, void *event) { return STK_ENOTSUP; }

stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream) { return STK_ENOTSUP; }
stk_status stk__gpu_memcpy_d2d_async(void *dst, const void *src, size_t bytes, void *stream) { return STK_ENOTSUP; }
double stk__gpu_pinning_seconds(void) { return 0.0; }
stk_status stk__gpu_copy_parts_async(const stk__gpu_copy_part *parts, int count, void *stream) {
  return count > 0 ? STK_ENOTSUP : STK_OK;
}
stk_status stk__gpu_get_device(int *device_id) {
  *device_id = -1;
  return STK_ENOTSUP;
}
int stk__gpu_pointer_device(const void *ptr) { return -1; }

/* ---- Device memory (twin of cuda/device_memory.cu) ------------------------------------------- */
stk_status stk__gpu_malloc(void **ptr, size_t bytes, uint64_t *alloc_count) {
  *ptr = NULL;
  return STK_ENOTSUP;
}
void stk__gpu_free(void *ptr, void *stream) {}
int stk__gpu_trim_pools(void) { return 0; }
uint64_t stk__gpu_bytes_held(void) { return 0; }

/* ---- Pinned host memory (twin of cuda/pinned.cu) ---------------------------------------------- */
stk_status stk__gpu_pinned_alloc(void **ptr, size_t bytes, int numa_node, int *placed_node, uint64_t *alloc_count) {
  *ptr = NULL;
  if (placed_node) *placed_node = -1;
  return STK_ENOTSUP;
}
void stk__gpu_pinned_free(void *ptr) {}
