/* tests/test_gpu_weight_tables.cu: stk__gpu_push_axes_batch, the GPU resize's and fused
 * resize+crop_mirror_normalize's host side, without a device (it only reserves arena places and
 * fills their host mirror; the device addresses are never read here, so a made-up base serves):
 * every axis points at a table equal to stk__resample_weights of its own key, with its tap count;
 * axes with the same key point at one place; only the owners take arena room, so the batch uploads
 * less than one table an axis; with STOKER_GPU_SERIAL_WEIGHTS's path every axis has its own place
 * and the tables are the same values. Standalone (no worker pool: stk__parallel_for_helped runs
 * the chunks inline); the pool path is covered by test_gpu_pipeline on a GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/image_gpu.h"
extern "C" {
#include "case_list.h"
#include "testutil.h"
}

typedef struct desc {
  int before;
  stk__gpu_axis x;
  double between;
  stk__gpu_axis y;
} desc; /* the axes inside a larger descriptor, as the resize and fused descriptors hold them */

enum { N = 96 };

/* N images like an rn50-val batch: a few ImageNet sizes, resized to a shorter side of 256, whole
 * images; every fifth a random crop (its own interval and size). */
static void make_geom(stk__gpu_sample_geom *geom, const stk__gpu_resize_step *r, size_t *arena_bytes) {
  static const int sizes[][2] = {{500, 375}, {375, 500}, {500, 333}, {500, 500}};
  *arena_bytes = 0;
  for (int i = 0; i < N; i++) {
    stk__gpu_sample_geom *g = &geom[i];
    memset(g, 0, sizeof *g);
    g->src_w = sizes[i % 4][0];
    g->src_h = sizes[i % 4][1];
    g->channels = 3;
    const int shorter = g->src_w < g->src_h ? g->src_w : g->src_h;
    g->out_w = 256 * g->src_w / shorter;
    g->out_h = 256 * g->src_h / shorter;
    g->roi[2] = g->src_w;
    g->roi[3] = g->src_h;
    if (i % 5 == 2) {
      g->roi[0] = 10.5 + i;
      g->roi[1] = 3.25;
      g->roi[2] = g->roi[0] + 200.0;
      g->roi[3] = 303.25;
      g->out_w = g->out_h = 224;
    }
    *arena_bytes += stk__gpu_compute_taps(g, r) + 64; /* + the alignment of four places */
  }
}

/* Every axis's table, read through the arena's host mirror, against a fresh computation. */
static void check_tables(const stk__gpu_image_state *s, const stk__gpu_sample_geom *geom, const desc *d) {
  static int32_t first[1024];
  static float weights[1024 * 64];
  for (int i = 0; i < N; i++) {
    for (int y = 0; y < 2; y++) {
      const stk__gpu_axis *a = y ? &d[i].y : &d[i].x;
      const stk__gpu_sample_geom *g = &geom[i];
      const int in = y ? g->src_h : g->src_w, out = y ? g->out_h : g->out_w;
      int taps = stk__resample_weights(in, out, g->roi[y], g->roi[y + 2], s->resize.interp, s->resize.antialias, first,
                                       weights);
      const size_t at_first = (size_t)((const uint8_t *)a->first - s->arena.device);
      const size_t at_weights = (size_t)((const uint8_t *)a->weights - s->arena.device);
      CHECK_MSG(a->taps == taps, "image %d axis %d: %d taps, want %d", i, y, a->taps, taps);
      CHECK(at_first + (size_t)out * 4 <= s->arena.used && at_weights + (size_t)out * taps * 4 <= s->arena.used);
      if (a->taps != taps || at_weights + (size_t)out * taps * 4 > s->arena.used) continue;
      CHECK_MSG(memcmp(s->arena.host + at_first, first, (size_t)out * 4) == 0 &&
                    memcmp(s->arena.host + at_weights, weights, (size_t)out * taps * 4) == 0,
                "image %d axis %d: the table differs from stk__resample_weights'", i, y);
    }
  }
}

static void run(int serial, size_t *used, int *places) {
  stk__gpu_image_state s;
  memset(&s, 0, sizeof s);
  s.resize.interp = STK__INTERP_LINEAR;
  s.resize.antialias = 1;
  s.serial_weights = serial;
  static stk__gpu_sample_geom geom[N];
  size_t bytes = 0;
  make_geom(geom, &s.resize, &bytes);
  s.arena.host = (uint8_t *)calloc(1, bytes);
  s.arena.device = (uint8_t *)(uintptr_t)0x7f0000000000ull; /* never dereferenced */
  s.arena.capacity = bytes;
  static desc d[N];
  memset(d, 0, sizeof d);
  stk__batch_ctx ctx;
  memset(&ctx, 0, sizeof ctx); /* no pool: the chunks run here */
  uint64_t allocs = 0;
  ctx.alloc_count = &allocs;
  CHECK(s.arena.host && stk__gpu_push_axes_batch(&ctx, &s, geom, N, &d[0].x, &d[0].y, sizeof d[0]) == STK_OK);
  CHECK(s.arena.used <= bytes && allocs == 2);
  check_tables(&s, geom, d);
  *places = 0;
  for (int j = 0; j < 2 * N; j++) { /* distinct table places */
    const stk__gpu_axis *a = j % 2 ? &d[j / 2].y : &d[j / 2].x;
    int seen = 0;
    for (int k = 0; k < j && !seen; k++) seen = (k % 2 ? &d[k / 2].y : &d[k / 2].x)->weights == a->weights;
    *places += !seen;
  }
  *used = s.arena.used;
  /* The same batch again: the scratch is not grown. */
  s.arena.used = 0;
  CHECK(stk__gpu_push_axes_batch(&ctx, &s, geom, N, &d[0].x, &d[0].y, sizeof d[0]) == STK_OK && allocs == 2);
  stk__axis_tables_free(&s.axis_tables);
  free(s.arena.host);
}

/* Shared by key: the whole-image axes of the four sizes (x and y of each: at most 8 tables; the
 * square size's x and y are one) plus two a crop; every table right. */
static void test_shared_tables(void) {
  size_t used = 0;
  int places = 0;
  run(0, &used, &places);
  const int crops = N / 5 + (N % 5 > 2);
  CHECK_MSG(places <= 8 + 2 * crops && places < 2 * N / 2, "%d table places for %d axes", places, 2 * N);
  size_t serial_used = 0;
  int serial_places = 0;
  run(1, &serial_used, &serial_places);
  CHECK_MSG(serial_places == 2 * N, "serial path: %d places for %d axes", serial_places, 2 * N);
  CHECK_MSG(used < serial_used / 2, "shared tables take %zu bytes, one an axis %zu", used, serial_used);
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_shared_tables),
};
// clang-format on

int main(int argc, char **argv) {
  return stk_test_run_cases("test_gpu_weight_tables", cases, STK_TEST_COUNT(cases), argc, argv);
}
