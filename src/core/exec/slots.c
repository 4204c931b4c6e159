/* src/core/exec/slots.c: batch slots. A slot is one batch's buffers (per-sample tensors, dense
 * bases, lists); it is planned, filled, handed to the consumer and reused. Its buffers grow to what
 * their output needs and stay, so a steady-state batch allocates nothing; a buffer that grew for an
 * outlier shrinks back when its slot is recycled (stk__exec_slot_recycle), and every growth is
 * checked against the pipeline's host memory budget (stk__host_budget, options.host_memory_budget).
 * Also the batch's reference count: the last
 * stk_batch_release gives the slot back to its pipeline, or frees it when the pipeline is gone
 * (an orphan). Not on a hot path except stk_batch_release (once per batch, one uncontended
 * per-slot lock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/exec/exec.h"

/* A buffer is shrunk when its capacity is more than this many times what its output needed over
 * the last window_len batches: ordinary variation (JPEG sizes) stays, an outlier's memory returns. */
#define STK__SHRINK_FACTOR 4
/* The default budget's per-sample bound (options.host_memory_budget = 0, see pipeline.h). */
#define STK__DEFAULT_SAMPLE_BOUND ((size_t)64 << 20)
#define STK__MIN_DEFAULT_BUDGET   ((size_t)256 << 20)

int stk__exec_prefetch_depth(const stk_pipeline *pipe) {
  return pipe->options.prefetch_queue_depth > 1 ? pipe->options.prefetch_queue_depth : 1;
}

/* The prefetch depth plus the one the consumer holds, and with GPU outputs the spare that
 * stk__exec_slot_take_free uses while the consumer's stream still reads a released batch. All of
 * them warm up with the first batches, so none is made (and allocated) mid-run. */
int stk__exec_initial_slots(const stk_pipeline *pipe) {
  return stk__exec_prefetch_depth(pipe) + (pipe->has_gpu_nodes ? 2 : 1);
}

/* Its own batch's event exists only when the graph has GPU nodes; the consumer's only when it
 * recorded one (stk_batch_record_stream). */
void stk__exec_slot_wait_readers(stk_batch *b) {
  if (b->cuda_event) stk__gpu_event_synchronize(b->cuda_event);
  if (__atomic_exchange_n(&b->consumer_recorded, 0, __ATOMIC_ACQ_REL)) stk__gpu_event_synchronize(b->consumer_event);
}

void stk__exec_slot_free(stk_batch *b, int num_lists, int num_outputs) {
  if (!b) return;
  stk__exec_slot_wait_readers(b); /* device memory goes back without a device-wide wait */
  if (b->lists) {
    for (int l = 0; l < num_lists; l++) {
      stk__tensor_list *list = &b->lists[l];
      if (list->device == STK_DEVICE_GPU) {
        stk__gpu_tensor_list_free(list);
      } else if (list->samples) { /* a smaller (fed) batch counts fewer than the slot holds */
        int n = list->samples_capacity > list->count ? list->samples_capacity : list->count;
        for (int s = 0; s < n; s++) stk__tensor_free(&list->samples[s]);
      }
      free(list->samples);
    }
  }
  for (int l = 0; b->packs && l < num_lists; l++) {
    stk__upload_pack *p = &b->packs[l];
    if (b->pipe && p->capacity) stk__host_budget_give(&b->pipe->host_budget, p->capacity);
    stk__host_block_free(p->data, p->capacity, 1, p->numa_node);
    free(p->offsets);
  }
  free(b->packs);
  if (b->out_lists) {
    for (int o = 0; o < num_outputs; o++) {
      stk__tensor_list *dense = &b->out_lists[o]; /* a CPU output's dense batch tensor (cpu_stage.c), counted */
      if (b->pipe && dense->base) stk__host_budget_give(&b->pipe->host_budget, dense->base_capacity);
      /* pinned or malloc, as it was made; needs no pipeline (a batch its consumer held outlives it) */
      stk__host_block_free(dense->base, dense->base_capacity, dense->base_pinned, dense->base_numa_node);
      free(b->out_lists[o].samples);
    }
  }
  if (b->pipe) stk__host_budget_give(&b->pipe->host_budget, b->bookkeeping_bytes);
  stk__exec_clear_bad_samples(b);
  free(b->bad);
  if (b->cuda_event) stk__gpu_event_destroy(b->cuda_event);
  if (b->consumer_event) stk__gpu_event_destroy(b->consumer_event);
  free(b->lists);
  free(b->out_lists);
  free(b->out_list_index);
  free(b->claims);
  free(b->plan.samples);
  for (int r = 0; r < STK__MAX_SIDE_READERS; r++) free(b->side_plans[r].samples);
  free(b->sample_names);
  free(b->out_reader);
  free(b->sample_failed);
  pthread_mutex_destroy(&b->owner_lock);
  free(b);
}

