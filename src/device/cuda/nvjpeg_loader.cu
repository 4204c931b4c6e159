/* src/device/cuda/nvjpeg_loader.cu: dlopen()s nvJPEG and fills the one function table of
 * nvjpeg_api.h, once per process. A missing library or symbol is a message, never a crash.
 * Not a hot path (runs at operator init). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device/cuda/nvjpeg_api.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static stk__nvjpeg_api g_api;
static int g_loaded = 0;
static char g_error[512];

static void load_once(void) {
  static const char *const names[] = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"};
  void *lib = NULL;
  char tried[384] = "";
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      size_t used = strlen(tried);
      snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", names[i]);
    }
  }
  if (!lib) {
    snprintf(g_error, sizeof g_error, "nvJPEG could not be loaded (tried %s: %s)", tried, dlerror());
    return;
  }
  memset(&g_api, 0, sizeof g_api);
  g_api.library = lib;
#define STK_NVJPEG_SYM(field, symbol)                                                                   \
  do {                                                                                                  \
    *(void **)(&g_api.field) = dlsym(lib, symbol);                                                      \
    if (!g_api.field) {                                                                                 \
      snprintf(g_error, sizeof g_error, "nvJPEG was loaded but lacks %s (too old a version?)", symbol); \
      dlclose(lib);                                                                                     \
      return;                                                                                           \
    }                                                                                                   \
  } while (0)
  STK_NVJPEG_SYM(CreateEx, "nvjpegCreateEx");
  STK_NVJPEG_SYM(Destroy, "nvjpegDestroy");
  STK_NVJPEG_SYM(GetHardwareDecoderInfo, "nvjpegGetHardwareDecoderInfo");
  STK_NVJPEG_SYM(JpegStateCreate, "nvjpegJpegStateCreate");
  STK_NVJPEG_SYM(JpegStateDestroy, "nvjpegJpegStateDestroy");
  STK_NVJPEG_SYM(DecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize");
  STK_NVJPEG_SYM(DecodeBatched, "nvjpegDecodeBatched");
  STK_NVJPEG_SYM(BufferPinnedCreate, "nvjpegBufferPinnedCreate");
  STK_NVJPEG_SYM(BufferPinnedDestroy, "nvjpegBufferPinnedDestroy");
  STK_NVJPEG_SYM(BufferPinnedRetrieve, "nvjpegBufferPinnedRetrieve");
  STK_NVJPEG_SYM(BufferDeviceCreate, "nvjpegBufferDeviceCreate");
  STK_NVJPEG_SYM(BufferDeviceDestroy, "nvjpegBufferDeviceDestroy");
  STK_NVJPEG_SYM(StateAttachPinnedBuffer, "nvjpegStateAttachPinnedBuffer");
  STK_NVJPEG_SYM(StateAttachDeviceBuffer, "nvjpegStateAttachDeviceBuffer");
  STK_NVJPEG_SYM(JpegStreamCreate, "nvjpegJpegStreamCreate");
  STK_NVJPEG_SYM(JpegStreamDestroy, "nvjpegJpegStreamDestroy");
  STK_NVJPEG_SYM(JpegStreamParse, "nvjpegJpegStreamParse");
  STK_NVJPEG_SYM(DecodeParamsCreate, "nvjpegDecodeParamsCreate");
  STK_NVJPEG_SYM(DecodeParamsDestroy, "nvjpegDecodeParamsDestroy");
  STK_NVJPEG_SYM(DecodeParamsSetOutputFormat, "nvjpegDecodeParamsSetOutputFormat");
  STK_NVJPEG_SYM(DecodeParamsSetROI, "nvjpegDecodeParamsSetROI");
  STK_NVJPEG_SYM(DecoderCreate, "nvjpegDecoderCreate");
  STK_NVJPEG_SYM(DecoderDestroy, "nvjpegDecoderDestroy");
  STK_NVJPEG_SYM(DecoderJpegSupported, "nvjpegDecoderJpegSupported");
  STK_NVJPEG_SYM(DecoderStateCreate, "nvjpegDecoderStateCreate");
  STK_NVJPEG_SYM(DecodeJpegHost, "nvjpegDecodeJpegHost");
  STK_NVJPEG_SYM(DecodeJpegTransferToDevice, "nvjpegDecodeJpegTransferToDevice");
  STK_NVJPEG_SYM(DecodeJpegDevice, "nvjpegDecodeJpegDevice");
#undef STK_NVJPEG_SYM
  *(void **)(&g_api.DecodeBatchedEx) = dlsym(lib, "nvjpegDecodeBatchedEx");
  *(void **)(&g_api.DecodeBatchedPreAllocate) = dlsym(lib, "nvjpegDecodeBatchedPreAllocate");
  *(void **)(&g_api.SetDeviceMemoryPadding) = dlsym(lib, "nvjpegSetDeviceMemoryPadding");
  *(void **)(&g_api.SetPinnedMemoryPadding) = dlsym(lib, "nvjpegSetPinnedMemoryPadding");
  *(void **)(&g_api.CreateExV2) = dlsym(lib, "nvjpegCreateExV2");
  *(void **)(&g_api.BufferPinnedCreateV2) = dlsym(lib, "nvjpegBufferPinnedCreateV2");
  *(void **)(&g_api.BufferDeviceCreateV2) = dlsym(lib, "nvjpegBufferDeviceCreateV2");
  g_loaded = 1;
}

const stk__nvjpeg_api *stk__nvjpeg_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_api;
  if (err && err_size) snprintf(err, err_size, "%s", g_error);
  return NULL;
}

const char *stk__nvjpeg_status_name(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "NVJPEG_STATUS_UNKNOWN";
}
