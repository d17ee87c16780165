/* Choosing the tiling of an iterated stencil and its sizes: seed 002's cost
 * terms (live-in/out traffic per point computed, load balance, overlap)
 * plus the redundant fraction, over the machine model's caches.
 *
 * Every candidate (tiling, band height tau, space tile per dimension, the
 * hybrid's skewed-tile width) is laid out exactly as the executor would run
 * it (ps_iter_apply, the box functions of iter_impl.h), and its cost is an
 * estimate of the time, in seconds, of one execute:
 *   t_far   bytes between the level holding the grid (L3 when both buffers
 *           of every array fit it, else memory) and the cores: step by step
 *           every step reads and writes the grid; a time tile reads its
 *           input region once per band and writes what it owns once (the
 *           live-in/out term, 002's t1, times the grid's bandwidth);
 *   t_comp  the point updates actually computed (needed + redundant, 002's
 *           overlap term t3) at the row kernels' rate, plus a fixed cost per
 *           row and per task;
 *   t_near  when a task's working set (its scratch, or a split component's
 *           rows in the two buffers) outgrows L2, the share L2 cannot hold
 *           streams through the level that holds it on every step;
 *   balance tasks per band (per split phase) over the threads, 002's t2:
 *           a last partial round leaves threads idle;
 *   t_sync  a barrier per band (per phase), and the wait at it: with
 *           dynamic scheduling the threads finish their last tasks up to a
 *           task apart (tasks differ, a core is briefly taken away), half a
 *           task's time on average, so a few large tasks per thread scale
 *           worse than many small ones; not for tasks of a few tens of
 *           microseconds, which finish together.
 *   cost = t_far + (t_comp + t_near) / balance + t_sync, where a task's
 *   working set lies in L3: t_far + max(t_comp, t_near) / balance + t_sync
 *   (the hardware prefetchers stream L3 lines while the row kernels work;
 *   memory traffic they do not hide).
 * The rate of the row kernels is the machine model's measured row stencil
 * (ps_machine.stencil_gflops) with the task's rows in L1 or in L2: one load
 * per multiply-add, so the load ports and the split loads of unaligned taps
 * set it, and what L1 residence is worth differs from core to core. */
#include "iterated/iter_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fusion/fusion.h"
#include "plan/context_impl.h"

/* Fixed costs per row-kernel call (pointer set-up of every tap) and per
 * task (index decoding, scratch views, dynamic scheduling), and per
 * barrier of the threads, in seconds: a few hundred cycles, a microsecond,
 * a few microseconds. */
#define COST_ROW 4e-8
#define COST_TASK 1e-6
#define COST_BARRIER 3e-6
/* Tasks shorter than this finish together when their threads start
 * together (the barrier before them): what desynchronizes threads (a core
 * taken away for a while) rarely falls inside one. */
#define TASK_DESYNC 5e-5

typedef struct model {
    ps_cost_model cm;
    double l3;              /* bytes, shared */
    double bw_l3, bw_l2;    /* bytes/s, all threads */
    double stencil_l1, stencil_l2; /* flops/s of the row kernels, all threads: rows in L1, in L2 */
    int threads;
} model;

static double level_bw(const ps_machine *m, int level)
{
    for (int i = 0; i < m->n_levels; i++)
        if (m->levels[i].level == level && m->levels[i].bandwidth_gbs > 0) return m->levels[i].bandwidth_gbs * 1e9;
    return 0;
}

