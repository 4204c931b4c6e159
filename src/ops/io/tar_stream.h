/* src/ops/io/tar_stream.h: reads the members of a tar archive one after the other from a byte
 * source (byte_source.h), with no index and no seeking: POSIX ustar, GNU tar (long names in 'L'
 * records, base-256 sizes) and pax ('x' records: path and size; 'g' global records are skipped).
 * Hot path: next/read_data run per member on the webdataset reader's background thread.
 *
 * Memory is bounded: one 512-byte block plus the current long name (at most
 * STK__TAR_MAX_NAME bytes) and pax record (at most STK__TAR_MAX_PAX bytes). Errors name the shard
 * and the byte offset of the bad header ("shard x.tar: header at byte 1536: bad checksum").
 *
 * Thread contract: one reader per thread at a time. */
#ifndef STOKER_OPS_CPU_TAR_STREAM_H
#define STOKER_OPS_CPU_TAR_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "ops/io/byte_source.h"

#define STK__TAR_MAX_NAME 65536
#define STK__TAR_MAX_PAX  (1u << 20)

typedef struct stk__tar_reader stk__tar_reader;

typedef struct stk__tar_member {
  const char *name;       /* borrowed: valid until the next stk__tar_next */
  uint64_t size;          /* bytes of data */
  char type;              /* '0' regular file (also '\0' and '7'); other types are skipped by next */
  uint64_t header_offset; /* offset of the member's first header block (long-name records included) */
  uint64_t data_offset;   /* offset of its data */
} stk__tar_member;

/* What one 512-byte header block says (the pure parser the fuzz target drives). */
typedef struct stk__tar_header {
  char name[257]; /* prefix "/" name for ustar, else name (NUL-terminated) */
  uint64_t size;
  char type;
  int is_end; /* an all-zero block */
} stk__tar_header;

/* Parses one header block; STK_EPARSE with a reason in err (no shard/offset: the caller adds them). */
STK_INTERNAL stk_status stk__tar_parse_header(const uint8_t block[512], stk__tar_header *out, char *err,
                                              size_t err_size);
/* Finds "path" and "size" in a pax extended header's records ("%d key=value\n"...). *path is a
 * malloc'd copy or NULL when absent; *size is set when a size record exists (*has_size = 1). */
STK_INTERNAL stk_status stk__tar_parse_pax(const char *records, size_t length, char **path, uint64_t *size,
                                           int *has_size, char *err, size_t err_size);

/* A reader over `source` (borrowed: must outlive the reader; it is not closed). `shard` names the
 * shard in messages (copied). The stream may start at any member header (e.g. an index offset). */
STK_INTERNAL stk_status stk__tar_reader_new(stk__byte_source *source, const char *shard, stk__tar_reader **out);
STK_INTERNAL void stk__tar_reader_free(stk__tar_reader *reader);

/* The next regular-file member (directories, links and device entries are passed over). Returns
 * STK_OK with *member set, STK_EOF_EPOCH at the end of the archive (a zero block), or an error
 * naming the shard and offset. The previous member's unread data is skipped first. A stream that
 * ends on a block boundary without the end blocks is an error (STK_EIO, "truncated"): a shard cut
 * between members must not pass for a shorter, complete one. */
STK_INTERNAL stk_status stk__tar_next(stk__tar_reader *reader, stk__tar_member *member, char *err, size_t err_size);
/* Reads the current member's data (exactly member->size bytes) into buf and skips its padding. */
STK_INTERNAL stk_status stk__tar_read_data(stk__tar_reader *reader, void *buf, char *err, size_t err_size);
/* Reads the next `size` bytes of the current member's data (at most what is left of it) into
 * buf; after its last byte the padding is skipped. A member read in parts never needs a buffer
 * of the size its header claims before those bytes have arrived. */
STK_INTERNAL stk_status stk__tar_read_part(stk__tar_reader *reader, void *buf, size_t size, char *err, size_t err_size);

#endif
