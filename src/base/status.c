/* src/base/status.c: stk_strerror()/stk_status_name(), generated from the one error table in
 * include/stoker/status.h. Not on a hot path. */
#include "stoker/status.h"

const char *stk_strerror(stk_status status) {
  switch (status) {
#define STK_STATUS_MSG_(name, value, msg) \
  case STK_##name:                        \
    return msg;
    STK_STATUS_MAP(STK_STATUS_MSG_)
#undef STK_STATUS_MSG_
    default:
      return "unknown status code";
  }
}

const char *stk_status_name(stk_status status) {
  switch (status) {
#define STK_STATUS_NAME_(name, value, msg) \
  case STK_##name:                         \
    return "STK_" #name;
    STK_STATUS_MAP(STK_STATUS_NAME_)
#undef STK_STATUS_NAME_
    default:
      return "STK_UNKNOWN";
  }
}
