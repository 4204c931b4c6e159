/* tests/test_link_ops.c: a program that uses only the public API (include/stoker) sees every
 * operator, however it links the library. ctest builds it twice: test_link_ops links libstoker.a
 * the ordinary way (no --whole-archive: only the archive members something references are taken),
 * test_link_ops_shared links libstoker.so. Both must list the same operators, in the same order,
 * as `stoker ops` prints them, and each must be findable with well-formed arguments. The list of
 * built-in operators is API (the names DALI users call), so it is spelled out here: adding an
 * operator adds its name below. Regression test of the weak-symbol registry, which lost 6 of 8
 * operators in a plain static link. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/stoker.h"
#include "case_list.h"
#include "testutil.h"

static const char *const expected[] = {
    "readers.file",
    "readers.webdataset",
    "readers.numpy",
    "external_source",
    "readers.video",
    "decoders.image",
    "decoders.image_random_crop",
    "decoders.image_crop",
    "decoders.image_slice",
    "peek_image_shape",
    "io.file.read",
    "resize",
    "random_resized_crop",
    "crop_mirror_normalize",
    "random.coin_flip",
    "cast",
    /* Geometry (the operator table's geometry block). */
    "flip",
    "transpose",
    "crop",
    "slice",
    "pad",
    "paste",
    "erase",
    "reshape",
    "squeeze",
    "expand_dims",
    "cat",
    "stack",
    "rotate",
    "warp_affine",
    "transforms.rotation",
    "transforms.scale",
    "transforms.translation",
    "transforms.shear",
    "transforms.crop",
    "transforms.combine",
    "resize_crop_mirror",
    /* End of geometry. */
    /* Random numbers, colour and noise (the operator table's block). */
    "random.uniform",
    "random.normal",
    "random.beta",
    "random.choice",
    "brightness",
    "contrast",
    "brightness_contrast",
    "hue",
    "saturation",
    "hsv",
    "color_twist",
    "color_space_conversion",
    "noise.gaussian",
    "noise.shot",
    "noise.salt_and_pepper",
    "normalize",
    "gaussian_blur",
    "one_hot",
    "constant",
    "jitter",
    /* AutoAugment (src/ops/augment/auto_aug). */
    "experimental.equalize",
    "_auto_aug.apply",
    "math.elementwise",
    "_conditional.merge",
};
#define NUM_EXPECTED ((int)(sizeof expected / sizeof expected[0]))

/* Every operator through the public registry queries. */
static void check_listing(void) {
  int count = stk_op_count();
  CHECK_MSG(count == NUM_EXPECTED, "stk_op_count() = %d, expected %d operators", count, NUM_EXPECTED);
  for (int i = 0; i < NUM_EXPECTED; i++) {
    int index = -1;
    CHECK_MSG(stk_op_find(expected[i], &index) == STK_OK && index == i, "operator %s: not at index %d (found %d)",
              expected[i], i, index);
    stk_op_schema_info info;
    if (stk_op_schema(i, &info) != STK_OK) {
      CHECK_MSG(0, "stk_op_schema(%d) failed", i);
      continue;
    }
    CHECK_STR(info.name, expected[i]);
    CHECK_MSG(info.doc[0] != '\0' && (info.devices & STK_OPDEV_CPU), "%s: no doc or no cpu device", info.name);
    for (int a = 0; a < info.num_args; a++) {
      stk_op_arg_info arg;
      CHECK_MSG(stk_op_arg(i, a, &arg) == STK_OK && arg.name && arg.name[0], "%s: argument %d", info.name, a);
    }
  }
}

/* The first column of `stoker ops` (the CLI links the archive plainly too), one operator per
 * line, must be the same list. */
static void check_cli(void) {
  char command[4096];
  snprintf(command, sizeof command, "'%s' ops", stk_test_cli());
  char *out = NULL;
  int status = stk_test_run(command, &out);
  CHECK_MSG(status == 0 && out, "%s failed (%d)", command, status);
  int n = 0;
  for (char *line = out ? strtok(out, "\n") : NULL; line; line = strtok(NULL, "\n")) {
    char name[256] = "";
    if (sscanf(line, "%255s", name) != 1) continue;
    CHECK_MSG(n < NUM_EXPECTED && strcmp(name, expected[n]) == 0, "`stoker ops` line %d: %s", n + 1, name);
    n++;
  }
  free(out);
  CHECK_MSG(n == NUM_EXPECTED, "`stoker ops` listed %d operators, expected %d", n, NUM_EXPECTED);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(check_listing),
    STK_TEST_CASE(check_cli),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  return stk_test_run_cases("test_link_ops", cases, STK_TEST_COUNT(cases), argc, argv);
}
