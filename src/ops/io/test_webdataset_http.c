/* src/ops/io/test_webdataset_http.c: http:// shards against a real server on 127.0.0.1 started here
 * (tests/wds_http_server.py, Python's http.server with Range support), including a server that
 * drops the connection mid-shard, one that stalls mid-shard, one that stalls for ever, one that
 * ignores Range, a 404, a refused connection, error statuses (500, 503, 429), a close-delimited
 * body cut between tar members and a stop flag set during a stall. Every case is bounded in time: the stall cases
 * use a stall_timeout of about a second. Skips (77) when python3 is missing. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops/io/byte_source.h"
#include "wds_testutil.h"
#include "case_list.h"

static char dir[512];
static int port;

static void start_server(void) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "python3 %s --root %s/plain --port-file %s/port --log %s/requests.log --lifetime 120 --stall 30 "
           ">/dev/null 2>&1 & echo $! > %s/server.pid",
           stk_test_source_path("tests/wds_http_server.py"), dir, dir, dir, dir);
  if (system(cmd) != 0) TEST_SKIP("cannot start the test HTTP server");
  char path[1024];
  snprintf(path, sizeof path, "%s/port", dir);
  for (int i = 0; i < 200 && !port; i++) {
    FILE *f = fopen(path, "r");
    if (f) {
      if (fscanf(f, "%d", &port) != 1) port = 0;
      fclose(f);
    }
    if (!port) usleep(50 * 1000);
  }
  if (!port) TEST_SKIP("the test HTTP server did not start within 10 s");
}

static void stop_server(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/server.pid", dir);
  FILE *f = fopen(path, "r");
  int pid = 0;
  if (f && fscanf(f, "%d", &pid) == 1 && pid > 0) kill(pid, SIGTERM);
  if (f) fclose(f);
}

static uint8_t *read_local(const char *name, size_t *size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/plain/%s", dir, name);
  FILE *f = fopen(path, "rb");
  *size = 0;
  if (!f) return calloc(1, 1); /* the 404 case: no local twin */
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  rewind(f);
  uint8_t *data = malloc(*size);
  if (fread(data, 1, *size, f) != *size) *size = 0;
  fclose(f);
  return data;
}

/* Reads mode/name from `offset` to the end; compares with the local file. */
static stk_status fetch(const char *mode, const char *name, uint64_t offset, const stk__byte_source_options *o,
                        int *retries, char *err, size_t err_size) {
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/%s/%s", port, mode, name);
  size_t size;
  uint8_t *want = read_local(name, &size);
  uint8_t *got = malloc(size + 1);
  stk__byte_source *src;
  stk_status st = stk__byte_source_open(url, offset, o, &src, err, err_size);
  size_t total = 0, n = 1;
  while (st == STK_OK && n > 0 && total <= size - offset) {
    st = stk__byte_source_read(src, got + total, 7000 < size + 1 - total ? 7000 : size + 1 - total, &n, err, err_size);
    total += n;
  }
  if (st == STK_OK && (total != size - offset || memcmp(got, want + offset, total) != 0)) {
    snprintf(err, err_size, "%s/%s: %zu bytes differ from the file's %zu", mode, name, total, (size_t)(size - offset));
    st = STK_EINTERNAL;
  }
  if (retries) *retries = src ? stk__byte_source_retries(src) : 0;
  stk__byte_source_close(src);
  free(want);
  free(got);
  return st;
}

