/* src/ops/decode/jpeg_route.h: where the mixed JPEG decoder decodes each image, in plain C (no
 * CUDA), shared by the decoder's CPU pre-stage (on the workers) and its GPU stage, and tested on
 * its own (src/ops/decode/test_jpeg_route.c, also in the no-CUDA build).
 *
 * One image is planned once: its header is read (stk__jpeg_peek), its window chosen (the CPU
 * decoder's stk__decoder_crop_window) and its route decided (stk__jpeg_route_sample). In a
 * pipeline the CPU pre-stage does that and leaves the plan in the sample's stage tensor
 * (stk__jpeg_plan_store); the GPU stage reads it back (stk__jpeg_plan_load) instead of parsing the
 * header again. Used on its own (no pre-stage) the GPU stage plans each image itself.
 *
 * Routing is a pure function of the header, the position in the batch, cuda_decoder_load and the
 * batch's hw_decoder_load (the user's, or the automatic router's decision for that batch number:
 * decoder_mixed_router.cu), never of the timing of this image, so one seed gives the same bytes
 * wherever the load is the same.
 * Hot path: per sample (cheap; the header read is one libjpeg jpeg_read_header). */
#ifndef STOKER_OPS_COMMON_JPEG_ROUTE_H
#define STOKER_OPS_COMMON_JPEG_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "ops/decode/decoders.h"
#include "ops/common/image_ops.h"
#include "ops/decode/jpeg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The decode paths of the mixed decoder. The order is the stats' order (decoded_hw, _cuda,
 * _hybrid, _cpu). */
typedef enum stk__jpeg_route {
  STK__JPEG_ROUTE_HW = 0, /* the GPU's hardware JPEG engines, one batched submission */
  STK__JPEG_ROUTE_CUDA,   /* nvJPEG's CUDA decoder (decoupled GPU_HYBRID) on a worker lane */
  STK__JPEG_ROUTE_HYBRID, /* nvJPEG's hybrid decoder (decoupled HYBRID, Huffman on the CPU) on a lane */
  STK__JPEG_ROUTE_CPU,    /* libjpeg-turbo on a worker (in the pre-stage, or a lane's fallback) */
  STK__JPEG_ROUTE_COUNT,
  STK__JPEG_ROUTE_FAILED = STK__JPEG_ROUTE_COUNT /* a bad file skipped under skip_bad_files */
} stk__jpeg_route;

/* What the decoder has to route to, fixed at init. */
typedef struct stk__jpeg_router {
  int nvjpeg;       /* nvJPEG is loaded (its decoupled CUDA and hybrid decoders are up) */
  int hw_engines;   /* the hardware engines are up */
  double hw_load;   /* hw_decoder_load: share of the engines' candidates they take, 0..1 (automatic:
                       the caller sets each batch's) */
  int channels;     /* output channels (1 for GRAY, else 3): the size of a decoded image */
  double cuda_load; /* cuda_decoder_load: with a pre-stage, share of the non-engine positions whose
                       baseline images go to the CUDA decoder instead of the CPU, 0..1 */
} stk__jpeg_router;

/* hw_decoder_load as the router uses it: NaN and negatives -> 0, above 1 -> 1. */
STK_INTERNAL double stk__jpeg_hw_load_clamp(double load);

/* 1 when `position` of a batch belongs to the engines' share `load`: floor((p+1)L) > floor(pL).
 * Positions 0..n-1 then hold exactly floor(nL) of them, spread evenly: L = 0.5 takes 1, 3, 5, ...;
 * L = 0.75 skips 0, 4, 8, ...; L = 0.8 skips 0, 5, 10, ...; L = 1 takes all, L = 0 none. */
STK_INTERNAL int stk__jpeg_hw_share(int position, double load);

/* 1 when `position` belongs to the CUDA decoder's share `cuda_load` of the positions the engines'
 * share `hw_load` leaves out (hw_engines 0: of all positions). Such a position p has rank
 * r = p - floor(p * hw_load) among them (floor(p * hw_load) engine positions lie before it), and r
 * is taken when stk__jpeg_hw_share(r, cuda_load): of the n - floor(n * hw_load) non-engine
 * positions of a batch of n, exactly floor((n - floor(n * hw_load)) * cuda_load), spread evenly.
 * An engine position whose image the engines cannot take gets the rank of the next non-engine
 * position. */
