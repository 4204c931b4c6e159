/* src/ops/io/file_read.c: the `io.file.read` operator (DALI's fn.io.file.read) -- schema and CPU
 * implementation: each input sample is a file path, encoded as a 1-D uint8 or int8 array (the
 * bytes of the path, no terminating NUL needed: trailing NULs are ignored), and the output sample
 * is the whole file as a 1-D uint8 array -- the same encoded bytes readers.file gives, so
 * decoders.image (cpu or mixed) takes either. The typical feed is an external_source whose source
 * yields np.frombuffer(path.encode(), dtype=np.uint8) (or int8) per sample.
 *
 * Reading: one open (stk__open_regular: a directory, FIFO or device is refused at once), one
 * fstat, then pread(2) into the output, sized from fstat (in place in a dense batch output), the
 * reader's own loop (reader_file_read.c). The output buffers grow to the largest file a slot has
 * seen and are reused, so a steady state allocates nothing. An empty file gives a zero-length
 * sample. The path becomes the sample's source_info (schema.names_samples), as a reader's file
 * path does.
 *
 * DALI's arguments dont_use_mmap and use_o_direct are accepted and checked as DALI checks them
 * (use_o_direct needs dont_use_mmap=True), but stoker reads through the page cache with pread(2)
 * whatever they say: it never maps files, and O_DIRECT (which needs block-aligned buffers and
 * sizes, and is refused by tmpfs and several network file systems) is not used.
 *
 * Threads: run_sample on any worker, concurrently (no shared state). Hot path: run_sample. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ops/io/reader_file_read.h"
#include "ops/op_impls.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static stk_status file_read_init(stk__op *op, char *err, size_t err_size) {
  if (stk__arg_bool(op, "use_o_direct") && !stk__arg_bool(op, "dont_use_mmap")) {
    stk__errorf(err, err_size,
                "argument 'use_o_direct' = True needs dont_use_mmap=True (DALI's rule: the two are mutually "
                "exclusive with mmap); stoker reads with pread(2) either way");
    return STK_EINVAL;
  }
  return STK_OK;
}

/* The NUL-terminated path held by sample `in` (1-D uint8/int8, trailing NULs ignored) into
 * path[PATH_MAX]; STK_EINVAL with a message saying what is wrong with the sample otherwise. */
static stk_status decode_path(const stk__tensor *in, char *path, char *err, size_t err_size) {
  if (in->dtype != STK_DTYPE_UINT8 && in->dtype != STK_DTYPE_INT8) {
    stk__errorf(err, err_size,
                "input 'filepaths' must hold uint8 or int8 arrays (the encoded bytes of a path, e.g. "
                "np.frombuffer(path.encode(), dtype=np.uint8)), got %s",
                stk_dtype_name(in->dtype));
    return STK_EINVAL;
  }
  if (in->ndim != 1) {
    stk__errorf(err, err_size, "input 'filepaths' must hold 1-D arrays (the encoded bytes of a path), got a %d-D one",
                in->ndim);
    return STK_EINVAL;
  }
  const char *bytes = (const char *)in->data;
  size_t length = (size_t)in->shape[0];
  while (length > 0 && bytes[length - 1] == '\0') length--;
  if (length == 0) {
    stk__errorf(err, err_size, "input 'filepaths' holds an empty path (%lld bytes, none of them a path character)",
                (long long)in->shape[0]);
    return STK_EINVAL;
  }
  if (length >= PATH_MAX) {
    stk__errorf(err, err_size, "input 'filepaths' holds a path of %zu bytes, longer than PATH_MAX (%d): %.64s...",
                length, PATH_MAX, bytes);
    return STK_EINVAL;
  }
  const char *nul = memchr(bytes, '\0', length);
  if (nul) {
    stk__errorf(err, err_size, "input 'filepaths' holds a path with a NUL byte at offset %zu: \"%s\"...",
                (size_t)(nul - bytes), bytes);
    return STK_EINVAL;
  }
  memcpy(path, bytes, length);
  path[length] = '\0';
  return STK_OK;
}

static stk_status file_read_run(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                stk__tensor *const *outputs) {
  (void)op;
  char path[PATH_MAX];
  stk_status st = decode_path(inputs[0], path, ctx->err, ctx->err_size);
  if (st != STK_OK) return st;
  st = stk__read_file(path, NULL, ctx, outputs, ctx->err, ctx->err_size); /* its errors name the path */
  /* The sample's name: its source_info, and the file later operators' failures name. */
  if (st == STK_OK && ctx->name && ctx->name_size) snprintf(ctx->name, ctx->name_size, "%s", path);
  return st;
}

const stk__op_impl stk__cpu_impl_io_file_read = {.init = file_read_init, .run_sample = file_read_run};

static const stk__arg_schema file_read_args[] = {
    {"dont_use_mmap", STK_ARG_BOOL, "False", 0, 0,
     "DALI's choice between mmap and plain reads; stoker never maps files and reads with pread(2) either way"},
    {"use_o_direct", STK_ARG_BOOL, "False", 0, 0,
     "DALI's read bypassing the page cache; accepted (needs dont_use_mmap=True, as in DALI), but stoker reads "
     "through the page cache with pread(2) either way"},
};

const stk__op_schema stk__op_io_file_read = {
    .name = "io.file.read",
    .doc = "Reads whole files named by its input: each sample a file path as a 1-D uint8 or int8 array (the "
           "encoded bytes, e.g. np.frombuffer(path.encode(), dtype=np.uint8); trailing NULs ignored); each output "
           "sample the file's bytes as a 1-D uint8 array, as readers.file gives them (an empty file: zero "
           "length), with the path as its source_info. A missing, unreadable or non-regular file, or a bad path "
           "sample, fails naming the path and the reason.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = file_read_args,
    .num_args = (int)(sizeof file_read_args / sizeof file_read_args[0]),
    .is_reader = 0,
    .array_outputs = 1u,
    .names_samples = 1,
};
