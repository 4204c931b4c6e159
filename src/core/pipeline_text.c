/* src/core/pipeline_text.c: pipeline text files (grammar in docs/pipeline-files.md) and the
 * built-in pipelines rn50-train / rn50-val (DALI's ResNet-50 example), both built through
 * stk_pipeline_add_op. Build-time only, not on a hot path.
 *
 *   # comment
 *   jpegs, labels = readers.file(random_shuffle=True)      # file_root defaults to data_dir
 *   images = decoders.image(jpegs, device="mixed", output_type="RGB")
 *   coin = random.coin_flip(probability=0.5)
 *   images = crop_mirror_normalize(images, mirror=coin, mean=[0.485, 0.456, 0.406])
 *   outputs(images, labels)
 *
 * A variable names a node output; a name assigned twice refers to the newest node. Positional
 * arguments are inputs (variables); keyword arguments are constants or variables (argument
 * inputs). A leading "fn." is accepted. Errors say "line N: ...". */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/engine.h"
#include "core/graph.h"

#define MAX_VARS      128
#define STATEMENT_MAX 16384 /* one statement, continuation lines joined */

typedef struct text_vars {
  char name[MAX_VARS][64];
  char ref[MAX_VARS][96];
  int count;
} text_vars;

static const char *var_ref(const text_vars *v, const char *name) {
  for (int i = v->count - 1; i >= 0; i--)
    if (strcmp(v->name[i], name) == 0) return v->ref[i];
  return NULL;
}

static int var_set(text_vars *v, const char *name, const char *ref) {
  if (v->count >= MAX_VARS) return 0;
  snprintf(v->name[v->count], sizeof v->name[0], "%.63s", name);
  snprintf(v->ref[v->count], sizeof v->ref[0], "%.95s", ref);
  v->count++;
  return 1;
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r') p++;
  return p;
}

static int is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* Copies an identifier (letters, digits, '_', '.') at p into out; returns the end or NULL. */
static const char *read_ident(const char *p, char *out, size_t size) {
  p = skip_ws(p);
  if (!is_ident_start(*p)) return NULL;
  size_t n = 0;
  while (is_ident(p[n])) n++;
  if (n >= size) return NULL;
  memcpy(out, p, n);
  out[n] = '\0';
  return p + n;
}

/* End of one argument (at top-level ',' or ')'), honouring quotes and brackets. */
static const char *arg_end(const char *p) {
  int depth = 0, quote = 0;
  for (; *p; p++) {
    if (quote) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == quote) quote = 0;
      continue;
    }
    if (*p == '"' || *p == '\'') quote = *p;
    else if (*p == '[' || *p == '(') depth++;
    else if (*p == ']' || (*p == ')' && depth > 0)) depth--;
    else if (depth == 0 && (*p == ',' || *p == ')')) return p;
  }
  return p;
}

/* outputs(a, b, ...) at q (just after "outputs"): sets the pipeline's outputs. */
static stk_status parse_outputs(stk_pipeline *pipe, const char *q, const text_vars *vars, char *err, size_t err_size) {
  const char *refs[16];
  int count = 0;
  q++;
  for (;;) {
    q = skip_ws(q);
    if (*q == ')') break;
    char name[64];
    const char *r = read_ident(q, name, sizeof name);
    if (!r) {
      snprintf(err, err_size, "outputs(): expected a variable at '%.20s'", q);
      return STK_EPARSE;
    }
    if (count == 16) {
      snprintf(err, err_size, "outputs(): more than 16 outputs");
      return STK_EPARSE;
    }
    if (!(refs[count] = var_ref(vars, name))) {
      snprintf(err, err_size, "outputs(): unknown variable '%s'", name);
      return STK_EPARSE;
    }
    count++;
    q = skip_ws(r);
    if (*q == ',') q++;
    else if (*q != ')') {
      snprintf(err, err_size, "outputs(): expected ',' or ')'");
      return STK_EPARSE;
    }
  }
  if (*skip_ws(q + 1)) {
    snprintf(err, err_size, "unexpected text after outputs(...)");
    return STK_EPARSE;
  }
  stk_status st = stk_pipeline_set_outputs(pipe, refs, (size_t)count);
  if (st != STK_OK) snprintf(err, err_size, "%s", stk_pipeline_last_error(pipe));
  return st;
}

