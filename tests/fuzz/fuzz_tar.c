/* tests/fuzz/fuzz_tar.c: libFuzzer target for the streaming tar reader (tar_stream.c): the input
 * is a whole archive read through a memory byte source, member by member (names, sizes, long-name
 * and pax records, data). Built only with clang: `make fuzz` (see the Makefile). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/io/tar_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__byte_source *src;
  stk__tar_reader *tr;
  if (stk__byte_source_memory(data, size, "fuzz.tar", &src) != STK_OK) return 0;
  if (stk__tar_reader_new(src, NULL, &tr) != STK_OK) {
    stk__byte_source_close(src);
    return 0;
  }
  char err[512];
  stk__tar_member m;
  for (int i = 0; i < 10000 && stk__tar_next(tr, &m, err, sizeof err) == STK_OK; i++) {
    if (m.size > size) break; /* cannot be there: read_data would report truncation */
    void *buf = malloc(m.size ? m.size : 1);
    int ok = buf && stk__tar_read_data(tr, buf, err, sizeof err) == STK_OK;
    free(buf);
    if (!ok) break;
  }
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);
  return 0;
}
