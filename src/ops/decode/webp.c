/* src/ops/decode/webp.c: WebP (lossy and lossless, still images) through libwebp, loaded at run
 * time (dlopen of libwebp.so.7) behind the small function table below; Debian's libwebp-dev
 * provides the header at build time. An image with alpha is delivered RGBA (straight, not
 * premultiplied), one without RGB; animated WebP is refused (as in DALI, which reads the simple
 * format only). Hot path: stk__webp_decode per sample. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <webp/decode.h>

#include "ops/decode/image_format.h"

#define WEBP_FUNCTIONS(X) X(WebPGetFeaturesInternal) X(WebPDecodeRGBInto) X(WebPDecodeRGBAInto)

typedef struct webp_api {
#define WEBP_FIELD_(name) __typeof__(name) *name;
  WEBP_FUNCTIONS(WEBP_FIELD_)
#undef WEBP_FIELD_
} webp_api;

static webp_api g_webp;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_loaded;
static char g_error[400];

static void load_once(void) {
  const char *names[] = {"libwebp.so.7", "libwebp.so.6"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(g_error, sizeof g_error,
             "WebP decoding needs libwebp.so.7, which could not be loaded (%s); install libwebp7 (Debian/Ubuntu) "
             "or libwebp (RHEL)",
             dlerror());
    return;
  }
#define WEBP_LOAD_(name)                                                                    \
  if (!(*(void **)&g_webp.name = dlsym(lib, #name))) {                                      \
    snprintf(g_error, sizeof g_error, "libwebp was loaded but lacks %s (too old?)", #name); \
    dlclose(lib);                                                                           \
    return;                                                                                 \
  }
  WEBP_FUNCTIONS(WEBP_LOAD_)
#undef WEBP_LOAD_
  g_loaded = 1;
}

static const webp_api *webp_load(char *err, size_t err_size) {
  pthread_once(&g_once, load_once);
  if (g_loaded) return &g_webp;
  stk__errorf(err, err_size, "%s", g_error);
  return NULL;
}

static const char *status_text(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "truncated (not enough data)";
    default:
      return "error";
  }
}

stk_status stk__webp_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  const webp_api *a = webp_load(err, err_size);
  if (!a) return STK_ENOLIB;
  WebPBitstreamFeatures features;
  VP8StatusCode st = a->WebPGetFeaturesInternal(data, size, &features, WEBP_DECODER_ABI_VERSION);
  if (st != VP8_STATUS_OK) {
    stk__errorf(err, err_size, "corrupt WebP: %s", status_text(st));
    return STK_EBADIMAGE;
  }
  if (features.has_animation) {
    stk__errorf(err, err_size, "animated WebP is not supported (still images only)");
    return STK_EBADIMAGE;
  }
  info->width = features.width;
  info->height = features.height;
  info->channels = features.has_alpha ? 4 : 3;
  info->depth = 8;
  return STK_OK;
}

stk_status stk__webp_decode(const uint8_t *data, size_t size, const stk__image_info *info, uint8_t *dst, char *err,
                            size_t err_size) {
  const webp_api *a = webp_load(err, err_size);
  if (!a) return STK_ENOLIB;
  const int stride = info->width * info->channels;
  const size_t bytes = (size_t)stride * (size_t)info->height;
  uint8_t *done = info->channels == 4 ? a->WebPDecodeRGBAInto(data, size, dst, bytes, stride)
                                      : a->WebPDecodeRGBInto(data, size, dst, bytes, stride);
  if (!done) {
    /* the features again, for the reason (the decode calls only say that it failed) */
    WebPBitstreamFeatures features;
    VP8StatusCode st = a->WebPGetFeaturesInternal(data, size, &features, WEBP_DECODER_ABI_VERSION);
    stk__errorf(err, err_size, "corrupt WebP: %s",
                st == VP8_STATUS_OK ? "the image data do not decode" : status_text(st));
    return STK_EBADIMAGE;
  }
  return STK_OK;
}
