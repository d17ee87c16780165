/* Brute-force reference for the analysis tests: runs the loop nest the
 * executor runs (lib/execution/run.c: band split over threads, tile walk,
 * conv segments (groups of filter columns, build.c) / C parts / batch r, s,
 * c-block, then ow, c, k — or, with few input channels (merged taps), per
 * filter row ow, s, c, k, without the executor's column phases, as the model
 * has it; gemm parts,
 * then j, kk, i), records every element-level iteration and its accesses,
 * and computes the dependences and working sets of docs/analysis.md by
 * walking the trace. Independent of lib/analysis (it uses the public
 * headers, the schedule struct and the executor's canonical conv shape,
 * ps_conv_shape_of). Small problems only. */
#ifndef PS_TESTS_ANALYSIS_SIM_H
#define PS_TESTS_ANALYSIS_SIM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "descriptors/shape.h"
#include "polysci/polysci.h"
#include "schedule/schedule_impl.h"

enum { SIM_IN = 0, SIM_WT = 1, SIM_OUT = 2 };

typedef struct sim_inst {
    int thread;
    int64_t band;          /* collapsed band iteration */
    int64_t x[7];          /* n, k, oh, ow, c, r, s */
    int64_t e[3];          /* element ids of IN, WT, OUT (global ids, disjoint ranges) */
} sim_inst;

typedef struct sim_dep {
    int exists, shared_only;
    int src_not_first;     /* the source is not the stream's first iteration */
    int64_t src[7], tmin[7], tmax[7]; /* coordinates */
    int64_t ws_min, ws_max, ws_min_arr[3], ws_max_arr[3];
    int64_t ws_min_shared, ws_max_shared;
} sim_dep;

typedef struct sim {
    /* geometry */
    int op; /* 0 conv, 1 gemm, 2 matmul */
    int64_t N, C, K, H, W, R, S, OH, OW, sh, sw, pt, pl, dh, dw;
    int64_t m, n, k, batch;
    int merge_taps; /* build.c: one C block, ps_conv_merges_taps: one call per filter row over (s, c) */
    int64_t ext[PS_DIM_COUNT];
    int nloops, npar;
    ps_loop loops[PS_SCHEDULE_MAX_LOOPS];
    int nthreads;
    int64_t trips[PS_SCHEDULE_MAX_LOOPS], T;
    char order[4];
    /* trace */
    sim_inst *in;
    int64_t nin, cap;
    int64_t nelem;
} sim;

static inline int64_t sim_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t sim_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t sim_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t sim_fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static inline void sim_emit(sim *S, int th, int64_t band, int64_t n, int64_t kk, int64_t oh, int64_t ow, int64_t c, int64_t r,
                     int64_t s)
{
    if (S->nin == S->cap) {
        S->cap = S->cap ? S->cap * 2 : 4096;
        S->in = realloc(S->in, (size_t)S->cap * sizeof *S->in);
        if (!S->in) abort();
    }
    sim_inst *I = &S->in[S->nin++];
    I->thread = th;
    I->band = band;
    int64_t x[7] = {n, kk, oh, ow, c, r, s};
    memcpy(I->x, x, sizeof x);
    int64_t ih = oh * S->sh - S->pt + r * S->dh, iw = ow * S->sw - S->pl + s * S->dw;
    int64_t nI = S->N * S->H * S->W * S->C, nW = S->K * S->C * S->R * S->S;
    I->e[SIM_IN] = ((n * S->H + ih) * S->W + iw) * S->C + c;
    I->e[SIM_WT] = nI + ((kk * S->C + c) * S->R + r) * S->S + s;
    I->e[SIM_OUT] = nI + nW + ((n * S->OH + oh) * S->OW + ow) * S->K + kk;
}

