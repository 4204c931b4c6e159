/* src/base/common.h: the small helpers every folder of the library shares -- the internal
 * visibility macro, "first error wins" message formatting, the monotonic clock, allocation
 * counting, the buffer size classes, and the nearest-good-sample rule of skip_bad_files
 * (tuning knobs: base/tuning.h). One home for each, so nothing is written twice.
 *
 * Where it sits: the lowest floor. It includes only the C library, and every other internal
 * header (base/tensor.h, device/device.h, core/op.h, ...) may include it. Implemented in
 * src/base/common.c, which calls nothing else in stoker.
 * Hot path: stk__size_class and stk__now_ns run per sample; all are cheap and thread-safe. */
#ifndef STOKER_CORE_COMMON_H
#define STOKER_CORE_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal symbols (stk__*) that are not static: visible across the library's objects, never
 * exported from libstoker.so. */
#define STK_INTERNAL __attribute__((visibility("hidden")))

/* snprintf-style formatting into err (err_size bytes, always terminated, truncated when long).
 * Does nothing when err is NULL or err_size is 0. Thread-safe: err belongs to the caller. */
STK_INTERNAL void stk__errorf(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Counts one real allocation in an allocation counter (atomically; NULL: not counted). */
static inline void stk__count_alloc(uint64_t *alloc_count) {
  if (alloc_count) __atomic_fetch_add(alloc_count, 1, __ATOMIC_RELAXED);
}

/* CLOCK_MONOTONIC in seconds / in nanoseconds (for durations; not wall-clock time). */
STK_INTERNAL double stk__now(void);
/* Any clock in seconds (CLOCK_THREAD_CPUTIME_ID, a thread's pthread_getcpuclockid, ...); 0 when it
 * cannot be read. */
STK_INTERNAL double stk__clock_seconds(clockid_t clock);
STK_INTERNAL uint64_t stk__now_ns(void);

/* The smallest 2^k or 1.5 x 2^k (>= 4096) >= bytes: host buffers grow in half-octave steps (at
 * most 50% unused), so the high-water mark of an output rises only a few times however its
 * sample sizes vary, and pinned blocks come in few sizes the pool can recycle. */
STK_INTERNAL size_t stk__size_class(size_t bytes);
/* Position of bytes' class in that sequence (4096 -> 0, 6144 -> 1, 8192 -> 2, ...). */
STK_INTERNAL int stk__size_class_index(size_t bytes);

/* Size arithmetic on numbers read from files (index counts, tar sizes, offsets): 1 and the exact
 * result in *out, or 0 when it does not fit (then *out is unspecified). Use them before a size
 * from outside input reaches malloc or a file offset. */
static inline int stk__add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline int stk__mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline int stk__mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* skip_bad_files' replacement rule: the index of the good sample nearest to sample i of n (the
 * lower index on ties), or -1 when every other sample failed too. The failure flags are ints,
 * `stride` bytes apart from failed_flags (sizeof(int) for an int array; sizeof(struct) with
 * &array[0].failed for a flag inside an array of structs). */
STK_INTERNAL int stk__nearest_good_sample(const int *failed_flags, size_t stride, int n, int i);

/* The one guarded open of every file stoker opens by path (samples, lists, tar shards, checkpoints,
 * pipeline texts, logs): open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666), fstat, then
 * O_NONBLOCK is cleared again, so reads and writes block as usual. What it refuses, at once and
 * without waiting on it:
 *   - read-only opens (flags & O_ACCMODE == O_RDONLY): anything but a regular file (a FIFO, a
 *     character or block device such as /dev/zero, a directory, a socket): a FIFO without a writer
 *     would block the open for ever, a device would be read for ever;
 *   - write opens: a directory, a block device or a socket. A character device (/dev/null,
 *     /dev/stderr) and a FIFO with a reader are streams a log may go to; a FIFO without a reader
 *     fails with ENXIO instead of waiting for one.
 * A regular file whose lease another process holds (Samba, an HSM) is waited for like any reader
 * would, instead of failing with EWOULDBLOCK. Returns the descriptor, or -1 with errno set (from
 * open(2); EISDIR for a directory, EINVAL for another kind refused) and err saying
 * "WHAT PATH: REASON" ("tar shard /x/y.tar is a FIFO, not a regular file"). `what` names the role
 * of the file in messages (NULL: "file"); err may be NULL. Thread-safe. */
STK_INTERNAL int stk__open_regular(const char *path, int flags, const char *what, char *err, size_t err_size);

/* stk__open_regular as a stdio stream: mode "r" (O_RDONLY), "w" (O_WRONLY | O_CREAT | O_TRUNC) or
 * "a" (O_WRONLY | O_CREAT | O_APPEND), a "b" anywhere ignored. NULL with errno and err set. */
STK_INTERNAL FILE *stk__fopen_regular(const char *path, const char *mode, const char *what, char *err,
                                      size_t err_size);

/* 1 when errno value e from stk__open_regular means the path does not exist (ENOENT, ENOTDIR). */
static inline int stk__open_missing(int e) { return e == ENOENT || e == ENOTDIR; }

#ifdef __cplusplus
}
#endif
#endif
