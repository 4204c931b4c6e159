/* src/base/text_file.h: the one bounded way stoker reads text files by path -- the line reader
 * behind every list (readers.file's file_list, readers.numpy's and readers.video's file_list) and
 * the whole-file read behind pipeline texts and checkpoints (stk_read_file, public in
 * stoker/pipeline.h, for the CLI and Python). Both open through stk__open_regular (a FIFO, a device
 * such as /dev/zero or a directory is refused at once) and check their bounds WHILE reading: a
 * line longer than its limit is refused once that many bytes have been read without a newline,
 * never after reading it whole, and the file once more bytes than its limit have been read, so a
 * hostile or mistaken file costs at most the limit in memory and time. A NUL byte is refused too
 * (not a text file). Errors name the file, the line number and the limit.
 *
 * Where it sits: the ground floor (base/), beside common.h. Not a hot path: lists and texts are
 * read once at build. Thread contract: a stk__line_reader belongs to one thread at a time. */
#ifndef STOKER_BASE_TEXT_FILE_H
#define STOKER_BASE_TEXT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "stoker/status.h"

/* Bounds of the lists the readers read: a line (a path of PATH_MAX bytes and a label fit many times
 * over) and the whole list (tens of millions of "path label" lines). */
#define STK__LIST_MAX_LINE ((size_t)65536)
#define STK__LIST_MAX_BYTES ((size_t)1 << 30)
/* Bound of a pipeline text or a checkpoint read whole (both are normally a few KB). */
#define STK__TEXT_MAX_BYTES ((size_t)16 << 20)

typedef struct stk__line_reader {
  int fd;
  const char *path, *what; /* borrowed: for messages ("file_list /x/list.txt line 3: ...") */
  size_t max_line, max_bytes;
  char *buf; /* buf[start, end) read but not yet returned; cap bytes */
  size_t cap, start, end;
  uint64_t bytes_read;
  int64_t line_no; /* the last line returned, counted from 1 */
  int at_eof;
} stk__line_reader;

/* Opens path (what: its role in messages, e.g. "file_list"). STK_ENOENT when it does not exist,
 * STK_EINVAL when it is not a regular file, STK_EIO on another failed open, STK_ENOMEM; err names
 * the path. On failure r needs no close. */
STK_INTERNAL stk_status stk__line_reader_open(stk__line_reader *r, const char *path, const char *what,
                                              size_t max_line, size_t max_bytes, char *err, size_t err_size);
/* The next line: STK_OK with *line (writable, '\0'-terminated, without its '\n' and a '\r' before
 * it; valid until the next call) and *len, or STK_OK with *line = NULL at the end of the file.
 * STK_EPARSE for a line over max_line bytes or with a NUL byte, STK_ERANGE for a file over
 * max_bytes, STK_EIO for a read error; err names the file, the line number and the limit. */
STK_INTERNAL stk_status stk__line_reader_next(stk__line_reader *r, char **line, size_t *len, char *err,
                                              size_t err_size);
STK_INTERNAL void stk__line_reader_close(stk__line_reader *r);

/* The directory relative paths in a list are taken from: base_root when it is given (non-empty),
 * else the list's own directory ("." for a bare name). Written to out (size bytes). */
STK_INTERNAL void stk__list_base_dir(const char *list, const char *base_root, char *out, size_t size);

#endif
