/* src/ops/decode/jpeg.c: CPU JPEG decoding with libjpeg-turbo (see jpeg.h for the contract).
 * Hot path: stk__jpeg_decode runs once per sample on a worker thread.
 *
 * What it does beyond a plain libjpeg decode:
 *   - refuses non-JPEG input (empty, PNG/GIF/BMP/WebP signatures, anything not starting with SOI)
 *     and absurd dimensions (also for the file's size) before libjpeg allocates anything;
 *   - turns libjpeg's fatal errors AND its "corrupt data" warnings (premature end of file, bad
 *     Huffman code, ...) into STK_EBADIMAGE with one clear message (jpeg_guard.c: error manager,
 *     a data source that keeps libjpeg-turbo on its checking Huffman decoder, the limits on
 *     pixels and on pixels per file byte); every decompressor is set up by one function,
 *     with_header, whose frame catches libjpeg's longjmp and destroys the decompressor (every
 *     buffer lives in libjpeg's pools), so no longjmp passes any cleanup and nothing leaks;
 *   - reads the EXIF orientation (APP1 "Exif", IFD0 tag 0x0112) with bounds checks and applies it;
 *   - decodes only the requested window: jpeg_crop_scanline for the columns (rounded out to
 *     iMCU boundaries by libjpeg, trimmed here), jpeg_skip_scanlines for the rows above and below
 *     (the rows below are still entropy-decoded, so a file is bad or good whatever the window);
 *   - optional DCT-domain scaling (scale_num/8) when the caller says how small the result may be;
 *   - Adobe CMYK / YCCK converted to RGB/BGR/GRAY here (libjpeg only delivers CMYK).
 * Windows are given in oriented coordinates and mapped back to stored coordinates. */
#include "ops/decode/jpeg.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "ops/decode/jpeg_guard.h"

stk_status stk__color_parse(const char *text, stk__color *out) {
  if (!text) return STK_EINVAL;
  if (strcmp(text, "RGB") == 0 || strcmp(text, "rgb") == 0) *out = STK__COLOR_RGB;
  else if (strcmp(text, "BGR") == 0 || strcmp(text, "bgr") == 0) *out = STK__COLOR_BGR;
  else if (strcmp(text, "GRAY") == 0 || strcmp(text, "gray") == 0) *out = STK__COLOR_GRAY;
  else return STK_EINVAL;
  return STK_OK;
}

int stk__color_channels(stk__color color) { return color == STK__COLOR_GRAY ? 1 : 3; }

/* ---- Signature check ------------------------------------------------------------------------ */
static stk_status check_signature(const uint8_t *data, size_t size, char *err, size_t err_size) {
  if (!data || size == 0) {
    stk__errorf(err, err_size, "empty file (0 bytes)");
    return STK_EBADIMAGE;
  }
  if (size >= 2 && data[0] == 0xFF && data[1] == 0xD8) {
    if (size < 4) {
      stk__errorf(err, err_size, "truncated JPEG (%zu bytes)", size);
      return STK_EBADIMAGE;
    }
    return STK_OK;
  }
  const char *what = NULL;
  if (size >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0) what = "a PNG image";
  else if (size >= 6 && (memcmp(data, "GIF87a", 6) == 0 || memcmp(data, "GIF89a", 6) == 0)) what = "a GIF image";
  else if (size >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0) what = "a WebP image";
  else if (size >= 2 && data[0] == 'B' && data[1] == 'M') what = "a BMP image";
  else if (size >= 4 && (memcmp(data, "II*\0", 4) == 0 || memcmp(data, "MM\0*", 4) == 0)) what = "a TIFF image";
  if (what) stk__errorf(err, err_size, "not a JPEG file (looks like %s)", what);
  else if (size >= 2)
    stk__errorf(err, err_size, "not a JPEG file (starts with bytes 0x%02x 0x%02x, expected 0xff 0xd8)", data[0],
                data[1]);
  else stk__errorf(err, err_size, "not a JPEG file (1 byte)");
  return STK_EBADIMAGE;
}

/* ---- EXIF orientation ----------------------------------------------------------------------- */
static unsigned read_u16(const uint8_t *p, int little) {
  return little ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}
