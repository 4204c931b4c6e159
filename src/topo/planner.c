/* src/topo/planner.c: the affinity planner: NVIDIA's six gpu_affinity modes (none, socket,
 * socket_single, socket_single_unique, socket_unique_interleaved, socket_unique_contiguous),
 * cores = all_logical | single_logical, balanced on/off, made sound where the original breaks
 * (see docs/topology.md, "The planner"). Pure: it reads the loaded topology and makes no system
 * call, so it is tested exhaustively on recorded trees. Not on a hot path. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/topology.h"

static const char *const mode_names[] = {
    [STK_AFFINITY_NONE] = "none",
    [STK_AFFINITY_SOCKET] = "socket",
    [STK_AFFINITY_SOCKET_SINGLE] = "socket_single",
    [STK_AFFINITY_SOCKET_SINGLE_UNIQUE] = "socket_single_unique",
    [STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED] = "socket_unique_interleaved",
    [STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS] = "socket_unique_contiguous",
};
#define MODE_COUNT ((int)(sizeof mode_names / sizeof mode_names[0]))

static const char *const cores_names[] = {
    [STK_CORES_ALL_LOGICAL] = "all_logical",
    [STK_CORES_SINGLE_LOGICAL] = "single_logical",
};

const char *stk_affinity_mode_name(stk_affinity_mode mode) {
  return (int)mode >= 0 && (int)mode < MODE_COUNT ? mode_names[mode] : "unknown";
}

stk_status stk_affinity_mode_parse(const char *name, stk_affinity_mode *out) {
  if (!name || !out) return STK_EINVAL;
  for (int m = 0; m < MODE_COUNT; m++)
    if (strcmp(name, mode_names[m]) == 0) {
      *out = (stk_affinity_mode)m;
      return STK_OK;
    }
  return STK_EINVAL;
}

const char *stk_cores_mode_name(stk_cores_mode cores) {
  return cores == STK_CORES_ALL_LOGICAL || cores == STK_CORES_SINGLE_LOGICAL ? cores_names[cores] : "unknown";
}

stk_status stk_cores_mode_parse(const char *name, stk_cores_mode *out) {
  if (!name || !out) return STK_EINVAL;
  for (int c = 0; c < 2; c++)
    if (strcmp(name, cores_names[c]) == 0) {
      *out = (stk_cores_mode)c;
      return STK_OK;
    }
  return STK_EINVAL;
}

void stk_plan_options_default(stk_plan_options *options) {
  memset(options, 0, sizeof *options);
  options->nproc_per_node = 1;
  options->mode = STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS;
  options->cores = STK_CORES_ALL_LOGICAL;
  options->balanced = 1;
  options->use_allowed = 0;
}

/* ---- working state ---------------------------------------------------------------------------- */

typedef struct gpu_candidates {
  stk_cpuset local;     /* the GPU's local CPUs */
  stk_cpuset candidate; /* local ∩ allowed */
  int *cores;           /* topology core indices meeting candidate, ordered by lowest candidate cpu */
  int core_count;
  int bucket; /* index into buckets, -1 when this GPU failed */
} gpu_candidates;

typedef struct bucket {
  int *gpus; /* all member GPU indices, index order */
  int size;
  int first_gpu;
  int active;   /* 0 once its GPUs have failed */
  int share;    /* cores per GPU this bucket would give alone (unique modes) */
  int overlaps; /* candidate set meets another active bucket's set */
} bucket;

static void rank_fail(stk_plan_rank *rank, stk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rank_fail(stk_plan_rank *rank, stk_status status, const char *fmt, ...) {
  rank->status = status;
  stk_cpuset_zero(&rank->cpus);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rank->error, sizeof rank->error, fmt, ap);
  va_end(ap);
}

static const char *list_text(const stk_cpuset *set, char *buf, size_t size) {
  size_t needed = stk_cpuset_format(set, buf, size);
  if (needed >= size && size > 4) memcpy(buf + size - 4, "...", 4);
  return buf;
}

/* The CPUs a rank gets for one chosen core: the core's candidate hyperthreads, or the lowest. */
static void add_core(const stk_topology *topo, const gpu_candidates *gpu, int core, stk_cores_mode cores,
                     stk_cpuset *out) {
  stk_cpuset piece;
  stk_topology_core_cpus(topo, core, &piece);
  stk_cpuset_and(&piece, &piece, &gpu->candidate);
  if (cores == STK_CORES_SINGLE_LOGICAL) stk_cpuset_add(out, stk_cpuset_first(&piece));
  else stk_cpuset_or(out, out, &piece);
}

