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
#include "descriptors/shape.h"
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

/* Largest microkernel extent LIBXSMM is asked to JIT in one dimension, and
 * the most reduction blocks one call may batch. */
#define PS_KERNEL_DIM_MAX 1024
#define PS_KERNEL_BATCH_MAX (1 << 20)

/* Extents of the tile space of problem p under a kernel shape: ext[d] =
 * number of microkernel steps along dimension d. */
void ps_tile_space_extents(const ps_problem *p, const ps_kernel_shape *ks, int64_t ext[PS_DIM_COUNT]);

/* Iterations of loop l given what the enclosing loops left of its dimension
 * (left[d] starts at the extent); updates left[l->dim] for the loops inside.
 * Walking a stage's loops in order gives each loop's trip count. */
static inline int64_t ps_loop_trips(const ps_loop *l, int64_t left[PS_DIM_COUNT])
{
    const int64_t trips = (left[l->dim] + l->tile - 1) / l->tile;
    if (l->tile < left[l->dim]) left[l->dim] = l->tile;
    return trips;
}

/* The parallel band of a stage: loops[0 .. np) collapsed row-major, trips[i]
 * iterations of loop i (ps_loop_trips), over a tile space of extents ext.
 * The box of tile indices [lo, hi) of band iteration `it`; 0 where the
 * iteration is empty (a partial parent tile). The executor walks its band
 * with it, and ps_rank_balance replays that walk. */
int ps_band_box(const ps_loop *loops, int np, const int64_t *trips, const int64_t ext[PS_DIM_COUNT], int64_t it,
                int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT]);

/* The iterations [*begin, *end) of part p of `team` contiguous, equal parts
 * of a band of `total` iterations (one part per thread). */
static inline void ps_band_part(int64_t total, int64_t team, int64_t p, int64_t *begin, int64_t *end)
{
    *begin = total * p / team;
    *end = total * (p + 1) / team;
}

/* ps_schedule_check for a problem formed by ps_problem_of (sched not NULL):
 * whether the schedule can run it. */
ps_status ps_schedule_check_problem(const ps_schedule *sched, const ps_problem *p);

/* Lower-case loop name of a dimension for an op kind ("oh", "m", ...). */
const char *ps_dim_name(ps_op_kind kind, ps_dim dim);

#endif
