/* polysci — schedules: the outer loops around the microkernel, as data.
 *
 * The microkernel is a LIBXSMM batch-reduce GEMM of shape m x n x k with a
 * batch of `batch` reduction blocks (times the R*S filter taps for a conv):
 *   conv: m = output-channel block, n = output-column (ow) block,
 *         k = input-channel block; one call computes one output row segment.
 *   gemm: m = rows of C, n = columns of C, k = reduction block.
 * A schedule is an ordered list of loops over the microkernel's tile space,
 * outermost first. Each loop names a dimension, a tile (how many microkernel
 * steps of that dimension one iteration covers) and whether it runs in
 * parallel. A dimension may appear several times (tile loop, then point loop);
 * its tiles must strictly decrease and end with 1. A dimension whose extent
 * is 1 may be left out. Parallel loops must form the outermost band and may
 * not be the reduction dimension.
 *
 * Text form (ps_schedule_parse / ps_schedule_format):
 *     "MxNxK/B : loop loop ..."      loop = name[:tile][*]   (* = parallel)
 *   conv loop names: n k oh ow c     (k = output channels, c = input channels)
 *   gemm loop names: m n k
 *   e.g. conv "64x28x64/4 : n* k:4* oh k ow c", gemm "64x24x64/8 : m:4* n m k"
 * Reserved for fused operator chains: a schedule holds stages; this version
 * creates and runs single-stage schedules. */
#ifndef POLYSCI_SCHEDULE_H
#define POLYSCI_SCHEDULE_H

#include "polysci/export.h"

#include <stddef.h>
#include <stdint.h>
#include "polysci/status.h"
#include "polysci/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_schedule ps_schedule;

/* Dimensions of the tile space. GEMM uses K (its M), OW (its N), C (its K). */
typedef enum ps_dim {
    PS_DIM_N = 0,  /* images */
    PS_DIM_K = 1,  /* output channels (gemm: rows of C) in blocks of m */
    PS_DIM_OH = 2, /* output rows */
    PS_DIM_OW = 3, /* output columns (gemm: columns of C) in blocks of n */
    PS_DIM_C = 4,  /* reduction (conv input channels, gemm K) in chunks of batch*k */
    PS_DIM_COUNT = 5
} ps_dim;

#define PS_SCHEDULE_MAX_LOOPS 16

/* __give *out: an empty schedule with microkernel m x n x k and batch. */
PS_API ps_status ps_schedule_create(int m, int n, int k, int batch, ps_schedule **out);
/* Appends one loop (innermost so far). */
PS_API ps_status ps_schedule_add_loop(ps_schedule *sched, ps_dim dim, int64_t tile, int parallel);
/* __give *out, parsed from the text form for an operation kind. */
PS_API ps_status ps_schedule_parse(ps_op_kind kind, const char *text, ps_schedule **out);
/* Text form into buf (always NUL-terminated when len > 0); *needed (optional)
 * gets the length without NUL. PS_ERR_BUFFER_TOO_SMALL if it did not fit. */
PS_API ps_status ps_schedule_format(const ps_schedule *sched, ps_op_kind kind,
                             char *buf, size_t len, size_t *needed);
/* __give a copy, or NULL when out of memory. */
PS_API ps_schedule *ps_schedule_copy(const ps_schedule *sched);
/* __take. NULL is a no-op. */
PS_API void ps_schedule_destroy(ps_schedule *sched);

/* Checks that the schedule can run the descriptor (every point of the tile
 * space visited exactly once, legal parallel band, kernel shape sane). */
PS_API ps_status ps_schedule_check(const ps_schedule *sched, const ps_desc *desc);

/* __give *out: the fixed-loop-order default schedule for a descriptor (the
 * paper's "Microkernel" baseline): heuristic blocking, order n k oh ow c with
 * the n,k,oh,ow band parallel — n k ow oh c for convolutions of N >= 2 images with few input
 * channels (C <= 16), filters wider than 1 (undilated) and R*K >= 128*stride_h, whose
 * executor merges a filter row's taps into one reduction — (gemm: m n k with
 * m,n parallel). */
PS_API ps_status ps_schedule_default(const ps_desc *desc, ps_schedule **out);

#ifdef __cplusplus
}
#endif
#endif
