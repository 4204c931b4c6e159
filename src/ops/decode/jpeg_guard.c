/* src/ops/decode/jpeg_guard.c: libjpeg-turbo's error manager, messages, checking data source and
 * header limits for jpeg.c (see jpeg_guard.h). Hot path: the source's fill callback and the
 * warning filter run during every decode; the message wording only on failure.
 *
 * Why a data source of our own: with jpeg_mem_src the whole file sits in libjpeg-turbo's input
 * buffer, so its sequential Huffman decoder always takes the fast path (decode_mcu_fast), which
 * decodes a bad Huffman code (17+ bits matching no code) as a zero without any warning -- files
 * on which djpeg says "Corrupt JPEG data: bad Huffman code" then decoded silently. The fast
 * path runs only while at least 512 bytes per block of the MCU are buffered (libjpeg-turbo
 * jdhuff.c, decode_mcu), so pieces of STK__JPEG_PIECE < 512 bytes keep it on decode_mcu_slow,
 * which warns. Measured cost: docs/operators-io.md. */
#include "ops/decode/jpeg_guard.h"

#include <string.h>

#include <jerror.h>

#define STK__JPEG_PIECE 504 /* < 512: see above */

/* ---- Error manager -------------------------------------------------------------------------- */
static void on_error_exit(j_common_ptr cinfo) {
  stk__jpeg_error_ctx *ctx = (stk__jpeg_error_ctx *)cinfo->err;
  ctx->pub.format_message(cinfo, ctx->message);
  ctx->out_of_memory = ctx->pub.msg_code == JERR_OUT_OF_MEMORY;
  longjmp(ctx->jump, 1);
}

/* Bytes libjpeg discarded before EOI (JWRN_EXTRANEOUS_DATA, `count` of them) are padding only when
 * every one is a zero byte: some writers pad the file with zeros before EOI (0xFF fill bytes are
 * never counted). Anything else is entropy-coded data the Huffman decoder did not consume -- it
 * lost step on corrupt data, decoded garbage into the remaining blocks and ran out of blocks
 * before the data ended -- and the pixels are wrong (djpeg: "Corrupt JPEG data: N extraneous
 * bytes before marker 0xd9"). libjpeg warns while its data pointer (last synchronised read) sits
 * at or before the marker's 0xFF run: the run and the marker code are found from there. */
static boolean source_fill(j_decompress_ptr cinfo);

static int discarded_bytes_are_padding(j_decompress_ptr cinfo, long count) {
  const stk__jpeg_source *src = (const stk__jpeg_source *)cinfo->src;
  if (!src || count <= 0 || src->pub.fill_input_buffer != source_fill) return 0; /* not our source */
  const uintptr_t base = (uintptr_t)src->data, at_ptr = (uintptr_t)src->pub.next_input_byte;
  if (at_ptr < base || at_ptr > base + src->size) return 0; /* the fake EOI after the data ran out */
  size_t at = (size_t)(at_ptr - base);
  while (at < src->size && src->data[at] == 0xFF) at++;
  if (at >= src->size || src->data[at] != (JPEG_EOI & 0xFF)) return 0;
  size_t run = at; /* first byte of the 0xFF run before the marker code */
  while (run > 0 && src->data[run - 1] == 0xFF) run--;
  if (run == at || (size_t)count > run) return 0;
  for (size_t i = run - (size_t)count; i < run; i++)
    if (src->data[i] != 0x00) return 0;
  return 1;
}

/* Warnings that do not mean the pixels are wrong: tolerated. Zero bytes between the end of the
 * last scan and EOI are padding (above); every other extraneous byte, before EOI or any other
 * marker (a restart marker, the next scan), means the data did not decode to the expected length
 * and is an error. Every other warning (premature end of file, bad Huffman or arithmetic code,
 * bad progression, hit marker, must resync, ...) is an error. */
static int warning_is_benign(j_common_ptr cinfo, const struct jpeg_error_mgr *err) {
  switch (err->msg_code) {
    case JWRN_EXTRANEOUS_DATA:
      return cinfo->is_decompressor && err->msg_parm.i[1] == (JPEG_EOI & 0xFF) &&
             discarded_bytes_are_padding((j_decompress_ptr)cinfo, (long)err->msg_parm.i[0]);
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_BOGUS_ICC:
      return 1;
    default:
      return 0;
  }
}

static void on_emit_message(j_common_ptr cinfo, int level) {
  stk__jpeg_error_ctx *ctx = (stk__jpeg_error_ctx *)cinfo->err;
  if (level >= 0) return; /* trace messages */
  ctx->pub.num_warnings++;
  if (warning_is_benign(cinfo, &ctx->pub)) return;
  ctx->pub.format_message(cinfo, ctx->message);
  longjmp(ctx->jump, 1);
}

static void on_output_message(j_common_ptr cinfo) { (void)cinfo; /* the library never prints */ }

