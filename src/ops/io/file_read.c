/* src/ops/io/file_read.c: io.file.read (DALI's fn.io.file.read), CPU: each sample of the input is a
 * file path as encoded text (1-D uint8 or int8: `np.frombuffer(path.encode(), np.int8)`, up to a
 * first NUL), and the output sample is that file's bytes (1-D uint8), ready for decoders.image
 * like a reader's. dont_use_mmap and use_o_direct are DALI's and accepted: stoker reads every file
 * with read(2) into the output sample (no mapping; through the page cache). A missing, unreadable
 * or non-regular file, an empty path or a path of another type or rank is the sample's error,
 * naming the path and the reason. Hot path: once per sample (open, fstat, read). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/op_impls.h"

#define FILE_READ_PATH_MAX 4096

/* The sample's path, NUL-terminated in path[FILE_READ_PATH_MAX]; STK_EINVAL with the reason. */
static stk_status path_of(const stk__tensor *in, char *path, char *err, size_t err_size) {
  if ((in->dtype != STK_DTYPE_UINT8 && in->dtype != STK_DTYPE_INT8) || in->ndim != 1) {
    stk__errorf(err, err_size, "io.file.read: the input must be file paths as encoded text (1-D uint8 or int8), got %s "
                "with %d dimensions", stk_dtype_name(in->dtype), in->ndim);
    return STK_EINVAL;
  }
  const char *text = (const char *)in->data;
  size_t n = in->nbytes;
  const char *nul = n ? memchr(text, '\0', n) : NULL;
  if (nul) n = (size_t)(nul - text);
  if (n == 0) {
    stk__errorf(err, err_size, "io.file.read: the file path is empty");
    return STK_EINVAL;
  }
  if (n >= FILE_READ_PATH_MAX) {
    stk__errorf(err, err_size, "io.file.read: a file path of %zu bytes is longer than %d", n, FILE_READ_PATH_MAX - 1);
    return STK_EINVAL;
  }
  memcpy(path, text, n);
  path[n] = '\0';
  return STK_OK;
}

/* Reads all `size` bytes of fd into dst; STK_EIO naming path on a read error or a file that shrank. */
static stk_status read_all(int fd, const char *path, uint8_t *dst, size_t size, char *err, size_t err_size) {
  size_t done = 0;
  while (done < size) {
    ssize_t got = read(fd, dst + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      stk__errorf(err, err_size, "io.file.read: cannot read '%s': %s", path, strerror(errno));
      return STK_EIO;
    }
    if (got == 0) {
      stk__errorf(err, err_size, "io.file.read: '%s' ended after %zu of its %zu bytes (changed while read?)", path,
                  done, size);
      return STK_EIO;
    }
    done += (size_t)got;
  }
  return STK_OK;
}

static stk_status file_read_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                stk__tensor *const *outputs) {
  (void)op;
  char path[FILE_READ_PATH_MAX];
  stk_status st = path_of(inputs[0], path, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    stk__errorf(ctx->err, ctx->err_size, "io.file.read: cannot open '%s': %s", path, strerror(errno));
    return errno == ENOENT ? STK_ENOENT : STK_EIO;
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    stk__errorf(ctx->err, ctx->err_size, "io.file.read: cannot stat '%s': %s", path, strerror(errno));
    close(fd);
    return STK_EIO;
  }
  if (!S_ISREG(info.st_mode)) {
    stk__errorf(ctx->err, ctx->err_size, "io.file.read: '%s' is not a regular file%s", path,
                S_ISDIR(info.st_mode) ? " (a directory)" : "");
    close(fd);
    return STK_EINVAL;
  }
  const int64_t shape[1] = {(int64_t)info.st_size};
  st = stk__sample_output_resize(ctx, outputs, 0, STK_DTYPE_UINT8, 1, shape, "");
  if (st == STK_OK) st = read_all(fd, path, (uint8_t *)outputs[0]->data, (size_t)info.st_size, ctx->err, ctx->err_size);
  close(fd);
  /* the sample's name for a later operator's error (a decoder refusing the bytes names the file) */
  if (st == STK_OK && ctx->name && ctx->name_size) snprintf(ctx->name, ctx->name_size, "%s", path);
  return st;
}

const stk__op_impl stk__cpu_impl_io_file_read = {.run_sample = file_read_run};

static const stk__arg_schema file_read_args[] = {
    {"dont_use_mmap", STK_ARG_BOOL, "false", 0, 0,
     "DALI's; accepted: stoker never maps the file, it reads it into the output sample"},
    {"use_o_direct", STK_ARG_BOOL, "false", 0, 0,
     "DALI's; accepted: stoker reads through the page cache (read(2)) either way"},
};

const stk__op_schema stk__op_io_file_read = {
    .name = "io.file.read",
    .doc = "Reads whole files: each input sample is a file path as encoded text (1-D uint8 or int8), each output "
           "sample the file's bytes (1-D uint8), as a reader gives them to decoders.image.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = file_read_args,
    .num_args = (int)(sizeof file_read_args / sizeof file_read_args[0]),
    .array_outputs = 1u << 0,
};
