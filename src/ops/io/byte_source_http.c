/* src/ops/io/byte_source_http.c: http:// and https:// shards through libcurl. Hot path: read.
 *
 * libcurl's multi interface is driven from read() itself: the write callback appends to a
 * bounded buffer (options.buffer_bytes) and pauses the transfer when it is full, so memory stays
 * bounded whatever the server's speed, and no thread of ours sits in libcurl.
 *
 * Failure handling (never a hang):
 *   - connect: CURLOPT_CONNECTTIMEOUT per attempt;
 *   - stall: while read() waits for bytes, no byte for stall_timeout_s ends the attempt (time the
 *     reader spends away from read() does not count: the transfer is paused then, not stalled);
 *   - drop: the connection ends before Content-Length (or curl reports a receive error);
 *   a stalled or dropped attempt is reopened at the next byte the reader needs with a Range
 *   request, after retry_backoff_s * 2^k, up to max_retries attempts in a row (progress resets
 *   the count). A server that ignores Range (200 instead of 206) is handled by dropping the bytes
 *   before the offset. 4xx answers are errors at once (404 = STK_ENOENT); 5xx, 408 and 429 are
 *   retried; every message names the URL and the status code.
 * Every wait (backoff, connect, a stalled transfer) polls the options' cancel and stop flags in
 * steps of 100 ms at most, and libcurl's progress callback aborts a transfer once either is set. */
#include "ops/io/byte_source_http.h"

#include "device/curl_loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct stk__http {
  char *url;
  stk__byte_source_options options;
  CURLM *multi;
  CURL *easy;
  uint8_t *buf; /* buffered bytes: [head, head + len) */
  size_t capacity, head, len;
  uint64_t pos;           /* stream offset of buf[head] (the next byte read() returns) */
  uint64_t attempt_start; /* offset this attempt's Range asked for */
  uint64_t drop;          /* bytes still to drop (server ignored Range) */
  int64_t total;          /* stream size when known, else -1 */
  int checked_status, paused, done;
  long http_status;
  CURLcode result;
  double last_byte_s;
  int retries_in_row, retries_total;
  char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;
static void curl_init_once(void) { curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* First bytes of an attempt: the status decides between keeping, dropping or failing. */
static int check_status(stk__http *h) {
  h->checked_status = 1;
  curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &h->http_status);
  if (h->http_status >= 400) return 0;
  curl_off_t length = -1;
  curl_easy_getinfo(h->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  if (h->http_status == 206) {
    if (length >= 0) h->total = (int64_t)(h->attempt_start + (uint64_t)length);
  } else { /* 200: the whole stream from byte 0 */
    h->drop = h->attempt_start;
    if (length >= 0) h->total = (int64_t)length;
  }
  return 1;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg) {
  stk__http *h = arg;
  size_t n = size * nmemb;
  if (!h->checked_status && !check_status(h)) return 0; /* aborts the transfer: error status */
  size_t skip = h->drop < n ? (size_t)h->drop : n;
  h->drop -= skip;
  if (skip == n) return n;
  size_t keep = n - skip;
  if (h->head + h->len + keep > h->capacity) {
    memmove(h->buf, h->buf + h->head, h->len);
    h->head = 0;
  }
  if (h->len + keep > h->capacity) {
    if (h->len > 0) {
      h->drop += skip; /* redelivered whole after the pause */
      h->paused = 1;
      return CURL_WRITEFUNC_PAUSE;
    }
    uint8_t *bigger = realloc(h->buf, keep); /* one chunk larger than the buffer: rare */
    if (!bigger) return 0;
    h->buf = bigger;
    h->capacity = keep;
  }
  memcpy(h->buf + h->head + h->len, data + skip, keep);
  h->len += keep;
  h->last_byte_s = now_s();
  h->retries_in_row = 0;
  return n;
}

/* libcurl's progress callback (every second at least, and while connecting): a cancelled or
 * stopped reader aborts the transfer at once, wherever libcurl is waiting. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  return stk__byte_source_cancelled(&((const stk__http *)arg)->options);
}

static void end_attempt(stk__http *h) {
  if (h->easy) {
    curl_multi_remove_handle(h->multi, h->easy);
    curl_easy_cleanup(h->easy);
    h->easy = NULL;
  }
}

/* Starts a transfer of the stream from byte h->pos. */
static stk_status start_attempt(stk__http *h, char *err, size_t err_size) {
  end_attempt(h);
  h->easy = curl_easy_init();
  if (!h->easy) {
    stk__errorf(err, err_size, "%s: curl_easy_init failed", h->url);
    return STK_ENOMEM;
  }
  h->attempt_start = h->pos;
  h->drop = 0;
  h->checked_status = h->paused = h->done = 0;
  h->http_status = 0;
  h->result = CURLE_OK;
  h->curl_err[0] = '\0';
  CURL *e = h->easy;
  curl_easy_setopt(e, CURLOPT_URL, h->url);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->curl_err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, h);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, 8L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->options.connect_timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "stoker");
  char range[32];
  snprintf(range, sizeof range, "%llu-", (unsigned long long)h->pos);
  if (h->pos) curl_easy_setopt(e, CURLOPT_RANGE, range); /* not RESUME_FROM: a 200 answer is handled here */
  if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
    stk__errorf(err, err_size, "%s: curl_multi_add_handle failed", h->url);
    return STK_EIO;
  }
  h->last_byte_s = now_s();
  return STK_OK;
}

