/* tests/wds_testutil.h: helpers shared by the readers.webdataset tests (test_webdataset.c,
 * test_webdataset_http.c): a standalone reader built from a small case struct, and a loop that
 * plans and runs one epoch the way the executor does (plan_batch, then run_sample per slot),
 * collecting each delivered sample's id (from its "JPG:<id>:" payload, see wds_make_shards.py). */
#ifndef STOKER_TESTS_WDS_TESTUTIL_H
#define STOKER_TESTS_WDS_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/op.h"
#include "ops/io/reader_webdataset.h"
#include "testutil.h"

typedef struct wds_case {
  char **paths, **index_paths;
  int num_paths;
  int shard_id, num_shards, random_shuffle, stick_to_shard, pad_last_batch, skip_bad_files, parallel_shards;
  int64_t initial_fill, seed;
  int batch_size;
  const char *missing, *ext1, *label_ext, *dtype1;
  double stall_timeout;
  int http_retries;
  size_t host_budget; /* options.host_memory_budget (0: default) */
} wds_case;

__attribute__((unused)) static wds_case wds_case_default(void) {
  wds_case c = {0};
  c.num_shards = 1, c.initial_fill = 1024, c.seed = 7, c.batch_size = 4, c.parallel_shards = 1;
  c.stall_timeout = 30, c.http_retries = 5;
  return c;
}

typedef struct wds_reader_handle {
  stk__op *op;
  stk__batch_plan plan;
  stk__tensor out[8];
  char err[1024];
  int skip_bad_files;
} wds_reader_handle;

typedef struct wds_epoch {
  int64_t *ids, *sample_ids;
  int32_t *labels, *plan_labels;
  size_t *out1_bytes;
  int64_t count, skipped;
  int64_t records; /* skip records run_sample failed (skip_bad_files): what the executor would record */
  char err[1024];
  char record_names[2048]; /* their names (ctx name), one a line */
} wds_epoch;

__attribute__((unused)) static double wds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((unused)) static int wds_parse_id(const void *data, size_t n) {
  char tmp[32] = "";
  memcpy(tmp, data, n < 31 ? n : 31);
  int id = -1;
  return sscanf(tmp, "JPG:%d:", &id) == 1 ? id : -1;
}

__attribute__((unused)) static stk_status wds_open(const wds_case *c, wds_reader_handle *h) {
  memset(h, 0, sizeof *h);
  stk_args *a;
  stk_args_new(&a);
  stk_args_set_string_list(a, "paths", (const char *const *)c->paths, (size_t)c->num_paths);
  if (c->index_paths)
    stk_args_set_string_list(a, "index_paths", (const char *const *)c->index_paths, (size_t)c->num_paths);
  const char *exts[2] = {"jpg;jpeg", c->ext1};
  stk_args_set_string_list(a, "ext", exts, c->ext1 ? 2 : 1);
  if (c->dtype1) {
    const char *dtypes[2] = {"uint8", c->dtype1};
    stk_args_set_string_list(a, "dtypes", dtypes, 2);
  }
  if (c->label_ext) stk_args_set_string(a, "label_ext", c->label_ext);
  if (c->missing) stk_args_set_string(a, "missing_component_behavior", c->missing);
  stk_args_set_int(a, "shard_id", c->shard_id);
  stk_args_set_int(a, "num_shards", c->num_shards);
  stk_args_set_bool(a, "random_shuffle", c->random_shuffle);
  stk_args_set_bool(a, "stick_to_shard", c->stick_to_shard);
  stk_args_set_bool(a, "pad_last_batch", c->pad_last_batch);
  stk_args_set_bool(a, "skip_bad_files", c->skip_bad_files);
  stk_args_set_int(a, "initial_fill", c->initial_fill);
  stk_args_set_int(a, "seed", c->seed);
  stk_args_set_int(a, "parallel_shards", c->parallel_shards);
  stk_args_set_float(a, "stall_timeout", c->stall_timeout);
  stk_args_set_int(a, "http_retries", c->http_retries);
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = c->batch_size;
  o.host_memory_budget = c->host_budget;
  h->skip_bad_files = c->skip_bad_files;
  static stk_pipeline_options keep; /* the op keeps a pointer to its options */
  keep = o;
  stk_status st = stk__op_new_standalone("readers.webdataset", "cpu", a, &keep, 0, &h->op, h->err, sizeof h->err);
  stk_args_destroy(a);
  h->plan.samples = calloc((size_t)c->batch_size, sizeof *h->plan.samples);
  return st;
}

__attribute__((unused)) static void wds_close(wds_reader_handle *h) {
  if (h->op) stk__op_free_standalone(h->op);
  for (int i = 0; i < 8; i++) stk__tensor_free(&h->out[i]);
  free(h->plan.samples);
  memset(h, 0, sizeof *h);
}

