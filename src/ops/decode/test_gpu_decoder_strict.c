/* src/ops/decode/test_gpu_decoder_strict.c: the mixed (nvJPEG) decoder's validate_entropy argument and its
 * host buffers in the host memory budget (docs/operators-io.md, docs/robustness.md).
 *   - Corrupt entropy-coded data: JPEGs damaged like scripts/fault-campaign.sh's "huffman" mode
 *     (1-3 random bytes in the entropy-coded data, headers and EOI intact) that the CPU decoder
 *     refuses. With validate_entropy=true every one is refused by the pre-stage (run_sample) with
 *     the CPU decoder's message, and by run_batch on its own naming the file. With it off (the
 *     default), hw_decoder_load=1 sends them to the hardware engines, which decode some of them
 *     without an error: at least one must be delivered when the GPU has engines (on an H100 about
 *     half of the CPU-refused files are).
 *   - In a pipeline with skip_bad_files, the corrupt file is refilled and recorded in the bad-files
 *     record with the same reason as by the CPU decoder.
 *   - Budget: a mixed decoder inside a budget counts its staging / host_image / nvJPEG pinned
 *     buffers after a batch (held > 0) and gives every byte back when destroyed (held == 0).
 * Skips without a CUDA device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "case_list.h"
#include "core/engine.h"
#include "device/device.h"
#include "gpu_jpeg.h"
#include "gpu_testutil.h"
#include "ops/decode/jpeg_route.h"
#include "ops/decode/jpeg.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define B 4
static const gpu_jpeg_kind kKinds[B] = {{"victim 420", 160, 120, 3, 420, 0, 90},
                                        {"good 444", 96, 64, 3, 444, 0, 92},
                                        {"good 420", 128, 96, 3, 420, 0, 85},
                                        {"good 422", 112, 80, 3, 422, 0, 90}};
static uint8_t *g_jpeg[B];
static stk__tensor g_encoded[B];
static stk__tensor_list g_in;
static stk__sample_plan g_samples[B];
static stk__batch_plan g_plan;
static char g_err[1024];
static uint64_t g_allocs;
static void *g_stream;
static stk__worker g_worker;
static stk_pipeline_options g_options;

static stk__op *make_op(int validate) {
  stk_args *args = NULL;
  CHECK(stk_args_new(&args) == STK_OK);
  stk_args_set_float(args, "hw_decoder_load", 1.0);
  stk_args_set_bool(args, "validate_entropy", validate);
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone("decoders.image", "mixed", args, &g_options, 3, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "decoders.image (mixed, validate_entropy=%d): %s", validate, g_err);
  stk_args_destroy(args);
  return st == STK_OK ? op : NULL;
}

static stk_status pre_stage(stk__op *op, int i, stk__tensor *stage) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = g_plan.epoch;
  ctx.sample_id = g_samples[i].sample_id;
  ctx.sample_in_batch = i;
  ctx.source = g_samples[i].source;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.thread_scratch = &g_worker;
  stk__tensor *ins[1] = {&g_encoded[i]}, *outs[1] = {stage};
  g_err[0] = 0;
  return op->impl->run_sample(op, &ctx, ins, outs);
}

/* run_batch as the GPU stage calls it; stage NULL: the operator on its own. */
static stk_status run_batch(stk__op *op, stk__tensor_list *stage, stk__tensor_list *out) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = g_plan.epoch;
  ctx.batch_size = B;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  ctx.stage = stage;
  stk__tensor_list *ins[1] = {&g_in}, *outs[1] = {out};
  g_err[0] = 0;
  stk_status st = op->impl->run_batch(op, &ctx, ins, outs);
  if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
  return st;
}

/* The whole batch through `op` as in a pipeline (pre-stage, then run_batch); *route0: slot 0's. */
static stk_status pipeline_batch(stk__op *op, int *route0) {
  stk__tensor stages[B];
  memset(stages, 0, sizeof stages);
  stk__tensor_list stage_list = {B, stages, 0, NULL, 0, STK_DEVICE_CPU, 0};
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk_status st = STK_OK;
  for (int i = 0; i < B && st == STK_OK; i++) st = pre_stage(op, i, &stages[i]);
  stk__jpeg_plan plan;
  *route0 = -1;
  if (st == STK_OK && stk__jpeg_plan_load(&stages[0], g_samples[0].sample_id, &plan, g_err, sizeof g_err) == STK_OK)
    *route0 = plan.route;
  if (st == STK_OK) st = run_batch(op, &stage_list, &out);
  stk__gpu_tensor_list_free(&out);
  for (int i = 0; i < B; i++) stk__tensor_free(&stages[i]);
  return st;
}

