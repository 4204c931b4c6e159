/* src/device/cuda/nvjpeg_api.h: the part of nvJPEG's C API stoker uses, declared here (values and
 * signatures checked against NVIDIA's nvJPEG documentation and nvjpeg.h of nvJPEG 13.x) because
 * nvJPEG is loaded at run time with dlopen: one build runs with or without it. All calls go
 * through one table of function pointers (stk__nvjpeg_api) filled by stk__nvjpeg_load().
 * Part of the device runtime (src/device); included by CUDA files only (it names cudaStream_t),
 * today the mixed decoder's under src/ops/gpu. Not a hot path itself (the table is). */
#ifndef STOKER_DEVICE_CUDA_NVJPEG_API_H
#define STOKER_DEVICE_CUDA_NVJPEG_API_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  NVJPEG_STATUS_SUCCESS = 0,
  NVJPEG_STATUS_NOT_INITIALIZED = 1,
  NVJPEG_STATUS_INVALID_PARAMETER = 2,
  NVJPEG_STATUS_BAD_JPEG = 3,
  NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
  NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
  NVJPEG_STATUS_EXECUTION_FAILED = 6,
  NVJPEG_STATUS_ARCH_MISMATCH = 7,
  NVJPEG_STATUS_INTERNAL_ERROR = 8,
  NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
  NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
} nvjpegStatus_t;

typedef enum {
  NVJPEG_OUTPUT_UNCHANGED = 0,
  NVJPEG_OUTPUT_YUV = 1,
  NVJPEG_OUTPUT_Y = 2,
  NVJPEG_OUTPUT_RGB = 3,
  NVJPEG_OUTPUT_BGR = 4,
  NVJPEG_OUTPUT_RGBI = 5,
  NVJPEG_OUTPUT_BGRI = 6
} nvjpegOutputFormat_t;

typedef enum {
  NVJPEG_BACKEND_DEFAULT = 0,
  NVJPEG_BACKEND_HYBRID = 1,
  NVJPEG_BACKEND_GPU_HYBRID = 2,
  NVJPEG_BACKEND_HARDWARE = 3
} nvjpegBackend_t;

typedef enum {
  NVJPEG_CSS_444 = 0,
  NVJPEG_CSS_422 = 1,
  NVJPEG_CSS_420 = 2,
  NVJPEG_CSS_440 = 3,
  NVJPEG_CSS_411 = 4,
  NVJPEG_CSS_410 = 5,
  NVJPEG_CSS_GRAY = 6,
  NVJPEG_CSS_410V = 7,
  NVJPEG_CSS_UNKNOWN = -1
} nvjpegChromaSubsampling_t;

#define NVJPEG_MAX_COMPONENT 4
#define NVJPEG_FLAGS_DEFAULT 0

