/* src/ops/common/test_nd_copy.c: the geometry operators' CPU reference (stk__nd_copy_run) against
 * its definition (nd_copy.h) evaluated one element at a time, on random parts: ranks 1 to 5,
 * forward and flipped axes, starts before and after the input (fill), per-channel fill values,
 * erase boxes, element sizes 1/2/4/8, packed and permuted strides; and the fill conversion
 * (rounding, saturation, float16). Not on any hot path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/dtype.h"
#include "ops/common/nd_copy.h"
#include "case_list.h"
#include "testutil.h"

static uint32_t g_state = 12345u;
static int rnd(int n) {
  g_state = g_state * 1664525u + 1013904223u;
  return (int)((g_state >> 8) % (uint32_t)n);
}

/* The definition, element by element. */
static void naive(const stk__nd_copy *c) {
  int64_t total = stk__nd_count(c), o[STK__ND_DIMS];
  for (int64_t i = 0; i < total; i++) {
    int64_t rest = i, dst = c->dst_offset, src = 0;
    int fill = 0;
    for (int d = c->ndim - 1; d >= 0; d--) {
      o[d] = rest % c->shape[d];
      rest /= c->shape[d];
      int64_t coord = c->src_start[d] + c->step[d] * o[d];
      fill |= coord < 0 || coord >= c->src_extent[d];
      dst += o[d] * c->dst_stride[d];
      src += coord * c->src_stride[d];
    }
    for (int b = 0; b < c->num_boxes && !fill; b++) {
      int inside = 1;
      for (int d = 0; d < c->ndim; d++)
        inside &= o[d] >= c->boxes[(b * c->ndim + d) * 2] && o[d] < c->boxes[(b * c->ndim + d) * 2 + 1];
      fill = inside;
    }
    const void *from = fill ? (const void *)&c->fill[c->fill_dim < 0 ? 0 : o[c->fill_dim] % c->fill_count]
                            : (const uint8_t *)c->src + src * c->elem_size;
    memcpy((uint8_t *)c->dst + dst * c->elem_size, from, (size_t)c->elem_size);
  }
}

static void random_part(stk__nd_copy *c, int64_t *boxes, int64_t *in_shape) {
  const int nd = 1 + rnd(5), sizes[4] = {1, 2, 4, 8};
  int64_t out_shape[STK__ND_DIMS];
  for (int d = 0; d < nd; d++) {
    in_shape[d] = 1 + rnd(6);
    out_shape[d] = 1 + rnd(8);
  }
  stk__nd_identity(c, nd, out_shape, sizes[rnd(4)]);
  int perm[STK__ND_DIMS];
  for (int d = 0; d < nd; d++) perm[d] = d;
  if (rnd(2))
    for (int d = nd - 1; d > 0; d--) {
      int k = rnd(d + 1), t = perm[d];
      perm[d] = perm[k];
      perm[k] = t;
    }
  int64_t in_strides[STK__ND_DIMS];
  stk__nd_packed_strides(nd, in_shape, in_strides);
  for (int d = 0; d < nd; d++) {
    c->src_extent[d] = in_shape[perm[d]];
    c->src_stride[d] = in_strides[perm[d]];
    c->step[d] = rnd(3) == 0 ? -1 : 1;
    c->src_start[d] = rnd(3) == 0 ? rnd(9) - 4 : (c->step[d] < 0 ? c->src_extent[d] - 1 : 0);
  }
  c->fill_count = 1 + rnd(3);
  c->fill_dim = c->fill_count > 1 ? nd - 1 : -1;
  for (int k = 0; k < c->fill_count; k++) c->fill[k] = 0xA0A1A2A3A4A5A6A7ull + (uint64_t)k * 0x0101010101010101ull;
  c->num_boxes = rnd(3);
  for (int b = 0; b < c->num_boxes; b++)
    for (int d = 0; d < nd; d++) {
      boxes[(b * nd + d) * 2] = rnd(5) - 1;
      boxes[(b * nd + d) * 2 + 1] = rnd(9);
    }
  c->boxes = boxes;
}

/* Runs part c through `one` and `other` on the same random input of in_bytes bytes (c's dst set to
 * each's own buffer, both pre-filled alike); 1 when their outputs differ. */
static int runs_differ(stk__nd_copy *c, size_t in_bytes, void (*one)(const stk__nd_copy *),
                       void (*other)(const stk__nd_copy *)) {
  const size_t out_bytes = (size_t)stk__nd_count(c) * c->elem_size;
  uint8_t *src = malloc(in_bytes), *a = malloc(out_bytes), *b = malloc(out_bytes);
  for (size_t k = 0; k < in_bytes; k++) src[k] = (uint8_t)rnd(256);
  memset(a, 0x55, out_bytes);
  memset(b, 0x55, out_bytes);
  c->src = src;
  c->dst = a;
  one(c);
  c->dst = b;
  other(c);
  int differs = memcmp(a, b, out_bytes) != 0;
  free(src);
  free(a);
  free(b);
  return differs;
}

