/* tests/fuzz/fuzz_cpulist.c: the cpulist and hex-mask readers every sysfs/procfs value and
 * STOKER_AFFINITY_MASK goes through (stk_cpuset_parse, stk_cpuset_parse_mask): never a crash or
 * sanitizer report; a refusal names what is wrong; an accepted list formats and parses back to
 * the same set. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char text[4097];
  memcpy(text, data, size);
  text[size] = '\0';
  stk_cpuset set, again;
  char err[256] = "";
  if (stk_cpuset_parse(text, &set, err, sizeof err) == STK_OK) {
    char formatted[65536];
    if (stk_cpuset_format(&set, formatted, sizeof formatted) < sizeof formatted &&
        (stk_cpuset_parse(formatted, &again, err, sizeof err) != STK_OK || !stk_cpuset_equal(&set, &again)))
      __builtin_trap();
  } else if (!err[0]) {
    __builtin_trap();
  }
  err[0] = '\0';
  if (stk_cpuset_parse_mask(text, &set, err, sizeof err) != STK_OK && !err[0]) __builtin_trap();
  return 0;
}