static void test_sources(void) {
  char err[1024];
  stk__byte_source_options o = stk__byte_source_options_default();
  o.stall_timeout_s = 1.0;
  o.retry_backoff_s = 0.05;
  o.buffer_bytes = 65536; /* smaller than a shard: the transfer pauses and resumes */
  int retries;
  CHECK_MSG(fetch("ok", "shard-003.tar", 0, &o, &retries, err, sizeof err) == STK_OK && retries == 0, "%s", err);
  CHECK_MSG(fetch("ok", "shard-003.tar", 1000, &o, &retries, err, sizeof err) == STK_OK, "%s", err);
  CHECK_MSG(fetch("drop", "shard-001.tar", 0, &o, &retries, err, sizeof err) == STK_OK && retries >= 1,
            "drop: %s (retries %d)", err, retries);
  double t0 = wds_now();
  CHECK_MSG(fetch("stall", "shard-002.tar", 0, &o, &retries, err, sizeof err) == STK_OK && retries >= 1,
            "stall: %s (retries %d)", err, retries);
  CHECK_MSG(wds_now() - t0 < 10, "stall recovered in %.1f s", wds_now() - t0);
  CHECK_MSG(fetch("norange", "shard-004.tar", 0, &o, &retries, err, sizeof err) == STK_OK && retries >= 1, "%s", err);
  o.max_retries = 2;
  t0 = wds_now();
  stk_status st = fetch("deadstall", "shard-005.tar", 0, &o, &retries, err, sizeof err);
  double dead = wds_now() - t0;
  CHECK_MSG(st == STK_EIO && strstr(err, "gave up") && strstr(err, "shard-005.tar") && strstr(err, "stall"), "%s", err);
  CHECK_MSG(dead < 10, "a dead server was given up on after %.1f s", dead);
  CHECK(fetch("ok", "no-such.tar", 0, &o, &retries, err, sizeof err) == STK_ENOENT && strstr(err, "404"));
  /* A refused connection: a port nobody listens on. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/ok/shard-000.tar", ntohs(a.sin_port));
  stk__byte_source *src;
  t0 = wds_now();
  st = stk__byte_source_open(url, 0, &o, &src, err, sizeof err);
  uint8_t b[16];
  size_t n;
  if (st == STK_OK) st = stk__byte_source_read(src, b, sizeof b, &n, err, sizeof err);
  stk__byte_source_close(src);
  CHECK_MSG(st == STK_EIO && strstr(err, "gave up") && wds_now() - t0 < 10, "%s", err);
  /* The log shows the resumes were Range requests. */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "grep -q '^drop shard-001.tar bytes=' %s/requests.log", dir);
  CHECK_MSG(system(cmd) == 0, "a dropped transfer resumes with a Range request");
}

/* 4 ranks over http, with dropping and stalling shards among them: every sample once. */
static void test_reader_over_http(void) {
  const char *modes[] = {"ok", "drop", "stall", "ok", "norange", "drop", "ok", "ok"};
  char *paths[8];
  for (int k = 0; k < 8; k++) {
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/%s/shard-%03d.tar?reader", port, modes[k], k);
    paths[k] = strdup(url);
  }
  int seen[188] = {0};
  int64_t total = 0;
  double t0 = wds_now();
  for (int rank = 0; rank < 4; rank++) {
    wds_case c = wds_case_default();
    c.paths = paths, c.num_paths = 8, c.shard_id = rank, c.num_shards = 4, c.batch_size = 6;
    c.random_shuffle = 1, c.initial_fill = 8, c.parallel_shards = 2, c.stall_timeout = 1.0;
    wds_epoch e;
    CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK, "rank %d: %s", rank, e.err);
    for (int64_t i = 0; i < e.count; i++)
      if (e.ids[i] >= 0 && e.ids[i] < 188) seen[e.ids[i]]++;
    total += e.count;
    wds_epoch_free(&e);
  }
  int once = 1;
  for (int i = 0; i < 188; i++) once &= seen[i] == 1;
  CHECK_MSG(once && total == 188, "%lld samples over http, each once: %d", (long long)total, once);
  double took = wds_now() - t0;
  printf("4 ranks over http (drops, a stall): %.2f s\n", took);
  CHECK_MSG(took > 0.9 && took < 20, "the stalled shard was waited for once (stall_timeout 1 s): %.2f s", took);
  /* A shard on a dead server: a clear error naming it, within the bound. */
  char dead[256];
  snprintf(dead, sizeof dead, "http://127.0.0.1:%d/deadstall/shard-006.tar", port);
  char *one[1] = {dead};
  wds_case c = wds_case_default();
  c.paths = one, c.num_paths = 1, c.stall_timeout = 0.5, c.http_retries = 1;
  wds_epoch e;
  t0 = wds_now();
  CHECK(wds_read_epoch(&c, 0, &e) == STK_EIO);
  CHECK_MSG(strstr(e.err, "shard-006.tar") && wds_now() - t0 < 10, "%s", e.err);
  wds_epoch_free(&e);
  for (int k = 0; k < 8; k++) free(paths[k]);
}