static void model_init(model *M, const ps_iter_plan *pl)
{
    const ps_machine *m = &pl->ctx->machine;
    ps_cost_model_init(&M->cm, m, pl->nthreads);
    M->threads = M->cm.cores;
    M->l3 = (double)ps_machine_cache_bytes(m, 3);
    double b3 = level_bw(m, 3), b2 = level_bw(m, 2);
    M->bw_l3 = (b3 > 0 ? b3 : 3.0 * M->cm.bandwidth / M->cm.cores) * M->cm.cores;
    M->bw_l2 = (b2 > 0 ? b2 : 2.0 * M->bw_l3 / M->cm.cores) * M->cm.cores;
    M->stencil_l1 = ps_machine_stencil_rate(m, 1) * 1e9 * M->cm.cores;
    M->stencil_l2 = ps_machine_stencil_rate(m, 0) * 1e9 * M->cm.cores;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Sum over the tiles of dimension d of the interval length at band step t
 * (and the number of non-empty intervals, the largest one): explicit for
 * the tiles near the ends, whose intervals the grid's edges clip, the
 * others alike (all but the last tile have the nominal size). kind: 0
 * overlap/full (task_range's intervals without the periodic chain cut, which
 * only shifts them), 1 split uprights, 2 split inverted. */
static void dim_sum(const ps_it_dim *D, int kind, int64_t t, int64_t tau, int64_t edge, double *sum, double *count,
                    double *widest)
{
    int64_t n = kind == 2 ? ps_it_n_inverted(D) : D->ntiles;
    *sum = *count = *widest = 0;
    if (n <= 0) return;
    int64_t e = edge < n / 2 ? edge : n / 2;
    for (int64_t k = 0; k < n; k++) {
        int64_t kk = k;
        double mult = 1;
        if (k == e && n - 2 * e > 0) {
            mult = (double)(n - 2 * e);  /* the middle tiles, all like tile e */
            k = n - e - 1;
        }
        int64_t a, b;
        if (kind == 0) ps_it_ov_range(D, kk, t, tau, &a, &b);
        else if (kind == 1) ps_it_up_range(D, kk, t, &a, &b);
        else ps_it_inv_range(D, kk, t, &a, &b);
        if (b > a) {
            *sum += mult * (double)(b - a);
            *count += mult;
            if ((double)(b - a) > *widest) *widest = (double)(b - a);
        }
    }
}

/* Estimates candidate ev (its tiling and sizes set) on pl's layout, filling
 * the rest of ev; INFINITY when the layout is not legal (split uprights too
 * narrow for the band). */
static void estimate(const ps_iter_plan *base, const ps_it_deps *dp, const model *M, ps_it_eval *ev)
{
    ps_iter_plan pl = *base;
    ps_iter_apply(&pl, dp, ev);
    const int nd = pl.nd, xd = nd - 1, na = pl.n_arrays;
    const int64_t T = pl.steps;
    ev->cost = INFINITY;
    double taps = 0;
    for (int a = 0; a < na; a++) taps += pl.upd[a].n_taps;
    double upd_pts = 1;
    for (int d = 0; d < nd; d++) upd_pts *= (double)(pl.dim[d].hi - pl.dim[d].lo);
    /* legality of split widths: uprights at least 2 s tau (s tau at a
     * fixed edge) wide */
    if (ev->tiling == PS_ITER_TILING_SPLIT)
        for (int d = 0; d < nd; d++) {
            const ps_it_dim *D = &pl.dim[d];
            if (D->kind != PS_ITD_SPLIT) continue;
            for (int64_t k = 0; k < D->ntiles; k++) {
                int64_t a, b;
                ps_it_up_range(D, k, pl.band, &a, &b);
                if (b < a) return;
            }
        }
    const int64_t nb_full = T / pl.band, last = T % pl.band;
    double bytes_grid = 2.0 * na * (double)pl.npts * 4.0;
    ev->far_level = bytes_grid <= 0.8 * M->l3 ? 3 : 4;
    double bw_far = ev->far_level == 3 ? M->bw_l3 : M->cm.bandwidth;
    /* A task's working set: its boxes in both buffers (scratch, or a split
     * component's cells of the grid). */
    double ws = 0, rows_win = 0;
    int64_t r_row = nd >= 2 ? pl.radius[xd - 1] : 0;
    {
        double e = 1;
        for (int d = 0; d < nd; d++) {
            const ps_it_dim *D = &pl.dim[d];
            double w;
            if (ev->tiling == PS_ITER_TILING_SPLIT) w = D->kind == PS_ITD_SPLIT ? (double)D->tile + 2.0 * pl.radius[d] : (double)D->n;
            else if (ev->tiling == PS_ITER_TILING_STEP) w = d == xd ? (double)D->n : (double)(2 * pl.radius[d] + 1);
            else if (d == pl.skew_dim) w = (double)(pl.skew_w + pl.skew_s * pl.band + D->el + D->er + 2 * pl.radius[d]);
            else w = D->kind == PS_ITD_FULL ? (double)D->n : (double)(D->tile + pl.band * (D->el + D->er));
            if (w > (double)D->n && !D->periodic) w = (double)D->n;
            e *= w;
            if (d == xd) rows_win = w * (double)(2 * r_row + 1) * na * 4.0;
        }
        ws = e * 2.0 * na * 4.0;
    }
    ev->ws_bytes = ws;
    ev->ws_level = ws <= (double)M->cm.cache[0] ? 1 : ws <= (double)M->cm.cache[1] ? 2 : ws * M->threads <= 0.8 * M->l3 ? 3 : 4;
    /* A task runs at the row stencil's rate with its rows in L1 or
     * streaming through L2. Step by step streams from memory or L3 and is
     * slower still when the rows a step reads do not stay in L1 between one
     * output row and the next. */
    double rate = ev->tiling == PS_ITER_TILING_STEP ? (rows_win <= 0.5 * (double)M->cm.cache[0] ? 1.0 : 0.7) * M->cm.flops
                  : ev->ws_level == 1 ? M->stencil_l1 : M->stencil_l2;
    double t_far = 0, t_comp = 0, t_near = 0, t_sync = 0, comp_all = 0, far_all = 0, bal_w = 0, tasks_band = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t tau = pass == 0 ? pl.band : last, nb = pass == 0 ? nb_full : (last > 0);
        if (tau <= 0 || nb <= 0) continue;
        double pts = 0, rows = 0, pts0 = 1;
        int64_t edge[PS_IT_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            const ps_it_dim *D = &pl.dim[d];
            int64_t sl = D->el > D->er ? D->el : D->er;
            if (D->s > sl) sl = D->s;
            edge[d] = 2 + ceil_div(tau * sl + 1, D->tile > 0 ? D->tile : 1);
        }
        for (int64_t t = 0; t <= tau; t++) {
            double prod = 1, prod_rows = 1;
            for (int d = 0; d < nd; d++) {
                const ps_it_dim *D = &pl.dim[d];
                double s, c, w;
                if (ev->tiling == PS_ITER_TILING_SPLIT && D->kind == PS_ITD_SPLIT) {
                    double s2, c2, w2;
                    dim_sum(D, 1, t, tau, edge[d], &s, &c, &w);
                    dim_sum(D, 2, t, tau, edge[d], &s2, &c2, &w2);
                    s += s2;
                    c += c2;
                } else {
                    dim_sum(D, 0, t, tau, edge[d], &s, &c, &w);
                }
                prod *= s;
                if (d < xd) prod_rows *= s;
                else {
                    double segs = c;
                    if (pl.skew_dim == xd) segs = c * fmax(1.0, ceil(s / fmax(c, 1.0) / (double)pl.skew_w));
                    prod_rows *= segs;
                }
            }
            if (t == 0) pts0 = prod;
            else {
                pts += prod;
                rows += prod_rows;
            }
        }
        double comp = pts * na;
        double flops = pts * taps * 2.0;
        double far, near = 0;
        /* Past L2, the share of a task's working set that L2 cannot hold
         * streams through the level holding it on every step; the rest
         * stays in L2. */
        const double past_l2 = ev->ws_level >= 3 ? 1.0 - fmin(1.0, (double)M->cm.cache[1] / ws) : 0.0;
        if (ev->tiling == PS_ITER_TILING_STEP) {
            far = 12.0 * comp;
        } else if (ev->tiling == PS_ITER_TILING_SPLIT) {
            /* a component's cells: from the grid's level once per band while
             * its working set fits the L3 share, else on every step */
            far = ev->ws_level <= 3 ? 12.0 * upd_pts * na : 12.0 * comp;
            if (ev->ws_level == 3) near = 12.0 * comp * past_l2;
            /* In phases the inverted components run after every upright
             * one, so the cells they cover (2 s tau + 2 r around each tile
             * boundary) come from the grid's level a second time; the
             * pipelined order finds them in cache. */
            if (pl.split_pipe < 0 && ev->ws_level <= 3) {
                double kept = 1;
                for (int d = 0; d < nd; d++) {
                    const ps_it_dim *D = &pl.dim[d];
                    if (D->kind == PS_ITD_SPLIT)
                        kept *= 1.0 - fmin(1.0, (double)(2 * D->s * tau + 2 * pl.radius[d]) / (double)D->tile);
                }
                far *= 2.0 - kept;
            }
        } else {
            far = na * (4.0 * pts0 + 8.0 * upd_pts);
            if (ev->ws_level >= 3) near = 12.0 * comp * past_l2;
        }
        double tasks = pl.tiling == PS_ITER_TILING_SPLIT ? 0 : (double)pl.ov_tasks, bal = 1;
        int phases = 1;
        if (pl.tiling == PS_ITER_TILING_SPLIT) {
            phases = pl.n_phases;
            double wsum = 0, bsum = 0;
            for (int p = 0; p < pl.n_phases; p++) {
                double n = (double)pl.phase[p].tasks;
                tasks += n;
                double b = n / (ceil(n / M->threads) * M->threads);
                wsum += n;
                bsum += n * b;
            }
            bal = wsum > 0 ? bsum / wsum : 1;
        } else {
            bal = tasks / (ceil(tasks / M->threads) * M->threads);
        }
        double bw_near = ev->ws_level == 3 ? M->bw_l3 : M->cm.bandwidth;
        t_far += nb * far / bw_far;
        const double comp_band = (flops / rate + (rows * na * COST_ROW + tasks * COST_TASK) / M->threads) / bal;
        t_comp += nb * comp_band;
        const double task_s = tasks > 0 ? comp_band * M->threads / tasks : 0;
        if (M->threads > 1 && task_s > TASK_DESYNC) t_sync += nb * phases * 0.5 * task_s;
        t_near += nb * near / bw_near / bal;
        t_sync += nb * phases * COST_BARRIER;
        comp_all += nb * comp;
        far_all += nb * far;
        bal_w = bal;
        tasks_band = tasks;
        ev->phases = phases;
    }
    ev->t_far = t_far;
    ev->t_comp = t_comp;
    ev->t_near = t_near;
    ev->t_sync = t_sync;
    ev->computed = comp_all;
    ev->needed = upd_pts * na * (double)T;
    ev->far_bytes = far_all;
    ev->balance = bal_w;
    ev->tasks = tasks_band;
    /* an L3 stream overlaps the kernels; memory traffic does not (top of file) */
    ev->cost = t_far + (ev->ws_level == 3 ? fmax(t_comp, t_near) : t_comp + t_near) + t_sync;
}

