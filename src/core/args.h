/* src/core/args.h: internal side of stk_args (the user's named, typed argument bag) and the
 * resolution of an stk_args against an operator schema into an stk__arg_value array (defaults
 * filled from their text form, types checked). Build-time only, never on a hot path. */
#ifndef STOKER_CORE_ARGS_H
#define STOKER_CORE_ARGS_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stk__args_entry {
  char *name;
  stk__arg_value value; /* type is the type given by the setter; input_ref set for STK_ARG_INPUT */
} stk__args_entry;

struct stk_args {
  stk__args_entry *entries;
  size_t count, capacity;
};

/* Frees what a value owns (strings, lists, input_ref) and zeroes it. */
STK_INTERNAL void stk__arg_value_clear(stk__arg_value *value);
/* Deep copy of src into dst (dst is overwritten, not freed first). */
STK_INTERNAL stk_status stk__arg_value_copy(stk__arg_value *dst, const stk__arg_value *src);

/* Parses a schema default (or any value in its text form) as `type`:
 * INT "224", FLOAT "0.5", BOOL "True"/"False"/"true"/"false"/"1"/"0", STRING "cpu" or "\"cpu\"",
 * lists "[0.485, 0.456]" (a bare scalar is a list of one). STK_EPARSE on malformed text. */
STK_INTERNAL stk_status stk__arg_parse_text(stk_arg_type type, const char *text, stk__arg_value *out);

/* The entry named `name` in args, or NULL. */
STK_INTERNAL const stk__arg_value *stk__args_find(const stk_args *args, const char *name);

/* Resolves args against schema into values[schema->num_args] (caller-allocated, zeroed).
 * Names in `ignored` (NULL-terminated, e.g. "device") are skipped. Every argument input gets
 * input_slot = -1 (the graph sets slots at build). On error the message names the operator
 * (instance_name, else the schema name), the argument and what was expected; values are left
 * cleared. */
STK_INTERNAL stk_status stk__args_resolve(const stk__op_schema *schema, const char *instance_name, const stk_args *args,
                                          const char *const *ignored, stk__arg_value *values, char *err,
                                          size_t err_size);
STK_INTERNAL void stk__arg_values_free(stk__arg_value *values, int count);

/* "cpu" / "mixed" / "gpu" -> device; STK_EINVAL otherwise. */
STK_INTERNAL stk_status stk__device_parse(const char *text, stk__op_device *out);
STK_INTERNAL const char *stk__device_name(stk__op_device device);
STK_INTERNAL unsigned stk__device_bit(stk__op_device device);

#ifdef __cplusplus
}
#endif
#endif