static void *set_after_half_a_second(void *flag) {
  usleep(500 * 1000);
  __atomic_store_n((volatile int *)flag, 1, __ATOMIC_RELAXED); /* as a signal handler would set it */
  return NULL;
}

/* Error statuses name themselves and the URL; a close-delimited body cut between members is a
 * truncated shard; a stop flag ends a wait on a stalled server within a fraction of a second. */
static void test_http_errors_and_stop(void) {
  char err[1024];
  stk__byte_source_options o = stk__byte_source_options_default();
  o.stall_timeout_s = 1.0, o.retry_backoff_s = 0.05, o.max_retries = 1;
  const char *codes[] = {"e503", "e500", "e429"};
  for (int k = 0; k < 3; k++) {
    stk_status st = fetch(codes[k], "shard-000.tar", 0, &o, NULL, err, sizeof err);
    CHECK_MSG(st == STK_EIO && strstr(err, codes[k] + 1) && strstr(err, "HTTP") && strstr(err, "shard-000.tar") &&
                  !strstr(err, "Failure writing"),
              "%s: %s", codes[k], err);
  }
  char url[256];
  char *one[1] = {url};
  wds_case c = wds_case_default();
  c.paths = one, c.num_paths = 1, c.ext1 = "cls", c.label_ext = "cls";
  wds_epoch e;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/close/full.tar", port);
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK && e.count == 8, "close-delimited, whole: %s", e.err);
  wds_epoch_free(&e);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/close/cut.tar", port);
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_EIO && strstr(e.err, "truncated"), "close-delimited, cut: %lld, %s",
            (long long)e.count, e.err);
  wds_epoch_free(&e);
  /* a 2 MiB member over a 1 MiB budget: refused by its declared size, the others delivered */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/ok/big.tar", port);
  c.host_budget = 1 << 20, c.skip_bad_files = 1;
  CHECK_MSG(wds_read_epoch(&c, 0, &e) == STK_OK && e.count == 2 && e.records == 1 &&
                strstr(e.record_names, "big.tar:dir/s00001"),
            "over the budget: %lld samples, %s", (long long)e.count, e.record_names);
  wds_epoch_free(&e);
  /* stop: a stalled transfer with 30 s of stall_timeout and 5 retries gives up at once */
  volatile int stop = 0;
  o.stop = &stop, o.stall_timeout_s = 30, o.max_retries = 5;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/deadstall/shard-005.tar?stop", port);
  stk__byte_source *src;
  pthread_t t;
  double t0 = wds_now();
  pthread_create(&t, NULL, set_after_half_a_second, (void *)&stop);
  stk_status st = stk__byte_source_open(url, 0, &o, &src, err, sizeof err);
  uint8_t buf[65536];
  size_t n = 1;
  while (st == STK_OK && n > 0) st = stk__byte_source_read(src, buf, sizeof buf, &n, err, sizeof err);
  stk__byte_source_close(src);
  pthread_join(t, NULL);
  double took = wds_now() - t0;
  CHECK_MSG(st == STK_ESHUTDOWN && took < 2.0, "stopped after %.2f s: %s (%s)", took, err, stk_status_name(st));
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_sources),
    STK_TEST_CASE(test_reader_over_http),
    STK_TEST_CASE(test_http_errors_and_stop),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  if (system("python3 -c 'import http.server, tarfile' >/dev/null 2>&1") != 0)
    TEST_SKIP("python3 (http.server, tarfile) is not installed");
  char *tmp = stk_test_tmpdir("webdataset_http");
  snprintf(dir, sizeof dir, "%s", tmp);
  free(tmp);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/plain && python3 %s --out %s/plain --shards 8 --base 20", dir,
           stk_test_source_path("tests/wds_make_shards.py"), dir);
  if (system(cmd) != 0) TEST_SKIP("cannot write test shards with python3");
  snprintf(cmd, sizeof cmd, "python3 %s --out %s/plain", stk_test_source_path("tests/wds_fault_shards.py"), dir);
  if (system(cmd) != 0) TEST_SKIP("cannot write test shards with python3");
  start_server();
  int rc = stk_test_run_selected("test_webdataset_http", cases, STK_TEST_COUNT(cases), argc, argv);
  stop_server();
  return rc ? rc : stk_test_finish("test_webdataset_http");
}