/* One microkernel call at tile point idx (as run.c's conv_tile / gemm_tile). */
static inline void sim_tile(sim *S, int th, int64_t band, const int64_t idx[PS_DIM_COUNT])
{
    const int64_t kb = idx[PS_DIM_K], owb = idx[PS_DIM_OW], cc = idx[PS_DIM_C];
    const int64_t kblocks = sim_cdiv(S->C, S->k), kfull = S->C / S->k;
    const int64_t cb0 = cc * S->batch, cb1 = sim_min(cb0 + S->batch, kblocks);
    const int64_t k0 = kb * S->m, k1 = sim_min(k0 + S->m, S->K);
    /* Parts: full blocks first, then the remainder block. */
    int64_t plo[2], phi[2];
    plo[0] = cb0;
    phi[0] = sim_min(cb1, kfull);
    plo[1] = kfull;
    phi[1] = (S->C % S->k && cb1 == kblocks) ? kblocks : kfull;
    if (S->op == 0) {
        const int64_t n = idx[PS_DIM_N], oh = idx[PS_DIM_OH];
        const int64_t ih0 = oh * S->sh - S->pt;
        int64_t rlo = sim_max(0, sim_cdiv(sim_max(0, -ih0), S->dh));
        int64_t rhi = sim_min(S->R, sim_fdiv(S->H - 1 - ih0, S->dh) + 1);
        if (rhi < rlo) rhi = rlo;
        /* Segments of the ow block (build.c): runs of filter columns valid on
         * the same output columns, the one spanning the block first. */
        const int64_t a0 = owb * S->n, a1 = sim_min(a0 + S->n, S->OW);
        int64_t g_ow0[16], g_w[16], g_slo[16], g_shi[16];
        int ns = 0;
        for (int64_t s = 0; s < S->S; s++) {
            int64_t lo = sim_max(a0, sim_cdiv(sim_max(0, S->pl - s * S->dw), S->sw));
            int64_t hi = sim_min(a1, sim_fdiv(S->W - 1 + S->pl - s * S->dw, S->sw) + 1);
            if (hi <= lo) continue;
            if (ns > 0 && g_shi[ns - 1] == s && g_ow0[ns - 1] == lo && g_w[ns - 1] == hi - lo) {
                g_shi[ns - 1] = s + 1;
            } else {
                g_ow0[ns] = lo;
                g_w[ns] = hi - lo;
                g_slo[ns] = s;
                g_shi[ns] = s + 1;
                ns++;
            }
        }
        for (int i = 0; i < ns; i++) {
            if (g_ow0[i] == a0 && g_w[i] == a1 - a0) {
                int64_t t0 = g_ow0[i], t1 = g_w[i], t2 = g_slo[i], t3 = g_shi[i];
                for (int j = i; j > 0; j--) {
                    g_ow0[j] = g_ow0[j - 1];
                    g_w[j] = g_w[j - 1];
                    g_slo[j] = g_slo[j - 1];
                    g_shi[j] = g_shi[j - 1];
                }
                g_ow0[0] = t0;
                g_w[0] = t1;
                g_slo[0] = t2;
                g_shi[0] = t3;
                break;
            }
        }
        if (S->merge_taps) { /* per filter row one call over (s, c) */
            for (int g = 0; g < ns && rhi > rlo; g++)
                for (int64_t r = rlo; r < rhi; r++)
                    for (int64_t o = g_ow0[g]; o < g_ow0[g] + g_w[g]; o++)
                        for (int64_t s = g_slo[g]; s < g_shi[g]; s++)
                            for (int64_t c = 0; c < S->C; c++)
                                for (int64_t kk = k0; kk < k1; kk++) sim_emit(S, th, band, n, kk, oh, o, c, r, s);
            return;
        }
        for (int g = 0; g < ns && rhi > rlo; g++)
            for (int part = 0; part < 2; part++)
                for (int64_t r = rlo; r < rhi; r++)
                    for (int64_t s = g_slo[g]; s < g_shi[g]; s++)
                        for (int64_t cb = plo[part]; cb < phi[part]; cb++)
                            for (int64_t o = g_ow0[g]; o < g_ow0[g] + g_w[g]; o++)
                                for (int64_t c = cb * S->k; c < sim_min(cb * S->k + S->k, S->C); c++)
                                    for (int64_t kk = k0; kk < k1; kk++) sim_emit(S, th, band, n, kk, oh, o, c, r, s);
    } else {
        const int64_t j0 = owb * S->n, j1 = sim_min(j0 + S->n, S->OW);
        for (int part = 0; part < 2; part++) {
            if (phi[part] <= plo[part]) continue;
            for (int64_t j = j0; j < j1; j++)
                for (int64_t c = plo[part] * S->k; c < sim_min(phi[part] * S->k, S->C); c++)
                    for (int64_t i = k0; i < k1; i++) sim_emit(S, th, band, 0, i, 0, j, c, 0, 0);
        }
    }
}

