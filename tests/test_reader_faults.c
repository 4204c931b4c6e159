/* tests/test_reader_faults.c: readers.file against a hostile data folder (issue: never hang,
 * never list twice, bounded reads). A FIFO named x.jpg is refused as "not a regular file" at
 * once (it used to block open() forever); a FIFO or /dev/zero as file_list is refused before any
 * read; a file_list line longer than the bound is a clear error; a directory symbolic link to a
 * parent lists each file once and leaves a warning, and labels come from the class directory that
 * holds a file's real path. alarm() fails the test if anything blocks. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/io/reader_file.h"
#include "ops/io/reader_file_list.h"
#include "case_list.h"
#include "testutil.h"

static char err[1024];
static char root[512];

static void path_of(char *out, size_t size, const char *rel) { snprintf(out, size, "%s/%s", root, rel); }

static void make_file(const char *rel, const char *content) {
  char path[1024];
  path_of(path, sizeof path, rel);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot create %s\n", path);
    exit(1);
  }
  fputs(content, f);
  fclose(f);
}

static stk__file_reader_config config_for(const char *file_root) {
  stk__file_reader_config c = {0};
  c.file_root = file_root;
  c.initial_fill = 16;
  c.num_shards = 1;
  c.batch_size = 2;
  return c;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_reader_faults: a read blocked (alarm after 20 s)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* The FIFO is listed (it matches *.jpg) but reading it is an error that names it, at once. */
static void test_fifo_sample(void) {
  char path[1024];
  path_of(path, sizeof path, "data/cls/x.jpg");
  CHECK(mkfifo(path, 0644) == 0);
  char data[600];
  path_of(data, sizeof data, "data");
  stk__file_reader_config c = config_for(data);
  stk__file_reader *r = NULL;
  CHECK_MSG(stk__file_reader_new(&c, &r, err, sizeof err) == STK_OK, "%s", err);
  if (!r) return;
  stk__op op = {0};
  op.schema = &stk__op_readers_file;
  op.state = r;
  stk__tensor bytes = {0}, label = {0};
  stk__tensor *outs[2] = {&bytes, &label};
  stk__sample_plan sp = {0};
  char msg[512] = "";
  stk__sample_ctx ctx = {0};
  ctx.plan = &sp;
  ctx.err = msg, ctx.err_size = sizeof msg;
  int fifo_index = -1;
  for (int64_t i = 0; i < stk__file_reader_size(r); i++)
    if (strstr(stk__file_reader_path(r, i), "x.jpg")) fifo_index = (int)i;
  CHECK(fifo_index >= 0);
  sp.file_index = sp.sample_id = fifo_index;
  CHECK(stk__op_impl_find(&stk__op_readers_file, STK__DEV_CPU)->run_sample(&op, &ctx, NULL, outs) != STK_OK);
  CHECK_MSG(strstr(msg, "x.jpg") && strstr(msg, "not a regular file"), "%s", msg);
  stk__tensor_free(&bytes), stk__tensor_free(&label);
  stk__file_reader_free(r);
  remove(path);
}

static void test_file_list_not_regular(void) {
  char fifo[1024];
  path_of(fifo, sizeof fifo, "list.fifo");
  CHECK(mkfifo(fifo, 0644) == 0);
  const char *lists[] = {fifo, "/dev/zero"};
  for (int k = 0; k < 2; k++) {
    stk__file_reader_config c = config_for(NULL);
    c.file_list = lists[k];
    stk__file_reader *r = NULL;
    CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EINVAL);
    CHECK_MSG(strstr(err, lists[k]) && strstr(err, "not a regular file"), "%s", err);
  }
  remove(fifo);
}

