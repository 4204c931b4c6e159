/* src/ops/io/reader_webdataset.c: readers.webdataset -- samples from tar shards (local paths,
 * http(s):// URLs, pipe:COMMAND), streamed from each shard's start with no index (index_paths
 * optional). Hot path: plan_batch (scheduler thread, per batch: pops read-ahead samples) and
 * run_sample (workers: reads a local shard's components from the file into the outputs, copies
 * those the lanes read). Shard order and the epoch's work units are computed at reset; the rest of
 * the I/O runs on wds_stream.c's lanes.
 *
 * Sharding among ranks (shard_id / num_shards; rank r reads part (r + epoch) % S unless
 * stick_to_shard, as readers.file):
 *   - without index_paths: by whole tar files -- part s gets files [F*s/S, F*(s+1)/S) of the
 *     epoch's file order (needs F >= S);
 *   - with index_paths: by samples, as DALI -- part s gets samples [N*s/S, N*(s+1)/S) of the
 *     epoch's concatenated order, starting mid-file at the index's offset.
 * Either way the parts of one epoch are disjoint and cover every sample once.
 *
 * Two-level shuffle (random_shuffle): (1) the file order is permuted each epoch by (seed, epoch),
 * the same on every rank, before it is split; with stick_to_shard only the rank's own units are
 * permuted, by (seed, epoch, part); (2) a shuffle buffer of initial_fill samples over the rank's
 * stream: each output is drawn uniformly from the buffer (draw k keyed by (seed, epoch, part, k))
 * and replaced by the next streamed sample. With parallel_shards = K lanes the stream interleaves
 * K shards sample by sample. Deterministic: the same seed gives the same order on any machine
 * and thread count.
 *
 * The last batch: slots after the part's last sample repeat that sample (is_fill = 1, not in
 * valid_samples). With index_paths every part gives ceil(max part / batch) batches, padded or
 * not (equal steps per rank; extra batches repeat the last sample); without an index the part
 * sizes are unknown before reading, so each part ends with its own data (steps may differ). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_ops.h"
#include "ops/op_impls.h"
#include "ops/io/reader_webdataset.h"
#include "ops/io/wds_reader.h"
#include "ops/common/dali_hints.h"

/* ---- The operator --------------------------------------------------------------------------- */
static void wds_destroy(stk__op *op) {
  wds_reader *r = op->state;
  if (!r) return;
  stk__wds_drop_epoch(r);
  stk__wds_drop_next_epoch(r);
  stk__wds_table_collect(r, UINT64_MAX);
  for (int i = 0; i < r->table_capacity; i++)
    if (r->table[i].sample && --r->table[i].sample->refs == 0) stk__wds_sample_free(r->table[i].sample);
  for (int g = 0; g < STK__WDS_MAX_GROUPS; g++) {
    for (size_t k = 0; r->exts_storage[g] && r->exts_storage[g][k]; k++) free(r->exts_storage[g][k]);
    free(r->exts_storage[g]);
  }
  for (int i = 0; r->index && i < r->num_paths; i++) stk__wds_index_free(&r->index[i]);
  free(r->index);
  free(r->buffer);
  free(r->table);
  free(r->free_slots);
  pthread_mutex_destroy(&r->table_lock);
  free(r);
  op->state = NULL;
}

/* ext[g] = "jpg;jpeg" -> the group's extension list. */
static stk_status parse_ext_groups(wds_reader *r, stk__op *op, char *err, size_t err_size) {
  size_t n;
  char *const *ext = stk__arg_string_list(op, "ext", &n);
  if (n == 0 || n > STK__WDS_MAX_GROUPS) {
    stk__errorf(err, err_size, "ext: give 1 to %d extension groups (got %zu)", STK__WDS_MAX_GROUPS, n);
    return STK_EINVAL;
  }
  size_t num_dtypes = 0;
  char *const *dtypes = stk__arg_is_set(op, "dtypes") ? stk__arg_string_list(op, "dtypes", &num_dtypes) : NULL;
  if (dtypes && num_dtypes != n) {
    stk__errorf(err, err_size, "dtypes has %zu entries but ext has %zu groups", num_dtypes, n);
    return STK_EINVAL;
  }
  const char *label_ext = stk__arg_string(op, "label_ext");
  r->stream_config.label_group = -1;
  for (size_t g = 0; g < n; g++) {
    size_t count = 1;
    for (const char *p = ext[g]; *p; p++) count += *p == ';';
    char **list = calloc(count + 1, sizeof *list);
    if (!list) return STK_ENOMEM;
    r->exts_storage[g] = list;
    size_t k = 0;
    for (const char *p = ext[g];;) {
      const char *end = strchr(p, ';');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      if (len == 0) {
        stk__errorf(err, err_size, "ext[%zu] = \"%s\" has an empty extension", g, ext[g]);
        return STK_EINVAL;
      }
      if (!(list[k++] = strndup(p, len))) return STK_ENOMEM;
      if (!end) break;
      p = end + 1;
    }
    r->stream_config.group_exts[g] = list;
    r->stream_config.group_num_exts[g] = k;
    r->group_dtype[g] = STK_DTYPE_UINT8;
    if (dtypes && stk__dtype_parse(dtypes[g], &r->group_dtype[g]) != STK_OK) {
      stk__errorf(err, err_size, "dtypes[%zu] = \"%s\" is not a dtype (uint8, int32, int64, float, float16, bool)", g,
                  dtypes[g]);
      return STK_EINVAL;
    }
    r->stream_config.group_elem_size[g] = stk_dtype_size(r->group_dtype[g]);
    if (label_ext[0] && strcmp(label_ext, ext[g]) == 0) r->stream_config.label_group = (int)g;
  }
  if (label_ext[0] && r->stream_config.label_group < 0) {
    stk__errorf(err, err_size, "label_ext \"%s\" is not one of the ext groups", label_ext);
    return STK_EINVAL;
  }
  r->stream_config.num_groups = (int)n;
  return STK_OK;
}

