/* src/core/engine.c: the ground floor of the pipeline object: its options' defaults and its
 * last-error string. Every stage (pipeline.c, graph.c, src/core/exec/, pipeline_text.c) and the
 * registry may call these; they call nothing in the engine, so no call circle runs through here.
 * Not on a hot path. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/engine.h"

void stk_pipeline_options_default(stk_pipeline_options *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->batch_size = 256;
  options->num_threads = 4;
  options->device_id = -1;
  options->seed = 42;
  options->prefetch_queue_depth = 0; /* decided at build (stk_pipeline_build) */
  options->pin_threads = 1;
  options->affinity_mask = NULL;
  options->verbose = 0;
  options->stream_priority = STK_STREAM_PRIORITY_HIGH;
  options->host_memory_budget = 0; /* derived at start (slots.c: stk__exec_host_budget_init) */
}

void stk__pipe_error(stk_pipeline *pipe, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pipe->last_error, sizeof pipe->last_error, fmt, ap);
  va_end(ap);
}

void stk__pipe_warn(stk_pipeline *pipe, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = strlen(pipe->last_error);
  snprintf(pipe->last_error + len, sizeof pipe->last_error - len, "%s%s", len ? "; " : "", msg);
  if (pipe->options.verbose) fprintf(stderr, "stoker: warning: %s\n", msg);
}
