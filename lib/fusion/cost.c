/* COST(H): PolyMage's cost function and tile-size model (seed 002, Alg. 2)
 * over the isl regions of the candidate group. */
#include "fusion/fusion_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void ps_cost_model_init(ps_cost_model *cm, const ps_machine *m, int threads)
{
    memset(cm, 0, sizeof *cm);
    cm->cores = threads > 0 ? threads : 1;
    double bw = m->mem_bandwidth_gbs > 0 ? m->mem_bandwidth_gbs : 10.0;
    double peak = m->peak_gflops_core > 0 ? m->peak_gflops_core : 50.0;
    cm->bandwidth = bw * 1e9 * cm->cores;
    /* A row kernel loads one operand per fused multiply-add (a tap, or an
     * expression operand from L1): two loads per cycle feed one FMA pipe's
     * worth of work, about half the FMA peak. */
    cm->flops = 0.5 * peak * 1e9 * cm->cores;
    /* measured on the benchmark blocks (docs/perf/chains.md): layer plans at
     * 0.8-0.95 of the peak, row-wise batch-reduce GEMMs at 0.55-0.7 */
    cm->conv_layer_flops = 0.85 * peak * 1e9 * cm->cores;
    cm->conv_row_flops = 0.6 * peak * 1e9 * cm->cores;
    cm->l2_bandwidth = 4.0 * bw * 1e9 * cm->cores;
    cm->llc_bandwidth = 2.0 * bw * 1e9 * cm->cores;
    for (int i = 0; i < m->n_levels; i++) {
        if (m->levels[i].bandwidth_gbs <= 0) continue;
        if (m->levels[i].level == 2) cm->l2_bandwidth = m->levels[i].bandwidth_gbs * 1e9 * cm->cores;
        if (m->levels[i].level == m->levels[m->n_levels - 1].level && m->levels[i].level > 2)
            cm->llc_bandwidth = m->levels[i].bandwidth_gbs * 1e9 * cm->cores;
    }
    cm->llc_bytes = ps_machine_cache_bytes(m, 3);
    cm->w4 = 0.1;
    cm->innermost = 256;
    cm->cache[0] = ps_machine_cache_bytes(m, 1);
    cm->cache[1] = ps_machine_cache_bytes(m, 2);
    if (!cm->cache[0]) cm->cache[0] = 32 << 10;
    if (!cm->cache[1]) cm->cache[1] = 1 << 20;
}

static double rat_d(const ps_rat *r) { return (double)r->num / (double)r->den; }

int ps_tensor_in_memory(const ps_cost_model *cm, const ps_pstage *S)
{
    const double bytes = 4.0 * (double)S->n * (double)S->c * (double)S->need.h * (double)S->need.w;
    return !cm->llc_bytes || bytes > 0.5 * (double)cm->llc_bytes;
}

/* Bytes/s at which stage S's tensor goes out to, or comes back from,
 * beyond the cores' L2: the last-level cache's bandwidth where it stays
 * there, else memory's. */
static double tensor_bandwidth(const ps_cost_model *cm, const ps_pstage *S)
{
    return !ps_tensor_in_memory(cm, S) && cm->llc_bandwidth > cm->bandwidth ? cm->llc_bandwidth : cm->bandwidth;
}

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The reference-space rectangle the group's live-outs cover. */
void ps_group_extent(const ps_pipeline *p, const ps_group_geom *g, double *y0, double *y1, double *x0, double *x1)
{
    *y0 = *x0 = 1e300;
    *y1 = *x1 = -1e300;
    for (int k = 0; k < g->n; k++) {
        if (!g->live_out[k]) continue;
        const ps_box *b = &p->st[g->m[k]].need;
        double sy = rat_d(&g->sy[k]), sx = rat_d(&g->sx[k]);
        if (b->y0 / sy < *y0) *y0 = (double)b->y0 / sy;
        if ((b->y0 + b->h) / sy > *y1) *y1 = (double)(b->y0 + b->h) / sy;
        if (b->x0 / sx < *x0) *x0 = (double)b->x0 / sx;
        if ((b->x0 + b->w) / sx > *x1) *x1 = (double)(b->x0 + b->w) / sx;
    }
}

