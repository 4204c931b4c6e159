/* src/core/ops_list.h: every operator schema compiled into the library, as an X-macro list.
 * Each symbol is a `const stk__op_schema` defined in the operator's file under src/ops/cpu/.
 * The registry (src/core/registry.c) and `stoker ops` list them in this order. */
#define STK_OPS_LIST(X)                                  \
  X(stk__op_readers_file)                                \
  X(stk__op_readers_webdataset)                          \
  X(stk__op_readers_numpy)                               \
  X(stk__op_decoders_image)                              \
  X(stk__op_decoders_image_random_crop)                  \
  X(stk__op_resize)                                      \
  X(stk__op_random_resized_crop)                         \
  X(stk__op_crop_mirror_normalize)                       \
  X(stk__op_random_coin_flip)                            \
  X(stk__op_cast)
