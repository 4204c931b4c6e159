/* src/ops/augment/resize/resize_params.h: the `resize` operator's parameters, parsed once from its
 * arguments (stk__resize_op_params_get) for the CPU implementation (src/ops/augment/resize/resize.c) and the
 * GPU one (src/ops/augment/resize/resize_gpu.cu) alike, and DALI's output-size rules (stk__resize_plan) both
 * apply per sample. C-callable from .cu files. Parse: at init; plan: per sample. */
#ifndef STOKER_OPS_COMMON_RESIZE_PARAMS_H
#define STOKER_OPS_COMMON_RESIZE_PARAMS_H

#include <stddef.h>

#include "core/op.h"
#include "ops/augment/resize/resample.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum stk__resize_mode {
  STK__RESIZE_DEFAULT = 0,
  STK__RESIZE_STRETCH,
  STK__RESIZE_NOT_LARGER,
  STK__RESIZE_NOT_SMALLER
} stk__resize_mode;

/* Bounds on what an operator that produces images of a configured size (resize,
 * random_resized_crop) may be asked for: 32768 pixels per side and 2^25 pixels per image (8K UHD,
 * 7680 x 4320, fits; 100 MB of u8 RGB). Checked at build where the arguments decide the size,
 * per sample (stk__resize_plan) where the image's aspect ratio does. docs/operators-io.md. */
#define STK__OUTPUT_MAX_SIDE   32768
#define STK__OUTPUT_MAX_PIXELS ((double)(1 << 25))

/* STK_EINVAL with a message naming `what` (e.g. "arguments 'resize_x' and 'resize_y'") when an
 * output of width x height (0 = not known at build) is beyond the bounds above. */
STK_INTERNAL stk_status stk__output_size_check(const char *what, double width, double height, char *err,
                                               size_t err_size);

/* "default", "stretch", "not_larger", "not_smaller" -> enum. */
STK_INTERNAL stk_status stk__resize_mode_parse(const char *text, stk__resize_mode *out);

/* The output-size rules of DALI's resize: all sizes in pixels, 0 = not given. */
typedef struct stk__resize_params {
  double resize_x, resize_y;     /* explicit extents (size=[h, w] maps here) */
  double resize_shorter;         /* shorter side -> this (mode not_smaller, both extents) */
  double resize_longer;          /* longer side -> this (mode not_larger, both extents) */
  double max_size_x, max_size_y; /* caps on the output extents (0 = none) */
  stk__resize_mode mode;
  int subpixel_scale; /* 1 (DALI's default): keep the exact fractional scale by
                                   * adjusting the source interval to the rounded output size */
} stk__resize_params;

/* Output size and source interval for one image of in_w x in_h:
 * roi[0..3] = x0, y0, x1, y1 in source pixels (may be fractional with subpixel_scale).
 * STK_EINVAL when the result would be empty or beyond STK__OUTPUT_MAX_SIDE / _PIXELS. */
STK_INTERNAL stk_status stk__resize_plan(const stk__resize_params *params, int in_w, int in_h, int *out_w, int *out_h,
                                         double roi[4]);

/* 1 with that size in *out_w x *out_h when these rules give every image the same output size,
 * whatever its own (resize_x and resize_y both given and stretched to: DALI's default mode, with
 * neither resize_shorter nor resize_longer); 0 otherwise. Lets a GPU operator size its output
 * storage exactly, with no room for larger batches that cannot come. */
STK_INTERNAL int stk__resize_fixed_size(const stk__resize_params *params, int *out_w, int *out_h);

/* Everything the `resize` operator reads from its arguments. */
typedef struct stk__resize_op_params {
  stk__resize_params size; /* output-size rules */
  stk__interp interp;
  int antialias;
} stk__resize_op_params;

/* Reads and checks the arguments of a `resize` operator; STK_EINVAL with a message naming the
 * argument otherwise (no operator name: the engine adds it). */
STK_INTERNAL stk_status stk__resize_op_params_get(const stk__op *op, stk__resize_op_params *out, char *err,
                                                  size_t err_size);

/* The message for a bad interp_type argument (shared with random_resized_crop). */
STK_INTERNAL stk_status stk__interp_arg(const stk__op *op, stk__interp *out, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
