/* src/device/cuda/runtime.cu: the CUDA side of src/device/device.h for devices, streams, events
 * and copies (device memory: device_memory.cu; pinned host memory: pinned.cu).
 * Hot path: the event, stream and copy calls run per batch; opening a device runs at build. */
#include <cuda_runtime_api.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "stoker/pipeline.h" /* stk_stream_priority */

int stk__gpu_built(void) { return 1; }

stk_status stk__gpu_open(int device_id, char *err, size_t err_size) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    stk__errorf(err, err_size, "device_id %d requested, but no CUDA device is usable: %s", device_id,
                cudaGetErrorString(rc));
    cudaGetLastError();
    return STK_ENODEV;
  }
  if (device_id < 0 || device_id >= count) {
    stk__errorf(err, err_size, "device_id %d requested, but this machine has %d CUDA device(s) (valid: 0..%d)",
                device_id, count, count - 1);
    return STK_ENODEV;
  }
  rc = cudaSetDevice(device_id);
  if (rc == cudaSuccess) rc = cudaFree(0); /* creates the primary context now, not mid-batch */
  if (rc != cudaSuccess) {
    stk__errorf(err, err_size, "CUDA device %d could not be initialised: %s", device_id, cudaGetErrorString(rc));
    cudaGetLastError();
    return STK_ECUDA;
  }
  return STK_OK;
}

stk_status stk__gpu_set_device(int device_id) { return cudaSetDevice(device_id) == cudaSuccess ? STK_OK : STK_ECUDA; }

stk_status stk__gpu_get_device(int *device_id) { return cudaGetDevice(device_id) == cudaSuccess ? STK_OK : STK_ECUDA; }

int stk__gpu_pointer_device(const void *ptr) {
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError(); /* a plain host pointer on old runtimes */
    return -1;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged ? attr.device : -1;
}

stk_status stk__gpu_pci_bus_id(int device_id, char *out, size_t out_size) {
  if (cudaDeviceGetPCIBusId(out, (int)out_size, device_id) != cudaSuccess) {
    cudaGetLastError();
    return STK_ECUDA;
  }
  for (char *c = out; *c; c++) *c = (char)tolower((unsigned char)*c); /* sysfs spells hex in lower case */
  return STK_OK;
}

int stk__gpu_device_numa_node(int device_id) {
  char bus_id[32];
  if (stk__gpu_pci_bus_id(device_id, bus_id, sizeof bus_id) != STK_OK) return -1;
  char path[128];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus_id);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int node = -1;
  if (fscanf(f, "%d", &node) != 1) node = -1;
  fclose(f);
  return node;
}

/* ---- Streams and events ----------------------------------------------------------------------- */
stk_status stk__gpu_stream_create(void **stream, int priority) {
  /* CUDA: lower numbers are higher priorities; the default (0) is also the least. */
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) greatest = 0;
  const int cuda_priority = priority == STK_STREAM_PRIORITY_HIGH ? greatest : 0;
  cudaStream_t s = NULL;
  if (cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, cuda_priority) != cudaSuccess) {
    *stream = NULL;
    return STK_ECUDA;
  }
  *stream = (void *)s;
  return STK_OK;
}

void stk__gpu_stream_destroy(void *stream) {
  if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

stk_status stk__gpu_stream_synchronize(void *stream) {
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_event_create(void **event) {
  cudaEvent_t e = NULL;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync) != cudaSuccess) {
    *event = NULL;
    return STK_ECUDA;
  }
  *event = (void *)e;
  return STK_OK;
}

void stk__gpu_event_destroy(void *event) {
  if (event) cudaEventDestroy((cudaEvent_t)event);
}

stk_status stk__gpu_event_record(void *event, void *stream) {
  return cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_event_synchronize(void *event) {
  return cudaEventSynchronize((cudaEvent_t)event) == cudaSuccess ? STK_OK : STK_ECUDA;
}

int stk__gpu_event_done(void *event) {
  cudaError_t rc = cudaEventQuery((cudaEvent_t)event);
  if (rc == cudaSuccess) return 1;
  if (rc == cudaErrorNotReady) return 0;
  cudaGetLastError();
  return -1;
}

stk_status stk__gpu_stream_wait_event(void *stream, void *event) {
  return cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0) == cudaSuccess ? STK_OK : STK_ECUDA;
}

/* ---- Copies ------------------------------------------------------------------------------------ */
stk_status stk__gpu_memcpy_h2d_async(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return STK_OK;
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream) == cudaSuccess ? STK_OK
                                                                                                       : STK_ECUDA;
}

stk_status stk__gpu_memcpy_d2h(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return STK_OK;
  if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream) != cudaSuccess) return STK_ECUDA;
  return cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess ? STK_OK : STK_ECUDA;
}

stk_status stk__gpu_memcpy_d2d_async(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return STK_OK;
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream) == cudaSuccess ? STK_OK
                                                                                                         : STK_ECUDA;
}

/* The parts of one launch: 160 x 24 bytes, inside the 4 KiB of parameters every CUDA version takes. */
enum { PARTS_PER_LAUNCH = 160, COPY_THREADS = 256, COPY_BLOCKS_MAX = 128 };
struct copy_parts_table {
  stk__gpu_copy_part part[PARTS_PER_LAUNCH];
};

/* grid (blocks over a part's bytes, parts): each block a grid-stride loop over its part; 16 bytes a
 * thread where both pointers are 16-byte aligned, then the tail, else a byte a thread.
 * __grid_constant__: the table is read in place from parameter memory, not copied per thread. */
__global__ void copy_parts_kernel(const __grid_constant__ copy_parts_table table, int count) {
  for (int p = blockIdx.y; p < count; p += gridDim.y) {
    char *dst = (char *)table.part[p].dst;
    const char *src = (const char *)table.part[p].src;
    size_t bytes = table.part[p].bytes;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    size_t done = 0;
    if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
      size_t vectors = bytes / 16;
      for (size_t i = first; i < vectors; i += stride) ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
      done = vectors * 16;
    }
    for (size_t i = done + first; i < bytes; i += stride) dst[i] = src[i];
  }
}

stk_status stk__gpu_copy_parts_async(const stk__gpu_copy_part *parts, int count, void *stream) {
  if (count < 0 || (count && !parts)) return STK_EINVAL;
  for (int at = 0; at < count; at += PARTS_PER_LAUNCH) {
    copy_parts_table table;
    int n = count - at < PARTS_PER_LAUNCH ? count - at : PARTS_PER_LAUNCH;
    size_t largest = 0;
    for (int i = 0; i < n; i++) {
      table.part[i] = parts[at + i];
      if (parts[at + i].bytes > largest) largest = parts[at + i].bytes;
    }
    if (!largest) continue;
    size_t blocks = (largest / 16 + COPY_THREADS * 4 - 1) / (COPY_THREADS * 4); /* ~4 vectors a thread */
    if (blocks < 1) blocks = 1;
    if (blocks > (size_t)COPY_BLOCKS_MAX) blocks = COPY_BLOCKS_MAX;
    dim3 grid((unsigned)blocks, (unsigned)n);
    copy_parts_kernel<<<grid, COPY_THREADS, 0, (cudaStream_t)stream>>>(table, n);
    if (cudaPeekAtLastError() != cudaSuccess) {
      cudaGetLastError();
      return STK_ECUDA;
    }
  }
  return STK_OK;
}
