/* src/ops/io/tar_stream.c: the streaming tar reader of tar_stream.h. Hot path: stk__tar_next and
 * stk__tar_read_data (per member, on the webdataset reader's background thread).
 *
 * Header block (POSIX ustar, offsets in bytes): name[100]@0, size[12]@124, chksum[8]@148,
 * typeflag@156, magic[6]@257 ("ustar\0" POSIX, "ustar " GNU), prefix[155]@345 (POSIX only).
 * The checksum is the byte sum of the block with the chksum field read as spaces (signed or
 * unsigned sums are both accepted, as GNU tar does). Numbers are octal text, or GNU base-256
 * when the first byte has its high bit set. */
#include "ops/io/tar_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stk__tar_reader {
  stk__byte_source *source;
  char *shard;
  uint8_t block[512];
  char *name; /* current member's name (long or short), NUL-terminated */
  size_t name_capacity;
  char *long_name; /* pending from an 'L' or pax record, NULL when none */
  uint64_t pax_size;
  int has_pax_size;
  uint64_t data_left; /* current member's unread data */
  uint64_t padding;   /* its padding to the next block */
};

/* ---- Pure parsers (fuzzed) ------------------------------------------------------------------ */
static int parse_number(const uint8_t *field, size_t width, uint64_t *out) {
  if (field[0] & 0x80) {           /* GNU base-256: big-endian, first byte's high bit is the flag */
    if (field[0] & 0x40) return 0; /* negative */
    uint64_t v = field[0] & 0x3f;
    for (size_t i = 1; i < width; i++) {
      if (v >> 56) return 0; /* overflow */
      v = v << 8 | field[i];
    }
    *out = v;
    return 1;
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') i++;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; i++, digits++) {
    if (v >> 60) return 0;
    v = v << 3 | (uint64_t)(field[i] - '0');
  }
  for (; i < width; i++)
    if (field[i] != ' ' && field[i] != '\0') return 0; /* junk after the digits */
  *out = v;
  return 1;
}

