/* src/ops/io/byte_source.c: the byte sources of byte_source.h -- local file, `pipe:COMMAND`,
 * memory buffer -- and the dispatch to HTTP (byte_source_http.c). Hot path: read (every block of
 * every shard, on the webdataset reader's background thread).
 *
 * A pipe command runs as `/bin/sh -c COMMAND` in its own process group (so closing the source
 * can end a whole `curl ... | zstd -d` chain), stdout into our pipe (1 MiB where the system allows,
 * non-blocking on our side), stdin and stderr inherited. A read on an empty pipe waits with poll()
 * in 100 ms steps (cancel checks) and gives up after stall_timeout_s without a byte. At the end
 * of the stream the child is reaped and a non-zero exit status is an error (a failed download is
 * not a short, valid-looking shard). A regular file is read with pread at the source's offset. */
#include "ops/io/byte_source.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ops/io/byte_source_http.h"

extern char **environ;

enum { KIND_FILE, KIND_PIPE, KIND_MEMORY, KIND_HTTP };

/* A regular file's reads smaller than this are served from one pread of this many bytes: a tar
 * header, a label member and the next header usually come in one system call. */
#define SMALL_READ 4096

struct stk__byte_source {
  int kind;
  char *name;
  uint64_t offset; /* bytes consumed since the stream's byte 0 */
  stk__byte_source_options options;
  int fd;               /* file, pipe */
  int regular;          /* file: a regular file, read with pread at offset (skips cost nothing) */
  uint64_t file_size;   /* regular file: its size (fstat at open, again when a skip passes it) */
  uint64_t small_start; /* regular file: small[0..small_len) holds the file's bytes from small_start */
  size_t small_len;
  uint8_t small[SMALL_READ];
  pid_t child;           /* pipe: the shell's pid (= its process group), 0 once reaped */
  const uint8_t *memory; /* memory */
  size_t memory_size;
  stk__http *http; /* http */
};

