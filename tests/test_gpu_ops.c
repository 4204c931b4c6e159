/* tests/test_gpu_ops.c: the GPU augmentation operators (resize, random_resized_crop,
 * crop_mirror_normalize and the fused resize/random_resized_crop + crop_mirror_normalize node),
 * built through the registry (stk__op_new_standalone, so schema defaults apply exactly as in a
 * pipeline), against the CPU operators built the same way with the same arguments, op id and
 * seed, on random images of assorted (odd) sizes. Shapes must be identical (same size rules, same
 * random windows). Values:
 *   - u8 outputs (resize, random_resized_crop, cmn uint8): <= 1 level, and at most 0.1% of the
 *     values may differ at all (the kernels repeat the CPU's arithmetic step by step without FMA,
 *     so on x86-64 they are expected to be bit-identical; the count is printed);
 *   - float: <= 1e-4 relative to max(1, |cpu|); float16: the same, in value units, beyond one half
 *     spacing (the float16 rounding of both sides);
 *   - fused float / float16: <= 1/std + 1e-4 (the fused resize step may round one u8 level apart).
 * Also: argument errors match the CPU's, the mirror argument bound to a per-sample input (in the
 * fused node, the slot the engine assigns), out_of_bounds_policy pad/trim/error, same bytes on a
 * second run and with the fused kernel on 3 looping blocks, on one block a tile (STOKER_FUSED_BLOCKS)
 * and in 4 launches (STOKER_FUSED_SPLIT), no allocation after warm-up, dense vs ragged outputs.
 * Skips without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "gpu_testutil.h"
#include "ops/common/dtype.h"
#include "ops/op_impls.h"
#include "ops/common/gpu_ops.h"
#include "case_list.h"
#include "testutil.h"

#if defined(STOKER_HAVE_CUDA)

#define N 6
static const int kW[N] = {37, 120, 64, 200, 17, 333};
static const int kH[N] = {53, 80, 64, 150, 300, 251};
static stk__tensor g_host[N]; /* HWC u8 host images */
static uint8_t g_coin[N] = {1, 0, 1, 1, 0, 0};
static stk__tensor g_coin_t[N]; /* host scalars: the mirror argument input */
static stk__tensor_list g_coin_list;
static stk__tensor_list g_in; /* the same images on the GPU */

static void *g_stream;
static uint64_t g_allocs;
static char g_err[1024];
static stk__sample_plan g_samples[N];
static stk__batch_plan g_plan;
static stk__worker g_worker;

static stk__batch_ctx make_ctx(void) {
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.batch_size = N;
  ctx.plan = &g_plan;
  ctx.cuda_stream = g_stream;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.alloc_count = &g_allocs;
  return ctx;
}

static stk_args *args_new(void) {
  stk_args *a = NULL;
  CHECK(stk_args_new(&a) == STK_OK);
  return a;
}

static stk__op *make_op(const char *name, const char *device, const stk_args *args, int id) {
  stk__op *op = NULL;
  g_err[0] = 0;
  stk_status st = stk__op_new_standalone(name, device, args, NULL, id, &op, g_err, sizeof g_err);
  CHECK_MSG(st == STK_OK, "%s (%s): %s", name, device, g_err);
  return st == STK_OK ? op : NULL;
}

/* Runs a CPU operator on sample i (inputs: image, then the mirror input when bound). */
static stk_status cpu_run(stk__op *op, int i, stk__tensor *image, stk__tensor *out) {
  stk__sample_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.epoch = 3;
  ctx.sample_id = g_samples[i].sample_id;
  ctx.sample_in_batch = i;
  ctx.err = g_err;
  ctx.err_size = sizeof g_err;
  ctx.thread_scratch = &g_worker;
  stk__tensor *inputs[2] = {image, &g_coin_t[i]};
  stk__tensor *outs[1] = {out};
  return op->impl->run_sample(op, &ctx, inputs, outs);
}

static stk_status gpu_run(stk__op *op, stk__tensor_list *in, stk__tensor_list *out) {
  stk__batch_ctx ctx = make_ctx();
  stk__tensor_list *ins[2] = {in, &g_coin_list}, *outs[1] = {out};
  g_err[0] = 0;
  stk_status st = op->impl->run_batch(op, &ctx, ins, outs);
  if (st == STK_OK) st = stk__gpu_stream_synchronize(g_stream);
  return st;
}

static void *download(const stk__tensor *t) {
  void *host = malloc(t->nbytes ? t->nbytes : 1);
  CHECK(stk__gpu_memcpy_d2h(host, t->data, t->nbytes, g_stream) == STK_OK);
  return host;
}

