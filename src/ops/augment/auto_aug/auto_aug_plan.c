/* src/ops/augment/auto_aug/auto_aug_plan.c: the host side both implementations of
 * `_auto_aug.apply` and `experimental.equalize` share (auto_aug.h): the kind names, the table
 * parse (kinds / params / num_stages / interp_type / fill_value) and the per-sample plan: which
 * kind and parameter each stage applies, from the sample's `entry` (and `shape`) values, with the
 * warp kinds' destination-to-source matrices. Parse: build time; plan: per sample. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/augment/auto_aug/auto_aug.h"

static const char *const kind_names[STK__AA_KIND_COUNT] = {
    "identity", "invert",      "posterize",     "solarize",        "solarize_add",    "brightness",
    "contrast", "equalize",    "auto_contrast", "color",           "sharpness",       "shear_x",
    "shear_y",  "translate_x", "translate_y",   "translate_x_rel", "translate_y_rel", "rotate"};

const char *stk__aa_kind_name(int kind) { return kind >= 0 && kind < STK__AA_KIND_COUNT ? kind_names[kind] : "?"; }

int stk__aa_kind_parse(const char *name) {
  for (int k = 0; k < STK__AA_KIND_COUNT; k++)
    if (strcmp(name, kind_names[k]) == 0) return k;
  return -1;
}

int stk__aa_kind_class(int kind) {
  switch (kind) {
    case STK__AA_IDENTITY:
      return STK__AA_CLASS_COPY;
    case STK__AA_COLOR:
      return STK__AA_CLASS_COLOR;
    case STK__AA_SHARPNESS:
      return STK__AA_CLASS_SHARPEN;
    case STK__AA_SHEAR_X:
    case STK__AA_SHEAR_Y:
    case STK__AA_TRANSLATE_X:
    case STK__AA_TRANSLATE_Y:
    case STK__AA_TRANSLATE_X_REL:
    case STK__AA_TRANSLATE_Y_REL:
    case STK__AA_ROTATE:
      return STK__AA_CLASS_WARP;
    default:
      return STK__AA_CLASS_LUT;
  }
}

void stk__aa_table_free(stk__aa_table *t) {
  free(t->kinds);
  free(t->params);
  t->kinds = NULL;
  t->params = NULL;
}

static stk_status parse_interp(const stk__op *op, stk__aa_table *t, char *err, size_t err_size) {
  const char *interp = stk__arg_string(op, "interp_type");
  if (!interp[0] || strcmp(interp, "INTERP_LINEAR") == 0 || strcmp(interp, "linear") == 0) t->nearest = 0;
  else if (strcmp(interp, "INTERP_NN") == 0 || strcmp(interp, "nearest") == 0 || strcmp(interp, "nn") == 0)
    t->nearest = 1;
  else {
    stk__errorf(err, err_size, "argument 'interp_type' expects INTERP_LINEAR or INTERP_NN, got \"%s\"", interp);
    return STK_EINVAL;
  }
  t->has_fill = stk__arg_is_set(op, "fill_value");
  t->fill = (float)stk__arg_float(op, "fill_value");
  if (t->has_fill && !(t->fill >= 0 && t->fill <= 255)) {
    stk__errorf(err, err_size, "argument 'fill_value' must lie within 0..255 (uint8 images), got %g", t->fill);
    return STK_EINVAL;
  }
  return STK_OK;
}

stk_status stk__aa_table_parse(const stk__op *op, stk__aa_table *t, char *err, size_t err_size) {
  memset(t, 0, sizeof *t);
  if (!stk__arg(op, "kinds")) { /* experimental.equalize: one stage, one entry */
    t->num_stages = t->entries = 1;
    t->kinds = malloc(sizeof *t->kinds);
    t->params = malloc(sizeof *t->params);
    if (!t->kinds || !t->params) {
      stk__aa_table_free(t);
      return STK_ENOMEM;
    }
    t->kinds[0] = STK__AA_EQUALIZE;
    t->params[0] = 0;
    return STK_OK;
  }
  size_t nk = 0, np = 0;
  char *const *kinds = stk__arg_string_list(op, "kinds", &nk);
  const double *params = stk__arg_float_list(op, "params", &np);
  const int64_t stages = stk__arg_int(op, "num_stages");
  if (stages < 1 || stages > STK__AA_MAX_STAGES) {
    stk__errorf(err, err_size, "argument 'num_stages' must lie within 1..%d, got %lld", STK__AA_MAX_STAGES,
                (long long)stages);
    return STK_EINVAL;
  }
  if (nk == 0 || nk % (size_t)stages != 0 || nk / (size_t)stages > STK__AA_MAX_ENTRIES) {
    stk__errorf(err, err_size, "argument 'kinds' must hold num_stages (%lld) rows of 1..%d entries, got %zu values",
                (long long)stages, STK__AA_MAX_ENTRIES, nk);
    return STK_EINVAL;
  }
  if (np != nk) {
    stk__errorf(err, err_size, "argument 'params' must hold one value per entry of 'kinds' (%zu), got %zu", nk, np);
    return STK_EINVAL;
  }
  t->num_stages = (int)stages;
  t->entries = (int)(nk / (size_t)stages);
  t->kinds = malloc(nk * sizeof *t->kinds);
  t->params = malloc(nk * sizeof *t->params);
  if (!t->kinds || !t->params) {
    stk__aa_table_free(t);
    return STK_ENOMEM;
  }
  for (size_t k = 0; k < nk; k++) {
    t->kinds[k] = stk__aa_kind_parse(kinds[k]);
    t->params[k] = (float)params[k];
    if (t->kinds[k] < 0 || !isfinite(params[k])) {
      stk__errorf(err, err_size,
                  "argument 'kinds'/'params' entry %zu: %s \"%s\" (param %g); the kinds are identity, "
                  "invert, posterize, solarize, solarize_add, brightness, contrast, equalize, auto_contrast, color, "
                  "sharpness, shear_x, shear_y, translate_x, translate_y, translate_x_rel, translate_y_rel, rotate",
                  k, t->kinds[k] < 0 ? "unknown kind" : "non-finite parameter for", kinds[k], params[k]);
      stk__aa_table_free(t);
      return STK_EINVAL;
    }
  }
  stk_status s = parse_interp(op, t, err, err_size);
  if (s != STK_OK) stk__aa_table_free(t);
  return s;
}