__attribute__((unused)) static void wds_push(wds_epoch *e, int64_t id, int64_t sample_id, int32_t label,
                                             int32_t plan_label, size_t bytes1) {
  if ((e->count & 255) == 0) {
    size_t n = (size_t)e->count + 256;
    e->ids = realloc(e->ids, n * sizeof *e->ids);
    e->sample_ids = realloc(e->sample_ids, n * sizeof *e->sample_ids);
    e->labels = realloc(e->labels, n * sizeof *e->labels);
    e->plan_labels = realloc(e->plan_labels, n * sizeof *e->plan_labels);
    e->out1_bytes = realloc(e->out1_bytes, n * sizeof *e->out1_bytes);
  }
  e->ids[e->count] = id, e->sample_ids[e->count] = sample_id, e->labels[e->count] = label;
  e->plan_labels[e->count] = plan_label, e->out1_bytes[e->count] = bytes1;
  e->count++;
}

/* Plans one batch and runs its slots; real samples go to e (may be NULL). Under skip_bad_files a
 * slot whose run_sample fails is counted in e->records, as the executor would record and replace it. */
__attribute__((unused)) static stk_status wds_next_batch_into(wds_reader_handle *h, wds_epoch *e) {
  stk__batch_plan *p = &h->plan;
  p->batch_size = h->op->options->batch_size;
  h->err[0] = '\0';
  stk_status st = h->op->impl->plan_batch(h->op, p, h->err, sizeof h->err);
  if (st != STK_OK) return st;
  for (int k = 0; k < p->batch_size; k++) {
    stk__tensor *outs[8];
    for (int i = 0; i < 8; i++) outs[i] = &h->out[i];
    char err[512] = "", name[256] = "";
    stk__sample_ctx ctx = {.plan = &p->samples[k],
                           .sample_id = p->samples[k].sample_id,
                           .err = err,
                           .err_size = sizeof err,
                           .name = name,
                           .name_size = sizeof name};
    st = h->op->impl->run_sample(h->op, &ctx, NULL, outs);
    if (st == STK_EIO && h->skip_bad_files) {
      if (e && !p->samples[k].is_fill) {
        e->records++;
        size_t at = strlen(e->record_names);
        snprintf(e->record_names + at, sizeof e->record_names - at, "%s\n", name);
      }
      st = STK_OK;
      continue;
    }
    if (st != STK_OK) {
      snprintf(h->err, sizeof h->err, "run_sample: %s", err);
      return st;
    }
    if (e && !p->samples[k].is_fill) {
      int32_t label = h->out[1].dtype == STK_DTYPE_INT32 && h->out[1].nbytes == 4 ? *(int32_t *)h->out[1].data : -1;
      wds_push(e, wds_parse_id(h->out[0].data, h->out[0].nbytes), p->samples[k].sample_id, label, p->samples[k].label,
               h->out[1].nbytes);
    }
  }
  return STK_OK;
}

__attribute__((unused)) static stk_status wds_next_batch(wds_reader_handle *h) { return wds_next_batch_into(h, NULL); }

/* Reads epoch `epoch` of case c with a fresh reader; the status of the first failure. */
__attribute__((unused)) static stk_status wds_read_epoch(const wds_case *c, uint64_t epoch, wds_epoch *e) {
  memset(e, 0, sizeof *e);
  wds_reader_handle h;
  stk_status st = wds_open(c, &h);
  if (st == STK_OK && epoch > 0) st = h.op->impl->reset(h.op, epoch);
  while (st == STK_OK) {
    st = wds_next_batch_into(&h, e);
    if (st == STK_OK && h.plan.last_in_epoch) break;
  }
  if (st == STK_EOF_EPOCH) st = STK_OK;
  snprintf(e->err, sizeof e->err, "%s", h.err);
  if (h.op) e->skipped = stk__wds_reader_skipped(h.op);
  wds_close(&h);
  return st;
}

__attribute__((unused)) static void wds_epoch_free(wds_epoch *e) {
  free(e->ids), free(e->sample_ids), free(e->labels), free(e->plan_labels), free(e->out1_bytes);
  memset(e, 0, sizeof *e);
}

__attribute__((unused)) static void wds_paths(const char *dir, const char *sub, int n, char **paths, char **index) {
  for (int k = 0; k < n; k++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s/shard-%03d.tar", dir, sub, k);
    paths[k] = strdup(p);
    if (index) {
      snprintf(p, sizeof p, "%s/%s/shard-%03d.idx", dir, sub, k);
      index[k] = strdup(p);
    }
  }
}

__attribute__((unused)) static void wds_paths_free(char **paths, char **index, int n) {
  for (int k = 0; k < n; k++) {
    free(paths[k]);
    if (index) free(index[k]);
  }
}

#endif