static inline void sim_walk(sim *S, int th, int64_t band, int li, int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT])
{
    if (li == S->nloops) {
        sim_tile(S, th, band, lo);
        return;
    }
    const ps_loop *l = &S->loops[li];
    const int d = l->dim;
    const int64_t plo = lo[d], phi = hi[d];
    for (int64_t x = plo; x < phi; x += l->tile) {
        lo[d] = x;
        hi[d] = sim_min(x + l->tile, phi);
        sim_walk(S, th, band, li + 1, lo, hi);
    }
    lo[d] = plo;
    hi[d] = phi;
}

static inline void sim_chunk(const sim *S, int t, int64_t *b, int64_t *e)
{
    *b = S->T * t / S->nthreads;
    *e = S->T * (t + 1) / S->nthreads;
}

static inline void sim_decode(const sim *S, int64_t g, int64_t *idx)
{
    for (int i = S->npar - 1; i >= 0; i--) {
        idx[i] = g % S->trips[i];
        g /= S->trips[i];
    }
}

/* Band iteration g is not empty. */
static inline int sim_band_nonempty(const sim *S, int64_t g)
{
    int64_t idx[PS_SCHEDULE_MAX_LOOPS], lo[PS_DIM_COUNT], hi[PS_DIM_COUNT];
    sim_decode(S, g, idx);
    for (int d = 0; d < PS_DIM_COUNT; d++) {
        lo[d] = 0;
        hi[d] = S->ext[d];
    }
    for (int i = 0; i < S->npar; i++) {
        const ps_loop *l = &S->loops[i];
        int64_t x = lo[l->dim] + idx[i] * l->tile;
        if (x >= hi[l->dim]) return 0;
        lo[l->dim] = x;
        hi[l->dim] = sim_min(x + l->tile, hi[l->dim]);
    }
    return 1;
}

static inline void sim_run(sim *S)
{
    if (S->op == 2) {
        int64_t v[3];
        int64_t ext[3];
        for (int i = 0; i < 3; i++) ext[i] = S->order[i] == 'i' ? S->K : S->order[i] == 'j' ? S->OW : S->C;
        for (v[0] = 0; v[0] < ext[0]; v[0]++)
            for (v[1] = 0; v[1] < ext[1]; v[1]++)
                for (v[2] = 0; v[2] < ext[2]; v[2]++) {
                    int64_t i = 0, j = 0, k = 0;
                    for (int q = 0; q < 3; q++) {
                        if (S->order[q] == 'i') i = v[q];
                        else if (S->order[q] == 'j') j = v[q];
                        else k = v[q];
                    }
                    sim_emit(S, 0, 0, 0, i, 0, j, k, 0, 0);
                }
        return;
    }
    /* Trip counts over full parent tiles, as run.c collapses the band. */
    int64_t parent[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) parent[d] = S->ext[d];
    S->T = 1;
    for (int i = 0; i < S->npar; i++) {
        S->trips[i] = (parent[S->loops[i].dim] + S->loops[i].tile - 1) / S->loops[i].tile;
        parent[S->loops[i].dim] = S->loops[i].tile;
        S->T *= S->trips[i];
    }
    for (int t = 0; t < S->nthreads; t++) {
        int64_t b, e;
        sim_chunk(S, t, &b, &e);
        for (int64_t g = b; g < e; g++) {
            int64_t idx[PS_SCHEDULE_MAX_LOOPS], lo[PS_DIM_COUNT], hi[PS_DIM_COUNT];
            sim_decode(S, g, idx);
            for (int d = 0; d < PS_DIM_COUNT; d++) {
                lo[d] = 0;
                hi[d] = S->ext[d];
            }
            int empty = 0;
            for (int i = 0; i < S->npar && !empty; i++) {
                const ps_loop *l = &S->loops[i];
                int64_t x = lo[l->dim] + idx[i] * l->tile;
                if (x >= hi[l->dim]) empty = 1;
                else {
                    lo[l->dim] = x;
                    hi[l->dim] = sim_min(x + l->tile, hi[l->dim]);
                }
            }
            if (!empty) sim_walk(S, t, g, S->npar, lo, hi);
        }
    }
}