/* The input's bytes: the product of its shape (before any merge) times the element size. */
static size_t input_bytes(const stk__nd_copy *c, const int64_t *in_shape) {
  size_t bytes = (size_t)c->elem_size;
  for (int d = 0; d < c->ndim; d++) bytes *= (size_t)in_shape[d];
  return bytes;
}

/* One random part against its definition; 1 when they differ. With packed_rows the innermost
 * dimension is a whole packed row of the input (an image's pixels, the short-row path). */
static int part_differs(int packed_rows, int *ndim, int *elem_size) {
  stk__nd_copy c;
  int64_t boxes[2 * STK__ND_DIMS * 2], in_shape[STK__ND_DIMS];
  random_part(&c, boxes, in_shape);
  if (packed_rows && c.ndim >= 2) {
    const int last = c.ndim - 1;
    int64_t in_strides[STK__ND_DIMS];
    for (int d = 0; d < c.ndim; d++) in_shape[d] = c.src_extent[d]; /* the permuted input, made packed */
    stk__nd_packed_strides(c.ndim, in_shape, in_strides);
    for (int d = 0; d < c.ndim; d++) c.src_stride[d] = in_strides[d];
    c.shape[last] = c.src_extent[last];
    c.step[last] = 1;
    c.src_start[last] = 0;
    stk__nd_packed_strides(c.ndim, c.shape, c.dst_stride);
  }
  *ndim = c.ndim;
  *elem_size = c.elem_size;
  return runs_differ(&c, input_bytes(&c, in_shape), stk__nd_copy_run, naive);
}

static void test_reference_matches_definition(void) {
  int bad = 0;
  for (int trial = 0; trial < 3000; trial++) {
    int nd, es;
    if (part_differs(0, &nd, &es) && bad++ < 3)
      CHECK_MSG(0, "trial %d: %d-D part of %d-byte elements differs from its definition", trial, nd, es);
  }
  CHECK_MSG(bad == 0, "%d of 3000 random parts differ", bad);
}

/* Parts whose rows are whole packed pixels (flips and crops of HWC images): the short-row loop. */
static void test_packed_pixel_rows_match_definition(void) {
  int bad = 0;
  for (int trial = 0; trial < 3000; trial++) {
    int nd, es;
    if (part_differs(1, &nd, &es) && bad++ < 3)
      CHECK_MSG(0, "trial %d: %d-D part of %d-byte elements (packed rows) differs from its definition", trial, nd, es);
  }
  CHECK_MSG(bad == 0, "%d of 3000 random packed-row parts differ", bad);
}

/* A random part against its coalesced self (stk__nd_coalesce), both through the definition and the
 * coalesced one through the CPU reference too; 1 when an output differs. *merged: whether it lost a
 * dimension. */
static int coalesced_differs(int packed_rows, int *merged) {
  stk__nd_copy c;
  int64_t boxes[2 * STK__ND_DIMS * 2], in_shape[STK__ND_DIMS];
  random_part(&c, boxes, in_shape);
  if (packed_rows) { /* whole packed rows, no boxes, forward: the crops and pads of HWC images */
    for (int d = 0; d < c.ndim; d++) in_shape[d] = c.src_extent[d];
    stk__nd_packed_strides(c.ndim, in_shape, c.src_stride);
    const int last = c.ndim - 1;
    c.shape[last] = c.src_extent[last];
    c.src_start[last] = 0;
    for (int d = 0; d < c.ndim; d++) c.step[d] = d == 0 || rnd(4) ? 1 : -1;
    stk__nd_packed_strides(c.ndim, c.shape, c.dst_stride);
    c.num_boxes = rnd(4) == 0;
    if (rnd(3)) { /* one fill value: the channel dimension may merge too */
      c.fill_count = 1;
      c.fill_dim = -1;
    }
  }
  stk__nd_copy m = c;
  stk__nd_coalesce(&m);
  *merged = m.ndim < c.ndim;
  const size_t in_bytes = input_bytes(&c, in_shape), out_bytes = (size_t)stk__nd_count(&c) * c.elem_size;
  uint8_t *src = malloc(in_bytes), *a = malloc(out_bytes), *b = malloc(out_bytes), *r = malloc(out_bytes);
  for (size_t k = 0; k < in_bytes; k++) src[k] = (uint8_t)rnd(256);
  memset(a, 0x55, out_bytes);
  memset(b, 0x55, out_bytes);
  memset(r, 0x55, out_bytes);
  c.src = m.src = src;
  c.dst = a;
  naive(&c);
  m.dst = b;
  naive(&m);
  m.dst = r;
  stk__nd_copy_run(&m);
  int differs = stk__nd_count(&m) != stk__nd_count(&c) || memcmp(a, b, out_bytes) != 0 || memcmp(a, r, out_bytes) != 0;
  free(src);
  free(a);
  free(b);
  free(r);
  return differs;
}

