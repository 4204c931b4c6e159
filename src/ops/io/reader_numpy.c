/* src/ops/io/reader_numpy.c: readers.numpy -- .npy files (a folder, a file list or explicit
 * files), whole or a region of interest, as DALI's readers.numpy. Hot path: run_sample (per
 * sample on the workers: one open, one header pread, then one pread per contiguous run of the
 * region, straight into the batch tensor when the executor can place it there: read_npy). Listing, sharding and order reuse readers.file's planner (reader_file.h).
 *
 * Semantics (docs/operators-io.md):
 *   - file_root + file_filter (default "*.npy"): every matching file below file_root, found
 *     recursively and sorted; files: explicit paths (relative to file_root when given);
 *     file_list: one path per line (relative to file_root, or to the list's directory).
 *   - Output: the array, shape from the file, C order (Fortran-order files are transposed).
 *   - ROI: roi_start/roi_end (absolute) or rel_roi_start/rel_roi_end (fractions of the extent,
 *     start rounded down, end rounded up), or roi_shape/rel_roi_shape instead of an end, over
 *     roi_axes (default: the first axes in order). out_of_bounds_policy "error" (default) refuses
 *     a region outside the array, "trim_to_shape" clips it, "pad" fills the outside with
 *     fill_value. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text_file.h"
#include "ops/io/npy.h"
#include "ops/op_impls.h"
#include "ops/io/reader_file.h"
#include "ops/io/reader_file_read.h"
#include "ops/common/dali_hints.h"

STK_INTERNAL extern const stk__op_schema stk__op_readers_numpy; /* listed in src/core/ops_list.h */

typedef enum { OOB_ERROR, OOB_PAD, OOB_TRIM } oob_policy;

typedef struct numpy_reader {
  stk__file_reader *files;
  oob_policy oob;
  double fill_value;
} numpy_reader;

/* ---- Listing -------------------------------------------------------------------------------- */
typedef struct path_list {
  char **items;
  size_t count, capacity;
} path_list;

static int add_path(path_list *l, const char *p) {
  if (l->count == l->capacity) {
    size_t cap = l->capacity ? l->capacity * 2 : 256;
    char **bigger = realloc(l->items, cap * sizeof *bigger);
    if (!bigger) return 0;
    l->items = bigger;
    l->capacity = cap;
  }
  return (l->items[l->count] = strdup(p)) != NULL && ++l->count;
}

static int compare_paths(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static stk_status walk(const char *root, const char *rel, const char *filter, path_list *out, int depth, char *err,
                       size_t err_size) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
  DIR *d = opendir(path);
  if (!d) {
    stk__errorf(err, err_size, "file_root %s: %s", path, strerror(errno));
    return errno == ENOENT ? STK_ENOENT : STK_EIO;
  }
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char child[4096], full[8192];
    if ((size_t)snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= sizeof child) continue;
    snprintf(full, sizeof full, "%s/%s", root, child);
    struct stat s;
    if (stat(full, &s) != 0) continue;
    if (S_ISDIR(s.st_mode)) {
      if (depth < 32) st = walk(root, child, filter, out, depth + 1, err, err_size);
    } else if (fnmatch(filter, e->d_name, 0) == 0 && !add_path(out, child)) {
      st = STK_ENOMEM;
    }
  }
  closedir(d);
  return st;
}

static stk_status read_list(const char *list, path_list *out, char *err, size_t err_size) {
  stk__line_reader lines;
  stk_status st = stk__line_reader_open(&lines, list, "file_list", STK__LIST_MAX_LINE, STK__LIST_MAX_BYTES, err, err_size);
  if (st != STK_OK) return st;
  char *line;
  size_t n;
  while ((st = stk__line_reader_next(&lines, &line, &n, err, err_size)) == STK_OK && line) {
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t')) line[--n] = '\0';
    if (n > 0 && !add_path(out, line)) {
      stk__errorf(err, err_size, "out of memory listing file_list %s", list);
      st = STK_ENOMEM;
      break;
    }
  }
  stk__line_reader_close(&lines);
  return st;
}