/* The conv geometry is the executor's canonical view (ps_conv_shape_of:
 * e.g. 1x1 stride-1 unpadded convs as one row of H*W pixels). */
static inline void sim_init_conv(sim *S, const ps_conv_desc *d, const ps_schedule *sch, int nthreads)
{
    memset(S, 0, sizeof *S);
    S->op = 0;
    ps_conv_shape cs;
    ps_conv_shape_of(d, &cs);
    const ps_stage *sg = &sch->stages[0];
    S->merge_taps = ps_conv_merge_taps_view(&cs, sg->kernel.k); /* the executor reads the padded copy */
    S->N = cs.N; S->C = cs.C; S->K = cs.K; S->H = cs.H; S->W = cs.W; S->R = cs.R; S->S = cs.S;
    S->sh = cs.sh; S->sw = cs.sw; S->pt = cs.pt; S->pl = cs.pl;
    S->dh = cs.dh; S->dw = cs.dw;
    S->OH = cs.OH;
    S->OW = cs.OW;
    S->m = sg->kernel.m; S->n = sg->kernel.n; S->k = sg->kernel.k; S->batch = sg->kernel.batch;
    S->ext[PS_DIM_N] = S->N;
    S->ext[PS_DIM_K] = sim_cdiv(S->K, S->m);
    S->ext[PS_DIM_OH] = S->OH;
    S->ext[PS_DIM_OW] = sim_cdiv(S->OW, S->n);
    S->ext[PS_DIM_C] = sim_cdiv(sim_cdiv(S->C, S->k), S->batch);
    S->nloops = sg->n_loops;
    memcpy(S->loops, sg->loops, sizeof S->loops);
    while (S->npar < S->nloops && S->loops[S->npar].parallel) S->npar++;
    S->nthreads = nthreads < 1 ? 1 : nthreads;
}

/* Column-major C[M][N] += A[M][K] B[K][N] (no transposes). */
static inline void sim_init_gemm(sim *S, int64_t M, int64_t N, int64_t K, const ps_schedule *sch, int nthreads)
{
    memset(S, 0, sizeof *S);
    S->op = 1;
    S->N = 1; S->C = K; S->K = M; S->H = 1; S->W = N; S->R = 1; S->S = 1;
    S->sh = S->sw = S->dh = S->dw = 1;
    S->OH = 1; S->OW = N;
    const ps_stage *sg = &sch->stages[0];
    S->m = sg->kernel.m; S->n = sg->kernel.n; S->k = sg->kernel.k; S->batch = sg->kernel.batch;
    S->ext[PS_DIM_N] = 1;
    S->ext[PS_DIM_K] = sim_cdiv(M, S->m);
    S->ext[PS_DIM_OH] = 1;
    S->ext[PS_DIM_OW] = sim_cdiv(N, S->n);
    S->ext[PS_DIM_C] = sim_cdiv(sim_cdiv(K, S->k), S->batch);
    S->nloops = sg->n_loops;
    memcpy(S->loops, sg->loops, sizeof S->loops);
    while (S->npar < S->nloops && S->loops[S->npar].parallel) S->npar++;
    S->nthreads = nthreads < 1 ? 1 : nthreads;
}

static inline void sim_init_matmul(sim *S, int64_t M, int64_t N, int64_t K, const char *order)
{
    memset(S, 0, sizeof *S);
    S->op = 2;
    S->N = 1; S->C = K; S->K = M; S->H = 1; S->W = N; S->R = 1; S->S = 1;
    S->sh = S->sw = S->dh = S->dw = 1;
    S->OH = 1; S->OW = N;
    memcpy(S->order, order, 3);
    S->nthreads = 1;
    S->T = 1;
}

static inline void sim_free(sim *S)
{
    free(S->in);
    S->in = NULL;
}

/* Distinct elements per array over trace positions pos[a..b]. */
static inline void sim_ws(const sim *S, const int64_t *pos, int64_t a, int64_t b, int64_t *stamp, int64_t tag,
                   int64_t cnt[3])
{
    cnt[0] = cnt[1] = cnt[2] = 0;
    for (int64_t p = a; p <= b; p++) {
        const sim_inst *I = &S->in[pos[p]];
        for (int arr = 0; arr < 3; arr++) {
            if (stamp[I->e[arr]] != tag) {
                stamp[I->e[arr]] = tag;
                cnt[arr]++;
            }
        }
    }
}

