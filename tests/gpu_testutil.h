/* tests/gpu_testutil.h: shared by the tests/test_gpu_*.c files: skip (exit 77, with the reason)
 * unless this build has CUDA and a CUDA device can be opened. Not on any hot path. */
#ifndef STOKER_GPU_TESTUTIL_H
#define STOKER_GPU_TESTUTIL_H
#include "core/gpu_backend.h"
#include "testutil.h"

static inline void gpu_test_require_device(int device_id) {
  char err[256] = "";
  if (!stk__gpu_built()) TEST_SKIP("this stoker was built without CUDA (-DSTOKER_CUDA=OFF or no nvcc)");
  if (stk__gpu_open(device_id, err, sizeof err) != STK_OK) {
    char reason[320];
    snprintf(reason, sizeof reason, "no CUDA device: %s", err);
    TEST_SKIP(reason);
  }
}
#endif