/* The tiles' x side (seed 002's innermost tile size, from the footprint):
 * a tile runs as bands of rows inside it (multi-level tiling), so what must
 * stay in L2 is each member's ring of rows (the band plus its consumers'
 * reach: the region's excess over the tile) across the tile's width. Half
 * of L2 goes to the rings, the rest to the streams of live-ins and
 * live-outs. Rows as wide as that allows: long row segments keep the
 * prefetchers streaming (a copy over 256-column tiles ran at half the speed
 * of the same copy over whole rows). */
static int64_t tile_width(const ps_pipeline *p, const ps_group_geom *g, const ps_cost_model *cm, const ps_region_form *f0,
                          int64_t ty0, double ext_x)
{
    (void)f0;
    (void)ty0;
    double per_col = 0;
    for (int k = 0; k < g->n; k++) {
        const ps_pstage *S = &p->st[g->m[k]];
        if (g->live_out[k] && !g->inner_cons[k]) continue; /* written in place: no ring */
        /* its band's rows, plus the rows a band of its widest reader reads */
        double band = (double)g->align_y * rat_d(&g->sy[k]), rows = band;
        for (int c = 0; c < S->n_cons; c++) {
            int q = ps_group_member_index(g, S->cons[c]);
            if (q < 0) continue;
            const ps_pstage *Q = &p->st[g->m[q]];
            int64_t bq = (int64_t)ceil((double)g->align_y * rat_d(&g->sy[q]));
            ps_box b = {0, 0, bq > 0 ? bq : 1, 1};
            for (int j = 0; j < Q->n_in; j++)
                if (Q->in[j] == g->m[k]) {
                    ps_box r = ps_read_box(p, g->m[q], j, &b);
                    if (band + (double)r.h > rows) rows = band + (double)r.h;
                }
        }
        per_col += 4.0 * (double)S->c * rat_d(&g->sx[k]) * rows;
    }
    int64_t full = round_up((int64_t)ceil(ext_x), g->align_x);
    int64_t x = (int64_t)(0.5 * (double)cm->cache[1] / (per_col > 0 ? per_col : 1));
    x = x / g->align_x * g->align_x;
    int64_t floor_x = round_up(64, g->align_x);
    if (x < floor_x) x = floor_x;
    if (x >= full) return full;
    /* Equal columns: the widest the rings allow, evened out so the last is
     * not a sliver. */
    int64_t cols = (full + x - 1) / x;
    return round_up((full + cols - 1) / cols, g->align_x);
}