static inline int sim_uses_dim(int arr, int d)
{
    switch (arr) {
    case SIM_IN: return d == PS_DIM_N || d == PS_DIM_OH || d == PS_DIM_OW || d == PS_DIM_C;
    case SIM_WT: return d == PS_DIM_K || d == PS_DIM_C;
    default: return d == PS_DIM_N || d == PS_DIM_K || d == PS_DIM_OH || d == PS_DIM_OW;
    }
}

/* Threads with distinct slices of array arr at relative band iteration rel. */
static inline int64_t sim_mult(const sim *S, int arr, int64_t rel)
{
    if (S->nthreads == 1 || S->npar == 0) return 1;
    int64_t keys[1024][PS_SCHEDULE_MAX_LOOPS];
    int nk = 0;
    for (int t = 0; t < S->nthreads && nk < 1024; t++) {
        int64_t b, e;
        sim_chunk(S, t, &b, &e);
        if (b + rel >= e || !sim_band_nonempty(S, b + rel)) continue;
        int64_t idx[PS_SCHEDULE_MAX_LOOPS];
        sim_decode(S, b + rel, idx);
        int dup = 0;
        for (int j = 0; j < nk && !dup; j++) {
            int same = 1;
            for (int l = 0; l < S->npar; l++)
                if (sim_uses_dim(arr, S->loops[l].dim) && keys[j][l] != idx[l]) same = 0;
            dup = same;
        }
        if (!dup) memcpy(keys[nk++], idx, sizeof keys[0]);
    }
    return nk > 0 ? nk : 1;
}