/* The data set as readers.file's `files` (labels unused), so its planner shards and shuffles. */
static stk_status make_file_reader(stk__op *op, stk__file_reader **out, char *err, size_t err_size) {
  const char *root = stk__arg_string(op, "file_root"), *list = stk__arg_string(op, "file_list");
  size_t num_files;
  char *const *files = stk__arg_string_list(op, "files", &num_files);
  path_list l = {0};
  stk_status st = STK_OK;
  char base[4096] = "";
  if (num_files) {
    for (size_t i = 0; st == STK_OK && i < num_files; i++) st = add_path(&l, files[i]) ? STK_OK : STK_ENOMEM;
    snprintf(base, sizeof base, "%s", root);
  } else if (list[0]) {
    st = read_list(list, &l, err, err_size);
    stk__list_base_dir(list, root, base, sizeof base); /* file_root, else the list's directory */
  } else if (root[0]) {
    st = walk(root, "", stk__arg_string(op, "file_filter"), &l, 0, err, err_size);
    if (st == STK_OK && l.count > 1) qsort(l.items, l.count, sizeof *l.items, compare_paths);
    snprintf(base, sizeof base, "%s", root);
  } else {
    stk__errorf(err, err_size, "no data: give file_root, file_list or files");
    st = STK_EINVAL;
  }
  if (st == STK_OK && l.count == 0) {
    stk__errorf(err, err_size, "no .npy files found (file_root %s, filter %s)", root,
                stk__arg_string(op, "file_filter"));
    st = STK_ENOENT;
  }
  if (st == STK_OK) {
    stk__file_reader_config c = {0};
    c.file_root = base;
    c.files = l.items;
    c.num_files = l.count;
    stk__file_reader_order_args(op, &c);
    st = stk__file_reader_new(&c, out, err, err_size);
  }
  for (size_t i = 0; i < l.count; i++) free(l.items[i]);
  free(l.items);
  return st;
}

/* ---- Region of interest --------------------------------------------------------------------- */
typedef struct region {
  int ndim;
  int64_t lo[STK_MAX_DIMS], hi[STK_MAX_DIMS]; /* requested, may lie outside [0, shape) with "pad" */
} region;

/* *out = rounding(fraction * extent) when that is a finite number within +-2^62; 0 otherwise. */
static int scaled(double fraction, int64_t extent, double (*rounding)(double), int64_t *out) {
  double v = rounding(fraction * (double)extent);
  if (!(v >= -0x1p62 && v <= 0x1p62)) return 0; /* also NaN */
  *out = (int64_t)v;
  return 1;
}

/* The region's bytes (a padded region may be larger than the array) must be countable in 2^62:
 * the output is sized and strided from them. */
static stk_status region_size_fits(const region *g, size_t element_size, char *err, size_t err_size) {
  int64_t bytes = (int64_t)element_size;
  for (int d = 0; d < g->ndim; d++)
    if (__builtin_mul_overflow(bytes, g->hi[d] - g->lo[d], &bytes) || bytes > ((int64_t)1 << 62)) {
      stk__errorf(err, err_size, "the ROI covers more than 2^62 bytes");
      return STK_ERANGE;
    }
  return STK_OK;
}

