/* src/base/common.c: the shared helpers of src/base/common.h (error formatting, the monotonic
 * clock, buffer size classes, the nearest-good-sample rule, range-checked tuning knobs). Calls
 * nothing else in stoker, so every folder may use it. Hot path: stk__size_class and stk__now_ns run per sample. */
#include "base/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

double stk__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

int stk__open_regular_file(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
    /* Only a lease makes a non-blocking open of a regular file fail this way: wait for it. */
    struct stat s;
    if (stat(path, &s) != 0 || !S_ISREG(s.st_mode)) return -2;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  }
  if (fd < 0) return -1;
  struct stat s;
  if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
    close(fd);
    return -2;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}
