/* src/ops/op_impls.h: every operator schema and implementation the operator table
 * (src/ops/op_table.c) names, declared once. Each symbol is defined in its operator's folder
 * (src/ops/io, decode, video, feed, augment/<operator>): the schema and CPU implementation in its
 * .c file, the mixed and GPU implementations in its .cu file beside it (compiled only in a CUDA
 * build; the table refers to them through
 * STK_DEVICE_IMPL, src/ops/build_cuda/ or build_nocuda/op_device_impls.h). The defining files
 * include this header so the compiler checks each definition against its declaration (and, in
 * .cu files, gives the const definitions external C linkage). Build time only. */
#ifndef STOKER_OPS_OP_IMPLS_H
#define STOKER_OPS_OP_IMPLS_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Schemas (each operator's .c file). */
STK_INTERNAL extern const stk__op_schema stk__op_readers_file;               /* reader_file.c */
STK_INTERNAL extern const stk__op_schema stk__op_readers_video;              /* reader_video.c */
STK_INTERNAL extern const stk__op_schema stk__op_readers_webdataset;         /* reader_webdataset.c */
STK_INTERNAL extern const stk__op_schema stk__op_readers_numpy;              /* reader_numpy.c */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image;             /* decoders.c */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_random_crop; /* decoders.c */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_crop;        /* decoders_roi.c */
STK_INTERNAL extern const stk__op_schema stk__op_decoders_image_slice;       /* decoders_roi.c */
STK_INTERNAL extern const stk__op_schema stk__op_peek_image_shape;           /* peek_image_shape.c */
STK_INTERNAL extern const stk__op_schema stk__op_io_file_read;               /* io/file_read.c */
STK_INTERNAL extern const stk__op_schema stk__op_resize;                     /* resize.c */
STK_INTERNAL extern const stk__op_schema stk__op_random_resized_crop;        /* random_resized_crop.c */
STK_INTERNAL extern const stk__op_schema stk__op_crop_mirror_normalize;      /* crop_mirror_normalize.c */
STK_INTERNAL extern const stk__op_schema stk__op_random_coin_flip;           /* coin_flip.c */
STK_INTERNAL extern const stk__op_schema stk__op_cast;                       /* cast.c */
STK_INTERNAL extern const stk__op_schema stk__op_external_source;            /* external_source.c */
/* Random numbers, colour, filters and noise, AutoAugment (src/ops/augment/{random,colour,filter,noise,
 * auto_aug}). */
STK_INTERNAL extern const stk__op_schema stk__op_random_uniform; /* distributions.c */
STK_INTERNAL extern const stk__op_schema stk__op_random_normal;  /* distributions.c */
STK_INTERNAL extern const stk__op_schema stk__op_random_beta;    /* distributions.c */
STK_INTERNAL extern const stk__op_schema stk__op_random_choice;  /* distributions.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_uniform;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_normal;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_beta;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_choice;
STK_INTERNAL extern const stk__op_schema stk__op_brightness; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_contrast; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_brightness_contrast; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_hue; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_saturation; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_hsv; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_color_twist; /* colour.c */
STK_INTERNAL extern const stk__op_schema stk__op_color_space_conversion; /* colour.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_colour; /* colour.c: every colour schema */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_colour; /* colour_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_noise_gaussian; /* noise.c */
STK_INTERNAL extern const stk__op_schema stk__op_noise_shot; /* noise.c */
STK_INTERNAL extern const stk__op_schema stk__op_noise_salt_and_pepper; /* noise.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_noise; /* noise.c: every noise schema */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_noise; /* noise_gpu.cu */
/* normalize, one_hot, constant, gaussian_blur, jitter (src/ops/augment/<operator>/). */
STK_INTERNAL extern const stk__op_schema stk__op_normalize;     /* normalize.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_normalize; /* normalize.c */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_normalize; /* normalize_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_gaussian_blur;     /* gaussian_blur.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_gaussian_blur; /* gaussian_blur.c */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_gaussian_blur; /* gaussian_blur_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_one_hot;     /* one_hot.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_one_hot; /* one_hot.c */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_one_hot; /* one_hot_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_constant;     /* constant.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_constant; /* constant.c */
STK_INTERNAL extern const stk__op_schema stk__op_jitter;     /* jitter.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_jitter; /* jitter.c */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_jitter; /* jitter_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_auto_aug_apply;   /* auto_aug/auto_aug.c */
STK_INTERNAL extern const stk__op_schema stk__op_equalize;          /* auto_aug/auto_aug.c */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_auto_aug_apply; /* both AutoAugment schemas */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_auto_aug_apply; /* auto_aug/auto_aug_gpu.cu */
STK_INTERNAL extern const stk__op_schema stk__op_math_elementwise;           /* math_elementwise.c */
STK_INTERNAL extern const stk__op_schema stk__op_conditional_merge;          /* conditional_merge.c */

