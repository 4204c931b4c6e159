/* tests/test_guarded_open.c: the one guarded open (stk__open_regular, src/base/common.c) and the
 * bounded text readers on it (stk__line_reader and stk_read_file, src/base/text_file.c). A FIFO
 * without a writer, /dev/zero and a directory are refused at once with a message naming the path
 * and what it is; a write open accepts /dev/null but refuses a FIFO without a reader instead of
 * waiting for one; a line or a file over its bound is refused after reading about the bound, not
 * the whole thing; a NUL byte is refused; CRLF lines and a last line without '\n' are read. An
 * alarm fails the test if anything blocks. CPU only. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "base/text_file.h"
#include "stoker/pipeline.h"
#include "stoker/topology.h"
#include "case_list.h"
#include "testutil.h"

static char dir[512];
static char err[1024];

static const char *in_dir(const char *name) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static void write_file(const char *path, const char *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot create %s\n", path);
    exit(1);
  }
  fwrite(bytes, 1, n, f);
  fclose(f);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_guarded_open: an open or read blocked (alarm after 20 s)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

static void test_read_refuses_what_is_not_a_regular_file(void) {
  char fifo[1024];
  snprintf(fifo, sizeof fifo, "%s", in_dir("shard.tar"));
  CHECK(mkfifo(fifo, 0644) == 0);
  const char *paths[] = {fifo, "/dev/zero", dir};
  const char *kinds[] = {"a FIFO", "a character device", "a directory"};
  for (int k = 0; k < 3; k++) {
    err[0] = '\0';
    errno = 0;
    int fd = stk__open_regular(paths[k], O_RDONLY, "tar shard", err, sizeof err);
    CHECK_MSG(fd == -1, "%s opened", paths[k]);
    CHECK(errno == (k == 2 ? EISDIR : EINVAL));
    CHECK_MSG(strstr(err, "tar shard") && strstr(err, paths[k]) && strstr(err, kinds[k]), "%s", err);
    if (fd >= 0) close(fd);
  }
  remove(fifo);
}

static void test_read_opens_a_regular_file_blocking(void) {
  write_file(in_dir("plain.txt"), "abc", 3);
  int fd = stk__open_regular(in_dir("plain.txt"), O_RDONLY, NULL, err, sizeof err);
  CHECK_MSG(fd >= 0, "%s", err);
  if (fd < 0) return;
  CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
  CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  close(fd);
  errno = 0;
  CHECK(stk__open_regular(in_dir("missing"), O_RDONLY, "checkpoint", err, sizeof err) == -1);
  CHECK(stk__open_missing(errno));
  CHECK_MSG(strstr(err, "checkpoint") && strstr(err, "missing"), "%s", err);
}

/* A log may go to a character device; a FIFO with no reader would block a blocking open. */
static void test_write_accepts_streams_but_never_waits(void) {
  FILE *f = stk__fopen_regular("/dev/null", "w", "bad_files_log", err, sizeof err);
  CHECK_MSG(f != NULL, "%s", err);
  if (f) fclose(f);
  char fifo[1024];
  snprintf(fifo, sizeof fifo, "%s", in_dir("log.fifo"));
  CHECK(mkfifo(fifo, 0644) == 0);
  errno = 0;
  f = stk__fopen_regular(fifo, "a", "bad_files_log", err, sizeof err);
  CHECK(f == NULL);
  CHECK(errno == ENXIO);
  CHECK_MSG(strstr(err, fifo) && strstr(err, "no reader"), "%s", err);
  if (f) fclose(f);
  remove(fifo);
  CHECK(stk__fopen_regular(dir, "w", "bad_files_log", err, sizeof err) == NULL);
  CHECK_MSG(strstr(err, "directory"), "%s", err);
}

static void test_lines_read_crlf_and_unterminated(void) {
  const char text[] = "a.jpg 0\r\n\nb.jpg 1";
  write_file(in_dir("list.txt"), text, sizeof text - 1);
  stk__line_reader r;
  CHECK_MSG(stk__line_reader_open(&r, in_dir("list.txt"), "file_list", 64, 1024, err, sizeof err) == STK_OK, "%s", err);
  const char *want[] = {"a.jpg 0", "", "b.jpg 1"};
  char *line;
  size_t len;
  for (int i = 0; i < 3; i++) {
    CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_OK);
    CHECK_MSG(line && strcmp(line, want[i]) == 0 && len == strlen(want[i]), "line %d: %s", i, line ? line : "(end)");
  }
  CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_OK && line == NULL);
  stk__line_reader_close(&r);
}