static double spread(const double *v, int n)
{
    if (n < 2) return 0;
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += v[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (v[i] - mean) * (v[i] - mean);
    return mean > 0 ? sqrt(var / n) / mean : 0;
}

/* CostForCacheSize for a given tile; 0 when the regions have no fixed size. */
static int cost_for_tile(ps_fusion_state *fs, const ps_group_geom *g, double footprint, int64_t ty, int64_t tx,
                         double ext_y, double ext_x, ps_group_eval *ev, double *overlap_pts, double *tile_pts)
{
    const ps_pipeline *p = fs->p;
    const ps_cost_model *cm = &fs->cm;
    ps_region_form *forms = malloc((size_t)(g->n + g->n_livein) * sizeof *forms);
    if (!forms) return -1;
    int rc = ps_group_regions(fs->regions, p, g, ty, tx, forms);
    if (rc <= 0) {
        free(forms);
        return rc;
    }
    /* Per tile: every region is its share (its slope: what the next tile
     * starts further on) plus a halo recomputed by the neighbours. Over
     * the image, the shares add up to the extent (tiles at the edges are
     * partial: n_eff tiles' worth), the halos come once per tile. */
    int64_t tiles = (int64_t)ceil(ext_y / (double)ty) * (int64_t)ceil(ext_x / (double)tx);
    double images = (double)p->st[g->m[0]].n;
    int64_t n_tiles = tiles * p->st[g->m[0]].n;
    double n_eff = ext_y / (double)ty * ext_x / (double)tx * images;
    double comp = 0, over = 0, share_pts = 0, flops = 0, tile_comp = 0, tile_bytes = 0;
    double conv_time = 0, t_mem = 0;
    for (int k = 0; k < g->n; k++) {
        const ps_pstage *S = &p->st[g->m[k]];
        double c = (double)S->c;
        double area = (double)forms[k].h * (double)forms[k].w, share = (double)forms[k].ay * (double)forms[k].ax;
        double pts = c * (share * n_eff + (area - share) * (double)n_tiles);
        comp += pts;
        if (S->kind == PS_NODE_CONV && S->px) {
            double f = pts * ps_stage_flops(S);
            if (g->n == 1) {
                conv_time += f / cm->conv_layer_flops;
            } else if (ps_pstage_small_gemm(S)) {
                /* the row kernels' small GEMM: a row's pixels per call, the weights (at most 64 input
                 * channels' worth) from L1/L2 */
                conv_time += f / cm->conv_layer_flops;
            } else {
                /* a call per PS_CONV_NB pixels of a row, each streaming the weights */
                double wbytes = 4.0 * (double)S->in_c * c * (double)S->n_taps;
                double pixels = pts / c, row_w = (double)forms[k].w > 0 ? (double)forms[k].w : 1.0;
                double calls = pixels / row_w * ceil(row_w / (double)PS_CONV_NB);
                double bw = wbytes <= 0.5 * (double)cm->cache[1] ? cm->l2_bandwidth : cm->llc_bandwidth;
                conv_time += f / cm->conv_row_flops + calls * wbytes / bw;
            }
        } else {
            flops += pts * ps_stage_flops(S);
        }
        over += (area - share) * c;
        share_pts += share * c;
        tile_comp += area * c;
        if (g->live_out[k]) {
            t_mem += share * c * 4.0 * n_eff / tensor_bandwidth(cm, S);
            tile_bytes += share * c * 4.0;
        }
    }
    for (int i = 0; i < g->n_livein; i++) {
        const ps_region_form *f = &forms[g->n + i];
        const ps_pstage *L = &p->st[g->livein[i]];
        double c = (double)L->c, area = (double)f->h * (double)f->w, share = (double)f->ay * (double)f->ax;
        t_mem += c * 4.0 * (share * n_eff + (area - share) * (double)n_tiles) / tensor_bandwidth(cm, L);
        tile_bytes += c * 4.0 * area;
    }
    free(forms);
    double hy[64], wx[64];
    int nd = 0;
    for (int k = 0; k < g->n && nd < 64; k++, nd++) {
        const ps_box *b = &p->st[g->m[k]].need;
        hy[nd] = (double)b->h / rat_d(&g->sy[k]);
        wx[nd] = (double)b->w / rat_d(&g->sx[k]);
    }
    ev->terms[0] = tile_bytes / (tile_comp > 0 ? tile_comp : 1);
    /* t2 as the share of the cores' rounds the tiles keep busy (1: no
     * partial last round) */
    double rounds = ceil((double)n_tiles / cm->cores);
    double balance = (double)n_tiles / (rounds * cm->cores);
    ev->terms[1] = balance;
    ev->terms[2] = share_pts > 0 ? over / share_pts : 0;
    ev->terms[3] = spread(hy, nd) + spread(wx, nd);
    /* The terms as time (fusion.h): traffic of the live-ins and live-outs
     * (from memory, or the last-level cache where they fit it), arithmetic of every point computed (the overlap included),
     * stretched by the cores a last partial round of tiles leaves idle. */
    double t_comp = flops / cm->flops + conv_time;
    ev->cost = (t_mem + t_comp) * (1.0 + cm->w4 * ev->terms[3]) / balance;
    (void)footprint;
    (void)comp;
    ev->ty = ty;
    ev->tx = tx;
    ev->tiles = tiles;
    ev->overlap = share_pts > 0 ? over / share_pts : 0;
    *overlap_pts = over;
    *tile_pts = share_pts;
    return 1;
}

ps_status ps_group_cost_uncached(ps_fusion_state *fs, const int *m, int n, ps_group_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    ps_group_geom g;
    ps_status st = ps_group_geom_init(fs->p, m, n, &g);
    if (st) return st;
    if (!g.legal) {
        ev->legal = 0;
        snprintf(ev->why, sizeof ev->why, "%s", g.why);
        ev->cost = INFINITY;
        ps_group_geom_release(&g);
        return PS_SUCCESS;
    }
    const ps_pipeline *p = fs->p;
    const ps_cost_model *cm = &fs->cm;
    double ey0, ey1, ex0, ex1;
    ps_group_extent(p, &g, &ey0, &ey1, &ex0, &ex1);
    double ext_y = ey1 - ey0, ext_x = ex1 - ex0;
    double total = 0;
    for (int k = 0; k < n; k++) {
        const ps_pstage *S = &p->st[g.m[k]];
        total += (double)S->need.h * (double)S->need.w * (double)S->c * (double)S->n * 4.0;
    }
    double over = 0, tile = 0;
    int rc;
    if (cm->force_ty > 0 && cm->force_tx > 0) {
        int64_t ty = round_up(cm->force_ty, g.align_y), tx = round_up(cm->force_tx, g.align_x);
        rc = cost_for_tile(fs, &g, total, ty, tx, ext_y, ext_x, ev, &over, &tile);
        ev->level = 0;
    } else {
        /* The regions' excess over the tile does not depend on the tile's
         * size (tiling.h): one look at a nominal tile sizes the rings. */
        int64_t ty0 = g.align_y * 32, tx0 = g.align_x * 32;
        ps_region_form *f0 = malloc((size_t)(n + g.n_livein) * sizeof *f0);
        rc = f0 ? ps_group_regions(fs->regions, p, &g, ty0, tx0, f0) : -1;
        if (rc == 1) {
            int64_t tx = tile_width(p, &g, cm, f0, ty0, ext_x);
            /* The y side: as tall as leaves every core four or more tiles
             * (tiles differ in cost at the image's edges, and a core the
             * system takes away for a while must not hold up the rest), the
             * cheapest of those by the cost; taller tiles recompute less
             * halo. */
            int64_t images = p->st[g.m[0]].n, tried[8];
            int nt = 0;
            ps_group_eval best = {0};
            best.cost = INFINITY;
            /* Groups on pixel rows (deep-learning stages) recompute a whole
             * convolution's halo per tile, and their images are small (7 to
             * 112 rows): one or two tiles per core are tried too. */
            int px = 0;
            for (int k = 0; k < n; k++) px |= p->st[g.m[k]].px;
            for (int f = px ? 1 : 4; f <= 32 && rc >= 0; f *= 2) {
                double per_image = (double)cm->cores * f / (double)images;
                int64_t ty = round_up((int64_t)ceil(ext_y / (per_image > 1 ? per_image : 1)), g.align_y);
                int dup = 0;
                for (int i = 0; i < nt; i++) dup |= tried[i] == ty;
                if (dup) continue;
                tried[nt++] = ty;
                ps_group_eval e = *ev;
                int r = cost_for_tile(fs, &g, total, ty, tx, ext_y, ext_x, &e, &over, &tile);
                if (r < 0) rc = -1;
                else if (r == 1 && e.cost < best.cost) best = e;
            }
            if (rc >= 0) {
                rc = isfinite(best.cost) ? 1 : 0;
                if (rc) *ev = best;
            }
        }
        free(f0);
        ev->level = 2;
    }
    if (rc < 0) {
        ps_group_geom_release(&g);
        return PS_ERR_BACKEND;
    }
    ev->legal = rc == 1;
    if (!ev->legal) {
        snprintf(ev->why, sizeof ev->why, "the regions of a %lld x %lld tile have no fixed size", (long long)ev->ty,
                 (long long)ev->tx);
        ev->cost = INFINITY;
    }
    ps_group_geom_release(&g);
    return PS_SUCCESS;
}
