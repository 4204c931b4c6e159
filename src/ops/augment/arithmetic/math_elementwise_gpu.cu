/* src/ops/augment/arithmetic/math_elementwise_gpu.cu: math.elementwise on the GPU -- the batched
 * elementwise kernel, its launcher, and the run_batch that plans the batch with the CPU
 * implementation's parse and typing rules (math_params.c). The per-element definition is
 * math_element.h, the same code the CPU implementation (math_elementwise.c, the reference) runs, so
 * results are the same bytes (see math_element.h for the transcendental functions' one caveat).
 * Tensors: every sample is a flat array of its dtype (any shape; the output takes the shape of the
 * non-scalar operand); a per-sample scalar operand is read at element 0 for every output element.
 * Test: src/ops/augment/arithmetic/test_math.c (GPU vs CPU, skipping without a device).
 * Hot path: run_batch once per batch, one kernel launch. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/arithmetic/math_params.h"
extern "C" {
#include "device/device.h"
#include "ops/common/gpu_ops.h"
}

/* One sample of the batch: out[i] = a[a_step ? i : 0] <op> b[b_step ? i : 0] for i < count. */
typedef struct math_desc {
  const void *a; /* device; NULL for a constant left operand */
  const void *b; /* device; NULL for a unary operation or a constant right operand */
  void *out;     /* device, count elements of the plan's out_dtype */
  unsigned long long count;
  int a_step, b_step;
} math_desc;

__global__ void math_elementwise_kernel(const math_desc *descs, stk__math_plan plan) {
  const math_desc d = descs[blockIdx.y];
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < d.count; i += stride)
    stk__math_element(&plan, d.a, d.a_step ? i : 0, d.b, d.b_step ? i : 0, d.out, i);
}

/* Launcher: descs_device holds `count` descriptors; max_elements is the largest sample's count. */
static stk_status math_elementwise_batch(const math_desc *descs_device, int count, size_t max_elements,
                                         const stk__math_plan *plan, cudaStream_t stream) {
  if (count <= 0 || max_elements == 0) return STK_OK;
  const unsigned threads = 256;
  size_t blocks = (max_elements + threads - 1) / threads;
  if (blocks > 4096) blocks = 4096; /* the loop covers the rest */
  if (count > 65535) return STK_EINVAL;
  dim3 grid((unsigned)blocks, (unsigned)count);
  math_elementwise_kernel<<<grid, threads, 0, stream>>>(descs_device, *plan);
  return cudaGetLastError() == cudaSuccess ? STK_OK : STK_ECUDA;
}

typedef struct math_gpu_state {
  stk__math_params params;
  stk__gpu_arena arena;
  size_t *sizes; /* per sample output bytes (grow-only) */
  int sizes_capacity;
} math_gpu_state;

static stk_status math_gpu_init(stk__op *op, char *err, size_t err_size) {
  math_gpu_state *s = (math_gpu_state *)calloc(1, sizeof *s);
  if (!s) return STK_ENOMEM;
  stk_status st = stk__math_params_get(op, &s->params, err, err_size);
  if (st != STK_OK) {
    free(s);
    return st;
  }
  op->state = s;
  return STK_OK;
}

static void math_gpu_destroy(stk__op *op) {
  math_gpu_state *s = (math_gpu_state *)op->state;
  if (!s) return;
  stk__gpu_arena_free(&s->arena);
  free(s->sizes);
  free(s);
  op->state = NULL;
}

static stk_status fail(const stk__batch_ctx *ctx, stk_status st, const char *what) {
  if (st != STK_OK && ctx->err && ctx->err[0] == '\0')
    stk__errorf(ctx->err, ctx->err_size, "%s failed (%s)", what, stk_strerror(st));
  return st;
}

