/* tests/fuzz/fuzz_pipeline_text.c: the pipeline text parser (stk_pipeline_load_text, through the
 * public API, with every registered operator) on arbitrary text: never a crash or sanitizer
 * report, and a refusal always leaves a message. The pipeline is never built (no files read). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "stoker/stoker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  stk_pipeline_options options;
  stk_pipeline_options_default(&options);
  options.batch_size = 2;
  options.num_threads = 1;
  stk_pipeline *pipe = NULL;
  if (stk_pipeline_new(&options, &pipe) == STK_OK) {
    if (stk_pipeline_load_text(pipe, text, "/nonexistent-fuzz-data") != STK_OK && !stk_pipeline_last_error(pipe)[0])
      __builtin_trap();
    stk_pipeline_destroy(pipe);
  }
  free(text);
  return 0;
}
