/* src/device/nvcuvid_loader.c: dlopen()s the driver's NVDEC library (libnvcuvid.so.1) and the CUDA
 * driver API (libcuda.so.1) and fills the function table of nvcuvid_loader.h, once per process. A
 * missing library or symbol is a message, never a crash. Compiled in every build (no CUDA headers
 * needed). Not a hot path. */
#include "device/nvcuvid_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static stk__nvcuvid_api g_api;
static int g_loaded;
static char g_error[512];

static int load_symbol(void *lib, const char *library, const char *symbol, void **slot) {
  *slot = dlsym(lib, symbol);
  if (*slot) return 1;
  snprintf(g_error, sizeof g_error, "%s was loaded but lacks %s (a driver too old for NVDEC's 64-bit API?)", library,
           symbol);
  return 0;
}

static void load_once(void) {
  memset(&g_api, 0, sizeof g_api);
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    snprintf(g_error, sizeof g_error, "the CUDA driver (libcuda.so.1) could not be loaded: %s", dlerror());
    return;
  }
  void *cuvid = dlopen("libnvcuvid.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuvid) {
    snprintf(g_error, sizeof g_error,
             "the driver has no video decode library (libnvcuvid.so.1: %s); readers.video needs device=\"cpu\" here",
             dlerror());
    dlclose(cuda);
    return;
  }
  int ok = 1;
#define CUDA_SYM(field, symbol) ok = ok && load_symbol(cuda, "libcuda.so.1", symbol, (void **)&g_api.field)
#define CUVID_SYM(field)        ok = ok && load_symbol(cuvid, "libnvcuvid.so.1", #field, (void **)&g_api.field)
  CUDA_SYM(cuInit, "cuInit");
  CUDA_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  CUDA_SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  CUDA_SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
  CUDA_SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  CUDA_SYM(cuGetErrorString, "cuGetErrorString");
  CUVID_SYM(cuvidGetDecoderCaps);
  CUVID_SYM(cuvidCreateDecoder);
  CUVID_SYM(cuvidDestroyDecoder);
  CUVID_SYM(cuvidDecodePicture);
  CUVID_SYM(cuvidGetDecodeStatus);
  CUVID_SYM(cuvidMapVideoFrame64);
  CUVID_SYM(cuvidUnmapVideoFrame64);
  CUVID_SYM(cuvidCreateVideoParser);
  CUVID_SYM(cuvidParseVideoData);
  CUVID_SYM(cuvidDestroyVideoParser);
#undef CUDA_SYM
#undef CUVID_SYM
  if (ok && g_api.cuInit(0) != 0) {
    snprintf(g_error, sizeof g_error, "cuInit failed: no usable CUDA device for NVDEC");
    ok = 0;
  }
  if (!ok) {
    dlclose(cuvid);
    dlclose(cuda);
    return;
  }
  g_api.cuda_library = cuda;
  g_api.nvcuvid_library = cuvid;
  g_loaded = 1;
}

const stk__nvcuvid_api *stk__nvcuvid_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_api;
  if (err && err_size) snprintf(err, err_size, "%s", g_error);
  return NULL;
}
