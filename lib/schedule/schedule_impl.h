/* Internal: the schedule representation.
 *
 * A schedule is a list of stages; each stage is a loop nest (outermost first)
 * over its microkernel's tile space. Single-operator plans have one stage.
 * Fused operator chains (roadmap: PolyMage-style grouping, overlapped tiles)
 * will add stages that share the group's outer loops; the fields below are
 * what every stage has either way. */
#ifndef PS_SCHEDULE_IMPL_H
#define PS_SCHEDULE_IMPL_H

#include <stdint.h>
#include "polysci/schedule.h"

typedef struct ps_loop {
    ps_dim dim;
    int64_t tile;   /* microkernel steps of `dim` covered by one iteration */
    int parallel;   /* member of the outermost parallel band */
} ps_loop;

/* Microkernel shape of a stage. */
typedef struct ps_kernel_shape {
    int m, n, k;    /* BRGEMM m x n x k (conv: K-block, ow-block, C-block) */
    int batch;      /* reduction blocks per call (conv: times R*S taps) */
} ps_kernel_shape;

typedef struct ps_stage {
    ps_kernel_shape kernel;
    int n_loops;
    ps_loop loops[PS_SCHEDULE_MAX_LOOPS];
} ps_stage;

#define PS_SCHEDULE_MAX_STAGES 1 /* raised when fusion lands */

struct ps_schedule {
    int n_stages;
    ps_stage stages[PS_SCHEDULE_MAX_STAGES];
};

/* Extents of the tile space of a (valid) descriptor under a kernel shape:
 * ext[d] = number of microkernel steps along dimension d. */
void ps_tile_space_extents(const ps_desc *desc, const ps_kernel_shape *ks, int64_t ext[PS_DIM_COUNT]);

/* Iterations of loop l given what the enclosing loops left of its dimension
 * (left[d] starts at the extent); updates left[l->dim] for the loops inside.
 * Walking a stage's loops in order gives each loop's trip count. */
static inline int64_t ps_loop_trips(const ps_loop *l, int64_t left[PS_DIM_COUNT])
{
    const int64_t trips = (left[l->dim] + l->tile - 1) / l->tile;
    if (l->tile < left[l->dim]) left[l->dim] = l->tile;
    return trips;
}

/* The expert microkernel for a descriptor (PolyScientist's hand-chosen
 * BRGEMM shape): the widest register-friendly output-channel block (<= 64,
 * a multiple of 16 dividing the extent when one exists), a column block
 * (conv: the widest dividing the row, <= 28, or <= 56 for few-channel convs,
 * <= 25 per phase call when their taps merge;
 * gemm: 48) and a 64-wide reduction
 * block; batch = every reduction block (capped). Default schedule and
 * variant space share it, so the planner ranks outer loops only. */
ps_kernel_shape ps_schedule_expert_kernel(const ps_desc *desc);

/* The machine facts the expert's rules read. Plain numbers rather than a
 * ps_machine, so that this component does not depend on the machine model
 * and tests can state a machine in one initializer; the planner fills them
 * with ps_planner_expert_facts. */
typedef struct ps_expert_facts {
    size_t l1_bytes;    /* L1 data per core; 0 (unknown): no merged-tap rule */
    size_t l2_bytes;    /* L2 per core; 0 (unknown): no conv rule */
    size_t llc_bytes;   /* last-level cache (ps_machine_cache_bytes) */
    size_t panel_bytes; /* ps_machine_panel_bytes */
    int llc_slow;       /* ps_machine_llc_slow: the Xeon-only rules below */
} ps_expert_facts;

/* The expert's schedule on nthreads threads of the machine *facts, what the
 * default options run when they do not search: ps_schedule_default's kernel
 * (its batch halved for the long panel tiles below), and as loops: for
 * GEMMs band tiles of 8 x 2 kernel blocks with the reduction loop inside
 * them (L2 blocking), or,
 * where panels pay (ps_gemm_panels_pay), tiles spanning the smaller side
 * whole (up to ~1024 elements; 1025-3072 whole too, at half the kernel's
 * batch; a longer one in equal tiles of at most 1024) and ~528-768 elements
 * of the other (up to 1536 at half the batch), whose panels each thread
 * packs itself, or, where the executor reads A in place
 * (ps_gemm_a_in_place), tiles of whole rows of the normalized problem and
 * one tile of its columns per thread, where those tiles split over the
 * threads as evenly as single blocks do; for
 * spatial convs whose weights per kernel call are 256 KiB or more 32-channel
 * kernel blocks instead of 64 (where llc_slow, kernels of fewer than 64
 * rows, these and the ones below and those of K < 64, re-choose their width
 * for their register blocks: 14 columns for 17-32 rows, 9 for 33-48), and,
 * where llc_slow (ps_machine_llc_slow), for 1x1 convs whose every call reads its weights from beyond L2 (one column
 * block per image, filter bank too large for half of L2) and for convs
 * whose 64-row kernel width leaves a short register block (not a multiple
 * of 6 columns; 1x1 only with >= 256 output channels per input block and
 * <= 64 KiB of input per call; other 1x1 convs with such a width and a row
 * of at least 120 columns take 30-column calls); where llc_slow, convs whose
 * taps merge (few-channel first layers) in the fewest output-channel blocks
 * of 16-row multiples up to 64 that divide K, 32 rows where a 64-row call's
 * weights and input rows overflow L1 and a 32-row call's fit, and with
 * several blocks every block over each input row in turn (`n* oh* ow* c
 * k`); where llc_slow, 1x1 convs with filter banks too large for half of L2 and several column
 * blocks per image in output-channel tiles of at most a quarter of L2 of
 * weights, input-stationary within each tile; where llc_slow, spatial convs
 * with such filter banks over images larger than half of L2 in row tiles with
 * the output-channel blocks inside (`n* oh:T* k* ow* oh* c`) where the tiles
 * stream fewer bytes; for convs whose weights fit in half
 * of L2 the input-stationary order (every output-channel block over a tile
 * of input while it is in cache) where its tiles balance over the threads,
 * or, where they do not and the weights fit in a quarter of L2, with the
 * output-channel blocks shared between the threads too; else
 * ps_schedule_default's order.
 * facts->l2_bytes = 0 (unknown): no conv rule. On success *out is the caller's. */
ps_status ps_schedule_expert(const ps_desc *desc, int nthreads, const ps_expert_facts *facts, ps_schedule **out);

/* Lower-case loop name of a dimension for an op kind ("oh", "m", ...). */
const char *ps_dim_name(ps_op_kind kind, ps_dim dim);

#endif
