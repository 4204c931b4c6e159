/* tests/test_build_checks.c: configurations the build refuses before any image is read, with a
 * message naming the operator and the argument (docs/operators-io.md): an output size beyond
 * STK__OUTPUT_MAX_SIDE / STK__OUTPUT_MAX_PIXELS (resize_x=60000, resize_y=60000 used to be
 * accepted and OOM-killed), and a scalar argument bound to an image output (mirror=images used to
 * run, reading the first pixel as the flag). Real operators, through the pipeline text form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jpeg_fixtures.h"
#include "stoker/pipeline.h"
#include "testutil.h"

static char data_dir[256];

static void make_data(void) {
  snprintf(data_dir, sizeof data_dir, "/tmp/stoker_build_checks_XXXXXX");
  CHECK(mkdtemp(data_dir) != NULL);
  char path[512];
  snprintf(path, sizeof path, "%s/class_a", data_dir);
  CHECK(mkdir(path, 0755) == 0);
  uint8_t *px = fixture_pattern(64, 48, 3, 3);
  size_t size;
  uint8_t *jpg = fixture_encode(px, 64, 48, 3, fixture_defaults(), &size);
  snprintf(path, sizeof path, "%s/class_a/a.jpg", data_dir);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(jpg, 1, size, f) == size);
  if (f) fclose(f);
  free(jpg), free(px);
}

static void remove_data(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/class_a/a.jpg", data_dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/class_a", data_dir);
  rmdir(path);
  rmdir(data_dir);
}

/* Loads and builds `body` after a reader and a decoder; returns the status, message in msg. */
static stk_status build(const char *body, char *msg, size_t msg_size) {
  char text[2048];
  snprintf(text, sizeof text,
           "jpegs, labels = readers.file()\n"
           "images = decoders.image(jpegs)\n"
           "%s",
           body);
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 1;
  o.num_threads = 1;
  stk_pipeline *p = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  stk_status st = stk_pipeline_load_text(p, text, data_dir);
  if (st == STK_OK) st = stk_pipeline_build(p);
  snprintf(msg, msg_size, "%s", stk_pipeline_last_error(p));
  stk_pipeline_destroy(p);
  return st;
}

static void expect_refused(const char *body, const char *const *needles, const char *what) {
  char msg[1024];
  stk_status st = build(body, msg, sizeof msg);
  CHECK_MSG(st == STK_EINVAL, "%s: status %s, expected STK_EINVAL (%s)", what, stk_status_name(st), msg);
  for (int i = 0; needles[i]; i++)
    CHECK_MSG(strstr(msg, needles[i]) != NULL, "%s: message '%s' lacks '%s'", what, msg, needles[i]);
}

static void expect_built(const char *body, const char *what) {
  char msg[1024];
  stk_status st = build(body, msg, sizeof msg);
  CHECK_MSG(st == STK_OK, "%s: %s (%s)", what, stk_status_name(st), msg);
}

static void test_output_size_bounds(void) {
  const char *huge[] = {"line 3: operator r (resize)", "resize", "resize_x", "resize_y", "3600000000 pixels", NULL};
  expect_refused("r = resize(images, resize_x=60000, resize_y=60000)\noutputs(r, labels)\n", huge,
                 "resize_x=60000, resize_y=60000");
  const char *side[] = {"resize", "argument 'resize_x'", "40000", "32768", NULL};
  expect_refused("r = resize(images, resize_x=40000)\noutputs(r, labels)\n", side, "resize_x=40000 alone");
  const char *shorter[] = {"resize", "resize_shorter", NULL};
  expect_refused("r = resize(images, resize_shorter=10000)\noutputs(r, labels)\n", shorter, "resize_shorter=10000");
  const char *rrc[] = {"random_resized_crop", "argument 'size'", NULL};
  expect_refused("r = random_resized_crop(images, size=[20000, 20000])\noutputs(r, labels)\n", rrc,
                 "random_resized_crop size=[20000, 20000]");
  expect_built("r = resize(images, resize_x=7680, resize_y=4320)\noutputs(r, labels)\n", "8K UHD resize");
  expect_built("r = resize(images, resize_x=60000, resize_y=60000, max_size=[1000, 1000])\noutputs(r, labels)\n",
               "a huge size capped by max_size");
  expect_built("r = resize(images, resize_shorter=256)\noutputs(r, labels)\n", "resize_shorter=256");
}

static void test_argument_input_kinds(void) {
  const char *image[] = {"line 3:", "crop_mirror_normalize", "argument 'mirror'", "'images'", "decoders.image", NULL};
  expect_refused("out = crop_mirror_normalize(images, crop=[8, 8], mirror=images)\noutputs(out, labels)\n", image,
                 "mirror=images");
  const char *bytes[] = {"line 3:", "crop_mirror_normalize", "argument 'mirror'", "'jpegs'", "readers.file", NULL};
  expect_refused("out = crop_mirror_normalize(images, crop=[8, 8], mirror=jpegs)\noutputs(out, labels)\n", bytes,
                 "mirror=jpegs (encoded bytes)");
  const char *resized[] = {"line 4:", "crop_mirror_normalize", "argument 'mirror'", "'small'", "resize", NULL};
  expect_refused(
      "small = resize(images, resize_x=8, resize_y=8)\n"
      "out = crop_mirror_normalize(images, crop=[8, 8], mirror=small)\noutputs(out, labels)\n",
      resized, "mirror=small (a resized image)");
  expect_built(
      "coin = random.coin_flip(probability=0.5)\n"
      "out = crop_mirror_normalize(images, crop=[8, 8], mirror=coin)\noutputs(out, labels)\n",
      "mirror=coin");
}

int main(void) {
  make_data();
  test_output_size_bounds();
  test_argument_input_kinds();
  remove_data();
  (void)fixture_reference;
  return stk_test_finish("test_build_checks");
}
