/* src/ops/io/reader_file_list.h: the listing side of readers.file -- which files make the data
 * set and their labels (file_root walk, file_list, files). Runs once at build; not a hot path.
 *
 * Bad listings are errors that name the path and line; what the walk refuses to follow (a
 * directory reached twice through symbolic links, e.g. a link to a parent) is skipped, each file
 * is listed once, and table->warning says so. Never opens anything but directories and regular
 * files (a FIFO named like a data file or a list never blocks the listing). */
#ifndef STOKER_OPS_CPU_READER_FILE_LIST_H
#define STOKER_OPS_CPU_READER_FILE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "ops/io/reader_file.h"

/* The longest line a file_list may have (a path of PATH_MAX bytes and a label fit many times). */
#define STK__FILE_LIST_MAX_LINE 65536

typedef struct stk__sample_table {
  char *arena; /* all paths, NUL-separated */
  size_t arena_size, arena_capacity;
  size_t *path_offset; /* per sample */
  int32_t *labels;     /* per sample */
  int64_t count, capacity;
  int64_t directories_skipped; /* reached again through a symbolic link (loops) */
  char warning[512];           /* "" or what the listing skipped, for the pipeline's warnings */
} stk__sample_table;

/* Lists the data set config describes into table (zeroed by the caller). Errors name the path,
 * line or argument in err. The table owns its memory: free it with stk__sample_table_free. */
STK_INTERNAL stk_status stk__sample_table_list(stk__sample_table *table, const stk__file_reader_config *config,
                                               char *err, size_t err_size);
STK_INTERNAL void stk__sample_table_free(stk__sample_table *table);

#endif
