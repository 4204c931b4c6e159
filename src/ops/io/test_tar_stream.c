/* src/ops/io/test_tar_stream.c: the streaming tar reader and the byte sources it reads through.
 * Tars are made by hand here (ustar headers, GNU 'L' long names, pax 'x' paths, base-256 sizes,
 * directories, missing end blocks = truncated) and by the `tar` CLI (GNU and POSIX long names) when present;
 * truncated and garbage streams must fail with the shard name and the byte offset. Byte sources:
 * a local file at an offset, `pipe:` commands (output, a failing exit status, a stall bounded by
 * stall_timeout_s, close ending a command that never finishes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ops/io/byte_source.h"
#include "ops/io/tar_stream.h"
#include "case_list.h"
#include "testutil.h"

static char err[1024];

typedef struct buf {
  uint8_t *data;
  size_t size, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
  if (b->size + n > b->cap) {
    b->cap = (b->size + n) * 2 + 4096;
    b->data = realloc(b->data, b->cap);
  }
  memcpy(b->data + b->size, p, n);
  b->size += n;
}

static void pad(buf *b) {
  static const uint8_t zeros[512];
  if (b->size % 512) put(b, zeros, 512 - b->size % 512);
}

/* One ustar header block; base256 = write the size as GNU base-256. */
static void header(buf *b, const char *name, uint64_t size, char type, int base256) {
  uint8_t h[512] = {0};
  snprintf((char *)h, 100, "%s", name);
  memcpy(h + 100, "0000644", 8);
  memcpy(h + 108, "0000000", 8);
  memcpy(h + 116, "0000000", 8);
  if (base256) {
    h[124] = 0x80;
    for (int i = 0; i < 8; i++) h[135 - i] = (uint8_t)(size >> (8 * i));
  } else {
    char octal[32];
    snprintf(octal, sizeof octal, "%011llo", (unsigned long long)size);
    memcpy(h + 124, octal, 12);
  }
  memcpy(h + 136, "00000000000", 12);
  h[156] = (uint8_t)type;
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  put(b, h, 512);
}

static void member(buf *b, const char *name, const char *data, size_t size) {
  header(b, name, size, '0', 0);
  put(b, data, size);
  pad(b);
}

static void end_blocks(buf *b) {
  static const uint8_t zeros[1024];
  put(b, zeros, 1024);
}

/* Reads every member of `b`; names/sizes/first bytes into out (one line each). Returns the status. */
static stk_status list_tar(const buf *b, char *out, size_t out_size) {
  stk__byte_source *src;
  stk__tar_reader *tr;
  stk__byte_source_memory(b->data, b->size, "mem.tar", &src);
  stk__tar_reader_new(src, NULL, &tr);
  out[0] = '\0';
  stk_status st;
  stk__tar_member m;
  while ((st = stk__tar_next(tr, &m, err, sizeof err)) == STK_OK) {
    char data[64] = "";
    if (m.size < sizeof data) {
      if ((st = stk__tar_read_data(tr, data, err, sizeof err)) != STK_OK) break;
      data[m.size] = '\0';
    }
    size_t len = strlen(out);
    snprintf(out + len, out_size - len, "%s %llu %s|", m.name, (unsigned long long)m.size, data);
  }
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);
  return st == STK_EOF_EPOCH ? STK_OK : st;
}

