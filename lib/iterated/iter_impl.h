/* Internal: iterated stencils (include/polysci/iterated.h).
 *
 * descriptor (iter.c) -> dependence analysis with isl (deps.c) -> tiling
 * choice by the cost model (choose.c) -> plan (iter_plan.c) -> executor
 * (iter_exec.c).
 *
 * Every tiling is a set of tasks per band of tau time steps; a task
 * computes, for t = 1 .. tau, one box per step (a product of one interval
 * per dimension) of every array. The boxes are closed-form functions of the
 * task's tile indices and t with plan-time constants (tile boundaries and
 * the slopes isl derived), computed by the functions below, which both the
 * executor and the plan's point count use, so the count is what execution
 * does. */
#ifndef PS_ITER_IMPL_H
#define PS_ITER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "polysci/iterated.h"

#define PS_IT_MAX_DIMS PS_ITER_MAX_DIMS

/* ------------------------------------------------------------ descriptor */

typedef struct ps_it_update {
    int n_taps;            /* 0: not set */
    ps_iter_tap *taps;
    float constant;
} ps_it_update;

struct ps_iter {
    int ndim;
    int64_t n[PS_IT_MAX_DIMS];
    ps_iter_boundary boundary;
    int64_t steps;
    int n_arrays;
    char name[PS_ITER_MAX_ARRAYS][PS_ITER_NAME_MAX + 1];
    ps_it_update upd[PS_ITER_MAX_ARRAYS];
};

/* Radius per dimension over all updates. */
void ps_iter_radius(const ps_iter *it, int *r);

/* ----------------------------------------------------------- dependences */

#define PS_IT_MAX_DIST 4096

typedef struct ps_it_deps {
    int nd;                         /* space dimensions */
    int n_dist;
    int (*dist)[PS_IT_MAX_DIMS + 1];/* distance vectors (t, i0, ...) */
    int time_carries;               /* every distance has d_t >= 1: steps are parallel sweeps */
    int pointwise_start;            /* face t = const has b.d > 0 for every d (seed 003, 3.1) */
    int64_t sigma[PS_IT_MAX_DIMS];  /* classical hyperplane h_i = sigma e_t + e_i, least legal */
    int tiled_inhibited;            /* the classical tiling (e_t, h_i) inhibits concurrent start */
    int64_t lambda[PS_IT_MAX_DIMS]; /* companion of h_i's back face: h_i - lambda e_t */
    int64_t el[PS_IT_MAX_DIMS], er[PS_IT_MAX_DIMS]; /* overlapped tile: growth per earlier step, left / right */
    int64_t split_s[PS_IT_MAX_DIMS];/* split tiling: slope of the upright faces */
    int split_ui[PS_IT_MAX_DIMS];   /* inverted components read the upright ones along i */
    int64_t skew_s[PS_IT_MAX_DIMS]; /* chain of skewed tiles: slope */
    int checks_ok;                  /* every isl check below passed */
    char *text;                     /* describe's account */
} ps_it_deps;

/* Fills d from it's accesses (isl). PS_ERR_BACKEND when isl fails. */
ps_status ps_iter_deps_compute(const ps_iter *it, ps_it_deps *d);
void ps_iter_deps_release(ps_it_deps *d);

/* ------------------------------------------------------------------ plan */

enum { PS_ITD_FULL = 0, PS_ITD_OVERLAP = 1, PS_ITD_SPLIT = 2 };

typedef struct ps_it_dim {
    int64_t n;              /* extent */
    int64_t lo, hi;         /* updated range: fixed [r, n - r), periodic [0, n) */
    int64_t stride;         /* floats between neighbours along it in a grid array */
    int periodic;
    int kind;               /* PS_ITD_* */
    int64_t tile;           /* nominal tile (owner / upright base) */
    int64_t ntiles;         /* tiles (1 when FULL) */
    int64_t el, er;         /* OVERLAP: growth per earlier step */
    int64_t s;              /* SPLIT: slope of the upright faces */
    int64_t scr_ext;        /* scratch extent (OVERLAP/HYBRID) */
} ps_it_dim;

typedef struct ps_it_phase {
    int n_masks;
    int mask[1 << PS_IT_MAX_DIMS];   /* components: bit d set = inverted along dimension d */
    int64_t count[1 << PS_IT_MAX_DIMS]; /* tasks of each */
    int64_t tasks;
} ps_it_phase;

typedef struct ps_it_tap {
    int array;
    int off[PS_IT_MAX_DIMS];
} ps_it_tap;

typedef struct ps_it_upd {
    int n_taps;
    ps_it_tap *taps;
    float *w;               /* n_taps weights, contiguous for the row kernel */
    float constant;
    /* The taps as runs for the row kernels' sum_runs: s0 single taps (no
     * offset along the row), n3 triples (offsets -1, 0, +1 along the row,
     * the rest equal), s1 single taps; n3 = 0: not in that form. */
    int run_s0, run_n3, run_s1;
} ps_it_upd;

/* The cost model's account of one candidate. */
typedef struct ps_it_eval {
    ps_iter_tiling tiling;
    int64_t band;
    int64_t tile[PS_IT_MAX_DIMS];
    int64_t skew_width;
    double cost;            /* seconds */
    double t_far, t_comp, t_near, t_sync;
    double far_bytes;       /* between the grid's level and the cores */
    double computed, needed;
    double balance;
    double ws_bytes;        /* working set of one task */
    int ws_level;           /* cache level it fits (1, 2, 3; 4 = memory) */
    int far_level;          /* level the grid streams from (3 or 4) */
    int phases;
    double tasks;           /* per band */
} ps_it_eval;