/* Sorting cores by their lowest candidate cpu (qsort has no context argument: a file-static
 * pointer would not be thread-safe, so the key travels with the core). */
typedef struct core_key {
  int first_cpu;
  int core;
} core_key;

static int compare_core_keys(const void *a, const void *b) {
  const core_key *x = a, *y = b;
  return (x->first_cpu > y->first_cpu) - (x->first_cpu < y->first_cpu);
}

static stk_status collect_cores(const stk_topology *topo, gpu_candidates *gpu) {
  int total = stk_topology_num_cores(topo);
  core_key *keys = malloc(sizeof *keys * (size_t)(total > 0 ? total : 1));
  gpu->cores = malloc(sizeof *gpu->cores * (size_t)(total > 0 ? total : 1));
  if (!keys || !gpu->cores) {
    free(keys);
    return STK_ENOMEM;
  }
  int count = 0;
  for (int core = 0; core < total; core++) {
    stk_cpuset piece;
    stk_topology_core_cpus(topo, core, &piece);
    stk_cpuset_and(&piece, &piece, &gpu->candidate);
    if (stk_cpuset_is_empty(&piece)) continue;
    keys[count].first_cpu = stk_cpuset_first(&piece);
    keys[count].core = core;
    count++;
  }
  qsort(keys, (size_t)count, sizeof *keys, compare_core_keys); /* keys are distinct: stable order */
  for (int i = 0; i < count; i++) gpu->cores[i] = keys[i].core;
  gpu->core_count = count;
  free(keys);
  return STK_OK;
}

/* Writes "0,1,2,3" (GPU indices of a bucket, at most a few) into buf. */
static const char *bucket_gpu_list(const bucket *b, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < b->size && len + 16 < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? "," : "", b->gpus[i]);
  return buf;
}

/* ---- the unique modes: contiguous and interleaved shares ------------------------------------- */

typedef struct plan_state {
  const stk_topology *topo;
  const stk_plan_options *options;
  stk_plan_rank *ranks;
  gpu_candidates *gpus;
  int gpu_count; /* = nproc */
  bucket *buckets;
  int bucket_count;
  int *order;           /* bucket indices, most constrained (fewest cores) first */
  unsigned char *taken; /* per topology core */
  int *available;
} plan_state;

static int count_active_gpus_meeting(const plan_state *state, const stk_cpuset *set) {
  int count = 0;
  for (int b = 0; b < state->bucket_count; b++) {
    const bucket *other = &state->buckets[b];
    if (other->active && stk_cpuset_intersects(&state->gpus[other->first_gpu].candidate, set)) count += other->size;
  }
  return count;
}

static void compute_shares(plan_state *state) {
  for (int b = 0; b < state->bucket_count; b++) {
    bucket *bk = &state->buckets[b];
    if (!bk->active) continue;
    const gpu_candidates *gpu = &state->gpus[bk->first_gpu];
    int sharing = count_active_gpus_meeting(state, &gpu->candidate);
    bk->overlaps = sharing > bk->size;
    bk->share = gpu->core_count / sharing;
    if (bk->share < 1) bk->share = 1; /* at least try one core each; the fit check decides */
  }
}

/* Tries to hand out the shares: per bucket (most constrained first) the GPUs take `cores per GPU`
 * from the bucket's cores that no earlier bucket took. balanced_count > 0: every GPU gets that
 * many; 0: each bucket its own share (shrunk to what is left). Writes the ranks when `commit`.
 * Returns -1 when everything fits, else the index of the first bucket that does not. */