/* A pinned list's buffers; with pipe->pinned_shrink each grows to its own samples only, not to the
 * list's high-water mark: page-locked memory is what the pinned pool can reuse between buffers
 * (a block another buffer gave back), and a mark set by one large image made every pinned buffer of
 * every slot that grew at all take that image's size (gigabytes pinned for 108 KB files, and
 * 1 GiB chunks pinned mid-run). */
static void set_pinned(const stk_pipeline *pipe, stk__tensor_list *list, int n) {
  for (int s = 0; s < n; s++) {
    list->samples[s].pinned = 1;
    list->samples[s].numa_node = pipe->gpu_numa_node;
    if (pipe->pinned_shrink) list->samples[s].high_water = NULL;
  }
}

/* List l of slot b read by DMA from its own buffers: pinned, and not packed. */
static void pin_list(stk_pipeline *pipe, stk_batch *b, int l, int n) {
  set_pinned(pipe, &b->lists[l], n);
  b->packs[l].on = 0;
}

/* Where each list of a new slot lives: GPU node outputs and upload copies on the device; a CPU
 * list a GPU operator reads is packed into the slot's pinned staging for its upload
 * (pipe->packed_uploads; stk__upload_pack), else pinned, so its upload is a DMA either way; a mixed
 * op with a pre-stage reads its inputs and its stage by DMA: both pinned, on the GPU's NUMA node.
 * Returns 0 when a pack's offsets could not be allocated. */
static int place_lists(stk_pipeline *pipe, stk_batch *b, int n) {
  for (int l = 0; l < pipe->num_lists; l++)
    if (pipe->list_upload[l] >= 0) {
      if (pipe->packed_uploads) b->packs[l].on = 1;
      else pin_list(pipe, b, l, n);
      b->lists[pipe->list_upload[l]].device = STK_DEVICE_GPU;
    }
  for (int k = 0; k < pipe->num_nodes; k++) {
    stk__node *node = &pipe->nodes[k];
    if (node->op.device == STK__DEV_CPU) continue;
    for (int o = 0; o < node->num_outputs; o++) b->lists[node->list_base + o].device = STK_DEVICE_GPU;
    if (node->stage_list < 0) continue;
    pin_list(pipe, b, node->stage_list, n);
    for (int i = 0; i < node->num_all_inputs; i++)
      pin_list(pipe, b, pipe->nodes[node->src_node[i]].list_base + node->src_output[i], n);
  }
  for (int l = 0; l < pipe->num_lists; l++) {
    b->packs[l].numa_node = pipe->gpu_numa_node;
    if (b->packs[l].on && !(b->packs[l].offsets = calloc((size_t)n, sizeof(size_t)))) return 0;
  }
  return 1;
}

