/* src/ops/augment/one_hot/test_one_hot.c: `one_hot` on the CPU against encodings written out by
 * hand and by explicit loops here: a scalar class (index and out-of-range), a [3, 4] class map
 * with the new axis last, first and in the middle (shape, layout with axis_name, values), on/off
 * values with an integer dtype, float classes truncated, the legacy single-element rule, and bad
 * arguments named in the error. Exact. Not on a hot path. */
#include "case_list.h"
#include "op_test.h"

static stk__tensor int_map(int rows, int cols, const int32_t *values, const char *layout) {
  stk__tensor t;
  memset(&t, 0, sizeof t);
  int64_t shape[2] = {rows, cols};
  CHECK(stk__tensor_resize(&t, STK_DTYPE_INT32, 2, shape, layout) == STK_OK);
  memcpy(t.data, values, sizeof(int32_t) * (size_t)(rows * cols));
  return t;
}

static void scalar_class_gives_one_row(void) {
  stk_args *a = op_args();
  stk_args_set_int(a, "num_classes", 5);
  stk__op *op = op_make("one_hot", a, 1);
  stk__tensor cls = op_scalar(3.0f), out = {0};
  stk__tensor *in[1] = {&cls};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    const float want[5] = {0, 0, 0, 1, 0};
    CHECK(out.ndim == 1 && out.shape[0] == 5 && out.dtype == STK_DTYPE_FLOAT32 && memcmp(out.data, want, sizeof want) == 0);
  }
  *(float *)cls.data = 7.0f; /* out of range: every element off */
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    const float none[5] = {0, 0, 0, 0, 0};
    CHECK(memcmp(out.data, none, sizeof none) == 0);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&cls);
  stk__tensor_free(&out);
}

static void class_map_with_the_axis_anywhere(void) {
  const int32_t v[12] = {0, 1, 2, 3, -1, 4, 2, 2, 3, 0, 9, 1};
  stk__tensor map = int_map(3, 4, v, "HW"), out = {0};
  stk__tensor *in[1] = {&map};
  for (int axis = -1; axis <= 2; axis++) {
    stk_args *a = op_args();
    stk_args_set_int(a, "num_classes", 4);
    stk_args_set_int(a, "axis", axis);
    stk_args_set_string(a, "axis_name", "C");
    stk__op *op = op_make("one_hot", a, 1);
    if (!op || op_run(op, 0, 0, in, &out) != STK_OK) {
      CHECK_MSG(0, "axis %d: %s", axis, op_test_err);
      stk__op_free_standalone(op);
      continue;
    }
    const int at = axis < 0 ? 2 : axis;
    const char *layouts[3] = {"CHW", "HCW", "HWC"};
    CHECK_MSG(out.ndim == 3 && out.shape[at] == 4 && strcmp(out.layout, layouts[at]) == 0, "axis %d: layout %s", axis,
              out.layout);
    int bad = 0;
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 4; c++)
        for (int k = 0; k < 4; k++) {
          int64_t idx[3];
          int pos = 0;
          for (int d = 0; d < 3; d++) idx[d] = d == at ? k : (pos++ == 0 ? r : c);
          size_t e = (size_t)((idx[0] * out.shape[1] + idx[1]) * out.shape[2] + idx[2]);
          float want = v[r * 4 + c] == k ? 1.0f : 0.0f;
          bad += ((float *)out.data)[e] != want;
        }
    CHECK_MSG(bad == 0, "axis %d: %d elements wrong", axis, bad);
    stk__op_free_standalone(op);
  }
  stk__tensor_free(&map);
  stk__tensor_free(&out);
}

static void on_off_values_dtype_and_float_classes(void) {
  stk_args *a = op_args();
  stk_args_set_int(a, "num_classes", 3);
  stk_args_set_float(a, "on_value", 7);
  stk_args_set_float(a, "off_value", -2);
  stk_args_set_string(a, "dtype", "int32");
  stk__op *op = op_make("one_hot", a, 1);
  stk__tensor f = {0}, out = {0};
  int64_t two = 2;
  CHECK(stk__tensor_resize(&f, STK_DTYPE_FLOAT32, 1, &two, "") == STK_OK);
  ((float *)f.data)[0] = 1.7f; /* class 1 */
  ((float *)f.data)[1] = -0.5f; /* no class */
  stk__tensor *in[1] = {&f};
  if (op && op_run(op, 0, 0, in, &out) == STK_OK) {
    const int32_t want[6] = {-2, 7, -2, -2, -2, -2};
    CHECK(out.dtype == STK_DTYPE_INT32 && out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 3 &&
          memcmp(out.data, want, sizeof want) == 0 && out.layout[0] == 0);
  }
  /* a one-element tensor without 'axis' is a scalar (DALI's legacy rule): [num_classes] */
  stk__tensor one = {0};
  int64_t shape[2] = {1, 1};
  CHECK(stk__tensor_resize(&one, STK_DTYPE_INT32, 2, shape, "") == STK_OK);
  *(int32_t *)one.data = 2;
  stk__tensor *in1[1] = {&one};
  if (op && op_run(op, 0, 0, in1, &out) == STK_OK)
    CHECK(out.ndim == 1 && out.shape[0] == 3 && ((int32_t *)out.data)[2] == 7);
  stk__op_free_standalone(op);
  stk__tensor_free(&f);
  stk__tensor_free(&one);
  stk__tensor_free(&out);
}

static void bad_arguments_are_named(void) {
  op_expect_bad("one_hot", op_args(), "num_classes");
  stk_args *a = op_args();
  stk_args_set_int(a, "num_classes", 3);
  stk_args_set_string(a, "axis_name", "XY");
  op_expect_bad("one_hot", a, "axis_name");
  a = op_args();
  stk_args_set_int(a, "num_classes", 3);
  stk_args_set_int(a, "axis", 5);
  stk__op *op = op_make("one_hot", a, 1);
  const int32_t v[4] = {0, 1, 2, 0};
  stk__tensor map = int_map(2, 2, v, ""), out = {0};
  stk__tensor *in[1] = {&map};
  if (op) CHECK(op_run(op, 0, 0, in, &out) == STK_EINVAL && strstr(op_test_err, "axis"));
  stk__op_free_standalone(op);
  stk__tensor_free(&map);
  stk__tensor_free(&out);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(scalar_class_gives_one_row),
    STK_TEST_CASE(class_map_with_the_axis_anywhere),
    STK_TEST_CASE(on_off_values_dtype_and_float_classes),
    STK_TEST_CASE(bad_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_one_hot", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_one_hot");
}
