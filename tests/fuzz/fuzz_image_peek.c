/* tests/fuzz/fuzz_image_peek.c: format detection and the header read of every format
 * (src/ops/decode/image_format.c; PNG's IHDR/tRNS scan is hand-written, png.c) on arbitrary
 * bytes, then the whole decode through stk__image_decode for small images (every output_type):
 * never a crash, a hang or a sanitizer report; an accepted header's sides and channels are in
 * range; every refusal has a message. Formats whose library is missing are refused with a message
 * too. */
#include <stdint.h>
#include <string.h>

#include "ops/decode/image_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__image_info info;
  char err[512] = "";
  (void)stk__image_format_name(stk__image_format_detect(data, size));
  if (stk__image_peek(data, size, &info, err, sizeof err) != STK_OK) {
    if (!err[0]) __builtin_trap();
    return 0;
  }
  if (info.width < 1 || info.height < 1 || info.width > STK__IMAGE_MAX_SIDE || info.height > STK__IMAGE_MAX_SIDE ||
      info.channels < 1 || info.channels > 4)
    __builtin_trap();
  if ((int64_t)info.width * info.height > 1 << 18) return 0;
  stk__tensor out = {0};
  static const stk__image_spec specs[3] = {{STK__COLOR_RGB, 0, STK_DTYPE_UINT8},
                                           {STK__COLOR_GRAY, 0, STK_DTYPE_FLOAT32},
                                           {STK__COLOR_RGB, 1, STK_DTYPE_UINT16}};
  for (int k = 0; k < 3; k++) {
    err[0] = '\0';
    const stk__window crop = {0, 0, 1, 1};
    if (stk__image_decode(data, size, &specs[k], k == 1 ? &crop : NULL, 0, 0, NULL, NULL, &out, err, sizeof err) !=
            STK_OK &&
        !err[0])
      __builtin_trap();
  }
  stk__tensor_free(&out);
  return 0;
}