/* The destination -> source matrix of a warp stage on a w x h image; shape_w/h for the _rel kinds. */
static void warp_matrix(stk__aa_stage *st, int w, int h, double shape_w, double shape_h) {
  double m[6] = {1, 0, 0, 0, 1, 0};
  const double p = st->param;
  switch (st->kind) {
    case STK__AA_SHEAR_X:
      m[1] = -p;
      break; /* forward x' = x + p y */
    case STK__AA_SHEAR_Y:
      m[3] = -p;
      break; /* forward y' = y + p x */
    case STK__AA_TRANSLATE_X:
      m[2] = -p;
      break;
    case STK__AA_TRANSLATE_Y:
      m[5] = -p;
      break;
    case STK__AA_TRANSLATE_X_REL:
      m[2] = -p * shape_w;
      break;
    case STK__AA_TRANSLATE_Y_REL:
      m[5] = -p * shape_h;
      break;
    case STK__AA_ROTATE: { /* source = centre + [cos -sin; sin cos] (destination - centre), as `rotate` */
      const double rad = fmod(p, 360.0) * (3.14159265358979323846 / 180.0), c = cos(rad), s = sin(rad);
      const double cx = w / 2.0, cy = h / 2.0;
      m[0] = c;
      m[1] = -s;
      m[2] = cx - (c * cx - s * cy);
      m[3] = s;
      m[4] = c;
      m[5] = cy - (s * cx + c * cy);
      break;
    }
    default:
      break;
  }
  for (int k = 0; k < 6; k++) st->m[k] = (float)m[k];
}

stk_status stk__aa_plan_sample(const stk__op *op, const stk__aa_table *t, const stk__tensor *image,
                               stk__tensor *const *inputs, stk__aa_plan *plan, char *err, size_t err_size) {
  const int hw = image->ndim == 2;
  if ((image->ndim != 3 && !hw) || image->dtype != STK_DTYPE_UINT8 ||
      (!hw && (image->shape[2] < 1 || image->shape[2] > STK__AA_MAX_CHANNELS)) ||
      (image->ndim == 3 && image->layout[0] && strcmp(image->layout, "HWC") != 0) || image->shape[0] > 65535 ||
      image->shape[1] > 65535) {
    stk__errorf(err, err_size, "expects uint8 HWC images of 1 to %d channels (or HW), got %d dims of %s",
                STK__AA_MAX_CHANNELS, image->ndim, stk_dtype_name(image->dtype));
    return STK_EINVAL;
  }
  memset(plan, 0, sizeof *plan);
  plan->height = (int)image->shape[0];
  plan->width = (int)image->shape[1];
  plan->channels = hw ? 1 : (int)image->shape[2];
  double entry[STK__AA_MAX_STAGES] = {0}, shape[3] = {0};
  size_t ne = 1, ns = 0;
  if (stk__arg(op, "entry")) stk__arg_sample_floats(op, inputs, "entry", entry, STK__AA_MAX_STAGES, &ne);
  if (stk__arg(op, "shape")) stk__arg_sample_floats(op, inputs, "shape", shape, 3, &ns);
  if (ne != 1 && ne != (size_t)t->num_stages) {
    stk__errorf(err, err_size, "argument 'entry' must give 1 or num_stages (%d) values for each sample, got %zu",
                t->num_stages, ne);
    return STK_EINVAL;
  }
  if (ns != 0 && (ns < 2 || !(shape[0] >= 0 && shape[1] >= 0))) {
    stk__errorf(err, err_size, "argument 'shape' must be [height, width(, channels)] of the sample");
    return STK_EINVAL;
  }
  const double shape_h = ns ? shape[0] : plan->height, shape_w = ns ? shape[1] : plan->width;
  for (int s = 0; s < t->num_stages; s++) {
    const double e = entry[ne == 1 ? 0 : s];
    if (!(e >= 0 && e < t->entries) || e != floor(e)) {
      stk__errorf(err, err_size, "argument 'entry' value %g (stage %d) is not an entry index 0..%d", e, s,
                  t->entries - 1);
      return STK_EINVAL;
    }
    const size_t at = (size_t)s * (size_t)t->entries + (size_t)e;
    stk__aa_stage st = {t->kinds[at], t->params[at], {0}};
    if (st.kind == STK__AA_IDENTITY) continue;
    if (stk__aa_kind_class(st.kind) == STK__AA_CLASS_WARP)
      warp_matrix(&st, plan->width, plan->height, shape_w, shape_h);
    plan->stages[plan->num_stages++] = st;
  }
  return STK_OK;
}

void stk__aa_warp_desc(const stk__aa_table *t, const stk__aa_stage *st, int w, int h, int c, stk__warp_desc *d) {
  memset(d, 0, sizeof *d);
  d->src_w = d->dst_w = w;
  d->src_h = d->dst_h = h;
  d->channels = c;
  d->dtype = d->out_dtype = STK_DTYPE_UINT8;
  d->nearest = t->nearest;
  d->has_fill = t->has_fill;
  d->fill = t->fill;
  d->frames = 1;
  memcpy(d->m, st->m, sizeof d->m);
}