typedef struct diff_stats {
  double worst;     /* in the unit of the tolerance (levels, relative, ulps) */
  size_t differing; /* values not bit-identical */
  size_t total;
  int shape_mismatch;
} diff_stats;

/* float16 difference in the same units as float (relative to max(1, |cpu|)), less what rounding both
 * sides to float16 can explain (one half spacing at the larger magnitude): a GPU and CPU float result
 * that differ by d round to halves that differ by at most d + one spacing. Raw bit distance would
 * measure in ulps (36 ulps near 0.7 is one u8 level / std) and is meaningless across the sign. */
static double half_difference(uint16_t a_bits, uint16_t b_bits) {
  double a = stk__half_to_float(a_bits), b = stk__half_to_float(b_bits);
  double larger = fmax(fabs(a), fabs(b));
  int exponent;
  frexp(larger, &exponent); /* larger = m * 2^exponent, m in [0.5, 1) */
  double spacing = larger >= 6.103515625e-05 ? ldexp(1.0, exponent - 11) : ldexp(1.0, -24);
  return fmax(0.0, fabs(a - b) - spacing) / fmax(1.0, fabs(b));
}

/* Compares GPU sample t (device) with CPU tensor c. */
static void compare(const stk__tensor *t, const stk__tensor *c, diff_stats *d) {
  if (t->ndim != c->ndim || t->dtype != c->dtype || t->nbytes != c->nbytes) {
    d->shape_mismatch++;
    return;
  }
  for (int k = 0; k < t->ndim; k++)
    if (t->shape[k] != c->shape[k]) {
      d->shape_mismatch++;
      return;
    }
  void *g = download(t);
  size_t n = stk__tensor_numel(c);
  for (size_t k = 0; k < n; k++) {
    double e = 0;
    int same = 1;
    if (c->dtype == STK_DTYPE_UINT8) {
      int a = ((uint8_t *)g)[k], b = ((uint8_t *)c->data)[k];
      e = abs(a - b), same = a == b;
    } else if (c->dtype == STK_DTYPE_FLOAT16) {
      uint16_t a = ((uint16_t *)g)[k], b = ((uint16_t *)c->data)[k];
      e = half_difference(a, b), same = a == b;
    } else {
      float a = ((float *)g)[k], b = ((float *)c->data)[k];
      e = fabs((double)a - b) / fmax(1.0, fabs((double)b)), same = a == b;
    }
    if (e > d->worst) d->worst = e;
    d->differing += !same;
  }
  d->total += n;
  free(g);
}

/* GPU op vs CPU op (same args, id, seed) over the whole batch; `cpu_first` != NULL: the CPU
 * chain is cpu_first then cpu_op (what the fused node must reproduce). */
static void check_against_cpu(const char *what, stk__op *gpu_op, stk__op *cpu_first, stk__op *cpu_op, double tolerance,
                              double max_differing_fraction) {
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  stk_status st = gpu_run(gpu_op, &g_in, &out);
  CHECK_MSG(st == STK_OK, "%s: %s", what, g_err);
  if (st != STK_OK) return;
  diff_stats d = {0, 0, 0, 0};
  for (int i = 0; i < N; i++) {
    stk__tensor mid, cpu;
    memset(&mid, 0, sizeof mid);
    memset(&cpu, 0, sizeof cpu);
    stk__tensor *src = &g_host[i];
    if (cpu_first) {
      CHECK_MSG(cpu_run(cpu_first, i, src, &mid) == STK_OK, "%s: cpu %s", what, g_err);
      src = &mid;
    }
    CHECK_MSG(cpu_run(cpu_op, i, src, &cpu) == STK_OK, "%s: cpu %s", what, g_err);
    compare(&out.samples[i], &cpu, &d);
    stk__tensor_free(&mid);
    stk__tensor_free(&cpu);
  }
  double fraction = d.total ? (double)d.differing / (double)d.total : 0;
  printf("%-48s worst %.3g (tolerance %.3g), %zu of %zu values differ (%.4f%%), shape mismatches %d\n", what, d.worst,
         tolerance, d.differing, d.total, 100.0 * fraction, d.shape_mismatch);
  CHECK_MSG(d.shape_mismatch == 0, "%s: %d samples have another shape than on the CPU", what, d.shape_mismatch);
  CHECK_MSG(d.total > 0, "%s: nothing compared", what);
  CHECK_MSG(d.worst <= tolerance, "%s: worst difference %g > %g", what, d.worst, tolerance);
  CHECK_MSG(fraction <= max_differing_fraction, "%s: %.4f%% of the values differ", what, 100.0 * fraction);
  stk__gpu_tensor_list_free(&out);
}

