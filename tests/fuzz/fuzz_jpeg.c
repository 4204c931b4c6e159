/* tests/fuzz/fuzz_jpeg.c: the JPEG header parser and the CPU decoder entry on arbitrary bytes:
 * never a crash, a hang or a sanitizer report; either an image of the size the header promised
 * or an error with a message; a file the checking decode accepted decodes again, through the set of
 * files already checked (fast Huffman path, jpeg_verified.h), to the same bytes. Decodes are bounded
 * to small headers so each input stays fast. */
#include <stdint.h>
#include <string.h>

#include "ops/decode/jpeg.h"
#include "ops/decode/jpeg_verified.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__jpeg_info info;
  char err[512] = "";
  if (stk__jpeg_peek(data, size, &info, err, sizeof err) != STK_OK) {
    if (!err[0]) __builtin_trap(); /* every refusal says why */
    return 0;
  }
  if ((int64_t)info.width * info.height > 1 << 20) return 0; /* the peek is what is fuzzed there */
  stk__tensor out = {0};
  stk__window crop = {0, 0, info.width / 2 + 1, info.height / 2 + 1};
  for (int pass = 0; pass < 2; pass++) {
    err[0] = '\0';
    stk_status st =
        stk__jpeg_decode(data, size, STK__COLOR_RGB, pass ? &crop : NULL, 0, 0, &out, NULL, err, sizeof err);
    if (st != STK_OK && !err[0]) __builtin_trap();
  }
  stk__jpeg_verified *set = stk__jpeg_verified_new();
  stk__tensor checked = {0};
  if (set && stk__jpeg_decode_counted(data, size, STK__COLOR_RGB, &crop, 0, 0, NULL, set, &checked, NULL, err,
                                      sizeof err) == STK_OK) {
    if (stk__jpeg_decode_counted(data, size, STK__COLOR_RGB, &crop, 0, 0, NULL, set, &out, NULL, err, sizeof err) !=
            STK_OK ||
        out.nbytes != checked.nbytes || memcmp(out.data, checked.data, out.nbytes) != 0)
      __builtin_trap(); /* known bytes must decode to the checked decode's pixels */
  }
  stk__tensor_free(&checked);
  stk__jpeg_verified_free(set);
  stk__tensor_free(&out);
  return 0;
}