void stk__jpeg_error_init(stk__jpeg_error_ctx *ctx) {
  jpeg_std_error(&ctx->pub);
  ctx->pub.error_exit = on_error_exit;
  ctx->pub.emit_message = on_emit_message;
  ctx->pub.output_message = on_output_message;
  ctx->out_of_memory = 0;
  ctx->message[0] = '\0';
}

/* libjpeg's errors that say "this JPEG is valid but not something we decode". */
static int error_is_unsupported(int code) {
  return code == JERR_BAD_PRECISION || code == JERR_SOF_UNSUPPORTED || code == JERR_NOT_COMPILED ||
         code == JERR_NOTIMPL || code == JERR_CONVERSION_NOTIMPL || code == JERR_ARITH_NOTIMPL;
}

stk_status stk__jpeg_error_report(const stk__jpeg_error_ctx *ctx, char *err, size_t err_size) {
  const int code = ctx->pub.msg_code;
  if (ctx->out_of_memory) {
    stk__errorf(err, err_size, "out of memory while decoding JPEG: %s", ctx->message);
    return STK_ENOMEM;
  }
  if (code == JERR_BAD_PRECISION)
    stk__errorf(err, err_size, "unsupported JPEG: %d-bit JPEG is not supported (only 8-bit samples)",
                ctx->pub.msg_parm.i[0]);
  else if (error_is_unsupported(code) && strncmp(ctx->message, "Unsupported ", 12) == 0)
    stk__errorf(err, err_size, "unsupported %s", ctx->message + 12); /* "unsupported JPEG process: ..." */
  else if (error_is_unsupported(code)) stk__errorf(err, err_size, "unsupported JPEG: %s", ctx->message);
  else if (code == JWRN_JPEG_EOF)
    stk__errorf(err, err_size, "truncated JPEG: %s (the data ends before the image does)", ctx->message);
  else {
    /* libjpeg's corrupt-data warnings already start with "Corrupt JPEG data: ": one prefix only. */
    static const char prefix[] = "Corrupt JPEG data: ";
    const char *text = ctx->message;
    if (strncmp(text, prefix, sizeof prefix - 1) == 0) text += sizeof prefix - 1;
    stk__errorf(err, err_size, "corrupt JPEG data: %s", text);
  }
  return STK_EBADIMAGE;
}

/* ---- Data source ---------------------------------------------------------------------------- */
static void source_init(j_decompress_ptr cinfo) { (void)cinfo; }

static boolean source_fill(j_decompress_ptr cinfo) {
  stk__jpeg_source *src = (stk__jpeg_source *)cinfo->src;
  static const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};
  if (src->offset >= src->size) {
    WARNMS(cinfo, JWRN_JPEG_EOF); /* an error through on_emit_message */
    src->pub.next_input_byte = fake_eoi;
    src->pub.bytes_in_buffer = 2;
    return TRUE;
  }
  size_t n = src->size - src->offset;
  if (n > STK__JPEG_PIECE) n = STK__JPEG_PIECE;
  src->pub.next_input_byte = src->data + src->offset;
  src->pub.bytes_in_buffer = n;
  src->offset += n;
  return TRUE;
}

static void source_skip(j_decompress_ptr cinfo, long num_bytes) {
  stk__jpeg_source *src = (stk__jpeg_source *)cinfo->src;
  if (num_bytes <= 0) return;
  size_t want = (size_t)num_bytes;
  if (want <= src->pub.bytes_in_buffer) {
    src->pub.next_input_byte += want;
    src->pub.bytes_in_buffer -= want;
    return;
  }
  want -= src->pub.bytes_in_buffer;
  src->pub.bytes_in_buffer = 0;
  src->offset = want >= src->size - src->offset ? src->size : src->offset + want;
  /* the next read calls source_fill, which reports the end of the data if the skip went past it */
}

static void source_term(j_decompress_ptr cinfo) { (void)cinfo; }

void stk__jpeg_source_attach(j_decompress_ptr cinfo, stk__jpeg_source *src, const uint8_t *data, size_t size) {
  memset(src, 0, sizeof *src);
  src->pub.init_source = source_init;
  src->pub.fill_input_buffer = source_fill;
  src->pub.skip_input_data = source_skip;
  src->pub.resync_to_restart = jpeg_resync_to_restart;
  src->pub.term_source = source_term;
  src->data = data;
  src->size = size;
  cinfo->src = &src->pub;
}

/* ---- Layout and header limits ---------------------------------------------------------------- */
/* End of the entropy-coded data starting at `pos`: the 0xFF of the first marker that is not a
 * stuffed zero, a restart marker or a fill byte; fill bytes before a stuffed zero are counted in
 * *fill_stuffed. */