stk_status stk__http_open(const char *url, uint64_t offset, const stk__byte_source_options *options, stk__http **out,
                          char *err, size_t err_size) {
  *out = NULL;
  char why[512];
  if (!stk__curl_load(why, sizeof why)) {
    stk__errorf(err, err_size, "%s: %s", url, why);
    return STK_EIO;
  }
  pthread_once(&curl_once, curl_init_once);
  if (curl_init_result != CURLE_OK) {
    stk__errorf(err, err_size, "%s: libcurl failed to initialise: %s", url, curl_easy_strerror(curl_init_result));
    return STK_EIO;
  }
  stk__http *h = calloc(1, sizeof *h);
  if (!h) return STK_ENOMEM;
  h->options = *options;
  if (h->options.buffer_bytes < 65536) h->options.buffer_bytes = 65536;
  h->capacity = h->options.buffer_bytes;
  h->url = strdup(url);
  h->buf = malloc(h->capacity);
  h->multi = curl_multi_init();
  h->pos = offset;
  h->total = -1;
  if (!h->url || !h->buf || !h->multi) {
    stk__http_close(h);
    return STK_ENOMEM;
  }
  stk_status st = start_attempt(h, err, err_size);
  if (st != STK_OK) {
    stk__http_close(h);
    return st;
  }
  *out = h;
  return STK_OK;
}

