/* src/base/common.c: the shared helpers of src/base/common.h (error formatting, the monotonic
 * clock, buffer size classes, the nearest-good-sample rule, range-checked tuning knobs). Calls
 * nothing else in stoker, so every folder may use it. Hot path: stk__size_class and stk__now_ns run per sample. */
#include "base/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void stk__errorf(char *err, size_t err_size, const char *fmt, ...) {
  if (!err || err_size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

uint64_t stk__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double stk__clock_seconds(clockid_t clock) {
  struct timespec ts;
  return clock_gettime(clock, &ts) == 0 ? (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 : 0.0;
}

double stk__now(void) { return stk__clock_seconds(CLOCK_MONOTONIC); }

/* 2^k -> 1.5 x 2^k -> 2^(k+1) */
static size_t next_size_class(size_t c) { return (c & (c - 1)) ? (c / 3) * 4 : c + c / 2; }

size_t stk__size_class(size_t bytes) {
  size_t c = 4096;
  while (c < bytes) c = next_size_class(c);
  return c;
}

int stk__size_class_index(size_t bytes) {
  int i = 0;
  for (size_t c = 4096; c < bytes; i++) c = next_size_class(c);
  return i;
}

static int failed_at(const int *failed_flags, size_t stride, int j) {
  return *(const int *)((const char *)failed_flags + stride * (size_t)j);
}

int stk__nearest_good_sample(const int *failed_flags, size_t stride, int n, int i) {
  for (int d = 1; d < n; d++) {
    if (i - d >= 0 && !failed_at(failed_flags, stride, i - d)) return i - d;
    if (i + d < n && !failed_at(failed_flags, stride, i + d)) return i + d;
  }
  return -1;
}

static const char *kind_of(mode_t mode) {
  return S_ISFIFO(mode)  ? "a FIFO"
         : S_ISCHR(mode) ? "a character device"
         : S_ISBLK(mode) ? "a block device"
         : S_ISDIR(mode) ? "a directory"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

/* 1 when an open with flags may go on with a file of this mode (stk__open_regular's rule). */
static int kind_allowed(mode_t mode, int flags) {
  if (S_ISREG(mode)) return 1;
  if ((flags & O_ACCMODE) == O_RDONLY) return 0;
  return S_ISCHR(mode) || S_ISFIFO(mode);
}

static int refuse(const char *path, const char *what, mode_t mode, char *err, size_t err_size) {
  stk__errorf(err, err_size, "%s %s is %s, not a regular file", what, path, kind_of(mode));
  errno = S_ISDIR(mode) ? EISDIR : EINVAL;
  return -1;
}

int stk__open_regular(const char *path, int flags, const char *what, char *err, size_t err_size) {
  if (!what) what = "file";
  const char *verb = (flags & O_ACCMODE) == O_RDONLY ? "read" : "write";
  if (!path || !path[0]) {
    stk__errorf(err, err_size, "%s: no path given", what);
    errno = ENOENT;
    return -1;
  }
  flags |= O_CLOEXEC | O_NOCTTY;
  int fd = open(path, flags | O_NONBLOCK, 0666);
  if (fd < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
    /* Only a lease makes a non-blocking open of a regular file fail this way: wait for it. */
    struct stat s;
    if (stat(path, &s) != 0) {
      stk__errorf(err, err_size, "cannot %s %s %s: %s", verb, what, path, strerror(errno));
      return -1;
    }
    if (!S_ISREG(s.st_mode)) return refuse(path, what, s.st_mode, err, err_size);
    fd = open(path, flags, 0666);
  }
  if (fd < 0) {
    int e = errno;
    if (e == ENXIO) stk__errorf(err, err_size, "%s %s is a FIFO with no reader (or a device that is not there)", what, path);
    else stk__errorf(err, err_size, "cannot %s %s %s: %s", verb, what, path, strerror(e));
    errno = e;
    return -1;
  }
  struct stat s;
  if (fstat(fd, &s) != 0) {
    int e = errno;
    stk__errorf(err, err_size, "cannot stat %s %s: %s", what, path, strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  if (!kind_allowed(s.st_mode, flags)) {
    close(fd);
    return refuse(path, what, s.st_mode, err, err_size);
  }
  int now = fcntl(fd, F_GETFL);
  if (now >= 0 && (now & O_NONBLOCK)) (void)fcntl(fd, F_SETFL, now & ~O_NONBLOCK);
  return fd;
}

FILE *stk__fopen_regular(const char *path, const char *mode, const char *what, char *err, size_t err_size) {
  int flags = strchr(mode, 'w')   ? O_WRONLY | O_CREAT | O_TRUNC
              : strchr(mode, 'a') ? O_WRONLY | O_CREAT | O_APPEND
                                  : O_RDONLY;
  int fd = stk__open_regular(path, flags, what, err, err_size);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, (flags & O_ACCMODE) == O_RDONLY ? "r" : (flags & O_APPEND) ? "a" : "w");
  if (!f) {
    int e = errno;
    stk__errorf(err, err_size, "cannot open %s %s: %s", what ? what : "file", path, strerror(e));
    close(fd);
    errno = e;
  }
  return f;
}
