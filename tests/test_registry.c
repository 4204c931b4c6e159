/* tests/test_registry.c: the operator table and the registry over it: every row well formed
 * (its implementations match the devices its schema declares, in this build), the fusion pairs
 * name rows of the table, the registry queries (stk_op_count/schema/find/arg), run-time
 * registration of test-only rows, the implementation and fusion lookups, and standalone operator
 * instances (argument resolution, device choice, init failure, one operator prefix on messages). */
#include <string.h>

#include "core/args.h"
#include "device/device.h"
#include "case_list.h"
#include "testutil.h"

static int destroyed;

static stk_status test_init(stk__op *op, char *err, size_t err_size) {
  if (stk__arg_int(op, "fail_init")) {
    op->state = malloc(16); /* half-made state: destroy must still free it */
    stk__errorf(err, err_size, "init refused: fail_init=%lld", (long long)stk__arg_int(op, "fail_init"));
    return STK_EINVAL;
  }
  op->state = malloc(32);
  return op->state ? STK_OK : STK_ENOMEM;
}

static void test_destroy(stk__op *op) {
  free(op->state);
  op->state = NULL;
  destroyed++;
}

static const stk__op_impl test_impl = {.init = test_init, .destroy = test_destroy};

static const stk__arg_schema reg_args[] = {
    {"fail_init", STK_ARG_INT, "0", 0, 0, "make init fail"},
    {"scale", STK_ARG_FLOAT, "2.0", 0, 1, "a scale (may be an argument input)"},
};

static const stk__op_schema reg_schema = {.name = "test.registry",
                                          .doc = "a test-only operator",
                                          .min_inputs = 1,
                                          .max_inputs = 1,
                                          .num_outputs = 1,
                                          .devices = STK_OPDEV_CPU | STK_OPDEV_GPU,
                                          .args = reg_args,
                                          .num_args = 2};
static const stk__op_entry reg_entry = {&reg_schema, &test_impl, NULL, NULL};

/* Each row: a named schema, a CPU implementation that runs per sample (or plans batches for a
 * reader), and mixed/gpu implementations exactly where the schema declares the device (in a
 * CUDA build) or none at all (without CUDA). */
static void check_table(void) {
  CHECK(stk__op_table_count > 0);
  for (int i = 0; i < stk__op_table_count; i++) {
    const stk__op_entry *e = &stk__op_table[i];
    const char *name = e->schema && e->schema->name ? e->schema->name : "(unnamed)";
    CHECK_MSG(e->schema && e->schema->name, "row %d has no schema", i);
    if (!e->schema) continue;
    CHECK_MSG(stk__op_entry_find(name) == e, "%s: found at another row", name);
    CHECK_MSG((e->cpu != NULL) == ((e->schema->devices & STK_OPDEV_CPU) != 0), "%s: cpu column vs devices", name);
    CHECK_MSG(!e->cpu || (e->schema->is_reader ? e->cpu->plan_batch != NULL : e->cpu->run_sample != NULL),
              "%s: the cpu implementation cannot run", name);
    const int cuda = stk__gpu_built();
    CHECK_MSG((e->mixed != NULL) == (cuda && (e->schema->devices & STK_OPDEV_MIXED)), "%s: mixed column", name);
    CHECK_MSG((e->gpu != NULL) == (cuda && (e->schema->devices & STK_OPDEV_GPU)), "%s: gpu column", name);
    CHECK_MSG(!e->mixed || e->mixed->run_batch, "%s: mixed implementation without run_batch", name);
    CHECK_MSG(!e->gpu || e->gpu->run_batch, "%s: gpu implementation without run_batch", name);
    CHECK(stk__op_impl_find(e->schema, STK__DEV_CPU) == e->cpu);
    CHECK(stk__op_impl_find(e->schema, STK__DEV_MIXED) == e->mixed);
    CHECK(stk__op_impl_find(e->schema, STK__DEV_GPU) == e->gpu);
  }
  for (int i = 0; i < stk__op_fusions_count; i++) {
    const stk__op_fusion *f = &stk__op_fusions[i];
    CHECK_MSG(f->first && stk__op_schema_find(f->first->name) == f->first, "fusion %d: first is not a row", i);
    CHECK_MSG(f->second && stk__op_schema_find(f->second->name) == f->second, "fusion %d: second is not a row", i);
    CHECK_MSG((f->fused != NULL) == (stk__gpu_built() != 0), "fusion %d: fused column vs this build", i);
    CHECK(stk__op_fused_impl_find(f->first, f->second) == f->fused);
    CHECK(!f->fused || stk__op_fused_impl_find(f->second, f->first) == NULL); /* ordered pairs */
  }
  CHECK(stk__op_fused_impl_find(NULL, NULL) == NULL);
}

