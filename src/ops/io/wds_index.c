/* src/ops/io/wds_index.c: webdataset index files (see wds_index.h). Build time only. */
#include "ops/io/wds_index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/io/tar_stream.h"

/* A line of an index file is at most this long (a sample of many components fits easily). */
#define MAX_LINE (1u << 20)
/* The shortest sample line: "e 0 0\n" (v1.1); a file of S bytes holds at most S / 6 samples. */
#define MIN_SAMPLE_LINE 6

static int parse_u64(const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end || errno || text[0] == '-' || text[0] == '+' || text[0] == ' ') return 0;
  *out = v;
  return 1;
}

/* Reads one line (without its '\n') into *line, bounded by MAX_LINE while reading. 1 = a line,
 * 0 = the end of the file, -1 = a line too long, -2 = out of memory. */
static int read_line(FILE *f, char **line, size_t *cap) {
  size_t n = 0;
  int c = EOF;
  while ((c = getc_unlocked(f)) != EOF && c != '\n') {
    if (n + 2 > *cap) {
      if (*cap >= MAX_LINE) return -1;
      size_t want = *cap ? *cap * 2 : 256;
      char *bigger = realloc(*line, want);
      if (!bigger) return -2;
      *line = bigger, *cap = want;
    }
    (*line)[n++] = (char)c;
  }
  if (c == EOF && n == 0) return 0;
  if (n + 1 > *cap) {
    char *bigger = realloc(*line, 16);
    if (!bigger) return -2;
    *line = bigger, *cap = 16;
  }
  (*line)[n] = '\0';
  return 1;
}

/* One sample line: the smallest data offset among its components (each one's offset + size must
 * be a 64-bit number: a size read from a file is never trusted to add up). */
static int parse_sample_line(char *line, int fields, uint64_t *start) {
  int components = 0;
  uint64_t smallest = UINT64_MAX;
  char *save = NULL;
  char *tok = strtok_r(line, " \t\r", &save);
  while (tok) {
    char *offset = strtok_r(NULL, " \t\r", &save);
    char *size = strtok_r(NULL, " \t\r", &save);
    if (fields == 4 && !strtok_r(NULL, " \t\r", &save)) return 0;
    uint64_t o, s, end;
    if (!offset || !size || !parse_u64(offset, &o) || !parse_u64(size, &s) || !stk__add_u64(o, s, &end) ||
        end > (uint64_t)INT64_MAX)
      return 0;
    if (o < smallest) smallest = o;
    components++;
    tok = strtok_r(NULL, " \t\r", &save);
  }
  if (!components) return 0;
  *start = smallest >= 512 ? smallest - 512 : 0;
  return 1;
}

static int blank(const char *line) {
  while (*line == ' ' || *line == '\t' || *line == '\r') line++;
  return *line == '\0';
}

/* Line 1: "v1.2 N" or "v1.1 N"; N is checked against the file's size before anything is
 * allocated for it (an index announcing 2^61 samples is a lie, not a malloc). */
static stk_status parse_first_line(const char *path, char *line, uint64_t file_size, uint64_t *n, int *fields,
                                   char *err, size_t err_size) {
  char *save = NULL, *version = strtok_r(line, " \t\r", &save), *count = strtok_r(NULL, " \t\r", &save);
  if (!version || !count || strtok_r(NULL, " \t\r", &save) || !parse_u64(count, n) ||
      (strcmp(version, "v1.2") != 0 && strcmp(version, "v1.1") != 0)) {
    stk__errorf(err, err_size, "index %s line 1: expected \"v1.2 <samples>\" (DALI wds2idx format)", path);
    return STK_EPARSE;
  }
  *fields = strcmp(version, "v1.1") == 0 ? 3 : 4;
  if (*n > file_size / MIN_SAMPLE_LINE) {
    stk__errorf(err, err_size, "index %s line 1: announces %llu samples, more than its %llu bytes can list", path,
                (unsigned long long)*n, (unsigned long long)file_size);
    return STK_EPARSE;
  }
  return STK_OK;
}

