/* Executing an iterated-stencil plan (iter_impl.h): bands of tau steps one
 * after another, the tasks of a band (of each split phase) in parallel,
 * each task's boxes step by step, every box row by row through the row
 * kernel `sum` (kernels.h) with the update's taps in their order, so every
 * tiling performs the same operations per point. */
#include "iterated/iter_impl.h"

#include <omp.h>
#include <string.h>

/* Where the values of one array at one step live: a global grid buffer
 * (wrapping where the grid is periodic) or a thread's scratch region
 * (unwrapped coordinates from org, except along untiled periodic
 * dimensions, which it holds whole and wraps). */
typedef struct it_view {
    float *base;
    int64_t org[PS_IT_MAX_DIMS];
    int64_t str[PS_IT_MAX_DIMS];
    int64_t wrap[PS_IT_MAX_DIMS];   /* period, or 0 */
} it_view;

static inline int64_t pmod(int64_t a, int64_t n)
{
    int64_t r = a % n;
    return r < 0 ? r + n : r;
}

static inline int64_t vidx(const it_view *v, int d, int64_t c) { return v->wrap[d] ? pmod(c, v->wrap[d]) : c - v->org[d]; }

/* Box bx of array a at one step: values read through src[] (one view per
 * array), written through dst. Rows along the last dimension; a row whose
 * reads or writes cross a periodic seam is cut there so every piece is
 * contiguous, which changes no point's arithmetic. */
static void compute_box(const ps_iter_plan *pl, int a, const ps_it_box *bx, const it_view *src, const it_view *dst)
{
    const ps_it_upd *U = &pl->upd[a];
    const int nd = pl->nd, xd = nd - 1, nt = U->n_taps;
    const float *rowb[PS_ITER_MAX_TAPS];
    const float *ptr[PS_ITER_MAX_TAPS];
    int64_t c[PS_IT_MAX_DIMS] = {0, 0, 0};
    for (int d = 0; d < xd; d++) {
        if (bx->a[d] >= bx->b[d]) return;
        c[d] = bx->a[d];
    }
    const int64_t x0 = bx->a[xd], x1 = bx->b[xd];
    if (x0 >= x1) return;
    int wraps = dst->wrap[xd] != 0;
    for (int k = 0; k < nt; k++) wraps |= src[U->taps[k].array].wrap[xd] != 0;
    for (;;) {
        for (int k = 0; k < nt; k++) {
            const ps_it_tap *tp = &U->taps[k];
            const it_view *sv = &src[tp->array];
            int64_t off = 0;
            for (int d = 0; d < xd; d++) off += vidx(sv, d, c[d] + tp->off[d]) * sv->str[d];
            rowb[k] = sv->base + off;
        }
        float *drow = dst->base;
        for (int d = 0; d < xd; d++) drow += vidx(dst, d, c[d]) * dst->str[d];
        for (int64_t x = x0; x < x1;) {
            int64_t end = x1;
            if (wraps) {
                if (dst->wrap[xd]) {
                    int64_t run = dst->wrap[xd] - pmod(x, dst->wrap[xd]);
                    if (x + run < end) end = x + run;
                }
                for (int k = 0; k < nt; k++) {
                    const it_view *sv = &src[U->taps[k].array];
                    if (!sv->wrap[xd]) continue;
                    int64_t run = sv->wrap[xd] - pmod(x + U->taps[k].off[xd], sv->wrap[xd]);
                    if (x + run < end) end = x + run;
                }
            }
            for (int k = 0; k < nt; k++) {
                const ps_it_tap *tp = &U->taps[k];
                ptr[k] = rowb[k] + vidx(&src[tp->array], xd, x + tp->off[xd]);
            }
            pl->k->sum_disjoint(drow + vidx(dst, xd, x), end - x, ptr, U->w, nt, U->constant);
            x = end;
        }
        int d = xd - 1;
        for (; d >= 0; d--) {
            if (++c[d] < bx->b[d]) break;
            c[d] = bx->a[d];
        }
        if (d < 0) return;
    }
}

static double box_volume(const ps_it_box *bx, int nd)
{
    double v = 1;
    for (int d = 0; d < nd; d++) v *= bx->b[d] > bx->a[d] ? (double)(bx->b[d] - bx->a[d]) : 0.0;
    return v;
}

static void global_views(const ps_iter_plan *pl, float *const (*g)[2], int which, it_view *v)
{
    for (int a = 0; a < pl->n_arrays; a++) {
        v[a].base = g[a][which];
        for (int d = 0; d < PS_IT_MAX_DIMS; d++) {
            v[a].org[d] = 0;
            v[a].str[d] = d < pl->nd ? pl->dim[d].stride : 0;
            v[a].wrap[d] = d < pl->nd && pl->periodic ? pl->dim[d].n : 0;
        }
    }
}

