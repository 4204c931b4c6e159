/* stoker/version.h: the version of the headers (compile time) and of the library (run time).
 * Thread contract: stk_version() and stk_version_string() are pure, safe from any thread. */
#ifndef STOKER_VERSION_H
#define STOKER_VERSION_H
#include "stoker/status.h"

#define STK_VERSION_MAJOR  0
#define STK_VERSION_MINOR  1
#define STK_VERSION_PATCH  0
#define STK_VERSION_STRING "0.1.0"
/* One integer that orders versions: major*10000 + minor*100 + patch. */
#define STK_VERSION (STK_VERSION_MAJOR * 10000 + STK_VERSION_MINOR * 100 + STK_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif
/* The library's STK_VERSION (may differ from the headers' when linked dynamically). */
STK_EXPORT int stk_version(void);
/* "0.1.0"; static storage. */
STK_EXPORT const char *stk_version_string(void);
/* A one-line description of how the library was built ("cuda=yes jpeg=libjpeg-turbo 2.1.5").
 * Static storage. */
STK_EXPORT const char *stk_build_info(void);
#ifdef __cplusplus
}
#endif
#endif
