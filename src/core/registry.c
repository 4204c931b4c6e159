/* src/core/registry.c: the operator registry -- the rows of the operator table
 * (stk__op_table, src/ops/op_table.c) followed by rows registered at run time (stk__op_register:
 * test-only operators) -- the public stk_op_* queries, the implementation and fusion lookups the
 * graph uses, and standalone operator instances (stk__op_new_standalone) for operator unit tests
 * and tools. Not on a hot path. The table is static data and registered rows are only appended,
 * so every query is safe from any thread. The table refers to every operator strongly: a plain
 * static link of libstoker.a has them all. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/op.h"

/* Rows registered at run time, after the table's. Appended under the lock and never removed, so
 * a reader sees a consistent prefix. */
#define MAX_EXTRA_ENTRIES 64
static stk__op_entry extra_entries[MAX_EXTRA_ENTRIES];
static int num_extra_entries;
static pthread_mutex_t extra_lock = PTHREAD_MUTEX_INITIALIZER;

static int extra_count(void) { return __atomic_load_n(&num_extra_entries, __ATOMIC_ACQUIRE); }

/* The index-th row of the registry, or NULL. */
static const stk__op_entry *entry_at(int index) {
  if (index < 0) return NULL;
  if (index < stk__op_table_count) return &stk__op_table[index];
  index -= stk__op_table_count;
  return index < extra_count() ? &extra_entries[index] : NULL;
}

static const stk__op_schema *schema_at(int index) {
  const stk__op_entry *entry = entry_at(index);
  return entry ? entry->schema : NULL;
}

int stk_op_count(void) { return stk__op_table_count + extra_count(); }

stk_status stk_op_find(const char *name, int *index_out) {
  if (!name || !index_out) return STK_EINVAL;
  int count = stk_op_count();
  for (int i = 0; i < count; i++) {
    if (strcmp(entry_at(i)->schema->name, name) == 0) {
      *index_out = i;
      return STK_OK;
    }
  }
  return STK_ENOENT;
}

const stk__op_entry *stk__op_entry_find(const char *name) {
  int index;
  return stk_op_find(name, &index) == STK_OK ? entry_at(index) : NULL;
}

const stk__op_schema *stk__op_schema_find(const char *name) {
  const stk__op_entry *entry = stk__op_entry_find(name);
  return entry ? entry->schema : NULL;
}

const stk__op_impl *stk__op_impl_find(const stk__op_schema *schema, stk__op_device device) {
  if (!schema) return NULL;
  int count = stk_op_count();
  for (int i = 0; i < count; i++) {
    const stk__op_entry *e = entry_at(i);
    if (e->schema != schema) continue;
    return device == STK__DEV_CPU ? e->cpu : device == STK__DEV_MIXED ? e->mixed : e->gpu;
  }
  return NULL;
}

const stk__op_impl *stk__op_fused_impl_find(const stk__op_schema *first, const stk__op_schema *second) {
  for (int i = 0; i < stk__op_fusions_count; i++)
    if (stk__op_fusions[i].first == first && stk__op_fusions[i].second == second) return stk__op_fusions[i].fused;
  return NULL;
}

