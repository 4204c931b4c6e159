/* src/ops/decode/image_format.c: which format an encoded image is, from its first bytes (never
 * its file name), and the header read of every supported format (image_format.h). Hot path:
 * stk__image_format_detect and stk__image_peek run once per sample (a few comparisons). */
#include "ops/decode/image_format.h"

#include <string.h>

stk__image_format stk__image_format_detect(const uint8_t *data, size_t size) {
  if (!data || size < 2) return STK__IMAGE_UNKNOWN;
  if (data[0] == 0xFF && data[1] == 0xD8) return STK__IMAGE_JPEG;
  if (size >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0) return STK__IMAGE_PNG;
  if (size >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0) return STK__IMAGE_WEBP;
  if (data[0] == 'B' && data[1] == 'M') return STK__IMAGE_BMP;
  if (size >= 4 && (memcmp(data, "II*\0", 4) == 0 || memcmp(data, "MM\0*", 4) == 0 || memcmp(data, "II+\0", 4) == 0 ||
                    memcmp(data, "MM\0+", 4) == 0))
    return STK__IMAGE_TIFF;
  if (size >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6' &&
      (data[2] == ' ' || data[2] == '\t' || data[2] == '\n' || data[2] == '\r' || data[2] == '#'))
    return STK__IMAGE_PNM;
  if (size >= 6 && (memcmp(data, "GIF87a", 6) == 0 || memcmp(data, "GIF89a", 6) == 0)) return STK__IMAGE_GIF;
  if ((size >= 12 && memcmp(data, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0) ||
      (size >= 4 && memcmp(data, "\xff\x4f\xff\x51", 4) == 0))
    return STK__IMAGE_JPEG2000;
  if ((data[0] == 0xFF && data[1] == 0x0A) || (size >= 12 && memcmp(data, "\0\0\0\x0cJXL \r\n\x87\n", 12) == 0))
    return STK__IMAGE_JPEGXL;
  if (size >= 12 && memcmp(data + 4, "ftyp", 4) == 0 &&
      (memcmp(data + 8, "heic", 4) == 0 || memcmp(data + 8, "heix", 4) == 0 || memcmp(data + 8, "avif", 4) == 0 ||
       memcmp(data + 8, "mif1", 4) == 0))
    return STK__IMAGE_HEIF;
  return STK__IMAGE_UNKNOWN;
}

const char *stk__image_format_name(stk__image_format format) {
  switch (format) {
    case STK__IMAGE_JPEG:
      return "JPEG";
    case STK__IMAGE_PNG:
      return "PNG";
    case STK__IMAGE_WEBP:
      return "WebP";
    case STK__IMAGE_BMP:
      return "BMP";
    case STK__IMAGE_TIFF:
      return "TIFF";
    case STK__IMAGE_PNM:
      return "PNM";
    case STK__IMAGE_GIF:
      return "GIF";
    case STK__IMAGE_JPEG2000:
      return "JPEG 2000";
    case STK__IMAGE_JPEGXL:
      return "JPEG XL";
    case STK__IMAGE_HEIF:
      return "HEIF/AVIF";
    default:
      return "unknown";
  }
}

size_t stk__image_raw_bytes(const stk__image_info *info) {
  return (size_t)info->width * (size_t)info->height * (size_t)info->channels * (size_t)(info->depth / 8);
}

/* The message for bytes no decoder here reads. */
static stk_status unsupported(const uint8_t *data, size_t size, stk__image_format format, char *err, size_t err_size) {
  if (!data || size == 0) stk__errorf(err, err_size, "empty file (0 bytes)");
  else if (format != STK__IMAGE_UNKNOWN)
    stk__errorf(err, err_size,
                "%s images are not supported (stoker decodes JPEG, PNG, WebP, BMP, TIFF and PNM; "
                "docs/operators-decode.md)",
                stk__image_format_name(format));
  else if (size >= 2)
    stk__errorf(err, err_size,
                "not a supported image (starts with bytes 0x%02x 0x%02x; stoker decodes JPEG, PNG, WebP, BMP, "
                "TIFF and PNM)",
                data[0], data[1]);
  else stk__errorf(err, err_size, "not a supported image (1 byte)");
  return STK_EBADIMAGE;
}

/* Checks what every format's peek reports, so no decoder is handed a size it cannot hold. */
static stk_status check_info(const stk__image_info *info, char *err, size_t err_size) {
  const char *name = stk__image_format_name(info->format);
  if (info->width < 1 || info->height < 1 || info->width > STK__IMAGE_MAX_SIDE || info->height > STK__IMAGE_MAX_SIDE) {
    stk__errorf(err, err_size, "%s image of %dx%d pixels: sides must be 1..%d", name, info->width, info->height,
                STK__IMAGE_MAX_SIDE);
    return STK_EBADIMAGE;
  }
  if (info->channels < 1 || info->channels > 4 || (info->depth != 8 && info->depth != 16)) {
    stk__errorf(err, err_size, "%s image with %d channels of %d bits is not supported", name, info->channels,
                info->depth);
    return STK_EBADIMAGE;
  }
  if (stk__image_raw_bytes(info) > STK__IMAGE_MAX_BYTES) {
    stk__errorf(err, err_size, "%s image of %dx%d pixels x %d channels is larger than %zu MiB decoded", name,
                info->width, info->height, info->channels, STK__IMAGE_MAX_BYTES >> 20);
    return STK_EBADIMAGE;
  }
  return STK_OK;
}

stk_status stk__image_peek(const uint8_t *data, size_t size, stk__image_info *info, char *err, size_t err_size) {
  memset(info, 0, sizeof *info);
  const stk__image_format format = stk__image_format_detect(data, size);
  stk_status st;
  switch (format) {
    case STK__IMAGE_JPEG: {
      stk__jpeg_info j;
      st = stk__jpeg_peek(data, size, &j, err, err_size);
      if (st != STK_OK) return st;
      info->width = j.width;
      info->height = j.height;
      info->channels = j.components == 1 ? 1 : 3;
      info->depth = 8;
      info->orientation = j.orientation;
      break;
    }
    case STK__IMAGE_PNG:
      st = stk__png_peek(data, size, info, err, err_size);
      break;
    case STK__IMAGE_WEBP:
      st = stk__webp_peek(data, size, info, err, err_size);
      break;
    case STK__IMAGE_BMP:
      st = stk__bmp_peek(data, size, info, err, err_size);
      break;
    case STK__IMAGE_TIFF:
      st = stk__tiff_peek(data, size, info, err, err_size);
      break;
    case STK__IMAGE_PNM:
      st = stk__pnm_peek(data, size, info, err, err_size);
      break;
    default:
      return unsupported(data, size, format, err, err_size);
  }
  if (st != STK_OK) return st;
  info->format = format;
  if (!info->orientation) info->orientation = 1;
  return check_info(info, err, err_size);
}

stk_status stk__image_oriented_size(const uint8_t *data, size_t size, int *width, int *height, char *err,
                                    size_t err_size) {
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, &info, err, err_size);
  if (st != STK_OK) return st;
  const int swap = info.orientation >= 5 && info.orientation <= 8;
  *width = swap ? info.height : info.width;
  *height = swap ? info.width : info.height;
  return STK_OK;
}
