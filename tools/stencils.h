/* polysci CLI — the iterated-stencil benchmarks, built with the
 * iterated-stencil API (include/polysci/iterated.h), for `polysci stencil`
 * and the stencil benchmark driver:
 *   heat1d    160,000 points, T = 1000
 *   heat2d    4000 x 4000, T = 64 (and T = 500)
 *   heat3d    150 x 150 x 150, T = 100
 *   jacobi2d  4000 x 4000, T = 64 (9-point)
 * with fixed (Dirichlet) boundaries of width 1 and inputs uniform in
 * [0.05, 1), as bench/stencil's Halide versions; flops per point are
 * counted as those versions write the update (heat1d 0.25 (u[x+1] - 2u +
 * u[x-1]) + u: 5), so GFLOP/s compare directly. Also a float64 reference
 * evaluator of any descriptor and its error bound. */
#ifndef POLYSCI_CLI_STENCILS_H
#define POLYSCI_CLI_STENCILS_H

#include "polysci/polysci.h"

#define CLI_N_STENCILS 4
extern const char *const cli_stencil_names[CLI_N_STENCILS]; /* ps_iter_example order */

typedef struct cli_stencil_bench {
    const char *name;
    ps_iter_example example;
    int ndim;
    int64_t n[PS_ITER_MAX_DIMS];  /* default extents */
    int64_t steps;                /* default T */
    int flops_per_point;          /* as the Halide version writes the update */
} cli_stencil_bench;

/* The benchmark named `name`, or NULL. */
const cli_stencil_bench *cli_stencil_find(const char *name);

/* __give *it: benchmark b over n (NULL: its default extents), `steps` (< 0:
 * its default T), with `boundary`. */
ps_status cli_stencil_build(const cli_stencil_bench *b, const int64_t *n, int64_t steps, ps_iter_boundary boundary,
                            ps_iter **it);

/* Fills the arrays of `it` (one after another from the same stream) with
 * values uniform in [0.05, 1), deterministic in seed. */
void cli_stencil_fill(const ps_iter *it, float *const *arrays, uint64_t seed);

/* Runs the plan `warmup` times, then `reps` timed executions on the same
 * arrays (each continues from the last; the updates are convex
 * combinations, so the values stay in range); *median_ms and *best_ms.
 * ws: a workspace of the plan's size or NULL. */
ps_status cli_stencil_time(const ps_iter_plan *plan, float *const *arrays, void *ws, int warmup, int reps, double *median_ms,
                           double *best_ms);

typedef struct cli_stencil_result {
    ps_iter_plan_stats stats;    /* the plan's (tiling, sizes, redundant work, ...) */
    double median_ms, best_ms;
    double gflops;               /* flops_per_point x updated points x T / median */
} cli_stencil_result;

/* Times `plan` (made from `it`) on freshly allocated arrays filled by
 * cli_stencil_fill (seed 1) with a workspace of its size: `warmup` then
 * `reps` executions (cli_stencil_time); fills *r. PS_ERR_OUT_OF_MEMORY when
 * the arrays cannot be allocated. */
ps_status cli_stencil_measure(const ps_iter *it, const ps_iter_plan *plan, int flops_per_point, int warmup, int reps,
                              cli_stencil_result *r);

/* The T steps of `it` in double precision: out[a] (n doubles each) from
 * in[a]. OpenMP-parallel over the grid. Returns 0, or -1 when out of
 * memory. */
int cli_stencil_reference(const ps_iter *it, const float *const *in, double *const *out);

/* A bound on |f32 result - reference| for inputs of largest magnitude
 * max_in: every step adds at most (taps + 1) roundings of values no larger
 * than the bound on |u|, and an update whose absolute weights sum to g
 * multiplies the error it inherits by at most g (4x margin). */
double cli_stencil_tolerance(const ps_iter *it, double max_in);

#endif
