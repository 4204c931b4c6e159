/* tests/test_pipeline_graph.c: graph construction and build errors, each naming the operator
 * and what is wrong: unknown operator/input/output, input counts, duplicate names, cycles,
 * a reader required, devices, state errors. Test-only operators (tests/pipeline_fake_ops.h). */
#include "pipeline_fake_ops.h"
#include "case_list.h"
#include "testutil.h"

static stk_pipeline *fresh(void) {
  stk_pipeline *p = NULL;
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 2;
  o.num_threads = 1;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK);
  return p;
}

#define EXPECT_ERR(call, status, ...)                                                              \
  do {                                                                                             \
    stk_status st_ = (call);                                                                       \
    CHECK_MSG(st_ == (status), "%s: %s", stk_status_name(st_), stk_pipeline_last_error(p));        \
    const char *needles_[] = {__VA_ARGS__};                                                        \
    for (size_t i_ = 0; i_ < sizeof needles_ / sizeof needles_[0]; i_++)                           \
      CHECK_MSG(strstr(stk_pipeline_last_error(p), needles_[i_]), "'%s' not in: %s", needles_[i_], \
                stk_pipeline_last_error(p));                                                       \
  } while (0)

static const char *in_reader[1] = {"reader"};
static const char *in_a[1] = {"a"}, *in_b[1] = {"b"};
static const char *out_fill[1] = {"fill"};

/* Unknown operator, missing input, bad device and argument type; no operators; a taken name; an
 * unnamed node's generated name; no outputs; an input naming nothing. */
static void add_and_build_errors_name_the_operator(void) {
  stk_pipeline *p = fresh();
  EXPECT_ERR(stk_pipeline_add_op(p, "no.such", "x", NULL, 0, NULL), STK_EINVAL, "no.such");
  EXPECT_ERR(stk_pipeline_add_op(p, "test.fill", "fill", NULL, 0, NULL), STK_EINVAL, "fill", "input");
  stk_args *args;
  stk_args_new(&args);
  stk_args_set_string(args, "device", "gpu");
  EXPECT_ERR(stk_pipeline_add_op(p, "test.fill", "fill", in_reader, 1, args), STK_EINVAL, "device_id");
  stk_args_set_string(args, "device", "mixed");
  EXPECT_ERR(stk_pipeline_add_op(p, "test.fill", "fill", in_reader, 1, args), STK_ENOTSUP, "mixed");
  stk_args_set_string(args, "device", "tpu");
  EXPECT_ERR(stk_pipeline_add_op(p, "test.fill", "fill", in_reader, 1, args), STK_EINVAL, "tpu");
  stk_args_destroy(args);
  stk_args_new(&args);
  stk_args_set_string(args, "size", "big");
  EXPECT_ERR(stk_pipeline_add_op(p, "test.fill", "fill", in_reader, 1, args), STK_EINVAL, "fill", "'size'", "int");
  stk_args_destroy(args);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "no operators");
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, NULL) == STK_OK);
  EXPECT_ERR(stk_pipeline_add_op(p, "test.coin", "reader", NULL, 0, NULL), STK_EINVAL, "already used");
  CHECK(stk_pipeline_add_op(p, "test.coin", NULL, NULL, 0, NULL) == STK_OK);
  CHECK_STR(stk_pipeline_node_name(p, 1), "test.coin_0");
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "set_outputs");
  CHECK(stk_pipeline_add_op(p, "test.fill", "fill", (const char *[]){"nowhere"}, 1, NULL) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, out_fill, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "fill", "nowhere");
  stk_pipeline_destroy(p);
}

/* Output index out of range; argument input to an unknown node. */
static void bad_output_index_and_argument_input(void) {
  stk_pipeline *p = fresh();
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, NULL) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, (const char *[]){"reader[2]"}, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "reader[2]", "2 output");
  stk_pipeline_destroy(p);
  p = fresh();
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, NULL) == STK_OK);
  stk_args *args;
  stk_args_new(&args);
  stk_args_set_input(args, "add", "ghost");
  CHECK(stk_pipeline_add_op(p, "test.fill", "fill", in_reader, 1, args) == STK_OK);
  stk_args_destroy(args);
  CHECK(stk_pipeline_set_outputs(p, out_fill, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "fill", "'add'", "ghost");
  stk_pipeline_destroy(p);
}

static void cycle_named(void) {
  stk_pipeline *p = fresh();
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, NULL) == STK_OK);
  CHECK(stk_pipeline_add_op(p, "test.fill", "a", in_b, 1, NULL) == STK_OK);
  CHECK(stk_pipeline_add_op(p, "test.fill", "b", in_a, 1, NULL) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, in_a, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "cycle", "a", "b");
  stk_pipeline_destroy(p);
}

/* No reader (several are fine: tests/test_side_readers.c). */
static void a_reader_is_required(void) {
  stk_pipeline *p = fresh();
  CHECK(stk_pipeline_add_op(p, "test.coin", "coin", NULL, 0, NULL) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, (const char *[]){"coin"}, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "needs a reader", "none");
  stk_pipeline_destroy(p);
}

/* Reader init failure names the operator; the pipeline cannot be built twice. */
static void init_failure_then_state_errors(void) {
  stk_pipeline *p = fresh();
  stk_args *args;
  stk_args_new(&args);
  stk_args_set_int(args, "num_samples", 0);
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, args) == STK_OK);
  stk_args_destroy(args);
  CHECK(stk_pipeline_set_outputs(p, in_reader, 1) == STK_OK);
  EXPECT_ERR(stk_pipeline_build(p), STK_EINVAL, "reader", "num_samples must be positive");
  EXPECT_ERR(stk_pipeline_build(p), STK_ESTATE, "build");
  stk_batch *b = NULL;
  EXPECT_ERR(stk_pipeline_next(p, &b), STK_ESTATE, "not built");
  stk_pipeline_destroy(p);
}

/* Good graph; state errors after build. */
static void built_pipeline_refuses_changes(void) {
  stk_pipeline *p = fresh();
  CHECK(stk_pipeline_add_op(p, "test.reader", "reader", NULL, 0, NULL) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, in_reader, 1) == STK_OK);
  CHECK(stk_pipeline_build(p) == STK_OK);
  EXPECT_ERR(stk_pipeline_add_op(p, "test.coin", "coin", NULL, 0, NULL), STK_ESTATE, "built");
  EXPECT_ERR(stk_pipeline_set_outputs(p, in_reader, 1), STK_ESTATE, "built");
  stk_pipeline_destroy(p);
}

static void bad_options_refused(void) {
  stk_pipeline *p = NULL;
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 0;
  CHECK(stk_pipeline_new(&o, &p) == STK_EINVAL);
  stk_pipeline_options_default(&o);
  o.num_threads = 0;
  CHECK(stk_pipeline_new(&o, &p) == STK_EINVAL);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(add_and_build_errors_name_the_operator),
    STK_TEST_CASE(bad_output_index_and_argument_input),
    STK_TEST_CASE(cycle_named),
    STK_TEST_CASE(a_reader_is_required),
    STK_TEST_CASE(init_failure_then_state_errors),
    STK_TEST_CASE(built_pipeline_refuses_changes),
    STK_TEST_CASE(bad_options_refused),
};
// clang-format on

int main(int argc, char **argv) {
  fake_ops_register();
  return stk_test_run_cases("test_pipeline_graph", cases, STK_TEST_COUNT(cases), argc, argv);
}