void ps_iter_apply(ps_iter_plan *pl, const ps_it_deps *dp, const ps_it_eval *ev)
{
    const int nd = pl->nd;
    pl->tiling = ev->tiling;
    pl->band = ev->band > 0 ? ev->band : 1;
    pl->n_bands = pl->steps > 0 ? ceil_div(pl->steps, pl->band) : 0;
    pl->skew_dim = -1;
    pl->skew_w = pl->skew_s = pl->skew_hs = 0;
    pl->ov_tasks = 1;
    for (int d = 0; d < nd; d++) {
        ps_it_dim *D = &pl->dim[d];
        int64_t len = D->hi - D->lo, t = ev->tile[d];
        D->el = D->er = D->s = 0;
        if (t <= 0 || t >= len) {
            D->kind = PS_ITD_FULL;
            D->tile = len;
            D->ntiles = 1;
        } else {
            D->kind = ev->tiling == PS_ITER_TILING_SPLIT ? PS_ITD_SPLIT : PS_ITD_OVERLAP;
            D->tile = t;
            D->ntiles = (len + t / 2) / t;
            if (D->ntiles < 1) D->ntiles = 1;
            if (D->kind == PS_ITD_SPLIT) D->s = dp->split_s[d];
            else if (ev->tiling != PS_ITER_TILING_STEP) {
                D->el = dp->el[d];
                D->er = dp->er[d];
            }
        }
        pl->ov_tasks *= D->ntiles;
        /* scratch: the widest tile's trapezoid at the band's start */
        int64_t widest = D->ntiles > 1 ? len - (D->ntiles - 1) * D->tile : len;
        if (widest < D->tile) widest = D->tile;
        D->scr_ext = D->kind == PS_ITD_FULL ? D->n : widest + pl->band * (D->el + D->er) + (D->periodic ? 0 : 2 * pl->radius[d]);
        if (!D->periodic && D->scr_ext > D->n) D->scr_ext = D->n;
        /* rows: a whole number of vectors, from the aligned start below
         * the trapezoid's (iter_exec.c) */
        if (d == nd - 1) D->scr_ext = (D->scr_ext + (D->kind == PS_ITD_FULL ? 0 : 15) + 15) / 16 * 16;
    }
    if (ev->tiling == PS_ITER_TILING_HYBRID) {
        pl->skew_dim = nd >= 2 ? 1 : 0;
        pl->skew_w = ev->skew_width > 0 ? ev->skew_width : 1;
        pl->skew_s = dp->skew_s[pl->skew_dim];
        pl->skew_hs = dp->split_s[pl->skew_dim];
    }
    pl->n_phases = 0;
    if (ev->tiling == PS_ITER_TILING_SPLIT) {
        /* Component order from isl's findings: a component follows every
         * component it reads, i.e. one differing only in dimensions where it
         * is inverted and the other upright, along which inverted tiles read
         * uprights (split_ui). Its phase is the longest such chain before
         * it: the number of its inverted dimensions when every split
         * dimension has such reads, so components with as many inverted
         * dimensions run together (d + 1 phases for 2^d components). */
        int split_mask = 0, phase_of[1 << PS_IT_MAX_DIMS];
        for (int d = 0; d < nd; d++)
            if (pl->dim[d].kind == PS_ITD_SPLIT) split_mask |= 1 << d;
        int n_masks = 1 << nd, max_phase = 0;
        for (int m = 0; m < n_masks; m++) phase_of[m] = -1;
        for (int pc = 0; pc <= nd; pc++)
            for (int m = 0; m < n_masks; m++) {
                if ((m & ~split_mask) || __builtin_popcount((unsigned)m) != pc) continue;
                int ph = 0;
                for (int m2 = 0; m2 < n_masks; m2++) {
                    if (m2 == m || (m2 & ~split_mask) || (m2 & ~m) || phase_of[m2] < 0) continue;
                    int reads = 1;
                    for (int d = 0; d < nd; d++)
                        if (((m >> d) & 1) && !((m2 >> d) & 1) && !dp->split_ui[d]) reads = 0;
                    if (reads && phase_of[m2] + 1 > ph) ph = phase_of[m2] + 1;
                }
                phase_of[m] = ph;
                if (ph > max_phase) max_phase = ph;
            }
        for (int p = 0; p <= max_phase; p++) {
            ps_it_phase *P = &pl->phase[pl->n_phases];
            memset(P, 0, sizeof *P);
            for (int m = 0; m < n_masks; m++) {
                if (phase_of[m] != p) continue;
                int64_t cnt = 1;
                for (int d = 0; d < nd; d++)
                    if (pl->dim[d].kind == PS_ITD_SPLIT) cnt *= (m >> d) & 1 ? ps_it_n_inverted(&pl->dim[d]) : pl->dim[d].ntiles;
                if (cnt <= 0) continue;
                P->mask[P->n_masks] = m;
                P->count[P->n_masks++] = cnt;
                P->tasks += cnt;
            }
            if (P->n_masks) pl->n_phases++;
        }
    }
    /* The pipelined order blocks the first tiled dimension's tiles among
     * the threads: with fewer than two tiles per thread no inverted
     * component would lie inside a block. */
    pl->split_pipe = -1;
    if (ev->tiling == PS_ITER_TILING_SPLIT && pl->opts.split_order != PS_ITER_SPLIT_PHASES)
        for (int d = 0; d < nd; d++)
            if (pl->dim[d].kind == PS_ITD_SPLIT) {
                if (pl->dim[d].ntiles >= 2 * (int64_t)pl->nthreads) pl->split_pipe = d;
                break;
            }
}

