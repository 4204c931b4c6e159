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

#define MAX_VARS 128

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
  if (text[0] == '[') {
    int has_quote = strchr(text, '"') || strchr(text, '\'');
    int has_float = strpbrk(text, ".eE") != NULL && !has_quote;
    stk_arg_type type = has_quote ? STK_ARG_STRING_LIST : has_float ? STK_ARG_FLOAT_LIST : STK_ARG_INT_LIST;
    if (stk__arg_parse_text(type, text, &v) != STK_OK) {
      snprintf(err, err_size, "argument '%s': malformed list %.200s", key, text);
      return STK_EPARSE;
    }
    stk_status st = type == STK_ARG_INT_LIST     ? stk_args_set_int_list(args, key, v.ilist, v.count)
                    : type == STK_ARG_FLOAT_LIST ? stk_args_set_float_list(args, key, v.flist, v.count)
                                                 : stk_args_set_string_list(args, key, (const char *const *)v.slist, v.count);
    stk__arg_value_clear(&v);
    return st;
  }
  if (is_ident_start(text[0])) {
    const char *ref = var_ref(vars, text);
    if (!ref) {
      snprintf(err, err_size, "argument '%s': unknown variable '%.200s'", key, text);
      return STK_EPARSE;
    }
    return stk_args_set_input(args, key, ref);
  }
  if (stk__arg_parse_text(STK_ARG_INT, text, &v) == STK_OK) return stk_args_set_int(args, key, v.i);
  if (stk__arg_parse_text(STK_ARG_FLOAT, text, &v) == STK_OK) return stk_args_set_float(args, key, v.f);
  snprintf(err, err_size, "argument '%s': cannot read value %.200s", key, text);
  return STK_EPARSE;
}