static void test_resize_family(void) {
  struct {
    const char *what;
    const char *keys[3];
    double values[3];
    const char *interp;
  } cases[] = {
      {"resize 50x41 linear", {"resize_x", "resize_y", NULL}, {50, 41, 0}, "INTERP_LINEAR"},
      {"resize shorter=37 (subpixel roi) linear", {"resize_shorter", NULL, NULL}, {37, 0, 0}, "INTERP_LINEAR"},
      {"resize 300x97 cubic (upscale+downscale)", {"resize_x", "resize_y", NULL}, {300, 97, 0}, "INTERP_CUBIC"},
      {"resize x=29 nearest", {"resize_x", NULL, NULL}, {29, 0, 0}, "INTERP_NN"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    stk_args *a = args_new();
    for (int k = 0; k < 3 && cases[c].keys[k]; k++) stk_args_set_float(a, cases[c].keys[k], cases[c].values[k]);
    stk_args_set_string(a, "interp_type", cases[c].interp);
    stk__op *cpu = make_op("resize", "cpu", a, 1), *gpu = make_op("resize", "gpu", a, 1);
    if (cpu && gpu) check_against_cpu(cases[c].what, gpu, NULL, cpu, 1, 0.001);
    stk__op_free_standalone(cpu);
    stk__op_free_standalone(gpu);
    stk_args_destroy(a);
  }
  /* random_resized_crop: same windows (shapes and pixels), size = [height, width]. */
  stk_args *a = args_new();
  const double size[2] = {40, 48};
  stk_args_set_float_list(a, "size", size, 2);
  stk__op *cpu = make_op("random_resized_crop", "cpu", a, 4), *gpu = make_op("random_resized_crop", "gpu", a, 4);
  if (cpu && gpu) check_against_cpu("random_resized_crop [40, 48]", gpu, NULL, cpu, 1, 0.001);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  if (gpu && gpu_run(gpu, &g_in, &out) == STK_OK) {
    CHECK(out.samples[0].shape[0] == 40 && out.samples[0].shape[1] == 48);
    CHECK_MSG(out.dense == 1, "equal-shaped outputs must form one dense batch tensor");
  }
  stk__gpu_tensor_list_free(&out);
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
  /* A ragged output (aspect kept) is not dense. */
  a = args_new();
  stk_args_set_float(a, "resize_shorter", 20);
  gpu = make_op("resize", "gpu", a, 1);
  memset(&out, 0, sizeof out);
  if (gpu && gpu_run(gpu, &g_in, &out) == STK_OK) CHECK_MSG(out.dense == 0, "ragged outputs reported dense");
  stk__gpu_tensor_list_free(&out);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
}

static stk_args *cmn_args(const char *dtype, int mirror, int bind_mirror) {
  stk_args *a = args_new();
  const double crop[2] = {16, 12}, mean[3] = {123.675, 116.28, 103.53}, stdv[3] = {58.395, 57.12, 57.375};
  stk_args_set_float_list(a, "crop", crop, 2);
  stk_args_set_float_list(a, "mean", mean, 3);
  stk_args_set_float_list(a, "std", stdv, 3);
  stk_args_set_string(a, "dtype", dtype);
  stk_args_set_float(a, "crop_pos_x", 0.3);
  if (bind_mirror) stk_args_set_input(a, "mirror", "coin");
  else stk_args_set_int(a, "mirror", mirror);
  return a;
}

static void cmn_case(const char *what, stk_args *a, double tolerance, double fraction) {
  stk__op *cpu = make_op("crop_mirror_normalize", "cpu", a, 2);
  stk__op *gpu = make_op("crop_mirror_normalize", "gpu", a, 2);
  if (cpu && gpu) check_against_cpu(what, gpu, NULL, cpu, tolerance, fraction);
  stk__op_free_standalone(cpu);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
}

static void test_cmn(void) {
  cmn_case("cmn float, mirror=0", cmn_args("float", 0, 0), 1e-4, 0.001);
  cmn_case("cmn float, mirror=1", cmn_args("float", 1, 0), 1e-4, 0.001);
  cmn_case("cmn float, mirror bound to a per-sample input", cmn_args("float", 0, 1), 1e-4, 0.001);
  cmn_case("cmn float16, mirror=1", cmn_args("float16", 1, 0), 1e-4, 0.001);
  cmn_case("cmn uint8", cmn_args("uint8", 0, 0), 1, 0.001);
  /* scale/shift, pad_output with a fill value, HWC */
  stk_args *a = cmn_args("float", 1, 0);
  const double fill[4] = {-1, -2, -3, 7};
  stk_args_set_float(a, "scale", 0.5);
  stk_args_set_float(a, "shift", 3);
  stk_args_set_bool(a, "pad_output", 1);
  stk_args_set_float_list(a, "fill_values", fill, 4);
  stk_args_set_string(a, "output_layout", "HWC");
  cmn_case("cmn scale/shift/pad_output/HWC", a, 1e-4, 0.001);
  /* crops larger than some images: pad (fill values) and trim_to_shape */
  a = cmn_args("float", 1, 0);
  const double big[2] = {120, 90};
  stk_args_set_float_list(a, "crop", big, 2);
  stk_args_set_float_list(a, "fill_values", fill, 3);
  stk_args_set_string(a, "out_of_bounds_policy", "pad");
  cmn_case("cmn out_of_bounds_policy=pad", a, 1e-4, 0.001);
  a = cmn_args("float", 0, 0);
  stk_args_set_float_list(a, "crop", big, 2);
  stk_args_set_string(a, "out_of_bounds_policy", "trim_to_shape");
  cmn_case("cmn out_of_bounds_policy=trim_to_shape", a, 1e-4, 0.001);
  /* default policy "error": the batch fails with a message naming the sample */
  a = cmn_args("float", 0, 0);
  stk_args_set_float_list(a, "crop", big, 2);
  stk__op *gpu = make_op("crop_mirror_normalize", "gpu", a, 2);
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  if (gpu) {
    CHECK(gpu_run(gpu, &g_in, &out) == STK_EINVAL);
    CHECK_MSG(strstr(g_err, "does not fit") && strstr(g_err, "sample"), "message: %s", g_err);
  }
  stk__gpu_tensor_list_free(&out);
  stk__op_free_standalone(gpu);
  stk_args_destroy(a);
  /* argument errors come from the one parse the CPU implementation uses: the same message */
  a = cmn_args("float", 0, 0);
  stk_args_set_string(a, "output_layout", "WHC");
  stk__op *bad = NULL;
  CHECK(stk__op_new_standalone("crop_mirror_normalize", "gpu", a, NULL, 2, &bad, g_err, sizeof g_err) == STK_EINVAL);
  CHECK_MSG(strstr(g_err, "output_layout") != NULL, "message: %s", g_err);
  char cpu_err[1024] = "";
  CHECK(stk__op_new_standalone("crop_mirror_normalize", "cpu", a, NULL, 2, &bad, cpu_err, sizeof cpu_err) ==
        STK_EINVAL);
  CHECK_MSG(strcmp(cpu_err, g_err) == 0, "gpu \"%s\" vs cpu \"%s\"", g_err, cpu_err);
  stk__op_free_standalone(bad);
  stk_args_destroy(a);
}

/* The fused node as the engine builds it: a copy of the cmn op running the fused implementation,
 * fused[0] = the resize op, fused[1] = the cmn op; cmn's argument inputs after the first op's. */
static void fused_case(const char *what, const char *first_name, stk_args *first_args, stk_args *cmn_a) {
  stk__op *first_cpu = make_op(first_name, "cpu", first_args, 4),
          *first_gpu = make_op(first_name, "gpu", first_args, 4);
  stk__op *cmn_cpu = make_op("crop_mirror_normalize", "cpu", cmn_a, 5);
  stk__op *cmn_gpu = make_op("crop_mirror_normalize", "gpu", cmn_a, 5);
  if (!first_cpu || !first_gpu || !cmn_cpu || !cmn_gpu) goto done;
  stk__op fused = *cmn_gpu;
  fused.state = NULL;
  fused.impl = stk__op_fused_impl_find(first_gpu->schema, cmn_gpu->schema); /* the operator table's pair */
  CHECK_MSG(fused.impl != NULL, "%s: no fused implementation for %s -> crop_mirror_normalize", what, first_name);
  if (!fused.impl) goto done;
  fused.fused[0] = first_gpu;
  fused.fused[1] = cmn_gpu;
  CHECK_MSG(fused.impl->init(&fused, g_err, sizeof g_err) == STK_OK, "%s", g_err);
  check_against_cpu(what, &fused, first_cpu, cmn_cpu, 1.0 / 57.12 + 1e-4, 0.001);
  /* determinism and steady state */
  stk__tensor_list out;
  memset(&out, 0, sizeof out);
  CHECK(gpu_run(&fused, &g_in, &out) == STK_OK);
  void *first_bytes[N];
  for (int i = 0; i < N; i++) first_bytes[i] = download(&out.samples[i]);
  uint64_t warm = g_allocs;
  CHECK(gpu_run(&fused, &g_in, &out) == STK_OK);
  CHECK_MSG(g_allocs == warm, "%s: %llu allocations after warm-up", what, (unsigned long long)(g_allocs - warm));
  for (int i = 0; i < N; i++) {
    void *again = download(&out.samples[i]);
    CHECK_MSG(memcmp(again, first_bytes[i], out.samples[i].nbytes) == 0, "%s: sample %d differs between runs", what, i);
    free(again);
  }
  /* The default grid loops (stk__gpu_fused_default_blocks); STOKER_FUSED_BLOCKS=3 has three blocks
   * loop over every tile of the batch and =0 gives one block a tile; STOKER_FUSED_SPLIT=4 launches
   * the batch in 4 parts (here of 1-2 samples), on either grid: the same bits each. */
  static const char *const kGrids[][2] = {{"3", NULL}, {"0", NULL}, {NULL, "4"}, {"0", "4"}};
  for (int g = 0; g < 4; g++) {
    stk__op looping = fused;
    looping.state = NULL;
    if (kGrids[g][0]) setenv("STOKER_FUSED_BLOCKS", kGrids[g][0], 1);
    if (kGrids[g][1]) setenv("STOKER_FUSED_SPLIT", kGrids[g][1], 1);
    CHECK_MSG(looping.impl->init(&looping, g_err, sizeof g_err) == STK_OK, "%s", g_err);
    unsetenv("STOKER_FUSED_BLOCKS");
    unsetenv("STOKER_FUSED_SPLIT");
    CHECK(gpu_run(&looping, &g_in, &out) == STK_OK);
    for (int i = 0; i < N; i++) {
      void *again = download(&out.samples[i]);
      CHECK_MSG(memcmp(again, first_bytes[i], out.samples[i].nbytes) == 0,
                "%s: sample %d differs with STOKER_FUSED_BLOCKS=%s STOKER_FUSED_SPLIT=%s", what, i,
                kGrids[g][0] ? kGrids[g][0] : "default", kGrids[g][1] ? kGrids[g][1] : "1");
      free(again);
    }
    looping.impl->destroy(&looping);
  }
  /* A split that is not a number of launches, or a grid that is not a number of blocks, is refused
   * at init, naming the variable. */
  static const char *const kBad[][2] = {{"STOKER_FUSED_SPLIT", "0"},     {"STOKER_FUSED_SPLIT", "x"},
                                        {"STOKER_FUSED_SPLIT", "4x"},    {"STOKER_FUSED_SPLIT", "70000"},
                                        {"STOKER_FUSED_BLOCKS", "-2"},   {"STOKER_FUSED_BLOCKS", "many"},
                                        {"STOKER_FUSED_BLOCKS", "70000"}};
  for (size_t b = 0; b < sizeof kBad / sizeof kBad[0]; b++) {
    stk__op bad = fused;
    bad.state = NULL;
    g_err[0] = '\0';
    setenv(kBad[b][0], kBad[b][1], 1);
    CHECK_MSG(bad.impl->init(&bad, g_err, sizeof g_err) == STK_EINVAL, "%s=%s accepted", kBad[b][0], kBad[b][1]);
    unsetenv(kBad[b][0]);
    CHECK_MSG(strstr(g_err, kBad[b][0]) != NULL, "error without the variable's name: %s", g_err);
  }
  for (int i = 0; i < N; i++) free(first_bytes[i]);
  CHECK(out.dense == 1);
  stk__gpu_tensor_list_free(&out);
  fused.impl->destroy(&fused);
done:
  stk__op_free_standalone(first_cpu);
  stk__op_free_standalone(first_gpu);
  stk__op_free_standalone(cmn_cpu);
  stk__op_free_standalone(cmn_gpu);
  stk_args_destroy(first_args);
  stk_args_destroy(cmn_a);
}

static void test_fused(void) {
  stk_args *rrc = args_new();
  const double size[2] = {40, 48};
  stk_args_set_float_list(rrc, "size", size, 2);
  stk_args *cmn = cmn_args("float", 0, 1);
  const double crop[2] = {40, 48};
  stk_args_set_float_list(cmn, "crop", crop, 2);
  fused_case("fused random_resized_crop + cmn (mirror=coin)", "random_resized_crop", rrc, cmn);
  stk_args *rs = args_new();
  stk_args_set_float(rs, "resize_shorter", 45);
  cmn = cmn_args("float16", 1, 0);
  const double crop2[2] = {32, 32};
  stk_args_set_float_list(cmn, "crop", crop2, 2);
  fused_case("fused resize(shorter=45) + cmn float16 crop 32", "resize", rs, cmn);
  /* A crop past the resized image (fill rows and columns), mirrored, HWC uint8; 333x251 -> 40x9
   * is a downscale past the fused kernel's shared rows (its direct path), 64x64 -> 40x9 is not. */
  stk_args *small = args_new();
  stk_args_set_float(small, "resize_x", 40);
  stk_args_set_float(small, "resize_y", 9);
  cmn = cmn_args("uint8", 1, 0);
  const double crop3[2] = {20, 48};
  stk_args_set_float_list(cmn, "crop", crop3, 2);
  stk_args_set_string(cmn, "out_of_bounds_policy", "pad");
  stk_args_set_string(cmn, "output_layout", "HWC");
  fused_case("fused resize 40x9 + cmn uint8 HWC crop 20x48 padded", "resize", small, cmn);
}

static void make_inputs(void) {
  size_t max = 0;
  for (int i = 0; i < N; i++) {
    int64_t shape[3] = {kH[i], kW[i], 3};
    memset(&g_host[i], 0, sizeof g_host[i]);
    CHECK(stk__tensor_resize(&g_host[i], STK_DTYPE_UINT8, 3, shape, "HWC") == STK_OK);
    uint8_t *p = (uint8_t *)g_host[i].data;
    uint32_t state = 12345u + (uint32_t)i;
    for (size_t k = 0; k < g_host[i].nbytes; k++) {
      state = state * 1664525u + 1013904223u;
      p[k] = (uint8_t)(state >> 24);
    }
    if (g_host[i].nbytes > max) max = g_host[i].nbytes;
    g_samples[i].sample_id = 1000 + i * 7;
    g_samples[i].source = "random image";
    memset(&g_coin_t[i], 0, sizeof g_coin_t[i]);
    g_coin_t[i].data = &g_coin[i];
    g_coin_t[i].nbytes = 1;
    g_coin_t[i].dtype = STK_DTYPE_UINT8;
    g_coin_t[i].device = STK_DEVICE_CPU;
  }
  g_coin_list.count = N;
  g_coin_list.samples = g_coin_t;
  g_coin_list.device = STK_DEVICE_CPU;
  g_plan.epoch = 3;
  g_plan.batch_size = N;
  g_plan.samples = g_samples;
  CHECK(stk__gpu_tensor_list_reserve(&g_in, N, max, &g_allocs) == STK_OK);
  for (int i = 0; i < N; i++) {
    stk__tensor *t = &g_in.samples[i];
    t->dtype = STK_DTYPE_UINT8;
    t->ndim = 3;
    t->shape[0] = kH[i];
    t->shape[1] = kW[i];
    t->shape[2] = 3;
    t->nbytes = g_host[i].nbytes;
    CHECK(stk__gpu_memcpy_h2d_async(t->data, g_host[i].data, t->nbytes, g_stream) == STK_OK);
  }
  CHECK(stk__gpu_stream_synchronize(g_stream) == STK_OK);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_resize_family),
    STK_TEST_CASE(test_cmn),
    STK_TEST_CASE(test_fused),
};
// clang-format on

int main(int argc, char **argv) {
  if (stk_test_list_cases(cases, STK_TEST_COUNT(cases), argc, argv)) return 0;
  gpu_test_open(&g_stream);
  (void)&stk__op_resize, (void)&stk__op_random_resized_crop, (void)&stk__op_crop_mirror_normalize;
  make_inputs();
  int rc = stk_test_run_selected("test_gpu_ops", cases, STK_TEST_COUNT(cases), argc, argv);
  stk__gpu_tensor_list_free(&g_in);
  stk__gpu_stream_destroy(g_stream);
  for (int i = 0; i < N; i++) stk__tensor_free(&g_host[i]);
  for (int s = 0; s < 8; s++) free(g_worker.scratch[s]);
  return rc ? rc : stk_test_finish("test_gpu_ops");
}
#else
int main(void) { TEST_SKIP("this stoker was built without CUDA"); }
#endif
