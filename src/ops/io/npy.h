/* src/ops/io/npy.h: the .npy header parser (NumPy format versions 1.0, 2.0 and 3.0) behind
 * readers.numpy; pure (no I/O), so the fuzz target drives it directly. Not a hot path: once per
 * file, a few hundred bytes.
 *
 * Layout of a .npy file: "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32 LE
 * for 2.x/3.x), then a Python dict literal: {'descr': '<f4', 'fortran_order': False,
 * 'shape': (3, 4), } padded with spaces and '\n'; the data follows. Accepted descr: byte order
 * '<', '|' or '=' (little-endian data, as this library runs on little-endian hosts) and types
 * b1 u1 u2 u4 u8 i1 i2 i4 i8 f2 f4 f8. Big-endian ('>'), structured and object dtypes are refused
 * with a message saying so. */
#ifndef STOKER_OPS_CPU_NPY_H
#define STOKER_OPS_CPU_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"

typedef struct stk__npy_header {
  stk_dtype dtype;
  int ndim; /* 0 for a scalar; at most STK_MAX_DIMS */
  int64_t shape[STK_MAX_DIMS];
  int fortran_order;
  size_t data_offset;  /* where the data starts in the file */
  uint64_t data_bytes; /* product(shape) * element size */
} stk__npy_header;

/* Bytes of the file's start that stk__npy_parse needs: at least 10; the full header length is
 * known from those (stk__npy_header_length). */
/* The longest header accepted (preamble + dict): numpy pads headers to 64 bytes and format 2.0/3.0
 * headers may pass 64 KiB; a length over this is refused before anything is allocated for it. */
#define STK__NPY_MAX_HEADER ((size_t)1 << 20)
#define STK__NPY_PREAMBLE 12
/* The total header length (preamble + dict) from the first bytes, or 0 when they are not .npy. */
STK_INTERNAL size_t stk__npy_header_length(const uint8_t *bytes, size_t size);
/* Parses a header from `bytes` (the file's first `size` bytes; must hold the whole header): the dict
 * must hold exactly the keys descr, fortran_order and shape (as numpy's own reader requires), the
 * shape's product times the element size plus the header must fit in 2^63 bytes. STK_EPARSE with
 * the reason in err (the caller adds the file name). */
STK_INTERNAL stk_status stk__npy_parse(const uint8_t *bytes, size_t size, stk__npy_header *out, char *err,
                                       size_t err_size);

#endif
