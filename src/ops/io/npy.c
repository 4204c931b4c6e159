/* src/ops/io/npy.c: the .npy header parser of npy.h. Not a hot path (once per file). */
#include "ops/io/npy.h"

#include <stdio.h>
#include <string.h>

size_t stk__npy_header_length(const uint8_t *b, size_t size) {
  if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return 0;
  if (b[6] == 1) return 10 + (size_t)(b[8] | b[9] << 8);
  if ((b[6] == 2 || b[6] == 3) && size >= 12)
    return 12 + (size_t)((uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24);
  return 0;
}

/* The value text after 'key': in the dict (NULL when absent). */
static const char *find_key(const char *dict, size_t n, const char *key) {
  size_t klen = strlen(key);
  for (size_t i = 0; i + klen + 2 < n; i++) {
    if ((dict[i] == '\'' || dict[i] == '"') && memcmp(dict + i + 1, key, klen) == 0 && dict[i + 1 + klen] == dict[i]) {
      size_t j = i + klen + 2;
      while (j < n && (dict[j] == ' ' || dict[j] == ':')) j++;
      return j < n ? dict + j : NULL;
    }
  }
  return NULL;
}

static stk_status parse_descr(const char *v, const char *end, stk_dtype *dtype, char *err, size_t err_size) {
  if (v >= end || (*v != '\'' && *v != '"')) {
    stk__errorf(err, err_size, "'descr' is not a simple type string (structured dtypes are not supported)");
    return STK_EPARSE;
  }
  char quote = *v++;
  char d[16];
  size_t n = 0;
  while (v < end && *v != quote && n < sizeof d - 1) d[n++] = *v++;
  d[n] = '\0';
  if (v >= end || *v != quote) {
    stk__errorf(err, err_size, "'descr' is not terminated");
    return STK_EPARSE;
  }
  if (d[0] == '>' && strcmp(d + 1, "u1") != 0 && strcmp(d + 1, "i1") != 0 && strcmp(d + 1, "b1") != 0) {
    stk__errorf(err, err_size,
                "descr '%s' is big-endian: save the array little-endian (arr.astype(arr.dtype.newbyteorder('<')))", d);
    return STK_EPARSE;
  }
  static const struct {
    const char *code;
    stk_dtype dtype;
  } types[] = {{"b1", STK_DTYPE_BOOL},    {"u1", STK_DTYPE_UINT8},   {"u2", STK_DTYPE_UINT16},
               {"u4", STK_DTYPE_UINT32},  {"u8", STK_DTYPE_UINT64},  {"i1", STK_DTYPE_INT8},
               {"i2", STK_DTYPE_INT16},   {"i4", STK_DTYPE_INT32},   {"i8", STK_DTYPE_INT64},
               {"f2", STK_DTYPE_FLOAT16}, {"f4", STK_DTYPE_FLOAT32}, {"f8", STK_DTYPE_FLOAT64}};
  const char *code = (d[0] == '<' || d[0] == '|' || d[0] == '=' || d[0] == '>') ? d + 1 : d;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(code, types[i].code) == 0) {
      *dtype = types[i].dtype;
      return STK_OK;
    }
  stk__errorf(err, err_size, "descr '%s' is not a supported dtype (bool, u1/u2/u4/u8, i1/i2/i4/i8, f2/f4/f8)", d);
  return STK_EPARSE;
}

static stk_status parse_shape(const char *v, const char *end, stk__npy_header *h, char *err, size_t err_size) {
  if (v >= end || *v != '(') {
    stk__errorf(err, err_size, "'shape' is not a tuple");
    return STK_EPARSE;
  }
  v++;
  h->ndim = 0;
  for (;;) {
    while (v < end && (*v == ' ' || *v == ',')) v++;
    if (v < end && *v == ')') break;
    if (v >= end || *v < '0' || *v > '9') {
      stk__errorf(err, err_size, "'shape' has a value that is not a non-negative integer");
      return STK_EPARSE;
    }
    if (h->ndim == STK_MAX_DIMS) {
      stk__errorf(err, err_size, "'shape' has more than %d dimensions", STK_MAX_DIMS);
      return STK_EPARSE;
    }
    int64_t x = 0;
    while (v < end && *v >= '0' && *v <= '9') {
      if (x > (INT64_MAX - 9) / 10) {
        stk__errorf(err, err_size, "'shape' has a dimension too large");
        return STK_EPARSE;
      }
      x = x * 10 + (*v++ - '0');
    }
    if (v < end && *v == 'L') v++; /* Python 2 longs */
    h->shape[h->ndim++] = x;
  }
  return STK_OK;
}

stk_status stk__npy_parse(const uint8_t *bytes, size_t size, stk__npy_header *h, char *err, size_t err_size) {
  memset(h, 0, sizeof *h);
  size_t total = stk__npy_header_length(bytes, size);
  if (total == 0) {
    stk__errorf(err, err_size, "not a .npy file (no \\x93NUMPY magic, or an unknown format version)");
    return STK_EPARSE;
  }
  if (total > size) {
    stk__errorf(err, err_size, "the header (%zu bytes) is longer than the file (%zu bytes)", total, size);
    return STK_EPARSE;
  }
  size_t start = bytes[6] == 1 ? 10 : 12;
  const char *dict = (const char *)bytes + start, *end = (const char *)bytes + total;
  size_t n = total - start;
  if (n == 0 || dict[0] != '{' || !memchr(dict, '}', n)) {
    stk__errorf(err, err_size, "the header is not a dict literal");
    return STK_EPARSE;
  }
  const char *descr = find_key(dict, n, "descr"), *fortran = find_key(dict, n, "fortran_order");
  const char *shape = find_key(dict, n, "shape");
  if (!descr || !fortran || !shape) {
    stk__errorf(err, err_size, "the header lacks %s", !descr ? "'descr'" : !fortran ? "'fortran_order'" : "'shape'");
    return STK_EPARSE;
  }
  stk_status st = parse_descr(descr, end, &h->dtype, err, err_size);
  if (st != STK_OK) return st;
  if ((size_t)(end - fortran) >= 4 && memcmp(fortran, "True", 4) == 0) h->fortran_order = 1;
  else if ((size_t)(end - fortran) >= 5 && memcmp(fortran, "False", 5) == 0) h->fortran_order = 0;
  else {
    stk__errorf(err, err_size, "'fortran_order' is neither True nor False");
    return STK_EPARSE;
  }
  if ((st = parse_shape(shape, end, h, err, err_size)) != STK_OK) return st;
  uint64_t count = 1;
  for (int d = 0; d < h->ndim; d++) {
    if (h->shape[d] && count > UINT64_MAX / 16 / (uint64_t)h->shape[d]) {
      stk__errorf(err, err_size, "'shape' describes more data than fits in 64 bits");
      return STK_EPARSE;
    }
    count *= (uint64_t)h->shape[d];
  }
  h->data_bytes = count * stk_dtype_size(h->dtype);
  h->data_offset = total;
  return STK_OK;
}
