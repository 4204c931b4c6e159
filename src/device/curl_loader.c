/* src/device/curl_loader.c: dlopen()s libcurl.so.4 and fills the table of curl_loader.h, once per
 * process. A missing library or symbol is a message, never a crash. Not a hot path. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device/curl_loader.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static stk__curl_api g_api;
static int g_loaded;
static char g_error[512];

static void load_once(void) {
  memset(&g_api, 0, sizeof g_api);
  const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"};
  void *lib = NULL;
  const char *name = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(name = names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g_error, sizeof g_error,
             "libcurl could not be loaded (%s); http:// and https:// shards need it: install libcurl4 "
             "(Debian/Ubuntu) or libcurl (RHEL)",
             dlerror());
    return;
  }
  struct {
    const char *symbol;
    void **slot;
  } table[] = {
      {"curl_global_init", (void **)&g_api.global_init},
      {"curl_easy_strerror", (void **)&g_api.easy_strerror},
      {"curl_easy_init", (void **)&g_api.easy_init},
      {"curl_easy_cleanup", (void **)&g_api.easy_cleanup},
      {"curl_easy_setopt", (void **)&g_api.easy_setopt},
      {"curl_easy_getinfo", (void **)&g_api.easy_getinfo},
      {"curl_easy_pause", (void **)&g_api.easy_pause},
      {"curl_multi_init", (void **)&g_api.multi_init},
      {"curl_multi_cleanup", (void **)&g_api.multi_cleanup},
      {"curl_multi_add_handle", (void **)&g_api.multi_add_handle},
      {"curl_multi_remove_handle", (void **)&g_api.multi_remove_handle},
      {"curl_multi_perform", (void **)&g_api.multi_perform},
      {"curl_multi_poll", (void **)&g_api.multi_poll},
      {"curl_multi_info_read", (void **)&g_api.multi_info_read},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    *table[i].slot = dlsym(lib, table[i].symbol);
    if (!*table[i].slot) {
      snprintf(g_error, sizeof g_error, "%s was loaded but lacks %s (libcurl older than 7.66?)", name,
               table[i].symbol);
      dlclose(lib);
      memset(&g_api, 0, sizeof g_api);
      return;
    }
  }
  g_api.library = lib;
  g_loaded = 1;
}

const stk__curl_api *stk__curl_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_api;
  if (err && err_size) snprintf(err, err_size, "%s", g_error);
  return NULL;
}

const stk__curl_api *stk__curl(void) { return &g_api; }
