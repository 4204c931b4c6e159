/* src/ops/io/wds_sample.c: readers.webdataset's samples (see wds_stream.h): the shared shard file
 * of a local shard's samples, reading a component into the output, skip records and text labels.
 * Hot path: stk__wds_sample_read (per component, on the workers). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/io/wds_stream.h"

void stk__wds_file_release(stk__wds_file *f) {
  if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    close(f->fd);
    free(f);
  }
}

/* Its own descriptor, so the samples may outlive the source. */
stk__wds_file *stk__wds_file_share(stk__byte_source *src, uint64_t *size) {
  int fd = stk__byte_source_file_fd(src, size);
  stk__wds_file *f = fd >= 0 ? malloc(sizeof *f) : NULL;
  if (!f) return NULL;
  if ((f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    free(f);
    return NULL;
  }
  f->refs = 1;
  return f;
}

void stk__wds_sample_free(stk__wds_sample *s) {
  if (!s) return;
  stk__wds_file_release(s->file);
  free(s->own_data);
  free(s);
}

stk__wds_sample *stk__wds_skip_record(const char *name, const char *reason, uint64_t epoch, int64_t sample_id) {
  size_t name_len = strlen(name) + 1, reason_len = strlen(reason) + 1;
  stk__wds_sample *s = malloc(sizeof *s + name_len + reason_len);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->source = (char *)(s + 1);
  memcpy(s->source, name, name_len);
  memcpy(s->source + name_len, reason, reason_len);
  s->bad = s->source + name_len;
  s->data = (uint8_t *)s->source;
  s->epoch = epoch;
  s->sample_id = sample_id;
  return s;
}

stk_status stk__wds_sample_read(const stk__wds_sample *s, int g, void *dst, char *err, size_t err_size) {
  if (!s->in_file[g]) {
    if (s->size[g]) memcpy(dst, s->data + s->offset[g], s->size[g]);
    return STK_OK;
  }
  for (size_t done = 0; done < s->size[g];) {
    ssize_t n = pread(s->file->fd, (uint8_t *)dst + done, s->size[g] - done, (off_t)(s->file_offset[g] + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      stk__errorf(err, err_size, "sample %s: read error in ext group %d's %zu bytes at byte %llu of the shard: %s",
                  s->source, g, s->size[g], (unsigned long long)s->file_offset[g],
                  n < 0 ? strerror(errno) : "the shard shrank while reading");
      return STK_EIO;
    }
    done += (size_t)n;
  }
  return STK_OK;
}

int stk__wds_parse_label(const uint8_t *text, size_t size, int32_t *out) {
  char tmp[32];
  if (size >= sizeof tmp) return 0;
  if (size) memcpy(tmp, text, size);
  tmp[size] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(tmp, &end, 10);
  while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t') end++;
  if (end == tmp || *end || errno || v < INT32_MIN || v > INT32_MAX) return 0;
  *out = (int32_t)v;
  return 1;
}