static void test_handmade(void) {
  buf b = {0};
  member(&b, "s0.jpg", "JPEG0", 5);
  member(&b, "s0.cls", "3\n", 2);
  header(&b, "dir/", 0, '5', 0); /* directory: passed over */
  header(&b, "link", 0, '2', 0); /* symlink: passed over */
  char long_name[300];
  memset(long_name, 'n', sizeof long_name);
  memcpy(long_name + 290, "/s1.jpg", 8); /* 297 characters */
  header(&b, "././@LongLink", strlen(long_name) + 1, 'L', 0);
  put(&b, long_name, strlen(long_name) + 1);
  pad(&b);
  member(&b, "truncated-short-name", "LONG", 4);
  const char *pax = "29 path=pax/dir/s2.extra.jpg\n";
  header(&b, "PaxHeader/x", strlen(pax), 'x', 0);
  put(&b, pax, strlen(pax));
  pad(&b);
  member(&b, "short", "PAX", 3);
  header(&b, "big256.bin", 6, '0', 1); /* base-256 size */
  put(&b, "BASE25", 6);
  pad(&b);
  end_blocks(&b);
  char got[4096];
  CHECK_MSG(list_tar(&b, got, sizeof got) == STK_OK, "%s", err);
  char want[4096];
  snprintf(want, sizeof want, "s0.jpg 5 JPEG0|s0.cls 2 3\n|%s 4 LONG|pax/dir/s2.extra.jpg 3 PAX|big256.bin 6 BASE25|",
           long_name);
  CHECK_STR(got, want);

  /* Offsets: the first member's header at 0, data at 512; the second's header at 1024. */
  stk__byte_source *src;
  stk__tar_reader *tr;
  stk__byte_source_memory(b.data, b.size, "mem.tar", &src);
  stk__tar_reader_new(src, "offsets.tar", &tr);
  stk__tar_member m;
  CHECK(stk__tar_next(tr, &m, err, sizeof err) == STK_OK && m.header_offset == 0 && m.data_offset == 512);
  CHECK(stk__tar_next(tr, &m, err, sizeof err) == STK_OK && m.header_offset == 1024 && m.data_offset == 1536);
  CHECK(stk__tar_next(tr, &m, err, sizeof err) == STK_OK && m.header_offset == 2048 + 1024); /* after dir+link */
  stk__tar_reader_free(tr);
  stk__byte_source_close(src);

  /* No end blocks: a stream cut between members is truncated (the members after the cut are
   * lost), not a shorter archive; the members before the cut were read. */
  buf nb = {0};
  member(&nb, "a.txt", "A", 1);
  CHECK(list_tar(&nb, got, sizeof got) == STK_EIO);
  CHECK_STR(got, "a.txt 1 A|");
  CHECK_MSG(strstr(err, "truncated") && strstr(err, "end-of-archive") && strstr(err, "1024"), "%s", err);

  /* Truncated inside a member's data, then inside a header block. */
  buf t = {0};
  put(&t, b.data, 512 + 3);
  CHECK(list_tar(&t, got, sizeof got) == STK_EIO);
  CHECK_MSG(strstr(err, "mem.tar") && strstr(err, "s0.jpg") && strstr(err, "truncated"), "%s", err);
  t.size = 1024 + 100;
  memcpy(t.data, b.data, t.size);
  CHECK(list_tar(&t, got, sizeof got) == STK_EIO);
  CHECK_MSG(strstr(err, "mem.tar") && strstr(err, "1124") && strstr(err, "header block"), "%s", err);

  /* A corrupt second header: the checksum names byte 1024. */
  buf c = {0};
  put(&c, b.data, b.size);
  c.data[1024 + 10] ^= 0x55;
  CHECK(list_tar(&c, got, sizeof got) == STK_EIO);
  CHECK_MSG(strstr(err, "header at byte 1024") && strstr(err, "checksum"), "%s", err);

  /* Garbage from the first byte. */
  buf g = {0};
  uint8_t noise[2048];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
  put(&g, noise, sizeof noise);
  CHECK(list_tar(&g, got, sizeof got) == STK_EIO);
  CHECK_MSG(strstr(err, "header at byte 0"), "%s", err);

  /* A long-name record beyond the bound is refused, not allocated. */
  buf l = {0};
  header(&l, "././@LongLink", (uint64_t)STK__TAR_MAX_NAME + 1, 'L', 0);
  CHECK(list_tar(&l, got, sizeof got) == STK_EIO);
  CHECK_MSG(strstr(err, "limit"), "%s", err);
  free(b.data), free(nb.data), free(t.data), free(c.data), free(g.data), free(l.data);
}