/* The sample lines after line 1: exactly n, in shard order (each sample after the one before). */
static stk_status parse_samples(const char *path, FILE *f, uint64_t n, int fields, uint64_t *starts, char *err,
                                size_t err_size) {
  char *line = NULL;
  size_t cap = 0;
  stk_status st = STK_OK;
  uint64_t i = 0, lineno = 1, previous = 0;
  for (int rc; st == STK_OK && (rc = read_line(f, &line, &cap)) != 0;) {
    lineno++;
    if (rc == -2) st = STK_ENOMEM;
    else if (rc == -1) {
      stk__errorf(err, err_size, "index %s line %llu: longer than %u bytes", path, (unsigned long long)lineno,
                  MAX_LINE);
      st = STK_EPARSE;
    } else if (i == n) {
      if (!blank(line)) {
        stk__errorf(err, err_size, "index %s line %llu: more sample lines than the %llu that line 1 announces", path,
                    (unsigned long long)lineno, (unsigned long long)n);
        st = STK_EPARSE;
      }
    } else if (!parse_sample_line(line, fields, &starts[i])) {
      stk__errorf(err, err_size, "index %s line %llu: expected \"ext offset size%s\" per component", path,
                  (unsigned long long)lineno, fields == 4 ? " name" : "");
      st = STK_EPARSE;
    } else if (i > 0 && starts[i] <= previous) {
      stk__errorf(err, err_size, "index %s line %llu: sample %llu starts at byte %llu, not after sample %llu's %llu",
                  path, (unsigned long long)lineno, (unsigned long long)i, (unsigned long long)starts[i],
                  (unsigned long long)(i - 1), (unsigned long long)previous);
      st = STK_EPARSE;
    } else {
      previous = starts[i++];
    }
  }
  if (st == STK_OK && i < n) {
    stk__errorf(err, err_size, "index %s: announces %llu samples but has %llu sample lines", path,
                (unsigned long long)n, (unsigned long long)i);
    st = STK_EPARSE;
  }
  free(line);
  return st;
}

stk_status stk__wds_index_parse(FILE *f, uint64_t file_size, const char *path, stk__wds_index *out, char *err,
                                size_t err_size) {
  memset(out, 0, sizeof *out);
  char *line = NULL;
  size_t cap = 0, bytes = 0;
  uint64_t n = 0;
  int fields = 4;
  int rc = read_line(f, &line, &cap);
  stk_status st = rc == -2 ? STK_ENOMEM : STK_OK;
  if (st == STK_OK && rc != 1) {
    stk__errorf(err, err_size, "index %s line 1: %s", path, rc == 0 ? "the file is empty" : "too long");
    st = STK_EPARSE;
  }
  if (st == STK_OK) st = parse_first_line(path, line, file_size, &n, &fields, err, err_size);
  free(line);
  if (st == STK_OK &&
      (!stk__mul_size((size_t)n + 1, sizeof *out->sample_start, &bytes) || !(out->sample_start = malloc(bytes))))
    st = STK_ENOMEM;
  if (st == STK_OK) st = parse_samples(path, f, n, fields, out->sample_start, err, err_size);
  if (st != STK_OK) {
    if (st == STK_ENOMEM) stk__errorf(err, err_size, "index %s: out of memory", path);
    stk__wds_index_free(out);
    return st;
  }
  out->num_samples = (int64_t)n;
  return STK_OK;
}

stk_status stk__wds_index_load(const char *path, stk__wds_index *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  int fd = stk__open_regular(path, O_RDONLY, "index", err, err_size); /* a FIFO named x.idx must not block */
  if (fd < 0) return stk__open_missing(errno) ? STK_ENOENT : STK_EIO;
  struct stat sb;
  FILE *f = fstat(fd, &sb) == 0 ? fdopen(fd, "r") : NULL;
  if (!f) {
    stk__errorf(err, err_size, "index %s: %s", path, strerror(errno));
    close(fd);
    return STK_EIO;
  }
  stk_status st = stk__wds_index_parse(f, (uint64_t)sb.st_size, path, out, err, err_size);
  fclose(f);
  return st;
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
