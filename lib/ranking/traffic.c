/* Data-movement model of a schedule at microkernel-tile granularity. */
#include "ranking/traffic.h"

#include <string.h>

#include "descriptors/shape.h"

enum { ARR_IN, ARR_W, ARR_OUT, N_ARR };

/* Geometry the footprints need. */
typedef struct geom {
    int64_t ext[PS_DIM_COUNT];
    double m, n, kc;        /* microkernel tile: out channels, columns, reduction per chunk */
    double R, S, sh, sw, reff, seff, H, W, C, K, OW;
    int gemm;
} geom;

static double dmin(double a, double b) { return a < b ? a : b; }

/* Bytes of each array touched when dimension d spans t[d] microkernel steps. */
static void footprint(const geom *g, const double t[PS_DIM_COUNT], double fp[N_ARR])
{
    double cols = dmin(t[PS_DIM_OW] * g->n, g->OW), outc = dmin(t[PS_DIM_K] * g->m, g->K);
    double red = dmin(t[PS_DIM_C] * g->kc, g->C);
    if (g->gemm) {
        fp[ARR_OUT] = outc * cols * 4;
        fp[ARR_W] = outc * red * 4;  /* A */
        fp[ARR_IN] = red * cols * 4; /* B */
        return;
    }
    double rows_in = dmin((t[PS_DIM_OH] - 1) * g->sh + g->reff, g->H);
    double cols_in = dmin((cols - 1) * g->sw + g->seff, g->W);
    fp[ARR_OUT] = t[PS_DIM_N] * t[PS_DIM_OH] * cols * outc * 4;
    fp[ARR_W] = outc * red * g->R * g->S * 4;
    fp[ARR_IN] = t[PS_DIM_N] * rows_in * cols_in * red * 4;
}

/* Does array a depend on dimension d? */
static int depends(int a, ps_dim d)
{
    switch (a) {
    case ARR_OUT: return d != PS_DIM_C;
    case ARR_W: return d == PS_DIM_K || d == PS_DIM_C;
    default: return d != PS_DIM_K;
    }
}

/* Traffic into a cache of capacity z for the loops of stage sg. */
static double traffic(const geom *g, const ps_stage *sg, double z)
{
    const int nl = sg->n_loops;
    /* span[j][d]: steps of d covered by one iteration of loop j's body
     * (index nl = the microkernel). trips[j]: iterations of loop j. */
    double span[PS_SCHEDULE_MAX_LOOPS + 1][PS_DIM_COUNT], trips[PS_SCHEDULE_MAX_LOOPS];
    double cur[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) cur[d] = (double)g->ext[d];
    for (int j = 0; j < nl; j++) {
        const ps_loop *l = &sg->loops[j];
        double parent = cur[l->dim], tile = dmin((double)l->tile, parent);
        trips[j] = (parent + tile - 1) / tile; /* average, remainders included */
        cur[l->dim] = tile;
        memcpy(span[j + 1], cur, sizeof cur);
    }
    for (int d = 0; d < PS_DIM_COUNT; d++) span[0][d] = (double)g->ext[d];
    /* Innermost loop whose whole range does not fit: j* (its span is span[j*]). */
    int js = -1;
    for (int j = nl - 1; j >= 0; j--) {
        double fp[N_ARR];
        footprint(g, span[j], fp);
        if (fp[0] + fp[1] + fp[2] > z) { js = j; break; }
    }
    double fp_body[N_ARR], fp_all[N_ARR];
    footprint(g, span[0], fp_all);
    if (js < 0) return fp_all[0] + fp_all[1] + fp_all[2]; /* everything fits: compulsory traffic */
    footprint(g, span[js + 1], fp_body);
    double outer = 1;
    for (int j = 0; j < js; j++) outer *= trips[j];
    double vol = 0;
    for (int a = 0; a < N_ARR; a++) {
        double v = depends(a, sg->loops[js].dim) ? trips[js] * fp_body[a] : fp_body[a];
        /* Outer loops the array does not depend on reuse it only if the
         * whole inner range fits, which it does not: count them all. */
        v *= outer;
        /* Partial sums: an output refetched across reduction chunks is
         * read and written back. */
        if (a == ARR_OUT && g->ext[PS_DIM_C] > 1) v *= 2;
        vol += v;
    }
    return vol < fp_all[0] + fp_all[1] + fp_all[2] ? fp_all[0] + fp_all[1] + fp_all[2] : vol;
}

void ps_traffic_estimate(const ps_machine *m, const ps_problem *p, const ps_schedule *s, int nthreads,
                         double bytes[PS_COST_LEVELS])
{
    const ps_stage *sg = &s->stages[0];
    geom g = {0};
    ps_tile_space_extents(p, &sg->kernel, g.ext);
    g.m = sg->kernel.m;
    g.n = sg->kernel.n;
    g.kc = (double)sg->kernel.k * sg->kernel.batch;
    if (p->desc.kind == PS_OP_GEMM) {
        const ps_gemm_desc *gd = &p->desc.u.gemm;
        g.gemm = 1;
        g.K = (double)gd->M; g.OW = (double)gd->N; g.C = (double)gd->K;
    } else {
        const ps_conv_shape *c = &p->conv;
        g.R = c->R; g.S = c->S; g.sh = c->sh; g.sw = c->sw;
        g.reff = c->dh * (c->R - 1) + 1; g.seff = c->dw * (c->S - 1) + 1;
        g.H = c->H; g.W = c->W; g.C = c->C; g.K = c->K; g.OW = c->OW;
    }
    const int threads = nthreads > 0 ? nthreads : 1;
    for (int l = 0; l < PS_COST_LEVELS; l++) bytes[l] = 0;
    /* Volume into level l is what misses in level l: per thread, with a
     * shared cache split among the threads sharing it. Memory = misses of
     * the last level. */
    const int levels = m->n_levels < PS_COST_MEM ? m->n_levels : PS_COST_MEM;
    for (int l = 0; l < levels; l++) {
        const ps_cache_level *c = &m->levels[l];
        int sharers = c->shared_by > 1 ? (c->shared_by < threads ? c->shared_by : threads) : 1;
        double z = (double)c->size_bytes / sharers;
        double miss = traffic(&g, sg, z) / threads;
        /* Misses of level l are served by level l+1 (or memory). */
        bytes[l + 1 < levels ? l + 1 : PS_COST_MEM] += miss;
    }
    /* L1 serves every microkernel operand access: the same for all
     * variants of one microkernel, so it only shifts costs uniformly. */
    bytes[0] = 0;
}

double ps_traffic_cost(const ps_machine *m, const double bytes[PS_COST_LEVELS])
{
    double cost = 0;
    const int levels = m->n_levels < PS_COST_MEM ? m->n_levels : PS_COST_MEM;
    for (int l = 0; l < levels; l++) {
        double lat = m->levels[l].latency_ns > 0 ? m->levels[l].latency_ns : 1 + 4.0 * l;
        double bw = m->levels[l].bandwidth_gbs > 0 ? m->levels[l].bandwidth_gbs : 200.0 / (1 + l);
        cost += bytes[l] * lat / bw;
    }
    double lat = m->mem_latency_ns > 0 ? m->mem_latency_ns : 80, bw = m->mem_bandwidth_gbs > 0 ? m->mem_bandwidth_gbs : 20;
    return cost + bytes[PS_COST_MEM] * lat / bw;
}