/* The region of a file of `shape` (ndim axes) the arguments ask for. */
static stk_status plan_region(const stk__op *op, const numpy_reader *r, int ndim, const int64_t *shape,
                              size_t element_size, region *out, char *err, size_t err_size) {
  size_t n_start, n_end, n_rstart, n_rend, n_shape, n_rshape, n_axes;
  const int64_t *start = stk__arg_int_list(op, "roi_start", &n_start), *end = stk__arg_int_list(op, "roi_end", &n_end);
  const int64_t *rshape = stk__arg_int_list(op, "roi_shape", &n_shape);
  const double *rstart = stk__arg_float_list(op, "rel_roi_start", &n_rstart);
  const double *rend = stk__arg_float_list(op, "rel_roi_end", &n_rend);
  const double *rrshape = stk__arg_float_list(op, "rel_roi_shape", &n_rshape);
  const int64_t *axes = stk__arg_int_list(op, "roi_axes", &n_axes);
  out->ndim = ndim;
  for (int d = 0; d < ndim; d++) out->lo[d] = 0, out->hi[d] = shape[d];
  size_t k = n_start > n_rstart ? n_start : n_rstart;
  size_t k_end = n_end > n_rend ? n_end : n_rend;
  size_t k_shape = n_shape > n_rshape ? n_shape : n_rshape;
  if (k_end > k) k = k_end;
  if (k_shape > k) k = k_shape;
  if (k == 0) return STK_OK;
  if (n_axes && n_axes != k) {
    stk__errorf(err, err_size, "roi_axes has %zu entries but the ROI arguments have %zu", n_axes, k);
    return STK_EINVAL;
  }
  for (size_t i = 0; i < k; i++) {
    int64_t axis = n_axes ? axes[i] : (int64_t)i;
    if (axis < 0 || axis >= ndim) {
      stk__errorf(err, err_size, "ROI axis %lld is not an axis of the %d-D array", (long long)axis, ndim);
      return STK_EINVAL;
    }
    int64_t ext = shape[axis], lo = 0, hi = ext, extent = 0;
    int bad = 0; /* a fraction that is not finite, or a sum past 2^63: refused, never wrapped */
    if (i < n_start) lo = start[i];
    else if (i < n_rstart) bad |= !scaled(rstart[i], ext, floor, &lo);
    if (i < n_end) hi = end[i];
    else if (i < n_rend) bad |= !scaled(rend[i], ext, ceil, &hi);
    else if (i < n_shape) bad |= __builtin_add_overflow(lo, rshape[i], &hi);
    else if (i < n_rshape) bad |= !scaled(rrshape[i], ext, ceil, &extent) || __builtin_add_overflow(lo, extent, &hi);
    if (bad || __builtin_sub_overflow(hi, lo, &extent)) {
      stk__errorf(err, err_size, "ROI on axis %lld: its start, end or extent is out of range (past 2^63, or not finite)",
                  (long long)axis);
      return STK_ERANGE;
    }
    if (hi < lo) {
      stk__errorf(err, err_size, "ROI on axis %lld ends (%lld) before it starts (%lld)", (long long)axis, (long long)hi,
                  (long long)lo);
      return STK_EINVAL;
    }
    if (lo < 0 || hi > ext) {
      if (r->oob == OOB_ERROR) {
        stk__errorf(err, err_size,
                    "ROI [%lld, %lld) on axis %lld is outside the array's extent %lld "
                    "(out_of_bounds_policy=\"error\")",
                    (long long)lo, (long long)hi, (long long)axis, (long long)ext);
        return STK_ERANGE;
      }
      if (r->oob == OOB_TRIM) {
        lo = lo < 0 ? 0 : (lo > ext ? ext : lo);
        hi = hi > ext ? ext : (hi < lo ? lo : hi);
      }
    }
    out->lo[axis] = lo;
    out->hi[axis] = hi;
  }
  return region_size_fits(out, element_size, err, err_size);
}

/* ---- Reading ------------------------------------------------------------------------------- */
static void store_fill(void *dst, stk_dtype dtype, size_t count, double v) {
  size_t es = stk_dtype_size(dtype);
  uint8_t one[8] = {0};
  switch (dtype) {
    case STK_DTYPE_BOOL:
      one[0] = v != 0;
      break;
    case STK_DTYPE_UINT8:
      one[0] = (uint8_t)v;
      break;
    case STK_DTYPE_INT8:
      *(int8_t *)one = (int8_t)v;
      break;
    case STK_DTYPE_INT16:
      *(int16_t *)(void *)one = (int16_t)v;
      break;
    case STK_DTYPE_UINT16:
      *(uint16_t *)(void *)one = (uint16_t)v;
      break;
    case STK_DTYPE_INT32:
      *(int32_t *)(void *)one = (int32_t)v;
      break;
    case STK_DTYPE_UINT32:
      *(uint32_t *)(void *)one = (uint32_t)v;
      break;
    case STK_DTYPE_INT64:
      *(int64_t *)(void *)one = (int64_t)v;
      break;
    case STK_DTYPE_UINT64:
      *(uint64_t *)(void *)one = (uint64_t)v;
      break;
    case STK_DTYPE_FLOAT32:
      *(float *)(void *)one = (float)v;
      break;
    case STK_DTYPE_FLOAT64:
      *(double *)(void *)one = v;
      break;
    case STK_DTYPE_FLOAT16: { /* fill values are small and exact in practice: via float bits */
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, 4);
      uint16_t h = (uint16_t)(((b >> 16) & 0x8000) | ((((b >> 23) & 0xff) - 112) << 10 & 0x7c00) | ((b >> 13) & 0x3ff));
      if (f == 0) h = (uint16_t)((b >> 16) & 0x8000);
      memcpy(one, &h, 2);
      break;
    }
  }
  for (size_t i = 0; i < count; i++) memcpy((uint8_t *)dst + i * es, one, es);
}

