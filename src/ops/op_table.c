/* src/ops/op_table.c: THE operator table -- every operator compiled into the library, one row
 * each: {schema, cpu implementation, mixed implementation, gpu implementation}, in the order
 * `stoker ops` lists them; and the fusion pairs: {producer, consumer, fused implementation} for a
 * GPU producer whose only consumer is the GPU consumer (input 0). The registry
 * (src/core/registry.c) and the graph's fusion pass read these tables and name no operator.
 *
 * Adding an operator: its folder (src/ops/augment/<operator>/: schema + parameter parse, CPU
 * reference, CUDA kernel and test side by side; readers in src/ops/io, decoders in src/ops/decode),
 * its declarations in src/ops/op_impls.h, and one row here. Every symbol is referenced strongly, so a plain static link
 * of libstoker.a pulls every operator in. Mixed/GPU columns go through STK_DEVICE_IMPL: NULL in a
 * build without CUDA (src/ops/build_nocuda/op_device_impls.h). Build time only; read-only data. */
#include "ops/op_impls.h"
#include "op_device_impls.h"

const stk__op_entry stk__op_table[] = {
    {&stk__op_readers_file, &stk__cpu_impl_readers_file, NULL, NULL},
    {&stk__op_readers_webdataset, &stk__cpu_impl_readers_webdataset, NULL, NULL},
    {&stk__op_readers_numpy, &stk__cpu_impl_readers_numpy, NULL, NULL},
    {&stk__op_external_source, &stk__cpu_impl_external_source, NULL, STK_DEVICE_IMPL(stk__gpu_impl_external_source)},
    {&stk__op_readers_video, &stk__cpu_impl_readers_video, NULL, STK_DEVICE_IMPL(stk__gpu_impl_readers_video)},
    {&stk__op_decoders_image, &stk__cpu_impl_decoders_image, STK_DEVICE_IMPL(stk__gpu_impl_decoders_image), NULL},
    {&stk__op_decoders_image_random_crop, &stk__cpu_impl_decoders_image,
     STK_DEVICE_IMPL(stk__gpu_impl_decoders_image_random_crop), NULL},
    {&stk__op_resize, &stk__cpu_impl_resize, NULL, STK_DEVICE_IMPL(stk__gpu_impl_resize)},
    {&stk__op_random_resized_crop, &stk__cpu_impl_random_resized_crop, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_random_resized_crop)},
    {&stk__op_crop_mirror_normalize, &stk__cpu_impl_crop_mirror_normalize, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_crop_mirror_normalize)},
    {&stk__op_random_coin_flip, &stk__cpu_impl_random_coin_flip, NULL, NULL},
    {&stk__op_cast, &stk__cpu_impl_cast, NULL, NULL},
    {&stk__op_math_elementwise, &stk__cpu_impl_math_elementwise, NULL, STK_DEVICE_IMPL(stk__gpu_impl_math_elementwise)},
    {&stk__op_conditional_merge, &stk__cpu_impl_conditional_merge, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_conditional_merge)},
};
const int stk__op_table_count = (int)(sizeof stk__op_table / sizeof stk__op_table[0]);

const stk__op_fusion stk__op_fusions[] = {
    {&stk__op_resize, &stk__op_crop_mirror_normalize, STK_DEVICE_IMPL(stk__gpu_impl_fused_resize_cmn)},
    {&stk__op_random_resized_crop, &stk__op_crop_mirror_normalize, STK_DEVICE_IMPL(stk__gpu_impl_fused_resize_cmn)},
};
const int stk__op_fusions_count = (int)(sizeof stk__op_fusions / sizeof stk__op_fusions[0]);
