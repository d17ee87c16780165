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
    int wraps = dst->wrap[xd] != 0, any_wrap = 0, same_str = 1;
    for (int d = 0; d < nd; d++) any_wrap |= dst->wrap[d] != 0;
    for (int k = 0; k < nt; k++) {
        const it_view *sv = &src[U->taps[k].array];
        wraps |= sv->wrap[xd] != 0;
        for (int d = 0; d < nd; d++) {
            any_wrap |= sv->wrap[d] != 0;
            same_str &= sv->str[d] == src[U->taps[0].array].str[d];
        }
    }
    if (!any_wrap && same_str) {
        /* No seam anywhere: each tap's row start is a fixed offset from the
         * row's, so a row costs one addition per tap. */
        const it_view *s0 = &src[U->taps[0].array];
        for (int k = 0; k < nt; k++) {
            const ps_it_tap *tp = &U->taps[k];
            const it_view *sv = &src[tp->array];
            int64_t off = x0 + tp->off[xd] - sv->org[xd];
            for (int d = 0; d < xd; d++) off += (tp->off[d] - sv->org[d]) * sv->str[d];
            rowb[k] = sv->base + off;
        }
        int64_t doff = x0 - dst->org[xd];
        for (int d = 0; d < xd; d++) doff -= dst->org[d] * dst->str[d];
        /* sum_runs where every row of the box keeps its rows at out's
         * alignment (modulo 64 bytes): the first row's are, and every row
         * stride is a whole number of vectors. Elsewhere sum_disjoint (the
         * same values), without sum_runs' checks on every row. */
        int runs = U->run_n3 > 0;
        for (int d = 0; d < xd && runs; d++) runs = s0->str[d] % 16 == 0 && dst->str[d] % 16 == 0;
        const uintptr_t out_align = ((uintptr_t)dst->base + (uintptr_t)doff * sizeof(float)) & 63;
        for (int k = 0; k < nt && runs; k++) runs = U->taps[k].off[xd] != 0 || ((uintptr_t)rowb[k] & 63) == out_align;
        /* Strips of columns (pl->strip) when the box's rows are longer:
         * the rows one output row reads stay in L1 for the next output row,
         * which reads most of them again, so each input row comes from L2 or
         * L3 once per strip instead of once per tap row. Inner boundaries
         * where the output's vectors start, so only the first strip has a
         * head. */
        const int64_t n = x1 - x0;
        const int64_t ns = pl->strip > 0 && n > pl->strip ? (n + pl->strip - 1) / pl->strip : 1;
        const int64_t lead = (int64_t)((64 - out_align) & 63) / (int64_t)sizeof(float);
        for (int64_t j = 1, xs = x0; xs < x1; j++) {
            int64_t xe = x1;
            if (j < ns) {
                xe = x0 + lead + (n * j / ns - lead + 8) / 16 * 16;
                if (xe <= xs || xe >= x1) continue;
            }
            for (int d = 0; d < xd; d++) c[d] = bx->a[d];
            for (;;) {
                int64_t rs = xs - x0, rd = doff + (xs - x0);
                for (int d = 0; d < xd; d++) {
                    rs += c[d] * s0->str[d];
                    rd += c[d] * dst->str[d];
                }
                for (int k = 0; k < nt; k++) ptr[k] = rowb[k] + rs;
                if (runs) {
                    /* one row pointer per run member (a triple's middle
                     * tap), and the box's rows along the innermost outer
                     * dimension in one call */
                    const float *ctr[PS_SUM_RUNS_MAX_TAPS];
                    int r = 0, k = 0;
                    for (; k < U->run_s0; k++) ctr[r++] = ptr[k];
                    for (int q = 0; q < U->run_n3; q++, k += 3) ctr[r++] = ptr[k + 1];
                    for (; k < nt; k++) ctr[r++] = ptr[k];
                    const int ld = xd - 1; /* -1: a 1-D grid, one row */
                    pl->k->sum_runs(dst->base + rd, xe - xs, ctr, U->run_s0, U->run_n3, U->run_s1, U->w, U->constant,
                                    ld >= 0 ? bx->b[ld] - c[ld] : 1, ld >= 0 ? s0->str[ld] : 0, ld >= 0 ? dst->str[ld] : 0);
                    if (ld >= 0) c[ld] = bx->b[ld] - 1; /* the odometer below steps past the rows done */
                } else {
                    pl->k->sum_disjoint(dst->base + rd, xe - xs, ptr, U->w, nt, U->constant);
                }
                int d = xd - 1;
                for (; d >= 0; d--) {
                    if (++c[d] < bx->b[d]) break;
                    c[d] = bx->a[d];
                }
                if (d < 0) break;
            }
            xs = xe;
        }
        return;
    }
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

