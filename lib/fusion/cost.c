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
    /* Seed 002, Table 2 (Xeon): w1 on bytes moved per point computed, w2 on
     * the tiles left for a last, partial round over the cores, w3 on the
     * redundant bytes per tile footprint, w4 on the spread of extents. */
    cm->w[0] = 1.0;
    cm->w[1] = 100.0;
    cm->w[2] = 46875.0;
    cm->w[3] = 1.5;
    cm->innermost = 256;
    cm->cache[0] = ps_machine_cache_bytes(m, 1);
    cm->cache[1] = ps_machine_cache_bytes(m, 2);
    if (!cm->cache[0]) cm->cache[0] = 32 << 10;
    if (!cm->cache[1]) cm->cache[1] = 1 << 20;
    cm->cores = threads > 0 ? threads : 1;
}

static double rat_d(const ps_rat *r) { return (double)r->num / (double)r->den; }

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

/* ComputeTileSizes (Alg. 2): the innermost (x) side is min(extent, 256);
 * the y side takes the rest of the tile volume, the footprint divided by the
 * buffers the group keeps per reference point. */
static void tile_sizes(const ps_pipeline *p, const ps_group_geom *g, const ps_cost_model *cm, double footprint,
                       double ext_y, double ext_x, int64_t *ty, int64_t *tx)
{
    double buffers = 0;
    for (int k = 0; k < g->n; k++)
        buffers += (double)p->st[g->m[k]].c * rat_d(&g->sy[k]) * rat_d(&g->sx[k]);
    double vol = footprint / (4.0 * (buffers > 0 ? buffers : 1));
    int64_t x = (int64_t)ceil(ext_x);
    if (x > cm->innermost) x = cm->innermost;
    x = round_up(x < 1 ? 1 : x, g->align_x);
    int64_t y = (int64_t)(vol / (double)x);
    int64_t ymax = (int64_t)ceil(ext_y);
    if (y > ymax) y = ymax;
    y = y / g->align_y * g->align_y;
    if (y < g->align_y) y = g->align_y;
    *ty = y;
    *tx = x;
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
    int rc = ps_group_regions(fs->isl, p, g, ty, tx, forms);
    if (rc <= 0) {
        free(forms);
        return rc;
    }
    double comp = 0, over = 0, share_pts = 0, livein = 0, liveout = 0;
    for (int k = 0; k < g->n; k++) {
        double c = (double)p->st[g->m[k]].c;
        double area = (double)forms[k].h * (double)forms[k].w;
        double share = (double)ps_group_member_tile(&g->sy[k], ty) * (double)ps_group_member_tile(&g->sx[k], tx);
        comp += area * c;
        over += (area - share) * c;
        share_pts += share * c;
        if (g->live_out[k]) liveout += share * c * 4.0;
    }
    for (int i = 0; i < g->n_livein; i++)
        livein += (double)forms[g->n + i].h * (double)forms[g->n + i].w * (double)p->st[g->livein[i]].c * 4.0;
    free(forms);
    int64_t tiles = (int64_t)ceil(ext_y / (double)ty) * (int64_t)ceil(ext_x / (double)tx);
    int64_t n_tiles = tiles * p->st[g->m[0]].n;
    double hy[64], wx[64];
    int nd = 0;
    for (int k = 0; k < g->n && nd < 64; k++, nd++) {
        const ps_box *b = &p->st[g->m[k]].need;
        hy[nd] = (double)b->h / rat_d(&g->sy[k]);
        wx[nd] = (double)b->w / rat_d(&g->sx[k]);
    }
    ev->terms[0] = (livein + liveout) / (comp > 0 ? comp : 1);
    ev->terms[1] = (double)((n_tiles + cm->cores - 1) % cm->cores);
    ev->terms[2] = over * 4.0 / footprint;
    ev->terms[3] = spread(hy, nd) + spread(wx, nd);
    ev->cost = cm->w[0] * ev->terms[0] - cm->w[1] * ev->terms[1] + cm->w[2] * ev->terms[2] + cm->w[3] * ev->terms[3];
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
        double fp = total / cm->cores < (double)cm->cache[1] ? total / cm->cores : (double)cm->cache[1];
        rc = cost_for_tile(fs, &g, fp > 0 ? fp : 1, ty, tx, ext_y, ext_x, ev, &over, &tile);
        ev->level = 0;
    } else {
        rc = 0;
        for (int level = 1; level <= 2; level++) {
            double fp = total / cm->cores < (double)cm->cache[level - 1] ? total / cm->cores : (double)cm->cache[level - 1];
            if (fp < 1) fp = 1;
            int64_t ty, tx;
            tile_sizes(p, &g, cm, fp, ext_y, ext_x, &ty, &tx);
            rc = cost_for_tile(fs, &g, fp, ty, tx, ext_y, ext_x, ev, &over, &tile);
            ev->level = level;
            /* Alg. 2, line 5: an overlap beyond the tile's own volume sends
             * the tiles to the next cache level. */
            if (rc != 1 || over <= tile) break;
        }
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
