/* polysci — time-iterated stencils: one stencil update over a 1-D, 2-D or
 * 3-D grid applied T times, planned with time tiling (overlapped, split and
 * hybrid tiles derived with isl from the dependences) and executed with the
 * stage-graph engine's vectorized row kernels.
 *
 *     ps_iter *it;
 *     int64_t n[2] = {4000, 4000};
 *     ps_iter_create(2, n, PS_ITER_FIXED, 64, &it);
 *     int u;  ps_iter_add_array(it, "u", &u);
 *     ps_iter_tap taps[5] = {{u, {-1, 0}, 0.125f}, {u, {0, -1}, 0.125f}, {u, {0, 0}, 0.5f},
 *                            {u, {0, 1}, 0.125f}, {u, {1, 0}, 0.125f}};
 *     ps_iter_set_update(it, u, 5, taps, 0.0f);
 *     ps_iter_plan *p;  ps_iter_plan_create(ctx, it, NULL, &p);
 *     float *arrays[1] = {grid};                     (n[0] x n[1] floats, row-major)
 *     ps_iter_execute(p, arrays, NULL);               grid now holds step T
 *
 * (ps_iter_create_example builds that heat-2d, and heat-1d, heat-3d and the
 * 9-point Jacobi.)
 *
 * Grid. ndim extents n[0..ndim-1], outermost first: element (i0, i1, i2) of
 * an array is at ((i0 * n[1]) + i1) * n[2] + i2, so the last dimension is
 * contiguous (x), as in a C array float a[n0][n1][n2]. Every array of a
 * descriptor has the grid's shape.
 *
 * Update. Every array has one update, applied to all arrays at once (Jacobi
 * style: step t reads only step t - 1):
 *     a'(i) = constant_a + sum over taps k of weight_k * src_k(i + offset_k)
 * evaluated in the order the taps are given, each term a fused
 * multiply-add where the instruction set has one. Several arrays may be
 * coupled: any update may read any array. The radius along dimension d is
 * the largest |offset_k[d]| over all taps of all updates.
 *
 * Boundaries. PS_ITER_FIXED (Dirichlet): the cells within the radius of a
 * face (i[d] < r_d or i[d] >= n[d] - r_d along some d) keep their values
 * for all T steps; only the interior is updated, and an interior point never
 * reads outside the grid. PS_ITER_PERIODIC: every cell is updated and reads
 * wrap around (index modulo n[d]).
 *
 * Storage. execute takes the arrays in and returns them holding step T; the
 * plan needs one more buffer per array (double buffering: step t is read
 * from one and written into the other) plus per-thread scratch for tiles
 * that keep their intermediate steps in cache, all in the workspace.
 *
 * Results do not depend on the tiling: every tiling evaluates every point
 * of every step with the same operations in the same order, so all are
 * bitwise equal to the step-by-step run.
 *
 * Ownership follows isl: __give results belong to the caller, __take
 * arguments are consumed. Every builder call validates its arguments
 * completely; on error it returns the status with a message
 * (ps_last_error_message) and the descriptor is unchanged. A descriptor may
 * be read (planned) from several threads while no thread modifies it; a
 * plan is immutable and may be executed from several threads at once with
 * distinct arrays and workspaces. */
#ifndef POLYSCI_ITERATED_H
#define POLYSCI_ITERATED_H

#include "polysci/export.h"

#include <stddef.h>
#include <stdint.h>
#include "polysci/status.h"
#include "polysci/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_iter ps_iter;
typedef struct ps_iter_plan ps_iter_plan;

#define PS_ITER_MAX_DIMS 3
#define PS_ITER_MAX_ARRAYS 8
#define PS_ITER_MAX_TAPS 1024    /* per update */
#define PS_ITER_MAX_OFFSET 16    /* |offset| per dimension */
#define PS_ITER_NAME_MAX 63

typedef enum ps_iter_boundary {
    PS_ITER_FIXED = 0,    /* Dirichlet: cells within the radius of a face keep their values */
    PS_ITER_PERIODIC = 1  /* every cell updated, reads wrap around */
} ps_iter_boundary;

/* One term of an update: weight * array(i + offset). offset[d] for
 * d >= ndim must be 0. */
typedef struct ps_iter_tap {
    int array;
    int offset[PS_ITER_MAX_DIMS];
    float weight;
} ps_iter_tap;