/* Interval of dimension d of an overlap task at band step t: the tile's
 * trapezoid (ps_it_ov_range), except along a periodic untiled dimension
 * that carries the chain of skewed tiles: its ring is cut at an upright
 * face moving right by the split slope, [s t, n + s t) (unwrapped), so the
 * chain's first tile reads nothing its last one has still to compute. */
static int ring_cut(const ps_iter_plan *pl, int d, int64_t t, int64_t *a, int64_t *b)
{
    const ps_it_dim *D = &pl->dim[d];
    if (d != pl->skew_dim || D->kind != PS_ITD_FULL || !D->periodic) return 0;
    *a = pl->skew_hs * t;
    *b = D->n + pl->skew_hs * t;
    return 1;
}

static void task_range(const ps_iter_plan *pl, int d, int64_t k, int64_t t, int64_t tau, int64_t *a, int64_t *b)
{
    if (pl->dim[d].kind == PS_ITD_FULL && ring_cut(pl, d, t, a, b)) return;
    ps_it_ov_range(&pl->dim[d], k, t, tau, a, b);
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

/* One task: its box at each step of the band and where each step reads
 * and writes. */
typedef struct task {
    const ps_iter_plan *pl;
    int split;              /* a split component (else an overlapped tile, or one tile of its chain) */
    int mask;               /* split: inverted along the dimensions set */
    int64_t k[PS_IT_MAX_DIMS];
    int64_t tau;
    int64_t m, n_chain, c0; /* overlap: tile m of the chain along skew_dim, cuts at c0 + i W - s t */
    const it_view *gin, *gout;                 /* overlap: the band's input and output */
    const it_view (*sv)[PS_ITER_MAX_ARRAYS];   /* overlap: scratch, by parity */
    const it_view (*gv)[PS_ITER_MAX_ARRAYS];   /* split: the grid buffers */
    int cur;                /* split: buffer of the band's input */
} task;

static void task_box(const task *tk, int64_t t, ps_it_box *bx)
{
    const ps_iter_plan *pl = tk->pl;
    for (int d = 0; d < pl->nd; d++) {
        const ps_it_dim *D = &pl->dim[d];
        if (!tk->split) task_range(pl, d, tk->k[d], t, tk->tau, &bx->a[d], &bx->b[d]);
        else if (D->kind == PS_ITD_SPLIT && (tk->mask >> d) & 1) ps_it_inv_range(D, tk->k[d], t, &bx->a[d], &bx->b[d]);
        else ps_it_up_range(D, tk->k[d], t, &bx->a[d], &bx->b[d]);
    }
    const int j = pl->skew_dim;
    if (!tk->split && j >= 0) {
        int64_t lo = tk->c0 + tk->m * pl->skew_w - pl->skew_s * t, hi = lo + pl->skew_w;
        if (tk->m > 0 && lo > bx->a[j]) bx->a[j] = lo;
        if (tk->m + 1 < tk->n_chain && hi < bx->b[j]) bx->b[j] = hi;
    }
}

static void task_views(const task *tk, int64_t t, const it_view **src, const it_view **dst)
{
    if (tk->split) {
        *src = tk->gv[(tk->cur + t - 1) & 1];
        *dst = tk->gv[(tk->cur + t) & 1];
    } else {
        *src = t == 1 ? tk->gin : tk->sv[(t - 1) & 1];
        *dst = t == tk->tau ? tk->gout : tk->sv[t & 1];
    }
}

/* Runs (or counts) the task's boxes, step after step. */
static void task_run(const task *tk, double *count)
{
    const ps_iter_plan *pl = tk->pl;
    const int nd = pl->nd, na = pl->n_arrays;
    for (int64_t t = 1; t <= tk->tau; t++) {
        ps_it_box bx;
        task_box(tk, t, &bx);
        if (count) {
            *count += box_volume(&bx, nd) * na;
            continue;
        }
        const it_view *src, *dst;
        task_views(tk, t, &src, &dst);
        for (int a = 0; a < na; a++) compute_box(pl, a, &bx, src, &dst[a]);
    }
}

/* One overlapped tile (OVERLAP, HYBRID; STEP is the case tau = 1): its
 * trapezoid step by step from the band's input (grid buffer cur), the
 * intermediate steps in the thread's scratch, the last step's owned cells
 * into the other grid buffer. HYBRID runs the trapezoid as a chain of
 * skewed tiles along skew_dim, each through all tau steps. */
static void run_ov_task(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, int64_t task_no, float *scr,
                        double *count)
{
    const int nd = pl->nd, na = pl->n_arrays;
    task tk;
    memset(&tk, 0, sizeof tk);
    tk.pl = pl;
    tk.tau = tau;
    /* along dimension 0 first, as run_split_task */
    for (int d = 0; d < nd; d++) {
        tk.k[d] = task_no % pl->dim[d].ntiles;
        task_no /= pl->dim[d].ntiles;
    }
    it_view gin[PS_ITER_MAX_ARRAYS], gout[PS_ITER_MAX_ARRAYS], sv[2][PS_ITER_MAX_ARRAYS];
    if (!count) {
        global_views(pl, g, cur, gin);
        global_views(pl, g, cur ^ 1, gout);
        tk.gin = gin;
        tk.gout = gout;
        tk.sv = (const it_view(*)[PS_ITER_MAX_ARRAYS])sv;
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
                ps_it_ov_range(D, tk.k[d], 0, tau, &a, &b);
                /* With fixed boundaries the region also holds the
                 * boundary cells the steps read: constants, which no
                 * dependence accounts for, up to the radius beyond the
                 * trapezoid. */
                if (!D->periodic) {
                    a = ps_it_bound(D, tk.k[d]) - tau * D->el - pl->radius[d];
                    b = ps_it_bound(D, tk.k[d] + 1) + tau * D->er + pl->radius[d];
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
    tk.n_chain = 1;
    if (j >= 0) {
        int64_t a1, b1;
        task_range(pl, j, tk.k[j], 1, tau, &a1, &b1);
        tk.n_chain = b1 > a1 ? (b1 - a1 + pl->skew_w - 1) / pl->skew_w : 1;
        tk.c0 = a1 + pl->skew_s;
    }
    for (tk.m = 0; tk.m < tk.n_chain; tk.m++) task_run(&tk, count);
}

/* A split task of a band from buffer cur, without its component (mask,
 * k): its steps in place in the two grid buffers, whose views v holds
 * (step t in buffer (cur + t) mod 2); none when only counting. */
static void split_task_init(task *tk, const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau,
                            it_view (*v)[PS_ITER_MAX_ARRAYS], const double *count)
{
    memset(tk, 0, sizeof *tk);
    tk->pl = pl;
    tk->split = 1;
    tk->tau = tau;
    tk->cur = cur;
    if (!count) {
        global_views(pl, g, 0, v[0]);
        global_views(pl, g, 1, v[1]);
        tk->gv = (const it_view(*)[PS_ITER_MAX_ARRAYS])v;
    }
}

/* One split component: task number `task_no` of phase p. */
static void run_split_task(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, const ps_it_phase *ph,
                           int64_t task_no, double *count)
{
    const int nd = pl->nd;
    task tk;
    it_view v[2][PS_ITER_MAX_ARRAYS];
    split_task_init(&tk, pl, g, cur, tau, v, count);
    int q = 0;
    while (q + 1 < ph->n_masks && task_no >= ph->count[q]) task_no -= ph->count[q++];
    tk.mask = ph->mask[q];
    /* Task numbers run along dimension 0 first: the threads take
     * consecutive numbers, so tasks running at once lie in different rows
     * (planes). Numbered along the rows first, two tiles side by side in
     * the same rows ran at once and two threads went no faster than one
     * (heat-2d, tiles 64 x 2000: 190 ms on 2 threads, 180 on 1; 94 ms
     * numbered this way). */
    for (int d = 0; d < nd; d++) {
        const ps_it_dim *D = &pl->dim[d];
        int64_t nk = D->kind != PS_ITD_SPLIT ? 1 : (tk.mask >> d) & 1 ? ps_it_n_inverted(D) : D->ntiles;
        tk.k[d] = task_no % nk;
        task_no /= nk;
    }
    task_run(&tk, count);
}

/* The pipelined split order (PS_ITER_SPLIT_PIPELINED), recursively over
 * the dimensions from d: along a split dimension the tiles k0 .. k1 - 1 in
 * order, after each the inverted components between it and the one
 * before, every one of them with the dimensions after d walked the same
 * way. An inverted component along d reads only the upright (along d)
 * components on its two sides, done just before, while they are in cache;
 * those inverted along later dimensions too follow the ones they read in
 * the inner walk. Where this walk runs a component after one that shares
 * its phase, or that comes after it, in the phased order, the two lie a
 * tile (at least 2 s tau wide) apart, so neither reads what the other
 * writes. */
static void walk_split(task *tk, int d, double *count);

static void walk_inverted(task *tk, int d, int64_t bnd, double *count)
{
    const ps_it_dim *D = &tk->pl->dim[d];
    /* inverted component j sits at boundary j (periodic) or j + 1 */
    tk->k[d] = D->periodic ? bnd % D->ntiles : bnd - 1;
    tk->mask |= 1 << d;
    walk_split(tk, d + 1, count);
    tk->mask &= ~(1 << d);
}

static void walk_tiles(task *tk, int d, int64_t k0, int64_t k1, double *count)
{
    for (int64_t k = k0; k < k1; k++) {
        tk->k[d] = k;
        walk_split(tk, d + 1, count);
        if (k > k0) walk_inverted(tk, d, k, count);
    }
}

static void walk_split(task *tk, int d, double *count)
{
    const ps_iter_plan *pl = tk->pl;
    if (d == pl->nd) {
        task_run(tk, count);
        return;
    }
    const ps_it_dim *D = &pl->dim[d];
    if (D->kind != PS_ITD_SPLIT) {
        tk->k[d] = 0;
        walk_split(tk, d + 1, count);
        return;
    }
    walk_tiles(tk, d, 0, D->ntiles, count);
    if (D->periodic) walk_inverted(tk, d, 0, count);
}

/* One band in the pipelined order: thread q of P walks tiles [n q / P,
 * n (q + 1) / P) along split_pipe; after a barrier the inverted components
 * on the blocks' edges (and the periodic seam), which read two threads'
 * tiles. Outside a parallel region (the point count) P = 1. */
static void run_split_pipelined(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, double *count)
{
    const int d0 = pl->split_pipe;
    task tk;
    it_view v[2][PS_ITER_MAX_ARRAYS];
    split_task_init(&tk, pl, g, cur, tau, v, count);
    const ps_it_dim *D = &pl->dim[d0];
    const int64_t n = D->ntiles;
    int64_t P = omp_get_num_threads(), q = omp_get_thread_num();
    if (P > n) P = n; /* blocks of one tile at least; the threads past n idle */
    if (q < P) walk_tiles(&tk, d0, n * q / P, n * (q + 1) / P, count);
#pragma omp barrier
    /* edge e: the start of block e (e = 0: the periodic seam) */
#pragma omp for schedule(dynamic, 1)
    for (int64_t e = 0; e < P; e++)
        if (e > 0 || D->periodic) walk_inverted(&tk, d0, n * e / P, count);
}

void ps_iter_run_band(const ps_iter_plan *pl, float *const (*g)[2], int cur, int64_t tau, float *scratch, double *count)
{
    if (pl->tiling == PS_ITER_TILING_SPLIT && pl->split_pipe >= 0) {
        run_split_pipelined(pl, g, cur, tau, count);
        return;
    }
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