/* One call's arguments, as parsed. */
typedef struct call_args {
  stk_args *args;
  char input_refs[16][96];
  const char *inputs[16];
  int num_inputs;
  int has_data_arg;  /* file_root / file_list / files given */
  char keys[64][64]; /* keywords seen, to refuse one given twice */
  int num_keys;
} call_args;

static int is_float_text(const char *text) { return strpbrk(text, ".eEiInN") != NULL; }

/* Refuses inf / nan in a number or number list: no operator means anything by them. */
static stk_status check_finite(const char *key, const stk__arg_value *v, stk_arg_type type, char *err,
                               size_t err_size) {
  size_t n = type == STK_ARG_FLOAT ? 1 : v->count;
  for (size_t i = 0; i < n; i++) {
    double x = type == STK_ARG_FLOAT ? v->f : v->flist[i];
    if (x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308) {
      snprintf(err, err_size, "argument '%s': %g is not a finite number", key, x);
      return STK_EINVAL;
    }
  }
  return STK_OK;
}

/* A list constant "[...]" under key. */
static stk_status set_list(stk_args *args, const char *key, const char *text, char *err, size_t err_size) {
  stk__arg_value v;
  int has_quote = strchr(text, '"') || strchr(text, '\'');
  int has_float = !has_quote && is_float_text(text);
  stk_arg_type type = has_quote ? STK_ARG_STRING_LIST : has_float ? STK_ARG_FLOAT_LIST : STK_ARG_INT_LIST;
  if (stk__arg_parse_text(type, text, &v) != STK_OK) {
    snprintf(err, err_size, "argument '%s': malformed list %.200s", key, text);
    return STK_EPARSE;
  }
  stk_status st = type == STK_ARG_FLOAT_LIST ? check_finite(key, &v, type, err, err_size) : STK_OK;
  if (st == STK_OK)
    st = type == STK_ARG_INT_LIST     ? stk_args_set_int_list(args, key, v.ilist, v.count)
         : type == STK_ARG_FLOAT_LIST ? stk_args_set_float_list(args, key, v.flist, v.count)
                                      : stk_args_set_string_list(args, key, (const char *const *)v.slist, v.count);
  stk__arg_value_clear(&v);
  return st;
}

/* Classifies and stores value text [p, end) under key. */
static stk_status set_value(stk_args *args, const char *key, const char *p, const char *end, const text_vars *vars,
                            char *err, size_t err_size) {
  while (p < end && isspace((unsigned char)*p)) p++;
  while (end > p && isspace((unsigned char)end[-1])) end--;
  size_t n = (size_t)(end - p);
  if (n == 0 || n > 4000) {
    snprintf(err, err_size, "argument '%s' has no value", key);
    return STK_EPARSE;
  }
  char text[4096];
  memcpy(text, p, n);
  text[n] = '\0';
  stk__arg_value v;
  if (text[0] == '"' || text[0] == '\'') {
    if (n < 2 || text[n - 1] != text[0]) {
      snprintf(err, err_size, "argument '%s': unterminated string %.200s", key, text);
      return STK_EPARSE;
    }
    text[n - 1] = '\0';
    return stk_args_set_string(args, key, text + 1);
  }
  if (!strcmp(text, "True") || !strcmp(text, "False")) return stk_args_set_bool(args, key, text[0] == 'T');
  if (text[0] == '[') return set_list(args, key, text, err, err_size);
  if (is_ident_start(text[0]) && strcmp(text, "inf") && strcmp(text, "nan")) {
    const char *ref = var_ref(vars, text);
    if (!ref) {
      snprintf(err, err_size, "argument '%s': unknown variable '%.200s'", key, text);
      return STK_EPARSE;
    }
    return stk_args_set_input(args, key, ref);
  }
  if (stk__arg_parse_text(STK_ARG_INT, text, &v) == STK_OK) return stk_args_set_int(args, key, v.i);
  if (stk__arg_parse_text(STK_ARG_FLOAT, text, &v) == STK_OK) {
    stk_status st = check_finite(key, &v, STK_ARG_FLOAT, err, err_size);
    return st == STK_OK ? stk_args_set_float(args, key, v.f) : st;
  }
  snprintf(err, err_size, "argument '%s': cannot read value %.200s", key, text);
  return STK_EPARSE;
}

/* key=value [q, end) with '=' at eq. name="X" names the node (DALI's and the Python API's
 * spelling), it is no schema argument. */
