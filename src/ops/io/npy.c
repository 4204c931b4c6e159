/* src/ops/io/npy.c: the .npy header parser of npy.h. The header is a Python dict literal read by a
 * small tokenizer (quoted strings with escapes, non-negative integers, True/False, tuples), key by
 * key, so a 'shape' written inside another value (a descr string, say) is never taken for the key; every number from the file is
 * overflow-checked before it is used. Not a hot path (once per file). */
#include "ops/io/npy.h"

#include <stdio.h>
#include <string.h>

typedef struct cursor {
  const char *begin, *at, *end; /* the dict's text; at: the next character */
  char *err;
  size_t err_size;
} cursor;

static void skip_space(cursor *c) {
  while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r')) c->at++;
}

/* Consumes ch (after white space): 1, or 0 when the next character is another. */
static int eat(cursor *c, char ch) {
  skip_space(c);
  if (c->at < c->end && *c->at == ch) {
    c->at++;
    return 1;
  }
  return 0;
}

static stk_status fail(cursor *c, const char *what) {
  stk__errorf(c->err, c->err_size, "the header is not a Python dict literal: %s at byte %zu of the dict", what,
              (size_t)(c->at - c->begin));
  return STK_EPARSE;
}

/* A quoted string (' or ", backslash escapes skipped over): its body in [*s, *s + *n). */
static stk_status parse_string(cursor *c, const char **s, size_t *n) {
  skip_space(c);
  if (c->at >= c->end || (*c->at != '\'' && *c->at != '"')) return fail(c, "expected a string");
  char quote = *c->at++;
  const char *start = c->at;
  while (c->at < c->end && *c->at != quote) {
    if (*c->at == '\n') return fail(c, "a string runs past its line");
    c->at += *c->at == '\\' && c->at + 1 < c->end ? 2 : 1;
  }
  if (c->at >= c->end) return fail(c, "a string is not terminated");
  *s = start;
  *n = (size_t)(c->at - start);
  c->at++;
  return STK_OK;
}

/* A non-negative decimal integer (a Python 2 'L' suffix allowed), at most INT64_MAX. */
static stk_status parse_count(cursor *c, int64_t *out) {
  skip_space(c);
  if (c->at >= c->end || *c->at < '0' || *c->at > '9') {
    stk__errorf(c->err, c->err_size, "'shape' has a value that is not a non-negative integer");
    return STK_EPARSE;
  }
  int64_t x = 0;
  while (c->at < c->end && *c->at >= '0' && *c->at <= '9') {
    if (x > (INT64_MAX - (*c->at - '0')) / 10) {
      stk__errorf(c->err, c->err_size, "'shape' has a dimension over 2^63");
      return STK_EPARSE;
    }
    x = x * 10 + (*c->at++ - '0');
  }
  if (c->at < c->end && (*c->at == 'L' || *c->at == 'l')) c->at++;
  *out = x;
  return STK_OK;
}