/* The per-sample arrays of every list and output (buffers are made lazily by the operators). */
static int alloc_lists(stk_pipeline *pipe, stk_batch *b, int n) {
  int ok = 1;
  for (int o = 0; ok && o < pipe->num_outputs; o++) {
    stk__node *node = &pipe->nodes[pipe->out_node[o]];
    b->out_list_index[o] = node->op.device == STK__DEV_CPU ? -1 : node->list_base + pipe->out_index[o];
  }
  for (int l = 0; ok && l < pipe->num_lists; l++) {
    b->lists[l].count = n;
    b->lists[l].samples_capacity = n; /* count follows each batch's size (scheduler.c) */
    ok = (b->lists[l].samples = calloc((size_t)n, sizeof(stk__tensor))) != NULL;
    for (int s = 0; ok && s < n; s++) {
      b->lists[l].samples[s].alloc_count = &pipe->alloc_count;
      b->lists[l].samples[s].high_water = &pipe->list_high_water[l];
      b->lists[l].samples[s].budget = &pipe->host_budget;
    }
  }
  if (ok) ok = place_lists(pipe, b, n);
  for (int o = 0; ok && o < pipe->num_outputs; o++)
    ok = (b->out_lists[o].samples = calloc((size_t)n, sizeof(stk__tensor))) != NULL;
  return ok;
}

/* The budget's limit, decided once (at the first slot): options.host_memory_budget, or the
 * default min(batch_size x (prefetch + 2) x 64 MiB, half the RAM), at least 256 MiB. */
void stk__exec_host_budget_init(stk_pipeline *pipe) {
  if (pipe->host_budget.limit) return;
  size_t limit = pipe->options.host_memory_budget;
  if (limit == 0) {
    size_t slots = (size_t)stk__exec_prefetch_depth(pipe) + 2;
    size_t per_batch = (size_t)pipe->options.batch_size * STK__DEFAULT_SAMPLE_BOUND;
    limit = per_batch > SIZE_MAX / slots ? SIZE_MAX : per_batch * slots;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (size_t)pages / 2 <= SIZE_MAX / (size_t)page &&
        (size_t)pages / 2 * (size_t)page < limit)
      limit = (size_t)pages / 2 * (size_t)page;
    if (limit < STK__MIN_DEFAULT_BUDGET) limit = STK__MIN_DEFAULT_BUDGET;
  }
  pipe->host_budget.limit = limit;
}

/* Bytes of one slot's per-sample bookkeeping (plans, flags, the tensor structs of every list and
 * output, the packed uploads' offsets): made with the slot whatever the data, so batch_size x slots
 * of them must fit the budget. */
static size_t slot_bookkeeping(const stk_pipeline *pipe) {
  size_t per_sample = (1 + (size_t)pipe->num_side) * (sizeof(stk__sample_plan) + STK__SAMPLE_NAME) + sizeof(int) +
                      ((size_t)pipe->num_lists + (size_t)pipe->num_outputs) * sizeof(stk__tensor);
  for (int l = 0; pipe->list_upload && l < pipe->num_lists; l++)
    if (pipe->list_upload[l] >= 0) per_sample += sizeof(size_t); /* a packed upload's offset */
  size_t n = (size_t)pipe->options.batch_size;
  return n > SIZE_MAX / per_sample ? SIZE_MAX : n * per_sample;
}

stk_status stk__exec_slots_check(stk_pipeline *pipe) {
  stk__exec_host_budget_init(pipe);
  /* stk__exec_initial_slots, in size_t: a prefetch depth near INT_MAX must not overflow */
  size_t slots = (size_t)stk__exec_prefetch_depth(pipe) + (pipe->has_gpu_nodes ? 2u : 1u);
  size_t one = slot_bookkeeping(pipe), all = one > SIZE_MAX / slots ? SIZE_MAX : one * slots;
  if (all <= pipe->host_budget.limit) return STK_OK;
  stk__pipe_error(pipe,
                  "build: batch_size %d with prefetch_queue_depth %d needs %zu batch slots of %zu bytes of per-sample "
                  "bookkeeping (%.1f MiB in all) before any data: more than the host memory budget of %.1f MiB "
                  "(options.host_memory_budget); lower batch_size or prefetch_queue_depth",
                  pipe->options.batch_size, pipe->options.prefetch_queue_depth, slots, one, (double)all / 1048576.0,
                  (double)pipe->host_budget.limit / 1048576.0);
  return STK_ERANGE;
}