static int pread_full(int fd, void *buf, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(offset + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return 0;
    done += (size_t)k;
  }
  return 1;
}

/* Fortran (column-major) data -> C order. */
static void fortran_to_c(const uint8_t *src, uint8_t *dst, int ndim, const int64_t *shape, size_t es) {
  int64_t idx[STK_MAX_DIMS] = {0}, fstride[STK_MAX_DIMS];
  size_t count = 1;
  for (int d = 0; d < ndim; d++) {
    fstride[d] = d ? fstride[d - 1] * shape[d - 1] : 1;
    count *= (size_t)shape[d];
  }
  for (size_t i = 0; i < count; i++) {
    int64_t off = 0;
    for (int d = 0; d < ndim; d++) off += idx[d] * fstride[d];
    memcpy(dst + i * es, src + (size_t)off * es, es);
    for (int d = ndim - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
}

/* Copies the in-bounds part of region g from the C-order array (in memory at `mem`, or in the
 * file at data_offset) into out, whose shape is g's extent. One read per contiguous run. */
static int copy_region(int fd, const uint8_t *mem, const stk__npy_header *h, const region *g, uint8_t *out) {
  const int n = h->ndim;
  const size_t es = stk_dtype_size(h->dtype);
  int64_t a_lo[STK_MAX_DIMS], a_hi[STK_MAX_DIMS], stride[STK_MAX_DIMS], ostride[STK_MAX_DIMS];
  for (int d = n - 1; d >= 0; d--) {
    a_lo[d] = g->lo[d] > 0 ? g->lo[d] : 0;
    a_hi[d] = g->hi[d] < h->shape[d] ? g->hi[d] : h->shape[d];
    if (a_hi[d] <= a_lo[d]) return 1; /* nothing inside the array */
    stride[d] = d == n - 1 ? 1 : stride[d + 1] * h->shape[d + 1];
    ostride[d] = d == n - 1 ? 1 : ostride[d + 1] * (g->hi[d + 1] - g->lo[d + 1]);
  }
  if (n == 0) return mem ? (memcpy(out, mem, es), 1) : pread_full(fd, out, es, h->data_offset);
  /* The innermost axes that are read whole merge into one run. */
  int inner = n - 1;
  while (inner > 0 && a_lo[inner] == 0 && a_hi[inner] == h->shape[inner] && g->lo[inner] == 0 &&
         g->hi[inner] == h->shape[inner])
    inner--;
  size_t run = (size_t)(a_hi[inner] - a_lo[inner]) * (size_t)stride[inner] * es;
  int64_t idx[STK_MAX_DIMS];
  for (int d = 0; d < inner; d++) idx[d] = a_lo[d];
  for (;;) {
    int64_t src = a_lo[inner] * stride[inner], dst = (a_lo[inner] - g->lo[inner]) * ostride[inner];
    for (int d = 0; d < inner; d++) src += idx[d] * stride[d], dst += (idx[d] - g->lo[d]) * ostride[d];
    if (mem) memcpy(out + (size_t)dst * es, mem + (size_t)src * es, run);
    else if (!pread_full(fd, out + (size_t)dst * es, run, h->data_offset + (uint64_t)src * es)) return 0;
    int d = inner - 1;
    for (; d >= 0 && ++idx[d] == a_hi[d]; d--) idx[d] = a_lo[d];
    if (d < 0) return 1;
  }
}

/* The whole array in C order, the common case: the bytes of the data the header's read already
 * holds are taken from it (a file of up to 4 KiB costs that one read), the rest is one pread. 0 on
 * a short read. */
static int read_whole(int fd, const uint8_t *head, size_t got, const stk__npy_header *h, uint8_t *out) {
  if (!h->data_bytes) return 1;
  size_t have = got > h->data_offset ? got - h->data_offset : 0;
  if (have > h->data_bytes) have = (size_t)h->data_bytes;
  memcpy(out, head + h->data_offset, have);
  return pread_full(fd, out + have, (size_t)h->data_bytes - have, h->data_offset + have);
}

static int whole_array(const stk__npy_header *h, const region *g) {
  int whole = !h->fortran_order || h->ndim <= 1;
  for (int d = 0; d < h->ndim && whole; d++) whole = g->lo[d] == 0 && g->hi[d] == h->shape[d];
  return whole;
}

/* Reads the array (or its region) at path into outputs[0]. Its shape is known from the header
 * before any data is read, so the output is sized with stk__sample_output_resize: in a pipeline
 * whose batches are dense the bytes land straight in the batch tensor. The whole C-order array
 * costs open, fstat, two preads and close; a file shorter than the header's first read (4 KiB)
 * costs open, that one pread and close (its size is known from the read). */
static stk_status read_npy(const stk__op *op, const numpy_reader *r, const char *path, stk__sample_ctx *ctx,
                           stk__tensor *const *outputs) {
  char *err = ctx->err;
  size_t err_size = ctx->err_size;
  int fd;
  stk_status opened = stk__open_sample_file(path, &fd, err, err_size);
  if (opened != STK_OK) return opened;
  uint8_t head[4096], *long_head = NULL; /* a header over 4 KiB is read whole into long_head */
  ssize_t got = pread(fd, head, sizeof head, 0);
  struct stat s = {.st_size = got};
  stk__npy_header h;
  char why[256];
  stk_status st = STK_OK;
  size_t header_length = got > 0 ? stk__npy_header_length(head, (size_t)got) : 0;
  if (header_length > (size_t)got && header_length <= STK__NPY_MAX_HEADER && (long_head = malloc(header_length)) &&
      !pread_full(fd, long_head, header_length, 0)) {
    free(long_head); /* shorter than its header: the parse below says so */
    long_head = NULL;
  }
  if (got < 0 || ((size_t)got == sizeof head && fstat(fd, &s) != 0)) {
    stk__errorf(err, err_size, "cannot read %s: %s", path, strerror(errno));
    st = STK_EIO;
  } else if (stk__npy_parse(long_head ? long_head : head, long_head ? header_length : (size_t)got, &h, why,
                            sizeof why) != STK_OK) {
    stk__errorf(err, err_size, "%s: %s", path, why);
    st = STK_EPARSE;
  } else if ((uint64_t)s.st_size < h.data_offset + h.data_bytes) {
    uint64_t has = (uint64_t)s.st_size > h.data_offset ? (uint64_t)s.st_size - h.data_offset : 0;
    stk__errorf(err, err_size, "%s is truncated: the header announces %llu data bytes, the file has %llu", path,
                (unsigned long long)h.data_bytes, (unsigned long long)has);
    st = STK_EIO;
  }
  free(long_head);
  region g;
  if (st == STK_OK && (st = plan_region(op, r, h.ndim, h.shape, stk_dtype_size(h.dtype), &g, why, sizeof why)) != STK_OK)
    stk__errorf(err, err_size, "%s: %s", path, why);
  int64_t out_shape[STK_MAX_DIMS];
  int inside = 1;
  for (int d = 0; st == STK_OK && d < h.ndim; d++) {
    out_shape[d] = g.hi[d] - g.lo[d];
    inside &= g.lo[d] >= 0 && g.hi[d] <= h.shape[d];
  }
  if (st == STK_OK && (st = stk__sample_output_resize(ctx, outputs, 0, h.dtype, h.ndim, out_shape, "")) != STK_OK)
    stk__errorf(err, err_size, "%s: cannot hold the array (%d-D, %s): %s", path, h.ndim, stk_dtype_name(h.dtype),
                stk_strerror(st));
  stk__tensor *t = outputs[0];
  uint8_t *mem = NULL, *raw = NULL;
  int whole = st == STK_OK && whole_array(&h, &g);
  errno = 0;
  if (whole && !read_whole(fd, head, (size_t)got, &h, t->data)) {
    stk__errorf(err, err_size, "read error on %s: %s", path, errno ? strerror(errno) : "short read");
    st = STK_EIO;
  }
  if (st == STK_OK && !whole && h.fortran_order && h.ndim > 1) { /* read whole, transpose, then cut */
    raw = malloc(h.data_bytes ? h.data_bytes : 1);
    mem = malloc(h.data_bytes ? h.data_bytes : 1);
    if (!raw || !mem) st = STK_ENOMEM;
    else if (!pread_full(fd, raw, h.data_bytes, h.data_offset)) st = STK_EIO;
    else fortran_to_c(raw, mem, h.ndim, h.shape, stk_dtype_size(h.dtype));
  }
  if (st == STK_OK && !whole && !inside) store_fill(t->data, h.dtype, stk__tensor_numel(t), r->fill_value);
  if (st == STK_OK && !whole && stk__tensor_numel(t) && !copy_region(fd, mem, &h, &g, t->data)) {
    stk__errorf(err, err_size, "read error on %s: %s", path, strerror(errno));
    st = STK_EIO;
  }
  free(raw);
  free(mem);
  close(fd);
  return st;
}

/* ---- The operator --------------------------------------------------------------------------- */
static stk_status numpy_init(stk__op *op, char *err, size_t err_size) {
  numpy_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  const char *oob = stk__arg_string(op, "out_of_bounds_policy");
  if (strcmp(oob, "error") == 0) r->oob = OOB_ERROR;
  else if (strcmp(oob, "pad") == 0) r->oob = OOB_PAD;
  else if (strcmp(oob, "trim_to_shape") == 0) r->oob = OOB_TRIM;
  else {
    stk__errorf(err, err_size, "out_of_bounds_policy \"%s\": expected \"error\", \"pad\" or \"trim_to_shape\"", oob);
    free(r);
    return STK_EINVAL;
  }
  r->fill_value = stk__arg_float(op, "fill_value");
  stk_status st = make_file_reader(op, &r->files, err, err_size);
  if (st != STK_OK) {
    free(r);
    return st;
  }
  op->state = r;
  return STK_OK;
}

static void numpy_destroy(stk__op *op) {
  numpy_reader *r = op->state;
  if (r) stk__file_reader_free(r->files);
  free(r);
  op->state = NULL;
}

static stk_status numpy_plan_batch(stk__op *op, stk__batch_plan *plan, char *err, size_t err_size) {
  stk_status st = stk__file_reader_plan(((numpy_reader *)op->state)->files, plan);
  if (st == STK_EOF_EPOCH) stk__errorf(err, err_size, "end of epoch: reset the reader");
  return st;
}

static stk_status numpy_reset(stk__op *op, uint64_t epoch) {
  return stk__file_reader_reset(((numpy_reader *)op->state)->files, epoch);
}

/* Exact checkpoint/resume (src/core/checkpoint.c): planning is readers.file's, a pure function of
 * (seed, epoch, batch index), so seeking reads nothing; the fingerprint is the listing's. */
static stk_status numpy_seek(stk__op *op, uint64_t epoch, int64_t batch_index, char *err, size_t err_size) {
  return stk__file_reader_seek(((numpy_reader *)op->state)->files, epoch, batch_index, err, err_size);
}

static uint64_t numpy_fingerprint(const stk__op *op, int64_t *num_samples) {
  const stk__file_reader *files = ((const numpy_reader *)op->state)->files;
  *num_samples = stk__file_reader_size(files);
  return stk__file_reader_fingerprint(files);
}

static void numpy_meta(const stk__op *op, uint64_t epoch, stk_reader_meta *out) {
  stk__file_reader_meta(((const numpy_reader *)op->state)->files, epoch, out);
}

static stk_status numpy_run_sample(stk__op *op, stk__sample_ctx *ctx, stk__tensor *const *inputs,
                                   stk__tensor *const *outputs) {
  const numpy_reader *r = op->state;
  int64_t index = ctx->plan ? ctx->plan->file_index : ctx->sample_id;
  if (index < 0 || index >= stk__file_reader_size(r->files)) {
    stk__errorf(ctx->err, ctx->err_size, "sample %lld is outside the data set", (long long)index);
    return STK_EINTERNAL;
  }
  return read_npy(op, r, stk__file_reader_path(r->files, index), ctx, outputs);
}

const stk__op_impl stk__cpu_impl_readers_numpy = {
    .init = numpy_init,
    .destroy = numpy_destroy,
    .plan_batch = numpy_plan_batch,
    .reset = numpy_reset,
    .reader_meta = numpy_meta,
    .run_sample = numpy_run_sample,
    .seek = numpy_seek,
    .data_fingerprint = numpy_fingerprint,
};

static const stk__arg_schema numpy_args[] = {
    {"file_root", STK_ARG_STRING, NULL, 0, 0,
     "Directory searched recursively for file_filter; base of relative paths."},
    {"file_filter", STK_ARG_STRING, "*.npy", 0, 0, "Glob of the files listed under file_root."},
    {"file_list", STK_ARG_STRING, NULL, 0, 0, "Text file with one .npy path per line."},
    {"files", STK_ARG_STRING_LIST, NULL, 0, 0, "Explicit .npy paths (relative to file_root when given)."},
    {"roi_start", STK_ARG_INT_LIST, NULL, 0, 0, "Region start per ROI axis (absolute)."},
    {"roi_end", STK_ARG_INT_LIST, NULL, 0, 0, "Region end (exclusive) per ROI axis (absolute)."},
    {"roi_shape", STK_ARG_INT_LIST, NULL, 0, 0, "Region extent per ROI axis (instead of roi_end)."},
    {"rel_roi_start", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Region start as a fraction of the extent (rounded down)."},
    {"rel_roi_end", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Region end as a fraction of the extent (rounded up)."},
    {"rel_roi_shape", STK_ARG_FLOAT_LIST, NULL, 0, 0, "Region extent as a fraction of the extent (rounded up)."},
    {"roi_axes", STK_ARG_INT_LIST, NULL, 0, 0, "Axes the ROI arguments refer to (default: 0, 1, ...)."},
    {"out_of_bounds_policy", STK_ARG_STRING, "error", 0, 0, "A region outside the array: error, pad or trim_to_shape."},
    {"fill_value", STK_ARG_FLOAT, "0", 0, 0, "Value of padded elements (out_of_bounds_policy=\"pad\")."},
    {"random_shuffle", STK_ARG_BOOL, "false", 0, 0, "As readers.file."},
    {"shuffle_after_epoch", STK_ARG_BOOL, "false", 0, 0, "As readers.file."},
    {"initial_fill", STK_ARG_INT, "1024", 0, 0, "Shuffle buffer size (random_shuffle)."},
    {"shard_id", STK_ARG_INT, "0", 0, 0, "As readers.file."},
    {"num_shards", STK_ARG_INT, "1", 0, 0, "As readers.file."},
    {"stick_to_shard", STK_ARG_BOOL, "false", 0, 0, "As readers.file."},
    {"pad_last_batch", STK_ARG_BOOL, "false", 0, 0, "As readers.file."},
    {"skip_bad_files", STK_ARG_BOOL, "false", 0, 0, "Skip (and count) unreadable or malformed files."},
    {"seed", STK_ARG_INT, "-1", 0, 0, "Shuffle seed; -1 = the pipeline's seed."},
    STK__DALI_READER_HINT_ARGS,
    STK__DALI_READ_AHEAD_ARG,
    {"cache_header_information", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},
    {"use_o_direct", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},
};

const stk__op_schema stk__op_readers_numpy = {
    .name = "readers.numpy",
    .doc = "Reads .npy arrays (whole or a region of interest). Output 0 = the array (its dtype, C order).",
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 1,
    .devices = STK_OPDEV_CPU,
    .args = numpy_args,
    .num_args = (int)(sizeof numpy_args / sizeof numpy_args[0]),
    .is_reader = 1,
    .array_outputs = 1u << 0, /* the arrays */
};
