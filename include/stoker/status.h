/* stoker/status.h: the one error table. Every public call returns an stk_status.
 *
 * The codes are generated from STK_STATUS_MAP, an X-macro list: each entry is
 * (NAME, value, message). Codes only ever grow; detail about a failure (which file, which
 * operator, which sample) lives in the per-object last-error string
 * (stk_pipeline_last_error(), stk_topology_last_error()), never in new codes.
 *
 * Thread contract: stk_strerror() and stk_status_name() are pure and safe from any thread. */
#ifndef STOKER_STATUS_H
#define STOKER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(STOKER_BUILDING)
#define STK_EXPORT __attribute__((visibility("default")))
#else
#define STK_EXPORT
#endif

#define STK_STATUS_MAP(X)                                                      \
  X(OK, 0, "success")                                                          \
  X(EINVAL, 1, "invalid argument")                                             \
  X(ENOMEM, 2, "out of memory")                                                \
  X(EIO, 3, "input/output error")                                              \
  X(ENOENT, 4, "no such file or directory")                                    \
  X(EPARSE, 5, "malformed input text")                                         \
  X(ERANGE, 6, "value out of range")                                           \
  X(ENOTSUP, 7, "operation not supported here")                                \
  X(ENODEV, 8, "no such device")                                               \
  X(ESYS, 9, "system call failed")                                             \
  X(EBADIMAGE, 10, "corrupt, truncated or unsupported image")                  \
  X(ESTATE, 11, "call not allowed in the object's current state")              \
  X(EOF_EPOCH, 12, "end of epoch: call reset() to start the next one")         \
  X(ECUDA, 13, "CUDA runtime error")                                           \
  X(ENVJPEG, 14, "nvJPEG error")                                               \
  X(ENOLIB, 15, "a run-time library (nvJPEG, NVML, CUDA) could not be loaded") \
  X(EPLAN, 16, "no valid affinity plan for this GPU")                          \
  X(ESHUTDOWN, 17, "the pipeline is shutting down")                            \
  X(EINTERNAL, 18, "internal error (a bug in stoker)")

typedef enum stk_status {
#define STK_STATUS_ENUM_(name, value, msg) STK_##name = value,
  STK_STATUS_MAP(STK_STATUS_ENUM_)
#undef STK_STATUS_ENUM_
      STK_STATUS_COUNT_
} stk_status;

/* A human message for a status ("out of memory"); static storage, never NULL. */
STK_EXPORT const char *stk_strerror(stk_status status);
/* The code's name ("STK_ENOMEM"); static storage, never NULL ("STK_UNKNOWN" for bad codes). */
STK_EXPORT const char *stk_status_name(stk_status status);

#ifdef __cplusplus
}
#endif
#endif
