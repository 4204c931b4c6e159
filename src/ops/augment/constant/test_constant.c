/* src/ops/augment/constant/test_constant.c: `constant` on the CPU against values written out by
 * hand: fdata as a 1-d tensor by default, a shaped int tensor with a layout, one value broadcast,
 * float data converted to uint8 with rounding and saturation, the same bytes for every sample, and
 * bad arguments named in the error. Exact. Not on a hot path. */
#include "case_list.h"
#include "op_test.h"

static void fdata_is_one_dimensional_by_default(void) {
  stk_args *a = op_args();
  const double f[3] = {0.5, -1.25, 3.0};
  stk_args_set_float_list(a, "fdata", f, 3);
  stk__op *op = op_make("constant", a, 1);
  stk__tensor out = {0};
  for (int64_t sample = 0; op && sample < 3; sample++) {
    CHECK_MSG(op_run(op, 0, sample, NULL, &out) == STK_OK, "%s", op_test_err);
    const float want[3] = {0.5f, -1.25f, 3.0f};
    CHECK(out.ndim == 1 && out.shape[0] == 3 && out.dtype == STK_DTYPE_FLOAT32 && out.layout[0] == 0 &&
          memcmp(out.data, want, sizeof want) == 0);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
}

static void idata_with_shape_and_layout(void) {
  stk_args *a = op_args();
  const int64_t v[6] = {1, 2, 3, 4, 5, 6}, shape[2] = {2, 3};
  stk_args_set_int_list(a, "idata", v, 6);
  stk_args_set_int_list(a, "shape", shape, 2);
  stk_args_set_string(a, "layout", "HW");
  stk__op *op = op_make("constant", a, 1);
  stk__tensor out = {0};
  if (op && op_run(op, 0, 0, NULL, &out) == STK_OK) {
    const int32_t want[6] = {1, 2, 3, 4, 5, 6};
    CHECK(out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 3 && out.dtype == STK_DTYPE_INT32 &&
          strcmp(out.layout, "HW") == 0 && memcmp(out.data, want, sizeof want) == 0);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
}

static void one_value_fills_the_shape_with_dtype_conversion(void) {
  stk_args *a = op_args();
  const double f[1] = {300.4};
  const int64_t shape[3] = {2, 2, 1};
  stk_args_set_float_list(a, "fdata", f, 1);
  stk_args_set_int_list(a, "shape", shape, 3);
  stk_args_set_string(a, "dtype", "uint8");
  stk__op *op = op_make("constant", a, 1);
  stk__tensor out = {0};
  if (op && op_run(op, 0, 0, NULL, &out) == STK_OK) {
    const uint8_t want[4] = {255, 255, 255, 255}; /* saturated */
    CHECK(out.ndim == 3 && out.dtype == STK_DTYPE_UINT8 && out.nbytes == 4 && memcmp(out.data, want, 4) == 0);
  }
  stk__op_free_standalone(op);
  a = op_args();
  const double g[3] = {1.5, 2.5, -0.4};
  stk_args_set_float_list(a, "fdata", g, 3);
  stk_args_set_string(a, "dtype", "int16");
  op = op_make("constant", a, 1);
  if (op && op_run(op, 0, 0, NULL, &out) == STK_OK) {
    const int16_t want[3] = {2, 3, 0}; /* round half away from zero, as stk__elem_store does */
    CHECK_MSG(memcmp(out.data, want, sizeof want) == 0, "%d %d %d", ((int16_t *)out.data)[0],
              ((int16_t *)out.data)[1], ((int16_t *)out.data)[2]);
  }
  stk__op_free_standalone(op);
  stk__tensor_free(&out);
}

static void bad_arguments_are_named(void) {
  op_expect_bad("constant", op_args(), "exactly one of 'fdata'");
  stk_args *a = op_args();
  const double f[2] = {1, 2};
  const int64_t i[2] = {1, 2}, shape[2] = {2, 2};
  stk_args_set_float_list(a, "fdata", f, 2);
  stk_args_set_int_list(a, "idata", i, 2);
  op_expect_bad("constant", a, "not both");
  a = op_args();
  stk_args_set_float_list(a, "fdata", f, 2);
  stk_args_set_int_list(a, "shape", shape, 2);
  op_expect_bad("constant", a, "2 data values for shape of 4 elements");
  a = op_args();
  stk_args_set_float_list(a, "fdata", f, 2);
  stk_args_set_string(a, "layout", "HW");
  op_expect_bad("constant", a, "argument 'layout'");
  a = op_args();
  stk_args_set_float_list(a, "fdata", f, 2);
  stk_args_set_string(a, "dtype", "complex");
  op_expect_bad("constant", a, "argument 'dtype'");
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(fdata_is_one_dimensional_by_default),
    STK_TEST_CASE(idata_with_shape_and_layout),
    STK_TEST_CASE(one_value_fills_the_shape_with_dtype_conversion),
    STK_TEST_CASE(bad_arguments_are_named),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  int rc = stk_test_run_selected("test_constant", cases, STK_TEST_COUNT(cases), argc, argv);
  op_test_cleanup();
  return rc ? rc : stk_test_finish("test_constant");
}
