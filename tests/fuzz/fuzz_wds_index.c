/* tests/fuzz/fuzz_wds_index.c: libFuzzer target for the webdataset index parser (wds_index.c): the
 * input is a whole index file ("v1.2 N" then N sample lines), read through a memory stream whose
 * size is the input's, as a file of that size would be. Built only with clang: `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ops/io/wds_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0; /* fmemopen refuses an empty buffer */
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) return 0;
  stk__wds_index ix;
  char err[512];
  if (stk__wds_index_parse(f, size, "fuzz.idx", &ix, err, sizeof err) == STK_OK) {
    for (int64_t i = 1; i < ix.num_samples; i++)
      if (ix.sample_start[i] <= ix.sample_start[i - 1]) __builtin_trap(); /* promised: in shard order */
    stk__wds_index_free(&ix);
  }
  fclose(f);
  return 0;
}
