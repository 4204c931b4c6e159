/* src/ops/video/video_dataset.h: the data-set side of readers.video, shared by its CPU (reader_video.c)
 * and GPU (src/ops/gpu/video_nvdec*.cu) implementations: listing the files (filenames / file_root /
 * file_list with optional start/end), indexing each file once at start-up (in parallel), cutting
 * them into sequences, and the order of the sequences per epoch (sharding, shuffling, padding --
 * delegated to readers.file's planner over the sequence list, so both readers share one rule).
 * Not a hot path except stk__video_dataset_plan (once per batch, O(batch)).
 *
 * Sequences of a file whose frames [begin, end) are usable: starts s = begin, begin + step, ...
 * while s + (sequence_length - 1) * stride < end (a full sequence); with pad_sequences also the
 * starts s < end whose sequence runs past the end (their missing frames are zeros, frame numbers
 * and timestamps -1).
 *
 * Thread contract: built and planned by one thread; stk__video_dataset_sequence/file are read-only
 * and safe from worker threads while no reset runs. */
#ifndef STOKER_OPS_CPU_VIDEO_DATASET_H
#define STOKER_OPS_CPU_VIDEO_DATASET_H

#include "ops/video/video_demux.h"

typedef struct stk__video_dataset_config {
  const char *file_root;  /* one subdirectory per class (labels: sorted index) */
  const char *file_list;  /* "path label [start [end]]" lines */
  char *const *filenames; /* with num_filenames (relative to file_root when given) */
  size_t num_filenames;
  const int64_t *labels; /* for filenames, or NULL: 0, 1, 2, ... */
  size_t num_labels;
  int file_list_frame_num; /* start/end in file_list are frame numbers (else seconds) */
  int sequence_length, step, stride;
  int pad_sequences;
  int skip_vfr_check;
  int skip_bad_files; /* a bad file becomes one sequence that fails when read */
  int random_shuffle;
  int64_t initial_fill;
  int shard_id, num_shards;
  int stick_to_shard, pad_last_batch;
  uint64_t seed;
  int batch_size;
  int threads; /* threads indexing the files at start-up */
} stk__video_dataset_config;

typedef struct stk__video_file {
  char *path;
  int32_t label;
  int has_range;                 /* file_list gave start (and maybe end) */
  double range_start, range_end; /* as written (frames or seconds); range_end NAN = to the end */
  int64_t begin, end;            /* usable frames [begin, end) */
  stk__video_index index;
  char *error;       /* why the file is unusable (skip_bad_files); NULL = good */
  stk_status status; /* with error: STK_ENOENT, STK_EIO or STK_EBADIMAGE */
} stk__video_file;

typedef struct stk__video_sequence {
  int32_t file;
  int32_t frames; /* real frames (< sequence_length when padded) */
  int64_t first;  /* first frame number */
} stk__video_sequence;

typedef struct stk__video_dataset stk__video_dataset;

STK_INTERNAL stk_status stk__video_dataset_new(const stk__video_dataset_config *config, stk__video_dataset **out,
                                               char *err, size_t err_size);
STK_INTERNAL void stk__video_dataset_free(stk__video_dataset *dataset);
STK_INTERNAL const stk__video_dataset_config *stk__video_dataset_config_of(const stk__video_dataset *dataset);
STK_INTERNAL int64_t stk__video_dataset_size(const stk__video_dataset *dataset); /* sequences */
STK_INTERNAL int64_t stk__video_dataset_num_files(const stk__video_dataset *dataset);
/* Borrowed, live as long as the dataset. */
STK_INTERNAL const stk__video_sequence *stk__video_dataset_sequence(const stk__video_dataset *dataset, int64_t i);
STK_INTERNAL const stk__video_file *stk__video_dataset_file(const stk__video_dataset *dataset, int64_t i);
/* Largest frame size over the good files (for buffer sizing). */
STK_INTERNAL void stk__video_dataset_max_size(const stk__video_dataset *dataset, int *width, int *height);

/* As stk__file_reader_plan/reset/meta (reader_file.h); plan->samples[k].file_index is the sequence
 * index, .label the sequence's file's label, .source its path. */
STK_INTERNAL stk_status stk__video_dataset_plan(stk__video_dataset *dataset, stk__batch_plan *plan);
STK_INTERNAL stk_status stk__video_dataset_reset(stk__video_dataset *dataset, uint64_t epoch);
STK_INTERNAL void stk__video_dataset_meta(const stk__video_dataset *dataset, uint64_t epoch, stk_reader_meta *out);

/* Reads readers.video's listing/sequence/order arguments from op (shared by the CPU and GPU
 * implementations). Checks ranges; messages name the argument. */
STK_INTERNAL stk_status stk__video_dataset_config_from_op(const stk__op *op, stk__video_dataset_config *out, char *err,
                                                          size_t err_size);

/* Reads dtype / image_type / normalized (video_decode_cpu.h's format) from op. */
struct stk__video_format;
STK_INTERNAL stk_status stk__video_format_from_op(const stk__op *op, struct stk__video_format *out, char *err,
                                                  size_t err_size);

#endif
