/* src/ops/common/axis_tables.h: which of a batch's resampling axes can share one weight table. A
 * table (stk__resample_weights) is a function of its key -- source size, output size, source
 * interval -- and of the operator's interp and antialias, fixed for an operator; so an axis whose
 * key an earlier axis of the batch has uses that axis's table. The GPU resize and fused
 * resize+crop_mirror_normalize make and upload only the owners' tables (image_gpu.cu's
 * stk__gpu_push_axes_batch): with ImageNet's few image sizes and whole-image intervals (rn50-val)
 * most of a batch's axes share ~20 tables; random crops (rn50-train) share few.
 * C-callable from .cu files. Thread contract: one batch at a time per stk__axis_tables (the GPU
 * stage's). Hot path: per batch, O(axes). */
#ifndef STOKER_OPS_COMMON_AXIS_TABLES_H
#define STOKER_OPS_COMMON_AXIS_TABLES_H

#include <stdint.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__axis_key {
  int in_size, out_size;
  double roi_start, roi_end; /* compared exactly: the same doubles give the same table */
  int owner;                 /* set by stk__axis_tables_share: the axis whose table this one uses */
} stk__axis_key;

typedef struct stk__axis_tables {
  stk__axis_key *keys; /* count entries, filled by the caller before stk__axis_tables_share */
  int *slots;          /* the hash table, at least 2 x keys' room, a power of two */
  int keys_cap, slots_cap;
} stk__axis_tables;

/* Room for count keys (grow-only; each growth counted in *alloc_count when given). */
STK_INTERNAL stk_status stk__axis_tables_reserve(stk__axis_tables *t, int count, uint64_t *alloc_count);
/* Sets each key's owner: the first axis with the same key (share), or itself (share == 0: every
 * axis its own table). Returns the number of owners. */
STK_INTERNAL int stk__axis_tables_share(stk__axis_tables *t, int count, int share);
STK_INTERNAL void stk__axis_tables_free(stk__axis_tables *t);

#ifdef __cplusplus
}
#endif
#endif