static stk_status parse_keyword(call_args *c, const char *q, const char *eq, const char *end, const text_vars *vars,
                                char *instance, size_t instance_size, char *err, size_t err_size) {
  char key[64];
  const char *k_end = read_ident(q, key, sizeof key);
  if (!k_end || skip_ws(k_end) != eq) {
    snprintf(err, err_size, "malformed keyword argument at '%.20s'", q);
    return STK_EPARSE;
  }
  for (int i = 0; i < c->num_keys; i++)
    if (!strcmp(c->keys[i], key)) {
      snprintf(err, err_size, "argument '%s' is given twice", key);
      return STK_EPARSE;
    }
  if (c->num_keys == 64) {
    snprintf(err, err_size, "more than 64 keyword arguments");
    return STK_EPARSE;
  }
  snprintf(c->keys[c->num_keys++], sizeof c->keys[0], "%s", key);
  c->has_data_arg |= !strcmp(key, "file_root") || !strcmp(key, "file_list") || !strcmp(key, "files");
  if (strcmp(key, "name") != 0) return set_value(c->args, key, eq + 1, end, vars, err, err_size);
  const char *v = skip_ws(eq + 1), *v_end = end;
  while (v_end > v && isspace((unsigned char)v_end[-1])) v_end--;
  if (v_end - v < 2 || (*v != '"' && *v != '\'') || v_end[-1] != *v) {
    snprintf(err, err_size, "name= expects a quoted string");
    return STK_EPARSE;
  }
  snprintf(instance, instance_size, "%.*s", (int)(v_end - v - 2 < 63 ? v_end - v - 2 : 63), v + 1);
  return STK_OK;
}

/* A positional argument [q, end): a variable, the next regular input. */
static stk_status parse_positional(call_args *c, const char *op, const char *q, const char *end, const text_vars *vars,
                                   char *err, size_t err_size) {
  char name[64];
  const char *r = read_ident(q, name, sizeof name);
  if (c->num_keys > 0) {
    snprintf(err, err_size, "input %d of %s: a positional argument follows a keyword argument", c->num_inputs, op);
    return STK_EPARSE;
  }
  if (!r || skip_ws(r) != end) {
    snprintf(err, err_size, "input %d of %s: positional arguments must be variables", c->num_inputs, op);
    return STK_EPARSE;
  }
  const char *ref = var_ref(vars, name);
  if (!ref) {
    snprintf(err, err_size, "input %d of %s: unknown variable '%s'", c->num_inputs, op, name);
    return STK_EPARSE;
  }
  if (c->num_inputs == 16) {
    snprintf(err, err_size, "%s: more than 16 inputs", op);
    return STK_EPARSE;
  }
  snprintf(c->input_refs[c->num_inputs], sizeof c->input_refs[0], "%s", ref);
  c->inputs[c->num_inputs] = c->input_refs[c->num_inputs];
  c->num_inputs++;
  return STK_OK;
}

/* The arguments of a call, q just after '('. */
static stk_status parse_call_args(call_args *c, const char *op, const char *q, const text_vars *vars, char *instance,
                                  size_t instance_size, char *err, size_t err_size) {
  stk_status st = STK_OK;
  for (;;) {
    q = skip_ws(q);
    if (*q == ')') break;
    const char *end = arg_end(q);
    const char *eq = NULL;
    for (const char *ch = q; ch < end && !eq; ch++)
      if (*ch == '=') eq = ch;
    const char *first_quote = strpbrk(q, "\"'[");
    if (eq && first_quote && first_quote < eq) eq = NULL;
    st = eq ? parse_keyword(c, q, eq, end, vars, instance, instance_size, err, err_size)
            : parse_positional(c, op, q, end, vars, err, err_size);
    if (st != STK_OK) return st;
    q = end;
    if (*q == ',') q++;
    else if (*q != ')') {
      snprintf(err, err_size, "missing ')' in the call to %s", op);
      return STK_EPARSE;
    }
  }
  if (*skip_ws(q + 1)) {
    snprintf(err, err_size, "unexpected text after the call to %s", op);
    return STK_EPARSE;
  }
  return STK_OK;
}

