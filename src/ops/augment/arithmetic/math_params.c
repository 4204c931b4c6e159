/* src/ops/augment/arithmetic/math_params.c: math.elementwise's argument parse, DALI's type
 * promotion and result-type rules, and per-sample broadcasting (docs/operators-math.md). One parse
 * for the CPU and GPU implementations. Not per element: the parse runs at build time, planning and
 * broadcasting once per sample (CPU) or batch (GPU). */
#include <stdio.h>
#include <string.h>

#include "ops/augment/arithmetic/math_params.h"
#include "ops/common/dtype.h"

static const char *const kOpNames[STK__MATH_OP_COUNT] = {
    "add",    "sub",   "mul",   "truediv", "floordiv", "mod",   "min",   "max",   "pow",   "fpow",  "eq",
    "ne",     "lt",    "le",    "gt",      "ge",       "bitand", "bitor", "bitxor", "atan2", "neg",   "pos",
    "abs",    "invert", "fabs", "sqrt",    "rsqrt",    "cbrt",  "exp",   "log",   "log2",  "log10", "sin",
    "cos",    "tan",   "asin",  "acos",    "atan",     "sinh",  "cosh",  "tanh",  "floor", "ceil",  "clamp"};

int stk__math_op_find(const char *name) {
  if (!name) return -1;
  if (strcmp(name, "div") == 0) return STK__MATH_DIV;
  for (int i = 0; i < STK__MATH_OP_COUNT; i++)
    if (strcmp(name, kOpNames[i]) == 0) return i;
  return -1;
}

const char *stk__math_op_name(int op) { return op >= 0 && op < STK__MATH_OP_COUNT ? kOpNames[op] : "?"; }

int stk__math_op_is_unary(int op) { return op >= STK__MATH_FIRST_UNARY; }

stk_status stk__math_dtype_parse(const char *text, stk_dtype *out) {
  if (stk__dtype_parse(text, out) == STK_OK) return STK_OK;
  if (!text) return STK_EINVAL;
  for (int d = STK_DTYPE_UINT8; d <= STK_DTYPE_FLOAT64; d++)
    if (strcmp(text, stk_dtype_name((stk_dtype)d)) == 0) {
      *out = (stk_dtype)d;
      return STK_OK;
    }
  return STK_EINVAL;
}

/* ---- type classes ------------------------------------------------------------------------------ */
enum { CLASS_UNSIGNED = 0, CLASS_SIGNED, CLASS_FLOAT };

static void classify(stk_dtype d, int *cls, int *bits) {
  switch (d) {
    case STK_DTYPE_BOOL: *cls = CLASS_UNSIGNED, *bits = 1; return;
    case STK_DTYPE_UINT8: *cls = CLASS_UNSIGNED, *bits = 8; return;
    case STK_DTYPE_UINT16: *cls = CLASS_UNSIGNED, *bits = 16; return;
    case STK_DTYPE_UINT32: *cls = CLASS_UNSIGNED, *bits = 32; return;
    case STK_DTYPE_UINT64: *cls = CLASS_UNSIGNED, *bits = 64; return;
    case STK_DTYPE_INT8: *cls = CLASS_SIGNED, *bits = 8; return;
    case STK_DTYPE_INT16: *cls = CLASS_SIGNED, *bits = 16; return;
    case STK_DTYPE_INT32: *cls = CLASS_SIGNED, *bits = 32; return;
    case STK_DTYPE_INT64: *cls = CLASS_SIGNED, *bits = 64; return;
    case STK_DTYPE_FLOAT16: *cls = CLASS_FLOAT, *bits = 16; return;
    case STK_DTYPE_FLOAT32: *cls = CLASS_FLOAT, *bits = 32; return;
    default: *cls = CLASS_FLOAT, *bits = 64; return;
  }
}

static stk_dtype make_type(int cls, int bits) {
  static const stk_dtype unsigned_types[] = {STK_DTYPE_UINT8, STK_DTYPE_UINT16, STK_DTYPE_UINT32, STK_DTYPE_UINT64};
  static const stk_dtype signed_types[] = {STK_DTYPE_INT8, STK_DTYPE_INT16, STK_DTYPE_INT32, STK_DTYPE_INT64};
  static const stk_dtype float_types[] = {STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT64};
  int k = bits <= 8 ? 0 : bits <= 16 ? 1 : bits <= 32 ? 2 : 3;
  if (cls == CLASS_UNSIGNED) return bits == 1 ? STK_DTYPE_BOOL : unsigned_types[k];
  return cls == CLASS_SIGNED ? signed_types[k] : float_types[k];
}