static uint32_t read_u32(const uint8_t *p, int little) {
  return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Orientation (1..8) from an APP1 payload, or 0 when it is not an Exif block with a valid tag. */
static int exif_orientation(const uint8_t *app1, size_t size) {
  if (size < 6 + 8 || memcmp(app1, "Exif\0\0", 6) != 0) return 0;
  const uint8_t *tiff = app1 + 6;
  size_t tiff_size = size - 6;
  int little;
  if (tiff[0] == 'I' && tiff[1] == 'I') little = 1;
  else if (tiff[0] == 'M' && tiff[1] == 'M') little = 0;
  else return 0;
  if (read_u16(tiff + 2, little) != 42) return 0;
  uint32_t ifd = read_u32(tiff + 4, little);
  if (ifd < 8 || (uint64_t)ifd + 2 > tiff_size) return 0;
  unsigned entries = read_u16(tiff + ifd, little);
  for (unsigned i = 0; i < entries; i++) {
    uint64_t entry = (uint64_t)ifd + 2 + (uint64_t)i * 12;
    if (entry + 12 > tiff_size) return 0;
    const uint8_t *e = tiff + entry;
    if (read_u16(e, little) != 0x0112) continue;
    unsigned type = read_u16(e + 2, little);
    uint32_t count = read_u32(e + 4, little);
    if (type != 3 /* SHORT */ || count < 1) return 0;
    unsigned value = read_u16(e + 8, little);
    return value >= 1 && value <= 8 ? (int)value : 0;
  }
  return 0;
}

static int orientation_of(j_decompress_ptr cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next) {
    if (m->marker != JPEG_APP0 + 1) continue;
    int o = exif_orientation(m->data, m->data_length);
    if (o) return o;
  }
  return 1;
}

static int orientation_swaps_axes(int orientation) { return orientation >= 5; }

/* stored = A * oriented + b for one of the 8 EXIF orientations, for a stored image sw x sh:
 * sx = ax*ox + bx*oy + cx, sy = ay*ox + by*oy + cy. */
typedef struct orient_map {
  int ax, bx, cx, ay, by, cy;
} orient_map;

static orient_map orient_map_make(int orientation, int sw, int sh) {
  orient_map m = {1, 0, 0, 0, 1, 0};
  switch (orientation) {
    case 2:
      m = (orient_map){-1, 0, sw - 1, 0, 1, 0};
      break;
    case 3:
      m = (orient_map){-1, 0, sw - 1, 0, -1, sh - 1};
      break;
    case 4:
      m = (orient_map){1, 0, 0, 0, -1, sh - 1};
      break;
    case 5:
      m = (orient_map){0, 1, 0, 1, 0, 0};
      break;
    case 6:
      m = (orient_map){0, 1, 0, -1, 0, sh - 1};
      break;
    case 7:
      m = (orient_map){0, -1, sw - 1, -1, 0, sh - 1};
      break;
    case 8:
      m = (orient_map){0, -1, sw - 1, 1, 0, 0};
      break;
    default:
      break;
  }
  return m;
}

/* ---- Header --------------------------------------------------------------------------------- */
static int subsampling_of(j_decompress_ptr cinfo) {
  if (cinfo->num_components != 3) return 0;
  jpeg_component_info *c = cinfo->comp_info;
  if (c[1].h_samp_factor != c[2].h_samp_factor || c[1].v_samp_factor != c[2].v_samp_factor) return 0;
  if (c[0].h_samp_factor % c[1].h_samp_factor || c[0].v_samp_factor % c[1].v_samp_factor) return 0;
  int h = c[0].h_samp_factor / c[1].h_samp_factor, v = c[0].v_samp_factor / c[1].v_samp_factor;
  if (h == 1 && v == 1) return 444;
  if (h == 2 && v == 1) return 422;
  if (h == 2 && v == 2) return 420;
  if (h == 1 && v == 2) return 440;
  if (h == 4 && v == 1) return 411;
  return 0;
}

static void fill_info(j_decompress_ptr cinfo, stk__jpeg_info *info) {
  info->width = (int)cinfo->image_width;
  info->height = (int)cinfo->image_height;
  info->components = cinfo->num_components;
  info->progressive = cinfo->progressive_mode ? 1 : 0;
  info->cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  info->subsampling = subsampling_of(cinfo);
  info->orientation = orientation_of(cinfo);
}

