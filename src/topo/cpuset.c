/* src/topo/cpuset.c: stk_cpuset, the fixed-size CPU bit set, and its two text forms: the
 * cpulist ("0-23,48-71") and sysfs's hex mask ("ffffffff,00000000"). Pure functions, no system
 * calls. Not on a hot path (topology discovery, planning, binding, CLI). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h" /* stk__errorf */
#include "stoker/topology.h"

#define WORD_COUNT (STK_MAX_CPUS / 64)

void stk_cpuset_zero(stk_cpuset *set) { memset(set, 0, sizeof *set); }

void stk_cpuset_add(stk_cpuset *set, int cpu) {
  if (cpu < 0 || cpu >= STK_MAX_CPUS) return;
  set->bits[cpu / 64] |= (uint64_t)1 << (cpu % 64);
}

void stk_cpuset_remove(stk_cpuset *set, int cpu) {
  if (cpu < 0 || cpu >= STK_MAX_CPUS) return;
  set->bits[cpu / 64] &= ~((uint64_t)1 << (cpu % 64));
}

int stk_cpuset_has(const stk_cpuset *set, int cpu) {
  if (cpu < 0 || cpu >= STK_MAX_CPUS) return 0;
  return (set->bits[cpu / 64] >> (cpu % 64)) & 1u;
}

int stk_cpuset_count(const stk_cpuset *set) {
  int count = 0;
  for (int w = 0; w < WORD_COUNT; w++) count += __builtin_popcountll(set->bits[w]);
  return count;
}

int stk_cpuset_is_empty(const stk_cpuset *set) {
  for (int w = 0; w < WORD_COUNT; w++)
    if (set->bits[w]) return 0;
  return 1;
}

int stk_cpuset_equal(const stk_cpuset *a, const stk_cpuset *b) { return memcmp(a->bits, b->bits, sizeof a->bits) == 0; }

int stk_cpuset_intersects(const stk_cpuset *a, const stk_cpuset *b) {
  for (int w = 0; w < WORD_COUNT; w++)
    if (a->bits[w] & b->bits[w]) return 1;
  return 0;
}

int stk_cpuset_is_subset(const stk_cpuset *inner, const stk_cpuset *outer) {
  for (int w = 0; w < WORD_COUNT; w++)
    if (inner->bits[w] & ~outer->bits[w]) return 0;
  return 1;
}

/* out may alias a or b in the three set operations below. */
void stk_cpuset_and(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b) {
  for (int w = 0; w < WORD_COUNT; w++) out->bits[w] = a->bits[w] & b->bits[w];
}

void stk_cpuset_or(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b) {
  for (int w = 0; w < WORD_COUNT; w++) out->bits[w] = a->bits[w] | b->bits[w];
}

void stk_cpuset_andnot(stk_cpuset *out, const stk_cpuset *a, const stk_cpuset *b) {
  for (int w = 0; w < WORD_COUNT; w++) out->bits[w] = a->bits[w] & ~b->bits[w];
}

int stk_cpuset_next(const stk_cpuset *set, int after) {
  int start = after < 0 ? 0 : after + 1;
  if (start >= STK_MAX_CPUS) return -1;
  int w = start / 64;
  uint64_t word = set->bits[w] & (~(uint64_t)0 << (start % 64));
  for (;;) {
    if (word) return w * 64 + __builtin_ctzll(word);
    if (++w >= WORD_COUNT) return -1;
    word = set->bits[w];
  }
}

int stk_cpuset_first(const stk_cpuset *set) { return stk_cpuset_next(set, -1); }

/* Reads a decimal CPU number at *p (no sign); advances *p. Returns -1 when there is none or it
 * is out of range (range is reported separately through *too_big). */
static long read_cpu_number(const char **p, int *too_big) {
  const char *s = *p;
  if (!isdigit((unsigned char)*s)) return -1;
  long value = 0;
  while (isdigit((unsigned char)*s)) {
    if (value < STK_MAX_CPUS) value = value * 10 + (*s - '0');
    s++;
  }
  *too_big = value >= STK_MAX_CPUS;
  *p = s;
  return value;
}

