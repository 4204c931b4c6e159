/* src/ops/build_cuda/op_device_impls.h: the operator table's view of the mixed/GPU
 * implementations in a build WITH CUDA: STK_DEVICE_IMPL(sym) is the implementation's address.
 * Only src/ops/op_table.c includes it; CMake puts this folder or src/ops/build_nocuda on its
 * include path (the one place the device choice is made). */
#define STK_DEVICE_IMPL(sym) (&(sym))