stk_status stk__op_register(const stk__op_entry *entry) {
  if (!entry || !entry->schema || !entry->schema->name) return STK_EINVAL;
  pthread_mutex_lock(&extra_lock);
  stk_status st = STK_OK;
  if (stk__op_schema_find(entry->schema->name)) st = STK_EINVAL;
  else if (num_extra_entries >= MAX_EXTRA_ENTRIES) st = STK_ERANGE;
  else {
    extra_entries[num_extra_entries] = *entry;
    __atomic_store_n(&num_extra_entries, num_extra_entries + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&extra_lock);
  return st;
}

stk_status stk_op_schema(int index, stk_op_schema_info *out) {
  const stk__op_schema *s = schema_at(index);
  if (!s || !out) return STK_EINVAL;
  out->name = s->name;
  out->doc = s->doc ? s->doc : "";
  out->min_inputs = s->min_inputs;
  out->max_inputs = s->max_inputs;
  out->num_outputs = s->num_outputs;
  out->devices = s->devices;
  out->num_args = s->num_args;
  return STK_OK;
}

stk_status stk_op_arg(int op_index, int arg_index, stk_op_arg_info *out) {
  const stk__op_schema *s = schema_at(op_index);
  if (!s || !out || arg_index < 0 || arg_index >= s->num_args) return STK_EINVAL;
  const stk__arg_schema *a = &s->args[arg_index];
  out->name = a->name;
  out->type = a->type;
  out->default_value = a->default_value;
  out->required = a->required;
  out->doc = a->doc ? a->doc : "";
  return STK_OK;
}

/* ---- Standalone instances ------------------------------------------------------------------- */
typedef struct standalone_op {
  stk__op op;
  stk_pipeline_options options;
} standalone_op;

static const char *const ignored_args[] = {"device", NULL};

stk_status stk__op_new_standalone(const char *op_name, const char *device, const stk_args *args,
                                  const stk_pipeline_options *options, int id, stk__op **out, char *err,
                                  size_t err_size) {
  if (!out) return STK_EINVAL;
  *out = NULL;
  const stk__op_schema *schema = stk__op_schema_find(op_name);
  if (!schema) {
    stk__errorf(err, err_size, "unknown operator '%s' (see `stoker ops`)", op_name ? op_name : "(null)");
    return STK_ENOENT;
  }
  if (!device) {
    const stk__arg_value *given = stk__args_find(args, "device");
    device = given && given->type == STK_ARG_STRING ? given->s : "cpu";
  }
  stk__op_device dev;
  if (stk__device_parse(device, &dev) != STK_OK) {
    stk__errorf(err, err_size, "operator %s: argument 'device' expects \"cpu\", \"mixed\" or \"gpu\", got \"%s\"",
                schema->name, device);
    return STK_EINVAL;
  }
  if (!(schema->devices & stk__device_bit(dev))) {
    stk__errorf(err, err_size, "operator %s has no \"%s\" implementation", schema->name, device);
    return STK_ENOTSUP;
  }
  const stk__op_impl *impl = stk__op_impl_find(schema, dev);
  if (!impl) {
    stk__errorf(err, err_size, "operator %s: the \"%s\" implementation is not in this build%s", schema->name, device,
                dev == STK__DEV_CPU ? "" : " (built without CUDA?)");
    return STK_ENOTSUP;
  }
  standalone_op *so = calloc(1, sizeof *so);
  if (!so) return STK_ENOMEM;
  stk__op *op = &so->op;
  if (options) so->options = *options;
  else stk_pipeline_options_default(&so->options);
  so->options.affinity_mask = NULL;
  op->schema = schema;
  op->impl = impl;
  op->device = dev;
  op->id = id;
  op->options = &so->options;
  op->seed = so->options.seed;
  op->num_inputs = schema->min_inputs;
  op->name = malloc(strlen(schema->name) + 1);
  op->args = calloc((size_t)schema->num_args + 1, sizeof *op->args);
  if (!op->name || !op->args) {
    stk__op_free_standalone(op);
    return STK_ENOMEM;
  }
  strcpy(op->name, schema->name);
  stk_status st = stk__args_resolve(schema, NULL, args, ignored_args, op->args, err, err_size);
  if (st != STK_OK) {
    stk__op_free_standalone(op);
    return st;
  }
  /* Argument inputs of a standalone op take the slots after its regular inputs, in schema order. */
  int slot = op->num_inputs;
  for (int a = 0; a < schema->num_args; a++)
    if (op->args[a].input_ref) op->args[a].input_slot = slot++;
  if (impl->init) {
    char init_err[1024] = "";
    st = impl->init(op, init_err, sizeof init_err);
    if (st != STK_OK) {
      /* The operator's message, with the operator named once, as the engine does. */
      stk__errorf(err, err_size, "operator %s: %s", schema->name, init_err[0] ? init_err : stk_strerror(st));
      /* init failed: destroy runs only when init left state behind (its half-made state). */
      if (!op->state) op->impl = NULL;
      stk__op_free_standalone(op);
      return st;
    }
  }
  *out = op;
  return STK_OK;
}

void stk__op_free_standalone(stk__op *op) {
  if (!op) return;
  if (op->impl && op->impl->destroy) op->impl->destroy(op);
  stk__arg_values_free(op->args, op->schema ? op->schema->num_args : 0);
  free(op->name);
  free((standalone_op *)op);
}