/* The test row, registered once per process (the registration case checks the rules itself). */
static void ensure_registered(void) {
  int idx = -1;
  if (stk_op_find("test.registry", &idx) != STK_OK) CHECK(stk__op_register(&reg_entry) == STK_OK);
}

/* Every built-in is findable by its name at its index, with well-formed args. */
static void builtins_findable_by_name(void) {
  int builtin = stk_op_count();
  int idx = -1;
  if (stk_op_find("test.registry", &idx) == STK_OK) builtin--; /* the test row, when registered first */
  CHECK(builtin == stk__op_table_count);
  for (int i = 0; i < builtin; i++) {
    stk_op_schema_info info;
    CHECK(stk_op_schema(i, &info) == STK_OK);
    int found = -1;
    CHECK(stk_op_find(info.name, &found) == STK_OK && found == i);
    for (int a = 0; a < info.num_args; a++) {
      stk_op_arg_info ai;
      CHECK(stk_op_arg(i, a, &ai) == STK_OK && ai.name && ai.doc);
    }
  }
}

/* Registration at run time: a name once, a schema required; the row is then queryable. */
static void runtime_registration_rules(void) {
  int builtin = stk_op_count();
  int idx = -1;
  if (stk_op_find("test.registry", &idx) == STK_OK) return; /* another case registered it: run alone to check */
  CHECK(stk__op_register(&reg_entry) == STK_OK);
  CHECK(stk__op_register(&reg_entry) == STK_EINVAL); /* name taken */
  const stk__op_entry no_schema = {NULL, &test_impl, NULL, NULL};
  CHECK(stk__op_register(&no_schema) == STK_EINVAL);
  CHECK(stk_op_count() == builtin + 1);
  CHECK(stk_op_find("test.registry", &idx) == STK_OK && idx == builtin);
  CHECK(stk_op_find("no.such.op", &idx) == STK_ENOENT);
  stk_op_schema_info info;
  CHECK(stk_op_schema(idx, &info) == STK_OK);
  CHECK_STR(info.name, "test.registry");
  CHECK(info.num_args == 2 && info.devices == (STK_OPDEV_CPU | STK_OPDEV_GPU));
  stk_op_arg_info ai;
  CHECK(stk_op_arg(idx, 1, &ai) == STK_OK);
  CHECK_STR(ai.name, "scale");
  CHECK(ai.type == STK_ARG_FLOAT && strcmp(ai.default_value, "2.0") == 0 && !ai.required);
  CHECK(stk_op_arg(idx, 2, &ai) == STK_EINVAL);
  CHECK(stk_op_schema(-1, &info) == STK_EINVAL);
  CHECK(stk_op_schema(idx + 1, &info) == STK_EINVAL);
  CHECK(stk__op_schema_find("test.registry") == &reg_schema);
  CHECK(stk__op_impl_find(&reg_schema, STK__DEV_CPU) == &test_impl);
  CHECK(stk__op_impl_find(&reg_schema, STK__DEV_GPU) == NULL);
  CHECK(stk__op_fused_impl_find(&reg_schema, &reg_schema) == NULL);
}

/* Standalone instances: seed and id from the options, arguments resolved, destroy called; an
 * argument input takes the slot after the regular inputs. */
