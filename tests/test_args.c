/* tests/test_args.c: stk_args setters, the text form of values and resolution of arguments
 * against a schema (defaults, int->float promotion, scalar->list, unknown/missing/wrong-type
 * errors naming the operator, the argument and the expected type). Uses a test-only schema. */
#include <string.h>

#include "core/args.h"
#include "case_list.h"
#include "testutil.h"

static const stk__arg_schema test_args_schema[] = {
    {"size", STK_ARG_INT, "224", 0, 0, "output size"},
    {"probability", STK_ARG_FLOAT, "0.5", 0, 0, "chance of 1"},
    {"mirror", STK_ARG_BOOL, "False", 0, 1, "flip"},
    {"layout", STK_ARG_STRING, "\"CHW\"", 0, 0, "layout"},
    {"mean", STK_ARG_FLOAT_LIST, "[0.485, 0.456, 0.406]", 0, 0, "mean"},
    {"crop", STK_ARG_INT_LIST, "[]", 0, 0, "crop"},
    {"names", STK_ARG_STRING_LIST, "[\"a, b\", c]", 0, 0, "names"},
    {"file_root", STK_ARG_STRING, NULL, 1, 0, "root"},
    {"optional", STK_ARG_FLOAT, NULL, 0, 0, "no default"},
};

static const stk__op_schema test_schema = {.name = "test.args",
                                           .doc = "test-only",
                                           .min_inputs = 0,
                                           .max_inputs = 1,
                                           .num_outputs = 1,
                                           .devices = STK_OPDEV_CPU,
                                           .args = test_args_schema,
                                           .num_args = (int)(sizeof test_args_schema / sizeof test_args_schema[0])};

static stk_status resolve(const stk_args *args, stk__arg_value *values, char *err, size_t n) {
  static const char *const ignored[] = {"device", NULL};
  memset(values, 0, sizeof(stk__arg_value) * (size_t)test_schema.num_args);
  return stk__args_resolve(&test_schema, "my_op", args, ignored, values, err, n);
}

static void clear(stk__arg_value *values) {
  for (int i = 0; i < test_schema.num_args; i++) stk__arg_value_clear(&values[i]);
}

/* Fresh arguments with the required file_root set (and "device", which resolve ignores). */
static stk_args *base_args(void) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  if (!args) return NULL;
  CHECK(stk_args_set_string(args, "file_root", "/data") == STK_OK);
  CHECK(stk_args_set_string(args, "device", "cpu") == STK_OK);
  return args;
}

static void missing_required_argument_named(void) {
  stk__arg_value values[16];
  char err[512] = "";
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "my_op") && strstr(err, "file_root") && strstr(err, "missing"), "%s", err);
  stk_args_destroy(args);
}

static void defaults_filled_from_text_form(void) {
  stk__arg_value values[16];
  char err[512];
  stk_args *args = base_args();
  CHECK(resolve(args, values, err, sizeof err) == STK_OK);
  CHECK(values[0].has_value && !values[0].is_set && values[0].i == 224);
  CHECK(values[1].f == 0.5);
  CHECK(values[2].type == STK_ARG_BOOL && values[2].i == 0);
  CHECK_STR(values[3].s, "CHW");
  CHECK(values[4].count == 3 && values[4].flist[1] == 0.456);
  CHECK(values[5].has_value && values[5].count == 0);
  CHECK(values[6].count == 2);
  if (values[6].count == 2) {
    CHECK_STR(values[6].slist[0], "a, b");
    CHECK_STR(values[6].slist[1], "c");
  }
  CHECK(values[7].is_set);
  CHECK_STR(values[7].s, "/data");
  CHECK(!values[8].has_value);
  CHECK(values[2].input_slot == -1);
  clear(values);
  stk_args_destroy(args);
}

/* Int -> float promotion; scalar -> list; int list -> float list; replacement of a name. */
static void promotions_and_replacement(void) {
  stk__arg_value values[16];
  char err[512];
  stk_args *args = base_args();
  CHECK(stk_args_set_int(args, "probability", 1) == STK_OK);
  CHECK(stk_args_set_int(args, "crop", 7) == STK_OK);
  int64_t ints[2] = {1, 2};
  CHECK(stk_args_set_int_list(args, "mean", ints, 2) == STK_OK);
  CHECK(stk_args_set_int(args, "size", 5) == STK_OK);
  CHECK(stk_args_set_int(args, "size", 6) == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_OK);
  CHECK(values[1].type == STK_ARG_FLOAT && values[1].f == 1.0);
  CHECK(values[5].count == 1 && values[5].ilist[0] == 7);
  CHECK(values[4].type == STK_ARG_FLOAT_LIST && values[4].count == 2 && values[4].flist[1] == 2.0);
  CHECK(values[0].i == 6 && values[0].is_set);
  clear(values);
  stk_args_destroy(args);
}

