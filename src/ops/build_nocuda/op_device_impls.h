/* src/ops/build_nocuda/op_device_impls.h: the operator table's view of the mixed/GPU
 * implementations in a build WITHOUT CUDA: there are none, so STK_DEVICE_IMPL(sym) is NULL and
 * the table refers to no symbol that is absent. Only src/ops/op_table.c includes it; CMake puts
 * this folder or src/ops/build_cuda on its include path (the one place the device choice is made). */
#define STK_DEVICE_IMPL(sym) NULL