/* One 8 MiB line: refused once the bound is passed, after reading about the bound (not 8 MiB). */
static void test_long_line_refused_while_reading(void) {
  size_t n = (size_t)8 << 20;
  char *big = malloc(n);
  CHECK(big != NULL);
  if (!big) return;
  memset(big, 'z', n);
  memcpy(big, "ok.jpg 1\n", 9);
  write_file(in_dir("long.txt"), big, n);
  free(big);
  stk__line_reader r;
  CHECK(stk__line_reader_open(&r, in_dir("long.txt"), "file_list", STK__LIST_MAX_LINE, STK__LIST_MAX_BYTES, err,
                              sizeof err) == STK_OK);
  char *line;
  size_t len;
  CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_OK && line);
  CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_EPARSE);
  CHECK_MSG(strstr(err, "long.txt") && strstr(err, "line 2") && strstr(err, "65536"), "%s", err);
  CHECK_MSG(r.bytes_read < 4 * STK__LIST_MAX_LINE, "read %llu bytes before refusing", (unsigned long long)r.bytes_read);
  stk__line_reader_close(&r);
}

static void test_total_size_and_nul_refused(void) {
  char many[4096];
  for (size_t i = 0; i < sizeof many; i++) many[i] = i % 8 == 7 ? '\n' : 'x';
  write_file(in_dir("many.txt"), many, sizeof many);
  stk__line_reader r;
  CHECK(stk__line_reader_open(&r, in_dir("many.txt"), "file_list", 64, 1000, err, sizeof err) == STK_OK);
  char *line;
  size_t len;
  stk_status st;
  int lines = 0;
  while ((st = stk__line_reader_next(&r, &line, &len, err, sizeof err)) == STK_OK && line) lines++;
  CHECK(st == STK_ERANGE);
  CHECK_MSG(strstr(err, "many.txt") && strstr(err, "1000 bytes"), "%s", err);
  stk__line_reader_close(&r);
  write_file(in_dir("nul.txt"), "a.npy\nb\0c.npy\n", 14);
  CHECK(stk__line_reader_open(&r, in_dir("nul.txt"), "file_list", 64, 1000, err, sizeof err) == STK_OK);
  CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_OK && line);
  CHECK(stk__line_reader_next(&r, &line, &len, err, sizeof err) == STK_EPARSE);
  CHECK_MSG(strstr(err, "line 2") && strstr(err, "NUL"), "%s", err);
  stk__line_reader_close(&r);
}

static void test_read_file_bounds(void) {
  char *text = NULL;
  size_t size = 0;
  CHECK(stk_read_file("/dev/zero", "pipeline file", 0, &text, NULL, err, sizeof err) == STK_EINVAL && !text);
  CHECK_MSG(strstr(err, "pipeline file /dev/zero is a character device"), "%s", err);
  CHECK(stk_read_file(dir, "checkpoint", 0, &text, NULL, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "is a directory"), "%s", err);
  char bytes[5000];
  memset(bytes, 'a', sizeof bytes);
  write_file(in_dir("text.txt"), bytes, sizeof bytes);
  CHECK(stk_read_file(in_dir("text.txt"), "checkpoint", 4999, &text, NULL, err, sizeof err) == STK_ERANGE);
  CHECK_MSG(strstr(err, "longer than 4999 bytes"), "%s", err);
  CHECK(stk_read_file(in_dir("text.txt"), "checkpoint", 5000, &text, NULL, err, sizeof err) == STK_OK);
  CHECK(text && strlen(text) == 5000);
  stk_free(text);
  write_file(in_dir("bin"), "a\0b", 3);
  CHECK(stk_read_file(in_dir("bin"), "checkpoint", 0, &text, NULL, err, sizeof err) == STK_EPARSE);
  CHECK(stk_read_file(in_dir("bin"), "image", 0, &text, &size, err, sizeof err) == STK_OK);
  CHECK(size == 3 && text && text[2] == 'b');
  stk_free(text);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_read_refuses_what_is_not_a_regular_file),
    STK_TEST_CASE(test_read_opens_a_regular_file_blocking),
    STK_TEST_CASE(test_write_accepts_streams_but_never_waits),
    STK_TEST_CASE(test_lines_read_crlf_and_unterminated),
    STK_TEST_CASE(test_long_line_refused_while_reading),
    STK_TEST_CASE(test_total_size_and_nul_refused),
    STK_TEST_CASE(test_read_file_bounds),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  char *tmp = stk_test_tmpdir("guarded_open");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  signal(SIGALRM, on_alarm);
  alarm(20);
  int rc = stk_test_run_cases("test_guarded_open", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(dir);
  return rc;
}