/* One statement (comment stripped). */
static stk_status parse_line(stk_pipeline *pipe, const char *line, text_vars *vars, const char *data_dir,
                             int *saw_outputs, char *err, size_t err_size) {
  const char *p = skip_ws(line);
  if (!*p) return STK_OK;
  if (*saw_outputs) {
    snprintf(err, err_size, "nothing may follow outputs(...)");
    return STK_EPARSE;
  }
  char targets[8][64];
  int num_targets = 0;
  char word[128];
  const char *q = read_ident(p, word, sizeof word);
  if (!q) {
    snprintf(err, err_size, "expected a name at '%.20s'", p);
    return STK_EPARSE;
  }
  q = skip_ws(q);
  if (strcmp(word, "outputs") == 0 && *q == '(') {
    const char *refs[16];
    int count = 0;
    q++;
    while (count < 16) {
      q = skip_ws(q);
      if (*q == ')') break;
      char name[64];
      const char *r = read_ident(q, name, sizeof name);
      if (!r) {
        snprintf(err, err_size, "outputs(): expected a variable at '%.20s'", q);
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
    *saw_outputs = 1;
    stk_status st = stk_pipeline_set_outputs(pipe, refs, (size_t)count);
    if (st != STK_OK) snprintf(err, err_size, "%s", stk_pipeline_last_error(pipe));
    return st;
  }
  snprintf(targets[num_targets++], sizeof targets[0], "%.63s", word);
  while (*q == ',' && num_targets < 8) {
    q = read_ident(q + 1, targets[num_targets], sizeof targets[0]);
    if (!q) {
      snprintf(err, err_size, "expected a name after ','");
      return STK_EPARSE;
    }
    num_targets++;
    q = skip_ws(q);
  }
  if (*q != '=') {
    snprintf(err, err_size, "expected '=' after '%s'", targets[num_targets - 1]);
    return STK_EPARSE;
  }
  char op_name[128];
  q = read_ident(q + 1, op_name, sizeof op_name);
  if (!q || *(q = skip_ws(q)) != '(') {
    snprintf(err, err_size, "expected an operator call like decoders.image(...)");
    return STK_EPARSE;
  }
  const char *op = strncmp(op_name, "fn.", 3) == 0 ? op_name + 3 : op_name;
  /* instance name: the first target, made unique when reassigned */
  char instance[96];
  snprintf(instance, sizeof instance, "%.63s", targets[0]);
  for (int k = 1; k < 1000; k++) {
    int used = 0;
    for (int i = 0; i < pipe->num_nodes && !used; i++) used = strcmp(pipe->nodes[i].op.name, instance) == 0;
    if (!used) break;
    snprintf(instance, sizeof instance, "%.63s_%d", targets[0], k);
  }
  stk_args *args = NULL;
  stk_status st = stk_args_new(&args);
  if (st != STK_OK) return st;
  char input_refs[16][96];
  const char *inputs[16];
  int num_inputs = 0, has_file_root = 0;
  q++;
  for (;;) {
    q = skip_ws(q);
    if (*q == ')') break;
    const char *end = arg_end(q);
    const char *eq = NULL;
    for (const char *c = q; c < end; c++)
      if (*c == '=') {
        eq = c;
        break;
      }
    const char *first_quote = strpbrk(q, "\"'[");
    if (eq && first_quote && first_quote < eq) eq = NULL;
    if (eq) {
      char key[64];
      const char *k_end = read_ident(q, key, sizeof key);
      if (!k_end || skip_ws(k_end) != eq) {
        snprintf(err, err_size, "malformed keyword argument at '%.20s'", q);
        st = STK_EPARSE;
        break;
      }
      has_file_root |= !strcmp(key, "file_root") || !strcmp(key, "file_list") || !strcmp(key, "files");
      if (!strcmp(key, "name")) {
        /* name="Reader" names the node (as in DALI and the Python API), it is no schema argument */
        const char *v = skip_ws(eq + 1), *v_end = end;
        while (v_end > v && isspace((unsigned char)v_end[-1])) v_end--;
        if (v_end - v < 2 || (*v != '"' && *v != '\'') || v_end[-1] != *v) {
          snprintf(err, err_size, "name= expects a quoted string");
          st = STK_EPARSE;
          break;
        }
        snprintf(instance, sizeof instance, "%.*s", (int)(v_end - v - 2 < 63 ? v_end - v - 2 : 63), v + 1);
      } else {
        st = set_value(args, key, eq + 1, end, vars, err, err_size);
      }
      if (st != STK_OK) break;
    } else {
      char name[64];
      const char *r = read_ident(q, name, sizeof name);
      const char *ref = r ? var_ref(vars, name) : NULL;
      if (!r || skip_ws(r) != end || !ref || num_inputs >= 16) {
        snprintf(err, err_size, "input %d of %s: %s", num_inputs, op,
                 !r || skip_ws(r) != end ? "positional arguments must be variables" : "unknown variable");
        st = STK_EPARSE;
        break;
      }
      snprintf(input_refs[num_inputs], sizeof input_refs[0], "%s", ref);
      inputs[num_inputs] = input_refs[num_inputs];
      num_inputs++;
    }
    q = end;
    if (*q == ',') q++;
    else if (*q != ')') {
      snprintf(err, err_size, "missing ')' in the call to %s", op);
      st = STK_EPARSE;
      break;
    }
  }
  if (st == STK_OK && *skip_ws(q + 1)) {
    snprintf(err, err_size, "unexpected text after the call to %s", op);
    st = STK_EPARSE;
  }
  const stk__op_schema *schema = stk__op_schema_find(op);
  if (st == STK_OK && schema && schema->is_reader && !has_file_root && data_dir) {
    for (int a = 0; a < schema->num_args; a++)
      if (!strcmp(schema->args[a].name, "file_root")) st = stk_args_set_string(args, "file_root", data_dir);
  }
  if (st == STK_OK) {
    st = stk_pipeline_add_op(pipe, op, instance, inputs, (size_t)num_inputs, args);
    if (st != STK_OK) snprintf(err, err_size, "%s", stk_pipeline_last_error(pipe));
  }
  stk_args_destroy(args);
  if (st != STK_OK) return st;
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

stk_status stk_pipeline_load_text(stk_pipeline *pipe, const char *text, const char *data_dir) {
  if (!pipe || !text) return STK_EINVAL;
  if (pipe->built || pipe->num_nodes) {
    stk__pipe_error(pipe, "load_text: the pipeline must be new (no operators yet)");
    return STK_ESTATE;
  }
  text_vars *vars = calloc(1, sizeof *vars);
  if (!vars) return STK_ENOMEM;
  int line_no = 0, saw_outputs = 0;
  stk_status st = STK_OK;
  const char *p = text;
  char line[8192], err[1536];
  while (*p && st == STK_OK) {
    line_no++;
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n >= sizeof line) {
      stk__pipe_error(pipe, "line %d: longer than %zu characters", line_no, sizeof line - 1);
      st = STK_EPARSE;
      break;
    }
    memcpy(line, p, n);
    line[n] = '\0';
    /* strip a '#' comment outside quotes */
    int quote = 0;
    for (char *c = line; *c; c++) {
      if (quote) {
        if (*c == quote) quote = 0;
      } else if (*c == '"' || *c == '\'') {
        quote = *c;
      } else if (*c == '#') {
        *c = '\0';
        break;
      }
    }
    err[0] = '\0';
    st = parse_line(pipe, line, vars, data_dir, &saw_outputs, err, sizeof err);
    if (st != STK_OK) stk__pipe_error(pipe, "line %d: %s", line_no, err[0] ? err : stk_strerror(st));
    p = nl ? nl + 1 : p + n;
  }
  if (st == STK_OK && !saw_outputs) {
    stk__pipe_error(pipe, "line %d: the file ends without outputs(...)", line_no);
    st = STK_EPARSE;
  }
  free(vars);
  return st;
}

/* DALI's ResNet-50 example pipelines, spelled in the text form. */
static const char rn50_train[] =
    "jpegs, labels = readers.file(random_shuffle=True, name=\"Reader\")\n"
    "decoded = decoders.image_random_crop(jpegs, device=\"%s\", output_type=\"RGB\"%s)\n"
    "resized = resize(decoded, device=\"%s\", resize_x=224, resize_y=224)\n"
    "coin = random.coin_flip(probability=0.5)\n"
    "images = crop_mirror_normalize(resized, device=\"%s\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)\n"
    "outputs(images, labels)\n";
static const char rn50_val[] =
    "jpegs, labels = readers.file(random_shuffle=False, name=\"Reader\")\n"
    "decoded = decoders.image(jpegs, device=\"%s\", output_type=\"RGB\")\n"
    "resized = resize(decoded, device=\"%s\", resize_shorter=256)\n"
    "images = crop_mirror_normalize(resized, device=\"%s\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])\n"
    "outputs(images, labels)\n";

stk_status stk_pipeline_add_builtin(stk_pipeline *pipe, const char *name, const char *data_dir) {
  return stk_pipeline_add_builtin_ex(pipe, name, data_dir, NULL);
}

stk_status stk_pipeline_add_builtin_on(stk_pipeline *pipe, const char *name, const char *data_dir, const char *decoder) {
  stk_builtin_options options;
  stk_builtin_options_default(&options);
  options.decoder = decoder;
  return stk_pipeline_add_builtin_ex(pipe, name, data_dir, &options);
}

void stk_builtin_options_default(stk_builtin_options *options) {
  if (options) memset(options, 0, sizeof *options);
}

stk_status stk_pipeline_add_builtin_ex(stk_pipeline *pipe, const char *name, const char *data_dir,
                                       const stk_builtin_options *options) {
  if (!pipe || !name) return STK_EINVAL;
  stk_builtin_options defaults;
  stk_builtin_options_default(&defaults);
  if (!options) options = &defaults;
  const char *decoder = options->decoder;
  int train = !strcmp(name, "rn50-train");
  const char *tmpl = train ? rn50_train : !strcmp(name, "rn50-val") ? rn50_val : NULL;
  if (!tmpl) {
    stk__pipe_error(pipe, "unknown built-in pipeline '%s' (rn50-train, rn50-val)", name);
    return STK_EINVAL;
  }
  int gpu = pipe->options.device_id >= 0;
  if (decoder && *decoder && strcmp(decoder, "cpu") != 0 && strcmp(decoder, "mixed") != 0) {
    stk__pipe_error(pipe, "built-in pipeline %s: decoder must be \"cpu\" or \"mixed\", not \"%s\"", name, decoder);
    return STK_EINVAL;
  }
  if (decoder && !strcmp(decoder, "mixed") && !gpu) {
    stk__pipe_error(pipe, "built-in pipeline %s: the mixed decoder needs a GPU (device_id >= 0)", name);
    return STK_EINVAL;
  }
  /* decoder "cpu" on a GPU pipeline: DALI's example with --dali_cpu (decode and resize on the
   * workers, crop_mirror_normalize on the GPU reading the uploaded uint8 images). */
  int cpu_decode = !gpu || (decoder && !strcmp(decoder, "cpu"));
  const char *decode_dev = cpu_decode ? "cpu" : "mixed", *resize_dev = cpu_decode ? "cpu" : "gpu";
  const char *norm_dev = gpu ? "gpu" : "cpu";
  char text[2048];
  if (train)
    snprintf(text, sizeof text, tmpl, decode_dev, options->decode_size_hint ? ", hint_size=[224, 224]" : "",
             resize_dev, norm_dev);
  else
    snprintf(text, sizeof text, tmpl, decode_dev, resize_dev, norm_dev);
  stk_status st = stk_pipeline_load_text(pipe, text, data_dir);
  if (st != STK_OK) {
    char msg[sizeof pipe->last_error];
    snprintf(msg, sizeof msg, "%s", pipe->last_error);
    stk__pipe_error(pipe, "built-in pipeline %s: %s", name, msg);
  }
  return st;
}