/* Targets "a, b, c =" at p; returns the text after '=' or NULL (err set). */
static const char *parse_targets(const char *p, char targets[8][64], int *num_targets, char *err, size_t err_size) {
  const char *q = read_ident(p, targets[0], sizeof targets[0]);
  if (!q) {
    snprintf(err, err_size, "a name longer than %zu characters at '%.20s'", sizeof targets[0] - 1, p);
    return NULL;
  }
  *num_targets = 1;
  q = skip_ws(q);
  while (*q == ',') {
    if (*num_targets == 8) {
      snprintf(err, err_size, "more than 8 names before '='");
      return NULL;
    }
    q = read_ident(q + 1, targets[*num_targets], sizeof targets[0]);
    if (!q) {
      snprintf(err, err_size, "expected a name (of at most %zu characters) after ','", sizeof targets[0] - 1);
      return NULL;
    }
    (*num_targets)++;
    q = skip_ws(q);
  }
  if (*q != '=') {
    snprintf(err, err_size, "expected '=' after '%s'", targets[*num_targets - 1]);
    return NULL;
  }
  return q + 1;
}

/* The node's name: the first target, made unique when reassigned. */
static void default_instance(const stk_pipeline *pipe, const char *target, char *instance, size_t size) {
  snprintf(instance, size, "%.63s", target);
  for (int k = 1; k < 1000; k++) {
    int used = 0;
    for (int i = 0; i < pipe->num_nodes && !used; i++) used = strcmp(pipe->nodes[i].op.name, instance) == 0;
    if (!used) break;
    snprintf(instance, size, "%.63s_%d", target, k);
  }
}

/* More names before '=' than the operator has outputs is an error (checked before the node is
 * added). */
static stk_status check_targets(const stk__op_schema *schema, const char *op, int num_targets, char *err,
                                size_t err_size) {
  if (!schema || num_targets <= schema->num_outputs) return STK_OK;
  snprintf(err, err_size, "%d names for the %d output%s of %s", num_targets, schema->num_outputs,
           schema->num_outputs == 1 ? "" : "s", op);
  return STK_EPARSE;
}

/* Binds targets to the outputs of node `instance`. */
static stk_status bind_targets(text_vars *vars, const char *instance, char targets[8][64], int num_targets, char *err,
                               size_t err_size) {
  for (int t = 0; t < num_targets; t++) {
    char ref[96];
    if (t == 0) snprintf(ref, sizeof ref, "%.80s", instance);
    else snprintf(ref, sizeof ref, "%.80s[%d]", instance, t);
    if (!var_set(vars, targets[t], ref)) {
      snprintf(err, err_size, "too many variables");
      return STK_ERANGE;
    }
  }
  return STK_OK;
}

/* One statement (comments stripped, continuation lines joined). */
static stk_status parse_statement(stk_pipeline *pipe, const char *line, text_vars *vars, const char *data_dir,
                                  int *saw_outputs, char *err, size_t err_size) {
  const char *p = skip_ws(line);
  if (!*p) return STK_OK;
  if (*saw_outputs) {
    snprintf(err, err_size, "nothing may follow outputs(...)");
    return STK_EPARSE;
  }
  char word[128];
  const char *q = read_ident(p, word, sizeof word);
  if (!q) {
    snprintf(err, err_size, "expected a name at '%.20s'", p);
    return STK_EPARSE;
  }
  q = skip_ws(q);
  if (strcmp(word, "outputs") == 0 && *q == '(') {
    *saw_outputs = 1;
    return parse_outputs(pipe, q, vars, err, err_size);
  }
  char targets[8][64];
  int num_targets = 0;
  if (!(q = parse_targets(p, targets, &num_targets, err, err_size))) return STK_EPARSE;
  char op_name[128];
  q = read_ident(q, op_name, sizeof op_name);
  if (!q || *(q = skip_ws(q)) != '(') {
    snprintf(err, err_size, "expected an operator call like decoders.image(...)");
    return STK_EPARSE;
  }
  const char *op = strncmp(op_name, "fn.", 3) == 0 ? op_name + 3 : op_name;
  char instance[96];
  default_instance(pipe, targets[0], instance, sizeof instance);
  call_args *c = calloc(1, sizeof *c);
  if (!c) return STK_ENOMEM;
  stk_status st = stk_args_new(&c->args);
  if (st == STK_OK) st = parse_call_args(c, op, q + 1, vars, instance, sizeof instance, err, err_size);
  const stk__op_schema *schema = stk__op_schema_find(op);
  if (st == STK_OK && schema && schema->is_reader && !c->has_data_arg && data_dir) {
    for (int a = 0; a < schema->num_args; a++)
      if (!strcmp(schema->args[a].name, "file_root")) st = stk_args_set_string(c->args, "file_root", data_dir);
  }
  if (st == STK_OK) st = check_targets(schema, op, num_targets, err, err_size);
  if (st == STK_OK) {
    st = stk_pipeline_add_op(pipe, op, instance, c->inputs, (size_t)c->num_inputs, c->args);
    if (st == STK_OK) st = stk__graph_check_arg_inputs(pipe, pipe->num_nodes - 1);
    if (st != STK_OK) snprintf(err, err_size, "%s", stk_pipeline_last_error(pipe));
  }
  stk_args_destroy(c->args);
  free(c);
  if (st != STK_OK) return st;
  return bind_targets(vars, instance, targets, num_targets, err, err_size);
}

