/* src/ops/augment/transforms/transforms_schemas.c: the schemas of DALI's 2-D affine transform
 * generators (fn.transforms.*; implementations in transforms.c): each takes an optional input
 * transform (combine: 1 to 16) and gives a float32 [2, 3] matrix per sample. Build time only. */
#include "ops/op_impls.h"

#define REVERSE_ORDER                                                                     \
  {                                                                                       \
    "reverse_order", STK_ARG_BOOL, "False", 0, 0,                                         \
        "compose as (input transform) (this one) instead of (this one) (input transform)" \
  }
#define CENTER \
  { "center", STK_ARG_FLOAT_LIST, "[]", 0, 1, "[x, y] the transform is about (default: origin); per sample" }

static const stk__arg_schema rotation_args[] = {
    {"angle", STK_ARG_FLOAT, NULL, 1, 1, "degrees ([cos -sin; sin cos]); per sample"}, CENTER, REVERSE_ORDER};
static const stk__arg_schema scale_args[] = {
    {"scale", STK_ARG_FLOAT_LIST, NULL, 1, 1, "[sx, sy] (one value: both); per sample"}, CENTER, REVERSE_ORDER};
static const stk__arg_schema translation_args[] = {{"offset", STK_ARG_FLOAT_LIST, NULL, 1, 1, "[tx, ty]; per sample"},
                                                   REVERSE_ORDER};
static const stk__arg_schema shear_args[] = {
    {"shear", STK_ARG_FLOAT_LIST, "[]", 0, 1, "[sx, sy]: x' = x + sx y, y' = sy x + y; per sample"},
    {"angles", STK_ARG_FLOAT_LIST, "[]", 0, 1, "shear angles in degrees (shear = tan(angle)); per sample"},
    CENTER,
    REVERSE_ORDER};
static const stk__arg_schema crop_args[] = {
    {"from_start", STK_ARG_FLOAT_LIST, "[0.0, 0.0]", 0, 1, "source box start [x, y]; per sample"},
    {"from_end", STK_ARG_FLOAT_LIST, "[1.0, 1.0]", 0, 1, "source box end [x, y]; per sample"},
    {"to_start", STK_ARG_FLOAT_LIST, "[0.0, 0.0]", 0, 1, "destination box start [x, y]; per sample"},
    {"to_end", STK_ARG_FLOAT_LIST, "[1.0, 1.0]", 0, 1, "destination box end [x, y]; per sample"},
    REVERSE_ORDER};
static const stk__arg_schema combine_args[] = {REVERSE_ORDER};

#define TRANSFORM_SCHEMA(sym, op_name, text, args_table, min_in, max_in)                   \
  const stk__op_schema sym = {.name = op_name,                                             \
                              .doc = text,                                                 \
                              .min_inputs = min_in,                                        \
                              .max_inputs = max_in,                                        \
                              .num_outputs = 1,                                            \
                              .devices = STK_OPDEV_CPU,                                    \
                              .args = args_table,                                          \
                              .num_args = (int)(sizeof args_table / sizeof args_table[0]), \
                              .array_outputs = 1u << 0}

TRANSFORM_SCHEMA(stk__op_transforms_rotation, "transforms.rotation",
                 "A 2x3 rotation matrix per sample (degrees, about center), composed with an input transform.",
                 rotation_args, 0, 1);
TRANSFORM_SCHEMA(stk__op_transforms_scale, "transforms.scale",
                 "A 2x3 scaling matrix per sample (about center), composed with an input transform.", scale_args, 0, 1);
TRANSFORM_SCHEMA(stk__op_transforms_translation, "transforms.translation",
                 "A 2x3 translation matrix per sample, composed with an input transform.", translation_args, 0, 1);
TRANSFORM_SCHEMA(stk__op_transforms_shear, "transforms.shear",
                 "A 2x3 shear matrix per sample (shear factors or angles, about center), composed with an input "
                 "transform.",
                 shear_args, 0, 1);
TRANSFORM_SCHEMA(stk__op_transforms_crop, "transforms.crop",
                 "A 2x3 matrix per sample mapping the box from_start..from_end onto to_start..to_end.", crop_args, 0,
                 1);
TRANSFORM_SCHEMA(stk__op_transforms_combine, "transforms.combine",
                 "Composes the input transforms per sample, the first applied first.", combine_args, 1, 16);