/* Sleeps `seconds` in 100 ms steps; 0 when cancelled. */
static int backoff_sleep(const stk__http *h, double seconds) {
  double end = now_s() + seconds;
  while (now_s() < end) {
    if (stk__byte_source_cancelled(&h->options)) return 0;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 1;
}

/* The attempt ended (or stalled) with no buffered byte left: EOF, retry, or an error. */
static stk_status after_attempt(stk__http *h, const char *why, int *again, char *err, size_t err_size) {
  *again = 0;
  if (h->http_status == 416 && h->total < 0 && h->pos > 0) h->total = (int64_t)h->pos; /* asked past the end */
  if (h->done && h->result == CURLE_OK && h->http_status < 400 && (h->total < 0 || (int64_t)h->pos >= h->total))
    return STK_OK; /* the end of the stream */
  if (h->http_status >= 400 && h->http_status < 500 && h->http_status != 408 && h->http_status != 429) {
    stk__errorf(err, err_size, "%s: HTTP %ld at byte %llu", h->url, h->http_status, (unsigned long long)h->pos);
    return h->http_status == 404 ? STK_ENOENT : STK_EIO;
  }
  if (h->retries_in_row >= h->options.max_retries) {
    char of[32] = "";
    if (h->total >= 0) snprintf(of, sizeof of, " of %lld", (long long)h->total);
    stk__errorf(err, err_size, "%s: %s at byte %llu%s; gave up after %d retries", h->url, why,
                (unsigned long long)h->pos, of, h->retries_in_row);
    return STK_EIO;
  }
  double wait = h->options.retry_backoff_s * (double)(1u << (h->retries_in_row < 5 ? h->retries_in_row : 5));
  h->retries_in_row++;
  h->retries_total++;
  if (!backoff_sleep(h, wait > 5.0 ? 5.0 : wait)) {
    stk__errorf(err, err_size, "%s: reading cancelled", h->url);
    return STK_ESHUTDOWN;
  }
  *again = 1;
  return start_attempt(h, err, err_size);
}

/* Drives the transfer until bytes are buffered or the attempt is over. */
static stk_status pump(stk__http *h, char *err, size_t err_size) {
  double wait_start = now_s();
  while (h->len == 0 && !h->done) {
    if (stk__byte_source_cancelled(&h->options)) {
      stk__errorf(err, err_size, "%s: reading cancelled", h->url);
      return STK_ESHUTDOWN;
    }
    int running = 0;
    curl_multi_perform(h->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
      if (msg->msg == CURLMSG_DONE) {
        h->done = 1;
        h->result = msg->data.result;
        if (!h->checked_status) curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &h->http_status);
      }
    }
    if (h->len > 0 || h->done) break;
    double since = h->last_byte_s > wait_start ? h->last_byte_s : wait_start;
    if (now_s() - since > h->options.stall_timeout_s) return STK_EOF_EPOCH; /* stalled: caller retries */
    curl_multi_poll(h->multi, NULL, 0, 100, NULL);
  }
  return STK_OK;
}

stk_status stk__http_read(stk__http *h, void *buf, size_t size, size_t *got, char *err, size_t err_size) {
  *got = 0;
  for (;;) {
    if (h->len > 0) {
      size_t n = size < h->len ? size : h->len;
      memcpy(buf, h->buf + h->head, n);
      h->head += n;
      h->len -= n;
      h->pos += n;
      if (h->len == 0) h->head = 0;
      if (h->paused && h->capacity - h->len >= h->capacity / 2) {
        h->paused = 0;
        curl_easy_pause(h->easy, CURLPAUSE_CONT);
      }
      *got = n;
      return STK_OK;
    }
    stk_status st = pump(h, err, err_size);
    if (st != STK_OK && st != STK_EOF_EPOCH) return st;
    if (h->len > 0) continue;
    char why[CURL_ERROR_SIZE + 64];
    if (st == STK_EOF_EPOCH)
      snprintf(why, sizeof why, "no data for %.1f s (stall_timeout)", h->options.stall_timeout_s);
    else if (h->http_status >= 400) /* before curl's error: the write callback's refusal reads as a write failure */
      snprintf(why, sizeof why, "HTTP %ld", h->http_status);
    else if (h->result == CURLE_ABORTED_BY_CALLBACK && stk__byte_source_cancelled(&h->options)) {
      stk__errorf(err, err_size, "%s: reading cancelled", h->url);
      return STK_ESHUTDOWN;
    } else if (h->result != CURLE_OK)
      snprintf(why, sizeof why, "%s", h->curl_err[0] ? h->curl_err : curl_easy_strerror(h->result));
    else snprintf(why, sizeof why, "the connection closed early");
    int again;
    st = after_attempt(h, why, &again, err, err_size);
    if (st != STK_OK || !again) return st;
  }
}

int stk__http_retries(const stk__http *h) { return h ? h->retries_total : 0; }
int64_t stk__http_total(const stk__http *h) { return h ? h->total : -1; }

void stk__http_close(stk__http *h) {
  if (!h) return;
  end_attempt(h);
  if (h->multi) curl_multi_cleanup(h->multi);
  free(h->buf);
  free(h->url);
  free(h);
}