/* Interval of dimension d of overlap task k at band step t: the tile's
 * trapezoid (ps_it_ov_range), except along a periodic untiled dimension
 * carrying the skewed chain, whose ring is cut at an upright face moving
 * right by the split slope: [s t, n + s t) (unwrapped), so the chain's
 * first tile reads nothing its last one has still to compute. */
static void task_range(const ps_iter_plan *pl, int d, int64_t k, int64_t t, int64_t tau, int64_t *a, int64_t *b)
{
    const ps_it_dim *D = &pl->dim[d];
    if (d == pl->skew_dim && D->kind == PS_ITD_FULL && D->periodic) {
        *a = pl->skew_hs * t;
        *b = D->n + pl->skew_hs * t;
        return;
    }
    ps_it_ov_range(D, k, t, tau, a, b);
}

/* Copies the boundary cells (fixed boundaries) of a scratch region from the
 * grid into both scratch buffers of every array: steps after the first read
 * them there. */
static void copy_boundary(const ps_iter_plan *pl, const it_view *gv, it_view (*sv)[PS_ITER_MAX_ARRAYS], const int64_t *org,
                          const int64_t *ext)
{
    const int nd = pl->nd, xd = nd - 1;
    int touches = 0;
    for (int d = 0; d < nd; d++) touches |= org[d] < pl->dim[d].lo || org[d] + ext[d] > pl->dim[d].hi;
    if (!touches) return;
    int64_t c[PS_IT_MAX_DIMS] = {0, 0, 0};
    for (int d = 0; d < xd; d++) c[d] = org[d];
    const ps_it_dim *X = &pl->dim[xd];
    for (;;) {
        int edge = 0;
        for (int d = 0; d < xd; d++) edge |= c[d] < pl->dim[d].lo || c[d] >= pl->dim[d].hi;
        /* the whole row on a boundary plane, else its two ends */
        int64_t piece[2][2] = {{org[xd], edge ? org[xd] + ext[xd] : X->lo}, {edge ? 0 : X->hi, edge ? 0 : org[xd] + ext[xd]}};
        for (int p = 0; p < 2; p++) {
            int64_t xa = piece[p][0] > org[xd] ? piece[p][0] : org[xd];
            int64_t xb = piece[p][1] < org[xd] + ext[xd] ? piece[p][1] : org[xd] + ext[xd];
            if (xa >= xb) continue;
            for (int a = 0; a < pl->n_arrays; a++) {
                const float *from = gv[a].base + xa;
                for (int d = 0; d < xd; d++) from += c[d] * gv[a].str[d];
                for (int q = 0; q < 2; q++) {
                    float *to = sv[q][a].base + (xa - org[xd]);
                    for (int d = 0; d < xd; d++) to += (c[d] - org[d]) * sv[q][a].str[d];
                    memcpy(to, from, (size_t)(xb - xa) * sizeof *to);
                }
            }
        }
        int d = xd - 1;
        for (; d >= 0; d--) {
            if (++c[d] < org[d] + ext[d]) break;
            c[d] = org[d];
        }
        if (d < 0) return;
    }
}

/* One overlapped tile (OVERLAP, HYBRID; STEP is the case tau = 1): its
 * trapezoid step by step from the band's input (grid buffer cur), the
 * intermediate steps in the thread's scratch, the last step's owned cells
 * into the other grid buffer. HYBRID runs the trapezoid as a chain of
 * skewed tiles along skew_dim, each through all tau steps. */
