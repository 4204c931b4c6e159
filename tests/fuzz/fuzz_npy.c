/* tests/fuzz/fuzz_npy.c: libFuzzer target for the .npy header parser (npy.c): format versions 1.0,
 * 2.0 and 3.0, headers past 4 KiB, a 'shape' hidden in another value, shapes whose bytes pass
 * 2^63 (seeds in tests/fuzz/corpus/npy/). Checks what readers.numpy relies on after a successful
 * parse: at most STK_MAX_DIMS non-negative dimensions, the data starting right after the header,
 * and offset + product(shape) * element size not wrapping 2^63. Built only with clang: `make
 * fuzz` (see the Makefile). */
#include <stddef.h>
#include <stdint.h>

#include "ops/io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__npy_header h;
  char err[256];
  size_t length = stk__npy_header_length(data, size);
  if (stk__npy_parse(data, size, &h, err, sizeof err) != STK_OK) return 0;
  if (h.ndim < 0 || h.ndim > STK_MAX_DIMS || h.data_offset != length || length > size) __builtin_trap();
  uint64_t count = 1;
  for (int d = 0; d < h.ndim; d++) {
    if (h.shape[d] < 0) __builtin_trap();
    if (h.shape[d] && count > (uint64_t)INT64_MAX / (uint64_t)h.shape[d]) __builtin_trap();
    count *= (uint64_t)h.shape[d];
  }
  if (h.data_bytes != count * stk_dtype_size(h.dtype) || h.data_bytes > (uint64_t)INT64_MAX - h.data_offset)
    __builtin_trap();
  return 0;
}
