/* src/core/dlpack.c: zero-copy export of a dense batch output as a DLPack DLManagedTensor.
 * The export holds a reference on the batch (stk__batch_ref); the deleter drops it, so the
 * batch's buffers go back to the pipeline only after the consumer and every export are done.
 * Exported with the consumer's stream, the stream waits on the batch's event and the deleter
 * records it on the batch before letting go. Not on a hot path (once per output per batch). */
#include <stdlib.h>
#include <string.h>

#include "core/exec/executor.h"
#include "device/device.h"
#include "stoker/dlpack.h"

typedef struct dlpack_export {
  DLManagedTensor managed;
  int64_t shape[STK_MAX_DIMS];
  stk_batch *batch;
  void *stream; /* consumer's CUDA stream (stk_batch_to_dlpack_on_stream) */
  int has_stream;
} dlpack_export;

static void dlpack_deleter(DLManagedTensor *self) {
  if (!self) return;
  dlpack_export *e = self->manager_ctx;
  if (e->has_stream) stk_batch_record_stream(e->batch, e->stream);
  stk_batch_release(e->batch);
  free(e);
}

static stk_status export_tensor(stk_batch *batch, int output, void *stream, int has_stream, DLManagedTensor **out);

static DLDataType dl_dtype(stk_dtype dtype) {
  DLDataType t = {kDLUInt, 8, 1};
  switch (dtype) {
    case STK_DTYPE_UINT8:
      t.code = kDLUInt;
      t.bits = 8;
      break;
    case STK_DTYPE_INT32:
      t.code = kDLInt;
      t.bits = 32;
      break;
    case STK_DTYPE_INT64:
      t.code = kDLInt;
      t.bits = 64;
      break;
    case STK_DTYPE_FLOAT32:
      t.code = kDLFloat;
      t.bits = 32;
      break;
    case STK_DTYPE_FLOAT16:
      t.code = kDLFloat;
      t.bits = 16;
      break;
    case STK_DTYPE_BOOL:
      t.code = kDLBool;
      t.bits = 8;
      break;
    case STK_DTYPE_INT8:
      t.code = kDLInt;
      t.bits = 8;
      break;
    case STK_DTYPE_INT16:
      t.code = kDLInt;
      t.bits = 16;
      break;
    case STK_DTYPE_UINT16:
      t.code = kDLUInt;
      t.bits = 16;
      break;
    case STK_DTYPE_UINT32:
      t.code = kDLUInt;
      t.bits = 32;
      break;
    case STK_DTYPE_UINT64:
      t.code = kDLUInt;
      t.bits = 64;
      break;
    case STK_DTYPE_FLOAT64:
      t.code = kDLFloat;
      t.bits = 64;
      break;
  }
  return t;
}

stk_status stk_batch_to_dlpack(stk_batch *batch, int output, DLManagedTensor **out) {
  return export_tensor(batch, output, NULL, 0, out);
}

stk_status stk_batch_to_dlpack_on_stream(stk_batch *batch, int output, void *cuda_stream, DLManagedTensor **out) {
  return export_tensor(batch, output, cuda_stream, 1, out);
}

static stk_status export_tensor(stk_batch *batch, int output, void *stream, int has_stream, DLManagedTensor **out) {
  if (!batch || !out) return STK_EINVAL;
  *out = NULL;
  stk_tensor_view view;
  stk_status st = stk_batch_tensor(batch, output, &view);
  if (st != STK_OK) return st;
  dlpack_export *e = calloc(1, sizeof *e);
  if (!e) return STK_ENOMEM;
  for (int d = 0; d < view.ndim; d++) e->shape[d] = view.shape[d];
  e->batch = batch;
  if (has_stream && view.device_type == STK_DEVICE_GPU && batch->cuda_event) {
    st = stk__gpu_stream_wait_event(stream, batch->cuda_event);
    if (st != STK_OK) {
      free(e);
      return st;
    }
    e->stream = stream;
    e->has_stream = 1;
  }
  DLTensor *t = &e->managed.dl_tensor;
  t->data = view.data;
  t->device.device_type = view.device_type == STK_DEVICE_GPU ? kDLCUDA : kDLCPU;
  t->device.device_id = view.device_type == STK_DEVICE_GPU ? view.device_id : 0;
  t->ndim = view.ndim;
  t->dtype = dl_dtype(view.dtype);
  t->shape = e->shape;
  t->strides = NULL;
  t->byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = dlpack_deleter;
  stk__batch_ref(batch);
  *out = &e->managed;
  return STK_OK;
}