/* Output shapes of the batch (the CPU's broadcasting rules, sample by sample) into out's samples. */
static stk_status shape_outputs(math_gpu_state *s, const stk__batch_ctx *ctx, const stk__tensor_list *a,
                                const stk__tensor_list *b, const stk__math_plan *plan, stk__tensor_list *out,
                                size_t *max_elements) {
  const int n = a->count;
  if (n > s->sizes_capacity) {
    size_t *grown = (size_t *)realloc(s->sizes, sizeof(size_t) * (size_t)n);
    if (!grown) return STK_ENOMEM;
    s->sizes = grown;
    s->sizes_capacity = n;
  }
  for (int i = 0; i < n; i++) {
    int64_t shape[STK_MAX_DIMS];
    const char *layout;
    int sa, sb, nd;
    char why[400] = "";
    stk_status st = stk__math_broadcast(&a->samples[i], b ? &b->samples[i] : NULL, &nd, shape, &layout, &sa, &sb,
                                        why, sizeof why);
    if (st != STK_OK) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: %s", i, why);
      return st;
    }
    size_t elements = 1;
    for (int k = 0; k < nd; k++) elements *= (size_t)shape[k];
    if (elements > *max_elements) *max_elements = elements;
    s->sizes[i] = (elements * stk_dtype_size((stk_dtype)plan->out_dtype) + 255) & ~(size_t)255;
  }
  stk_status st = stk__gpu_tensor_list_reserve_sizes(out, n, s->sizes, ctx->alloc_count);
  if (st != STK_OK) return fail(ctx, st, "reserving the output batch on the GPU");
  for (int i = 0; i < n; i++) {
    int64_t shape[STK_MAX_DIMS];
    const char *layout;
    int sa, sb, nd;
    stk__math_broadcast(&a->samples[i], b ? &b->samples[i] : NULL, &nd, shape, &layout, &sa, &sb, NULL, 0);
    char layout_copy[sizeof a->samples[i].layout];
    memcpy(layout_copy, layout, sizeof layout_copy);
    size_t elements = 1;
    for (int k = 0; k < nd; k++) elements *= (size_t)shape[k];
    stk__tensor *t = &out->samples[i];
    stk__tensor_set_shape(t, (stk_dtype)plan->out_dtype, nd, shape, layout_copy,
                          elements * stk_dtype_size((stk_dtype)plan->out_dtype));
    t->device = STK_DEVICE_GPU;
  }
  stk__gpu_tensor_list_settle(out);
  return STK_OK;
}

static stk_status math_gpu_run_batch(stk__op *op, stk__batch_ctx *ctx, stk__tensor_list *const *inputs,
                                     stk__tensor_list *const *outputs) {
  math_gpu_state *s = (math_gpu_state *)op->state;
  const stk__math_params *p = &s->params;
  const stk__tensor_list *a = inputs[0], *b = op->num_inputs > 1 ? inputs[1] : NULL;
  const int n = a->count;
  stk_status st = stk__math_inputs_check(op, p, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  if (b && b->count != n) {
    stk__errorf(ctx->err, ctx->err_size, "the operands' batches differ in size (%d and %d samples)", n, b->count);
    return STK_EINVAL;
  }
  if (n == 0) return stk__gpu_tensor_list_reserve(outputs[0], 0, 1, ctx->alloc_count);
  for (int i = 0; i < n; i++)
    if (a->samples[i].device != STK_DEVICE_GPU || (b && b->samples[i].device != STK_DEVICE_GPU)) {
      stk__errorf(ctx->err, ctx->err_size, "sample %d: an operand is not on the GPU", i);
      return STK_EINVAL;
    }
  stk__math_plan plan;
  st = stk__math_plan_make(p, a->samples[0].dtype, b ? b->samples[0].dtype : a->samples[0].dtype, &plan,
                                      ctx->err, ctx->err_size);
  size_t max_elements = 0;
  if (st == STK_OK) st = shape_outputs(s, ctx, a, b, &plan, outputs[0], &max_elements);
  if (st != STK_OK) return st;
  const size_t desc_bytes = (size_t)n * sizeof(math_desc);
  st = stk__gpu_arena_reserve(&s->arena, desc_bytes + 64, stk__gpu_device_numa_node(ctx->device_id),
                              ctx->alloc_count);
  if (st != STK_OK) return fail(ctx, st, "reserving the descriptor upload");
  size_t at = stk__gpu_arena_push(&s->arena, desc_bytes);
  math_desc *d = (math_desc *)(s->arena.host + at);
  const int swap = p->has_constant && p->constant_left && !stk__math_op_is_unary(p->op);
  for (int i = 0; i < n; i++) {
    int64_t shape[STK_MAX_DIMS];
    const char *layout;
    int sa, sb, nd;
    stk__math_broadcast(&a->samples[i], b ? &b->samples[i] : NULL, &nd, shape, &layout, &sa, &sb, NULL, 0);
    d[i].a = swap ? NULL : a->samples[i].data;
    d[i].a_step = swap ? 0 : sa;
    d[i].b = swap ? a->samples[i].data : (b ? b->samples[i].data : NULL);
    d[i].b_step = swap ? sa : sb;
    d[i].out = outputs[0]->samples[i].data;
    d[i].count = stk__tensor_numel(&outputs[0]->samples[i]);
  }
  cudaStream_t stream = (cudaStream_t)ctx->cuda_stream;
  st = stk__gpu_arena_upload(&s->arena, stream);
  if (st != STK_OK) return fail(ctx, st, "uploading the descriptors");
  st = math_elementwise_batch((const math_desc *)(s->arena.device + at), n, max_elements, &plan, stream);
  return fail(ctx, st, "the math.elementwise kernel launch");
}

extern "C" {
const stk__op_impl stk__gpu_impl_math_elementwise = {
    math_gpu_init, math_gpu_destroy, NULL, NULL, NULL, NULL, math_gpu_run_batch};
}
