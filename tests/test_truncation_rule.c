/* tests/test_truncation_rule.c: a truncated JPEG is bad whichever decoder would decode it
 * (docs/operators-io.md, "Bad files"). The CPU decoder refuses a file whose data end before EOI;
 * the mixed decoder's plan (stk__jpeg_plan_make, which runs before any sample reaches nvJPEG or
 * the hardware engines) must refuse the same files, because nvJPEG decodes many of them without
 * an error. CPU only, so it runs in every build:
 *   - 400 truncated files (80 cuts of each of 5 JPEG kinds: baseline 4:4:4, 4:2:0 with restart
 *     markers, progressive, gray, arithmetic-coded): the CPU decoder and the plan both refuse every
 *     one; the count the header check alone (stk__jpeg_peek, the plan before this rule) accepted
 *     is printed and must be non-zero, so the test fails without the rule;
 *   - the tolerated cases are accepted by both: the whole file, padding between the last scan and
 *     EOI, fill bytes before EOI, bytes after EOI;
 *   - 1000 single-byte mutations: the plan never refuses a file the CPU decoder accepts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_fixtures.h"
#include "ops/decode/jpeg_route.h"
#include "testutil.h"

static char err[512];

static stk_status cpu_decode(const uint8_t *data, size_t size) {
  stk__tensor out = {0};
  stk_status st = stk__jpeg_decode(data, size, STK__COLOR_RGB, NULL, 0, 0, &out, NULL, err, sizeof err);
  stk__tensor_free(&out);
  return st;
}

static stk_status plan(const uint8_t *data, size_t size) {
  const stk__jpeg_router gpu = {1, 1, 1.0, 3}; /* nvJPEG and the engines up: everything to the GPU */
  stk__decoder_params whole;
  memset(&whole, 0, sizeof whole);
  whole.color = STK__COLOR_RGB;
  stk__jpeg_plan p;
  return stk__jpeg_plan_make(&gpu, &whole, 1, 0, 0, 0, 1, data, size, &p, err, sizeof err);
}

typedef struct kind {
  const char *name;
  int components, subsampling, progressive, arithmetic, restart_rows;
} kind;

static const kind kinds[] = {
    {"baseline 4:4:4", 3, 444, 0, 0, 0},    {"4:2:0, restart markers", 3, 420, 0, 0, 1},
    {"progressive 4:2:0", 3, 420, 1, 0, 0}, {"gray", 1, 0, 0, 0, 0},
    {"arithmetic 4:2:2", 3, 422, 0, 1, 0},
};
enum { NUM_KINDS = sizeof kinds / sizeof kinds[0], CUTS = 80 };

static uint8_t *encode(const kind *k, size_t *size) {
  uint8_t *px = fixture_pattern(176, 120, k->components, 9);
  fixture_options o = fixture_defaults();
  o.subsampling = k->subsampling ? k->subsampling : 444;
  o.progressive = k->progressive, o.arithmetic = k->arithmetic, o.restart_rows = k->restart_rows;
  uint8_t *jpg = fixture_encode(px, 176, 120, k->components, o, size);
  free(px);
  return jpg;
}

static void test_truncated_files(void) {
  int files = 0, header_only_accepted = 0;
  for (int i = 0; i < NUM_KINDS; i++) {
    size_t size;
    uint8_t *jpg = encode(&kinds[i], &size);
    for (int c = 0; c < CUTS; c++, files++) {
      size_t cut = 2 + (size - 3) * (size_t)c / (CUTS - 1); /* 2 .. size-1 */
      stk__jpeg_info info;
      header_only_accepted += stk__jpeg_peek(jpg, cut, &info, err, sizeof err) == STK_OK;
      stk_status cpu = cpu_decode(jpg, cut);
      CHECK_MSG(cpu == STK_EBADIMAGE, "%s cut at %zu of %zu: CPU decoder %s", kinds[i].name, cut, size,
                stk_status_name(cpu));
      stk_status planned = plan(jpg, cut);
      CHECK_MSG(planned == STK_EBADIMAGE, "%s cut at %zu of %zu: the mixed decoder's plan %s", kinds[i].name, cut, size,
                stk_status_name(planned));
      if (planned == STK_EBADIMAGE && info.width > 0 && cut > size / 2)
        CHECK_MSG(strstr(err, "truncated JPEG") != NULL, "%s cut at %zu: message '%s'", kinds[i].name, cut, err);
    }
    free(jpg);
  }
  printf("%d truncated files: refused by the CPU decoder and by the plan; the header check alone accepted %d\n", files,
         header_only_accepted);
  CHECK(header_only_accepted > files / 2);
}

