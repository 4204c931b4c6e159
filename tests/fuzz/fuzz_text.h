/* tests/fuzz/fuzz_text.h: the fuzz input as a NUL-terminated string, for the targets whose parser
 * reads text (fuzz_checkpoint, fuzz_pipeline_text, fuzz_route_kept). The caller frees it; NULL when
 * memory runs out. */
#ifndef STOKER_FUZZ_TEXT_H
#define STOKER_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return NULL;
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

#endif