stk__byte_source_options stk__byte_source_options_default(void) {
  stk__byte_source_options o = {.connect_timeout_s = 10.0,
                                .stall_timeout_s = 30.0,
                                .max_retries = 5,
                                .retry_backoff_s = 0.2,
                                .buffer_bytes = 4u << 20,
                                .cancel = NULL,
                                .stop = NULL};
  return o;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static stk__byte_source *source_new(int kind, const char *name, const stk__byte_source_options *options) {
  stk__byte_source *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (!(s->name = strdup(name))) {
    free(s);
    return NULL;
  }
  s->kind = kind;
  s->fd = -1;
  s->options = options ? *options : stk__byte_source_options_default();
  return s;
}

static stk_status open_file(stk__byte_source *s, uint64_t offset, char *err, size_t err_size) {
  s->fd = stk__open_regular(s->name, O_RDONLY, "tar shard", err, err_size); /* a FIFO or device: refused at once */
  if (s->fd < 0) return stk__open_missing(errno) ? STK_ENOENT : STK_EIO;
  struct stat st;
  if (fstat(s->fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    stk__errorf(err, err_size, "%s is a directory, not a tar shard", s->name);
    return STK_EIO;
  }
  s->regular = S_ISREG(st.st_mode);
  s->file_size = (uint64_t)st.st_size;
  (void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (offset && !s->regular && lseek(s->fd, (off_t)offset, SEEK_SET) < 0) {
    stk__errorf(err, err_size, "cannot seek %s to byte %llu: %s", s->name, (unsigned long long)offset, strerror(errno));
    return STK_EIO;
  }
  s->offset = offset;
  return STK_OK;
}

static stk_status open_pipe(stk__byte_source *s, const char *command, char *err, size_t err_size) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    stk__errorf(err, err_size, "%s: pipe: %s", s->name, strerror(errno));
    return STK_ESYS;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  char *argv[] = {"sh", "-c", (char *)command, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    stk__errorf(err, err_size, "%s: cannot start /bin/sh: %s", s->name, strerror(rc));
    return STK_ESYS;
  }
  /* A larger pipe (1 MiB, the unprivileged limit; best effort): the command writes ahead instead
   * of handing over every 64 KiB with a context switch each way. Our end is non-blocking: a read
   * is tried first and poll() only waits when the pipe is empty. */
  (void)fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  (void)fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  s->fd = fds[0];
  s->child = pid;
  return STK_OK;
}

stk_status stk__byte_source_open(const char *location, uint64_t offset, const stk__byte_source_options *options,
                                 stk__byte_source **out, char *err, size_t err_size) {
  *out = NULL;
  if (!location || !location[0]) {
    stk__errorf(err, err_size, "empty shard location");
    return STK_EINVAL;
  }
  int kind = KIND_FILE;
  if (strncmp(location, "pipe:", 5) == 0) kind = KIND_PIPE;
  else if (strncmp(location, "http://", 7) == 0 || strncmp(location, "https://", 8) == 0) kind = KIND_HTTP;
  else if (strstr(location, "://")) {
    stk__errorf(err, err_size, "%s: unsupported URL scheme (stoker reads local paths, http://, https:// and pipe:)",
                location);
    return STK_ENOTSUP;
  }
  stk__byte_source *s = source_new(kind, location, options);
  if (!s) return STK_ENOMEM;
  stk_status st;
  if (kind == KIND_FILE) {
    st = open_file(s, offset, err, err_size);
  } else if (kind == KIND_HTTP) {
    st = stk__http_open(location, offset, &s->options, &s->http, err, err_size);
    s->offset = offset;
  } else {
    st = open_pipe(s, location + 5, err, err_size);
    if (st == STK_OK && offset) st = stk__byte_source_skip(s, offset, err, err_size);
  }
  if (st != STK_OK) {
    stk__byte_source_close(s);
    return st;
  }
  *out = s;
  return STK_OK;
}

stk_status stk__byte_source_memory(const void *data, size_t size, const char *name, stk__byte_source **out) {
  *out = source_new(KIND_MEMORY, name ? name : "<memory>", NULL);
  if (!*out) return STK_ENOMEM;
  (*out)->memory = data;
  (*out)->memory_size = size;
  return STK_OK;
}

/* Reaps the pipe's child at the end of its output; a failure exit is an error. */
static stk_status finish_pipe(stk__byte_source *s, char *err, size_t err_size) {
  if (!s->child) return STK_OK;
  int status = 0;
  pid_t r;
  while ((r = waitpid(s->child, &status, 0)) < 0 && errno == EINTR) {
  }
  s->child = 0;
  if (r < 0) return STK_OK; /* reaped elsewhere (SIGCHLD ignored): nothing to report */
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return STK_OK;
  if (WIFEXITED(status))
    stk__errorf(err, err_size, "%s: the command exited with status %d after %llu bytes", s->name, WEXITSTATUS(status),
                (unsigned long long)s->offset);
  else
    stk__errorf(err, err_size, "%s: the command was killed by signal %d after %llu bytes", s->name, WTERMSIG(status),
                (unsigned long long)s->offset);
  return STK_EIO;
}

/* A regular file's read at s->offset: from the small-read buffer when it holds the offset; a small
 * request refills it, a large one goes straight to the caller's buffer. */
static ssize_t read_regular(stk__byte_source *s, void *buf, size_t size) {
  if (s->offset < s->small_start || s->offset >= s->small_start + s->small_len) {
    if (size >= SMALL_READ) return pread(s->fd, buf, size, (off_t)s->offset);
    ssize_t n = pread(s->fd, s->small, SMALL_READ, (off_t)s->offset);
    if (n <= 0) return n;
    s->small_start = s->offset;
    s->small_len = (size_t)n;
  }
  size_t at = (size_t)(s->offset - s->small_start), n = s->small_len - at < size ? s->small_len - at : size;
  memcpy(buf, s->small + at, n);
  return (ssize_t)n;
}

/* Files: one read. Pipes (non-blocking): a read, and while the pipe is empty poll() in 100 ms
 * steps, looking at cancel at every step, up to stall_timeout_s without a byte. */
static stk_status read_fd(stk__byte_source *s, void *buf, size_t size, size_t *got, char *err, size_t err_size) {
  double waited_since = -1;
  for (;;) {
    if (s->kind == KIND_PIPE && stk__byte_source_cancelled(&s->options)) {
      stk__errorf(err, err_size, "%s: reading cancelled", s->name);
      return STK_ESHUTDOWN;
    }
    ssize_t n = s->regular ? read_regular(s, buf, size) : read(s->fd, buf, size);
    if (n < 0 && errno == EAGAIN && s->kind == KIND_PIPE) {
      if (waited_since < 0) waited_since = now_s();
      struct pollfd p = {.fd = s->fd, .events = POLLIN};
      int rc = poll(&p, 1, 100);
      if (rc < 0 && errno != EINTR) {
        stk__errorf(err, err_size, "%s: poll: %s", s->name, strerror(errno));
        return STK_EIO;
      }
      if (rc == 0 && now_s() - waited_since > s->options.stall_timeout_s) {
        stk__errorf(err, err_size, "%s: no data for %.1f s at byte %llu (stall_timeout)", s->name,
                    s->options.stall_timeout_s, (unsigned long long)s->offset);
        return STK_EIO;
      }
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      stk__errorf(err, err_size, "read error on %s at byte %llu: %s", s->name, (unsigned long long)s->offset,
                  strerror(errno));
      return STK_EIO;
    }
    *got = (size_t)n;
    s->offset += (uint64_t)n;
    if (n == 0 && s->kind == KIND_PIPE) return finish_pipe(s, err, err_size);
    return STK_OK;
  }
}

stk_status stk__byte_source_read(stk__byte_source *s, void *buf, size_t size, size_t *got, char *err, size_t err_size) {
  *got = 0;
  if (size == 0) return STK_OK;
  switch (s->kind) {
    case KIND_MEMORY: {
      size_t left = s->offset < s->memory_size ? s->memory_size - (size_t)s->offset : 0;
      size_t n = size < left ? size : left;
      if (n) memcpy(buf, s->memory + s->offset, n);
      s->offset += n;
      *got = n;
      return STK_OK;
    }
    case KIND_HTTP: {
      stk_status st = stk__http_read(s->http, buf, size, got, err, err_size);
      s->offset += *got;
      return st;
    }
    default:
      return read_fd(s, buf, size, got, err, err_size);
  }
}

stk_status stk__byte_source_read_full(stk__byte_source *s, void *buf, size_t size, char *err, size_t err_size) {
  size_t done = 0;
  while (done < size) {
    size_t got;
    stk_status st = stk__byte_source_read(s, (uint8_t *)buf + done, size - done, &got, err, err_size);
    if (st != STK_OK) return st;
    if (got == 0) {
      stk__errorf(err, err_size, "%s is truncated: the stream ended at byte %llu, %zu bytes short", s->name,
                  (unsigned long long)s->offset, size - done);
      return STK_EIO;
    }
    done += got;
  }
  return STK_OK;
}

stk_status stk__byte_source_skip(stk__byte_source *s, uint64_t size, char *err, size_t err_size) {
  if (size == 0) return STK_OK;
  if (s->kind == KIND_FILE && s->regular) { /* reads are preads at s->offset: a skip moves it */
    struct stat st;
    uint64_t end;
    if (!stk__add_u64(s->offset, size, &end)) end = UINT64_MAX; /* a size from a header: never wraps */
    if (end > s->file_size && fstat(s->fd, &st) == 0) s->file_size = (uint64_t)st.st_size; /* grown? */
    if (end > s->file_size) {
      stk__errorf(err, err_size, "%s is truncated: %llu bytes, a member needs bytes up to %llu", s->name,
                  (unsigned long long)s->file_size, (unsigned long long)end);
      return STK_EIO;
    }
    s->offset += size;
    return STK_OK;
  }
  uint8_t scratch[16384];
  while (size > 0) {
    size_t n = size < sizeof scratch ? (size_t)size : sizeof scratch;
    stk_status st = stk__byte_source_read_full(s, scratch, n, err, err_size);
    if (st != STK_OK) return st;
    size -= n;
  }
  return STK_OK;
}

stk_status stk__byte_source_finish(stk__byte_source *s, char *err, size_t err_size) {
  if (s->kind != KIND_PIPE) return STK_OK;
  uint8_t scratch[16384];
  for (uint64_t drained = 0; drained <= ((uint64_t)16 << 20);) {
    size_t got;
    stk_status st = read_fd(s, scratch, sizeof scratch, &got, err, err_size);
    if (st != STK_OK || got == 0) return st; /* the end: finish_pipe checked the exit status */
    drained += got;
  }
  stk__errorf(err, err_size, "%s: more than 16 MiB follow the end of the tar archive", s->name);
  return STK_EIO;
}

uint64_t stk__byte_source_size(const stk__byte_source *s) {
  if (s->kind == KIND_FILE && s->regular) return s->file_size;
  if (s->kind == KIND_MEMORY) return s->memory_size;
  int64_t total = s->kind == KIND_HTTP ? stk__http_total(s->http) : -1;
  return total >= 0 ? (uint64_t)total : UINT64_MAX;
}

uint64_t stk__byte_source_offset(const stk__byte_source *s) { return s->offset; }
int stk__byte_source_file_fd(const stk__byte_source *s, uint64_t *size) {
  if (s->kind != KIND_FILE || !s->regular) return -1;
  if (size) *size = s->file_size;
  return s->fd;
}
const char *stk__byte_source_name(const stk__byte_source *s) { return s->name; }
int stk__byte_source_retries(const stk__byte_source *s) {
  return s->kind == KIND_HTTP ? stk__http_retries(s->http) : 0;
}

/* Ends the pipe's process group: SIGTERM, up to 1 s, then SIGKILL; always reaps the shell. */
static void end_child(pid_t pid) {
  int status;
  if (waitpid(pid, &status, WNOHANG) == pid) return;
  kill(-pid, SIGTERM);
  for (int i = 0; i < 100; i++) {
    if (waitpid(pid, &status, WNOHANG) == pid) return;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void stk__byte_source_close(stk__byte_source *s) {
  if (!s) return;
  if (s->fd >= 0) close(s->fd); /* first: a writer blocked on a full pipe gets SIGPIPE */
  if (s->child > 0) end_child(s->child);
  stk__http_close(s->http);
  free(s->name);
  free(s);
}
