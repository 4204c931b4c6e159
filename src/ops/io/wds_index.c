/* src/ops/io/wds_index.c: webdataset index files (see wds_index.h). Build time only. */
#include "ops/io/wds_index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/io/tar_stream.h"

static int parse_u64(const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end || errno || text[0] == '-') return 0;
  *out = v;
  return 1;
}

/* One sample line: the smallest data offset among its components. */
static int parse_sample_line(char *line, int fields, uint64_t *start) {
  int components = 0;
  uint64_t smallest = UINT64_MAX;
  char *save = NULL;
  char *tok = strtok_r(line, " \t\r\n", &save);
  while (tok) {
    char *offset = strtok_r(NULL, " \t\r\n", &save);
    char *size = strtok_r(NULL, " \t\r\n", &save);
    if (fields == 4 && !strtok_r(NULL, " \t\r\n", &save)) return 0;
    uint64_t o, s;
    if (!offset || !size || !parse_u64(offset, &o) || !parse_u64(size, &s)) return 0;
    if (o < smallest) smallest = o;
    components++;
    tok = strtok_r(NULL, " \t\r\n", &save);
  }
  if (!components) return 0;
  *start = smallest >= 512 ? smallest - 512 : 0;
  return 1;
}

stk_status stk__wds_index_load(const char *path, stk__wds_index *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  FILE *f = stk__fopen_regular(path, "r", "index", err, err_size); /* a FIFO or device: refused at once */
  if (!f) return stk__open_missing(errno) ? STK_ENOENT : STK_EIO;
  char *line = NULL;
  size_t cap = 0;
  stk_status st = STK_OK;
  long long n = -1;
  int fields = 4;
  char version[16] = "";
  if (getline(&line, &cap, f) < 0 || sscanf(line, "%15s %lld", version, &n) != 2 || n < 0 ||
      (strcmp(version, "v1.2") != 0 && strcmp(version, "v1.1") != 0)) {
    stk__errorf(err, err_size, "index %s line 1: expected \"v1.2 <samples>\" (DALI wds2idx format)", path);
    st = STK_EPARSE;
  }
  if (st == STK_OK && strcmp(version, "v1.1") == 0) fields = 3;
  if (st == STK_OK && !(out->sample_start = malloc(((size_t)n + 1) * sizeof *out->sample_start))) st = STK_ENOMEM;
  for (long long i = 0; st == STK_OK && i < n; i++) {
    if (getline(&line, &cap, f) < 0) {
      stk__errorf(err, err_size, "index %s: announces %lld samples but has %lld lines", path, n, i);
      st = STK_EPARSE;
    } else if (!parse_sample_line(line, fields, &out->sample_start[i])) {
      stk__errorf(err, err_size, "index %s line %lld: expected \"ext offset size%s\" per component", path, i + 2,
                  fields == 4 ? " name" : "");
      st = STK_EPARSE;
    }
  }
  free(line);
  fclose(f);
  if (st != STK_OK) {
    stk__wds_index_free(out);
    return st;
  }
  out->num_samples = n;
  return STK_OK;
}

void stk__wds_index_free(stk__wds_index *index) {
  free(index->sample_start);
  index->sample_start = NULL;
  index->num_samples = 0;
}

/* The member's key length (path up to the first dot of its last component). */
static size_t key_length(const char *name) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strchr(base, '.');
  return dot ? (size_t)(dot - name) : strlen(name);
}

stk_status stk__wds_index_write(const char *tar_path, const char *index_path, char *err, size_t err_size) {
  stk__byte_source *src = NULL;
  stk__tar_reader *tr = NULL;
  stk_status st = stk__byte_source_open(tar_path, 0, NULL, &src, err, err_size);
  if (st == STK_OK) st = stk__tar_reader_new(src, tar_path, &tr);
  char *tmp_path = NULL;
  FILE *body = st == STK_OK ? tmpfile() : NULL;
  if (st == STK_OK && !body) st = STK_EIO;
  int64_t samples = 0;
  char key[4096] = "";
  stk__tar_member m;
  while (st == STK_OK && (st = stk__tar_next(tr, &m, err, err_size)) == STK_OK) {
    size_t klen = key_length(m.name);
    const char *ext = m.name[klen] == '.' ? m.name + klen + 1 : "";
    int same = samples > 0 && strlen(key) == klen && memcmp(key, m.name, klen) == 0;
    if (!same) {
      if (samples > 0) fputc('\n', body);
      snprintf(key, sizeof key, "%.*s", (int)(klen < sizeof key - 1 ? klen : sizeof key - 1), m.name);
      samples++;
    } else {
      fputc(' ', body);
    }
    const char *base = strrchr(m.name, '/');
    fprintf(body, "%s %" PRIu64 " %" PRIu64 " %s", ext[0] ? ext : "-", m.data_offset, m.size, base ? base + 1 : m.name);
  }
  if (st == STK_EOF_EPOCH) st = STK_OK;
  if (st == STK_OK && samples > 0) fputc('\n', body);
  FILE *f = st == STK_OK ? fopen(index_path, "w") : NULL;
  if (st == STK_OK && !f) {
    stk__errorf(err, err_size, "cannot write index %s: %s", index_path, strerror(errno));
    st = STK_EIO;
  }
  if (f) {
    fprintf(f, "v1.2 %lld\n", (long long)samples);
    rewind(body);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, body)) > 0) fwrite(chunk, 1, n, f);
    if (fclose(f) != 0) st = STK_EIO;
  }
  if (body) fclose(body);
  free(tmp_path);
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);
  return st;
}
