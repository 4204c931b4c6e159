/* src/ops/io/reader_file_read.c: readers.file's reading of one file and its read_ahead
 * (reader_file_read.h has the rule and the thread contract). Hot path: stk__read_file. */
#include "ops/io/reader_file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/common.h"

void stk__read_ahead_init(stk__read_ahead *ra, int enabled) {
  memset(ra, 0, sizeof *ra);
  ra->enabled = enabled;
#ifdef RWF_NOWAIT
  ra->probing = 1;
#else
  ra->hinting = enabled; /* no way to tell a miss here: hint every batch */
#endif
}

void stk__read_ahead_epoch(stk__read_ahead *ra) {
  if (__atomic_load_n(&ra->probing, __ATOMIC_RELAXED)) __atomic_store_n(&ra->hinting, 0, __ATOMIC_RELAXED);
}

int stk__read_ahead_wanted(stk__read_ahead *ra) {
  if (!ra->enabled || !__atomic_load_n(&ra->hinting, __ATOMIC_RELAXED)) return 0;
  __atomic_add_fetch(&ra->hinted_batches, 1, __ATOMIC_RELAXED);
  return 1;
}

void stk__read_ahead_missed(stk__read_ahead *ra) {
  __atomic_add_fetch(&ra->misses, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&ra->hinting, 1, __ATOMIC_RELAXED);
}

void stk__read_ahead_hint(const char *path) {
  int fd = stk__open_regular(path, O_RDONLY, "sample file", NULL, 0);
  if (fd < 0) return;
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  close(fd);
}

/* The first read of a file under read_ahead: only what the page cache holds. Returns the bytes
 * read (0 on a miss with nothing cached, or when it cannot tell); records a miss, or that this
 * kernel or file system cannot tell one (then every batch is hinted from here on). */
static size_t cached_read(stk__read_ahead *ra, int fd, uint8_t *data, size_t size) {
#ifdef RWF_NOWAIT
  struct iovec iov = {.iov_base = data, .iov_len = size};
  ssize_t n = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
  if (n >= 0 && (size_t)n == size) return size;
  if (n >= 0 || errno == EAGAIN) { /* some or none of it cached: a read that would have waited */
    stk__read_ahead_missed(ra);
    return n > 0 ? (size_t)n : 0;
  }
  if (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS) {
    /* Cannot tell a miss here: a tmpfs or ramfs has nothing to read ahead (hint never), any other
     * file system (FUSE, some network ones) is hinted every batch. */
    struct statfs fs;
    int in_memory =
        fstatfs(fd, &fs) == 0 && ((unsigned long)fs.f_type == TMPFS_MAGIC || (unsigned long)fs.f_type == RAMFS_MAGIC);
    __atomic_store_n(&ra->in_memory, in_memory, __ATOMIC_RELAXED);
    __atomic_store_n(&ra->probing, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ra->hinting, !in_memory, __ATOMIC_RELAXED);
  }
#else
  (void)ra, (void)fd, (void)data, (void)size;
#endif
  return 0; /* any other error: the plain read below reports it */
}

stk_status stk__open_sample_file(const char *path, int *fd, char *err, size_t err_size) {
  *fd = stk__open_regular(path, O_RDONLY, "sample file", err, err_size); /* a FIFO named x.jpg must not block */
  if (*fd >= 0) return STK_OK;
  return stk__open_missing(errno) ? STK_ENOENT : STK_EIO;
}

stk_status stk__read_file(const char *path, stk__read_ahead *ra, stk__sample_ctx *ctx, stk__tensor *const *outputs,
                          char *err, size_t err_size) {
  int fd;
  stk_status opened = stk__open_sample_file(path, &fd, err, err_size);
  if (opened != STK_OK) return opened;
  struct stat st_buf;
  if (fstat(fd, &st_buf) != 0) {
    stk__errorf(err, err_size, "cannot stat %s: %s", path, strerror(errno));
    close(fd);
    return STK_EIO;
  }
  int64_t size = (int64_t)st_buf.st_size;
  stk_status st = stk__sample_output_resize(ctx, outputs, 0, STK_DTYPE_UINT8, 1, &size, ""); /* in place when dense */
  stk__tensor *out = outputs[0];
  if (st != STK_OK) {
    stk__errorf(err, err_size, "out of memory reading %s (%lld bytes)", path, (long long)size);
    close(fd);
    return st;
  }
  uint8_t *data = (uint8_t *)out->data;
  size_t done = 0;
  if (ra && ra->enabled && size > 0 && __atomic_load_n(&ra->probing, __ATOMIC_RELAXED))
    done = cached_read(ra, fd, data, (size_t)size);
  while (done < (size_t)size) {
    ssize_t n = pread(fd, data + done, (size_t)size - done, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      stk__errorf(err, err_size, "read error on %s after %zu of %lld bytes: %s", path, done, (long long)size,
                  n < 0 ? strerror(errno) : "file shrank while reading");
      close(fd);
      return STK_EIO;
    }
    done += (size_t)n;
  }
  close(fd);
  return STK_OK;
}
