/* src/ops/io/byte_source_http.h: the http:// and https:// byte source behind byte_source.h
 * (libcurl's multi interface driven from read(), so no thread of its own). Internal to
 * byte_source.c; see byte_source.h for the guarantees (bounded waits, resume by Range). */
#ifndef STOKER_OPS_CPU_BYTE_SOURCE_HTTP_H
#define STOKER_OPS_CPU_BYTE_SOURCE_HTTP_H

#include "ops/io/byte_source.h"

typedef struct stk__http stk__http;

STK_INTERNAL stk_status stk__http_open(const char *url, uint64_t offset, const stk__byte_source_options *options,
                                       stk__http **out, char *err, size_t err_size);
STK_INTERNAL stk_status stk__http_read(stk__http *h, void *buf, size_t size, size_t *got, char *err, size_t err_size);
STK_INTERNAL int stk__http_retries(const stk__http *h);
/* The body's size once known (Content-Length or Content-Range), else -1. */
STK_INTERNAL int64_t stk__http_total(const stk__http *h);
STK_INTERNAL void stk__http_close(stk__http *h);

#endif
