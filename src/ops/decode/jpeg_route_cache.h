/* src/ops/decode/jpeg_route_cache.h: the automatic router's decisions kept on disk, so that every
 * process on this machine (and every machine sharing the directory) with the same key routes as
 * the first one did: same seed, same bytes across processes -- a checkpoint resumed in a new
 * process, a digest compared between runs, the ranks of one job -- without pinning
 * hw_decoder_load. The first decision written for a key wins; a process that decided otherwise
 * before reading it takes the kept one (its own is only applied after it looked).
 * One small file per key (route-<16 hex digits of the key's FNV-1a>) holding "HW CUDA TRIAL KEY\n"
 * (the verdict's split and the load the trial's arms ran at, jpeg_route_split.h: a later process
 * routes its trial batches with it too, so every batch matches),
 * written to a temporary file and linked into place, so readers never see half a file and two
 * writers never both win. STOKER_ROUTER_CACHE names the directory (default
 * $XDG_CACHE_HOME/stoker/router, else $HOME/.cache/stoker/router); "off" keeps decisions in the
 * process only. A directory that cannot be made or written is not an error: the decision then
 * lives in the process alone. Not on a hot path (once per pipeline and key). */
#ifndef STOKER_OPS_DECODE_JPEG_ROUTE_CACHE_H
#define STOKER_OPS_DECODE_JPEG_ROUTE_CACHE_H

#include <stddef.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cache directory (made if missing) into buf; 0 when off (STOKER_ROUTER_CACHE=off), when no
 * directory can be named (no HOME) or made. `setting` is STOKER_ROUTER_CACHE's value or NULL. */
STK_INTERNAL int stk__route_cache_dir(const char *setting, char *buf, size_t size);

/* A decision as kept: the verdict's split and the model's load the trial ran at. */
typedef struct stk__route_kept {
  double hw, cuda, trial;
} stk__route_kept;

/* A load as kept: to hundredths, as the file says it (round(load * 100) / 100, the same double
 * strtod gives for the file's text), so the process that decides routes with exactly the value the
 * ones that read it will (a position's route is floor((p+1)L) > floor(pL): 17 * 0.05 is not 0.85). */
STK_INTERNAL double stk__route_cache_load(double load);
/* Each load of d as kept (stk__route_cache_load). */
STK_INTERNAL void stk__route_kept_round(stk__route_kept *d);

/* 1 and *out when `line` (NUL-terminated) is exactly "HW CUDA TRIAL KEY\n" with every load a number
 * in [0, 1] and KEY exactly key; 0 otherwise (*out untouched). The file's parser. */
STK_INTERNAL int stk__route_kept_parse(const char *line, const char *key, stk__route_kept *out);

/* 1 and *out when a decision is kept for key in dir; 0 when none, unreadable, or a file for
 * another key. *path (may be NULL) receives the file's path. */
STK_INTERNAL int stk__route_cache_find(const char *dir, const char *key, stk__route_kept *out, char *path,
                                       size_t path_size);

/* Rounds *d (stk__route_cache_load) and keeps it for key unless a decision is already kept: then
 * *d becomes that one and *kept_before 1. A file that cannot be written leaves *d the process's. */
STK_INTERNAL void stk__route_cache_publish(const char *dir, const char *key, stk__route_kept *d, int *kept_before);

#ifdef __cplusplus
}
#endif
#endif