static void run_ov_task(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, int64_t task, float *scr,
                        double *count)
{
    const int nd = pl->nd, na = pl->n_arrays;
    int64_t k[PS_IT_MAX_DIMS] = {0, 0, 0};
    for (int d = nd - 1; d >= 0; d--) {
        k[d] = task % pl->dim[d].ntiles;
        task /= pl->dim[d].ntiles;
    }
    it_view gin[PS_ITER_MAX_ARRAYS], gout[PS_ITER_MAX_ARRAYS], sv[2][PS_ITER_MAX_ARRAYS];
    if (!count) {
        global_views(pl, g, cur, gin);
        global_views(pl, g, cur ^ 1, gout);
    }
    if (tau >= 2 && !count) {
        int64_t org[PS_IT_MAX_DIMS], ext[PS_IT_MAX_DIMS], str[PS_IT_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            const ps_it_dim *D = &pl->dim[d];
            if (D->kind == PS_ITD_FULL) {
                org[d] = 0;
                ext[d] = D->n;
            } else {
                int64_t a, b;
                ps_it_ov_range(D, k[d], 0, tau, &a, &b);
                /* With fixed boundaries the region also holds the
                 * boundary cells the steps read: constants, which no
                 * dependence accounts for, up to the radius beyond the
                 * trapezoid. */
                if (!D->periodic) {
                    a = ps_it_bound(D, k[d]) - tau * D->el - pl->radius[d];
                    b = ps_it_bound(D, k[d] + 1) + tau * D->er + pl->radius[d];
                    if (a < 0) a = 0;
                    if (b > D->n) b = D->n;
                }
                /* rows of the scratch start where the grid's 64-byte
                 * vectors do, so the row kernel's aligned stores and the
                 * taps of rows above and below load aligned too */
                if (d == nd - 1) a = a >= 0 ? a / 16 * 16 : -((-a + 15) / 16 * 16);
                org[d] = a;
                ext[d] = b - a;
            }
        }
        for (int d = nd - 1; d >= 0; d--) str[d] = d == nd - 1 ? 1 : str[d + 1] * pl->dim[d + 1].scr_ext;
        for (int q = 0; q < 2; q++)
            for (int a = 0; a < na; a++) {
                it_view *v = &sv[q][a];
                v->base = scr + ((size_t)a * 2 + (size_t)q) * pl->scr_floats;
                for (int d = 0; d < PS_IT_MAX_DIMS; d++) {
                    v->org[d] = d < nd ? org[d] : 0;
                    v->str[d] = d < nd ? str[d] : 0;
                    v->wrap[d] = d < nd && pl->dim[d].kind == PS_ITD_FULL && pl->periodic ? pl->dim[d].n : 0;
                }
            }
        if (!pl->periodic) copy_boundary(pl, gin, sv, org, ext);
    }
    /* The chain along skew_dim: cuts at c_m - s t, c_m = A1 + m W + s, so
     * at step 1 the tiles are W wide from the trapezoid's start A1. */
    const int j = pl->skew_dim;
    int64_t n_chain = 1, c0 = 0;
    if (j >= 0) {
        int64_t a1, b1;
        task_range(pl, j, k[j], 1, tau, &a1, &b1);
        n_chain = b1 > a1 ? (b1 - a1 + pl->skew_w - 1) / pl->skew_w : 1;
        c0 = a1 + pl->skew_s;
    }
    for (int64_t m = 0; m < n_chain; m++)
        for (int64_t t = 1; t <= tau; t++) {
            ps_it_box bx;
            for (int d = 0; d < nd; d++) task_range(pl, d, k[d], t, tau, &bx.a[d], &bx.b[d]);
            if (j >= 0) {
                if (m > 0 && c0 + m * pl->skew_w - pl->skew_s * t > bx.a[j]) bx.a[j] = c0 + m * pl->skew_w - pl->skew_s * t;
                if (m + 1 < n_chain && c0 + (m + 1) * pl->skew_w - pl->skew_s * t < bx.b[j])
                    bx.b[j] = c0 + (m + 1) * pl->skew_w - pl->skew_s * t;
            }
            if (count) {
                *count += box_volume(&bx, nd) * na;
                continue;
            }
            const it_view *src = t == 1 ? gin : sv[(t - 1) & 1];
            const it_view *dst = t == tau ? gout : sv[t & 1];
            for (int a = 0; a < na; a++) compute_box(pl, a, &bx, src, &dst[a]);
        }
}

/* One split component: task number `task` of phase p; all tau steps in
 * place in the two grid buffers (step t in buffer (cur + t) mod 2). */
static void run_split_task(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, const ps_it_phase *ph,
                           int64_t task, double *count)
{
    const int nd = pl->nd, na = pl->n_arrays;
    int q = 0;
    while (q + 1 < ph->n_masks && task >= ph->count[q]) task -= ph->count[q++];
    const int mask = ph->mask[q];
    int64_t k[PS_IT_MAX_DIMS] = {0, 0, 0};
    for (int d = nd - 1; d >= 0; d--) {
        const ps_it_dim *D = &pl->dim[d];
        int64_t nk = D->kind != PS_ITD_SPLIT ? 1 : (mask >> d) & 1 ? ps_it_n_inverted(D) : D->ntiles;
        k[d] = task % nk;
        task /= nk;
    }
    it_view v[2][PS_ITER_MAX_ARRAYS];
    if (!count) {
        global_views(pl, g, 0, v[0]);
        global_views(pl, g, 1, v[1]);
    }
    for (int64_t t = 1; t <= tau; t++) {
        ps_it_box bx;
        for (int d = 0; d < nd; d++) {
            const ps_it_dim *D = &pl->dim[d];
            if (D->kind == PS_ITD_SPLIT && (mask >> d) & 1) ps_it_inv_range(D, k[d], t, &bx.a[d], &bx.b[d]);
            else ps_it_up_range(D, k[d], t, &bx.a[d], &bx.b[d]);
        }
        if (count) {
            *count += box_volume(&bx, nd) * na;
            continue;
        }
        const it_view *src = v[(cur + t - 1) & 1], *dst = v[(cur + t) & 1];
        for (int a = 0; a < na; a++) compute_box(pl, a, &bx, src, &dst[a]);
    }
}

