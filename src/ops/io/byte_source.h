/* src/ops/io/byte_source.h: a sequential byte stream from a local file, a `pipe:COMMAND` (the
 * command's stdout), an http:// or https:// URL (libcurl), or a memory buffer (tests, fuzzing).
 * The tar stream parser (tar_stream.h) reads shards through it. Hot path: read() is called for
 * every block of every shard, on the reader's background thread.
 *
 * Guarantees: a read never hangs. Every wait (connect, a stalled server, a silent pipe) is bounded
 * by the options' timeouts, and a dropped or stalled HTTP transfer is reopened at the byte it
 * stopped at (Range request) up to max_retries times before the read fails with a message naming
 * the source and the offset. `cancel` (when not NULL) is polled at least every 100 ms while
 * waiting, so a reader that shuts down never waits for a slow server.
 *
 * Thread contract: one source is used by one thread at a time; different sources are independent
 * (libcurl's global init is done once, thread-safely, by the first open of a URL). */
#ifndef STOKER_OPS_CPU_BYTE_SOURCE_H
#define STOKER_OPS_CPU_BYTE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

typedef struct stk__byte_source stk__byte_source;

typedef struct stk__byte_source_options {
  double connect_timeout_s; /* HTTP: TCP/TLS connect limit per attempt */
  double stall_timeout_s;   /* HTTP and pipe: no byte for this long while waiting = stalled */
  int max_retries;          /* HTTP: reopen attempts after a dropped/stalled transfer (per stall; reset by progress) */
  double retry_backoff_s;   /* HTTP: wait before retry k is backoff * 2^k (capped at 5 s) */
  size_t buffer_bytes;      /* HTTP: bytes buffered ahead of the reader (memory bound) */
  const int *cancel;        /* polled while waiting; nonzero = give up with STK_ESHUTDOWN */
  const volatile int *stop; /* the same, set from outside (a CLI's SIGINT/SIGTERM flag); NULL: none */
} stk__byte_source_options;

/* Whether options' cancel or stop flag is set (a wait must give up). Inline: the local, pipe and
 * HTTP sources all poll it, and the HTTP source needs nothing else from byte_source.c. */
static inline int stk__byte_source_cancelled(const stk__byte_source_options *o) {
  return (o->cancel && __atomic_load_n(o->cancel, __ATOMIC_ACQUIRE)) ||
         (o->stop && __atomic_load_n(o->stop, __ATOMIC_RELAXED));
}

STK_INTERNAL stk__byte_source_options stk__byte_source_options_default(void);

/* Opens `location` positioned at byte `offset` (regular local file: read with pread from there; other local files: lseek; HTTP: Range; pipe and memory:
 * read and dropped). `location` is copied. On failure *out is NULL and err names the source. */
STK_INTERNAL stk_status stk__byte_source_open(const char *location, uint64_t offset,
                                              const stk__byte_source_options *options, stk__byte_source **out,
                                              char *err, size_t err_size);
/* A source over a caller's buffer (borrowed: must outlive the source). `name` is copied. */
STK_INTERNAL stk_status stk__byte_source_memory(const void *data, size_t size, const char *name,
                                                stk__byte_source **out);
/* Reads up to `size` bytes; *got = 0 only at the end of the stream. */
STK_INTERNAL stk_status stk__byte_source_read(stk__byte_source *src, void *buf, size_t size, size_t *got, char *err,
                                              size_t err_size);
/* Reads exactly `size` bytes; a short stream is STK_EIO ("truncated") naming the offset. */
STK_INTERNAL stk_status stk__byte_source_read_full(stk__byte_source *src, void *buf, size_t size, char *err,
                                                   size_t err_size);
/* Skips `size` bytes (regular local files: moves the offset, no I/O; else read and dropped); short stream as read_full. */
STK_INTERNAL stk_status stk__byte_source_skip(stk__byte_source *src, uint64_t size, char *err, size_t err_size);
/* After the archive's end blocks: a pipe: source is read to its end (at most 16 MiB of padding,
 * dropped) so that the command's exit status is checked (non-zero = STK_EIO naming it); other
 * sources have nothing to check (STK_OK). */
STK_INTERNAL stk_status stk__byte_source_finish(stk__byte_source *src, char *err, size_t err_size);
/* The stream's size when known (a regular file's size at open, a memory buffer's, an HTTP body's
 * once its length arrived), else UINT64_MAX: a member whose declared size passes it cannot be
 * there, whatever its header says. */
STK_INTERNAL uint64_t stk__byte_source_size(const stk__byte_source *src);
/* Bytes consumed since the stream's byte 0 (the open offset counts). */
STK_INTERNAL uint64_t stk__byte_source_offset(const stk__byte_source *src);
/* A local regular file's descriptor (borrowed: valid until close; read it only with pread, the
 * source's offset is its own) and, in *size, the file's size when opened; -1 for every other
 * kind of source. The webdataset lanes read large members later, on the workers, through it. */
STK_INTERNAL int stk__byte_source_file_fd(const stk__byte_source *src, uint64_t *size);
/* The location as given (borrowed, lives as long as the source). */
STK_INTERNAL const char *stk__byte_source_name(const stk__byte_source *src);
/* HTTP reopen attempts so far (0 for other kinds): tests check resumes happened. */
STK_INTERNAL int stk__byte_source_retries(const stk__byte_source *src);
/* Closes: a pipe's child is sent SIGTERM (then SIGKILL) when still running and reaped; an HTTP
 * transfer is aborted. NULL is fine. */
STK_INTERNAL void stk__byte_source_close(stk__byte_source *src);

#endif