/* --- building --- */

/* __give *it: a grid of ndim (1..3) extents n[0..ndim-1] (outermost first),
 * `steps` >= 0 applications of the update (0 leaves the arrays as they
 * are), no arrays yet. */
PS_API ps_status ps_iter_create(int ndim, const int64_t *n, ps_iter_boundary boundary, int64_t steps, ps_iter **it);
/* __take. NULL is a no-op. */
PS_API void ps_iter_destroy(ps_iter *it);

/* A new array (numbered from 0 in the order of these calls). name may be
 * NULL ("a<number>"); at most PS_ITER_NAME_MAX bytes. At most
 * PS_ITER_MAX_ARRAYS. */
PS_API ps_status ps_iter_add_array(ps_iter *it, const char *name, int *array);

/* The update of `array`: n_taps (1..PS_ITER_MAX_TAPS) taps reading arrays
 * that exist already, and a constant added to every new value. The taps are
 * copied. Each array gets exactly one update. */
PS_API ps_status ps_iter_set_update(ps_iter *it, int array, int n_taps, const ps_iter_tap *taps, float constant);

/* The benchmark stencils, with the coefficients of PolyBench / Pluto and of
 * Halide's versions in bench/stencil (f32 constants, every update a convex
 * combination of its taps), one array "u":
 *   HEAT1D    u' = 0.25 u[x-1] + 0.5 u + 0.25 u[x+1]                    (3 taps)
 *   HEAT2D    u' = 0.125 (u[y-1] + u[x-1]) + 0.5 u + 0.125 (u[x+1] + u[y+1])   (5 taps)
 *   HEAT3D    u' = 0.125 (six face neighbours) + 0.25 u                 (7 taps)
 *   JACOBI2D  u' = f32(1/9) * each of the 3 x 3 neighbourhood, row by row  (9 taps)
 * (Halide writes them as 0.25 (u[x+1] - 2u + u[x-1]) + u, the same
 * operator in real arithmetic.) n holds 1, 2, 3 and 2 extents. */
typedef enum ps_iter_example {
    PS_ITER_HEAT1D = 0,
    PS_ITER_HEAT2D = 1,
    PS_ITER_HEAT3D = 2,
    PS_ITER_JACOBI2D = 3
} ps_iter_example;

/* __give *it: the example stencil over n, `steps` times. */
PS_API ps_status ps_iter_create_example(ps_iter_example which, const int64_t *n, ps_iter_boundary boundary,
                                        int64_t steps, ps_iter **it);

/* --- introspection --- */

typedef struct ps_iter_info {
    size_t struct_size;                 /* the caller sets it */
    int ndim;
    int64_t n[PS_ITER_MAX_DIMS];        /* 1 past ndim */
    ps_iter_boundary boundary;
    int64_t steps;
    int n_arrays;
    int radius[PS_ITER_MAX_DIMS];       /* over all updates set so far */
    int64_t updated_points;             /* per array and step: the interior (fixed) or the grid (periodic) */
    int64_t taps;                       /* over all updates: multiply-adds per grid point and step */
} ps_iter_info;

PS_API ps_status ps_iter_get_info(const ps_iter *it, ps_iter_info *info);
/* Array `array`'s name (owned by the descriptor) and update: *n_taps, and
 * when taps is not NULL up to max_taps taps copied there; *constant. An
 * array without an update reports 0 taps. */
PS_API ps_status ps_iter_get_update(const ps_iter *it, int array, const char **name, int *n_taps,
                                    ps_iter_tap *taps, int max_taps, float *constant);

/* --- planning --- */

typedef enum ps_iter_tiling {
    PS_ITER_TILING_AUTO = 0,    /* the cost model's choice among the four below */
    PS_ITER_TILING_STEP = 1,    /* step by step: each step one parallel sweep over the grid */
    PS_ITER_TILING_OVERLAP = 2, /* overlapped time tiles: every tile computes its trapezoid from the
                                   band's input (redundant halo work), all tiles start at once */
    PS_ITER_TILING_SPLIT = 3,   /* split tiles: upright trapezoids and the inverted ones between
                                   them, no redundant work (order: split_order) */
    PS_ITER_TILING_HYBRID = 4   /* overlapped along dimension 0, a chain of time-skewed tiles run
                                   in order along dimension 1 (along dimension 0 inside each tile
                                   for 1-D grids) */
} ps_iter_tiling;