static int eat_word(cursor *c, const char *word) {
  skip_space(c);
  size_t n = strlen(word);
  if ((size_t)(c->end - c->at) < n || memcmp(c->at, word, n) != 0) return 0;
  const char *after = c->at + n;
  if (after < c->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') || *after == '_'))
    return 0;
  c->at = after;
  return 1;
}

static stk_status parse_descr(cursor *c, stk_dtype *dtype) {
  skip_space(c);
  if (c->at < c->end && *c->at != '\'' && *c->at != '"') {
    stk__errorf(c->err, c->err_size, "'descr' is not a simple type string (structured dtypes are not supported)");
    return STK_EPARSE;
  }
  const char *s;
  size_t n;
  stk_status st = parse_string(c, &s, &n);
  if (st != STK_OK) return st;
  char d[16];
  snprintf(d, sizeof d, "%.*s", (int)(n < sizeof d ? n : sizeof d - 1), s);
  if (n >= sizeof d) {
    stk__errorf(c->err, c->err_size, "descr '%.*s' is not a supported dtype", (int)(n < 40 ? n : 40), s);
    return STK_EPARSE;
  }
  if (d[0] == '>' && strcmp(d + 1, "u1") != 0 && strcmp(d + 1, "i1") != 0 && strcmp(d + 1, "b1") != 0) {
    stk__errorf(c->err, c->err_size,
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
  stk__errorf(c->err, c->err_size, "descr '%s' is not a supported dtype (bool, u1/u2/u4/u8, i1/i2/i4/i8, f2/f4/f8)",
              d);
  return STK_EPARSE;
}

/* A tuple of non-negative integers: (), (n,), (a, b, ...) with an optional trailing comma; (n)
 * is an int in Python, not a tuple, and is refused as numpy refuses it. */
static stk_status parse_shape(cursor *c, stk__npy_header *h) {
  if (!eat(c, '(')) {
    stk__errorf(c->err, c->err_size, "'shape' is not a tuple");
    return STK_EPARSE;
  }
  h->ndim = 0;
  int comma_after_last = 0;
  while (!eat(c, ')')) {
    if (h->ndim == STK_MAX_DIMS) {
      stk__errorf(c->err, c->err_size, "'shape' has more than %d dimensions", STK_MAX_DIMS);
      return STK_EPARSE;
    }
    stk_status st = parse_count(c, &h->shape[h->ndim]);
    if (st != STK_OK) return st;
    h->ndim++;
    if ((comma_after_last = eat(c, ','))) continue;
    if (eat(c, ')')) break;
    stk__errorf(c->err, c->err_size, "'shape' is not a tuple of integers");
    return STK_EPARSE;
  }
  if (h->ndim == 1 && !comma_after_last) {
    stk__errorf(c->err, c->err_size, "'shape' is (n) without a comma: an int, not a tuple");
    return STK_EPARSE;
  }
  return STK_OK;
}

/* The three keys numpy writes, each once, in any order; nothing else (as numpy's own reader). */
static stk_status parse_dict(cursor *c, stk__npy_header *h) {
  if (!eat(c, '{')) {
    stk__errorf(c->err, c->err_size, "the header is not a dict literal");
    return STK_EPARSE;
  }
  int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
  while (!eat(c, '}')) {
    const char *key;
    size_t n;
    stk_status st = parse_string(c, &key, &n);
    if (st != STK_OK) return st;
    if (!eat(c, ':')) return fail(c, "expected ':' after a key");
    int *seen = n == 5 && !memcmp(key, "descr", 5)           ? &seen_descr
                : n == 13 && !memcmp(key, "fortran_order", 13) ? &seen_fortran
                : n == 5 && !memcmp(key, "shape", 5)           ? &seen_shape
                                                               : NULL;
    if (!seen) {
      stk__errorf(c->err, c->err_size, "the header has a key '%.*s' besides descr, fortran_order and shape",
                  (int)(n < 40 ? n : 40), key);
      return STK_EPARSE;
    }
    if (*seen) {
      stk__errorf(c->err, c->err_size, "the header has the key '%.*s' twice", (int)n, key);
      return STK_EPARSE;
    }
    *seen = 1;
    if (seen == &seen_descr) st = parse_descr(c, &h->dtype);
    else if (seen == &seen_shape) st = parse_shape(c, h);
    else if (eat_word(c, "True")) h->fortran_order = 1;
    else if (eat_word(c, "False")) h->fortran_order = 0;
    else st = (stk__errorf(c->err, c->err_size, "'fortran_order' is neither True nor False"), STK_EPARSE);
    if (st != STK_OK) return st;
    if (!eat(c, ',') && !eat(c, '}')) return fail(c, "expected ',' or '}'");
    if (c->at[-1] == '}') break;
  }
  if (!seen_descr || !seen_fortran || !seen_shape) {
    stk__errorf(c->err, c->err_size, "the header lacks %s",
                !seen_descr ? "'descr'" : !seen_fortran ? "'fortran_order'" : "'shape'");
    return STK_EPARSE;
  }
  skip_space(c); /* numpy pads with spaces and ends with '\n' */
  if (c->at != c->end) return fail(c, "text after the dict");
  return STK_OK;
}

size_t stk__npy_header_length(const uint8_t *b, size_t size) {
  if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return 0;
  if (b[6] == 1) return 10 + (size_t)(b[8] | b[9] << 8);
  if ((b[6] == 2 || b[6] == 3) && size >= 12)
    return 12 + (size_t)((uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24);
  return 0;
}

stk_status stk__npy_parse(const uint8_t *bytes, size_t size, stk__npy_header *h, char *err, size_t err_size) {
  memset(h, 0, sizeof *h);
  size_t total = stk__npy_header_length(bytes, size);
  if (total == 0) {
    stk__errorf(err, err_size, "not a .npy file (no \\x93NUMPY magic, or an unknown format version)");
    return STK_EPARSE;
  }
  if (total > STK__NPY_MAX_HEADER) {
    stk__errorf(err, err_size, "the header announces %zu bytes, over the %zu bytes a .npy header may have here", total,
                (size_t)STK__NPY_MAX_HEADER);
    return STK_EPARSE;
  }
  if (total > size) {
    stk__errorf(err, err_size, "the header (%zu bytes) is longer than the file (%zu bytes)", total, size);
    return STK_EPARSE;
  }
  size_t start = bytes[6] == 1 ? 10 : 12;
  cursor c = {(const char *)bytes + start, (const char *)bytes + start, (const char *)bytes + total, err, err_size};
  if (memchr(c.at, '\0', total - start)) {
    stk__errorf(err, err_size, "the header has a NUL byte");
    return STK_EPARSE;
  }
  stk_status st = parse_dict(&c, h);
  if (st != STK_OK) return st;
  size_t es = stk_dtype_size(h->dtype);
  uint64_t limit = ((uint64_t)INT64_MAX - total) / es, count = 1; /* offset + data fits in an off_t */
  for (int d = 0; d < h->ndim; d++) {
    if (h->shape[d] && count > limit / (uint64_t)h->shape[d]) {
      stk__errorf(err, err_size, "'shape' describes more data than a file can hold (over 2^63 bytes)");
      return STK_EPARSE;
    }
    count *= (uint64_t)h->shape[d];
  }
  h->data_bytes = count * es;
  h->data_offset = total;
  return STK_OK;
}