static int hand_out(plan_state *state, int balanced_count, int commit) {
  const stk_plan_options *options = state->options;
  memset(state->taken, 0, (size_t)stk_topology_num_cores(state->topo));
  for (int o = 0; o < state->bucket_count; o++) {
    bucket *bk = &state->buckets[state->order[o]];
    if (!bk->active) continue;
    const gpu_candidates *lead = &state->gpus[bk->first_gpu];
    int available_count = 0;
    for (int i = 0; i < lead->core_count; i++)
      if (!state->taken[lead->cores[i]]) state->available[available_count++] = lead->cores[i];
    int per_gpu = balanced_count > 0 ? balanced_count : bk->share;
    if (balanced_count == 0 && per_gpu * bk->size > available_count) per_gpu = available_count / bk->size;
    if (per_gpu < 1 || per_gpu * bk->size > available_count) return state->order[o];
    /* Interleaved, unbalanced, and nobody else wants these cores: the remainder goes one each
     * to the first GPUs, so the bucket uses all its cores. */
    int used = per_gpu * bk->size;
    int interleaved = options->mode == STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED;
    if (interleaved && !options->balanced && !bk->overlaps) used = available_count;
    for (int i = 0; i < used; i++) state->taken[state->available[i]] = 1;
    if (!commit) continue;
    for (int p = 0; p < bk->size; p++) {
      int gpu_index = bk->gpus[p];
      stk_plan_rank *rank = &state->ranks[gpu_index];
      stk_cpuset_zero(&rank->cpus);
      if (interleaved) {
        for (int i = p; i < used; i += bk->size)
          add_core(state->topo, &state->gpus[gpu_index], state->available[i], options->cores, &rank->cpus);
      } else {
        for (int i = p * per_gpu; i < (p + 1) * per_gpu; i++)
          add_core(state->topo, &state->gpus[gpu_index], state->available[i], options->cores, &rank->cpus);
      }
    }
  }
  return -1;
}

static void fail_bucket_taken(plan_state *state, int b) {
  bucket *bk = &state->buckets[b];
  char gpus_text[256], cpus_text[512];
  bucket_gpu_list(bk, gpus_text, sizeof gpus_text);
  list_text(&state->gpus[bk->first_gpu].candidate, cpus_text, sizeof cpus_text);
  for (int p = 0; p < bk->size; p++)
    rank_fail(&state->ranks[bk->gpus[p]], STK_EPLAN,
              "GPU %d: its candidate cores (CPUs %s) are all given to GPUs whose local CPUs are narrower; "
              "no core is left for GPU(s) %s in %s",
              bk->gpus[p], cpus_text, gpus_text, stk_affinity_mode_name(state->options->mode));
  bk->active = 0;
}

static void plan_unique_shares(plan_state *state) {
  compute_shares(state);
  for (;;) {
    int active = 0, smallest_share = 0;
    for (int b = 0; b < state->bucket_count; b++) {
      bucket *bk = &state->buckets[b];
      if (!bk->active) continue;
      if (!active || bk->share < smallest_share) smallest_share = bk->share;
      active++;
    }
    if (!active) return;
    if (state->options->balanced) {
      for (int count = smallest_share; count >= 1; count--) {
        if (hand_out(state, count, 0) < 0) {
          hand_out(state, count, 1);
          return;
        }
      }
      fail_bucket_taken(state, hand_out(state, 1, 0));
    } else {
      int failed = hand_out(state, 0, 0);
      if (failed < 0) {
        hand_out(state, 0, 1);
        return;
      }
      fail_bucket_taken(state, failed);
    }
    compute_shares(state); /* fewer GPUs compete now */
  }
}

/* ---- entry point -------------------------------------------------------------------------------- */

static int compare_buckets_by_constraint(const void *a, const void *b, const bucket *buckets,
                                         const gpu_candidates *gpus) {
  const bucket *x = &buckets[*(const int *)a], *y = &buckets[*(const int *)b];
  int cx = gpus[x->first_gpu].core_count, cy = gpus[y->first_gpu].core_count;
  if (cx != cy) return cx < cy ? -1 : 1;
  return (x->first_gpu > y->first_gpu) - (x->first_gpu < y->first_gpu);
}

/* Insertion sort (few buckets) so the comparison can see the buckets without global state. */
static void order_buckets(plan_state *state) {
  for (int i = 0; i < state->bucket_count; i++) state->order[i] = i;
  for (int i = 1; i < state->bucket_count; i++) {
    int current = state->order[i], j = i - 1;
    while (j >= 0 && compare_buckets_by_constraint(&state->order[j], &current, state->buckets, state->gpus) > 0) {
      state->order[j + 1] = state->order[j];
      j--;
    }
    state->order[j + 1] = current;
  }
}

static stk_status plan_with_buckets(plan_state *state);