/* Argument input accepted only where the schema allows it. */
static void argument_input_only_where_allowed(void) {
  stk__arg_value values[16];
  char err[512];
  stk_args *args = base_args();
  CHECK(stk_args_set_input(args, "mirror", "coin") == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_OK);
  CHECK(values[2].input_ref && strcmp(values[2].input_ref, "coin") == 0 && values[2].input_slot == -1);
  clear(values);
  CHECK(stk_args_set_input(args, "size", "coin") == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "size") && strstr(err, "constant int"), "%s", err);
  stk_args_destroy(args);
}

/* Wrong types: float for int, string for bool, float for an int list. */
static void wrong_types_named(void) {
  stk__arg_value values[16];
  char err[512];
  stk_args *args = base_args();
  CHECK(stk_args_set_float(args, "size", 2.5) == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "my_op") && strstr(err, "'size'") && strstr(err, "expects int") && strstr(err, "got float"),
            "%s", err);
  CHECK(stk_args_set_int(args, "size", 6) == STK_OK);
  CHECK(stk_args_set_string(args, "mirror", "yes") == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "'mirror'") && strstr(err, "bool"), "%s", err);
  CHECK(stk_args_set_bool(args, "mirror", 1) == STK_OK);
  double fl[1] = {1.5};
  CHECK(stk_args_set_float_list(args, "crop", fl, 1) == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "'crop'") && strstr(err, "int list"), "%s", err);
  stk_args_destroy(args);
}

/* Unknown argument lists the known ones. */
static void unknown_argument_lists_known_ones(void) {
  stk__arg_value values[16];
  char err[512];
  stk_args *args = base_args();
  CHECK(stk_args_set_int(args, "sise", 3) == STK_OK);
  CHECK(resolve(args, values, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "unknown argument 'sise'") && strstr(err, "size") && strstr(err, "my_op"), "%s", err);
  stk_args_destroy(args);
}

static void text_form_parsing(void) {
  stk__arg_value v;
  CHECK(stk__arg_parse_text(STK_ARG_INT, " 0x10 ", &v) == STK_OK && v.i == 16);
  CHECK(stk__arg_parse_text(STK_ARG_INT, "12a", &v) == STK_EPARSE);
  CHECK(stk__arg_parse_text(STK_ARG_FLOAT, "1e-3", &v) == STK_OK && v.f == 1e-3);
  CHECK(stk__arg_parse_text(STK_ARG_BOOL, "True", &v) == STK_OK && v.i == 1);
  CHECK(stk__arg_parse_text(STK_ARG_BOOL, "maybe", &v) == STK_EPARSE);
  CHECK(stk__arg_parse_text(STK_ARG_FLOAT_LIST, "[1, 2.5,]", &v) == STK_OK && v.count == 2 && v.flist[1] == 2.5);
  stk__arg_value_clear(&v);
  CHECK(stk__arg_parse_text(STK_ARG_INT_LIST, "[1, x]", &v) == STK_EPARSE);
  CHECK(stk__arg_parse_text(STK_ARG_INT_LIST, "[1, 2", &v) == STK_EPARSE);
  CHECK(stk__arg_parse_text(STK_ARG_INT_LIST, "5", &v) == STK_OK && v.count == 1 && v.ilist[0] == 5);
  stk__arg_value_clear(&v);
  CHECK_STR(stk_arg_type_name(STK_ARG_FLOAT_LIST), "float list");
}

static void setters_check_their_arguments(void) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  CHECK(stk_args_set_int(args, "", 1) == STK_EINVAL);
  CHECK(stk_args_set_string(args, "x", NULL) == STK_EINVAL);
  CHECK(stk_args_set_input(args, "x", "") == STK_EINVAL);
  const char *strs[2] = {"a", NULL};
  CHECK(stk_args_set_string_list(args, "x", strs, 2) == STK_EINVAL);
  CHECK(stk_args_set_string_list(args, "x", strs, 1) == STK_OK);
  CHECK(stk_args_set_int(NULL, "x", 1) == STK_EINVAL);
  stk_args_destroy(args);
  stk_args_destroy(NULL);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(missing_required_argument_named),
    STK_TEST_CASE(defaults_filled_from_text_form),
    STK_TEST_CASE(promotions_and_replacement),
    STK_TEST_CASE(argument_input_only_where_allowed),
    STK_TEST_CASE(wrong_types_named),
    STK_TEST_CASE(unknown_argument_lists_known_ones),
    STK_TEST_CASE(text_form_parsing),
    STK_TEST_CASE(setters_check_their_arguments),
};
// clang-format on

int main(int argc, char **argv) { return stk_test_run_cases("test_args", cases, STK_TEST_COUNT(cases), argc, argv); }
