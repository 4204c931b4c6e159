/* stoker/dlpack.h: zero-copy export of batch outputs as DLPack tensors.
 *
 * The structs below follow the DLPack ABI (DLPack 0.8 / "dltensor" capsules): the layout is the
 * published interchange format, so PyTorch, NumPy, CuPy and JAX accept them. They are declared
 * under stoker's own guard; if the real dlpack.h was included first, those definitions are used.
 *
 * Ownership: stk_batch_to_dlpack() takes a reference on the batch. The batch's memory stays
 * valid until both stk_batch_release() was called and every exported tensor's deleter ran.
 * Thread contract: a deleter may run on any thread. */
#ifndef STOKER_DLPACK_H
#define STOKER_DLPACK_H

#include <stdint.h>

#include "stoker/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_VERSION
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLBool = 6U } DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* NULL = compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
#endif

/* Exports dense output `output` of batch as a DLManagedTensor (kDLCPU or kDLCUDA). The caller
 * owns *out and must call (*out)->deleter(*out) exactly once (a DLPack consumer does this). */
STK_EXPORT stk_status stk_batch_to_dlpack(stk_batch *batch, int output, DLManagedTensor **out);
/* The same for a consumer that reads the tensor with GPU work queued on `cuda_stream` (a
 * cudaStream_t; the DLPack protocol's 1 = legacy default stream, 2 = per-thread default stream):
 * the stream first waits on the batch's CUDA event, and the deleter records the stream
 * (stk_batch_record_stream) before dropping its reference, so the memory is reused only after
 * the GPU work queued on that stream until the tensor was freed has finished. */
STK_EXPORT stk_status stk_batch_to_dlpack_on_stream(stk_batch *batch, int output, void *cuda_stream,
                                                    DLManagedTensor **out);

#ifdef __cplusplus
}
#endif
#endif