static void test_coalesced_parts_match(void) {
  int bad = 0, merged = 0;
  for (int trial = 0; trial < 6000; trial++) {
    int m = 0;
    if (coalesced_differs(trial % 2, &m) && bad++ < 3) CHECK_MSG(0, "trial %d: the coalesced part differs", trial);
    merged += m;
  }
  CHECK_MSG(bad == 0, "%d of 6000 coalesced parts differ", bad);
  CHECK_MSG(merged > 500, "only %d of 6000 parts lost a dimension", merged);
}

/* An HWC crop keeps its rows of pixels whole: H, W, C becomes H, W x C; a flip along W stays 3-D. */
static void test_coalesce_hwc_crop_and_flip(void) {
  const int64_t out[3] = {4, 5, 3}, in[3] = {8, 7, 3};
  stk__nd_copy c;
  stk__nd_identity(&c, 3, out, 1);
  for (int d = 0; d < 3; d++) c.src_extent[d] = in[d];
  stk__nd_packed_strides(3, in, c.src_stride);
  c.src_start[0] = 2;
  c.src_start[1] = -1; /* one column of fill on the left: still one run of W x C */
  stk__nd_copy f = c;
  stk__nd_coalesce(&c);
  CHECK(c.ndim == 2 && c.shape[0] == 4 && c.shape[1] == 15 && c.src_start[1] == -3 && c.src_extent[1] == 21);
  CHECK(c.src_stride[0] == 21 && c.src_stride[1] == 1 && c.dst_stride[0] == 15 && c.dst_stride[1] == 1);
  f.step[1] = -1;
  f.src_start[1] = 6;
  stk__nd_coalesce(&f);
  CHECK(f.ndim == 3);
  f.fill_count = 3; /* per-channel fill: C stays its own dimension */
  f.fill_dim = 2;
  f.step[1] = 1;
  stk__nd_coalesce(&f);
  CHECK(f.ndim == 3);
}

static void test_fill_bits_round_and_saturate(void) {
  CHECK(stk__nd_fill_bits(300.0, STK_DTYPE_UINT8) == 255);
  CHECK(stk__nd_fill_bits(-3.0, STK_DTYPE_UINT8) == 0);
  CHECK(stk__nd_fill_bits(2.5, STK_DTYPE_UINT8) == 3);
  int16_t s;
  uint64_t bits = stk__nd_fill_bits(-40000.0, STK_DTYPE_INT16);
  memcpy(&s, &bits, sizeof s);
  CHECK(s == -32768);
  float f;
  bits = stk__nd_fill_bits(0.1, STK_DTYPE_FLOAT32);
  memcpy(&f, &bits, sizeof f);
  CHECK(f == 0.1f);
  CHECK(stk__nd_fill_bits(1.0, STK_DTYPE_FLOAT16) == 0x3c00);
}

/* one STK_TEST_CASE per line: tests/CMakeLists.txt reads them */
/* Every element of c reads the input (the definition, element by element), and the largest
 * offsets it reads and writes. */
static int all_read(const stk__nd_copy *c, int64_t *src_max, int64_t *dst_max) {
  int64_t total = stk__nd_count(c), o[STK__ND_DIMS];
  *src_max = *dst_max = 0;
  for (int64_t i = 0; i < total; i++) {
    int64_t rest = i, dst = 0, src = 0;
    for (int d = c->ndim - 1; d >= 0; d--) {
      o[d] = rest % c->shape[d];
      rest /= c->shape[d];
      int64_t coord = c->src_start[d] + c->step[d] * o[d];
      if (coord < 0 || coord >= c->src_extent[d]) return 0;
      dst += o[d] * c->dst_stride[d];
      src += coord * c->src_stride[d];
    }
    if (src > *src_max) *src_max = src;
    if (dst > *dst_max) *dst_max = dst;
  }
  return 1;
}

/* stk__nd_inside32 (the GPU's no-fill 32-bit loop): on random parts, 1 exactly when the part has
 * no erase boxes and every element reads the input (their offsets are small here), also after
 * coalescing; and 0 where an offset or the count reaches 2^31 or a stride is negative. */