static int is_float(stk_dtype d) { return d == STK_DTYPE_FLOAT16 || d == STK_DTYPE_FLOAT32 || d == STK_DTYPE_FLOAT64; }

stk_dtype stk__math_promote(stk_dtype a, stk_dtype b) {
  if (a == b) return a;
  int ca, ba, cb, bb;
  classify(a, &ca, &ba);
  classify(b, &cb, &bb);
  if (ca == CLASS_FLOAT || cb == CLASS_FLOAT) {
    if (ca == CLASS_FLOAT && cb == CLASS_FLOAT) return ba >= bb ? a : b;
    return ca == CLASS_FLOAT ? a : b;
  }
  if (ca == cb) return ba >= bb ? a : b;
  int signed_bits = ca == CLASS_SIGNED ? ba : bb, unsigned_bits = ca == CLASS_SIGNED ? bb : ba;
  if (signed_bits > unsigned_bits) return make_type(CLASS_SIGNED, signed_bits);
  /* intX with uintY, X <= Y: int2Y (bool counts as 1 bit); no int128, so int64 at the top. */
  int wider = unsigned_bits * 2;
  return make_type(CLASS_SIGNED, wider > 64 ? 64 : (wider < 8 ? 8 : wider));
}

static int kind_of(stk_dtype d) {
  if (d == STK_DTYPE_FLOAT64) return STK__MK_F64;
  if (is_float(d)) return STK__MK_F32;
  return d == STK_DTYPE_UINT64 ? STK__MK_UINT : STK__MK_INT;
}

/* The float type a floating function of `d` returns: float64 and float16 keep their type, every
 * other type gives float32. */
static stk_dtype float_result(stk_dtype d) { return is_float(d) ? d : STK_DTYPE_FLOAT32; }

/* ---- arguments --------------------------------------------------------------------------------- */
stk_status stk__math_params_get(const stk__op *op, stk__math_params *p, char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  const char *name = stk__arg_string(op, "op");
  p->op = stk__math_op_find(name);
  if (p->op < 0) {
    stk__errorf(err, err_size, "argument 'op': unknown operation \"%s\" (add, sub, mul, truediv, floordiv, mod, "
                "min, max, pow, eq, ne, lt, le, gt, ge, bitand, bitor, bitxor, neg, abs, sqrt, exp, ..., clamp)", name);
    return STK_EINVAL;
  }
  const char *dtype = stk__arg_string(op, "scalar_dtype");
  p->has_constant = dtype[0] != '\0';
  p->constant_dtype = STK_DTYPE_INT32;
  if (p->has_constant && stk__math_dtype_parse(dtype, &p->constant_dtype) != STK_OK) {
    stk__errorf(err, err_size, "argument 'scalar_dtype': unknown type \"%s\"", dtype);
    return STK_EINVAL;
  }
  p->constant_left = stk__arg_bool(op, "scalar_left");
  p->constant_int = stk__arg_int(op, "scalar_int");
  p->constant_float = stk__arg_float(op, "scalar");
  if (p->op == STK__MATH_CLAMP) {
    if (!stk__arg_is_set(op, "lo") || !stk__arg_is_set(op, "hi")) {
      stk__errorf(err, err_size, "op \"clamp\" needs arguments 'lo' and 'hi'");
      return STK_EINVAL;
    }
    p->lo = stk__arg_float(op, "lo");
    p->hi = stk__arg_float(op, "hi");
    if (!p->has_constant) p->constant_dtype = STK_DTYPE_FLOAT32, p->has_constant = 1;
    if (op->num_inputs > 1) {
      stk__errorf(err, err_size, "op \"clamp\" takes 1 tensor input, got %d", op->num_inputs);
      return STK_EINVAL;
    }
    return STK_OK;
  }
  int max_inputs = stk__math_op_is_unary(p->op) ? 1 : (p->has_constant ? 1 : 2);
  if (stk__math_op_is_unary(p->op) && p->has_constant) {
    stk__errorf(err, err_size, "op \"%s\" takes one operand: argument 'scalar_dtype' does not apply", name);
    return STK_EINVAL;
  }
  /* Fewer inputs than needed is caught when the operator runs (stk__math_inputs_check): a standalone
   * instance (tests) is made with the schema's minimum and given its inputs after init. */
  if (op->num_inputs > max_inputs) {
    stk__errorf(err, err_size, "op \"%s\" takes %d tensor input(s)%s, got %d", name, max_inputs,
                p->has_constant ? " besides the scalar constant" : "", op->num_inputs);
    return STK_EINVAL;
  }
  return STK_OK;
}