/* ---- The libjpeg boundary -------------------------------------------------------------------- */
/* What runs on a decompressor whose header was read and accepted: any libjpeg call (start,
 * scanlines, finish). A libjpeg error inside it returns through with_header's setjmp. */
typedef stk_status (*jpeg_body)(j_decompress_ptr cinfo, void *ctx, char *err, size_t err_size);

/* The one set-up of every libjpeg decompressor here: the signature check, the error manager (its
 * longjmp lands in this frame, which is live for as long as libjpeg runs), the decompressor, the
 * guarded data source (jpeg_guard.c; libjpeg's own memory source when `verified`: bytes a checking
 * decode already accepted, jpeg_verified.h), the header (with the APP1 segments when save_exif, for the
 * EXIF orientation), stk__jpeg_check_header, then body (NULL: nothing more), and always
 * jpeg_destroy_decompress. A libjpeg error anywhere comes back as the status and message
 * stk__jpeg_error_report gives, after the decompressor (and every buffer in its pools) is freed;
 * whatever else the body holds it records in ctx for the caller to give back. */
static stk_status with_header(const uint8_t *data, size_t size, int save_exif, int verified, jpeg_body body,
                              void *ctx, stk__jpeg_info *info, char *err, size_t err_size) {
  stk_status st = check_signature(data, size, err, err_size);
  if (st != STK_OK) return st;
  struct jpeg_decompress_struct cinfo;
  stk__jpeg_source source;
  stk__jpeg_error_ctx ectx;
  stk__jpeg_error_init(&ectx);
  cinfo.err = &ectx.pub;
  if (setjmp(ectx.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return stk__jpeg_error_report(&ectx, err, err_size);
  }
  jpeg_create_decompress(&cinfo);
  if (save_exif) jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  if (verified) jpeg_mem_src(&cinfo, data, (unsigned long)size); /* bytes a checking decode accepted */
  else stk__jpeg_source_attach(&cinfo, &source, data, size);
  jpeg_read_header(&cinfo, TRUE);
  st = stk__jpeg_check_header(&cinfo, err, err_size);
  if (st == STK_OK && info) fill_info(&cinfo, info);
  if (st == STK_OK && body) st = body(&cinfo, ctx, err, err_size);
  jpeg_destroy_decompress(&cinfo);
  return st;
}

stk_status stk__jpeg_peek(const uint8_t *data, size_t size, stk__jpeg_info *info, char *err, size_t err_size) {
  return with_header(data, size, 1, 0, NULL, NULL, info, err, err_size);
}

/* ---- Decode --------------------------------------------------------------------------------- */
/* Adobe CMYK (Photoshop writes inverted values) to RGB/BGR/GRAY, in place, pixel by pixel from the
 * start: the destination never overtakes the source (3 or 1 bytes written per 4 read). */
static void cmyk_convert(uint8_t *row, size_t pixels, int inverted, stk__color color) {
  const uint8_t *src = row;
  uint8_t *dst = row;
  for (size_t i = 0; i < pixels; i++, src += 4) {
    unsigned c = src[0], m = src[1], y = src[2], k = src[3];
    if (!inverted) {
      c = 255 - c;
      m = 255 - m;
      y = 255 - y;
      k = 255 - k;
    }
    unsigned r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
    if (color == STK__COLOR_GRAY) {
      *dst++ = (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 32768u) >> 16);
    } else if (color == STK__COLOR_BGR) {
      dst[0] = (uint8_t)b, dst[1] = (uint8_t)g, dst[2] = (uint8_t)r;
      dst += 3;
    } else {
      dst[0] = (uint8_t)r, dst[1] = (uint8_t)g, dst[2] = (uint8_t)b;
      dst += 3;
    }
  }
}

static J_COLOR_SPACE libjpeg_out_space(j_decompress_ptr cinfo, stk__color color) {
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) return JCS_CMYK;
  if (color == STK__COLOR_GRAY) return JCS_GRAYSCALE;
  if (color == STK__COLOR_BGR) return JCS_EXT_BGR;
  return JCS_RGB;
}

