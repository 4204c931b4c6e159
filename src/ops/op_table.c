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
    {&stk__op_decoders_image_crop, &stk__cpu_impl_decoders_image_crop,
     STK_DEVICE_IMPL(stk__gpu_impl_decoders_image_crop), NULL},
    {&stk__op_decoders_image_slice, &stk__cpu_impl_decoders_image_slice,
     STK_DEVICE_IMPL(stk__gpu_impl_decoders_image_slice), NULL},
    {&stk__op_peek_image_shape, &stk__cpu_impl_peek_image_shape, NULL, NULL},
    {&stk__op_io_file_read, &stk__cpu_impl_io_file_read, NULL, NULL},
    {&stk__op_resize, &stk__cpu_impl_resize, NULL, STK_DEVICE_IMPL(stk__gpu_impl_resize)},
    {&stk__op_random_resized_crop, &stk__cpu_impl_random_resized_crop, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_random_resized_crop)},
    {&stk__op_crop_mirror_normalize, &stk__cpu_impl_crop_mirror_normalize, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_crop_mirror_normalize)},
    {&stk__op_random_coin_flip, &stk__cpu_impl_random_coin_flip, NULL, NULL},
    {&stk__op_cast, &stk__cpu_impl_cast, NULL, STK_DEVICE_IMPL(stk__gpu_impl_cast)},
    /* Geometry (src/ops/augment/{flip,transpose,slice,pad,...}; the shared frame ops/common/nd_*). */
    {&stk__op_flip, &stk__cpu_impl_flip, NULL, STK_DEVICE_IMPL(stk__gpu_impl_flip)},
    {&stk__op_transpose, &stk__cpu_impl_transpose, NULL, STK_DEVICE_IMPL(stk__gpu_impl_transpose)},
    {&stk__op_crop, &stk__cpu_impl_crop, NULL, STK_DEVICE_IMPL(stk__gpu_impl_crop)},
    {&stk__op_slice, &stk__cpu_impl_slice, NULL, STK_DEVICE_IMPL(stk__gpu_impl_slice)},
    {&stk__op_pad, &stk__cpu_impl_pad, NULL, STK_DEVICE_IMPL(stk__gpu_impl_pad)},
    {&stk__op_paste, &stk__cpu_impl_paste, NULL, STK_DEVICE_IMPL(stk__gpu_impl_paste)},
    {&stk__op_erase, &stk__cpu_impl_erase, NULL, STK_DEVICE_IMPL(stk__gpu_impl_erase)},
    {&stk__op_reshape, &stk__cpu_impl_reshape, NULL, STK_DEVICE_IMPL(stk__gpu_impl_reshape)},
    {&stk__op_squeeze, &stk__cpu_impl_squeeze, NULL, STK_DEVICE_IMPL(stk__gpu_impl_squeeze)},
    {&stk__op_expand_dims, &stk__cpu_impl_expand_dims, NULL, STK_DEVICE_IMPL(stk__gpu_impl_expand_dims)},
    {&stk__op_cat, &stk__cpu_impl_cat, NULL, STK_DEVICE_IMPL(stk__gpu_impl_cat)},
    {&stk__op_stack, &stk__cpu_impl_stack, NULL, STK_DEVICE_IMPL(stk__gpu_impl_stack)},
    {&stk__op_rotate, &stk__cpu_impl_rotate, NULL, STK_DEVICE_IMPL(stk__gpu_impl_rotate)},
    {&stk__op_warp_affine, &stk__cpu_impl_warp_affine, NULL, STK_DEVICE_IMPL(stk__gpu_impl_warp_affine)},
    {&stk__op_transforms_rotation, &stk__cpu_impl_transforms_rotation, NULL, NULL},
    {&stk__op_transforms_scale, &stk__cpu_impl_transforms_scale, NULL, NULL},
    {&stk__op_transforms_translation, &stk__cpu_impl_transforms_translation, NULL, NULL},
    {&stk__op_transforms_shear, &stk__cpu_impl_transforms_shear, NULL, NULL},
    {&stk__op_transforms_crop, &stk__cpu_impl_transforms_crop, NULL, NULL},
    {&stk__op_transforms_combine, &stk__cpu_impl_transforms_combine, NULL, NULL},
    {&stk__op_resize_crop_mirror, &stk__cpu_impl_resize_crop_mirror, NULL,
     STK_DEVICE_IMPL(stk__gpu_impl_resize_crop_mirror)},
    /* End of geometry. */
    /* Random numbers, colour and noise (src/ops/augment/{random,colour,noise}). */
    {&stk__op_random_uniform, &stk__cpu_impl_random_uniform, NULL, NULL},
    {&stk__op_random_normal, &stk__cpu_impl_random_normal, NULL, NULL},
    {&stk__op_random_beta, &stk__cpu_impl_random_beta, NULL, NULL},
    {&stk__op_random_choice, &stk__cpu_impl_random_choice, NULL, NULL},
    {&stk__op_brightness, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_contrast, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_brightness_contrast, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_hue, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_saturation, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_hsv, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_color_twist, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_color_space_conversion, &stk__cpu_impl_colour, NULL, STK_DEVICE_IMPL(stk__gpu_impl_colour)},
    {&stk__op_noise_gaussian, &stk__cpu_impl_noise, NULL, STK_DEVICE_IMPL(stk__gpu_impl_noise)},
    {&stk__op_noise_shot, &stk__cpu_impl_noise, NULL, STK_DEVICE_IMPL(stk__gpu_impl_noise)},
    {&stk__op_noise_salt_and_pepper, &stk__cpu_impl_noise, NULL, STK_DEVICE_IMPL(stk__gpu_impl_noise)},
    /* normalize, one_hot, constant, gaussian_blur, jitter (src/ops/augment/<operator>/). */
    {&stk__op_normalize, &stk__cpu_impl_normalize, NULL, STK_DEVICE_IMPL(stk__gpu_impl_normalize)},
    {&stk__op_gaussian_blur, &stk__cpu_impl_gaussian_blur, NULL, STK_DEVICE_IMPL(stk__gpu_impl_gaussian_blur)},
    {&stk__op_one_hot, &stk__cpu_impl_one_hot, NULL, STK_DEVICE_IMPL(stk__gpu_impl_one_hot)},
    {&stk__op_constant, &stk__cpu_impl_constant, NULL, NULL},
    {&stk__op_jitter, &stk__cpu_impl_jitter, NULL, STK_DEVICE_IMPL(stk__gpu_impl_jitter)},
    {&stk__op_equalize, &stk__cpu_impl_auto_aug_apply, NULL, STK_DEVICE_IMPL(stk__gpu_impl_auto_aug_apply)},
    {&stk__op_auto_aug_apply, &stk__cpu_impl_auto_aug_apply, NULL, STK_DEVICE_IMPL(stk__gpu_impl_auto_aug_apply)},
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