typedef struct {
  unsigned char *channel[NVJPEG_MAX_COMPONENT];
  size_t pitch[NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

typedef struct nvjpegHandle *nvjpegHandle_t;
typedef struct nvjpegJpegState *nvjpegJpegState_t;
typedef struct nvjpegBufferPinned *nvjpegBufferPinned_t;
typedef struct nvjpegBufferDevice *nvjpegBufferDevice_t;
typedef struct nvjpegJpegStream *nvjpegJpegStream_t;
typedef struct nvjpegDecodeParams *nvjpegDecodeParams_t;
typedef struct nvjpegJpegDecoder *nvjpegJpegDecoder_t;
/* The V1 allocator structs are only passed as NULL (library defaults). */
typedef struct nvjpegDevAllocator nvjpegDevAllocator_t;
typedef struct nvjpegPinnedAllocator nvjpegPinnedAllocator_t;
/* The extended (V2) allocators, stream-ordered, as nvjpeg.h declares them (CUDA 11.6+): nvJPEG
 * passes the context and the stream the memory is used on. 0 = success. */
typedef int (*stk__nvjpeg_malloc_v2)(void *ctx, void **ptr, size_t size, cudaStream_t stream);
typedef int (*stk__nvjpeg_free_v2)(void *ctx, void *ptr, size_t size, cudaStream_t stream);
typedef struct {
  stk__nvjpeg_malloc_v2 dev_malloc;
  stk__nvjpeg_free_v2 dev_free;
  void *dev_ctx;
} nvjpegDevAllocatorV2_t;
typedef struct {
  stk__nvjpeg_malloc_v2 pinned_malloc;
  stk__nvjpeg_free_v2 pinned_free;
  void *pinned_ctx;
} nvjpegPinnedAllocatorV2_t;

typedef struct stk__nvjpeg_api {
  void *library; /* dlopen handle */
  nvjpegStatus_t (*CreateEx)(nvjpegBackend_t backend, nvjpegDevAllocator_t *dev_allocator,
                             nvjpegPinnedAllocator_t *pinned_allocator, unsigned int flags, nvjpegHandle_t *handle);
  nvjpegStatus_t (*Destroy)(nvjpegHandle_t handle);
  nvjpegStatus_t (*GetHardwareDecoderInfo)(nvjpegHandle_t handle, unsigned int *num_engines,
                                           unsigned int *num_cores_per_engine);
  nvjpegStatus_t (*JpegStateCreate)(nvjpegHandle_t handle, nvjpegJpegState_t *state);
  nvjpegStatus_t (*JpegStateDestroy)(nvjpegJpegState_t state);
  nvjpegStatus_t (*DecodeBatchedInitialize)(nvjpegHandle_t handle, nvjpegJpegState_t state, int batch_size,
                                            int max_cpu_threads, nvjpegOutputFormat_t output_format);
  nvjpegStatus_t (*DecodeBatched)(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,
                                  const size_t *lengths, nvjpegImage_t *destinations, cudaStream_t stream);
  nvjpegStatus_t (*BufferPinnedCreate)(nvjpegHandle_t handle, nvjpegPinnedAllocator_t *allocator,
                                       nvjpegBufferPinned_t *buffer);
  nvjpegStatus_t (*BufferPinnedDestroy)(nvjpegBufferPinned_t buffer);
  nvjpegStatus_t (*BufferPinnedRetrieve)(nvjpegBufferPinned_t buffer, size_t *size, void **ptr);
  nvjpegStatus_t (*BufferDeviceCreate)(nvjpegHandle_t handle, nvjpegDevAllocator_t *allocator,
                                       nvjpegBufferDevice_t *buffer);
  nvjpegStatus_t (*BufferDeviceDestroy)(nvjpegBufferDevice_t buffer);
  nvjpegStatus_t (*StateAttachPinnedBuffer)(nvjpegJpegState_t state, nvjpegBufferPinned_t buffer);
  nvjpegStatus_t (*StateAttachDeviceBuffer)(nvjpegJpegState_t state, nvjpegBufferDevice_t buffer);
  nvjpegStatus_t (*JpegStreamCreate)(nvjpegHandle_t handle, nvjpegJpegStream_t *stream);
  nvjpegStatus_t (*JpegStreamDestroy)(nvjpegJpegStream_t stream);
  nvjpegStatus_t (*JpegStreamParse)(nvjpegHandle_t handle, const unsigned char *data, size_t length, int save_metadata,
                                    int save_stream, nvjpegJpegStream_t stream);
  nvjpegStatus_t (*DecodeParamsCreate)(nvjpegHandle_t handle, nvjpegDecodeParams_t *params);
  nvjpegStatus_t (*DecodeParamsDestroy)(nvjpegDecodeParams_t params);
  nvjpegStatus_t (*DecodeParamsSetOutputFormat)(nvjpegDecodeParams_t params, nvjpegOutputFormat_t format);
  nvjpegStatus_t (*DecodeParamsSetROI)(nvjpegDecodeParams_t params, int offset_x, int offset_y, int roi_width,
                                       int roi_height);
  nvjpegStatus_t (*DecoderCreate)(nvjpegHandle_t handle, nvjpegBackend_t implementation, nvjpegJpegDecoder_t *decoder);
  nvjpegStatus_t (*DecoderDestroy)(nvjpegJpegDecoder_t decoder);
  /* NB: *is_supported == 0 means "supported" (nvJPEG's convention). */
  nvjpegStatus_t (*DecoderJpegSupported)(nvjpegJpegDecoder_t decoder, nvjpegJpegStream_t stream,
                                         nvjpegDecodeParams_t params, int *is_supported);
  nvjpegStatus_t (*DecoderStateCreate)(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder, nvjpegJpegState_t *state);
  nvjpegStatus_t (*DecodeJpegHost)(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder, nvjpegJpegState_t state,
                                   nvjpegDecodeParams_t params, nvjpegJpegStream_t stream);
  nvjpegStatus_t (*DecodeJpegTransferToDevice)(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder,
                                               nvjpegJpegState_t state, nvjpegJpegStream_t stream,
                                               cudaStream_t cuda_stream);
  nvjpegStatus_t (*DecodeJpegDevice)(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder, nvjpegJpegState_t state,
                                     nvjpegImage_t *destination, cudaStream_t cuda_stream);
  /* Optional (NULL when this nvJPEG lacks them): batched decode with per-image parameters (a
   * window decoded by the engines) and the engines' memory pool made up front. */
  nvjpegStatus_t (*DecodeBatchedEx)(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,
                                    const size_t *lengths, nvjpegImage_t *destinations,
                                    nvjpegDecodeParams_t *decode_params, cudaStream_t stream);
  nvjpegStatus_t (*DecodeBatchedPreAllocate)(nvjpegHandle_t handle, nvjpegJpegState_t state, int batch_size, int width,
                                             int height, nvjpegChromaSubsampling_t chroma_subsampling,
                                             nvjpegOutputFormat_t output_format);
  /* Optional: extra bytes every later device / pinned allocation of the handle gets, so buffers
   * that grow with the images are reallocated less often (loaded; the decoder leaves the library's default). */
  nvjpegStatus_t (*SetDeviceMemoryPadding)(size_t padding, nvjpegHandle_t handle);
  nvjpegStatus_t (*SetPinnedMemoryPadding)(size_t padding, nvjpegHandle_t handle);
  /* Optional: handles and buffers with the extended allocators (STOKER_MIXED_ALLOC=1). */
  nvjpegStatus_t (*CreateExV2)(nvjpegBackend_t backend, nvjpegDevAllocatorV2_t *dev_allocator,
                               nvjpegPinnedAllocatorV2_t *pinned_allocator, unsigned int flags, nvjpegHandle_t *handle);
  nvjpegStatus_t (*BufferPinnedCreateV2)(nvjpegHandle_t handle, nvjpegPinnedAllocatorV2_t *allocator,
                                         nvjpegBufferPinned_t *buffer);
  nvjpegStatus_t (*BufferDeviceCreateV2)(nvjpegHandle_t handle, nvjpegDevAllocatorV2_t *allocator,
                                         nvjpegBufferDevice_t *buffer);
} stk__nvjpeg_api;

/* Loads nvJPEG once per process (libnvjpeg.so.13, then .12, .11, then libnvjpeg.so); the table
 * is shared and lives until exit. On failure returns NULL with the reason in err. Thread-safe. */
STK_INTERNAL const stk__nvjpeg_api *stk__nvjpeg_load(char *err, size_t err_size);

/* "NVJPEG_STATUS_BAD_JPEG", ... */
STK_INTERNAL const char *stk__nvjpeg_status_name(nvjpegStatus_t status);

#ifdef __cplusplus
}
#endif
#endif