static void test_pax_parser(void) {
  char *path;
  uint64_t size = 0;
  int has_size;
  const char *ok = "18 path=a/b/c.jpg\n11 size=42\n";
  CHECK(stk__tar_parse_pax(ok, strlen(ok), &path, &size, &has_size, err, sizeof err) == STK_OK);
  CHECK(path && strcmp(path, "a/b/c.jpg") == 0 && has_size && size == 42);
  free(path);
  const char *bad[] = {"99 path=x\n", "4 a\n", "10 pathx\n", "x path=a\n", "12 size=4x\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_MSG(stk__tar_parse_pax(bad[i], strlen(bad[i]), &path, &size, &has_size, err, sizeof err) == STK_EPARSE,
              "case %zu", i);
}

/* The tar CLI's own long names (GNU 'L' and POSIX pax), read back. */
static void test_tar_cli(const char *dir) {
  if (system("tar --version >/dev/null 2>&1") != 0) {
    printf("note: no tar CLI, its archives are not checked\n");
    return;
  }
  const char *formats[] = {"gnu", "posix"};
  for (int f = 0; f < 2; f++) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -rf t && mkdir -p t/%0150d && printf hello > t/%0150d/sample.with.dots.txt && "
             "tar --format=%s -cf cli_%s.tar t",
             dir, 7, 7, formats[f], formats[f]);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/cli_%s.tar", dir, formats[f]);
    stk__byte_source *src;
    stk__tar_reader *tr;
    CHECK_MSG(stk__byte_source_open(cmd, 0, NULL, &src, err, sizeof err) == STK_OK, "%s", err);
    stk__tar_reader_new(src, NULL, &tr);
    stk__tar_member m;
    CHECK_MSG(stk__tar_next(tr, &m, err, sizeof err) == STK_OK, "%s", err);
    char want[256];
    snprintf(want, sizeof want, "t/%0150d/sample.with.dots.txt", 7);
    CHECK_STR(m.name, want);
    char data[8] = "";
    CHECK(m.size == 5 && stk__tar_read_data(tr, data, err, sizeof err) == STK_OK && memcmp(data, "hello", 5) == 0);
    CHECK(stk__tar_next(tr, &m, err, sizeof err) == STK_EOF_EPOCH);
    stk__tar_reader_free(tr);
    stk__byte_source_close(src);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_sources(const char *dir) {
  char path[1024], loc[1200];
  snprintf(path, sizeof path, "%s/bytes.bin", dir);
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 100000; i++) fputc(i % 251, f);
  fclose(f);
  stk__byte_source *src;
  uint8_t data[16];
  CHECK(stk__byte_source_open(path, 1000, NULL, &src, err, sizeof err) == STK_OK);
  CHECK(stk__byte_source_read_full(src, data, 4, err, sizeof err) == STK_OK && data[0] == 1000 % 251);
  CHECK(stk__byte_source_skip(src, 98000, err, sizeof err) == STK_OK);
  CHECK(stk__byte_source_offset(src) == 99004);
  CHECK(stk__byte_source_skip(src, 5000, err, sizeof err) == STK_EIO && strstr(err, "truncated"));
  stk__byte_source_close(src);
  CHECK(stk__byte_source_open("/nonexistent/x.tar", 0, NULL, &src, err, sizeof err) == STK_ENOENT);
  CHECK(stk__byte_source_open("s3://bucket/x.tar", 0, NULL, &src, err, sizeof err) == STK_ENOTSUP);

  /* pipe: the command's output, from an offset. */
  snprintf(loc, sizeof loc, "pipe:cat %s", path);
  CHECK(stk__byte_source_open(loc, 99990, NULL, &src, err, sizeof err) == STK_OK);
  size_t total = 0, got;
  while (stk__byte_source_read(src, data, sizeof data, &got, err, sizeof err) == STK_OK && got) total += got;
  CHECK(total == 10 && data[got] == data[got]);
  stk__byte_source_close(src);

  /* A failing command is an error at its end, with the status. */
  CHECK(stk__byte_source_open("pipe:printf abc; exit 3", 0, NULL, &src, err, sizeof err) == STK_OK);
  stk_status st;
  while ((st = stk__byte_source_read(src, data, sizeof data, &got, err, sizeof err)) == STK_OK && got) {
  }
  CHECK_MSG(st == STK_EIO && strstr(err, "status 3"), "%s", err);
  stk__byte_source_close(src);

  /* A stalled command: an error after stall_timeout_s, not a hang; close ends the command. */
  stk__byte_source_options o = stk__byte_source_options_default();
  o.stall_timeout_s = 0.5;
  CHECK(stk__byte_source_open("pipe:printf x; exec sleep 30", 0, &o, &src, err, sizeof err) == STK_OK);
  double t0 = now_s();
  CHECK(stk__byte_source_read(src, data, 1, &got, err, sizeof err) == STK_OK && got == 1);
  st = stk__byte_source_read(src, data, 1, &got, err, sizeof err);
  double waited = now_s() - t0;
  CHECK_MSG(st == STK_EIO && strstr(err, "stall_timeout"), "%s", err);
  CHECK_MSG(waited > 0.4 && waited < 5.0, "waited %.2f s", waited);
  t0 = now_s();
  stk__byte_source_close(src);
  CHECK_MSG(now_s() - t0 < 3.0, "close took %.2f s", now_s() - t0);

  /* Cancel: a waiting read gives up at once. */
  int cancel = 1;
  o.stall_timeout_s = 30;
  o.cancel = &cancel;
  CHECK(stk__byte_source_open("pipe:exec sleep 30", 0, &o, &src, err, sizeof err) == STK_OK);
  t0 = now_s();
  CHECK(stk__byte_source_read(src, data, 1, &got, err, sizeof err) == STK_ESHUTDOWN);
  CHECK(now_s() - t0 < 2.0);
  stk__byte_source_close(src);
}

