/* src/ops/video/video_ffmpeg.c: dlopen()s FFmpeg's libavutil, libavcodec, libavformat and libswscale
 * by the SONAMEs of the headers built against, and fills the table of video_ffmpeg.h once per
 * process. A missing library or symbol is a message, never a crash. The system's library path is
 * searched (LD_LIBRARY_PATH included: a machine without FFmpeg can be given a directory of the
 * libraries and their dependencies that way). Not a hot path. */
#define STK__FFMPEG_NO_REDIRECT
#include "ops/video/video_ffmpeg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

stk__ffmpeg_api stk__ffmpeg;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static stk_status g_status = STK_ENOLIB;
static char g_error[512];

#define SONAME_(base, major) base ".so." AV_STRINGIFY(major)

static void load_once(void) {
  struct {
    const char *soname;
    void *handle;
  } libs[4] = {{SONAME_("libavutil", LIBAVUTIL_VERSION_MAJOR), NULL},
               {SONAME_("libavcodec", LIBAVCODEC_VERSION_MAJOR), NULL},
               {SONAME_("libavformat", LIBAVFORMAT_VERSION_MAJOR), NULL},
               {SONAME_("libswscale", LIBSWSCALE_VERSION_MAJOR), NULL}};
  for (int i = 0; i < 4; i++) {
    libs[i].handle = dlopen(libs[i].soname, RTLD_NOW | RTLD_LOCAL);
    if (!libs[i].handle) {
      snprintf(g_error, sizeof g_error,
               "readers.video needs FFmpeg's %s, which could not be loaded (%s); on Debian install libavformat59 "
               "libavcodec59 libswscale6 (scripts/install-deps.sh installs the development packages)",
               libs[i].soname, dlerror());
      return;
    }
  }
  void *avutil = libs[0].handle, *avcodec = libs[1].handle, *avformat = libs[2].handle, *swscale = libs[3].handle;
#define STK__FFMPEG_LOAD_(library, name)                                                                         \
  if (!(*(void **)&stk__ffmpeg.name = dlsym(library, #name))) {                                                  \
    snprintf(g_error, sizeof g_error, "FFmpeg's lib%s lacks %s (a different FFmpeg version?)", #library, #name); \
    return;                                                                                                      \
  }
  STK__FFMPEG_FUNCTIONS(STK__FFMPEG_LOAD_)
#undef STK__FFMPEG_LOAD_
  g_status = STK_OK; /* the libraries stay loaded for the process's life */
}

stk_status stk__ffmpeg_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_status != STK_OK && err && err_size) snprintf(err, err_size, "%s", g_error);
  return g_status;
}
