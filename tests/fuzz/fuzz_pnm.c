/* tests/fuzz/fuzz_pnm.c: the hand-written Netpbm parser (src/ops/decode/pnm.c, P1..P6) on
 * arbitrary bytes: never a crash, a hang or a sanitizer report; an accepted header decodes into
 * exactly the buffer its peek sized, or fails with a message. Large ASCII images are capped so each
 * input stays fast. */
#include <stdint.h>
#include <stdlib.h>

#include "ops/decode/image_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__image_info info = {0};
  char err[512] = "";
  if (stk__pnm_peek(data, size, &info, err, sizeof err) != STK_OK) {
    if (!err[0]) __builtin_trap();
    return 0;
  }
  info.format = STK__IMAGE_PNM;
  const size_t bytes = stk__image_raw_bytes(&info);
  if (bytes > (1u << 22)) return 0;
  uint8_t *pixels = malloc(bytes ? bytes : 1);
  if (!pixels) return 0;
  err[0] = '\0';
  if (stk__pnm_decode(data, size, &info, pixels, err, sizeof err) != STK_OK && !err[0]) __builtin_trap();
  free(pixels);
  return 0;
}