static void copy_field(char *dst, const uint8_t *src, size_t width) {
  size_t n = 0;
  while (n < width && src[n]) n++;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

stk_status stk__tar_parse_header(const uint8_t block[512], stk__tar_header *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  /* Byte sums in plain loops the compiler vectorizes (a header per member: the reader's hot path);
   * the checksum field is then counted as 8 spaces. */
  uint64_t sum_unsigned = 0;
  int64_t sum_signed = 0;
  for (int i = 0; i < 512; i++) sum_unsigned += block[i];
  for (int i = 0; i < 512; i++) sum_signed += (int8_t)block[i];
  if (sum_unsigned == 0) { /* every byte is 0 */
    out->is_end = 1;
    return STK_OK;
  }
  uint64_t stored;
  if (!parse_number(block + 148, 8, &stored)) {
    stk__errorf(err, err_size, "not a tar header (the checksum field is not a number)");
    return STK_EPARSE;
  }
  for (int i = 148; i < 156; i++) {
    sum_unsigned += (uint64_t)' ' - block[i];
    sum_signed += (int64_t)' ' - (int8_t)block[i];
  }
  if (stored != sum_unsigned && (int64_t)stored != sum_signed) {
    stk__errorf(err, err_size, "bad header checksum (stored %llu, computed %llu): corrupt or not a tar archive",
                (unsigned long long)stored, (unsigned long long)sum_unsigned);
    return STK_EPARSE;
  }
  if (!parse_number(block + 124, 12, &out->size)) {
    stk__errorf(err, err_size, "bad size field in the header");
    return STK_EPARSE;
  }
  if (out->size > ((uint64_t)1 << 62)) {
    stk__errorf(err, err_size, "member size %llu is implausible", (unsigned long long)out->size);
    return STK_EPARSE;
  }
  out->type = (char)block[156];
  int posix = memcmp(block + 257, "ustar\0", 6) == 0;
  if (posix && block[345]) {
    copy_field(out->name, block + 345, 155);
    size_t n = strlen(out->name);
    out->name[n] = '/';
    copy_field(out->name + n + 1, block, 100);
  } else {
    copy_field(out->name, block, 100);
  }
  return STK_OK;
}

stk_status stk__tar_parse_pax(const char *records, size_t length, char **path, uint64_t *size, int *has_size, char *err,
                              size_t err_size) {
  *path = NULL;
  *has_size = 0;
  size_t at = 0;
  while (at < length) {
    if (records[at] == '\0') break; /* NUL padding after the last record */
    size_t len = 0, i = at;
    while (i < length && records[i] >= '0' && records[i] <= '9' && len < ((size_t)1 << 32))
      len = len * 10 + (size_t)(records[i++] - '0');
    if (i == at || i >= length || records[i] != ' ' || len < 5 || len > length - at || records[at + len - 1] != '\n') {
      stk__errorf(err, err_size, "malformed pax record at byte %zu of the extended header", at);
      free(*path);
      *path = NULL;
      return STK_EPARSE;
    }
    const char *key = records + i + 1, *end = records + at + len - 1;
    const char *eq = memchr(key, '=', (size_t)(end - key));
    if (!eq) {
      stk__errorf(err, err_size, "pax record at byte %zu has no '='", at);
      free(*path);
      *path = NULL;
      return STK_EPARSE;
    }
    size_t key_len = (size_t)(eq - key), value_len = (size_t)(end - eq - 1);
    if (key_len == 4 && memcmp(key, "path", 4) == 0) {
      if (value_len >= STK__TAR_MAX_NAME || memchr(eq + 1, '\0', value_len)) {
        stk__errorf(err, err_size, "pax path is too long or has a NUL byte");
        free(*path);
        *path = NULL;
        return STK_EPARSE;
      }
      free(*path);
      if (!(*path = strndup(eq + 1, value_len))) return STK_ENOMEM;
    } else if (key_len == 4 && memcmp(key, "size", 4) == 0) {
      uint64_t v = 0;
      size_t k = 0;
      for (; k < value_len && eq[1 + k] >= '0' && eq[1 + k] <= '9' && v < ((uint64_t)1 << 58); k++)
        v = v * 10 + (uint64_t)(eq[1 + k] - '0');
      if (k == 0 || k != value_len || v > ((uint64_t)1 << 62)) {
        stk__errorf(err, err_size, "pax size record is not a number below 2^62");
        free(*path);
        *path = NULL;
        return STK_EPARSE;
      }
      *size = v;
      *has_size = 1;
    }
    at += len;
  }
  return STK_OK;
}

/* ---- Streaming reader ----------------------------------------------------------------------- */
stk_status stk__tar_reader_new(stk__byte_source *source, const char *shard, stk__tar_reader **out) {
  *out = NULL;
  stk__tar_reader *r = calloc(1, sizeof *r);
  if (!r) return STK_ENOMEM;
  r->source = source;
  r->shard = strdup(shard ? shard : stk__byte_source_name(source));
  r->name_capacity = 512;
  r->name = malloc(r->name_capacity);
  if (!r->shard || !r->name) {
    stk__tar_reader_free(r);
    return STK_ENOMEM;
  }
  *out = r;
  return STK_OK;
}

void stk__tar_reader_free(stk__tar_reader *r) {
  if (!r) return;
  free(r->shard);
  free(r->name);
  free(r->long_name);
  free(r);
}

static uint64_t padding_of(uint64_t size) { return (512 - size % 512) % 512; }

/* Reads one block. *end = 1 when the stream ended exactly on a block boundary. */
static stk_status read_block(stk__tar_reader *r, int *end, char *err, size_t err_size) {
  size_t done = 0;
  *end = 0;
  while (done < 512) {
    size_t got;
    stk_status st = stk__byte_source_read(r->source, r->block + done, 512 - done, &got, err, err_size);
    if (st != STK_OK) return st;
    if (got == 0) {
      if (done == 0) {
        *end = 1;
        return STK_OK;
      }
      stk__errorf(err, err_size, "shard %s is truncated: a header block ends at byte %llu after %zu of 512 bytes",
                  r->shard, (unsigned long long)stk__byte_source_offset(r->source), done);
      return STK_EIO;
    }
    done += got;
  }
  return STK_OK;
}

/* Reads a long-name or pax record's data (bounded) into a malloc'd, NUL-terminated buffer. */
static stk_status read_record(stk__tar_reader *r, uint64_t size, size_t limit, uint64_t at, char **out, char *err,
                              size_t err_size) {
  if (size > limit) {
    stk__errorf(err, err_size,
                "shard %s: header at byte %llu: an extended name/attribute record of %llu bytes "
                "exceeds the %zu-byte limit",
                r->shard, (unsigned long long)at, (unsigned long long)size, limit);
    return STK_EIO;
  }
  char *buf = malloc((size_t)size + 1);
  if (!buf) return STK_ENOMEM;
  stk_status st = stk__byte_source_read_full(r->source, buf, (size_t)size, err, err_size);
  if (st == STK_OK) st = stk__byte_source_skip(r->source, padding_of(size), err, err_size);
  if (st != STK_OK) {
    free(buf);
    return st;
  }
  buf[size] = '\0';
  *out = buf;
  return STK_OK;
}

static stk_status set_name(stk__tar_reader *r, const char *name) {
  size_t n = strlen(name) + 1;
  if (n > r->name_capacity) {
    char *bigger = realloc(r->name, n);
    if (!bigger) return STK_ENOMEM;
    r->name = bigger;
    r->name_capacity = n;
  }
  memcpy(r->name, name, n);
  return STK_OK;
}

/* A special record ('L', 'K', 'x', 'g'): consumes it. */
static stk_status read_special(stk__tar_reader *r, const stk__tar_header *h, uint64_t at, char *err, size_t err_size) {
  if (h->type == 'K' || h->type == 'g')
    return stk__byte_source_skip(r->source, h->size + padding_of(h->size), err, err_size);
  char *data = NULL;
  stk_status st =
      read_record(r, h->size, h->type == 'L' ? STK__TAR_MAX_NAME : STK__TAR_MAX_PAX, at, &data, err, err_size);
  if (st != STK_OK) return st;
  if (h->type == 'L') {
    free(r->long_name);
    r->long_name = data;
    return STK_OK;
  }
  char *path = NULL;
  char why[160];
  st = stk__tar_parse_pax(data, (size_t)h->size, &path, &r->pax_size, &r->has_pax_size, why, sizeof why);
  free(data);
  if (st == STK_EPARSE) {
    stk__errorf(err, err_size, "shard %s: pax header at byte %llu: %s", r->shard, (unsigned long long)at, why);
    return STK_EIO;
  }
  if (st != STK_OK) return st;
  if (path) {
    free(r->long_name);
    r->long_name = path;
  }
  return STK_OK;
}

stk_status stk__tar_next(stk__tar_reader *r, stk__tar_member *m, char *err, size_t err_size) {
  stk_status st = stk__byte_source_skip(r->source, r->data_left + r->padding, err, err_size);
  r->data_left = r->padding = 0;
  if (st != STK_OK) return st;
  uint64_t member_start = stk__byte_source_offset(r->source);
  for (;;) {
    uint64_t at = stk__byte_source_offset(r->source);
    int end;
    if ((st = read_block(r, &end, err, err_size)) != STK_OK) return st;
    if (end) { /* cut at a member boundary: what follows is lost, so it is not taken as the end */
      stk__errorf(err, err_size,
                  "shard %s is truncated: it ends at byte %llu without the tar end-of-archive blocks (the "
                  "members after that point are missing)",
                  r->shard, (unsigned long long)at);
      return STK_EIO;
    }
    stk__tar_header h;
    char why[200];
    if (stk__tar_parse_header(r->block, &h, why, sizeof why) != STK_OK) {
      stk__errorf(err, err_size, "shard %s: header at byte %llu: %s", r->shard, (unsigned long long)at, why);
      return STK_EIO;
    }
    if (h.is_end) return STK_EOF_EPOCH;
    if (h.type == 'L' || h.type == 'K' || h.type == 'x' || h.type == 'g') {
      if ((st = read_special(r, &h, at, err, err_size)) != STK_OK) return st;
      continue;
    }
    uint64_t size = r->has_pax_size ? r->pax_size : h.size;
    int regular = h.type == '0' || h.type == '\0' || h.type == '7';
    int has_data = !(h.type >= '1' && h.type <= '6');
    if (!regular) { /* directory, link, device, sparse, unknown: not a sample component */
      free(r->long_name);
      r->long_name = NULL;
      r->has_pax_size = 0;
      if (has_data && (st = stk__byte_source_skip(r->source, size + padding_of(size), err, err_size)) != STK_OK)
        return st;
      member_start = stk__byte_source_offset(r->source);
      continue;
    }
    st = set_name(r, r->long_name ? r->long_name : h.name);
    free(r->long_name);
    r->long_name = NULL;
    r->has_pax_size = 0;
    if (st != STK_OK) return st;
    m->name = r->name;
    m->size = size;
    m->type = '0';
    m->header_offset = member_start;
    m->data_offset = stk__byte_source_offset(r->source);
    r->data_left = size;
    r->padding = padding_of(size);
    return STK_OK;
  }
}

stk_status stk__tar_read_part(stk__tar_reader *r, void *buf, size_t size, char *err, size_t err_size) {
  if (size > r->data_left) {
    stk__errorf(err, err_size, "shard %s: member %s: %zu bytes asked, %llu left", r->shard, r->name, size,
                (unsigned long long)r->data_left);
    return STK_EINVAL;
  }
  uint64_t at = stk__byte_source_offset(r->source);
  stk_status st = stk__byte_source_read_full(r->source, buf, size, err, err_size);
  if (st != STK_OK) {
    char inner[512];
    snprintf(inner, sizeof inner, "%s", err && err_size ? err : "");
    stk__errorf(err, err_size, "shard %s: member %s (%llu bytes of data left at byte %llu): %s", r->shard, r->name,
                (unsigned long long)r->data_left, (unsigned long long)at, inner);
    r->data_left = 0;
    r->padding = 0;
    return st;
  }
  r->data_left -= size;
  if (r->data_left) return STK_OK;
  st = stk__byte_source_skip(r->source, r->padding, err, err_size);
  r->padding = 0;
  return st;
}

stk_status stk__tar_read_data(stk__tar_reader *r, void *buf, char *err, size_t err_size) {
  return stk__tar_read_part(r, buf, (size_t)r->data_left, err, err_size);
}
