/* src/core/args.c: stk_args (a bag of named, typed argument values given by the user), the text
 * form of values (schema defaults), and resolution of an stk_args against an operator schema.
 * Build-time only, not on a hot path.
 *
 * Type rules at resolution (documented in docs/pipeline.md):
 *   - the given type equals the schema's type, or
 *   - an int where a float is wanted (promoted, as in Python), an int list where a float list is
 *     wanted (promoted), or
 *   - a scalar where a list of that element type is wanted (a list of one), or
 *   - an argument input (stk_args_set_input) where the schema says accepts_input.
 * Everything else fails with STK_EINVAL naming the operator, the argument and the type wanted. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"

const char *stk_arg_type_name(stk_arg_type type) {
  switch (type) {
    case STK_ARG_INT:
      return "int";
    case STK_ARG_FLOAT:
      return "float";
    case STK_ARG_BOOL:
      return "bool";
    case STK_ARG_STRING:
      return "string";
    case STK_ARG_INT_LIST:
      return "int list";
    case STK_ARG_FLOAT_LIST:
      return "float list";
    case STK_ARG_STRING_LIST:
      return "string list";
    case STK_ARG_INPUT:
      return "argument input";
  }
  return "unknown";
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void stk__arg_value_clear(stk__arg_value *v) {
  free(v->s);
  free(v->ilist);
  free(v->flist);
  if (v->slist)
    for (size_t i = 0; i < v->count; i++) free(v->slist[i]);
  free(v->slist);
  free(v->input_ref);
  memset(v, 0, sizeof *v);
  v->input_slot = -1;
}

void stk__arg_values_free(stk__arg_value *values, int count) {
  if (!values) return;
  for (int i = 0; i < count; i++) stk__arg_value_clear(&values[i]);
  free(values);
}

stk_status stk__arg_value_copy(stk__arg_value *dst, const stk__arg_value *src) {
  *dst = *src;
  dst->s = NULL;
  dst->ilist = NULL;
  dst->flist = NULL;
  dst->slist = NULL;
  dst->input_ref = NULL;
  if (src->s && !(dst->s = dup_string(src->s))) goto oom;
  if (src->input_ref && !(dst->input_ref = dup_string(src->input_ref))) goto oom;
  if (src->ilist) {
    if (!(dst->ilist = malloc(src->count * sizeof *dst->ilist + 1))) goto oom;
    memcpy(dst->ilist, src->ilist, src->count * sizeof *dst->ilist);
  }
  if (src->flist) {
    if (!(dst->flist = malloc(src->count * sizeof *dst->flist + 1))) goto oom;
    memcpy(dst->flist, src->flist, src->count * sizeof *dst->flist);
  }
  if (src->slist) {
    if (!(dst->slist = calloc(src->count + 1, sizeof *dst->slist))) goto oom;
    for (size_t i = 0; i < src->count; i++)
      if (!(dst->slist[i] = dup_string(src->slist[i]))) goto oom;
  }
  return STK_OK;
oom:
  stk__arg_value_clear(dst);
  return STK_ENOMEM;
}

/* ---- stk_args ------------------------------------------------------------------------------- */
stk_status stk_args_new(stk_args **out) {
  if (!out) return STK_EINVAL;
  *out = calloc(1, sizeof **out);
  return *out ? STK_OK : STK_ENOMEM;
}

void stk_args_destroy(stk_args *args) {
  if (!args) return;
  for (size_t i = 0; i < args->count; i++) {
    free(args->entries[i].name);
    stk__arg_value_clear(&args->entries[i].value);
  }
  free(args->entries);
  free(args);
}

const stk__arg_value *stk__args_find(const stk_args *args, const char *name) {
  if (!args) return NULL;
  for (size_t i = 0; i < args->count; i++)
    if (strcmp(args->entries[i].name, name) == 0) return &args->entries[i].value;
  return NULL;
}

/* Stores value (ownership moves in) under name, replacing an earlier one. On failure value is
 * cleared. */
