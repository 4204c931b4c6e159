/* src/core/version.c: run-time version and build description. */
#include <stddef.h>
#include <stdio.h>

#include <jpeglib.h>

#include "stoker/version.h"

#define STK_STR2_(x) #x
#define STK_STR_(x)  STK_STR2_(x)

int stk_version(void) { return STK_VERSION; }

const char *stk_version_string(void) { return STK_VERSION_STRING; }

const char *stk_build_info(void) {
#if defined(STOKER_HAVE_CUDA)
  return "stoker " STK_VERSION_STRING " cuda=yes libjpeg-turbo=" STK_STR_(LIBJPEG_TURBO_VERSION);
#else
  return "stoker " STK_VERSION_STRING " cuda=no libjpeg-turbo=" STK_STR_(LIBJPEG_TURBO_VERSION);
#endif
}