static const char *skip_spaces(const char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

stk_status stk_cpuset_parse(const char *text, stk_cpuset *out, char *err, size_t err_size) {
  if (!text || !out) {
    stk__errorf(err, err_size, "cpulist: NULL argument");
    return STK_EINVAL;
  }
  stk_cpuset result;
  stk_cpuset_zero(&result);
  const char *p = skip_spaces(text);
  while (*p) {
    /* One element: N or N-M, surrounded by optional spaces, followed by ',' or the end. */
    int too_big = 0;
    long first = read_cpu_number(&p, &too_big);
    if (first < 0) goto malformed;
    if (too_big) goto out_of_range;
    long last = first;
    p = skip_spaces(p);
    if (*p == '-') {
      p = skip_spaces(p + 1);
      last = read_cpu_number(&p, &too_big);
      if (last < 0) goto malformed;
      if (too_big) goto out_of_range;
      if (last < first) {
        stk__errorf(err, err_size, "cpulist \"%s\": range %ld-%ld runs backwards", text, first, last);
        return STK_EPARSE;
      }
      p = skip_spaces(p);
    }
    for (long cpu = first; cpu <= last; cpu++) stk_cpuset_add(&result, (int)cpu);
    if (*p == ',') {
      p = skip_spaces(p + 1); /* a trailing comma ends the list: "24-47," is 24-47 */
    } else if (*p) {
      goto malformed;
    }
  }
  *out = result;
  return STK_OK;
malformed:
  stk__errorf(err, err_size, "malformed cpulist \"%s\" (expected e.g. \"0-3,8,10-11\")", text);
  return STK_EPARSE;
out_of_range:
  stk__errorf(err, err_size, "cpulist \"%s\": CPU number above the limit of %d", text, STK_MAX_CPUS - 1);
  return STK_ERANGE;
}

static int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

stk_status stk_cpuset_parse_mask(const char *text, stk_cpuset *out, char *err, size_t err_size) {
  if (!text || !out) {
    stk__errorf(err, err_size, "cpu mask: NULL argument");
    return STK_EINVAL;
  }
  /* Collect the comma-separated 32-bit groups (most significant first), then place them from
   * the end: the last group holds CPUs 0-31. */
  const char *start = skip_spaces(text);
  const char *end = start + strlen(start);
  while (end > start && isspace((unsigned char)end[-1])) end--;
  if (end == start) {
    stk__errorf(err, err_size, "empty cpu mask \"%s\"", text);
    return STK_EPARSE;
  }
  stk_cpuset result;
  stk_cpuset_zero(&result);
  int group_index = 0; /* counted from the least significant group */
  const char *group_end = end;
  for (;;) {
    const char *group_start = group_end;
    while (group_start > start && group_start[-1] != ',') group_start--;
    size_t digits = (size_t)(group_end - group_start);
    if (digits == 0 || digits > 8) goto malformed;
    uint32_t value = 0;
    for (const char *c = group_start; c < group_end; c++) {
      int v = hex_digit_value(*c);
      if (v < 0) goto malformed;
      value = (value << 4) | (uint32_t)v;
    }
    for (int bit = 0; bit < 32; bit++) {
      if (!((value >> bit) & 1u)) continue;
      int cpu = group_index * 32 + bit;
      if (cpu >= STK_MAX_CPUS) {
        stk__errorf(err, err_size, "cpu mask \"%s\": CPU number above the limit of %d", text, STK_MAX_CPUS - 1);
        return STK_ERANGE;
      }
      stk_cpuset_add(&result, cpu);
    }
    group_index++;
    if (group_start == start) break;
    group_end = group_start - 1;            /* skip the comma */
    if (group_end == start) goto malformed; /* leading comma */
  }
  *out = result;
  return STK_OK;
malformed:
  stk__errorf(err, err_size, "malformed cpu mask \"%s\" (expected e.g. \"ffffffff,00000000\")", text);
  return STK_EPARSE;
}

size_t stk_cpuset_format(const stk_cpuset *set, char *buf, size_t buf_size) {
  size_t needed = 0, written = 0;
  char piece[32];
  int cpu = stk_cpuset_first(set);
  while (cpu >= 0) {
    int last = cpu;
    while (stk_cpuset_has(set, last + 1)) last++;
    int n = last == cpu ? snprintf(piece, sizeof piece, "%s%d", needed ? "," : "", cpu)
                        : snprintf(piece, sizeof piece, "%s%d-%d", needed ? "," : "", cpu, last);
    if (buf && written == needed && needed + (size_t)n < buf_size) {
      memcpy(buf + needed, piece, (size_t)n);
      written += (size_t)n;
    }
    needed += (size_t)n;
    cpu = stk_cpuset_next(set, last);
  }
  if (buf && buf_size > 0) buf[written] = '\0'; /* whole pieces only when buf is too small */
  return needed;
}