/* The dependences of docs/analysis.md, by brute force. */
static inline void sim_analyze(sim *S, sim_dep dep[3])
{
    memset(dep, 0, 3 * sizeof *dep);
    S->nin = 0;
    sim_run(S);
    const int64_t nI = S->N * S->H * S->W * S->C, nW = S->K * S->C * S->R * S->S;
    const int64_t nE = nI + nW + S->N * S->OH * S->OW * S->K;
    int rep = 0;
    for (int t = 0; t < S->nthreads; t++) {
        int64_t b, e;
        sim_chunk(S, t, &b, &e);
        if (e > b) {
            rep = t;
            break;
        }
    }
    int64_t rb, re;
    sim_chunk(S, rep, &rb, &re);
    /* Positions of the representative thread's stream; the others. */
    int64_t *pos = malloc((size_t)(S->nin + 1) * sizeof *pos), np = 0;
    int64_t *next = malloc((size_t)(S->nin + 1) * sizeof *next);
    int64_t *last = malloc((size_t)nE * sizeof *last);
    int64_t *stamp = malloc((size_t)nE * sizeof *stamp);
    for (int64_t i = 0; i < S->nin; i++)
        if (S->in[i].thread == rep) pos[np++] = i;
    for (int64_t i = 0; i < nE; i++) stamp[i] = -1;
    int64_t tag = 0;
    for (int arr = 0; arr < 3; arr++) {
        sim_dep *d = &dep[arr];
        /* next[p]: the next position with the same element (-1: none);
         * lastpos[e]: the last position of element e. */
        for (int64_t i = 0; i < nE; i++) last[i] = -1;
        int64_t *lastpos = malloc((size_t)nE * sizeof *lastpos);
        for (int64_t i = 0; i < nE; i++) lastpos[i] = -1;
        for (int64_t p = np - 1; p >= 0; p--) {
            int64_t e = S->in[pos[p]].e[arr];
            next[p] = last[e];
            last[e] = p;
            if (lastpos[e] < 0) lastpos[e] = p;
        }
        int64_t s = -1;
        for (int64_t p = 0; p < np && s < 0; p++)
            if (next[p] >= 0) s = p;
        if (s >= 0) {
            int64_t e = S->in[pos[s]].e[arr];
            int64_t t1 = next[s], t2 = lastpos[e];
            d->exists = 1;
            d->src_not_first = s > 0;
            memcpy(d->src, S->in[pos[s]].x, sizeof d->src);
            memcpy(d->tmin, S->in[pos[t1]].x, sizeof d->tmin);
            memcpy(d->tmax, S->in[pos[t2]].x, sizeof d->tmax);
            sim_ws(S, pos, s, t1, stamp, ++tag, d->ws_min_arr);
            sim_ws(S, pos, s, t2, stamp, ++tag, d->ws_max_arr);
        } else if (S->nthreads > 1 && S->npar > 0 && re < S->T) {
            /* Reuse only between threads. */
            for (int64_t i = 0; i < nE; i++) last[i] = 0;
            for (int64_t i = 0; i < S->nin; i++)
                if (S->in[i].band >= re) last[S->in[i].e[arr]] = 1;
            for (int64_t p = 0; p < np && s < 0; p++)
                if (last[S->in[pos[p]].e[arr]]) s = p;
            if (s >= 0) {
                const sim_inst *src = &S->in[pos[s]];
                const int64_t e = src->e[arr], is = src->band - rb;
                int64_t below = -1, above = -1, first = -1, lst = -1;
                for (int64_t i = 0; i < S->nin; i++) {
                    const sim_inst *I = &S->in[i];
                    if (I->thread == rep || I->e[arr] != e) continue;
                    int64_t b, en;
                    sim_chunk(S, I->thread, &b, &en);
                    int64_t r = I->band - b;
                    if (r <= is && r > below) below = r;
                    if (r >= is && (above < 0 || r < above)) above = r;
                    if (first < 0 || r < first) first = r;
                    if (r > lst) lst = r;
                }
                d->exists = 1;
                d->shared_only = 1;
                memcpy(d->src, src->x, sizeof d->src);
                /* Window of whole band iterations of the representative thread. */
                int64_t best = -1;
                int64_t c[3];
                int64_t cand[2] = {below, above};
                for (int q = 0; q < 2; q++) {
                    if (cand[q] < 0) continue;
                    int64_t g0 = sim_min(is, cand[q]), g1 = sim_min(sim_max(is, cand[q]), re - rb - 1);
                    int64_t a = -1, z = -1;
                    for (int64_t p = 0; p < np; p++) {
                        int64_t g = S->in[pos[p]].band - rb;
                        if (g >= g0 && g <= g1) {
                            if (a < 0) a = p;
                            z = p;
                        }
                    }
                    sim_ws(S, pos, a, z, stamp, ++tag, c);
                    if (best < 0 || c[0] + c[1] + c[2] < best) {
                        best = c[0] + c[1] + c[2];
                        memcpy(d->ws_min_arr, c, sizeof c);
                    }
                }
                best = -1;
                int64_t cand2[2] = {first, lst};
                for (int q = 0; q < 2; q++) {
                    int64_t g0 = sim_min(is, cand2[q]), g1 = sim_min(sim_max(is, cand2[q]), re - rb - 1);
                    int64_t a = -1, z = -1;
                    for (int64_t p = 0; p < np; p++) {
                        int64_t g = S->in[pos[p]].band - rb;
                        if (g >= g0 && g <= g1) {
                            if (a < 0) a = p;
                            z = p;
                        }
                    }
                    sim_ws(S, pos, a, z, stamp, ++tag, c);
                    if (c[0] + c[1] + c[2] > best) {
                        best = c[0] + c[1] + c[2];
                        memcpy(d->ws_max_arr, c, sizeof c);
                    }
                }
            }
        }
        free(lastpos);
        if (d->exists) {
            d->ws_min = d->ws_min_arr[0] + d->ws_min_arr[1] + d->ws_min_arr[2];
            d->ws_max = d->ws_max_arr[0] + d->ws_max_arr[1] + d->ws_max_arr[2];
            int64_t is = -1;
            for (int64_t p = 0; p < np; p++)
                if (memcmp(S->in[pos[p]].x, d->src, sizeof d->src) == 0) is = S->in[pos[p]].band - rb;
            d->ws_min_shared = d->ws_max_shared = 0;
            for (int a = 0; a < 3; a++) {
                int64_t mu = sim_mult(S, a, is);
                d->ws_min_shared += mu * d->ws_min_arr[a];
                d->ws_max_shared += mu * d->ws_max_arr[a];
            }
        }
    }
    free(pos);
    free(next);
    free(last);
    free(stamp);
}

#endif