/* jpg with `extra` bytes inserted at `at` (size+extra bytes, malloc'd). */
static uint8_t *insert(const uint8_t *jpg, size_t size, size_t at, const uint8_t *extra, size_t n) {
  uint8_t *out = malloc(size + n);
  memcpy(out, jpg, at);
  memcpy(out + at, extra, n);
  memcpy(out + at + n, jpg + at, size - at);
  return out;
}

static void expect_both_accept(const uint8_t *data, size_t size, const char *what) {
  stk_status cpu = cpu_decode(data, size);
  CHECK_MSG(cpu == STK_OK, "%s: CPU decoder %s (%s)", what, stk_status_name(cpu), err);
  stk_status planned = plan(data, size);
  CHECK_MSG(planned == STK_OK, "%s: plan %s (%s)", what, stk_status_name(planned), err);
}

static void test_tolerated(void) {
  static const uint8_t padding[] = {0x00, 0x00, 0x00, 0x00}, fill[] = {0xFF, 0xFF, 0xFF},
                       trailer[] = {0x12, 0xFF, 0xD8, 0xFF, 0x00, 0x34};
  for (int i = 0; i < NUM_KINDS; i++) {
    size_t size;
    uint8_t *jpg = encode(&kinds[i], &size);
    expect_both_accept(jpg, size, kinds[i].name);
    uint8_t *t = insert(jpg, size, size - 2, padding, sizeof padding);
    expect_both_accept(t, size + sizeof padding, "padding before EOI");
    free(t);
    t = insert(jpg, size, size - 2, fill, sizeof fill);
    expect_both_accept(t, size + sizeof fill, "fill bytes before EOI");
    free(t);
    t = insert(jpg, size, size, trailer, sizeof trailer);
    expect_both_accept(t, size + sizeof trailer, "bytes after EOI");
    free(t);
    free(jpg);
  }
}

static void test_never_stricter_than_cpu(void) {
  uint64_t state = 88172645463325252ull;
  int refused_by_plan = 0;
  for (int i = 0; i < NUM_KINDS; i++) {
    size_t size;
    uint8_t *jpg = encode(&kinds[i], &size);
    uint8_t *m = malloc(size);
    for (int r = 0; r < 200; r++) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      memcpy(m, jpg, size);
      size_t at = 2 + (size_t)(state % (size - 2));
      m[at] = (uint8_t)(state >> 32);
      if (plan(m, size) != STK_EBADIMAGE) continue;
      refused_by_plan++;
      char why[sizeof err];
      snprintf(why, sizeof why, "%s", err);
      CHECK_MSG(cpu_decode(m, size) == STK_EBADIMAGE, "%s, byte %zu = 0x%02x: the plan refuses (%s), the CPU accepts",
                kinds[i].name, at, m[at], why);
    }
    free(m);
    free(jpg);
  }
  printf("1000 mutated files: the plan refused %d, each refused by the CPU decoder too\n", refused_by_plan);
}

int main(void) {
  (void)fixture_reference; /* jpeg_fixtures.h's reference decoder is not needed here */
  test_truncated_files();
  test_tolerated();
  test_never_stricter_than_cpu();
  return stk_test_finish("test_truncation_rule");
}