STK_INTERNAL int stk__jpeg_cuda_share(int position, int hw_engines, double hw_load, double cuda_load);

/* 1 when the engines can decode an image with this header: baseline (not progressive), not
 * CMYK/YCCK, 1 or 3 components, subsampling 4:4:4, 4:2:2, 4:2:0, 4:4:0 or gray. */
STK_INTERNAL int stk__jpeg_hw_can_take(const stk__jpeg_info *info);

/* The route of one image at `position` of its batch. Without nvJPEG: CPU. CMYK, EXIF-rotated and
 * odd component counts: CPU. The engines' share of what they can take: HW. The rest: CPU when a
 * pre-stage exists (`staged`, decoded by libjpeg-turbo while earlier batches are on the GPU), except
 * the baseline files at the CUDA decoder's positions (stk__jpeg_cuda_share, cuda_load): CUDA; with
 * no pre-stage, the hybrid decoder for progressive files and the CUDA decoder for the others. */
STK_INTERNAL stk__jpeg_route stk__jpeg_route_sample(const stk__jpeg_router *router, const stk__jpeg_info *info,
                                                    int position, int staged);

/* The truncation half of the CPU decoder's bad-file rule, without decoding (docs/operators-io.md,
 * "Bad files"): walks the marker segments from SOI and the entropy-coded data of every scan
 * (stuffed 0xFF00 bytes, RST markers and 0xFF fill bytes skipped) and needs to reach EOI before the
 * data end. STK_EBADIMAGE with a "truncated JPEG: ..." message (naming the byte where the data
 * ended and what was being read) otherwise. Every file it refuses the CPU decoder refuses too (it
 * needs EOI: jpeg_finish_decompress), so the mixed decoder, which calls it in stk__jpeg_plan_make
 * before routing, refuses the truncated files nvJPEG would decode silently. Bytes between the last
 * scan and EOI, and anything after EOI, are accepted, as on the CPU. Cost: one memchr-speed pass. */
STK_INTERNAL stk_status stk__jpeg_check_complete(const uint8_t *data, size_t size, char *err, size_t err_size);

/* One image's plan: parsed header, window, route. */
typedef struct stk__jpeg_plan {
  stk__jpeg_info info; /* the header as stk__jpeg_peek read it */
  stk__window crop;    /* what to produce, in oriented coordinates (the whole oriented image for
                          decoders.image; out width x height = crop.w x crop.h) */
  int32_t route;       /* stk__jpeg_route */
  int64_t sample_id;   /* the data-set sample it was made for (checked by stk__jpeg_plan_load) */
} stk__jpeg_plan;

/* Plans one image: reads the header (STK_EBADIMAGE with a message for anything that is not a
 * decodable JPEG), checks that the data reach EOI (stk__jpeg_check_complete), chooses the window (random crop when params->random_crop, keyed by the CPU
 * decoder's (seed, op_id, epoch, sample_id)) and the route. */
STK_INTERNAL stk_status stk__jpeg_plan_make(const stk__jpeg_router *router, const stk__decoder_params *params,
                                            int op_id, uint64_t epoch, int64_t sample_id, int position, int staged,
                                            const uint8_t *data, size_t size, stk__jpeg_plan *plan, char *err,
                                            size_t err_size);

/* Bytes of the whole decoded image (width x height x channels): the room a decoded slot needs
 * whatever window is produced, so slot sizes follow the data set, not the random windows. */
STK_INTERNAL size_t stk__jpeg_plan_full_bytes(const stk__jpeg_router *router, const stk__jpeg_plan *plan);

/* Hands a plan from the CPU pre-stage to the GPU stage in the sample's stage tensor (its
 * stage_record, beside the decoded pixels when there are any). */
STK_INTERNAL void stk__jpeg_plan_store(stk__tensor *stage, const stk__jpeg_plan *plan);
/* Reads it back. STK_EINTERNAL with a message when the stage holds no plan for sample_id (the
 * pre-stage did not run for this sample). */
STK_INTERNAL stk_status stk__jpeg_plan_load(const stk__tensor *stage, int64_t sample_id, stk__jpeg_plan *plan,
                                            char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
