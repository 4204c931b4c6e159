/* src/ops/decode/jpeg_guard.h: what makes libjpeg-turbo report every bad JPEG instead of decoding
 * it "successfully": the error manager (fatal errors and corrupt-data warnings both end the
 * decode through a longjmp that jpeg.c catches), the wording of its messages (one prefix,
 * "unsupported" apart from "corrupt"), a data source that keeps libjpeg-turbo on its checking
 * Huffman decoder, and the bound on decode work per file byte. Used by jpeg.c only; the source
 * and the error manager run per sample (hot path), the rest on failure. */
#ifndef STOKER_OPS_CPU_JPEG_GUARD_H
#define STOKER_OPS_CPU_JPEG_GUARD_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest image decoded at all: 2^27 pixels (e.g. 11585 x 11585). */
#define STK__JPEG_MAX_PIXELS ((uint64_t)1 << 27)
/* Decode work per byte of file: an image of more than STK__JPEG_FREE_PIXELS pixels must not
 * claim more than STK__JPEG_MAX_PIXELS_PER_BYTE pixels per byte of file. Huffman-coded JPEGs
 * cannot exceed 512 (every 8x8 block of the first component costs at least one bit), real
 * photographs are at 5-50; only an arithmetic-coded near-blank image or a bomb (a header that
 * announces a huge image over a few KB of data) goes beyond. docs/operators-io.md. */
#define STK__JPEG_MAX_PIXELS_PER_BYTE 1000
#define STK__JPEG_FREE_PIXELS         ((uint64_t)1 << 22)

/* libjpeg error manager whose error_exit and (non-benign) warnings longjmp to `jump`. */
typedef struct stk__jpeg_error_ctx {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  int out_of_memory;
  char message[JMSG_LENGTH_MAX];
} stk__jpeg_error_ctx;

STK_INTERNAL void stk__jpeg_error_init(stk__jpeg_error_ctx *ctx);

/* The status and message ("corrupt JPEG data: bad Huffman code", "unsupported JPEG: 12-bit
 * samples", "out of memory ...") for the failure recorded in ctx. */
STK_INTERNAL stk_status stk__jpeg_error_report(const stk__jpeg_error_ctx *ctx, char *err, size_t err_size);

/* A memory source like jpeg_mem_src, but handing libjpeg-turbo the data in pieces smaller than
 * its fast Huffman path needs: that path turns a bad Huffman code into a zero silently, the
 * other one warns (JWRN_HUFF_BAD_CODE), which the error manager turns into an error. The end of
 * the data is reported like jpeg_mem_src does (JWRN_JPEG_EOF, then a fake EOI). */
typedef struct stk__jpeg_source {
  struct jpeg_source_mgr pub;
  const uint8_t *data;
  size_t size, offset;
} stk__jpeg_source;

STK_INTERNAL void stk__jpeg_source_attach(j_decompress_ptr cinfo, stk__jpeg_source *src, const uint8_t *data,
                                          size_t size);

/* What the marker structure says about a JPEG's data, read without decoding: the bytes of
 * entropy-coded data in all its scans (the file less its headers, APPn/COM segments and anything
 * after EOI), the number of scans, and how many times that data holds fill bytes before a stuffed
 * zero (0xFF 0xFF.. 0x00: outside the standard; libjpeg-turbo's checking Huffman path reads it as
 * one 0xFF data byte, its fast path as a marker, jpeg_verified.h). A walk that meets something that
 * is not a marker stops there (libjpeg refuses such a file on its own). */
typedef struct stk__jpeg_layout {
  size_t entropy_bytes;
  int scans;
  size_t fill_stuffed;
} stk__jpeg_layout;
STK_INTERNAL void stk__jpeg_layout_read(const uint8_t *data, size_t size, stk__jpeg_layout *out);

/* After jpeg_read_header (with the data source above): STK_EBADIMAGE with a message for an image
 * that is empty, larger than STK__JPEG_MAX_PIXELS, absurdly large for its entropy-coded data (see
 * above: comments, APPn segments and trailing bytes do not count) or in an unsupported colour
 * space. */
STK_INTERNAL stk_status stk__jpeg_check_header(j_decompress_ptr cinfo, char *err, size_t err_size);

/* After jpeg_read_header: bytes of the whole-image coefficient buffers libjpeg allocates at
 * jpeg_start_decompress for a progressive or multi-scan file (2 bytes per DCT coefficient of every
 * component, 128 per block), 0 for a single-scan file (decoded row by row). */
STK_INTERNAL size_t stk__jpeg_coefficient_bytes(j_decompress_ptr cinfo);

#ifdef __cplusplus
}
#endif
#endif