stk_status stk_plan_compute(const stk_topology *topo, const stk_plan_options *options, stk_plan_rank *ranks) {
  if (!ranks) return STK_EINVAL;
  if (!topo || !options) {
    rank_fail(&ranks[0], STK_EINVAL, "no topology or no plan options");
    return STK_EINVAL;
  }
  int nproc = options->nproc_per_node;
  int gpu_total = stk_topology_num_gpus(topo);
  if ((int)options->mode < 0 || (int)options->mode >= MODE_COUNT) {
    rank_fail(&ranks[0], STK_EINVAL, "unknown affinity mode %d", (int)options->mode);
    return STK_EINVAL;
  }
  if (options->cores != STK_CORES_ALL_LOGICAL && options->cores != STK_CORES_SINGLE_LOGICAL) {
    rank_fail(&ranks[0], STK_EINVAL, "unknown cores mode %d", (int)options->cores);
    return STK_EINVAL;
  }
  if (nproc < 1) {
    rank_fail(&ranks[0], STK_EINVAL, "nproc_per_node must be at least 1 (got %d)", nproc);
    return STK_EINVAL;
  }
  if (gpu_total == 0) {
    rank_fail(&ranks[0], STK_EINVAL, "no GPU found (no NVIDIA PCI display/3D controller)");
    return STK_EINVAL;
  }
  if (nproc > gpu_total) {
    rank_fail(&ranks[0], STK_EINVAL, "nproc_per_node %d is larger than the GPU count %d", nproc, gpu_total);
    return STK_EINVAL;
  }
  stk_cpuset online, allowed;
  stk_topology_cpus_online(topo, &online);
  if (options->use_allowed) allowed = options->allowed;
  else stk_topology_allowed_cpus(topo, &allowed);
  if (!stk_cpuset_intersects(&allowed, &online)) {
    char allowed_text[256], online_text[256];
    rank_fail(&ranks[0], STK_EINVAL, "none of the allowed CPUs (%s) is online (%s)",
              list_text(&allowed, allowed_text, sizeof allowed_text),
              list_text(&online, online_text, sizeof online_text));
    return STK_EINVAL;
  }
  for (int i = 0; i < nproc; i++) {
    stk_gpu_info gpu;
    stk_topology_gpu(topo, i, &gpu);
    ranks[i].gpu = i;
    ranks[i].status = STK_OK;
    ranks[i].error[0] = ranks[i].note[0] = '\0';
    ranks[i].memory_node = gpu.numa_node_unknown ? -1 : gpu.numa_node;
    stk_cpuset_zero(&ranks[i].cpus);
  }
  if (options->mode == STK_AFFINITY_NONE) {
    for (int i = 0; i < nproc; i++) ranks[i].cpus = allowed;
    return STK_OK;
  }

  plan_state state = {topo, options, ranks, NULL, nproc, NULL, 0, NULL, NULL, NULL};
  int core_total = stk_topology_num_cores(topo);
  state.gpus = calloc((size_t)nproc, sizeof *state.gpus);
  state.buckets = calloc((size_t)nproc, sizeof *state.buckets);
  state.order = calloc((size_t)nproc, sizeof *state.order);
  state.taken = calloc((size_t)(core_total > 0 ? core_total : 1), 1);
  state.available = calloc((size_t)(core_total > 0 ? core_total : 1), sizeof *state.available);
  stk_status status = STK_OK;
  if (!state.gpus || !state.buckets || !state.order || !state.taken || !state.available) status = STK_ENOMEM;
  for (int i = 0; i < nproc && status == STK_OK; i++) {
    gpu_candidates *gpu = &state.gpus[i];
    stk_topology_gpu_local_cpus(topo, i, &gpu->local);
    stk_cpuset_and(&gpu->candidate, &gpu->local, &allowed);
    status = collect_cores(topo, gpu);
  }
  if (status == STK_OK) status = plan_with_buckets(&state);
  if (status == STK_ENOMEM) rank_fail(&ranks[0], STK_ENOMEM, "out of memory while planning");
  if (state.gpus)
    for (int i = 0; i < nproc; i++) free(state.gpus[i].cores);
  if (state.buckets)
    for (int b = 0; b < state.bucket_count; b++) free(state.buckets[b].gpus);
  free(state.gpus);
  free(state.buckets);
  free(state.order);
  free(state.taken);
  free(state.available);
  if (status != STK_OK) return status;
  for (int i = 0; i < nproc; i++)
    if (ranks[i].status != STK_OK) return STK_EPLAN;
  return STK_OK;
}

