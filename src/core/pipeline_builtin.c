/* src/core/pipeline_builtin.c: the built-in pipelines rn50-train / rn50-val (DALI's ResNet-50
 * example), spelled in the pipeline text form and loaded through stk_pipeline_load_text. Build
 * time only, not on a hot path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

/* DALI's ResNet-50 example pipelines, spelled in the text form. */
static const char rn50_train[] =
    "jpegs, labels = %s\n"
    "decoded = decoders.image_random_crop(jpegs, device=\"%s\", output_type=\"RGB\"%s)\n"
    "resized = resize(decoded, device=\"%s\", resize_x=224, resize_y=224)\n"
    "coin = random.coin_flip(probability=0.5)\n"
    "images = crop_mirror_normalize(resized, device=\"%s\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)\n"
    "outputs(images, labels)\n";
static const char rn50_val[] =
    "jpegs, labels = %s\n"
    "decoded = decoders.image(jpegs, device=\"%s\", output_type=\"RGB\")\n"
    "resized = resize(decoded, device=\"%s\", resize_shorter=256)\n"
    "images = crop_mirror_normalize(resized, device=\"%s\", dtype=\"float\", output_layout=\"CHW\", crop=[224, 224],"
    " mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])\n"
    "outputs(images, labels)\n";

stk_status stk_pipeline_add_builtin(stk_pipeline *pipe, const char *name, const char *data_dir) {
  return stk_pipeline_add_builtin_ex(pipe, name, data_dir, NULL);
}

stk_status stk_pipeline_add_builtin_on(stk_pipeline *pipe, const char *name, const char *data_dir,
                                       const char *decoder) {
  stk_builtin_options options;
  stk_builtin_options_default(&options);
  options.decoder = decoder;
  return stk_pipeline_add_builtin_ex(pipe, name, data_dir, &options);
}

void stk_builtin_options_default(stk_builtin_options *options) {
  if (options) memset(options, 0, sizeof *options);
}

stk_status stk_pipeline_add_builtin_ex(stk_pipeline *pipe, const char *name, const char *data_dir,
                                       const stk_builtin_options *options) {
  if (!pipe || !name) return STK_EINVAL;
  stk_builtin_options defaults;
  stk_builtin_options_default(&defaults);
  if (!options) options = &defaults;
  const char *decoder = options->decoder;
  int train = !strcmp(name, "rn50-train");
  const char *tmpl = train ? rn50_train : !strcmp(name, "rn50-val") ? rn50_val : NULL;
  if (!tmpl) {
    stk__pipe_error(pipe, "unknown built-in pipeline '%s' (rn50-train, rn50-val)", name);
    return STK_EINVAL;
  }
  int gpu = pipe->options.device_id >= 0;
  if (decoder && *decoder && strcmp(decoder, "cpu") != 0 && strcmp(decoder, "mixed") != 0) {
    stk__pipe_error(pipe, "built-in pipeline %s: decoder must be \"cpu\" or \"mixed\", not \"%s\"", name, decoder);
    return STK_EINVAL;
  }
  if (decoder && !strcmp(decoder, "mixed") && !gpu) {
    stk__pipe_error(pipe, "built-in pipeline %s: the mixed decoder needs a GPU (device_id >= 0)", name);
    return STK_EINVAL;
  }
  /* decoder "cpu" on a GPU pipeline: DALI's example with --dali_cpu (decode and resize on the
   * workers, crop_mirror_normalize on the GPU reading the uploaded uint8 images). */
  int cpu_decode = !gpu || (decoder && !strcmp(decoder, "cpu"));
  const char *decode_dev = cpu_decode ? "cpu" : "mixed", *resize_dev = cpu_decode ? "cpu" : "gpu";
  const char *norm_dev = gpu ? "gpu" : "cpu";
  const char *reader = options->reader && *options->reader ? options->reader
                       : train                             ? "readers.file(random_shuffle=True, name=\"Reader\")"
                                                           : "readers.file(random_shuffle=False, name=\"Reader\")";
  size_t size = sizeof rn50_train + strlen(reader) + 128;
  char *text = malloc(size);
  if (!text) return STK_ENOMEM;
  if (train)
    snprintf(text, size, tmpl, reader, decode_dev, options->decode_size_hint ? ", hint_size=[224, 224]" : "",
             resize_dev, norm_dev);
  else snprintf(text, size, tmpl, reader, decode_dev, resize_dev, norm_dev);
  stk_status st = stk_pipeline_load_text(pipe, text, data_dir);
  free(text);
  if (st != STK_OK) {
    char msg[sizeof pipe->last_error];
    snprintf(msg, sizeof msg, "%s", pipe->last_error);
    stk__pipe_error(pipe, "built-in pipeline %s: %s", name, msg);
  }
  return st;
}