static void test_file_list_long_line(void) {
  char list[1024];
  path_of(list, sizeof list, "long.txt");
  FILE *f = fopen(list, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs("data/cls/a.jpg 0\n", f);
  for (int i = 0; i < STK__FILE_LIST_MAX_LINE + 10; i++) fputc('z', f);
  fclose(f);
  stk__file_reader_config c = config_for(NULL);
  c.file_list = list;
  stk__file_reader *r = NULL;
  CHECK(stk__file_reader_new(&c, &r, err, sizeof err) == STK_EPARSE);
  CHECK_MSG(strstr(err, "line 2") && strstr(err, "longer than"), "%s", err);
}

/* data/cls/up -> .. : without loop detection the walk lists every file again at each level. */
static void test_symlink_loop(void) {
  char link_path[1024];
  path_of(link_path, sizeof link_path, "data/cls/up");
  CHECK(symlink("..", link_path) == 0);
  char data[600];
  path_of(data, sizeof data, "data");
  stk__file_reader_config c = config_for(data);
  stk__sample_table table = {0};
  CHECK_MSG(stk__sample_table_list(&table, &c, err, sizeof err) == STK_OK, "%s", err);
  CHECK_MSG(table.count == 2, "listed %lld files, expected 2", (long long)table.count);
  CHECK(table.directories_skipped >= 1);
  CHECK_MSG(strstr(table.warning, "symbolic link"), "%s", table.warning);
  stk__sample_table_free(&table);
  remove(link_path);
}

/* The label of each listed file by its name ("" when the file is not listed), from the table. */
static int label_of(const stk__sample_table *t, const char *rel, int *times) {
  int label = -1;
  *times = 0;
  for (int64_t i = 0; i < t->count; i++) {
    const char *p = t->arena + t->path_offset[i];
    size_t n = strlen(p), m = strlen(rel);
    if (n >= m && strcmp(p + n - m, rel) == 0 && (n == m || p[n - m - 1] == '/')) label = t->labels[i], (*times)++;
  }
  return label;
}

/* lab/a/up -> .. : class b's files were listed under a/up/b/ with a's label and b was then skipped
 * as already seen. Each file's label is its class directory's by real path, each listed once;
 * a/mine.jpg -> ../b/y.jpg is b's y.jpg; a link out of file_root keeps the class it hangs from; a
 * file in file_root itself reached through the link is no sample; a link loop ends. */
static void test_symlink_labels_by_real_path(void) {
  char path[1024], outside[1024];
  const char *dirs[] = {"lab", "lab/a", "lab/b", "lab/b/sub", "elsewhere"};
  for (int i = 0; i < 5; i++) path_of(path, sizeof path, dirs[i]), mkdir(path, 0755);
  make_file("lab/a/x.jpg", "1");
  make_file("lab/b/y.jpg", "2");
  make_file("lab/b/sub/z.jpg", "3");
  make_file("lab/stray.jpg", "4");
  make_file("elsewhere/far.jpg", "5");
  path_of(path, sizeof path, "lab/a/up");
  CHECK(symlink("..", path) == 0);
  path_of(path, sizeof path, "lab/a/mine.jpg");
  CHECK(symlink("../b/y.jpg", path) == 0);
  path_of(path, sizeof path, "lab/b/sub/loop");
  CHECK(symlink("../..", path) == 0);
  path_of(outside, sizeof outside, "elsewhere");
  path_of(path, sizeof path, "lab/b/ext");
  CHECK(symlink(outside, path) == 0);
  char lab[600];
  path_of(lab, sizeof lab, "lab");
  stk__file_reader_config c = config_for(lab);
  stk__sample_table t = {0};
  CHECK_MSG(stk__sample_table_list(&t, &c, err, sizeof err) == STK_OK, "%s", err);
  static const struct {
    const char *rel;
    int label;
  } want[] = {{"a/x.jpg", 0}, {"b/y.jpg", 1}, {"b/sub/z.jpg", 1}, {"b/ext/far.jpg", 1}};
  for (int i = 0; i < 4; i++) {
    int times, label = label_of(&t, want[i].rel, &times);
    CHECK_MSG(label == want[i].label && times == 1, "%s: label %d, listed %d times", want[i].rel, label, times);
  }
  CHECK_MSG(t.count == 4, "listed %lld files, expected 4", (long long)t.count);
  int times;
  CHECK(label_of(&t, "stray.jpg", &times) == -1);
  stk__sample_table_free(&t);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_fifo_sample),
    STK_TEST_CASE(test_file_list_not_regular),
    STK_TEST_CASE(test_file_list_long_line),
    STK_TEST_CASE(test_symlink_loop),
    STK_TEST_CASE(test_symlink_labels_by_real_path),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  signal(SIGALRM, on_alarm);
  alarm(20);
  char *dir = stk_test_tmpdir("reader-faults");
  if (!dir) TEST_SKIP("cannot make a temporary directory");
  snprintf(root, sizeof root, "%s", dir);
  char path[1024];
  path_of(path, sizeof path, "data"), mkdir(path, 0755);
  path_of(path, sizeof path, "data/cls"), mkdir(path, 0755);
  make_file("data/cls/a.jpg", "a");
  make_file("data/cls/b.jpg", "b");
  int rc = stk_test_run_selected("test_reader_faults", cases, STK_TEST_COUNT(cases), argc, argv);
  stk_test_remove_tree(dir);
  free(dir);
  return rc ? rc : stk_test_finish("test_reader_faults");
}