static stk_status args_put(stk_args *args, const char *name, stk__arg_value *value) {
  if (!args || !name || !*name) {
    stk__arg_value_clear(value);
    return STK_EINVAL;
  }
  value->is_set = 1;
  value->has_value = 1;
  value->input_slot = -1;
  for (size_t i = 0; i < args->count; i++) {
    if (strcmp(args->entries[i].name, name) == 0) {
      stk__arg_value_clear(&args->entries[i].value);
      args->entries[i].value = *value;
      return STK_OK;
    }
  }
  if (args->count == args->capacity) {
    size_t cap = args->capacity ? args->capacity * 2 : 8;
    stk__args_entry *bigger = realloc(args->entries, cap * sizeof *bigger);
    if (!bigger) {
      stk__arg_value_clear(value);
      return STK_ENOMEM;
    }
    args->entries = bigger;
    args->capacity = cap;
  }
  char *copy = dup_string(name);
  if (!copy) {
    stk__arg_value_clear(value);
    return STK_ENOMEM;
  }
  args->entries[args->count].name = copy;
  args->entries[args->count].value = *value;
  args->count++;
  return STK_OK;
}

stk_status stk_args_set_int(stk_args *args, const char *name, int64_t value) {
  stk__arg_value v = {.type = STK_ARG_INT, .i = value};
  return args_put(args, name, &v);
}

stk_status stk_args_set_float(stk_args *args, const char *name, double value) {
  stk__arg_value v = {.type = STK_ARG_FLOAT, .f = value};
  return args_put(args, name, &v);
}

stk_status stk_args_set_bool(stk_args *args, const char *name, int value) {
  stk__arg_value v = {.type = STK_ARG_BOOL, .i = value != 0};
  return args_put(args, name, &v);
}

stk_status stk_args_set_string(stk_args *args, const char *name, const char *value) {
  if (!value) return STK_EINVAL;
  stk__arg_value v = {.type = STK_ARG_STRING, .s = dup_string(value)};
  if (!v.s) return STK_ENOMEM;
  return args_put(args, name, &v);
}

stk_status stk_args_set_int_list(stk_args *args, const char *name, const int64_t *values, size_t count) {
  if (count && !values) return STK_EINVAL;
  stk__arg_value v = {.type = STK_ARG_INT_LIST, .count = count, .ilist = malloc(count * sizeof(int64_t) + 1)};
  if (!v.ilist) return STK_ENOMEM;
  if (count) memcpy(v.ilist, values, count * sizeof(int64_t));
  return args_put(args, name, &v);
}

stk_status stk_args_set_float_list(stk_args *args, const char *name, const double *values, size_t count) {
  if (count && !values) return STK_EINVAL;
  stk__arg_value v = {.type = STK_ARG_FLOAT_LIST, .count = count, .flist = malloc(count * sizeof(double) + 1)};
  if (!v.flist) return STK_ENOMEM;
  if (count) memcpy(v.flist, values, count * sizeof(double));
  return args_put(args, name, &v);
}

stk_status stk_args_set_string_list(stk_args *args, const char *name, const char *const *values, size_t count) {
  if (count && !values) return STK_EINVAL;
  for (size_t i = 0; i < count; i++)
    if (!values[i]) return STK_EINVAL;
  stk__arg_value v = {.type = STK_ARG_STRING_LIST, .count = count, .slist = calloc(count + 1, sizeof(char *))};
  if (!v.slist) return STK_ENOMEM;
  for (size_t i = 0; i < count; i++) {
    if (!(v.slist[i] = dup_string(values[i]))) {
      stk__arg_value_clear(&v);
      return STK_ENOMEM;
    }
  }
  return args_put(args, name, &v);
}

stk_status stk_args_set_input(stk_args *args, const char *name, const char *node_output) {
  if (!node_output || !*node_output) return STK_EINVAL;
  stk__arg_value v = {.type = STK_ARG_INPUT, .input_ref = dup_string(node_output)};
  if (!v.input_ref) return STK_ENOMEM;
  return args_put(args, name, &v);
}

