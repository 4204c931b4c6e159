/* src/device/curl_loader.h: libcurl loaded at run time (dlopen of libcurl.so.4), so the library,
 * the CLI and the Python wheel run on machines without libcurl and only http:// and https:// shards
 * need it. curl's headers are needed at build time only (Debian libcurl4-openssl-dev).
 *
 * The function table below holds the libcurl calls stoker makes. Code that uses libcurl includes
 * this header instead of <curl/curl.h> and calls stk__curl_load() once before its first curl call;
 * the curl_* names it then uses are this table's entries (the macros at the end), so the calling
 * code reads like plain libcurl code. A missing library or symbol is an error message, never a
 * crash. Thread contract: stk__curl_load() is safe from any thread (pthread_once); the table is
 * read-only once loaded. Not a hot path. */
#ifndef STOKER_DEVICE_CURL_LOADER_H
#define STOKER_DEVICE_CURL_LOADER_H

#include <stddef.h>

#define CURL_DISABLE_TYPECHECK 1 /* curl_easy_setopt/getinfo are table entries, not curl's macros */
#include <curl/curl.h>

typedef struct stk__curl_api {
  CURLcode (*global_init)(long flags);
  const char *(*easy_strerror)(CURLcode code);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *handle);
  CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
  CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
  CURLcode (*easy_pause)(CURL *handle, int bitmask);
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_cleanup)(CURLM *multi);
  CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
  CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
  CURLMcode (*multi_perform)(CURLM *multi, int *running);
  CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd extra_fds[], unsigned int extra_nfds, int timeout_ms,
                          int *numfds);
  CURLMsg *(*multi_info_read)(CURLM *multi, int *msgs_in_queue);
  void *library; /* the dlopen handle (kept for the life of the process) */
} stk__curl_api;

#ifdef __cplusplus
extern "C" {
#endif
/* Loads libcurl.so.4 (once per process) and returns its table, or NULL with a message in err
 * ("libcurl.so.4 could not be loaded: ...; install libcurl4 to read http:// shards"). */
const stk__curl_api *stk__curl_load(char *err, size_t err_size);
/* The loaded table (stk__curl_load must have succeeded first). */
const stk__curl_api *stk__curl(void);
#ifdef __cplusplus
}
#endif

#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init          (stk__curl()->global_init)
#define curl_easy_strerror        (stk__curl()->easy_strerror)
#define curl_easy_init            (stk__curl()->easy_init)
#define curl_easy_cleanup         (stk__curl()->easy_cleanup)
#define curl_easy_setopt          (stk__curl()->easy_setopt)
#define curl_easy_getinfo         (stk__curl()->easy_getinfo)
#define curl_easy_pause           (stk__curl()->easy_pause)
#define curl_multi_init           (stk__curl()->multi_init)
#define curl_multi_cleanup        (stk__curl()->multi_cleanup)
#define curl_multi_add_handle     (stk__curl()->multi_add_handle)
#define curl_multi_remove_handle  (stk__curl()->multi_remove_handle)
#define curl_multi_perform        (stk__curl()->multi_perform)
#define curl_multi_poll           (stk__curl()->multi_poll)
#define curl_multi_info_read      (stk__curl()->multi_info_read)
#endif
