/* src/ops/io/wds_index.h: reads a webdataset index file (DALI's wds2idx format) for
 * readers.webdataset's optional index_paths. Build time only (not a hot path).
 *
 * Format: the first line is "v1.2 N" (or "v1.1 N") -- N samples; then one line per sample, each a
 * run of components: "ext offset size name" for v1.2, "ext offset size" for v1.1, where offset is
 * the byte offset of the component's data in the tar and size its length. stoker needs from it
 * the sample count and where each sample starts; a sample's stream starts at the header block of
 * its first component (data offset - 512). When that guess does not land on a header (the member
 * had a long-name record), the reader streams the shard from byte 0 and skips to the sample. */
#ifndef STOKER_OPS_CPU_WDS_INDEX_H
#define STOKER_OPS_CPU_WDS_INDEX_H

#include <stdint.h>
#include <stdio.h>

#include "core/op.h"

typedef struct stk__wds_index {
  int64_t num_samples;
  uint64_t *sample_start; /* num_samples entries: byte where each sample's first header is expected */
} stk__wds_index;

/* Parses `path`; errors name the file and line. out->sample_start is malloc'd (stk__wds_index_free).
 * Every number is checked before use: the announced count against the file's size (nothing is
 * allocated for samples a file cannot list), each offset + size against 64 bits; the sample lines
 * must be exactly as many as announced and in shard order. A FIFO or device is refused. */
STK_INTERNAL stk_status stk__wds_index_load(const char *path, stk__wds_index *out, char *err, size_t err_size);
/* The same over an open stream of file_size bytes, named `path` in messages (the fuzz target). */
STK_INTERNAL stk_status stk__wds_index_parse(FILE *f, uint64_t file_size, const char *path, stk__wds_index *out,
                                             char *err, size_t err_size);
STK_INTERNAL void stk__wds_index_free(stk__wds_index *index);

/* Writes the index of the tar at `tar_path` (streamed once) to `index_path` in the v1.2 format
 * above, grouping members into samples as the reader does; used by `stoker datagen --shards` and
 * the tests. */
STK_INTERNAL stk_status stk__wds_index_write(const char *tar_path, const char *index_path, char *err, size_t err_size);

#endif