/* A local file's reads (small ones served from one larger pread, large ones straight into the
 * caller's buffer) and skips (no I/O) in a seeded mix give the file's bytes at every offset. */
static void test_file_reads(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/mixed.bin", dir);
  enum { SIZE = 300000 };
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < SIZE; i++) fputc((i * 7 + i / 251) & 255, f);
  fclose(f);
  stk__byte_source *src;
  CHECK(stk__byte_source_open(path, 777, NULL, &src, err, sizeof err) == STK_OK);
  uint64_t size = 0;
  CHECK(stk__byte_source_file_fd(src, &size) >= 0 && size == SIZE);
  static uint8_t data[20000];
  uint32_t rng = 12345;
  int ok = 1, steps = 0;
  while (ok && stk__byte_source_offset(src) + 20000 < SIZE) {
    rng = rng * 1103515245u + 12345u;
    size_t n = (rng >> 8) % 3 == 0 ? 1 + (rng >> 12) % 20000 : 1 + (rng >> 12) % 700;
    uint64_t at = stk__byte_source_offset(src);
    if ((rng >> 4) % 4 == 0) {
      ok = stk__byte_source_skip(src, n, err, sizeof err) == STK_OK && stk__byte_source_offset(src) == at + n;
    } else {
      ok = stk__byte_source_read_full(src, data, n, err, sizeof err) == STK_OK;
      for (size_t i = 0; ok && i < n; i++) ok = data[i] == (((at + i) * 7 + (at + i) / 251) & 255);
    }
    steps++;
  }
  CHECK_MSG(ok && steps > 20, "step %d: %s", steps, err);
  stk__byte_source_close(src);
  CHECK(stk__byte_source_open("pipe:true", 0, NULL, &src, err, sizeof err) == STK_OK);
  CHECK(stk__byte_source_file_fd(src, NULL) == -1); /* not a regular file: no descriptor to pread */
  stk__byte_source_close(src);
}

static char *tar_dir; /* this process's scratch directory */
static void tar_cli_archives_read_back(void) { test_tar_cli(tar_dir); }
static void byte_sources_read_back(void) { test_sources(tar_dir); }
static void local_file_reads_give_its_bytes(void) { test_file_reads(tar_dir); }

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_handmade),
    STK_TEST_CASE(test_pax_parser),
    STK_TEST_CASE(tar_cli_archives_read_back),
    STK_TEST_CASE(byte_sources_read_back),
    STK_TEST_CASE(local_file_reads_give_its_bytes),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  tar_dir = stk_test_tmpdir("tar_stream");
  int rc = stk_test_run_selected("test_tar_stream", cases, STK_TEST_COUNT(cases), argc, argv);
  free(tar_dir);
  return rc ? rc : stk_test_finish("test_tar_stream");
}
