/* src/ops/decode/jpeg_route.c: the mixed JPEG decoder's per-image plan -- header, window, route --
 * in plain C (see jpeg_route.h). Hot path: stk__jpeg_plan_make once per image (on a worker in a
 * pipeline), stk__jpeg_plan_load once per image on the GPU stage. */
#include "ops/decode/jpeg_route.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(uint64_t) + sizeof(stk__jpeg_plan) <= sizeof(((stk__tensor *)0)->stage_record),
               "a JPEG plan and its marker must fit in a stage tensor's stage_record");

double stk__jpeg_hw_load_clamp(double load) {
  if (!(load >= 0.0)) return 0.0; /* also NaN */
  return load > 1.0 ? 1.0 : load;
}

int stk__jpeg_hw_share(int position, double load) { return floor((position + 1) * load) > floor(position * load); }

int stk__jpeg_cuda_share(int position, int hw_engines, double hw_load, double cuda_load) {
  int rank = hw_engines ? position - (int)floor(position * hw_load) : position;
  return stk__jpeg_hw_share(rank, cuda_load);
}

int stk__jpeg_hw_can_take(const stk__jpeg_info *info) {
  if (info->progressive || info->cmyk) return 0;
  if (info->components != 1 && info->components != 3) return 0;
  return info->subsampling == 444 || info->subsampling == 422 || info->subsampling == 420 || info->subsampling == 440 ||
         info->subsampling == 0;
}

stk__jpeg_route stk__jpeg_route_sample(const stk__jpeg_router *router, const stk__jpeg_info *info, int position,
                                       int staged) {
  if (!router->nvjpeg || info->cmyk || info->orientation != 1 || (info->components != 1 && info->components != 3))
    return STK__JPEG_ROUTE_CPU;
  if (router->hw_engines && stk__jpeg_hw_can_take(info) && stk__jpeg_hw_share(position, router->hw_load))
    return STK__JPEG_ROUTE_HW;
  if (staged) {
    if (info->progressive || !stk__jpeg_cuda_share(position, router->hw_engines, router->hw_load, router->cuda_load))
      return STK__JPEG_ROUTE_CPU;
    return STK__JPEG_ROUTE_CUDA;
  }
  return info->progressive ? STK__JPEG_ROUTE_HYBRID : STK__JPEG_ROUTE_CUDA;
}

/* Offset just past the entropy-coded data that start at `pos`: the 0xFF of the first marker that
 * is not a stuffed zero, an RST or a fill byte; `size` when the data end first. */
static size_t scan_end(const uint8_t *data, size_t size, size_t pos) {
  while (pos < size) {
    const uint8_t *ff = memchr(data + pos, 0xFF, size - pos);
    if (!ff) return size;
    size_t at = (size_t)(ff - data), next = at + 1;
    while (next < size && data[next] == 0xFF) next++; /* fill bytes */
    if (next >= size) return size;
    if (data[next] != 0x00 && !(data[next] >= 0xD0 && data[next] <= 0xD7)) return next - 1;
    pos = next + 1;
  }
  return size;
}

stk_status stk__jpeg_check_complete(const uint8_t *data, size_t size, char *err, size_t err_size) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    stk__errorf(err, err_size, "not a JPEG file (no SOI marker)");
    return STK_EBADIMAGE;
  }
  size_t pos = 2;
  const char *reading = "the headers";
  while (pos < size) {
    if (data[pos] != 0xFF) {
      stk__errorf(err, err_size, "corrupt JPEG data: no marker at byte %zu (0x%02x) in %s", pos, data[pos], reading);
      return STK_EBADIMAGE;
    }
    while (pos + 1 < size && data[pos + 1] == 0xFF) pos++; /* fill bytes before a marker */
    if (pos + 1 >= size) break;
    const uint8_t marker = data[pos + 1];
    pos += 2;
    if (marker == 0xD9) return STK_OK;                                  /* EOI */
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue; /* no length (TEM, RST) */
    if (pos + 2 > size) break;
    const size_t length = (size_t)data[pos] << 8 | data[pos + 1];
    if (length < 2) {
      stk__errorf(err, err_size, "corrupt JPEG data: marker 0x%02x at byte %zu has length %zu", marker, pos - 2,
                  length);
      return STK_EBADIMAGE;
    }
    if (length > size - pos) {
      pos = size;
      break;
    }
    pos += length;
    if (marker == 0xDA) { /* SOS: the scan's entropy-coded data follow */
      reading = "a scan";
      pos = scan_end(data, size, pos);
    } else {
      reading = "the headers";
    }
  }
  stk__errorf(err, err_size, "truncated JPEG: the data end at byte %zu in %s, before EOI", size, reading);
  return STK_EBADIMAGE;
}

stk_status stk__jpeg_plan_make(const stk__jpeg_router *router, const stk__decoder_params *params, int op_id,
                               uint64_t epoch, int64_t sample_id, int position, int staged, const uint8_t *data,
                               size_t size, stk__jpeg_plan *plan, char *err, size_t err_size) {
  memset(plan, 0, sizeof *plan);
  plan->sample_id = sample_id;
  plan->route = STK__JPEG_ROUTE_FAILED;
  stk_status st = stk__jpeg_peek(data, size, &plan->info, err, err_size);
  if (st == STK_OK) st = stk__jpeg_check_complete(data, size, err, err_size);
  if (st != STK_OK) return st;
  int w = plan->info.width, h = plan->info.height;
  if (plan->info.orientation >= 5 && plan->info.orientation <= 8) { /* EXIF transposes */
    int tmp = w;
    w = h;
    h = tmp;
  }
  if (params->random_crop) {
    plan->crop = stk__decoder_crop_window(params, op_id, epoch, sample_id, w, h);
  } else {
    plan->crop.x = plan->crop.y = 0;
    plan->crop.w = w;
    plan->crop.h = h;
  }
  plan->route = (int32_t)stk__jpeg_route_sample(router, &plan->info, position, staged);
  return STK_OK;
}

size_t stk__jpeg_plan_full_bytes(const stk__jpeg_router *router, const stk__jpeg_plan *plan) {
  return (size_t)plan->info.width * (size_t)plan->info.height * (size_t)router->channels;
}

/* The record's first word marks it as a plan (and which layout), so an empty record (all zero)
 * or another op's is refused. */
#define PLAN_MAGIC UINT64_C(0x4e414c50474a5053) /* "SPJGPLAN" */

void stk__jpeg_plan_store(stk__tensor *stage, const stk__jpeg_plan *plan) {
  stage->stage_record[0] = PLAN_MAGIC;
  memcpy(&stage->stage_record[1], plan, sizeof *plan);
}

stk_status stk__jpeg_plan_load(const stk__tensor *stage, int64_t sample_id, stk__jpeg_plan *plan, char *err,
                               size_t err_size) {
  if (stage->stage_record[0] == PLAN_MAGIC) {
    memcpy(plan, &stage->stage_record[1], sizeof *plan);
    if (plan->sample_id == sample_id && plan->route >= 0 && plan->route < STK__JPEG_ROUTE_COUNT) return STK_OK;
  }
  stk__errorf(err, err_size, "the CPU pre-stage left no decode plan for data-set sample %lld", (long long)sample_id);
  return STK_EINTERNAL;
}
