/* tests/fuzz/fuzz_route_kept.c: the parser of the router's kept-decision files
 * (src/ops/decode/jpeg_route_cache.c; any process of the machine may write the directory) on
 * arbitrary bytes: the input up to its first 0x01 byte is the file's line, the rest the key the
 * reader looks for (a fixed one when there is no 0x01). Never a crash or a sanitizer report; an
 * accepted line has every load in [0, 1], and its decision written back as the router writes it
 * (to hundredths) parses again to the same loads, rounded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "ops/decode/jpeg_route_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  const char *key = "gpu0 crop1 ch3 threads16 cpus16 px2^17";
  char *split = memchr(text, 0x01, size);
  if (split) *split = '\0', key = split + 1;
  stk__route_kept d = {-1.0, -1.0, -1.0};
  if (stk__route_kept_parse(text, key, &d)) {
    if (!(d.hw >= 0.0 && d.hw <= 1.0 && d.cuda >= 0.0 && d.cuda <= 1.0 && d.trial >= 0.0 && d.trial <= 1.0))
      __builtin_trap();
    stk__route_kept_round(&d);
    if (!strchr(key, '\n')) {
      char line[4200];
      snprintf(line, sizeof line, "%.2f %.2f %.2f %s\n", d.hw, d.cuda, d.trial, key);
      stk__route_kept again = {-1.0, -1.0, -1.0};
      if (!stk__route_kept_parse(line, key, &again) || again.hw != d.hw || again.cuda != d.cuda ||
          again.trial != d.trial)
        __builtin_trap();
    }
  }
  free(text);
  return 0;
}