static stk_status load_indices(wds_reader *r, stk__op *op, char *err, size_t err_size) {
  size_t n = 0;
  char *const *index_paths = stk__arg_is_set(op, "index_paths") ? stk__arg_string_list(op, "index_paths", &n) : NULL;
  if (!index_paths || n == 0) return STK_OK;
  if ((int)n != r->num_paths) {
    stk__errorf(err, err_size, "index_paths has %zu entries but paths has %d (one index per tar, or none)", n,
                r->num_paths);
    return STK_EINVAL;
  }
  if (!(r->index = calloc(n, sizeof *r->index))) return STK_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    stk_status st = stk__wds_index_load(index_paths[i], &r->index[i], err, err_size);
    if (st != STK_OK) return st;
    r->index_total += r->index[i].num_samples;
  }
  if (r->index_total < r->num_shards) {
    stk__errorf(err, err_size, "the index lists %lld samples: too few for num_shards=%d", (long long)r->index_total,
                r->num_shards);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status parse_options(wds_reader *r, stk__op *op, char *err, size_t err_size) {
  size_t n;
  r->paths = stk__arg_string_list(op, "paths", &n);
  r->num_paths = (int)n;
  r->shard_id = (int)stk__arg_int(op, "shard_id");
  r->num_shards = (int)stk__arg_int(op, "num_shards");
  r->stick_to_shard = stk__arg_bool(op, "stick_to_shard");
  r->pad_last_batch = stk__arg_bool(op, "pad_last_batch");
  r->random_shuffle = stk__arg_bool(op, "random_shuffle");
  r->initial_fill = stk__arg_int(op, "initial_fill");
  int64_t seed = stk__arg_int(op, "seed");
  r->seed = seed >= 0 ? (uint64_t)seed : op->seed;
  r->batch_size = op->options ? op->options->batch_size : 1;
  if (n == 0) {
    stk__errorf(err, err_size, "paths is empty: give tar files, http(s):// URLs or pipe:COMMANDs");
    return STK_EINVAL;
  }
  if (r->num_shards < 1 || r->shard_id < 0 || r->shard_id >= r->num_shards) {
    stk__errorf(err, err_size, "shard_id %d is not in [0, num_shards=%d)", r->shard_id, r->num_shards);
    return STK_EINVAL;
  }
  if (r->initial_fill < 1 || r->batch_size < 1) {
    stk__errorf(err, err_size, "initial_fill (%lld) and batch_size (%d) must be >= 1", (long long)r->initial_fill,
                r->batch_size);
    return STK_EINVAL;
  }
  const char *missing = stk__arg_string(op, "missing_component_behavior");
  stk__wds_stream_config *c = &r->stream_config;
  if (!missing[0] || strcmp(missing, "empty") == 0) c->missing = STK__WDS_MISSING_EMPTY;
  else if (strcmp(missing, "skip") == 0) c->missing = STK__WDS_MISSING_SKIP;
  else if (strcmp(missing, "error") == 0) c->missing = STK__WDS_MISSING_ERROR;
  else {
    stk__errorf(err, err_size, "missing_component_behavior \"%s\": expected \"empty\", \"skip\" or \"error\"", missing);
    return STK_EINVAL;
  }
  c->paths = r->paths;
  c->case_sensitive = stk__arg_bool(op, "case_sensitive_extensions");
  c->skip_bad_files = stk__arg_bool(op, "skip_bad_files") || (op->options && op->options->skip_bad_files);
  c->lanes = (int)stk__arg_int(op, "parallel_shards");
  c->max_queue_samples = (int)stk__arg_int(op, "read_ahead_samples");
  c->max_queue_bytes = (size_t)stk__arg_int(op, "read_ahead_mb") << 20;
  c->source_options = stk__byte_source_options_default();
  c->source_options.connect_timeout_s = stk__arg_float(op, "connect_timeout");
  c->source_options.stall_timeout_s = stk__arg_float(op, "stall_timeout");
  c->source_options.max_retries = (int)stk__arg_int(op, "http_retries");
  c->source_options.stop = op->options ? op->options->stop : NULL;
  c->budget_limit = op->host_budget ? &op->host_budget->limit : NULL;
  c->budget_bytes = op->options ? op->options->host_memory_budget : 0;
  if (c->lanes < 1 || c->lanes > 64 || c->max_queue_samples < 1 || c->source_options.stall_timeout_s <= 0) {
    stk__errorf(err, err_size, "parallel_shards must be in [1, 64], read_ahead_samples >= 1, stall_timeout > 0");
    return STK_EINVAL;
  }
  if (r->num_paths < r->num_shards && !stk__arg_is_set(op, "index_paths")) {
    stk__errorf(err, err_size,
                "%d tar files cannot be split among num_shards=%d without index_paths (each part "
                "needs a whole file; give index_paths to split by samples)",
                r->num_paths, r->num_shards);
    return STK_EINVAL;
  }
  return STK_OK;
}

static stk_status wds_init(stk__op *op, char *err, size_t err_size) {
  wds_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  pthread_mutex_init(&r->table_lock, NULL);
  op->state = r;
  stk_status st = parse_options(r, op, err, err_size);
  if (st == STK_OK) st = parse_ext_groups(r, op, err, err_size);
  if (st == STK_OK) st = load_indices(r, op, err, err_size);
  if (st == STK_OK && r->random_shuffle && !(r->buffer = calloc((size_t)r->initial_fill, sizeof *r->buffer)))
    st = STK_ENOMEM;
  if (st == STK_OK) st = stk__wds_start_epoch(r, 0, err, err_size);
  if (st != STK_OK) {
    if (st == STK_ENOMEM && !err[0]) stk__errorf(err, err_size, "out of memory");
    wds_destroy(op);
  }
  return st;
}

static stk_status wds_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                 stk__tensor *const *outputs) {
  wds_reader *r = op->state;
  stk__wds_sample *s = ctx->plan ? stk__wds_table_take(r, ctx->plan->file_index) : NULL;
  if (!s) {
    stk__errorf(ctx->err, ctx->err_size, "the planned sample is no longer held by the reader (stale plan)");
    return STK_EINTERNAL;
  }
  if (ctx->name && ctx->name_size) snprintf(ctx->name, ctx->name_size, "%s", s->source); /* for later failures */
  if (s->bad) { /* a skip record (skip_bad_files): the executor records it and takes the next sample */
    stk__errorf(ctx->err, ctx->err_size, "%s", s->bad);
    stk__wds_release(r, s);
    return STK_EIO;
  }
  stk_status st = STK_OK;
  int read_failed = 0;
  const stk__wds_stream_config *c = &r->stream_config;
  for (int g = 0; g < STK__WDS_MAX_GROUPS && st == STK_OK; g++) {
    int64_t shape = 0;
    if (g >= c->num_groups) { /* outputs beyond the ext groups stay empty */
      st = stk__tensor_resize(outputs[g], STK_DTYPE_UINT8, 1, &shape, "");
    } else if (g == c->label_group) {
      shape = 1;
      st = stk__sample_output_resize(ctx, outputs, g, STK_DTYPE_INT32, 1, &shape, "");
      if (st == STK_OK) *(int32_t *)outputs[g]->data = s->label;
    } else { /* in place when the batch is dense (stk__sample_output_resize); a local shard's member
              * is read from the file straight into it (stk__wds_sample_read) */
      shape = (int64_t)(s->size[g] / c->group_elem_size[g]);
      st = stk__sample_output_resize(ctx, outputs, g, r->group_dtype[g], 1, &shape, "");
      if (st == STK_OK && (st = stk__wds_sample_read(s, g, outputs[g]->data, ctx->err, ctx->err_size)) != STK_OK)
        read_failed = 1; /* the message names the sample and the offset */
    }
  }
  if (st != STK_OK && !read_failed) stk__errorf(ctx->err, ctx->err_size, "sample %s: out of memory", s->source);
  stk__wds_release(r, s);
  return st;
}