/* CPU implementations (beside their schemas). */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_readers_file;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_readers_video;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_readers_webdataset;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_readers_numpy;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_decoders_image; /* both decoders */
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_decoders_image_crop;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_decoders_image_slice;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_peek_image_shape;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_io_file_read;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_resize;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_resized_crop;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_crop_mirror_normalize;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_random_coin_flip;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_cast;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_external_source;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_math_elementwise;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_conditional_merge;

/* Mixed and GPU implementations (the operator's .cu files, CUDA builds only). */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_decoders_image;             /* decoder_mixed.cu, "mixed" */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_decoders_image_random_crop; /* decoder_mixed.cu, "mixed" */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_decoders_image_crop;  /* decoders_roi_mixed.c, "mixed" */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_decoders_image_slice; /* decoders_roi_mixed.c, "mixed" */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_resize;                     /* resize_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_random_resized_crop;        /* resize_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_crop_mirror_normalize;      /* cmn_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_fused_resize_cmn;           /* fused_resize_cmn_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_readers_video;              /* video_reader_gpu.cu (NVDEC) */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_external_source;            /* external_source_gpu.c */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_math_elementwise;           /* math_elementwise_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_conditional_merge;          /* conditional_merge_gpu.cu */
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_cast;                       /* cast_gpu.cu */

/* Geometry operators (src/ops/augment/<operator>/; CPU rows beside the schema, GPU rows in the
 * folder's *_gpu.cu through the shared frame ops/common/nd_gpu.cu). */
STK_INTERNAL extern const stk__op_schema stk__op_flip;
STK_INTERNAL extern const stk__op_schema stk__op_transpose;
STK_INTERNAL extern const stk__op_schema stk__op_crop;
STK_INTERNAL extern const stk__op_schema stk__op_slice;
STK_INTERNAL extern const stk__op_schema stk__op_pad;
STK_INTERNAL extern const stk__op_schema stk__op_paste;
STK_INTERNAL extern const stk__op_schema stk__op_erase;
STK_INTERNAL extern const stk__op_schema stk__op_reshape;
STK_INTERNAL extern const stk__op_schema stk__op_squeeze;
STK_INTERNAL extern const stk__op_schema stk__op_expand_dims;
STK_INTERNAL extern const stk__op_schema stk__op_cat;
STK_INTERNAL extern const stk__op_schema stk__op_stack;
STK_INTERNAL extern const stk__op_schema stk__op_rotate;
STK_INTERNAL extern const stk__op_schema stk__op_warp_affine;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_rotation;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_scale;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_translation;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_shear;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_crop;
STK_INTERNAL extern const stk__op_schema stk__op_transforms_combine;
STK_INTERNAL extern const stk__op_schema stk__op_resize_crop_mirror;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_flip;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transpose;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_crop;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_slice;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_pad;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_paste;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_erase;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_reshape;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_squeeze;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_expand_dims;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_cat;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_stack;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_rotate;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_warp_affine;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_rotation;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_scale;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_translation;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_shear;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_crop;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_transforms_combine;
STK_INTERNAL extern const stk__op_impl stk__cpu_impl_resize_crop_mirror;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_flip;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_transpose;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_crop;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_slice;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_pad;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_paste;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_erase;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_reshape;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_squeeze;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_expand_dims;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_cat;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_stack;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_rotate;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_warp_affine;
STK_INTERNAL extern const stk__op_impl stk__gpu_impl_resize_crop_mirror;
/* End of geometry operators. */

#ifdef __cplusplus
}
#endif
#endif