/* Open brackets of the statement being read, so it may continue on the next lines. */
typedef struct bracket_stack {
  char open[64];
  int depth;
  int mismatch; /* a ')' closed a '[' (or the reverse), or too deep: the statement ends here and
                   the parser names what is wrong */
} bracket_stack;

/* Strips a '#' comment outside quotes from line and follows its brackets on the stack. */
static void strip_comment(char *line, bracket_stack *b) {
  int quote = 0;
  for (char *c = line; *c; c++) {
    if (quote) {
      if (*c == '\\' && c[1]) c++;
      else if (*c == quote) quote = 0;
    } else if (*c == '"' || *c == '\'') {
      quote = *c;
    } else if (*c == '#') {
      *c = '\0';
      break;
    } else if (*c == '(' || *c == '[') {
      if (b->depth == (int)sizeof b->open) b->mismatch = 1;
      else b->open[b->depth++] = *c;
    } else if (*c == ')' || *c == ']') {
      if (b->depth > 0 && b->open[b->depth - 1] == (*c == ')' ? '(' : '[')) b->depth--;
      else if (b->depth > 0) b->mismatch = 1;
    }
  }
}

stk_status stk_pipeline_load_text(stk_pipeline *pipe, const char *text, const char *data_dir) {
  if (!pipe || !text) return STK_EINVAL;
  if (pipe->built || pipe->num_nodes) {
    stk__pipe_error(pipe, "load_text: the pipeline must be new (no operators yet)");
    return STK_ESTATE;
  }
  if ((unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
    text += 3; /* a UTF-8 byte order mark, as some editors write */
  text_vars *vars = calloc(1, sizeof *vars);
  char *statement = malloc(STATEMENT_MAX);
  if (!vars || !statement) {
    free(vars), free(statement);
    return STK_ENOMEM;
  }
  int line_no = 0, start_line = 0, saw_outputs = 0, statements = 0;
  bracket_stack brackets = {0};
  size_t used = 0;
  stk_status st = STK_OK;
  const char *p = text;
  char err[1536];
  while (*p && st == STK_OK) {
    line_no++;
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (used == 0) start_line = line_no;
    if (used + n + 2 > STATEMENT_MAX) {
      stk__pipe_error(pipe, "line %d: the statement is longer than %d characters", start_line, STATEMENT_MAX - 2);
      st = STK_EPARSE;
      break;
    }
    memcpy(statement + used, p, n);
    statement[used + n] = '\0';
    strip_comment(statement + used, &brackets);
    used += strlen(statement + used);
    p = nl ? nl + 1 : p + n;
    if (brackets.depth > 0 && !brackets.mismatch && *p) {
      statement[used++] = ' '; /* an open bracket: the statement goes on on the next line */
      continue;
    }
    err[0] = '\0';
    if (brackets.depth > 0 && !brackets.mismatch) {
      snprintf(err, sizeof err, "missing '%c': the statement that starts on this line is not closed",
               brackets.open[brackets.depth - 1] == '(' ? ')' : ']');
      st = STK_EPARSE;
    } else {
      statements += *skip_ws(statement) != '\0';
      const int nodes_before = pipe->num_nodes;
      st = parse_statement(pipe, statement, vars, data_dir, &saw_outputs, err, sizeof err);
      for (int k = nodes_before; k < pipe->num_nodes; k++) pipe->nodes[k].text_line = start_line;
    }
    if (st != STK_OK) stk__pipe_error(pipe, "line %d: %s", start_line, err[0] ? err : stk_strerror(st));
    used = 0;
    memset(&brackets, 0, sizeof brackets);
  }
  if (st == STK_OK && !saw_outputs) {
    if (statements == 0) stk__pipe_error(pipe, "the pipeline text is empty: no statements and no outputs(...)");
    else stk__pipe_error(pipe, "line %d: the file ends without outputs(...)", line_no);
    st = STK_EPARSE;
  }
  free(statement);
  free(vars);
  return st;
}