/* x, a value of type `dtype` given as an int or a double, in compute kind `kind`. */
static stk__math_value constant_in(stk_dtype dtype, int64_t as_int, double as_float, int kind) {
  stk__math_value v;
  double f = as_float;
  if (dtype == STK_DTYPE_FLOAT32) f = (float)f;
  if (dtype == STK_DTYPE_FLOAT16) f = stk__half_to_float(stk__float_to_half((float)f));
  if (!is_float(dtype)) { /* the integer's own width first (a uint8 constant of 300 is 44) */
    uint8_t bytes[8];
    stk__math_value raw;
    raw.i = as_int;
    stk__math_store(bytes, dtype, 0, STK__MK_INT, raw);
    as_int = stk__math_load(bytes, dtype, 0, STK__MK_INT).i;
  }
  if (kind == STK__MK_F32) v.f32 = is_float(dtype) ? (float)f : (float)as_int;
  else if (kind == STK__MK_F64) v.f64 = is_float(dtype) ? f : (double)as_int;
  else if (kind == STK__MK_UINT) v.u = is_float(dtype) ? (uint64_t)f : (uint64_t)as_int;
  else v.i = is_float(dtype) ? (int64_t)f : as_int;
  return v;
}

stk_status stk__math_plan_make(const stk__math_params *p, stk_dtype a_dtype, stk_dtype b_dtype,
                               stk__math_plan *plan, char *err, size_t err_size) {
  memset(plan, 0, sizeof *plan);
  const char *name = stk__math_op_name(p->op);
  plan->op = p->op;
  if (stk__math_op_is_unary(p->op)) {
    stk_dtype t = a_dtype, out = t;
    switch (p->op) {
      case STK__MATH_NEG:
        if (t == STK_DTYPE_BOOL) {
          stk__errorf(err, err_size, "op \"neg\" does not take bool (use ~ or == 0 for a logical not)");
          return STK_EINVAL;
        }
        break;
      case STK__MATH_INVERT:
        if (is_float(t)) {
          stk__errorf(err, err_size, "op \"invert\" (~) takes integer or bool operands, got %s", stk_dtype_name(t));
          return STK_EINVAL;
        }
        if (t == STK_DTYPE_BOOL) plan->op = STK__MATH_EQ; /* ~b is b == 0 */
        break;
      case STK__MATH_POS: case STK__MATH_ABS: case STK__MATH_FLOOR: case STK__MATH_CEIL: break;
      case STK__MATH_CLAMP: out = stk__math_promote(t, p->constant_dtype); break;
      default: out = float_result(t); break;
    }
    plan->a_dtype = t;
    plan->out_dtype = plan->op == STK__MATH_EQ ? STK_DTYPE_BOOL : out;
    plan->kind = kind_of(out);
    if (plan->op == STK__MATH_EQ) { /* bool invert: compare with the constant 0 */
      plan->kind = STK__MK_INT;
      plan->constant = 2;
      plan->constant_value.i = 0;
    }
    if (p->op == STK__MATH_CLAMP) {
      plan->lo = constant_in(p->constant_dtype, (int64_t)p->lo, p->lo, plan->kind);
      plan->hi = constant_in(p->constant_dtype, (int64_t)p->hi, p->hi, plan->kind);
    }
    return STK_OK;
  }
  stk_dtype left = a_dtype, right = b_dtype;
  if (p->has_constant) {
    if (p->constant_left) left = p->constant_dtype, right = a_dtype;
    else right = p->constant_dtype;
    plan->constant = p->constant_left ? 1 : 2;
  }
  stk_dtype promoted = stk__math_promote(left, right), out = promoted;
  int both_bool = left == STK_DTYPE_BOOL && right == STK_DTYPE_BOOL;
  switch (p->op) {
    case STK__MATH_BITAND: case STK__MATH_BITOR: case STK__MATH_BITXOR:
      if (is_float(left) || is_float(right)) {
        stk__errorf(err, err_size, "op \"%s\" takes integer or bool operands, got %s and %s", name,
                    stk_dtype_name(left), stk_dtype_name(right));
        return STK_EINVAL;
      }
      break;
    case STK__MATH_MOD:
      if (left == STK_DTYPE_BOOL || right == STK_DTYPE_BOOL) {
        stk__errorf(err, err_size, "op \"mod\" (%%) does not take bool operands (got %s and %s)", stk_dtype_name(left),
                    stk_dtype_name(right));
        return STK_EINVAL;
      }
      break;
    case STK__MATH_ADD: case STK__MATH_SUB: case STK__MATH_DIV: case STK__MATH_FLOORDIV: case STK__MATH_POW:
    case STK__MATH_FPOW:
      if (both_bool) {
        stk__errorf(err, err_size, "op \"%s\" does not take two bool operands (between bools only *, &, |, ^, "
                    "min, max and comparisons are defined)", name);
        return STK_EINVAL;
      }
      break;
    default: break;
  }
  if (p->op == STK__MATH_DIV || p->op == STK__MATH_FPOW || p->op == STK__MATH_ATAN2) out = float_result(promoted);
  if (stk__math_is_compare(p->op)) out = STK_DTYPE_BOOL;
  plan->kind = stk__math_is_compare(p->op) ? kind_of(promoted) : kind_of(out);
  plan->a_dtype = left;
  plan->b_dtype = right;
  plan->out_dtype = out;
  if (p->has_constant) plan->constant_value = constant_in(p->constant_dtype, p->constant_int, p->constant_float, plan->kind);
  return STK_OK;
}

