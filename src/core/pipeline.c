/* src/core/pipeline.c: the public stk_pipeline API (options, graph construction, build, next,
 * reset, stats). Not on a hot path itself; the executor (executor.c) does the per-sample work. */
#include <stdlib.h>
#include <string.h>

#include "core/op.h"

void stk_pipeline_options_default(stk_pipeline_options *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->batch_size = 256;
  options->num_threads = 4;
  options->device_id = -1;
  options->seed = 42;
  options->prefetch_queue_depth = 2;
  options->pin_threads = 1;
  options->affinity_mask = NULL;
  options->verbose = 0;
}
