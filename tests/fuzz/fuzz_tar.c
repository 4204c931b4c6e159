/* tests/fuzz/fuzz_tar.c: libFuzzer target for the streaming tar reader (tar_stream.c): the input
 * is a whole archive read through a memory byte source, member by member (names, sizes, long-name
 * and pax records, data read in parts as the webdataset lanes do), and the same bytes given to the
 * pax record parser. Seeds (tests/fuzz/corpus/tar/) cover ustar with a prefix, GNU long names,
 * pax paths and sizes, and base-256 sizes. Built only with clang: `make fuzz` (see the Makefile). */
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
  char *path = NULL;
  uint64_t pax_size = 0;
  int has_size = 0;
  if (stk__tar_parse_pax((const char *)data, size, &path, &pax_size, &has_size, err, sizeof err) == STK_OK &&
      has_size && pax_size > ((uint64_t)1 << 62))
    __builtin_trap(); /* promised: sizes past 2^62 are refused */
  free(path);
  stk__tar_member m;
  for (int i = 0; i < 10000 && stk__tar_next(tr, &m, err, sizeof err) == STK_OK; i++) {
    if (m.size > size) break; /* cannot be there: read_data would report truncation */
    uint8_t *buf = malloc(m.size ? m.size : 1);
    int ok = buf != NULL;
    for (uint64_t done = 0; ok && done < m.size;) { /* in parts of up to 1000 bytes */
      size_t part = m.size - done < 1000 ? (size_t)(m.size - done) : 1000;
      ok = stk__tar_read_part(tr, buf + done, part, err, sizeof err) == STK_OK;
      done += part;
    }
    free(buf);
    if (!ok) break;
  }
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);
  return 0;
}
