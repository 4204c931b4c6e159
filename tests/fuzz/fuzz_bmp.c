/* tests/fuzz/fuzz_bmp.c: the hand-written BMP parser (src/ops/decode/bmp.c) on arbitrary bytes:
 * never a crash, a hang or a sanitizer report; a header it accepts decodes into exactly the buffer
 * its peek sized (ASan catches any write past it), or fails with a message. */
#include <stdint.h>
#include <stdlib.h>

#include "ops/decode/image_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__image_info info = {0};
  char err[512] = "";
  if (stk__bmp_peek(data, size, &info, err, sizeof err) != STK_OK) {
    if (!err[0]) __builtin_trap(); /* every refusal says why */
    return 0;
  }
  info.format = STK__IMAGE_BMP;
  const size_t bytes = stk__image_raw_bytes(&info);
  if (bytes > (1u << 24)) return 0; /* the pixels must be in the input: large sizes were refused */
  uint8_t *pixels = malloc(bytes ? bytes : 1);
  if (!pixels) return 0;
  err[0] = '\0';
  if (stk__bmp_decode(data, size, &info, pixels, err, sizeof err) != STK_OK && !err[0]) __builtin_trap();
  free(pixels);
  return 0;
}