/* ---- Text form ------------------------------------------------------------------------------ */
static const char *skip_space(const char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

/* Parses one scalar element of `type` (INT/FLOAT/BOOL/STRING) from [p, end); trims spaces and
 * string quotes. */
static stk_status parse_scalar(stk_arg_type type, const char *p, const char *end, stk__arg_value *out) {
  while (p < end && isspace((unsigned char)*p)) p++;
  while (end > p && isspace((unsigned char)end[-1])) end--;
  size_t n = (size_t)(end - p);
  char buf[256];
  if (type != STK_ARG_STRING && (n == 0 || n >= sizeof buf)) return STK_EPARSE;
  if (type != STK_ARG_STRING) {
    memcpy(buf, p, n);
    buf[n] = '\0';
  }
  char *stop = NULL;
  errno = 0;
  switch (type) {
    case STK_ARG_INT:
      out->i = strtoll(buf, &stop, 0);
      if (*stop || errno) return STK_EPARSE;
      return STK_OK;
    case STK_ARG_FLOAT:
      out->f = strtod(buf, &stop);
      if (*stop || errno) return STK_EPARSE;
      return STK_OK;
    case STK_ARG_BOOL:
      if (!strcmp(buf, "True") || !strcmp(buf, "true") || !strcmp(buf, "1")) out->i = 1;
      else if (!strcmp(buf, "False") || !strcmp(buf, "false") || !strcmp(buf, "0")) out->i = 0;
      else return STK_EPARSE;
      return STK_OK;
    case STK_ARG_STRING: {
      if (n >= 2 && (p[0] == '"' || p[0] == '\'') && end[-1] == p[0]) {
        p++;
        end--;
        n -= 2;
      }
      out->s = malloc(n + 1);
      if (!out->s) return STK_ENOMEM;
      memcpy(out->s, p, n);
      out->s[n] = '\0';
      return STK_OK;
    }
    default:
      return STK_EINVAL;
  }
}

static stk_arg_type element_type(stk_arg_type list_type) {
  switch (list_type) {
    case STK_ARG_INT_LIST:
      return STK_ARG_INT;
    case STK_ARG_FLOAT_LIST:
      return STK_ARG_FLOAT;
    default:
      return STK_ARG_STRING;
  }
}

stk_status stk__arg_parse_text(stk_arg_type type, const char *text, stk__arg_value *out) {
  memset(out, 0, sizeof *out);
  out->input_slot = -1;
  out->type = type;
  if (!text) return STK_EINVAL;
  if (type == STK_ARG_INPUT) return STK_EINVAL;
  const char *p = skip_space(text);
  const char *end = p + strlen(p);
  if (type == STK_ARG_INT || type == STK_ARG_FLOAT || type == STK_ARG_BOOL || type == STK_ARG_STRING) {
    stk_status st = parse_scalar(type, p, end, out);
    if (st != STK_OK) stk__arg_value_clear(out), out->type = type;
    else out->has_value = 1;
    return st;
  }
  /* Lists: "[a, b, c]" or a bare scalar. */
  while (end > p && isspace((unsigned char)end[-1])) end--;
  if (p < end && *p == '[') {
    if (end[-1] != ']') return STK_EPARSE;
    p++;
    end--;
  }
  size_t cap = 1;
  for (const char *q = p; q < end; q++) cap += *q == ',';
  const char *probe = skip_space(p);
  int empty = probe >= end;
  out->count = 0;
  stk_arg_type elem = element_type(type);
  if (type == STK_ARG_INT_LIST) out->ilist = calloc(cap, sizeof *out->ilist);
  else if (type == STK_ARG_FLOAT_LIST) out->flist = calloc(cap, sizeof *out->flist);
  else out->slist = calloc(cap + 1, sizeof *out->slist);
  if (!out->ilist && !out->flist && !out->slist) return STK_ENOMEM;
  const char *start = p;
  while (!empty) {
    const char *comma = start;
    int in_quote = 0;
    while (comma < end && (in_quote || *comma != ',')) {
      if (*comma == '"') in_quote = !in_quote;
      comma++;
    }
    stk__arg_value one = {0};
    stk_status st = parse_scalar(elem, start, comma, &one);
    if (st != STK_OK) {
      stk__arg_value_clear(out);
      out->type = type;
      return st;
    }
    if (type == STK_ARG_INT_LIST) out->ilist[out->count] = one.i;
    else if (type == STK_ARG_FLOAT_LIST) out->flist[out->count] = one.f;
    else out->slist[out->count] = one.s;
    out->count++;
    if (comma >= end) break;
    start = comma + 1;
    if (skip_space(start) >= end) break; /* trailing comma */
  }
  out->has_value = 1;
  return STK_OK;
}

/* ---- Resolution ----------------------------------------------------------------------------- */
/* Converts given value `in` to schema type `want` into out (deep copy). 1 on success, 0 when the
 * types do not fit, -1 on out-of-memory. */
static int convert(const stk__arg_value *in, stk_arg_type want, stk__arg_value *out) {
  if (stk__arg_value_copy(out, in) != STK_OK) return -1;
  if (in->type == want) return 1;
  if (in->type == STK_ARG_INT && want == STK_ARG_FLOAT) {
    out->f = (double)in->i;
    out->type = STK_ARG_FLOAT;
    return 1;
  }
  if (in->type == STK_ARG_INT_LIST && want == STK_ARG_FLOAT_LIST) {
    out->flist = malloc(in->count * sizeof(double) + 1);
    if (!out->flist) return -1;
    for (size_t i = 0; i < in->count; i++) out->flist[i] = (double)in->ilist[i];
    free(out->ilist);
    out->ilist = NULL;
    out->type = want;
    return 1;
  }
  if (want == STK_ARG_INT_LIST && in->type == STK_ARG_INT) {
    if (!(out->ilist = malloc(sizeof(int64_t)))) return -1;
    out->ilist[0] = in->i;
    out->count = 1;
    out->type = want;
    return 1;
  }
  if (want == STK_ARG_FLOAT_LIST && (in->type == STK_ARG_FLOAT || in->type == STK_ARG_INT)) {
    if (!(out->flist = malloc(sizeof(double)))) return -1;
    out->flist[0] = in->type == STK_ARG_FLOAT ? in->f : (double)in->i;
    out->count = 1;
    out->type = want;
    return 1;
  }
  if (want == STK_ARG_STRING_LIST && in->type == STK_ARG_STRING) {
    if (!(out->slist = calloc(2, sizeof(char *)))) return -1;
    out->slist[0] = out->s;
    out->s = NULL;
    out->count = 1;
    out->type = want;
    return 1;
  }
  /* An empty list of any kind fits any list type. */
  if ((want == STK_ARG_INT_LIST || want == STK_ARG_FLOAT_LIST || want == STK_ARG_STRING_LIST) &&
      (in->type == STK_ARG_INT_LIST || in->type == STK_ARG_FLOAT_LIST || in->type == STK_ARG_STRING_LIST) &&
      in->count == 0) {
    stk__arg_value_clear(out);
    out->type = want;
    out->count = 0;
    out->is_set = out->has_value = 1;
    if (want == STK_ARG_INT_LIST) out->ilist = malloc(1);
    else if (want == STK_ARG_FLOAT_LIST) out->flist = malloc(1);
    else out->slist = calloc(1, sizeof(char *));
    return (out->ilist || out->flist || out->slist) ? 1 : -1;
  }
  stk__arg_value_clear(out);
  return 0;
}

static int is_ignored(const char *name, const char *const *ignored) {
  for (; ignored && *ignored; ignored++)
    if (strcmp(*ignored, name) == 0) return 1;
  return 0;
}

stk_status stk__args_resolve(const stk__op_schema *schema, const char *instance_name, const stk_args *args,
                             const char *const *ignored, stk__arg_value *values, char *err, size_t err_size) {
  const char *who = instance_name && *instance_name ? instance_name : schema->name;
  int same = instance_name && strcmp(instance_name, schema->name) == 0;
  char what[256];
  if (same || !instance_name) snprintf(what, sizeof what, "operator %s", schema->name);
  else snprintf(what, sizeof what, "operator %s (%s)", who, schema->name);
  stk_status st = STK_OK;
  for (int a = 0; a < schema->num_args; a++) {
    values[a].input_slot = -1;
    values[a].type = schema->args[a].type;
  }
  /* Unknown names first: the most common mistake, and the clearest message. */
  for (size_t e = 0; args && e < args->count; e++) {
    const char *name = args->entries[e].name;
    if (is_ignored(name, ignored)) continue;
    int found = 0;
    for (int a = 0; a < schema->num_args && !found; a++) found = strcmp(schema->args[a].name, name) == 0;
    if (!found) {
      size_t off = (size_t)snprintf(err, err_size, "%s: unknown argument '%s' (arguments:", what, name);
      for (int a = 0; a < schema->num_args && off < err_size; a++)
        off += (size_t)snprintf(err + off, err_size - off, "%s%s", a ? ", " : " ", schema->args[a].name);
      if (off < err_size) snprintf(err + off, err_size - off, "%s)", schema->num_args ? "" : " none");
      return STK_EINVAL;
    }
  }
  for (int a = 0; a < schema->num_args; a++) {
    const stk__arg_schema *as = &schema->args[a];
    const stk__arg_value *given = stk__args_find(args, as->name);
    if (given && given->type == STK_ARG_INPUT) {
      if (!as->accepts_input) {
        stk__errorf(err, err_size, "%s: argument '%s' expects a constant %s, not a node output ('%s')", what, as->name,
                    stk_arg_type_name(as->type), given->input_ref);
        st = STK_EINVAL;
        goto fail;
      }
      if (stk__arg_value_copy(&values[a], given) != STK_OK) goto oom;
      values[a].type = as->type;
      values[a].is_set = 1;
      values[a].has_value = 0;
      values[a].input_slot = -1;
      continue;
    }
    if (given) {
      int ok = convert(given, as->type, &values[a]);
      if (ok < 0) goto oom;
      if (ok == 0) {
        stk__errorf(err, err_size, "%s: argument '%s' expects %s%s, got %s", what, as->name,
                    stk_arg_type_name(as->type), as->accepts_input ? " (or a node output)" : "",
                    stk_arg_type_name(given->type));
        st = STK_EINVAL;
        goto fail;
      }
      values[a].is_set = 1;
      values[a].has_value = 1;
      values[a].input_slot = -1;
      continue;
    }
    if (as->required) {
      stk__errorf(err, err_size, "%s: required argument '%s' (%s) is missing", what, as->name,
                  stk_arg_type_name(as->type));
      st = STK_EINVAL;
      goto fail;
    }
    if (as->default_value) {
      st = stk__arg_parse_text(as->type, as->default_value, &values[a]);
      if (st == STK_ENOMEM) goto oom;
      if (st != STK_OK) {
        stk__errorf(err, err_size, "%s: default of argument '%s' (\"%s\") is not a valid %s (a bug in the schema)",
                    what, as->name, as->default_value, stk_arg_type_name(as->type));
        st = STK_EINTERNAL;
        goto fail;
      }
      values[a].is_set = 0;
      values[a].has_value = 1;
    } else {
      values[a].type = as->type;
      values[a].has_value = 0;
    }
    values[a].input_slot = -1;
  }
  return STK_OK;
oom:
  stk__errorf(err, err_size, "%s: out of memory resolving arguments", what);
  st = STK_ENOMEM;
fail:
  for (int a = 0; a < schema->num_args; a++) stk__arg_value_clear(&values[a]);
  return st;
}

/* ---- Devices -------------------------------------------------------------------------------- */
stk_status stk__device_parse(const char *text, stk__op_device *out) {
  if (!text) return STK_EINVAL;
  if (!strcmp(text, "cpu")) *out = STK__DEV_CPU;
  else if (!strcmp(text, "mixed")) *out = STK__DEV_MIXED;
  else if (!strcmp(text, "gpu")) *out = STK__DEV_GPU;
  else return STK_EINVAL;
  return STK_OK;
}

const char *stk__device_name(stk__op_device device) {
  switch (device) {
    case STK__DEV_CPU:
      return "cpu";
    case STK__DEV_MIXED:
      return "mixed";
    case STK__DEV_GPU:
      return "gpu";
  }
  return "?";
}

unsigned stk__device_bit(stk__op_device device) {
  switch (device) {
    case STK__DEV_CPU:
      return STK_OPDEV_CPU;
    case STK__DEV_MIXED:
      return STK_OPDEV_MIXED;
    case STK__DEV_GPU:
      return STK_OPDEV_GPU;
  }
  return 0;
}