void ps_iter_run_band(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, float *scratch, double *count)
{
    if (pl->tiling == PS_ITER_TILING_SPLIT) {
        for (int p = 0; p < pl->n_phases; p++) {
            const ps_it_phase *ph = &pl->phase[p];
#pragma omp for schedule(dynamic, 1)
            for (int64_t i = 0; i < ph->tasks; i++) run_split_task(pl, g, cur, tau, ph, i, count);
        }
        return;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < pl->ov_tasks; i++) run_ov_task(pl, g, cur, tau, i, scratch, count);
}

/* Rows of a grid array, for the copies at the start and end: row r is
 * outer index r (all dimensions but the last flattened). */
static int64_t grid_rows(const ps_iter_plan *pl) { return pl->npts / pl->dim[pl->nd - 1].n; }

void ps_iter_run(const ps_iter_plan *pl, float *const *arrays, float *ws)
{
    float *g[PS_ITER_MAX_ARRAYS][2];
    for (int a = 0; a < pl->n_arrays; a++) {
        g[a][0] = arrays[a];
        g[a][1] = ws + (size_t)a * pl->arr_floats;
    }
    float *scratch0 = ws + (size_t)pl->n_arrays * pl->arr_floats;
    const int nd = pl->nd, xd = nd - 1;
    const int64_t rows = grid_rows(pl), nx = pl->dim[xd].n;
#pragma omp parallel num_threads(pl->nthreads)
    {
        float *scr = scratch0 + (size_t)omp_get_thread_num() * pl->thread_floats;
        /* Fixed boundaries: the second buffer gets the boundary cells,
         * which no step writes. */
        if (!pl->periodic && pl->steps > 0) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; r++) {
                int edge = 0;
                int64_t rr = r;
                for (int d = xd - 1; d >= 0; d--) {
                    int64_t c = rr % pl->dim[d].n;
                    rr /= pl->dim[d].n;
                    edge |= c < pl->dim[d].lo || c >= pl->dim[d].hi;
                }
                for (int a = 0; a < pl->n_arrays; a++) {
                    const float *from = g[a][0] + r * nx;
                    float *to = g[a][1] + r * nx;
                    if (edge) {
                        memcpy(to, from, (size_t)nx * sizeof *to);
                    } else {
                        memcpy(to, from, (size_t)pl->dim[xd].lo * sizeof *to);
                        memcpy(to + pl->dim[xd].hi, from + pl->dim[xd].hi, (size_t)(nx - pl->dim[xd].hi) * sizeof *to);
                    }
                }
            }
        }
        int cur = 0;
        for (int64_t b = 0; b < pl->n_bands; b++) {
            int64_t tau = pl->steps - b * pl->band < pl->band ? pl->steps - b * pl->band : pl->band;
            ps_iter_run_band(pl, (float *const(*)[2])g, cur, tau, scr, NULL);
            cur = pl->tiling == PS_ITER_TILING_SPLIT ? (int)((cur + tau) & 1) : cur ^ 1;
        }
        if (cur == 1) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; r++)
                for (int a = 0; a < pl->n_arrays; a++) memcpy(g[a][0] + r * nx, g[a][1] + r * nx, (size_t)nx * sizeof(float));
        }
    }
}

double ps_iter_count_points(const ps_iter_plan *pl)
{
    if (pl->n_bands == 0) return 0;
    /* Bands differ only in the last one's height. */
    int64_t last = pl->steps - (pl->n_bands - 1) * pl->band;
    double full = 0, tail = 0;
    if (pl->n_bands > 1) ps_iter_run_band(pl, NULL, 0, pl->band, NULL, &full);
    ps_iter_run_band(pl, NULL, 0, last, NULL, &tail);
    return full * (double)(pl->n_bands - 1) + tail;
}