static void standalone_instances(void) {
  ensure_registered();
  char err[512] = "";
  stk__op *op = NULL;
  stk_pipeline_options opts;
  stk_pipeline_options_default(&opts);
  opts.seed = 7;
  stk_args *args;
  CHECK(stk_args_new(&args) == STK_OK);
  CHECK(stk_args_set_int(args, "scale", 3) == STK_OK);
  destroyed = 0;
  CHECK(stk__op_new_standalone("test.registry", NULL, args, &opts, 5, &op, err, sizeof err) == STK_OK);
  if (op) {
    CHECK(op->id == 5 && op->seed == 7 && op->device == STK__DEV_CPU && op->impl == &test_impl);
    CHECK(stk__arg_float(op, "scale") == 3.0 && stk__arg_is_set(op, "scale"));
    CHECK(op->state != NULL);
    stk__op_free_standalone(op);
    CHECK(destroyed == 1);
  }
  CHECK(stk_args_set_input(args, "scale", "other") == STK_OK);
  CHECK(stk__op_new_standalone("test.registry", "cpu", args, NULL, 0, &op, err, sizeof err) == STK_OK);
  if (op) {
    CHECK(stk__arg(op, "scale")->input_slot == 1);
    stk__tensor in0 = {0}, in1 = {0};
    float value = 4.0f;
    in1.data = &value;
    in1.nbytes = 4;
    in1.dtype = STK_DTYPE_FLOAT32;
    stk__tensor *const inputs[2] = {&in0, &in1};
    CHECK(stk__tensor_scalar(stk__arg_input(op, inputs, "scale")) == 4.0);
    stk__op_free_standalone(op);
  }
  stk_args_destroy(args);
}

/* Unknown operators and devices the row does not have are errors naming them. */
static void standalone_errors_name_op_and_device(void) {
  ensure_registered();
  char err[512] = "";
  stk__op *op = NULL;
  CHECK(stk__op_new_standalone("no.such.op", NULL, NULL, NULL, 0, &op, err, sizeof err) == STK_ENOENT);
  CHECK_MSG(strstr(err, "no.such.op"), "%s", err);
  CHECK(stk__op_new_standalone("test.registry", "tpu", NULL, NULL, 0, &op, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "device") && strstr(err, "tpu"), "%s", err);
  CHECK(stk__op_new_standalone("test.registry", "mixed", NULL, NULL, 0, &op, err, sizeof err) == STK_ENOTSUP);
  CHECK_MSG(strstr(err, "mixed"), "%s", err);
  /* gpu is in the schema's devices, but no test GPU implementation exists. */
  CHECK(stk__op_new_standalone("test.registry", "gpu", NULL, NULL, 0, &op, err, sizeof err) == STK_ENOTSUP);
  CHECK(op == NULL);
}

/* A failed init: its half-made state destroyed, the message prefixed once (by the registry), and a
 * bad argument type named. */
static void init_failure_named_once(void) {
  ensure_registered();
  char err[512] = "";
  stk__op *op = NULL;
  stk_args *args;
  CHECK(stk_args_new(&args) == STK_OK);
  CHECK(stk_args_set_int(args, "fail_init", 9) == STK_OK);
  destroyed = 0;
  CHECK(stk__op_new_standalone("test.registry", NULL, args, NULL, 0, &op, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "fail_init=9"), "%s", err);
  CHECK_MSG(strncmp(err, "operator test.registry: init refused", 36) == 0, "%s", err);
  CHECK(destroyed == 1 && op == NULL);
  CHECK(stk_args_set_string(args, "scale", "x") == STK_OK);
  CHECK(stk__op_new_standalone("test.registry", NULL, args, NULL, 0, &op, err, sizeof err) == STK_EINVAL);
  CHECK_MSG(strstr(err, "test.registry") && strstr(err, "'scale'") && strstr(err, "float"), "%s", err);
  stk_args_destroy(args);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(check_table),
    STK_TEST_CASE(builtins_findable_by_name),
    STK_TEST_CASE(runtime_registration_rules),
    STK_TEST_CASE(standalone_instances),
    STK_TEST_CASE(standalone_errors_name_op_and_device),
    STK_TEST_CASE(init_failure_named_once),
};
// clang-format on

int main(int argc, char **argv) {
  return stk_test_run_cases("test_registry", cases, STK_TEST_COUNT(cases), argc, argv);
}