static stk_status plan_with_buckets(plan_state *state) {
  const stk_topology *topo = state->topo;
  const stk_plan_options *options = state->options;
  stk_plan_rank *ranks = state->ranks;
  int nproc = state->gpu_count;
  const char *mode_name = stk_affinity_mode_name(options->mode);
  stk_cpuset allowed;
  if (options->use_allowed) allowed = options->allowed;
  else stk_topology_allowed_cpus(topo, &allowed);

  /* A GPU none of whose local CPUs is allowed fails alone. */
  for (int i = 0; i < nproc; i++) {
    gpu_candidates *gpu = &state->gpus[i];
    gpu->bucket = -1;
    if (gpu->core_count > 0) continue;
    char local_text[256], allowed_text[256];
    rank_fail(&ranks[i], STK_EPLAN, "GPU %d: none of its local CPUs (%s) is in the allowed set (%s)", i,
              list_text(&gpu->local, local_text, sizeof local_text),
              list_text(&allowed, allowed_text, sizeof allowed_text));
  }
  /* Buckets: GPUs with identical candidate sets, in index order. */
  for (int i = 0; i < nproc; i++) {
    gpu_candidates *gpu = &state->gpus[i];
    if (gpu->core_count == 0) continue;
    int b = 0;
    while (b < state->bucket_count &&
           !stk_cpuset_equal(&state->gpus[state->buckets[b].first_gpu].candidate, &gpu->candidate))
      b++;
    if (b == state->bucket_count) {
      state->buckets[b].first_gpu = i;
      state->buckets[b].active = 1;
      state->buckets[b].gpus = malloc(sizeof(int) * (size_t)nproc);
      if (!state->buckets[b].gpus) return STK_ENOMEM;
      state->bucket_count++;
    }
    bucket *bk = &state->buckets[b];
    bk->gpus[bk->size++] = i;
    gpu->bucket = b;
  }

  switch (options->mode) {
    case STK_AFFINITY_SOCKET:
    case STK_AFFINITY_SOCKET_SINGLE:
      for (int i = 0; i < nproc; i++) {
        gpu_candidates *gpu = &state->gpus[i];
        if (gpu->bucket < 0) continue;
        int last = options->mode == STK_AFFINITY_SOCKET ? gpu->core_count : 1;
        for (int c = 0; c < last; c++) add_core(topo, gpu, gpu->cores[c], options->cores, &ranks[i].cpus);
      }
      return STK_OK;

    case STK_AFFINITY_SOCKET_SINGLE_UNIQUE: {
      int core_total = stk_topology_num_cores(topo);
      memset(state->taken, 0, (size_t)core_total);
      for (int i = 0; i < nproc; i++) {
        gpu_candidates *gpu = &state->gpus[i];
        if (gpu->bucket < 0) continue;
        int chosen = -1;
        for (int c = 0; c < gpu->core_count && chosen < 0; c++)
          if (!state->taken[gpu->cores[c]]) chosen = gpu->cores[c];
        if (chosen < 0) {
          char cpus_text[512];
          rank_fail(&ranks[i], STK_EPLAN,
                    "GPU %d: its %d candidate cores (CPUs %s) are all taken by lower-numbered GPUs; %s needs one core "
                    "per GPU",
                    i, gpu->core_count, list_text(&gpu->candidate, cpus_text, sizeof cpus_text), mode_name);
          continue;
        }
        state->taken[chosen] = 1;
        add_core(topo, gpu, chosen, options->cores, &ranks[i].cpus);
      }
      return STK_OK;
    }

    case STK_AFFINITY_SOCKET_UNIQUE_INTERLEAVED:
    case STK_AFFINITY_SOCKET_UNIQUE_CONTIGUOUS:
      /* A bucket with fewer cores than GPUs fails (all its GPUs), and is left out of the
       * balanced count so it does not drag the others down. */
      for (int b = 0; b < state->bucket_count; b++) {
        bucket *bk = &state->buckets[b];
        const gpu_candidates *lead = &state->gpus[bk->first_gpu];
        if (lead->core_count >= bk->size) continue;
        char gpus_text[256], cpus_text[512];
        bucket_gpu_list(bk, gpus_text, sizeof gpus_text);
        list_text(&lead->candidate, cpus_text, sizeof cpus_text);
        for (int p = 0; p < bk->size; p++)
          rank_fail(&ranks[bk->gpus[p]], STK_EPLAN,
                    "GPU %d: the %d GPUs sharing its CPUs (GPUs %s) have only %d allowed cores (CPUs %s); %s needs at "
                    "least one core per GPU",
                    bk->gpus[p], bk->size, gpus_text, lead->core_count, cpus_text, mode_name);
        bk->active = 0;
      }
      order_buckets(state);
      plan_unique_shares(state);
      return STK_OK;

    case STK_AFFINITY_NONE:
      return STK_OK;
  }
  return STK_EINVAL;
}