/* ---- broadcasting ------------------------------------------------------------------------------ */
static int is_scalar(const stk__tensor *t) { return t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1); }

static int same_shape(const stk__tensor *a, const stk__tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] != b->shape[k]) return 0;
  return 1;
}

static void shape_text(const stk__tensor *t, char *out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  for (int k = 0; k < t->ndim && used < size; k++)
    used += (size_t)snprintf(out + used, size - used, k ? ", %lld" : "%lld", (long long)t->shape[k]);
  if (used < size) snprintf(out + used, size - used, "]");
}

stk_status stk__math_broadcast(const stk__tensor *a, const stk__tensor *b, int *ndim, int64_t *shape,
                               const char **layout, int *a_step, int *b_step, char *err, size_t err_size) {
  const stk__tensor *shaper = a;
  *a_step = 1;
  *b_step = b ? 1 : 0;
  if (b && !same_shape(a, b)) {
    if (is_scalar(b)) {
      *b_step = 0;
    } else if (is_scalar(a)) {
      *a_step = 0;
      shaper = b;
    } else {
      char sa[128], sb[128];
      shape_text(a, sa, sizeof sa);
      shape_text(b, sb, sizeof sb);
      stk__errorf(err, err_size, "operand shapes %s and %s do not match: the shapes must be equal, or one operand "
                  "a per-sample scalar (shape [] or [1])", sa, sb);
      return STK_EINVAL;
    }
  }
  *ndim = shaper->ndim;
  memcpy(shape, shaper->shape, sizeof(int64_t) * (size_t)shaper->ndim);
  *layout = shaper->layout;
  return STK_OK;
}

stk_status stk__math_inputs_check(const stk__op *op, const stk__math_params *p, char *err, size_t err_size) {
  int want = stk__math_op_is_unary(p->op) || p->has_constant ? 1 : 2;
  if (op->num_inputs == want) return STK_OK;
  stk__errorf(err, err_size, "op \"%s\" takes %d tensor input(s)%s, got %d", stk__math_op_name(p->op), want,
              p->has_constant && !stk__math_op_is_unary(p->op) ? " besides the scalar constant" : "", op->num_inputs);
  return STK_EINVAL;
}
