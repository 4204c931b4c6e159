/* src/base/text_file.c: the bounded line reader and whole-text read of base/text_file.h (and
 * stk_read_file of stoker/pipeline.h). Every bound is checked as bytes arrive. Not a hot
 * path: lists and texts are read once at build. */
#include "base/text_file.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stoker/pipeline.h"

#define READ_CHUNK 65536

static stk_status open_status(int e) {
  if (stk__open_missing(e)) return STK_ENOENT;
  return e == EINVAL || e == EISDIR ? STK_EINVAL : STK_EIO;
}

stk_status stk__line_reader_open(stk__line_reader *r, const char *path, const char *what, size_t max_line,
                                 size_t max_bytes, char *err, size_t err_size) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
  r->path = path ? path : "";
  r->what = what ? what : "file";
  r->max_line = max_line;
  r->max_bytes = max_bytes;
  r->cap = max_line + 2 + READ_CHUNK; /* a whole line, its '\n', a '\0', and one read's room */
  if (!(r->buf = malloc(r->cap))) {
    stk__errorf(err, err_size, "%s %s: out of memory for its read buffer", r->what, r->path);
    return STK_ENOMEM;
  }
  r->fd = stk__open_regular(path, O_RDONLY, r->what, err, err_size);
  if (r->fd < 0) {
    stk_status st = open_status(errno);
    free(r->buf);
    r->buf = NULL;
    return st;
  }
  return STK_OK;
}

/* Reads more bytes after the unread ones (moved to the buffer's start first). */
static stk_status fill(stk__line_reader *r, char *err, size_t err_size) {
  if (r->start > 0) {
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
  }
  ssize_t n;
  do n = read(r->fd, r->buf + r->end, r->cap - 1 - r->end);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    stk__errorf(err, err_size, "%s %s: read error after line %lld: %s", r->what, r->path, (long long)r->line_no,
                strerror(errno));
    return STK_EIO;
  }
  if (n == 0) r->at_eof = 1;
  r->end += (size_t)n;
  r->bytes_read += (uint64_t)n;
  if (r->bytes_read > r->max_bytes) {
    stk__errorf(err, err_size, "%s %s: longer than %zu bytes, the limit of a %s (not a list? split it)", r->what,
                r->path, r->max_bytes, r->what);
    return STK_ERANGE;
  }
  return STK_OK;
}

stk_status stk__line_reader_next(stk__line_reader *r, char **line, size_t *len, char *err, size_t err_size) {
  *line = NULL;
  *len = 0;
  for (;;) {
    char *begin = r->buf + r->start;
    size_t have = r->end - r->start;
    char *newline = memchr(begin, '\n', have);
    if (newline || (r->at_eof && have > 0)) {
      size_t n = newline ? (size_t)(newline - begin) : have;
      if (n > r->max_line) break; /* the line-length error below */
      r->line_no++;
      begin[n] = '\0'; /* the '\n', or the spare byte after the last unterminated line */
      r->start += newline ? n + 1 : n;
      if (memchr(begin, '\0', n)) {
        stk__errorf(err, err_size, "%s %s line %lld: has a NUL byte (not a text file?)", r->what, r->path,
                    (long long)r->line_no);
        return STK_EPARSE;
      }
      if (n > 0 && begin[n - 1] == '\r') begin[--n] = '\0';
      *line = begin;
      *len = n;
      return STK_OK;
    }
    if (r->at_eof) return STK_OK; /* nothing left */
    if (have > r->max_line) break;
    stk_status st = fill(r, err, err_size);
    if (st != STK_OK) return st;
  }
  stk__errorf(err, err_size, "%s %s line %lld: longer than %zu bytes (not a list of paths?)", r->what, r->path,
              (long long)r->line_no + 1, r->max_line);
  return STK_EPARSE;
}

void stk__line_reader_close(stk__line_reader *r) {
  if (r->fd >= 0) close(r->fd);
  free(r->buf);
  r->fd = -1;
  r->buf = NULL;
}

void stk__list_base_dir(const char *list, const char *base_root, char *out, size_t size) {
  if (base_root && base_root[0]) {
    snprintf(out, size, "%s", base_root);
    return;
  }
  snprintf(out, size, "%s", list);
  char *slash = strrchr(out, '/');
  if (slash == out) out[1] = '\0'; /* a list at the file system's root */
  else if (slash) *slash = '\0';
  else snprintf(out, size, ".");
}

stk_status stk_read_file(const char *path, const char *what, size_t max_bytes, char **out, size_t *size_out,
                         char *err, size_t err_size) {
  if (!out) return STK_EINVAL;
  *out = NULL;
  if (size_out) *size_out = 0;
  if (!what) what = "file";
  if (max_bytes == 0) max_bytes = STK__TEXT_MAX_BYTES;
  if (max_bytes > SIZE_MAX / 4) max_bytes = SIZE_MAX / 4;
  int fd = stk__open_regular(path, O_RDONLY, what, err, err_size);
  if (fd < 0) return open_status(errno);
  size_t cap = 4096, size = 0;
  char *text = malloc(cap);
  stk_status st = text ? STK_OK : STK_ENOMEM;
  while (st == STK_OK) {
    if (size + 1 == cap) {
      size_t grown = cap * 2 > max_bytes + 2 ? max_bytes + 2 : cap * 2;
      char *bigger = grown > cap ? realloc(text, grown) : NULL;
      if (!bigger) {
        st = STK_ENOMEM;
        break;
      }
      text = bigger;
      cap = grown;
    }
    ssize_t n = read(fd, text + size, cap - 1 - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      stk__errorf(err, err_size, "%s %s: read error: %s", what, path, strerror(errno));
      st = STK_EIO;
    } else if (n == 0) {
      break;
    } else if ((size += (size_t)n) > max_bytes) {
      stk__errorf(err, err_size, "%s %s: longer than %zu bytes, the limit of a %s", what, path, max_bytes, what);
      st = STK_ERANGE;
    }
  }
  if (st == STK_ENOMEM) stk__errorf(err, err_size, "%s %s: out of memory reading it", what, path);
  if (st == STK_OK && !size_out && memchr(text, '\0', size)) {
    stk__errorf(err, err_size, "%s %s: has a NUL byte (not a text file?)", what, path);
    st = STK_EPARSE;
  }
  close(fd);
  if (st != STK_OK) {
    free(text);
    return st;
  }
  text[size] = '\0';
  *out = text;
  if (size_out) *size_out = size;
  return STK_OK;
}