/* The order split tiles run in. PHASES (seed 003): every upright component
 * in parallel, a barrier, then the inverted ones between them (a phase per
 * number of inverted dimensions). PIPELINED: each thread takes a block of
 * consecutive tiles along the first tiled dimension and runs, after each
 * tile, the inverted components between it and the one before, while both
 * are still in its cache; only the inverted components on the blocks'
 * edges wait for a barrier. Each component's operations are the same in
 * both, so are the results. */
typedef enum ps_iter_split_order {
    PS_ITER_SPLIT_AUTO = 0,      /* PIPELINED where every thread gets two tiles or more, else PHASES */
    PS_ITER_SPLIT_PHASES = 1,
    PS_ITER_SPLIT_PIPELINED = 2  /* falls back to PHASES with fewer tiles than 2 per thread */
} ps_iter_split_order;

typedef struct ps_iter_options {
    size_t struct_size;     /* sizeof(ps_iter_options); set by init */
    int num_threads;        /* 0: the context's */
    ps_iter_tiling tiling;
    /* Time steps per band (tile height in time); 0: the model's. STEP
     * needs 0 or 1. */
    int64_t band;
    /* Space tile per dimension (OVERLAP: the cells a tile owns at the end
     * of a band; SPLIT: an upright tile's base; HYBRID: tile[0] only); a
     * size >= the dimension's extent leaves it untiled; 0: the model's.
     * Entries past ndim are ignored. */
    int64_t tile[PS_ITER_MAX_DIMS];
    /* HYBRID: width of a skewed tile of the chain; 0: the model's. */
    int64_t skew_width;
    /* SPLIT: the order its components run in. */
    ps_iter_split_order split_order;
} ps_iter_options;

PS_API void ps_iter_options_init(ps_iter_options *opts);

/* __give *plan: dependence analysis, tiling choice and sizes, layout. The
 * plan copies what it needs. opts may be NULL. On error *plan is NULL. */
PS_API ps_status ps_iter_plan_create(ps_context *ctx, const ps_iter *it, const ps_iter_options *opts,
                                     ps_iter_plan **plan);
/* __take. NULL is a no-op. */
PS_API void ps_iter_plan_destroy(ps_iter_plan *plan);

/* Bytes of the workspace: the second buffer of every array and the
 * threads' scratch. Pass a buffer this large (64-byte aligned) to execute,
 * or NULL and execute allocates it per call. */
PS_API ps_status ps_iter_plan_workspace_size(const ps_iter_plan *plan, size_t *bytes);

/* arrays[a]: array a (n[0] x ... floats), read as step 0 and overwritten
 * with step T. Arrays must not overlap each other or the workspace.
 * Checks the arguments first; on error nothing is written. */
PS_API ps_status ps_iter_execute(const ps_iter_plan *plan, float *const *arrays, void *workspace);

/* Readable account: the dependences isl found, the hyperplanes and
 * conditions each tiling rests on, the choice with its band, tile sizes,
 * redundant work, scratch bytes, modelled costs and why. snprintf-like
 * (*needed may be NULL). */
PS_API ps_status ps_iter_plan_describe(const ps_iter_plan *plan, char *buf, size_t len, size_t *needed);

typedef struct ps_iter_plan_stats {
    size_t struct_size;          /* the caller sets it */
    ps_iter_tiling tiling;       /* the one chosen (never AUTO) */
    int64_t band;                /* time steps per band */
    int64_t tile[PS_ITER_MAX_DIMS]; /* space tile per dimension (the extent where untiled) */
    int64_t skew_width;          /* HYBRID's skewed tiles; 0 otherwise */
    int phases;                  /* barrier-separated phases per band (SPLIT; 1 otherwise) */
    ps_iter_split_order split_order; /* SPLIT: the order it runs in (never AUTO); 0 otherwise */
    double points_computed;      /* point updates one execute performs, all arrays */
    double points_needed;        /* updated points x arrays x T */
    double redundant_fraction;   /* computed / needed - 1 */
    size_t scratch_bytes;        /* per thread */
    size_t workspace_bytes;
    double model_ms;             /* the cost model's estimate */
    double plan_ms;
} ps_iter_plan_stats;

PS_API ps_status ps_iter_plan_get_stats(const ps_iter_plan *plan, ps_iter_plan_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