const stk__op_impl stk__cpu_impl_readers_webdataset = {
    .init = wds_init,
    .destroy = wds_destroy,
    .plan_batch = stk__wds_plan_batch,
    .reset = stk__wds_reset,
    .reader_meta = stk__wds_meta,
    .run_sample = wds_run_sample,
};

static const stk__arg_schema wds_args[] = {
    {"paths", STK_ARG_STRING_LIST, NULL, 1, 0,
     "Tar shards: local paths, http:// or https:// URLs, or pipe:COMMAND (the command's stdout)."},
    {"index_paths", STK_ARG_STRING_LIST, NULL, 0, 0,
     "Optional index per shard (DALI wds2idx format): exact epoch size and sample-level sharding. Without it "
     "shards are streamed from their start and split among ranks by whole files. An index must match its "
     "shard: a shard that ends before the samples its index lists, or holds more, is an error."},
    {"ext", STK_ARG_STRING_LIST, NULL, 1, 0,
     "One output per entry; each entry lists the extensions that feed it, separated by ';' (\"jpg;jpeg\")."},
    {"missing_component_behavior", STK_ARG_STRING, "", 0, 0,
     "A sample without a component for an output: \"empty\" (default: empty tensor; a missing label_ext "
     "component is an error instead, never a label), \"skip\", \"error\"."},
    {"dtypes", STK_ARG_STRING_LIST, NULL, 0, 0,
     "Per output: the component's bytes reinterpreted as this dtype (default uint8); the size must divide."},
    {"case_sensitive_extensions", STK_ARG_BOOL, "true", 0, 0, "Match extensions case-sensitively."},
    {"label_ext", STK_ARG_STRING, "", 0, 0,
     "stoker: the ext entry (e.g. \"cls\") whose text is a decimal integer label; that output becomes int32 [1], "
     "like readers.file's label."},
    {"random_shuffle", STK_ARG_BOOL, "false", 0, 0,
     "Two-level shuffle: shard order per epoch by (seed, epoch), then a buffer of initial_fill samples."},
    {"initial_fill", STK_ARG_INT, "1024", 0, 0, "Size of the shuffle buffer used by random_shuffle."},
    {"seed", STK_ARG_INT, "-1", 0, 0, "Shuffle seed; -1 = the pipeline's seed. Use the same seed on every rank."},
    {"shard_id", STK_ARG_INT, "0", 0, 0, "Index of the part this pipeline reads."},
    {"num_shards", STK_ARG_INT, "1", 0, 0, "Number of parts the data set is split into (ranks)."},
    {"stick_to_shard", STK_ARG_BOOL, "false", 0, 0, "Read part shard_id every epoch (else move to the next)."},
    {"pad_last_batch", STK_ARG_BOOL, "false", 0, 0,
     "Report padded epoch sizes (fill always repeats the last sample; with index_paths every part gives the same "
     "batch count either way)."},
    {"skip_bad_files", STK_ARG_BOOL, "false", 0, 0,
     "Skip (and record: skipped_files, the bad files log) corrupt or truncated shards' remainders and bad "
     "samples instead of failing."},
    {"parallel_shards", STK_ARG_INT, "1", 0, 0,
     "stoker: shards streamed at once (read-ahead threads); the stream interleaves them sample by sample."},
    {"read_ahead_samples", STK_ARG_INT, "256", 0, 0, "stoker: samples buffered ahead per streamed shard."},
    {"read_ahead_mb", STK_ARG_INT, "64", 0, 0, "stoker: bytes (MiB) buffered ahead per streamed shard."},
    {"connect_timeout", STK_ARG_FLOAT, "10", 0, 0, "stoker: seconds to connect to an http(s) server."},
    {"stall_timeout", STK_ARG_FLOAT, "30", 0, 0,
     "stoker: seconds without a byte before a transfer is retried (http) or fails (pipe)."},
    {"http_retries", STK_ARG_INT, "5", 0, 0,
     "stoker: reconnects (resuming at the byte reached) after a drop or stall."},
    STK__DALI_READER_HINT_ARGS,
    STK__DALI_READ_AHEAD_ARG,
};

/* Outputs: one per ext group (at most 8; the schema declares 8, unused ones are empty uint8). */
const stk__op_schema stk__op_readers_webdataset = {
    .name = "readers.webdataset",
    .doc =
        "Reads samples from WebDataset tar shards (local, http(s), pipe:). Output g = the component of ext "
        "group g (uint8 1-D, or dtypes[g]; int32 [1] for label_ext).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = STK__WDS_MAX_GROUPS,
    .devices = STK_OPDEV_CPU,
    .args = wds_args,
    .num_args = (int)(sizeof wds_args / sizeof wds_args[0]),
    .is_reader = 1,
};