/* ---------------------------------------------------------- the search */

static int n_pow2(int64_t lo, int64_t len, int64_t *out, int max)
{
    int n = 0;
    for (int64_t v = lo; v < len && n < max - 1; v *= 2) out[n++] = v;
    out[n++] = len;   /* untiled */
    return n;
}

static const char *tiling_name(ps_iter_tiling t)
{
    static const char *const names[] = {"auto", "step", "overlap", "split", "hybrid"};
    return (unsigned)t < 5 ? names[t] : "?";
}

static void eval_text(char *buf, size_t len, const ps_iter_plan *pl, const ps_it_eval *ev)
{
    int o = snprintf(buf, len, "%s: %.4g ms, band %lld, tile", tiling_name(ev->tiling), ev->cost * 1e3, (long long)ev->band);
    for (int d = 0; d < pl->nd && o > 0 && (size_t)o < len; d++)
        o += snprintf(buf + o, len - (size_t)o, "%s%lld", d ? " x " : " ", (long long)ev->tile[d]);
    if (ev->tiling == PS_ITER_TILING_HYBRID && o > 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, ", skewed tiles %lld wide", (long long)ev->skew_width);
    if (o > 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o,
                 ", redundant %.1f%%, far traffic %.3g B/point (%s), task working set %.0f KiB (%s), balance %.0f%%, "
                 "%.0f tasks x %d phase%s/band [far %.3g + compute %.3g + near %.3g + sync %.3g ms]",
                 ev->needed > 0 ? 100.0 * (ev->computed / ev->needed - 1) : 0.0, ev->computed > 0 ? ev->far_bytes / ev->computed : 0.0,
                 ev->far_level == 3 ? "L3" : "memory", ev->ws_bytes / 1024, ev->ws_level == 1 ? "L1" : ev->ws_level == 2 ? "L2" : ev->ws_level == 3 ? "L3" : "memory",
                 100 * ev->balance, ev->tasks, ev->phases, ev->phases == 1 ? "" : "s", ev->t_far * 1e3, ev->t_comp * 1e3, ev->t_near * 1e3,
                 ev->t_sync * 1e3);
}

