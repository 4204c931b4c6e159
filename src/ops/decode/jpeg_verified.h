/* src/ops/decode/jpeg_verified.h: the JPEG files a CPU decoder has already read whole and found
 * good, remembered by their bytes, so that the same bytes need not be checked again.
 *
 * The bad-file rule (docs/operators-io.md, "Bad files") refuses a JPEG corrupt anywhere, whatever
 * window is decoded: jpeg.c keeps libjpeg-turbo on its checking Huffman decoder (its fast one turns
 * a bad code into a zero silently) and decodes the entropy-coded data to EOI even below the window.
 * That verdict is a function of the file's bytes only. A decoder that holds one of these sets
 * records the fingerprint of every file a checking decode accepted; when the same bytes come again
 * (the next epoch) it decodes them with libjpeg-turbo's fast Huffman path and stops after the
 * window. The pixels are the same (both Huffman decoders are exact on valid data); a file that was
 * refused is never recorded, and a file whose bytes changed has another fingerprint, so it is
 * checked again. One pattern outside the standard that libjpeg-turbo accepts is read differently
 * by its two paths -- fill bytes before a stuffed zero (0xFF 0xFF 0x00) in entropy-coded data --
 * so a file holding it is never recorded (jpeg.c, stk__jpeg_layout): it is decoded on the checking
 * path every time, to the same pixels.
 *
 * Fingerprint: XXH3-64 of the bytes (libxxhash, header only); a different file with the same
 * fingerprint is a 2^-64 accident per pair, not a guard against files crafted to collide (such a
 * file is still decoded memory-safely, only without the corrupt-data check).
 * Bounded: at most STK__JPEG_VERIFIED_MAX_SLOTS slots (8 bytes each) filled to 3/4; past that,
 * new files are simply checked every time. Thread-safe (one mutex; a lookup per JPEG decoded).
 * Hot path: stk__jpeg_fingerprint and the lookup, once per JPEG on a worker. */
#ifndef STOKER_OPS_DECODE_JPEG_VERIFIED_H
#define STOKER_OPS_DECODE_JPEG_VERIFIED_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 4,194,304 slots (32 MiB): up to 3,145,728 distinct files remembered. */
#define STK__JPEG_VERIFIED_MAX_SLOTS ((size_t)1 << 22)

typedef struct stk__jpeg_verified stk__jpeg_verified;

/* An empty set (no table until the first file is added); NULL when out of memory. Freed with
 * stk__jpeg_verified_free (NULL is fine). */
STK_INTERNAL stk__jpeg_verified *stk__jpeg_verified_new(void);
STK_INTERNAL void stk__jpeg_verified_free(stk__jpeg_verified *set);

/* The fingerprint of a file's bytes (never 0). */
STK_INTERNAL uint64_t stk__jpeg_fingerprint(const uint8_t *data, size_t size);

/* 1 when `fingerprint` was added. */
STK_INTERNAL int stk__jpeg_verified_has(stk__jpeg_verified *set, uint64_t fingerprint);

/* Remembers `fingerprint`; 0 when the set is full (or out of memory growing it): the file is then
 * checked every time. */
STK_INTERNAL int stk__jpeg_verified_add(stk__jpeg_verified *set, uint64_t fingerprint);

/* Files remembered. */
STK_INTERNAL size_t stk__jpeg_verified_count(stk__jpeg_verified *set);

#ifdef __cplusplus
}
#endif
#endif