/* Smallest n in 1..8 with (n/8)*crop >= min in both axes (8 = no scaling). */
static int choose_scale(int crop_w, int crop_h, int min_w, int min_h) {
  /* Only 1/8, 1/4 and 1/2: libjpeg-turbo has SIMD IDCTs for those (and the full size); its other
   * scaled IDCTs (3/8, 5/8, ...) are plain C and slower than a full-size SIMD decode. */
  if (min_w <= 0 && min_h <= 0) return 8;
  static const int candidates[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    int n = candidates[i];
    if ((int64_t)crop_w * n >= (int64_t)8 * min_w && (int64_t)crop_h * n >= (int64_t)8 * min_h) return n;
  }
  return 8;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Reads stored-window rows [ty, ty+th) x columns [tx, tx+tw) of the started decompressor into dst,
 * compact (tw * channels bytes per row), converting CMYK. dst must hold
 * max(cropped_width * output_components, tw * channels) * th bytes; returns via longjmp on error. */
static void read_window(j_decompress_ptr cinfo, int tx, int ty, int tw, int th, stk__color color, uint8_t *dst) {
  /* libjpeg treats the cropped columns' edges as image edges when upsampling chroma ("fancy"
   * upsampling), so ask for one more pixel on the left and a few on the right: the window's own
   * pixels then come out exactly as in a full decode. */
  JDIMENSION xoff = (JDIMENSION)(tx > 0 ? tx - 1 : 0);
  JDIMENSION end = (JDIMENSION)tx + (JDIMENSION)tw + 16;
  if (end > cinfo->output_width) end = cinfo->output_width;
  JDIMENSION cw = end - xoff;
  if (cw < cinfo->output_width) jpeg_crop_scanline(cinfo, &xoff, &cw);
  else xoff = 0;
  const size_t in_pixel = (size_t)cinfo->output_components;
  const size_t row_in = (size_t)cinfo->output_width * in_pixel; /* output_width == cw after cropping */
  const int channels = stk__color_channels(color);
  const size_t row_out = (size_t)tw * (size_t)channels;
  const size_t trim = (size_t)(tx - (int)xoff) * in_pixel;
  const int cmyk = cinfo->out_color_space == JCS_CMYK;
  const int inverted = cinfo->saw_Adobe_marker;

  if (ty > 0) jpeg_skip_scanlines(cinfo, (JDIMENSION)ty);
  int row = 0;
  while (row < th) {
    JSAMPROW rows[16];
    int want = th - row < 16 ? th - row : 16;
    for (int i = 0; i < want; i++) rows[i] = dst + (size_t)(row + i) * row_in;
    JDIMENSION got = jpeg_read_scanlines(cinfo, rows, (JDIMENSION)want);
    if (got == 0) ERREXIT(cinfo, JERR_INPUT_EMPTY); /* cannot happen: the source never suspends */
    row += (int)got;
  }
  /* Compact in place, top to bottom: row r moves from r*row_in + trim to r*row_out, never forward. */
  for (int r = 0; r < th; r++) {
    uint8_t *from = dst + (size_t)r * row_in + trim;
    uint8_t *to = dst + (size_t)r * row_out;
    if (cmyk) {
      if (to != from) memmove(to, from, (size_t)tw * 4); /* r*row_out <= r*row_in + trim: safe */
      cmyk_convert(to, (size_t)tw, inverted, color);
    } else if (to != from) {
      memmove(to, from, row_out);
    }
  }
}

/* One rule for bad files whatever the window (docs/operators-io.md): the entropy-coded data is
 * decoded to the end and up to EOI, so a file truncated or corrupt below the window is refused
 * as it is by a full decode. jpeg_skip_scanlines runs the Huffman decoder over whole iMCU rows
 * without IDCT or colour conversion, but skipping to the very end decodes nothing, so it stops one
 * row short and that row is read. Progressive files were entropy-decoded whole by
 * jpeg_start_decompress; the skip is then only arithmetic. Errors return via longjmp. */
static void entropy_decode_to_end(j_decompress_ptr cinfo) {
  if (cinfo->output_scanline < cinfo->output_height) {
    jpeg_skip_scanlines(cinfo, cinfo->output_height - cinfo->output_scanline - 1);
    JSAMPROW row = (JSAMPROW)cinfo->mem->alloc_small(
        (j_common_ptr)cinfo, JPOOL_IMAGE, (size_t)cinfo->output_width * (size_t)cinfo->output_components + 64);
    while (cinfo->output_scanline < cinfo->output_height)
      if (jpeg_read_scanlines(cinfo, &row, 1) == 0) ERREXIT(cinfo, JERR_INPUT_EMPTY);
  }
  jpeg_finish_decompress(cinfo);
}

/* The window at decode scale scale/8, in oriented coordinates (a scaled_ow x scaled_oh image):
 * start rounded down, size rounded up, shifted back inside the scaled image when rounding pushed
 * it over the edge. */
static stk__window window_at_scale(stk__window win, int scale, int scaled_ow, int scaled_oh) {
  stk__window sw = win;
  if (scale == 8) return sw;
  sw.x = (int)((int64_t)win.x * scale / 8);
  sw.y = (int)((int64_t)win.y * scale / 8);
  sw.w = (int)ceil_div((int64_t)win.w * scale, 8);
  sw.h = (int)ceil_div((int64_t)win.h * scale, 8);
  if (sw.w > scaled_ow) sw.w = scaled_ow;
  if (sw.h > scaled_oh) sw.h = scaled_oh;
  if (sw.x + sw.w > scaled_ow) sw.x = scaled_ow - sw.w;
  if (sw.y + sw.h > scaled_oh) sw.y = scaled_oh - sw.h;
  return sw;
}

/* Takes a progressive (or multi-scan) file's whole-image coefficient buffers from `budget` before
 * libjpeg allocates them at jpeg_start_decompress; *taken receives what was taken (given back by
 * the caller). STK_ERANGE with a message naming the size and the budget when it has no room. */
static stk_status take_coefficients(j_decompress_ptr cinfo, stk__host_budget *budget, size_t *taken, char *err,
                                    size_t err_size) {
  const size_t bytes = budget ? stk__jpeg_coefficient_bytes(cinfo) : 0;
  if (!bytes) return STK_OK;
  if (!stk__host_budget_take(budget, bytes)) {
    const double mib = 1024.0 * 1024.0;
    stk__errorf(err, err_size,
                "a %s JPEG of %ux%u needs %.1f MiB of coefficient buffers; the pipeline's host memory budget is %.1f "
                "MiB (%.1f MiB held; options.host_memory_budget)",
                cinfo->progressive_mode ? "progressive" : "multi-scan", cinfo->image_width, cinfo->image_height,
                (double)bytes / mib, (double)budget->limit / mib,
                (double)__atomic_load_n(&budget->held, __ATOMIC_RELAXED) / mib);
    return STK_ERANGE;
  }
  *taken = bytes;
  return STK_OK;
}

stk_status stk__jpeg_decode(const uint8_t *data, size_t size, stk__color color, const stk__window *crop, int min_w,
                            int min_h, stk__tensor *out, double *scale_out, char *err, size_t err_size) {
  return stk__jpeg_decode_counted(data, size, color, crop, min_w, min_h, NULL, NULL, out, scale_out, err, err_size);
}

/* A decode's parameters and what it holds: the coefficient bytes taken from the budget, given
 * back by stk__jpeg_decode_counted on every exit (a libjpeg error included). */
typedef struct decode_job {
  stk__color color;
  const stk__window *crop;
  int min_w, min_h;
  stk__host_budget *budget;
  stk__tensor *out;
  size_t taken;
  int scale;
  int verified; /* these bytes passed a checking decode before (jpeg_verified.h) */
} decode_job;

/* The decode proper, on a decompressor whose header was accepted (with_header). */
static stk_status decode_body(j_decompress_ptr cinfo, void *ctx, char *err, size_t err_size) {
  decode_job *job = ctx;
  const int orientation = orientation_of(cinfo);
  const int swap = orientation_swaps_axes(orientation);
  const int oriented_w = swap ? (int)cinfo->image_height : (int)cinfo->image_width;
  const int oriented_h = swap ? (int)cinfo->image_width : (int)cinfo->image_height;
  stk__window win = {0, 0, oriented_w, oriented_h};
  if (job->crop) {
    win = *job->crop;
    if (win.w <= 0 || win.h <= 0 || win.x < 0 || win.y < 0 || (int64_t)win.x + win.w > oriented_w ||
        (int64_t)win.y + win.h > oriented_h) {
      stk__errorf(err, err_size, "crop window %dx%d at (%d,%d) is outside the %dx%d image", win.w, win.h, win.x, win.y,
                  oriented_w, oriented_h);
      return STK_EINVAL;
    }
  }

  const int scale = choose_scale(win.w, win.h, job->min_w, job->min_h);
  cinfo->scale_num = (unsigned)scale;
  cinfo->scale_denom = 8;
  cinfo->out_color_space = libjpeg_out_space(cinfo, job->color);
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_calc_output_dimensions(cinfo);
  const int stored_w = (int)cinfo->output_width, stored_h = (int)cinfo->output_height;
  const int scaled_ow = swap ? stored_h : stored_w, scaled_oh = swap ? stored_w : stored_h;

  const stk__window sw = window_at_scale(win, scale, scaled_ow, scaled_oh);

  /* Stored window: the bounding box of the oriented window's corners mapped back. */
  orient_map m = orient_map_make(orientation, stored_w, stored_h);
  int x0 = m.ax * sw.x + m.bx * sw.y + m.cx, y0 = m.ay * sw.x + m.by * sw.y + m.cy;
  int x1 = m.ax * (sw.x + sw.w - 1) + m.bx * (sw.y + sw.h - 1) + m.cx;
  int y1 = m.ay * (sw.x + sw.w - 1) + m.by * (sw.y + sw.h - 1) + m.cy;
  const int tx = x0 < x1 ? x0 : x1, ty = y0 < y1 ? y0 : y1;
  const int tw = (x0 < x1 ? x1 - x0 : x0 - x1) + 1, th = (y0 < y1 ? y1 - y0 : y0 - y1) + 1;

  const int channels = stk__color_channels(job->color);
  int64_t shape[3] = {sw.h, sw.w, channels};
  stk_status st = take_coefficients(cinfo, job->budget, &job->taken, err, err_size);
  if (st != STK_OK) return st;
  jpeg_start_decompress(cinfo);
  /* Room for the widest row libjpeg may hand us (crop rounded out to iMCU edges, 4 channels). */
  const size_t decode_bytes = ((size_t)cinfo->output_width * (size_t)cinfo->output_components + 64) * (size_t)th;

  if (orientation == 1) {
    /* The output buffer is asked for what the whole image would need at this scale, whatever
     * the window: what it must hold then depends only on the images' sizes, not on the random
     * windows, so the pipeline's buffers stop growing once the largest image has been seen. */
    const size_t image_bytes = ((size_t)stored_w * (size_t)cinfo->output_components + 64) * (size_t)stored_h;
    int64_t scratch_shape[1] = {(int64_t)(image_bytes > decode_bytes ? image_bytes : decode_bytes)};
    st = stk__tensor_resize(job->out, STK_DTYPE_UINT8, 1, scratch_shape, "");
    if (st != STK_OK) {
      stk__errorf(err, err_size, "out of memory for a %dx%d image", sw.w, sw.h);
      return st;
    }
    read_window(cinfo, tx, ty, tw, th, job->color, (uint8_t *)job->out->data);
    st = stk__tensor_resize(job->out, STK_DTYPE_UINT8, 3, shape, "HWC"); /* shrinks: never reallocates */
  } else {
    /* Decode the stored window into a libjpeg pool buffer (freed by jpeg_destroy even on error),
     * then write the oriented window. */
    uint8_t *stored = (uint8_t *)cinfo->mem->alloc_large((j_common_ptr)cinfo, JPOOL_IMAGE, decode_bytes);
    read_window(cinfo, tx, ty, tw, th, job->color, stored);
    st = stk__tensor_resize(job->out, STK_DTYPE_UINT8, 3, shape, "HWC");
    if (st == STK_OK) {
      uint8_t *dst = (uint8_t *)job->out->data;
      const ptrdiff_t step = (ptrdiff_t)(m.ax + m.ay * tw) * channels; /* per oriented x */
      for (int oy = 0; oy < sw.h; oy++) {
        int sx = m.ax * sw.x + m.bx * (sw.y + oy) + m.cx - tx;
        int sy = m.ay * sw.x + m.by * (sw.y + oy) + m.cy - ty;
        const uint8_t *src = stored + ((size_t)sy * (size_t)tw + (size_t)sx) * (size_t)channels;
        if (channels == 3) {
          for (int ox = 0; ox < sw.w; ox++, src += step, dst += 3) dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
        } else {
          for (int ox = 0; ox < sw.w; ox++, src += step) *dst++ = *src;
        }
      }
    }
  }
  if (st != STK_OK) {
    stk__errorf(err, err_size, "out of memory for a %dx%d image", sw.w, sw.h);
    return st;
  }
  /* Bytes already found good need no check below the window: with_header's jpeg_destroy_decompress
   * ends the decode here. */
  if (!job->verified) entropy_decode_to_end(cinfo);
  job->scale = scale;
  return STK_OK;
}

/* Records bytes a checking decode accepted -- unless libjpeg-turbo's two Huffman paths read them
 * differently: fill bytes before a stuffed zero in the entropy-coded data are one 0xFF data byte
 * to the checking path and a marker to the fast one, which then gives the block back to the
 * checking path over the coefficients it already wrote, so the pixels would differ. Such a file
 * stays on the checking path every time (jpeg_verified.h). */
static void remember(stk__jpeg_verified *verified, uint64_t fingerprint, const uint8_t *data, size_t size) {
  stk__jpeg_layout layout;
  stk__jpeg_layout_read(data, size, &layout);
  if (!layout.fill_stuffed) stk__jpeg_verified_add(verified, fingerprint);
}

stk_status stk__jpeg_decode_counted(const uint8_t *data, size_t size, stk__color color, const stk__window *crop,
                                    int min_w, int min_h, stk__host_budget *budget, stk__jpeg_verified *verified,
                                    stk__tensor *out, double *scale_out, char *err, size_t err_size) {
  if (scale_out) *scale_out = 1.0;
  const uint64_t fingerprint = verified ? stk__jpeg_fingerprint(data, size) : 0;
  const int known = verified && stk__jpeg_verified_has(verified, fingerprint);
  decode_job job = {color, crop, min_w, min_h, budget, out, 0, 8, known};
  stk_status st = with_header(data, size, 1, job.verified, decode_body, &job, NULL, err, err_size);
  if (st == STK_OK && verified && !job.verified) remember(verified, fingerprint, data, size);
  stk__host_budget_give(budget, job.taken);
  if (st == STK_OK && scale_out) *scale_out = job.scale / 8.0;
  return st;
}

/* ---- Entropy check (validate_entropy of the mixed decoder) ----------------------------------- */
/* Every scan decoded to EOI at the least work libjpeg-turbo offers (with_header's body). */
static stk_status entropy_body(j_decompress_ptr cinfo, void *ctx, char *err, size_t err_size) {
  (void)ctx, (void)err, (void)err_size;
  /* Huffman decoding of every scan up to EOI, the same input controller as a full decode, at the
   * least work libjpeg-turbo offers: scaled to 1/8 (one value per block where an IDCT runs at
   * all) in the cheapest output colour space, every row but the last skipped (a baseline file's
   * skipped rows are entropy-decoded and discarded block by block: no coefficient buffer, no
   * IDCT, no colour conversion; a progressive file's scans are buffered by the start, as in any
   * decode). */
  cinfo->scale_num = 1;
  cinfo->scale_denom = 8;
  cinfo->out_color_space = libjpeg_out_space(cinfo, STK__COLOR_GRAY);
  cinfo->do_fancy_upsampling = FALSE;
  jpeg_start_decompress(cinfo);
  entropy_decode_to_end(cinfo);
  return STK_OK;
}

stk_status stk__jpeg_check_entropy_once(const uint8_t *data, size_t size, stk__jpeg_verified *verified, char *err,
                                       size_t err_size) {
  if (!verified) return stk__jpeg_check_entropy(data, size, err, err_size);
  const uint64_t fingerprint = stk__jpeg_fingerprint(data, size);
  if (stk__jpeg_verified_has(verified, fingerprint)) return STK_OK;
  const stk_status st = stk__jpeg_check_entropy(data, size, err, err_size);
  if (st == STK_OK) remember(verified, fingerprint, data, size);
  return st;
}

stk_status stk__jpeg_check_entropy(const uint8_t *data, size_t size, char *err, size_t err_size) {
  return with_header(data, size, 0, 0, entropy_body, NULL, NULL, err, err_size);
}