ps_status ps_iter_choose(const ps_iter_plan *pl, const ps_it_deps *dp, const ps_iter_options *o, ps_it_eval *best,
                         char **why)
{
    static const char who[] = "ps_iter_plan_create";
    model M;
    model_init(&M, pl);
    const int nd = pl->nd;
    int64_t len[PS_IT_MAX_DIMS];
    for (int d = 0; d < nd; d++) len[d] = pl->dim[d].hi - pl->dim[d].lo;
    /* candidate values */
    int64_t bands[16];
    int nbands = 0;
    if (o->band > 0) bands[nbands++] = o->band > pl->steps && pl->steps > 0 ? pl->steps : o->band;
    else if (pl->steps < 2) bands[nbands++] = 1;
    else {
        for (int64_t b = 2; b <= 64 && b <= pl->steps; b *= 2) bands[nbands++] = b;
        if (pl->steps > 2 && pl->steps < 64 && (pl->steps & (pl->steps - 1))) bands[nbands++] = pl->steps;
    }
    int64_t tiles[PS_IT_MAX_DIMS][24];
    int ntile[PS_IT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        if (o->tile[d] > 0) {
            tiles[d][0] = o->tile[d] < len[d] ? o->tile[d] : len[d];
            ntile[d] = 1;
        } else {
            ntile[d] = n_pow2(d == nd - 1 && nd > 1 ? 64 : 8, len[d], tiles[d], 24);
        }
    }
    ps_it_eval kind_best[5];
    for (int k = 0; k < 5; k++) {
        memset(&kind_best[k], 0, sizeof kind_best[k]);
        kind_best[k].cost = INFINITY;
        kind_best[k].tiling = (ps_iter_tiling)k;
    }
    ps_iter_tiling first = o->tiling == PS_ITER_TILING_AUTO ? PS_ITER_TILING_STEP : o->tiling;
    ps_iter_tiling lastk = o->tiling == PS_ITER_TILING_AUTO ? PS_ITER_TILING_HYBRID : o->tiling;
    for (int kind = first; kind <= (int)lastk; kind++) {
        ps_it_eval c;
        memset(&c, 0, sizeof c);
        c.tiling = (ps_iter_tiling)kind;
        ps_it_eval *kb = &kind_best[kind];
#define TRY()                                             \
    do {                                                  \
        estimate(pl, dp, &M, &c);                         \
        if (c.cost < kb->cost) *kb = c;                   \
    } while (0)
        if (kind == PS_ITER_TILING_STEP) {
            c.band = 1;
            /* dimension 0 cut into row (plane) blocks for the threads */
            for (int i = 0; i < ntile[0]; i++) {
                for (int d = 0; d < nd; d++) c.tile[d] = len[d];
                c.tile[0] = tiles[0][i];
                TRY();
            }
            continue;
        }
        for (int bi = 0; bi < nbands; bi++) {
            c.band = bands[bi];
            if (kind == PS_ITER_TILING_HYBRID) {
                int j = nd >= 2 ? 1 : 0;
                int64_t ws[24];
                int nw = 0;
                if (o->skew_width > 0) ws[nw++] = o->skew_width;
                else
                    for (int64_t w = 16; w <= len[j] && nw < 24; w *= 2) ws[nw++] = w;
                if (!nw) ws[nw++] = len[j];
                for (int i = 0; i < ntile[0]; i++)
                    for (int w = 0; w < nw; w++) {
                        for (int d = 0; d < nd; d++) c.tile[d] = len[d];
                        c.tile[0] = tiles[0][i];
                        c.skew_width = ws[w];
                        TRY();
                    }
                continue;
            }
            int idx[PS_IT_MAX_DIMS] = {0, 0, 0};
            for (;;) {
                for (int d = 0; d < nd; d++) c.tile[d] = tiles[d][idx[d]];
                TRY();
                int d = nd - 1;
                for (; d >= 0; d--) {
                    if (++idx[d] < ntile[d]) break;
                    idx[d] = 0;
                }
                if (d < 0) break;
            }
        }
#undef TRY
    }
    /* the choice: cheapest over the kinds considered */
    int pick = -1;
    for (int k = 1; k < 5; k++)
        if (isfinite(kind_best[k].cost) && (pick < 0 || kind_best[k].cost < kind_best[pick].cost)) pick = k;
    size_t cap = 4096, used = 0;
    char *text = malloc(cap);
    if (!text) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    text[0] = '\0';
    for (int k = 1; k < 5; k++) {
        if (k < (int)first || k > (int)lastk) continue;
        char line[768];
        if (isfinite(kind_best[k].cost)) eval_text(line, sizeof line, pl, &kind_best[k]);
        else
            snprintf(line, sizeof line, "%s: no legal layout%s", tiling_name((ps_iter_tiling)k),
                     k == PS_ITER_TILING_SPLIT ? " (uprights must be at least 2 x slope x band wide)"
                     : "");
        used += (size_t)snprintf(text + used, cap - used, "  %s%s\n", k == pick ? "* " : "  ", line);
        if (used >= cap) used = cap - 1;
    }
    *why = text;
    if (pick < 0) {
        return ps_error(PS_ERR_INVALID_ARG, "%s: no legal %s layout for these sizes%s", who, tiling_name(o->tiling),
                        o->tiling == PS_ITER_TILING_SPLIT ? " (split uprights must be at least 2 x slope x band wide)" : "");
    }
    *best = kind_best[pick];
    return PS_SUCCESS;
}