/* "huffman" damage of slot 0's JPEG: 1-3 random bytes after SOS+20, never after an 0xFF. */
static size_t damage(const uint8_t *src, size_t n, uint8_t *dst, uint32_t *rng) {
  memcpy(dst, src, n);
  size_t sos = 0;
  while (sos + 1 < n && !(dst[sos] == 0xFF && dst[sos + 1] == 0xDA)) sos++;
  *rng = *rng * 1664525u + 1013904223u;
  for (uint32_t k = 1 + (*rng >> 30) % 3; k > 0; k--) {
    *rng = *rng * 1664525u + 1013904223u;
    size_t p = sos + 20 + (*rng >> 8) % (n - 2 - sos - 20);
    if (dst[p - 1] != 0xFF) dst[p] = (uint8_t)(*rng >> 16);
  }
  return n;
}

static void corrupt_entropy_refused_only_when_validated(void) {
  stk__op *on = make_op(1), *off = make_op(0);
  const size_t n = g_encoded[0].nbytes;
  uint8_t *good = g_jpeg[0], *bad = (uint8_t *)malloc(n);
  uint32_t rng = 0x5354524bu;
  int candidates = 0, delivered = 0, engines = 0;
  for (int t = 0; t < 6000 && candidates < 30 && on && off; t++) { /* ~1 in 80 is refused */
    damage(good, n, bad, &rng);
    char cpu_err[512] = "";
    stk__tensor px = {0};
    stk_status cpu = stk__jpeg_decode(bad, n, STK__COLOR_RGB, NULL, 0, 0, &px, NULL, cpu_err, sizeof cpu_err);
    stk__tensor_free(&px);
    if (cpu != STK_EBADIMAGE || !strstr(cpu_err, "corrupt JPEG data")) continue; /* the CPU takes it */
    candidates++;
    g_encoded[0].data = bad;
    stk__tensor stage = {0};
    stk_status st = pre_stage(on, 0, &stage);
    stk__tensor_free(&stage);
    CHECK_MSG(st == STK_EBADIMAGE && strcmp(g_err, cpu_err) == 0, "validated pre-stage: %s '%s', CPU decoder: '%s'",
              stk_status_name(st), g_err, cpu_err);
    stk__tensor_list out;
    memset(&out, 0, sizeof out);
    st = run_batch(on, NULL, &out); /* on its own: checked while planning */
    stk__gpu_tensor_list_free(&out);
    CHECK_MSG(st == STK_EBADIMAGE && strstr(g_err, kKinds[0].name) && strstr(g_err, cpu_err),
              "validated run_batch: %s '%s'", stk_status_name(st), g_err);
    int route0 = -1;
    st = pipeline_batch(off, &route0);
    engines += route0 == STK__JPEG_ROUTE_HW;
    delivered += st == STK_OK && route0 == STK__JPEG_ROUTE_HW;
  }
  g_encoded[0].data = good;
  printf(
      "%d corrupt files the CPU refuses: all refused with validate_entropy; without it %d of %d sent to the "
      "engines were delivered\n",
      candidates, delivered, engines);
  CHECK(candidates >= 10);
  if (engines > 0) CHECK_MSG(delivered > 0, "the engines refused every corrupt file themselves");
  else printf("no hardware engines on this GPU: the delivered-without-validation half not checked\n");
  int route0 = -1;
  CHECK_MSG(pipeline_batch(on, &route0) == STK_OK, "good batch with validate_entropy: %s", g_err);
  free(bad);
  stk__op_free_standalone(on);
  stk__op_free_standalone(off);
}

static void host_buffers_counted_in_budget(void) {
  stk__op *op = make_op(0);
  if (!op) return;
  stk__host_budget budget = {0, SIZE_MAX};
  op->impl->destroy(op); /* again with a budget: init reads op->host_budget */
  op->host_budget = &budget;
  CHECK_MSG(op->impl->init(op, g_err, sizeof g_err) == STK_OK, "%s", g_err);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  CHECK_MSG(run_batch(op, NULL, &out) == STK_OK, "%s", g_err); /* unpinned inputs: staging, lanes */
  size_t held = __atomic_load_n(&budget.held, __ATOMIC_RELAXED);
  printf("mixed decoder's host buffers after one batch: %zu bytes counted\n", held);
  CHECK_MSG(held > 0, "the mixed decoder's host buffers are not counted");
  stk__gpu_tensor_list_free(&out);
  op->impl->destroy(op);
  CHECK_MSG(budget.held == 0, "%zu bytes still counted after destroy", budget.held);
  op->host_budget = NULL;
  stk__op_free_standalone(op);
}

/* The bad-files record of one epoch of readers.file -> decoders.image (device, validate_entropy)
 * with skip_bad_files over `root`; malloc'd JSON lines, NULL on failure. */
