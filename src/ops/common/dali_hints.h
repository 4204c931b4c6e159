/* src/ops/common/dali_hints.h: schema rows for DALI's arguments about its own memory management,
 * prefetching and decoder internals. They are accepted so that DALI code runs unchanged; stoker
 * reads none of them (it sizes its buffers, read-ahead and decoder state itself, and results do
 * not depend on them). Spread inside an operator's argument table. Build time only. */
#ifndef STK_OPS_COMMON_DALI_HINTS_H
#define STK_OPS_COMMON_DALI_HINTS_H

#define STK__DALI_HINT_DOC "accepted for DALI compatibility; stoker sizes its buffers itself"

/* DALI's common reader arguments (every reader of stoker has these rows) */
#define STK__DALI_READER_HINT_ARGS                                                  \
  {"dont_use_mmap", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},               \
      {"lazy_init", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},               \
      {"prefetch_queue_depth", STK_ARG_INT, "1", 0, 0, STK__DALI_HINT_DOC},         \
      {"tensor_init_bytes", STK_ARG_INT, "1048576", 0, 0, STK__DALI_HINT_DOC},      \
  {                                                                                 \
    "skip_cached_images", STK_ARG_BOOL, "false", 0, 0,                              \
        "accepted for DALI compatibility; stoker has no decoder cache, so no sample " \
        "is ever skipped as cached"                                                 \
  }

/* the same, for readers without a read_ahead row of their own */
#define STK__DALI_READ_AHEAD_ARG {"read_ahead", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC}

/* DALI's image decoder arguments about nvJPEG/libjpeg-turbo internals */
#define STK__DALI_DECODER_HINT_ARGS                                                                          \
  {"use_fast_idct", STK_ARG_BOOL, "false", 0, 0,                                                           \
   "accepted for DALI compatibility; stoker's CPU decoder always uses libjpeg-turbo's accurate integer "   \
   "IDCT (JDCT_ISLOW)"},                                                                                     \
      {"memory_stats", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},                                    \
      {"preallocate_width_hint", STK_ARG_INT, "0", 0, 0, STK__DALI_HINT_DOC},                               \
      {"preallocate_height_hint", STK_ARG_INT, "0", 0, 0, STK__DALI_HINT_DOC},                              \
      {"device_memory_padding_jpeg2k", STK_ARG_INT, "0", 0, 0, STK__DALI_HINT_DOC},                         \
      {"host_memory_padding_jpeg2k", STK_ARG_INT, "0", 0, 0, STK__DALI_HINT_DOC},                           \
      {"use_chunk_allocator", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC},                             \
      {"affine", STK_ARG_BOOL, "true", 0, 0,                                                               \
       "accepted for DALI compatibility; stoker pins its decoder threads itself (pin_threads)"},          \
  {                                                                                                          \
    "split_stages", STK_ARG_BOOL, "false", 0, 0, STK__DALI_HINT_DOC                                          \
  }

#endif
