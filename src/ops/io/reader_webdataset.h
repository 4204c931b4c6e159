/* src/ops/io/reader_webdataset.h: readers.webdataset's schema (listed in src/core/ops_list.h)
 * and the one query the engine and the tests need beyond the operator contract. */
#ifndef STOKER_OPS_CPU_READER_WEBDATASET_H
#define STOKER_OPS_CPU_READER_WEBDATASET_H

#include "core/op.h"

STK_INTERNAL extern const stk__op_schema stk__op_readers_webdataset;

/* Shard remainders and samples skipped under skip_bad_files since the reader was built (each
 * also reaches the executor as a skip record that run_sample fails, so the pipeline's
 * skipped_files counts it once delivered). Call from the thread that plans (the scheduler), or
 * when planning is paused. */
STK_INTERNAL int64_t stk__wds_reader_skipped(const stk__op *op);

#endif