static char *bad_files_of(const char *root, const char *device, int validate) {
  stk_pipeline_options o;
  stk_pipeline_options_default(&o);
  o.batch_size = 5, o.num_threads = 2, o.device_id = 0, o.pin_threads = 0, o.skip_bad_files = 1;
  stk_pipeline *p = NULL;
  stk_args *ra = NULL, *da = NULL;
  CHECK(stk_pipeline_new(&o, &p) == STK_OK && stk_args_new(&ra) == STK_OK && stk_args_new(&da) == STK_OK);
  stk_args_set_string(ra, "file_root", root);
  stk_args_set_string(da, "device", device);
  stk_args_set_float(da, "hw_decoder_load", 1.0);
  stk_args_set_bool(da, "validate_entropy", validate);
  const char *reader_in[1] = {NULL}, *dec_in[1] = {"reader"}, *outs[2] = {"images", "reader[1]"};
  CHECK(stk_pipeline_add_op(p, "readers.file", "reader", reader_in, 0, ra) == STK_OK);
  CHECK(stk_pipeline_add_op(p, "decoders.image", "images", dec_in, 1, da) == STK_OK);
  CHECK(stk_pipeline_set_outputs(p, outs, 2) == STK_OK);
  stk_status st = stk_pipeline_build(p);
  CHECK_MSG(st == STK_OK, "%s", stk_pipeline_last_error(p));
  stk_batch *b = NULL;
  if (st == STK_OK) st = stk_pipeline_next(p, &b);
  CHECK_MSG(st == STK_OK, "%s validate_entropy=%d: %s", device, validate, stk_pipeline_last_error(p));
  if (st == STK_OK) stk_batch_release(b);
  char *json = NULL;
  if (st == STK_OK) CHECK(stk_pipeline_bad_files_json(p, &json) == STK_OK);
  stk_args_destroy(ra);
  stk_args_destroy(da);
  stk_pipeline_destroy(p);
  return json;
}

/* In a pipeline with skip_bad_files: the corrupt file is refilled and recorded with the CPU
 * decoder's reason, exactly as the CPU decoder records it. */
static void pipeline_records_same_reason_as_cpu(void) {
  char *root = stk_test_tmpdir("gpu_decoder_strict");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/a", root);
  mkdir(dir, 0755);
  const size_t n = g_encoded[0].nbytes;
  uint8_t *bad = (uint8_t *)malloc(n);
  uint32_t rng = 0x52454331u;
  char cpu_err[512] = "";
  for (int t = 0; t < 200; t++) { /* the first damage the CPU refuses as corrupt */
    damage(g_jpeg[0], n, bad, &rng);
    stk__tensor px = {0};
    stk_status cpu = stk__jpeg_decode(bad, n, STK__COLOR_RGB, NULL, 0, 0, &px, NULL, cpu_err, sizeof cpu_err);
    stk__tensor_free(&px);
    if (cpu == STK_EBADIMAGE && strstr(cpu_err, "corrupt JPEG data")) break;
    cpu_err[0] = '\0';
  }
  CHECK(cpu_err[0] != '\0');
  CHECK(gpu_write_file(dir, "c_corrupt.jpg", bad, n));
  for (int i = 0; i < B; i++) {
    char name[32];
    snprintf(name, sizeof name, "g%d.jpg", i);
    CHECK(gpu_write_file(dir, name, g_jpeg[i], g_encoded[i].nbytes));
  }
  char *cpu = bad_files_of(root, "cpu", 0), *mixed = bad_files_of(root, "mixed", 1);
  printf("cpu: %smixed, validate_entropy: %s", cpu ? cpu : "(none)\n", mixed ? mixed : "(none)\n");
  CHECK_MSG(cpu && strstr(cpu, "c_corrupt.jpg") && strstr(cpu, "corrupt JPEG data"), "%s", cpu ? cpu : "");
  CHECK_MSG(cpu && mixed && strcmp(cpu, mixed) == 0, "the records differ");
  free(cpu);
  free(mixed);
  free(bad);
  CHECK(stk_test_remove_tree(root) == 0);
  free(root);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(corrupt_entropy_refused_only_when_validated),
    STK_TEST_CASE(host_buffers_counted_in_budget),
    STK_TEST_CASE(pipeline_records_same_reason_as_cpu),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_require_device(0);
  stk_pipeline_options_default(&g_options);
  g_options.device_id = 0;
  g_options.num_threads = 1;
  CHECK(stk__gpu_set_device(0) == STK_OK);
  CHECK(stk__gpu_stream_create(&g_stream, STK_STREAM_PRIORITY_NORMAL) == STK_OK);
  g_plan.epoch = 1;
  g_plan.batch_size = B;
  g_plan.samples = g_samples;
  g_in.count = B;
  g_in.samples = g_encoded;
  g_in.device = STK_DEVICE_CPU;
  for (int i = 0; i < B; i++) {
    size_t size = 0;
    g_jpeg[i] = gpu_jpeg_make(&kKinds[i], (unsigned)i + 5, &size);
    memset(&g_encoded[i], 0, sizeof g_encoded[i]);
    g_encoded[i].data = g_jpeg[i];
    g_encoded[i].nbytes = size;
    g_encoded[i].dtype = STK_DTYPE_UINT8;
    g_encoded[i].ndim = 1;
    g_encoded[i].shape[0] = (int64_t)size;
    g_encoded[i].device = STK_DEVICE_CPU;
    g_samples[i].sample_id = 40 + i;
    g_samples[i].source = kKinds[i].name;
  }
  int rc = stk_test_run_selected("test_gpu_decoder_strict", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < B; i++) free(g_jpeg[i]);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_decoder_strict");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