struct ps_iter_plan {
    ps_context *ctx;
    int nthreads;
    const ps_row_kernels *k;
    int nd;
    int periodic;
    int n_arrays;
    int64_t steps;
    int64_t npts;           /* grid points per array */
    size_t arr_floats;      /* a second buffer's floats (rounded) */
    ps_it_dim dim[PS_IT_MAX_DIMS];
    int radius[PS_IT_MAX_DIMS];
    ps_it_upd upd[PS_ITER_MAX_ARRAYS];
    int max_taps;
    int64_t strip;          /* columns per strip of a box's rows (0: whole rows), compute_box */
    char name[PS_ITER_MAX_ARRAYS][PS_ITER_NAME_MAX + 1];

    ps_iter_tiling tiling;
    int64_t band;           /* tau; the last band may be shorter */
    int64_t n_bands;
    int skew_dim;           /* HYBRID: dimension of the chain of skewed tiles, -1 none */
    int64_t skew_w, skew_s; /* its tiles' width at step 1 and slope */
    int64_t skew_hs;        /* the slope of the first tile's upright face where the
                               chain runs around a periodic dimension */
    int64_t ov_tasks;       /* OVERLAP/HYBRID/STEP: tasks per band */
    int n_phases;           /* SPLIT: the components' phases (their order under PS_ITER_SPLIT_PHASES) */
    int split_pipe;         /* SPLIT: the dimension of the pipelined order's blocks of tiles; -1: phases */
    ps_it_phase phase[PS_IT_MAX_DIMS + 1];
    size_t scr_floats;      /* one scratch buffer (one array, one parity) */
    size_t thread_floats;   /* a thread's scratch: 2 per array */
    size_t workspace_bytes;
    double computed, needed;
    ps_it_eval ev;          /* the chosen candidate */
    ps_iter_options opts;
    double plan_ms;
    char *deps_text;        /* the dependence analysis, for describe */
    char *why;              /* the choice, for describe */
};

/* Cost model: the best candidate for `tiling` (AUTO: over all), honouring
 * the forced sizes in opts; fills *best (cost = INFINITY when none is
 * legal, with why). why receives one line per tiling considered. */
ps_status ps_iter_choose(const ps_iter_plan *pl, const ps_it_deps *d, const ps_iter_options *opts, ps_it_eval *best,
                         char **why);

/* Sets pl's tiling fields from a candidate and its slopes. */
void ps_iter_apply(ps_iter_plan *pl, const ps_it_deps *d, const ps_it_eval *ev);

/* ----------------------------------------------------- boxes and tasks */

/* Tile boundary k (0..ntiles) along a tiled dimension. */
static inline int64_t ps_it_bound(const ps_it_dim *D, int64_t k)
{
    if (k <= 0) return D->lo;
    if (k >= D->ntiles) return D->hi;
    return D->lo + k * D->tile;
}

/* OVERLAP/FULL: interval of tile k at band step t (0 = the band's input,
 * the scratch region) of tau. Unwrapped coordinates when periodic. */
static inline void ps_it_ov_range(const ps_it_dim *D, int64_t k, int64_t t, int64_t tau, int64_t *a, int64_t *b)
{
    if (D->kind == PS_ITD_FULL) {
        *a = D->lo;
        *b = D->hi;
        return;
    }
    int64_t e = tau - t;
    *a = ps_it_bound(D, k) - e * D->el;
    *b = ps_it_bound(D, k + 1) + e * D->er;
    if (!D->periodic) {
        if (*a < D->lo) *a = D->lo;
        if (*b > D->hi) *b = D->hi;
    }
}

/* SPLIT: upright component of tile k at step t: its faces move in by s per
 * step, except at a fixed boundary's face. */
static inline void ps_it_up_range(const ps_it_dim *D, int64_t k, int64_t t, int64_t *a, int64_t *b)
{
    if (D->kind != PS_ITD_SPLIT) {
        *a = D->lo;
        *b = D->hi;
        return;
    }
    *a = ps_it_bound(D, k) + (D->periodic || k > 0 ? D->s * t : 0);
    *b = ps_it_bound(D, k + 1) - (D->periodic || k + 1 < D->ntiles ? D->s * t : 0);
}

/* SPLIT: inverted components, one per tile boundary that has neighbours on
 * both sides (periodic: all ntiles, boundary 0 wrapping; fixed: 1 .. ntiles
 * - 1); number j of them sits at boundary j (+1 when fixed). */
static inline int64_t ps_it_n_inverted(const ps_it_dim *D) { return D->periodic ? D->ntiles : D->ntiles - 1; }
static inline void ps_it_inv_range(const ps_it_dim *D, int64_t j, int64_t t, int64_t *a, int64_t *b)
{
    int64_t p = ps_it_bound(D, D->periodic ? j : j + 1);
    *a = p - D->s * t;
    *b = p + D->s * t;
}

/* A task's box at one step. */
typedef struct ps_it_box {
    int64_t a[PS_IT_MAX_DIMS], b[PS_IT_MAX_DIMS];
} ps_it_box;

/* Runs (or, with count != NULL, only counts the point updates of) one band
 * of tau steps starting from global buffer `cur` of each array (g[a][cur]),
 * ending in the other: every task of every phase. Called by every thread of
 * a parallel region (work-shared loops inside); scratch: the calling
 * thread's area. */
void ps_iter_run_band(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, float *scratch, double *count);

/* The whole execution (arguments checked): arrays in/out, ws the workspace. */
void ps_iter_run(const ps_iter_plan *pl, float *const *arrays, float *ws);

/* Point updates the plan performs (all arrays, all steps), by enumerating
 * the tasks' boxes with the executor's code. */
double ps_iter_count_points(const ps_iter_plan *pl);

#endif