static size_t entropy_end(const uint8_t *data, size_t size, size_t pos, size_t *fill_stuffed) {
  while (pos < size) {
    const uint8_t *ff = memchr(data + pos, 0xFF, size - pos);
    if (!ff) return size;
    size_t at = (size_t)(ff - data), next = at + 1;
    while (next < size && data[next] == 0xFF) next++;
    if (next >= size) return at;
    if (data[next] != 0x00 && !(data[next] >= 0xD0 && data[next] <= 0xD7)) return at;
    if (data[next] == 0x00 && next > at + 1) (*fill_stuffed)++;
    pos = next + 1;
  }
  return size;
}

void stk__jpeg_layout_read(const uint8_t *data, size_t size, stk__jpeg_layout *out) {
  out->entropy_bytes = 0;
  out->scans = 0;
  out->fill_stuffed = 0;
  size_t pos = 2; /* after SOI */
  while (pos + 1 < size && data[pos] == 0xFF) {
    while (pos + 1 < size && data[pos + 1] == 0xFF) pos++; /* fill bytes */
    if (pos + 1 >= size) return;
    const uint8_t marker = data[pos + 1];
    pos += 2;
    if (marker == (JPEG_EOI & 0xFF)) return;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue; /* no length */
    if (pos + 2 > size) return;
    const size_t length = (size_t)data[pos] << 8 | data[pos + 1];
    if (length < 2 || length > size - pos) return;
    pos += length;
    if (marker == 0xDA) { /* SOS: the scan's data follow */
      size_t end = entropy_end(data, size, pos, &out->fill_stuffed);
      out->entropy_bytes += end - pos;
      out->scans++;
      pos = end;
    }
  }
}

stk_status stk__jpeg_check_header(j_decompress_ptr cinfo, char *err, size_t err_size) {
  const uint64_t pixels = (uint64_t)cinfo->image_width * cinfo->image_height;
  if (cinfo->image_width == 0 || cinfo->image_height == 0) {
    stk__errorf(err, err_size, "JPEG header has an empty size (%ux%u)", cinfo->image_width, cinfo->image_height);
    return STK_EBADIMAGE;
  }
  if (pixels > STK__JPEG_MAX_PIXELS) {
    stk__errorf(err, err_size, "JPEG dimensions %ux%u exceed the limit of %llu pixels", cinfo->image_width,
                cinfo->image_height, (unsigned long long)STK__JPEG_MAX_PIXELS);
    return STK_EBADIMAGE;
  }
  if (pixels > STK__JPEG_FREE_PIXELS) {
    /* Only the entropy-coded bytes pay for pixels: a bomb padded with comments or APPn segments
     * (or bytes after EOI) is still a bomb. */
    const stk__jpeg_source *src = (const stk__jpeg_source *)cinfo->src;
    stk__jpeg_layout layout = {0, 0, 0};
    if (src && src->pub.fill_input_buffer == source_fill) stk__jpeg_layout_read(src->data, src->size, &layout);
    if (pixels / STK__JPEG_MAX_PIXELS_PER_BYTE > layout.entropy_bytes) {
      stk__errorf(err, err_size,
                  "JPEG header claims %ux%u pixels for %zu bytes of entropy-coded data (%.0f pixels per byte; the "
                  "limit is %d above %llu pixels): refused as a decompression bomb",
                  cinfo->image_width, cinfo->image_height, layout.entropy_bytes,
                  (double)pixels / (double)(layout.entropy_bytes ? layout.entropy_bytes : 1),
                  STK__JPEG_MAX_PIXELS_PER_BYTE, (unsigned long long)STK__JPEG_FREE_PIXELS);
      return STK_EBADIMAGE;
    }
  }
  switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
    case JCS_CMYK:
    case JCS_YCCK:
      return STK_OK;
    default:
      stk__errorf(err, err_size, "unsupported JPEG: color space with %d components", cinfo->num_components);
      return STK_EBADIMAGE;
  }
}

size_t stk__jpeg_coefficient_bytes(j_decompress_ptr cinfo) {
  const stk__jpeg_source *src = (const stk__jpeg_source *)cinfo->src;
  int multi_scan = cinfo->progressive_mode;
  if (!multi_scan && src && src->pub.fill_input_buffer == source_fill) {
    stk__jpeg_layout layout;
    stk__jpeg_layout_read(src->data, src->size, &layout);
    multi_scan = layout.scans > 1;
  }
  if (!multi_scan) return 0;
  uint64_t bytes = 0; /* at most 2^27 pixels x 4 components x 2 bytes: no overflow */
  for (int c = 0; c < cinfo->num_components; c++) {
    const jpeg_component_info *comp = &cinfo->comp_info[c];
    uint64_t w = comp->width_in_blocks, h = comp->height_in_blocks;
    const uint64_t hs = comp->h_samp_factor > 0 ? (uint64_t)comp->h_samp_factor : 1;
    const uint64_t vs = comp->v_samp_factor > 0 ? (uint64_t)comp->v_samp_factor : 1;
    w = (w + hs - 1) / hs * hs; /* libjpeg pads each buffer to whole sampling units */
    h = (h + vs - 1) / vs * vs;
    bytes += w * h * sizeof(JBLOCK);
  }
  return bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}