stk_batch *stk__exec_slot_new(stk_pipeline *pipe) {
  int n = pipe->options.batch_size;
  stk__exec_host_budget_init(pipe);
  stk_batch *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  pthread_mutex_init(&b->owner_lock, NULL);
  b->pipe = pipe;
  b->slot_index = pipe->num_slots; /* both callers append it at pipe->slots[num_slots] */
  b->plan.batch_size = n;
  b->plan.samples = calloc((size_t)n, sizeof *b->plan.samples);
  int side_ok = 1;
  for (int r = 0; r < pipe->num_side; r++) {
    b->side_plans[r].samples = calloc((size_t)n, sizeof *b->side_plans[r].samples);
    side_ok &= b->side_plans[r].samples != NULL;
  }
  b->plan_capacity = n;
  b->num_readers = 1 + pipe->num_side;
  b->out_reader = calloc((size_t)pipe->num_outputs + 1, sizeof *b->out_reader);
  if (b->out_reader && pipe->out_reader)
    memcpy(b->out_reader, pipe->out_reader, (size_t)pipe->num_outputs * sizeof *b->out_reader);
  b->sample_names = calloc((size_t)n * (size_t)(1 + pipe->num_side), STK__SAMPLE_NAME);
  b->sample_failed = calloc((size_t)n, sizeof *b->sample_failed);
  b->lists = calloc((size_t)pipe->num_lists + 1, sizeof *b->lists);
  b->packs = calloc((size_t)pipe->num_lists + 1, sizeof *b->packs);
  b->out_lists = calloc((size_t)pipe->num_outputs + 1, sizeof *b->out_lists);
  b->out_list_index = calloc((size_t)pipe->num_outputs + 1, sizeof *b->out_list_index);
  b->claims = calloc((size_t)pipe->num_outputs + 1, sizeof *b->claims);
  b->num_lists_copy = pipe->num_lists;
  b->device_id = pipe->options.device_id;
  b->num_outputs_copy = pipe->num_outputs;
  int ok =
      side_ok && b->out_reader && b->sample_names && b->plan.samples && b->sample_failed && b->lists && b->packs && b->out_lists && b->out_list_index && b->claims;
  if (ok) ok = alloc_lists(pipe, b, n);
  if (ok && pipe->has_gpu_nodes)
    ok = stk__gpu_event_create(&b->cuda_event) == STK_OK && stk__gpu_event_create(&b->consumer_event) == STK_OK;
  if (!ok) {
    stk__exec_slot_free(b, pipe->num_lists, pipe->num_outputs);
    return NULL;
  }
  __atomic_fetch_add(&pipe->alloc_count, 1, __ATOMIC_RELAXED);
  b->bookkeeping_bytes = slot_bookkeeping(pipe); /* counted, never refused: checked at build */
  stk__host_budget_count(&pipe->host_budget, b->bookkeeping_bytes);
  return b;
}

/* Under lock: appends a new slot (the GPU queue keeps room for every slot). */
static stk_batch *add_slot(stk_pipeline *pipe) {
  stk_batch **bigger = realloc(pipe->slots, (size_t)(pipe->num_slots + 1) * sizeof *bigger);
  if (!bigger) return NULL;
  pipe->slots = bigger;
  stk_batch *b = stk__exec_slot_new(pipe);
  if (!b) return NULL;
  pipe->slots[pipe->num_slots++] = b;
  b->used = 1;
  return b;
}

