/* src/base/json.c: JSON string escaping of any byte string (stk_json_escape, include/stoker/
 * pipeline.h): one rule for every JSON the library and the CLI write (the quarantine record,
 * `bench --json`, `doctor --json`, ...), so a file name with a quote, a newline or bytes that are
 * not UTF-8 is valid JSON everywhere and decodes back to the same bytes. Not a hot path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoker/pipeline.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the bytes there are not one (overlong
 * forms and surrogates are not valid). */
static int utf8_sequence_length(const unsigned char *s) {
  int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

char *stk_json_escape(const char *bytes) {
  if (!bytes) bytes = "";
  size_t n = strlen(bytes);
  char *out = malloc(6 * n + 1); /* the longest escape, \udcXX or \u00XX, is 6 bytes for 1 */
  if (!out) return NULL;
  const unsigned char *p = (const unsigned char *)bytes;
  char *o = out;
  while (*p) {
    int len = utf8_sequence_length(p);
    if (len == 0) {
      o += sprintf(o, "\\udc%02x", *p++);
    } else if (*p == '"' || *p == '\\') {
      *o++ = '\\';
      *o++ = (char)*p++;
    } else if (*p == '\n') {
      *o++ = '\\';
      *o++ = 'n';
      p++;
    } else if (*p < 0x20) {
      o += sprintf(o, "\\u%04x", *p++);
    } else {
      memcpy(o, p, (size_t)len);
      o += len;
      p += len;
    }
  }
  *o = '\0';
  return out;
}