static void test_inside32_matches_definition(void) {
  int inside = 0, mismatches = 0;
  for (int t = 0; t < 20000; t++) {
    stk__nd_copy c;
    int64_t boxes[2 * STK__ND_DIMS * 2], in_shape[STK__ND_DIMS], src_max, dst_max;
    random_part(&c, boxes, in_shape);
    if (rnd(2)) c.num_boxes = 0;
    for (int pass = 0; pass < 2; pass++) {
      if (pass) stk__nd_coalesce(&c);
      const int want = c.num_boxes == 0 && all_read(&c, &src_max, &dst_max);
      const int got = stk__nd_inside32(&c);
      if (got != want && mismatches++ < 5)
        printf("part %d pass %d: stk__nd_inside32 %d, the definition %d\n", t, pass, got, want);
      inside += pass == 0 && want;
    }
  }
  CHECK_MSG(mismatches == 0, "%d mismatches", mismatches);
  CHECK_MSG(inside > 500, "only %d of the random parts read the input everywhere", inside);
  stk__nd_copy c;
  int64_t shape[2] = {4, 3};
  stk__nd_identity(&c, 2, shape, 1);
  CHECK(stk__nd_inside32(&c) == 1);
  c.step[1] = -1, c.src_start[1] = 2; /* a flip */
  CHECK(stk__nd_inside32(&c) == 1);
  c.src_stride[0] = (int64_t)1 << 30; /* row 3 starts past 2^31 */
  c.src_extent[0] = 4;
  CHECK(stk__nd_inside32(&c) == 0);
  stk__nd_identity(&c, 2, shape, 1);
  c.dst_stride[0] = (int64_t)1 << 30;
  CHECK(stk__nd_inside32(&c) == 0);
  stk__nd_identity(&c, 2, shape, 1);
  c.src_stride[1] = -1; /* a negative stride: offsets below the base */
  CHECK(stk__nd_inside32(&c) == 0);
  int64_t big[2] = {(int64_t)1 << 16, (int64_t)1 << 15}; /* exactly 2^31 elements */
  stk__nd_identity(&c, 2, big, 1);
  CHECK(stk__nd_inside32(&c) == 0);
  big[1] -= 1;
  stk__nd_identity(&c, 2, big, 1);
  CHECK(stk__nd_inside32(&c) == 1);
}

/* The GPU kernel's loops run on the host (stk__nd_copy_emulate, a grid of 37 threads) against the
 * CPU reference on random parts -- flips, fills, per-channel fills, erase boxes, element sizes
 * 1-8 -- coalesced and with inside32 set as the GPU run sets it: the 32-bit no-fill loop (modular
 * offsets of a flip included) and the checking loop give the reference's bytes. CUDA builds only. */
#ifdef STOKER_HAVE_CUDA
static void emulate37(const stk__nd_copy *c) { stk__nd_copy_emulate(c, 37); }
#endif

static void test_kernel_loops_match_reference(void) {
#ifdef STOKER_HAVE_CUDA
  int inside = 0;
  for (int t = 0; t < 6000; t++) {
    stk__nd_copy c;
    int64_t boxes[2 * STK__ND_DIMS * 2], in_shape[STK__ND_DIMS];
    random_part(&c, boxes, in_shape);
    if (rnd(2)) c.num_boxes = 0;
    const size_t in_bytes = input_bytes(&c, in_shape);
    stk__nd_coalesce(&c);
    c.inside32 = stk__nd_inside32(&c);
    inside += c.inside32;
    CHECK_MSG(!runs_differ(&c, in_bytes, stk__nd_copy_run, emulate37),
              "part %d (ndim %d, elem %d, inside32 %d): the kernel's loops differ", t, c.ndim, c.elem_size, c.inside32);
  }
  CHECK_MSG(inside > 300, "only %d parts took the no-fill loop", inside);
#else
  TEST_SKIP("not a CUDA build: the kernel's loops are not compiled");
#endif
}

// clang-format off
static const stk_test_case cases[] = {
    STK_TEST_CASE(test_kernel_loops_match_reference),
    STK_TEST_CASE(test_inside32_matches_definition),
    STK_TEST_CASE(test_reference_matches_definition),
    STK_TEST_CASE(test_packed_pixel_rows_match_definition),
    STK_TEST_CASE(test_coalesced_parts_match),
    STK_TEST_CASE(test_coalesce_hwc_crop_and_flip),
    STK_TEST_CASE(test_fill_bits_round_and_saturate),
};
// clang-format on

int main(int argc, char **argv) { return stk_test_run_cases("test_nd_copy", cases, STK_TEST_COUNT(cases), argc, argv); }