/* First a never-used slot, so every slot warms up during the first batches; then the least
 * recently planned one the consumer's GPU work is done with. A zero-copy consumer holds one batch and its stream may still
 * read the one it released (recorded by stk_batch_record_stream): when every free slot is still
 * read that way, a new slot is made while there are fewer than prefetch_queue_depth + 2, so the
 * prefetch keeps its full depth instead of waiting for the consumer's step to finish on the GPU
 * (the scheduler then waits for the slot's event; a pipeline with GPU nodes starts with that many:
 * stk__exec_initial_slots). A new slot is also made when the consumer holds all of them. */
stk_batch *stk__exec_slot_take_free(stk_pipeline *pipe) {
  stk_batch *ready = NULL, *pending = NULL;
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    if (b->state != STK__SLOT_FREE) continue;
    if (!b->used) {
      b->used = 1;
      return b;
    }
    int consumer_busy =
        __atomic_load_n(&b->consumer_recorded, __ATOMIC_ACQUIRE) && stk__gpu_event_done(b->consumer_event) == 0;
    /* the oldest batch's slot first (least recently planned): every slot is replanned in turn, so a
     * buffer that grew for an outlier shrinks back within the window, not when timing happens to
     * pick its slot again */
    if (!consumer_busy && (!ready || b->seq < ready->seq)) ready = b;
    if (consumer_busy && (!pending || b->seq < pending->seq)) pending = b;
  }
  if (ready) return ready;
  if (pending && pipe->num_slots >= stk__exec_prefetch_depth(pipe) + 2) return pending;
  stk_batch *b = add_slot(pipe);
  if (!b) return pending;
  if (pipe->gpu_queue_cap < pipe->num_slots) {
    stk_batch **q = realloc(pipe->gpu_queue, (size_t)pipe->num_slots * sizeof *q);
    if (!q) return NULL;
    pipe->gpu_queue = q;
    pipe->gpu_queue_cap = pipe->num_slots;
  }
  return b;
}

/* During warm-up, before a slot is planned (nobody else touches it): every host sample buffer
 * below its output's high-water mark grows to it now, so a slot reaches steady state on its second
 * use instead of one buffer at a time whenever a sample happens to be larger than what that buffer
 * held. Later a rare record-size sample grows only the buffer it lands in (to the new mark). An
 * allocation failure is left to the operator's own resize, which reports it. */
void stk__exec_slot_pregrow(stk_pipeline *pipe, stk_batch *b) {
  for (int l = 0; l < pipe->num_lists; l++) {
    stk__tensor_list *list = &b->lists[l];
    if (list->device == STK_DEVICE_GPU) continue;
    size_t high = __atomic_load_n(&pipe->list_high_water[l], __ATOMIC_RELAXED);
    for (int s = 0; s < list->samples_capacity && high > 0; s++) /* only buffers in use: a pre-stage leaves the */
      if (list->samples[s].capacity && list->samples[s].capacity < high) /* engines' samples empty */
        stk__tensor_reserve(&list->samples[s], high);
  }
}

/* ---- Shrink-back and the budget's message --------------------------------------------------- */
/* The capacity stk__tensor_resize gives a sample of `bytes` (its headroom and size class). */
static size_t grown_capacity(size_t bytes) { return bytes ? stk__size_class(bytes + bytes / 4 + 64) : 0; }

/* Scheduler thread: the ring of per-batch maxima (made on first use; NULL on out-of-memory, when
 * shrink-back is simply off). */
static size_t *window(stk_pipeline *pipe) {
  if (!pipe->list_window && pipe->num_lists > 0) {
    int len = 2 * stk__exec_prefetch_depth(pipe) + 1;
    pipe->list_window = calloc((size_t)pipe->num_lists * (size_t)len, sizeof *pipe->list_window);
    pipe->window_len = pipe->list_window ? len : 0;
    pipe->window_pos = 0;
  }
  return pipe->list_window;
}

