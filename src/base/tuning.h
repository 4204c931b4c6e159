/* src/base/tuning.h: every tuning knob of the library in one table (name, type, default, range,
 * what it does), read by one function. A knob is an environment variable; what a user should set
 * is an operator argument or a pipeline option instead (hw_decoder_load, affinity_mask), and the
 * table's rows say which argument wins over them. docs/tuning.md is the table in prose, checked
 * against it by tests/test_tuning.c (a row added here without its line there fails the test).
 * Not on a hot path: knobs are read when an object is created, except STOKER_TRACE_ALLOC (at
 * every allocation, which is off the hot path). Thread-safe: reads the environment only. */
#ifndef STOKER_BASE_TUNING_H
#define STOKER_BASE_TUNING_H

#include <stddef.h>

#include "base/common.h"
#include "stoker/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The knobs, in the table's order (tuning.c). */
typedef enum stk__knob {
  STK__KNOB_AFFINITY_MASK = 0,
  STK__KNOB_HW_DECODER_LOAD,
  STK__KNOB_ROUTER_BATCHES,
  STK__KNOB_ROUTER_TRIAL_BATCHES,
  STK__KNOB_ROUTER_CACHE,
  STK__KNOB_FUSED_SPLIT,
  STK__KNOB_TRACE_ALLOC,
  STK__KNOB_MIXED_TRACE,
  STK__KNOB_NVDEC_TRACE,
  STK__KNOB_MIXED_ALLOC,
  STK__KNOB_MIXED_PIN_RESERVE,
  STK__KNOB_ENGINE_CALLS,
  STK__KNOB_GPU_SERIAL_WEIGHTS,
  STK__KNOB_ARENA_RING,
  STK__KNOB_NVDEC_DISPLAY_DELAY,
  STK__KNOB_NVDEC_OUTPUT_SURFACES,
  STK__KNOB_NVDEC_SKIP_NONREF,
  STK__KNOB_FUSED_BLOCKS,
  STK__KNOB_DENSE_IN_PLACE,
  STK__KNOB_PINNED_OUTPUTS,
  STK__KNOB_PINNED_SHRINK,
  STK__KNOB_PACKED_UPLOAD,
  STK__KNOB_SHARED_UPLOAD,
  STK__KNOB_NVDEC_EARLY,
  STK__KNOB_HEVC_CRA_START,
  STK__KNOB_TORCH_UPLOAD,
  STK__KNOB_COUNT
} stk__knob;

typedef enum stk__knob_type {
  STK__KNOB_BOOL,  /* 0 or 1 */
  STK__KNOB_INT,   /* a whole number from min to max */
  STK__KNOB_FLOAT, /* a finite number from min to max */
  STK__KNOB_TEXT   /* any non-empty text, checked by its reader */
} stk__knob_type;

/* Why a knob exists; docs/tuning.md groups the rows by it. */
typedef enum stk__knob_kind {
  STK__KNOB_USER,       /* a setting a user may want (where an argument exists, the argument wins) */
  STK__KNOB_DIAGNOSTIC, /* prints where time or memory goes; changes no result */
  STK__KNOB_AB,         /* an A/B switch whose measurement is still open */
  STK__KNOB_KEPT        /* a finished A/B whose other path the tests still compare against */
} stk__knob_kind;

typedef struct stk__knob_row {
  const char *name; /* the environment variable */
  stk__knob_type type;
  stk__knob_kind kind;
  double default_value; /* BOOL/INT/FLOAT: the value when unset (TEXT: unused) */
  double min, max;      /* INT/FLOAT: the accepted range, inclusive */
  const char *default_text; /* how docs/tuning.md writes the default ("0.8", "auto", "unset") */
  const char *read_by;      /* the file that reads it */
  const char *doc;          /* what it does, one paragraph */
} stk__knob_row;

/* The row of a knob (NULL for an id outside the table). Borrowed, static. */
STK_INTERNAL const stk__knob_row *stk__tuning_row(stk__knob knob);

/* Variables that were knobs and are gone (a finished A/B, or replaced by another row). A set one
 * fails stk__tuning_check with `why`, so a stale setting is never silently ignored. */
typedef struct stk__knob_retired {
  const char *name;
  const char *why;
} stk__knob_retired;
STK_INTERNAL const stk__knob_retired *stk__tuning_retired(size_t *count);

/* The one reader. *is_set = 1 when the variable is set (and valid), 0 when unset (then *value is the
 * row's default and *text NULL). BOOL/INT/FLOAT: *value; TEXT: *text (borrowed from the
 * environment). A set value that is not of the row's type and range: STK_EINVAL with err naming the
 * variable, what it holds and what is accepted ("STOKER_ARENA_RING=9: not a whole number from 1 to
 * 4 (docs/tuning.md)"); outputs then as if unset. value, text and is_set may be NULL. */
STK_INTERNAL stk_status stk__tuning_read(stk__knob knob, double *value, const char **text, int *is_set, char *err,
                                         size_t err_size);

/* Shorthands for readers with no error path of their own: the value, or the default when unset or
 * bad (a bad value has already failed stk__tuning_check at pipeline build). */
STK_INTERNAL long stk__tuning_int(stk__knob knob);
STK_INTERNAL double stk__tuning_float(stk__knob knob);
STK_INTERNAL const char *stk__tuning_text(stk__knob knob); /* NULL when unset */

/* Checks every knob that is set, and that no retired variable is: STK_EINVAL naming the first bad
 * one. Called when a pipeline is built, so a typo fails early and loudly. */
STK_INTERNAL stk_status stk__tuning_check(char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
