/* tests/fuzz/fuzz_npy.c: libFuzzer target for the .npy header parser (npy.c). Built only with
 * clang: `make fuzz` (see the Makefile). */
#include <stddef.h>
#include <stdint.h>

#include "ops/io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__npy_header h;
  char err[256];
  (void)stk__npy_header_length(data, size);
  if (stk__npy_parse(data, size, &h, err, sizeof err) == STK_OK && h.ndim > STK_MAX_DIMS) __builtin_trap();
  return 0;
}