/* pipe->pinned_shrink (the default; STOKER_PINNED_SHRINK=0 turns it off), a pinned sample buffer:
 * the capacity it keeps for its next batch, given what it held in its last one (its peak): the
 * buffer's own size when that is within STK__SHRINK_FACTOR of the peak's, else the peak's (0:
 * given back). A stage buffer at a JPEG-engine position holds a plan record, and only now and then
 * a CPU-decoded image (a file the engines do not take): without this every such buffer of every
 * slot grows to an image's size over a run (a 1 GiB pinned chunk mid-run); with it
 * the large block goes back to the pool for the next such image, wherever it lands. Small buffers
 * (under 64 KiB) are left alone. */
size_t stk__exec_pinned_keep(size_t capacity, size_t peak) {
  size_t want = grown_capacity(peak);
  if (capacity < ((size_t)64 << 10) || want > capacity / STK__SHRINK_FACTOR) return capacity;
  return want;
}

/* One host list of a recycled slot: its last batch's largest sample joins the window; buffers far
 * above the window's largest are given back and retaken at its size, and the high-water mark that
 * new buffers grow to comes down with them. With pipe->pinned_shrink, a pinned buffer far above its
 * own last peak also shrinks (stk__exec_pinned_keep). */
static void recycle_list(stk_pipeline *pipe, stk__tensor_list *list, size_t *ring) {
  size_t batch_peak = 0;
  for (int s = 0; s < list->samples_capacity; s++) {
    stk__tensor *t = &list->samples[s];
    if (t->peak > batch_peak) batch_peak = t->peak;
    if (pipe->pinned_shrink && t->pinned && t->capacity) {
      size_t keep = stk__exec_pinned_keep(t->capacity, t->peak);
      if (keep < t->capacity) stk__tensor_shrink(t, keep);
    }
    t->peak = 0;
  }
  ring[pipe->window_pos] = batch_peak;
  size_t need = 0;
  for (int i = 0; i < pipe->window_len; i++)
    if (ring[i] > need) need = ring[i];
  size_t target = grown_capacity(need);
  if (target == 0 || target > SIZE_MAX / STK__SHRINK_FACTOR) return;
  size_t limit = target * STK__SHRINK_FACTOR;
  size_t *high = list->samples_capacity ? list->samples[0].high_water : NULL;
  if (high && __atomic_load_n(high, __ATOMIC_RELAXED) > limit) __atomic_store_n(high, target, __ATOMIC_RELAXED);
  for (int s = 0; s < list->samples_capacity; s++)
    if (list->samples[s].capacity > limit) stk__tensor_shrink(&list->samples[s], target);
}

void stk__exec_slot_recycle(stk_pipeline *pipe, stk_batch *b, int warming_up) {
  size_t *ring = window(pipe);
  for (int l = 0; ring && l < pipe->num_lists; l++)
    if (b->lists[l].device != STK_DEVICE_GPU)
      recycle_list(pipe, &b->lists[l], ring + (size_t)l * (size_t)pipe->window_len);
  if (ring) pipe->window_pos = (pipe->window_pos + 1) % pipe->window_len;
  if (warming_up) stk__exec_slot_pregrow(pipe, b);
}

int stk__exec_budget_explain(stk_pipeline *pipe, const stk__node *node, stk__tensor **outputs, int num_outputs,
                             const stk__sample_plan *sp, char *err, size_t err_size) {
  for (int o = 0; o < num_outputs; o++) {
    size_t bytes = outputs[o]->refused;
    if (!bytes) continue;
    outputs[o]->refused = 0;
    const double mib = 1024.0 * 1024.0;
    size_t held = __atomic_load_n(&pipe->host_budget.held, __ATOMIC_RELAXED);
    snprintf(err, err_size,
             "sample %lld (file %s) needs %.1f MiB for output %d of operator %s; the pipeline's host memory "
             "budget is %.1f MiB (%.1f MiB held by other samples' buffers; options.host_memory_budget)",
             (long long)sp->sample_id, sp->source ? sp->source : "(none)", (double)bytes / mib, o, node->op.name,
             (double)pipe->host_budget.limit / mib, (double)held / mib);
    return 1;
  }
  return 0;
}

