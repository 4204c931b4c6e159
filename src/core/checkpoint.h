/* src/core/checkpoint.h: the build step of exact checkpoint/resume (src/core/checkpoint.c); the
 * public calls are in stoker/pipeline.h. Not a hot path. */
#ifndef STOKER_CORE_CHECKPOINT_H
#define STOKER_CORE_CHECKPOINT_H

#include "core/engine.h"

/* At build, after the operators' init and instead of the reader's reset to epoch 0 (pipeline.c):
 * checks a pending restore (pipe->restore_text) against the pipeline and positions the reader
 * (its seek: nothing skipped is read) and the executor's epoch there. Without one it only checks
 * that options.enable_checkpointing can be honoured. *restored = 0: nothing restored, the caller
 * resets the reader to epoch 0. Errors are in last_error, naming what differs. */
STK_INTERNAL stk_status stk__checkpoint_apply(stk_pipeline *pipe, int *restored);

#endif