/* ---- Ownership: the consumer's references and orphans --------------------------------------- */
/* Each slot's owner_lock orders its last release against the pipeline's destruction: a release
 * that finds the pipeline alive gives the slot back under pipe->lock before stop can pass the
 * slot, and one that comes after finds pipe == NULL and frees the orphan itself. */
/* An orphan's buffers stop counting in (and pointing at) the pipeline's budget. */
static void detach_budget(stk_pipeline *pipe, stk_batch *b) {
  for (int l = 0; l < pipe->num_lists; l++) {
    stk__tensor_list *list = &b->lists[l];
    if (list->device == STK_DEVICE_GPU || !list->samples) continue;
    for (int s = 0; s < list->samples_capacity; s++) {
      stk__tensor *t = &list->samples[s];
      size_t own = t->placed ? t->own_capacity : t->capacity; /* a placed tensor's buffer waits aside */
      if (t->budget && own) __atomic_sub_fetch(&t->budget->held, own, __ATOMIC_RELAXED);
      t->budget = NULL;
    }
  }
  for (int o = 0; o < pipe->num_outputs; o++) /* the dense batch tensors (cpu_stage.c) */
    if (b->out_lists[o].base) stk__host_budget_give(&pipe->host_budget, b->out_lists[o].base_capacity);
  stk__host_budget_give(&pipe->host_budget, b->bookkeeping_bytes);
}

void stk__exec_slots_free_all(stk_pipeline *pipe) {
  for (int i = 0; i < pipe->num_slots; i++) {
    stk_batch *b = pipe->slots[i];
    pthread_mutex_lock(&b->owner_lock);
    int held = b->state == STK__SLOT_HELD && __atomic_load_n(&b->refcount, __ATOMIC_ACQUIRE) > 0;
    if (held) { /* it stays valid until its last stk_batch_release; its buffers leave the budget now */
      b->pipe = NULL;
      detach_budget(pipe, b);
    }
    pthread_mutex_unlock(&b->owner_lock);
    if (!held) stk__exec_slot_free(b, pipe->num_lists, pipe->num_outputs);
  }
  free(pipe->list_window); /* the scheduler is joined */
  pipe->list_window = NULL;
  pipe->window_len = 0;
}

void stk__batch_ref(stk_batch *batch) { __atomic_fetch_add(&batch->refcount, 1, __ATOMIC_ACQ_REL); }

stk_status stk_batch_record_stream(stk_batch *batch, void *cuda_stream) {
  if (!batch) return STK_EINVAL;
  if (!batch->consumer_event) return STK_ENOTSUP;
  stk_status st = stk__gpu_event_record(batch->consumer_event, cuda_stream);
  if (st == STK_OK) __atomic_store_n(&batch->consumer_recorded, 1, __ATOMIC_RELEASE);
  return st;
}

void stk_batch_release(stk_batch *batch) {
  if (!batch) return;
  pthread_mutex_lock(&batch->owner_lock);
  if (__atomic_sub_fetch(&batch->refcount, 1, __ATOMIC_ACQ_REL) != 0) {
    pthread_mutex_unlock(&batch->owner_lock);
    return;
  }
  stk_pipeline *pipe = batch->pipe;
  if (pipe) {
    pthread_mutex_lock(&pipe->lock);
    batch->state = STK__SLOT_FREE;
    pthread_cond_broadcast(&pipe->cond_sched);
    pthread_mutex_unlock(&pipe->lock);
  }
  pthread_mutex_unlock(&batch->owner_lock);
  /* An orphan: the pipeline is gone and this was the last reference; nobody else can reach it. */
  if (!pipe) stk__exec_slot_free(batch, batch->num_lists_copy, batch->num_outputs_copy);
}
