/* Graph plans: ps_graph_plan_create (everything decided once), execute,
 * describe (include/polysci/graph.h). */
#include "execution/graph_exec.h"
#include "core/intmath.h"
#include "plan/graph_taps.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "codegen/codegen.h"
#include "core/error.h"
#include "fusion/fusion_impl.h"
#include "fusion/fusion.h"
#include "plan/context_impl.h"

static size_t round16(size_t v) { return (v + 15) & ~(size_t)15; }

void ps_graph_options_init(ps_graph_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->fusion = PS_FUSION_DP;
}

void ps_graph_plan_destroy(ps_graph_plan *pl)
{
    if (!pl) return;
    /* the last reference frees it (the caller's and the context cache's) */
    if (__atomic_sub_fetch(&pl->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    for (int g = 0; g < pl->n_groups; g++) {
        for (int k = 0; pl->groups[g].mem && k < pl->groups[g].n; k++) {
            free(pl->groups[g].mem[k].read_by);
            free(pl->groups[g].mem[k].read_as);
            ps_graph_taps_free(&pl->groups[g].mem[k]);
        }
        free(pl->groups[g].mem);
        free(pl->groups[g].btile);
        free(pl->groups[g].bbox);
        free(pl->groups[g].why);
        free(pl->groups[g].kind_of);
        free(pl->groups[g].kind_first);
        free(pl->groups[g].kind_len);
        free(pl->groups[g].steps);
        ps_plan_destroy(pl->groups[g].layer);
        free(pl->groups[g].layer_weights);
    }
    free(pl->groups);
    if (pl->xs)
        for (int s = 0; s < pl->pipe.n; s++) {
            free(pl->xs[s].row_dy);
            free(pl->xs[s].tap_row);
        }
    free(pl->xs);
    ps_pipeline_release(&pl->pipe);
    ps_codegen_release(pl->code);
    free(pl);
}

/* The pointwise stages' expression programs as straight-line code
 * (lib/codegen), unless PS_GRAPH_NO_CODEGEN; where it cannot be built they
 * stay interpreted. */
static ps_status compile_programs(ps_graph_plan *pl)
{
    const ps_pipeline *p = &pl->pipe;
    int n_taps = 0;
    for (int gi = 0; gi < pl->n_groups; gi++)
        for (int k = 0; k < pl->groups[gi].n; k++)
            n_taps += (pl->groups[gi].mem[k].tap != NULL) + (pl->groups[gi].mem[k].tap2 != NULL) +
                      (pl->groups[gi].mem[k].stap != NULL) + (pl->groups[gi].mem[k].stap2 != NULL);
    ps_vprog **progs = malloc(((size_t)p->n + 1) * sizeof *progs);
    ps_tprog **taps = malloc(((size_t)n_taps + 1) * sizeof *taps);
    if (!progs || !taps) {
        free(progs);
        free(taps);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    int n = 0;
    for (int s = 0; s < p->n; s++)
        if (p->st[s].kind == PS_NODE_POINTWISE && ps_pstage_computed(&p->st[s])) progs[n++] = &p->st[s].prog;
    n_taps = 0;
    for (int gi = 0; gi < pl->n_groups; gi++)
        for (int k = 0; k < pl->groups[gi].n; k++) {
            const ps_gx_member *M = &pl->groups[gi].mem[k];
            if (M->tap) {
                taps[n_taps++] = M->tap;
                if (M->tap2) taps[n_taps++] = M->tap2;
            }
            if (M->stap) {
                taps[n_taps++] = M->stap;
                if (M->stap2) taps[n_taps++] = M->stap2;
            }
        }
    pl->code_progs = n;
    for (int i = 0; i < n_taps; i++) pl->code_taps += taps[i]->rows_per_call < 2;
    ps_status st = PS_SUCCESS;
    const double t0 = ps_now_ms();
    if (n == 0 && n_taps == 0) snprintf(pl->code_why, sizeof pl->code_why, "no expression");
    else if (pl->opts.flags & PS_GRAPH_NO_CODEGEN) snprintf(pl->code_why, sizeof pl->code_why, "PS_GRAPH_NO_CODEGEN");
    else
        st = ps_codegen_compile(pl->ctx, pl->k->isa, progs, n, taps, n_taps, &pl->code, &pl->code_compiled,
                                &pl->code_cached, pl->code_why, sizeof pl->code_why);
    pl->code_ms = ps_now_ms() - t0;
    for (int i = 0; i < n_taps; i++) {
        const int done = taps[i]->fn != NULL || taps[i]->fnn != NULL || taps[i]->fns != NULL;
        pl->code_taps_compiled += done && taps[i]->rows_per_call < 2;
        pl->code_compiled -= done;
    }
    free(progs);
    free(taps);
    if (!st && pl->ctx->verbose && n)
        fprintf(stderr, "polysci_verbose,graph_codegen,%d programs,%d compiled,%d tap programs,%d compiled,%s,%.3f%s%s\n", n,
                pl->code_compiled, pl->code_taps, pl->code_taps_compiled, pl->code_cached ? "cached" : "built", pl->code_ms,
                pl->code_why[0] ? "," : "", pl->code_why);
    return st;
}

static ps_status check_options(const ps_graph *g, const ps_graph_options *o)
{
    static const char who[] = "ps_graph_plan_create";
    if (o->struct_size != sizeof *o)
        return ps_error(PS_ERR_INVALID_ARG, "%s: opts.struct_size is %zu, expected %zu (use ps_graph_options_init)", who,
                        o->struct_size, sizeof *o);
    if (o->num_threads < 0 || o->num_threads > 4096)
        return ps_error(PS_ERR_INVALID_ARG, "%s: num_threads %d out of range (0..4096)", who, o->num_threads);
    if (o->fusion < PS_FUSION_DP || o->fusion > PS_FUSION_FIXED)
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown fusion mode %d", who, (int)o->fusion);
    if (o->tile_h < 0 || o->tile_w < 0 || o->tile_h > (1 << 24) || o->tile_w > (1 << 24) || (!o->tile_h != !o->tile_w))
        return ps_error(PS_ERR_INVALID_ARG, "%s: tile_h and tile_w must both be 0 or both in 1..2^24 (got %lld x %lld)", who,
                        (long long)o->tile_h, (long long)o->tile_w);
    if (o->fusion == PS_FUSION_FIXED) {
        if (!o->group_of) return ps_error(PS_ERR_NULL_POINTER, "%s: PS_FUSION_FIXED needs group_of", who);
        if (o->n_group_of != g->n)
            return ps_error(PS_ERR_INVALID_ARG, "%s: n_group_of is %d, the graph has %d tensors", who, o->n_group_of, g->n);
    }
    if (o->group_limit < 0) return ps_error(PS_ERR_INVALID_ARG, "%s: group_limit %d is negative", who, o->group_limit);
    if (o->layer_top_k < 0 || o->layer_top_k > 100000)
        return ps_error(PS_ERR_INVALID_ARG, "%s: layer_top_k %d out of range (0..100000)", who, o->layer_top_k);
    if (!(o->layer_time_budget_ms >= 0 && o->layer_time_budget_ms <= 1e7))
        return ps_error(PS_ERR_INVALID_ARG, "%s: layer_time_budget_ms %g out of range (0..1e7 ms; 0: no limit)", who,
                        o->layer_time_budget_ms);
    if (o->chunk_w < 0 || o->chunk_w > (1 << 24))
        return ps_error(PS_ERR_INVALID_ARG, "%s: chunk_w %lld out of range (0..2^24)", who, (long long)o->chunk_w);
    if (o->flags & ~(PS_GRAPH_NO_INLINE | PS_GRAPH_NO_EPILOGUE | PS_GRAPH_NO_CACHE | PS_GRAPH_NO_CODEGEN))
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown flags 0x%x", who, o->flags);
    if (g->n_outputs < 1) return ps_error(PS_ERR_INVALID_ARG, "%s: the graph has no output (ps_graph_mark_output)", who);
    return PS_SUCCESS;
}

/* ps_gx_stage.box_s of S (its rows in X): the column count of a planar
 * unit-weight sum over a full grid of at least 2 x 2 taps, else 0. */
static int box_columns(const ps_pstage *S, const ps_gx_stage *X)
{
    const int gs = X->dx_max - X->dx_min + 1;
    if (S->px || S->reduce != PS_REDUCE_SUM || S->sx != 1 || S->n_in != 1 || X->n_rows < 2 || gs < 2 ||
        S->n_taps != X->n_rows * gs || S->n_taps > PS_BOX_MAX_TAPS)
        return 0;
    const int64_t n_w = (int64_t)S->n_taps * (S->per_channel ? S->c : 1);
    for (int64_t i = 0; i < n_w; i++)
        if (S->w[i] != 1.0f) return 0;
    /* every (row, column) once: n_rows * gs taps, none repeated */
    unsigned char seen[PS_BOX_MAX_TAPS] = {0};
    for (int t = 0; t < S->n_taps; t++) {
        const int cell = X->tap_row[t] * gs + (S->dx[t] - X->dx_min);
        if (seen[cell]) return 0;
        seen[cell] = 1;
    }
    return gs;
}

/* Stencil taps grouped by row: each distinct dy is fetched once per output row. */
static ps_status stencil_rows(const ps_pstage *S, ps_gx_stage *X)
{
    X->row_dy = malloc((size_t)S->n_taps * sizeof *X->row_dy);
    X->tap_row = malloc((size_t)S->n_taps * sizeof *X->tap_row);
    if (!X->row_dy || !X->tap_row) return PS_ERR_OUT_OF_MEMORY;
    X->dx_min = X->dx_max = S->dx[0];
    for (int t = 0; t < S->n_taps; t++) {
        int r = 0;
        while (r < X->n_rows && X->row_dy[r] != S->dy[t]) r++;
        if (r == X->n_rows) X->row_dy[X->n_rows++] = S->dy[t];
        X->tap_row[t] = r;
        if (S->dx[t] < X->dx_min) X->dx_min = S->dx[t];
        if (S->dx[t] > X->dx_max) X->dx_max = S->dx[t];
    }
    const int gs = X->dx_max - X->dx_min + 1;
    int grid = (S->sx == 1 || S->sx == 2) && (gs == 3 || gs == 5) && S->n_taps == X->n_rows * gs;
    for (int t = 0; t < S->n_taps && grid; t++) grid = X->tap_row[t] == t / gs && S->dx[t] - X->dx_min == t % gs;
    X->grid_s = grid ? gs : 0;
    int vline = S->reduce == PS_REDUCE_SUM && S->sx == 1 && S->sy == 1 && X->dx_min == 0 && X->dx_max == 0 &&
                X->n_rows == S->n_taps && S->n_taps <= PS_SUM_PAIR_MAX_TAPS;
    for (int t = 0; t < S->n_taps && vline; t++) vline = X->tap_row[t] == t && S->dy[t] == S->dy[0] + t;
    X->vline = vline;
    X->box_s = box_columns(S, X);
    return PS_SUCCESS;
}

/* What a stage computed on pixel rows needs beyond the planar form: a
 * stencil's weights as [t][c] (every channel's, so depthwise and shared
 * weights run the same channel-vectorized kernel) and a convolution's
 * batch-reduce kernels, JIT-compiled here so execution only calls them. */
static ps_status prepare_pixel_stage(ps_pstage *S, ps_gx_stage *X)
{
    if (S->kind == PS_NODE_STENCIL) {
        size_t nt = (size_t)S->n_taps, C = (size_t)S->c;
        /* 64-byte aligned: every vector load of a weight row is one cache line, not two */
        S->pxw = aligned_alloc(64, (nt * C * sizeof *S->pxw + 63) / 64 * 64);
        if (!S->pxw) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        for (size_t t = 0; t < nt; t++)
            for (size_t c = 0; c < C; c++) S->pxw[t * C + c] = S->w[(S->per_channel ? c : 0) * nt + t];
        return PS_SUCCESS;
    }
    if (S->kind != PS_NODE_CONV) return PS_SUCCESS;
    const libxsmm_blasint m = (libxsmm_blasint)S->c, k = (libxsmm_blasint)S->in_c, lda = m, ldc = m,
                          ldb = (libxsmm_blasint)(S->sx * S->in_c);
    const float alpha = 1.0f, beta = 1.0f;
    const int flags = LIBXSMM_GEMM_FLAGS('N', 'N'), prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    for (int n = 1; n <= PS_CONV_NB; n++) {
        X->conv_k[n] = libxsmm_smmdispatch_reducebatch_addr(m, (libxsmm_blasint)n, k, &lda, &ldb, &ldc, &alpha, &beta,
                                                            &flags, &prefetch);
        if (!X->conv_k[n])
            return ps_error(PS_ERR_BACKEND, "ps_graph_plan_create: \"%s\": LIBXSMM could not JIT a %d x %d x %d batch-reduce kernel",
                            S->name, (int)m, n, (int)k);
    }
    return PS_SUCCESS;
}

/* The exact regions of tile (ti, tj): live-outs' own parts, then back
 * through the members with the boundaries applied (as execution reads). */
static void tile_boxes(const ps_pipeline *p, const ps_gx_group *g, int64_t ti, int64_t tj, ps_box *box)
{
    for (int k = g->n - 1; k >= 0; k--) {
        const ps_gx_member *m = &g->mem[k];
        const ps_pstage *S = &p->st[m->stage];
        ps_box b = {0, 0, 0, 0};
        if (m->live_out) {
            ps_box own = ps_member_own(m, ti, tj);
            b = ps_box_intersect(&own, &S->need);
        }
        for (int q = k + 1; q < g->n; q++) {
            if (ps_box_empty(&box[q])) continue;
            const ps_pstage *Q = &p->st[g->mem[q].stage];
            for (int j = 0; j < Q->n_in; j++) {
                if (Q->in[j] != m->stage) continue;
                ps_box r = ps_input_region(p, g->mem[q].stage, j, &box[q]);
                b = ps_box_hull(&b, &r);
            }
        }
        box[k] = ps_box_intersect(&b, &S->need);
    }
}

static int box_eq(const ps_box *a, const ps_box *b)
{
    return a->y0 == b->y0 && a->x0 == b->x0 && a->h == b->h && a->w == b->w;
}

static ps_status add_step(ps_gx_group *G, size_t *cap, int k, const ps_box *blk, const ps_box *B)
{
    if (G->n_steps == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        ps_gx_step *t = realloc(G->steps, c * sizeof *t);
        if (!t) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        G->steps = t;
        *cap = c;
    }
    G->steps[G->n_steps++] = (ps_gx_step){k, (int32_t)(blk->y0 - B->y0), (int32_t)blk->h, (int32_t)(blk->x0 - B->x0),
                                          (int32_t)blk->w};
    return PS_SUCCESS;
}

/* The tile programs (graph_exec.h) and the rings: for one tile of each
 * kind (regions equal up to the tile's shift), the bands and their chunks
 * are laid out as steps; a member's ring holds the widest window of its
 * rows one band reads. maxh[k]: its tallest region (the ring never needs
 * more). */
static ps_status build_programs(ps_graph_plan *pl, ps_gx_group *G, const int64_t *maxh)
{
    const ps_pipeline *p = &pl->pipe;
    int n = G->n;
    int64_t n_cells = G->gy * G->gx;
    ps_box *B = malloc((size_t)n * sizeof *B), *kinds = malloc((size_t)n_cells * (size_t)n * sizeof *kinds);
    int64_t *done = malloc((size_t)n * sizeof *done), *hi = malloc((size_t)n * sizeof *hi);
    int64_t *xdone = malloc((size_t)n * sizeof *xdone), *hx = malloc((size_t)n * sizeof *hx);
    int64_t *ring = calloc((size_t)n, sizeof *ring);
    G->kind_of = malloc((size_t)n_cells * sizeof *G->kind_of);
    G->kind_first = malloc((size_t)n_cells * sizeof *G->kind_first);
    G->kind_len = malloc((size_t)n_cells * sizeof *G->kind_len);
    ps_status st = PS_SUCCESS;
    size_t cap = 0;
    if (!B || !kinds || !done || !hi || !xdone || !hx || !ring || !G->kind_of || !G->kind_first || !G->kind_len)
        st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    for (int64_t cell = 0; cell < n_cells && !st; cell++) {
        int bt = G->btile[cell];
        int64_t ti = G->ti0 + cell / G->gx, tj = G->tj0 + cell % G->gx;
        ps_box *sig = kinds + (size_t)G->n_kinds * n;
        for (int k = 0; k < n; k++) {
            B[k] = bt < 0 ? ps_region_at(&G->mem[k].form, ti, tj) : G->bbox[(size_t)bt * n + k];
            done[k] = B[k].y0;
            ps_box own = ps_member_own(&G->mem[k], ti, tj);
            sig[k] = (ps_box){B[k].y0 - own.y0, B[k].x0 - own.x0, B[k].h, B[k].w};
        }
        int same = 0;
        while (same < G->n_kinds && memcmp(kinds + (size_t)same * n, sig, (size_t)n * sizeof *sig)) same++;
        G->kind_of[cell] = same;
        if (same < G->n_kinds) continue;
        G->kind_first[G->n_kinds] = G->n_steps;
        G->n_kinds++;
        for (int64_t b = 0, more = 1; more && !st; b++) {
            more = ps_band_targets(p, G, B, ti, b, done, hi);
            for (int k = 0; k < n; k++) {
                int64_t w = hi[k] - ps_band_low(p, G, B, ti, k, done, hi);
                if (w > ring[k]) ring[k] = w;
                xdone[k] = B[k].x0;
            }
            for (int64_t c = 0, more_x = 1; more_x && !st; c++) {
                more_x = ps_chunk_targets(p, G, B, tj, c, done, hi, xdone, hx);
                for (int k = 0; k < n && !st; k++) {
                    if (hi[k] <= done[k] || hx[k] <= xdone[k]) continue;
                    ps_box blk = {done[k], xdone[k], hi[k] - done[k], hx[k] - xdone[k]};
                    /* a fused producer's rows come with its reader's steps */
                    if (G->mem[k].fused_into < 0) st = add_step(G, &cap, k, &blk, &B[k]);
                    xdone[k] = hx[k];
                }
            }
            memcpy(done, hi, (size_t)n * sizeof *done);
        }
        G->kind_len[G->n_kinds - 1] = G->n_steps - G->kind_first[G->n_kinds - 1];
    }
    for (int k = 0; k < n && !st; k++) G->mem[k].scr_h = ring[k] < 1 ? 1 : ring[k] > maxh[k] ? maxh[k] : ring[k];
    free(kinds);
    free(B);
    free(done);
    free(hi);
    free(xdone);
    free(hx);
    free(ring);
    return st;
}

/* Builds group gi from its members: regions, tile grid, boundary table,
 * scratch layout. */
static ps_status build_group(ps_graph_plan *pl, ps_fusion_state *fs, const int *group_of, int gi)
{
    const ps_pipeline *p = &pl->pipe;
    ps_gx_group *G = &pl->groups[gi];
    int *m = malloc(((size_t)p->n + 1) * sizeof *m), n = 0;
    if (!m) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    for (int s = 0; s < p->n; s++)
        if (group_of[s] == gi) m[n++] = s;
    ps_group_geom geom;
    ps_status st = ps_group_geom_init(p, m, n, &geom);
    free(m);
    if (st) return st;
    st = ps_group_evaluate(fs, geom.m, n, &G->ev);
    ps_region_form *forms = NULL;
    if (!st && !G->ev.legal)
        st = ps_error(PS_ERR_INVALID_ARG, "ps_graph_plan_create: group of \"%s\" cannot be tiled: %s", p->st[geom.m[0]].name,
                      G->ev.why);
    if (!st) {
        forms = malloc((size_t)(n + geom.n_livein) * sizeof *forms);
        G->mem = calloc((size_t)n, sizeof *G->mem);
        if (!forms || !G->mem) st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    if (!st) {
        int rc = ps_group_regions(fs->regions, p, &geom, G->ev.ty, G->ev.tx, forms);
        if (rc < 0) st = PS_ERR_BACKEND;
        else if (rc == 0)
            st = ps_error(PS_ERR_BACKEND, "ps_graph_plan_create: isl found no fixed-size regions for a group it accepted");
    }
    if (st) {
        free(forms);
        ps_group_geom_release(&geom);
        return st;
    }
    G->n = n;
    G->ty = G->ev.ty;
    G->tx = G->ev.tx;
    G->band = geom.align_y;
    /* chunks cover whole pixels of every member, like tiles */
    G->chunk = pl->opts.chunk_w > 0 ? (pl->opts.chunk_w + geom.align_x - 1) / geom.align_x * geom.align_x
               : G->ev.chunk > 0    ? G->ev.chunk
                                    : G->tx;
    if (G->chunk > G->tx) G->chunk = G->tx;
    G->images = p->st[geom.m[0]].n;
    /* The tile grid starts at the live-outs' first needed pixel (in the
     * reference's coordinates, down to a multiple of the alignment so every
     * member's share starts on a whole pixel). */
    double ey0, ey1, ex0, ex1;
    ps_group_extent(p, &geom, &ey0, &ey1, &ex0, &ex1);
    int64_t anchor_y = ps_floor_div((int64_t)floor(ey0), geom.align_y) * geom.align_y;
    int64_t anchor_x = ps_floor_div((int64_t)floor(ex0), geom.align_x) * geom.align_x;
    int64_t ti0 = INT64_MAX, ti1 = INT64_MIN, tj0 = INT64_MAX, tj1 = INT64_MIN;
    for (int k = 0; k < n; k++) {
        ps_gx_member *M = &G->mem[k];
        const ps_pstage *S = &p->st[geom.m[k]];
        M->stage = geom.m[k];
        M->live_out = geom.live_out[k];
        M->inner_cons = geom.inner_cons[k];
        M->own_h = ps_group_member_tile(&geom.sy[k], G->ty);
        M->own_w = ps_group_member_tile(&geom.sx[k], G->tx);
        M->own_y0 = ps_group_member_tile(&geom.sy[k], anchor_y);
        M->own_x0 = ps_group_member_tile(&geom.sx[k], anchor_x);
        M->form = forms[k];
        /* isl's regions are for tiles from 0; the anchor shifts them all */
        M->form.by += M->own_y0;
        M->form.bx += M->own_x0;
        for (int j = 0; j < S->n_in; j++) {
            M->in_member[j] = ps_group_member_index(&geom, S->in[j]);
            if (M->in_member[j] < 0) continue;
            ps_gx_member *P = &G->mem[M->in_member[j]];
            int *a = realloc(P->read_by, (size_t)(P->n_reads + 1) * sizeof *a);
            int *b = a ? realloc(P->read_as, (size_t)(P->n_reads + 1) * sizeof *b) : NULL;
            if (a) P->read_by = a;
            if (!a || !b) {
                st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
                break;
            }
            P->read_as = b;
            P->read_by[P->n_reads] = k;
            P->read_as[P->n_reads++] = j;
        }
        if (M->live_out) {
            int64_t a = ps_floor_div(S->need.y0 - M->own_y0, M->own_h);
            int64_t b = ps_floor_div(S->need.y0 + S->need.h - 1 - M->own_y0, M->own_h);
            int64_t c = ps_floor_div(S->need.x0 - M->own_x0, M->own_w);
            int64_t d = ps_floor_div(S->need.x0 + S->need.w - 1 - M->own_x0, M->own_w);
            if (a < ti0) ti0 = a;
            if (b > ti1) ti1 = b;
            if (c < tj0) tj0 = c;
            if (d > tj1) tj1 = d;
        }
    }
    /* Producer epilogues (graph_exec.h): a stencil, mix or resampling
     * member read only by one pointwise member, not a live-out, with as
     * many channels, is computed in its reader's pass. */
    for (int k = 0; k < n; k++) G->mem[k].fused_into = -1;
    for (int k = 0; k < n && !st && !(pl->opts.flags & PS_GRAPH_NO_EPILOGUE); k++) {
        ps_gx_member *K = &G->mem[k];
        const ps_pstage *S = &p->st[K->stage];
        if (K->live_out || K->n_reads == 0 || S->kind == PS_NODE_POINTWISE || S->px) continue;
        int q = K->read_by[0], ok = 1;
        for (int i = 0; i < K->n_reads; i++) ok &= K->read_by[i] == q;
        const ps_pstage *Q = &p->st[G->mem[q].stage];
        if (!ok || Q->kind != PS_NODE_POINTWISE || Q->c != S->c) continue;
        K->fused_into = q;
        for (int i = 0; i < K->n_reads; i++) G->mem[q].fused[K->read_as[i]] = 1;
    }
    for (int q = 0; q < n; q++) {
        G->mem[q].n_fused = 0;
        for (int j = 0; j < PS_POINTWISE_MAX_INPUTS; j++) G->mem[q].n_fused += G->mem[q].fused[j];
    }
    G->ti0 = ti0;
    G->tj0 = tj0;
    G->gy = ti1 - ti0 + 1;
    G->gx = tj1 - tj0 + 1;
    /* Interior tiles share the isl forms; the others get a row of the table. */
    G->btile = malloc((size_t)(G->gy * G->gx) * sizeof *G->btile);
    ps_box *box = malloc((size_t)n * sizeof *box);
    int64_t *maxh = calloc((size_t)n, sizeof *maxh);
    int cap = 0;
    if (!G->btile || !box || !maxh) st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    /* Scratch is sized by the regions tiles really have (a forced tile far
     * larger than the image is clipped to it). */
    for (int k = 0; k < n && !st; k++) {
        G->mem[k].max_w = 1;
        maxh[k] = 1;
    }
    for (int64_t ti = ti0; ti <= ti1 && !st; ti++)
        for (int64_t tj = tj0; tj <= tj1 && !st; tj++) {
            tile_boxes(p, G, ti, tj, box);
            int interior = 1;
            for (int k = 0; k < n && interior; k++) {
                ps_box f = ps_region_at(&G->mem[k].form, ti, tj);
                interior = box_eq(&f, &box[k]);
            }
            int64_t cell = (ti - ti0) * G->gx + (tj - tj0);
            for (int k = 0; k < n; k++) {
                G->computed_pts += (double)box[k].h * (double)box[k].w * (double)p->st[G->mem[k].stage].c;
                if (box[k].w > G->mem[k].max_w) G->mem[k].max_w = box[k].w;
                if (box[k].h > maxh[k]) maxh[k] = box[k].h;
            }
            if (interior) {
                G->btile[cell] = -1;
                continue;
            }
            if (G->n_btiles == cap) {
                cap = cap ? 2 * cap : 16;
                ps_box *t = realloc(G->bbox, (size_t)cap * (size_t)n * sizeof *t);
                if (!t) {
                    st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
                    break;
                }
                G->bbox = t;
            }
            memcpy(G->bbox + (size_t)G->n_btiles * n, box, (size_t)n * sizeof *box);
            G->btile[cell] = G->n_btiles++;
        }
    G->computed_pts *= (double)G->images;
    for (int k = 0; k < n && !st; k++) {
        const ps_pstage *S = &p->st[G->mem[k].stage];
        G->needed_pts += (double)S->need.h * (double)S->need.w * (double)S->c * (double)S->n;
        if (G->computed_pts < 0) G->computed_pts = 0;
        G->mem[k].scr_rs = (int64_t)round16((size_t)G->mem[k].max_w);
    }
    if (!st) st = ps_graph_taps_plan(pl, G);
    if (!st) st = build_programs(pl, G, maxh);
    if (!st) st = ps_graph_sibs_plan(pl, G);
    free(forms);
    free(box);
    free(maxh);
    ps_group_geom_release(&geom);
    return st;
}

static void append(char **text, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char **text, size_t *len, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || !*text) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    char *t = realloc(*text, *len + (size_t)n + 1);
    if (!t) return;
    memcpy(t + *len, line, (size_t)n + 1);
    *text = t;
    *len += (size_t)n;
}

/* The evidence behind group gi, for describe and PS_VERBOSE: its cost
 * against its stages' apart, and for each group that reads it the cost of
 * the two together (or why they cannot be fused). Costs come from the
 * planner's memo, so this repeats no isl work. */
static ps_status explain_group(ps_graph_plan *pl, ps_fusion_state *fs, const int *group_of, int gi)
{
    const ps_pipeline *p = &pl->pipe;
    ps_gx_group *G = &pl->groups[gi];
    size_t len = 0;
    G->why = calloc(1, 1);
    int *m = malloc(((size_t)p->n + 1) * sizeof *m);
    if (!G->why || !m) {
        free(m);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    ps_status st = PS_SUCCESS;
    static const char *const mode_note[] = {"", "greedy grouping (a group joins its only consumer group while legal); ",
                                            "no fusion requested; ", "grouping fixed by the caller; "};
    append(&G->why, &len, "%s", mode_note[pl->opts.fusion]);
    if (G->n > 1) {
        double apart = 0;
        for (int k = 0; k < G->n && !st; k++) {
            ps_group_eval ev;
            st = ps_group_evaluate(fs, &G->mem[k].stage, 1, &ev);
            apart += ev.cost;
        }
        append(&G->why, &len, "fused: %.4g ms together, %.4g ms with its %d stages apart", G->ev.cost * 1e3, apart * 1e3, G->n);
    } else {
        append(&G->why, &len, "one stage");
    }
    char *seen = calloc((size_t)pl->n_groups + 1, 1);
    for (int k = 0; k < G->n && !st && seen; k++) {
        const ps_pstage *S = &p->st[G->mem[k].stage];
        for (int c = 0; c < S->n_cons && !st; c++) {
            int h = group_of[S->cons[c]];
            if (h < 0 || h == gi || seen[h]) continue;
            seen[h] = 1;
            int n = 0;
            for (int s = 0; s < p->n; s++)
                if (group_of[s] == gi || group_of[s] == h) m[n++] = s;
            ps_group_eval both;
            st = ps_group_evaluate(fs, m, n, &both);
            if (st) break;
            if (!both.legal)
                append(&G->why, &len, "; not fused with group %d: %s", h, both.why);
            else
                append(&G->why, &len, "; with group %d: %.4g ms together, %.4g + %.4g ms apart%s", h, both.cost * 1e3,
                       G->ev.cost * 1e3, pl->groups[h].ev.cost * 1e3,
                       pl->opts.fusion != PS_FUSION_DP ? ""
                       : both.cost > G->ev.cost + pl->groups[h].ev.cost ? " (cheaper apart)"
                                                                         : " (the pair is cheaper, but not with the rest of the DAG's grouping)");
        }
    }
    free(seen);
    free(m);
    if (!st && pl->ctx->verbose) fprintf(stderr, "polysci_verbose,graph_group,%d,%s\n", gi, G->why);
    return st;
}

/* A stage read by another group: stored in the workspace (place_tensors). */
static int read_outside(const ps_pipeline *p, const int *group_of, int s)
{
    const ps_pstage *S = &p->st[s];
    int outside = 0;
    for (int c = 0; c < S->n_cons; c++) outside |= group_of[S->cons[c]] != group_of[s];
    return ps_pstage_computed(S) && outside;
}

/* Concatenations written in place (graph_dl.h: "a stage writing into a
 * channel slice of its consumer's input"): a concatenation alone in its
 * group, stored in the workspace for later groups, and an input of it
 * computed by another group, read by nothing else, over the same pixels:
 * that input is stored straight into its channel slice of the
 * concatenation's tensor (layer plans through ps_conv_desc's
 * dst_pixel_stride, tiles through strided pixel rows), and the
 * concatenation copies only the other inputs, or runs not at all. Where
 * the input is a convolution with a folded residual, its residual would be
 * read with the slice's stride: it keeps its own tensor. */
static void place_slices(ps_graph_plan *pl, const int *group_of)
{
    const ps_pipeline *p = &pl->pipe;
    for (int q = 0; q < p->n; q++) {
        const ps_pstage *Q = &p->st[q];
        if (Q->kind != PS_NODE_CONCAT || !Q->px || Q->output_index >= 0 || Q->needless || !read_outside(p, group_of, q))
            continue;
        int alone = 1;
        for (int s = 0; s < p->n; s++) alone &= s == q || group_of[s] != group_of[q];
        if (!alone) continue;
        int64_t c0 = 0;
        for (int j = 0; j < Q->n_in; c0 += p->st[Q->in[j]].c, j++) {
            const int a = Q->in[j];
            const ps_pstage *A = &p->st[a];
            if (!ps_pstage_computed(A) || !A->px || A->n_cons != 1 || A->output_index >= 0 || A->needless ||
                A->sum_in || group_of[a] == group_of[q] || pl->xs[a].slice_of >= 0 ||
                memcmp(&A->need, &Q->need, sizeof A->need) || memcmp(&A->dom, &Q->dom, sizeof A->dom))
                continue;
            pl->xs[a].slice_of = q;
            pl->xs[a].slice_c0 = c0;
            pl->xs[q].sliced_inputs++;
        }
    }
}

/* Tensors read by another group live in the workspace, each from the
 * first group that writes it to the last group that reads it (groups run
 * in index order, a barrier between them). Tensors whose group spans do not
 * overlap share memory: first fit by offset, in the order they are
 * written. A network body's activations then take a few of its largest
 * tensors' bytes instead of all of them, and the buffers a layer writes
 * are ones recently read, still in the last-level cache, instead of
 * memory untouched since the previous execution. */
static ps_status place_tensors(ps_graph_plan *pl, const int *group_of)
{
    const ps_pipeline *p = &pl->pipe;
    int *order = malloc(((size_t)p->n + 1) * sizeof *order), *last = malloc(((size_t)p->n + 1) * sizeof *last);
    int *first = malloc(((size_t)p->n + 1) * sizeof *first);
    size_t *floats = malloc(((size_t)p->n + 1) * sizeof *floats);
    if (!order || !last || !floats || !first) {
        free(order), free(last), free(floats), free(first);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    int n = 0;
    /* first[s]: the first group writing s's tensor (a concatenation's
     * tensor is written by its sliced inputs' groups too) */
    for (int s = 0; s < p->n; s++) first[s] = group_of[s];
    for (int s = 0; s < p->n; s++)
        if (pl->xs[s].slice_of >= 0 && group_of[s] < first[pl->xs[s].slice_of]) first[pl->xs[s].slice_of] = group_of[s];
    for (int s = 0; s < p->n; s++) {
        const ps_pstage *S = &p->st[s];
        if (!read_outside(p, group_of, s) || pl->xs[s].slice_of >= 0) continue;
        last[s] = group_of[s];
        for (int c = 0; c < S->n_cons; c++)
            if (group_of[S->cons[c]] > last[s]) last[s] = group_of[S->cons[c]];
        floats[s] = round16((size_t)S->n * (size_t)S->c * (size_t)S->need.h * (size_t)S->need.w);
        /* insertion by first writing group (stable: stage order within a group) */
        int i = n++;
        while (i > 0 && first[order[i - 1]] > first[s]) order[i] = order[i - 1], i--;
        order[i] = s;
    }
    pl->ws_tensor_floats = 0;
    for (int i = 0; i < n; i++) {
        const int s = order[i];
        size_t off = 0;
        /* the lowest offset clear of every placed tensor live at the same time */
        for (int moved = 1; moved;) {
            moved = 0;
            for (int j = 0; j < i; j++) {
                const int u = order[j];
                const int overlap = first[u] <= last[s] && first[s] <= last[u];
                const size_t uo = pl->xs[u].ws_off;
                if (overlap && off < uo + floats[u] && uo < off + floats[s]) {
                    off = uo + floats[u];
                    moved = 1;
                }
            }
        }
        pl->xs[s].ws_off = off;
        if (off + floats[s] > pl->ws_tensor_floats) pl->ws_tensor_floats = off + floats[s];
    }
    /* a sliced input is stored: in its concatenation's tensor */
    for (int s = 0; s < p->n; s++)
        if (pl->xs[s].slice_of >= 0) pl->xs[s].ws_off = pl->xs[pl->xs[s].slice_of].ws_off;
    free(order), free(last), free(floats), free(first);
    return PS_SUCCESS;
}

/* Convolutions alone in their group whose input and output are whole
 * channels-last tensors (a graph input or output in NHWC, or a workspace
 * tensor stored over its whole domain) run as layer plans: the layer
 * planner's schedules block K and C so a tile's weights stay in cache,
 * which rows of a few pixels (deep layers of 7 x 7 or 14 x 14 pixels) do
 * not. A convolution the layer planner refuses keeps the row executor.
 * top_k and budget_ms: the layer plans' ps_plan_options. */
static void plan_layer_groups(ps_graph_plan *pl, int top_k, double budget_ms)
{
    const ps_pipeline *p = &pl->pipe;
    for (int gi = 0; gi < pl->n_groups; gi++) {
        ps_gx_group *G = &pl->groups[gi];
        if (G->n != 1) continue;
        const ps_pstage *S = &p->st[G->mem[0].stage], *I = &p->st[S->in[0]];
        const ps_gx_stage *X = &pl->xs[G->mem[0].stage];
        if (S->kind != PS_NODE_CONV || !S->px) continue;
        /* every input a whole NHWC tensor from (0, 0): a graph input, or a
         * workspace tensor stored over its domain */
        int in_ok = 1;
        for (int j = 0; j < S->n_in; j++) {
            const ps_pstage *J = &p->st[S->in[j]];
            in_ok &= J->kind == PS_NODE_INPUT ? J->layout == PS_LAYOUT_NHWC
                                              : J->px && pl->xs[S->in[j]].ws_off != SIZE_MAX && !J->needless &&
                                                    !memcmp(&J->need, &J->dom, sizeof J->dom);
            in_ok &= !J->dom.y0 && !J->dom.x0;
        }
        int to_out = S->output_index >= 0, to_ws = X->ws_off != SIZE_MAX;
        int out_ok = to_out + to_ws == 1 && (to_out ? S->layout == PS_LAYOUT_NHWC && !memcmp(&S->out_region, &S->dom, sizeof S->dom)
                                                    : !memcmp(&S->need, &S->dom, sizeof S->dom));
        if (!in_ok || !out_ok || I->dom.y0 || I->dom.x0 || S->dom.y0 || S->dom.x0) continue;
        ps_desc d;
        ps_desc_init_conv(&d);
        ps_conv_desc *c = &d.u.conv;
        c->N = S->n, c->C = S->in_c, c->K = S->c, c->H = I->dom.h, c->W = I->dom.w, c->R = S->conv_r, c->S = S->conv_s;
        c->stride_h = S->sy, c->stride_w = S->sx, c->dilation_h = S->dil_h, c->dilation_w = S->dil_w;
        c->pad_top = S->pad_t, c->pad_bottom = S->pad_b, c->pad_left = S->pad_l, c->pad_right = S->pad_r;
        c->layout = PS_LAYOUT_NHWC;
        c->weight_layout = PS_WEIGHTS_RSCK; /* the stage's [t][c][k] */
        int relu = S->act && S->act_lo == 0.0f && S->act_hi == INFINITY, relu6 = S->act && S->act_lo == 0.0f && S->act_hi == 6.0f;
        c->post_ops = (S->bias ? PS_POST_BIAS : 0u) | (relu ? PS_POST_RELU : 0u) | (relu6 ? PS_POST_RELU6 : 0u) |
                      (S->sum_in ? PS_POST_SUM : 0u);
        /* into its slice of a concatenation's tensor (place_slices) */
        if (X->slice_of >= 0) c->dst_pixel_stride = p->st[X->slice_of].c;
        ps_plan_options po;
        ps_plan_options_init(&po);
        po.num_threads = pl->nthreads;
        po.top_k = top_k;
        po.time_budget_ms = budget_ms;
        ps_plan *lp = NULL;
        size_t wbytes = 0;
        void *packed = NULL;
        if (ps_plan_create(pl->ctx, &d, &po, &lp) != PS_SUCCESS) continue;
        /* the layer plan computes exactly this stage: its output size */
        int64_t oh = (c->H + c->pad_top + c->pad_bottom - c->dilation_h * (c->R - 1) - 1) / c->stride_h + 1;
        int64_t ow = (c->W + c->pad_left + c->pad_right - c->dilation_w * (c->S - 1) - 1) / c->stride_w + 1;
        if (oh != S->dom.h || ow != S->dom.w || ps_plan_packed_weights_size(lp, &wbytes) != PS_SUCCESS ||
            !(packed = aligned_alloc(64, (wbytes + 63) & ~(size_t)63)) || ps_plan_pack_weights(lp, S->w, packed) != PS_SUCCESS) {
            free(packed);
            ps_plan_destroy(lp);
            continue;
        }
        G->layer = lp;
        G->layer_weights = packed;
        G->layer_clamp = S->act && !relu && !relu6;
    }
}

/* Scratch layout and per-thread sizes, once destinations are known. */
static ps_status layout(ps_graph_plan *pl)
{
    const ps_pipeline *p = &pl->pipe;
    size_t scratch_max = 0, staging = 0, temp = 16, regs = 0, zeros = 16, fused = 0;
    pl->max_members = 1;
    for (int gi = 0; gi < pl->n_groups; gi++) {
        ps_gx_group *G = &pl->groups[gi];
        size_t off = 0;
        if (G->n > pl->max_members) pl->max_members = G->n;
        for (int k = 0; k < G->n; k++) {
            ps_gx_member *M = &G->mem[k];
            const ps_pstage *S = &p->st[M->stage];
            const ps_gx_stage *X = &pl->xs[M->stage];
            int dests = (S->output_index >= 0) + (X->ws_off != SIZE_MAX);
            M->direct = !M->inner_cons && dests == 1;
            size_t bytes = 4 * (size_t)S->n * (size_t)S->c *
                           (size_t)(S->output_index >= 0 ? S->out_region.h * S->out_region.w : S->need.h * S->need.w);
            size_t stream_from = ps_machine_stream_bytes(&pl->ctx->machine);
            M->stream = M->direct && stream_from && bytes >= stream_from && !S->px &&
                        (S->output_index < 0 || S->layout == PS_LAYOUT_NCHW);
            M->scr_off = off;
            if (!M->direct && M->fused_into < 0 && M->inlined_into < 0)
                off += round16((size_t)S->c * (size_t)M->scr_h * (size_t)M->scr_rs);
            if (M->n_fused && (size_t)S->n_in * PS_FUSED_CHUNK > fused) fused = (size_t)S->n_in * PS_FUSED_CHUNK;
            /* rows of pixel-row stages hold all their channels */
            size_t w = (size_t)M->max_w, need = 0, fetch = w;
            const size_t C = S->px ? (size_t)S->c : 1, Cin = S->px && S->n_in ? (size_t)p->st[S->in[0]].c : 1;
            switch (S->kind) {
            case PS_NODE_STENCIL:
            case PS_NODE_CONV:
                fetch = ((size_t)S->sx * (w - 1) + (size_t)(X->dx_max - X->dx_min) + 1) * Cin;
                need = (size_t)X->n_rows * fetch + (S->sum_in ? w * C : 0);
                if (S->sum_in && w * C > fetch) fetch = w * C;
                break;
            case PS_NODE_POINTWISE:
                need = (size_t)S->n_in * w * C;
                /* registers of the interpreter: a compiled program keeps its values in locals */
                if (!S->prog.fn && (size_t)S->prog.n_regs * PS_VCHUNK > regs) regs = (size_t)S->prog.n_regs * PS_VCHUNK;
                break;
            case PS_NODE_MIX: need = (size_t)S->in_c * w; break;
            case PS_NODE_CONCAT:
                for (int j = 0; j < S->n_in; j++)
                    if ((size_t)p->st[S->in[j]].c * w > need) need = (size_t)p->st[S->in[j]].c * w;
                fetch = need;
                break;
            case PS_NODE_GAP:
                need = fetch = (size_t)p->st[S->in[0]].need.w * C;
                break;
            case PS_NODE_RESAMPLE:
                fetch = 2 * w + 4;
                need = 2 * fetch;
                break;
            default: break;
            }
            if (M->tap) {
                /* a tap program's rows, a piece of columns at a time */
                const size_t piece = PS_FUSED_CHUNK + (size_t)M->tap_span;
                /* and on the edge path, an inlined producer's rows and its inputs' */
                size_t edge = 0;
                for (int j = 0; j < M->tap->n_terms; j++)
                    if (M->tap->term[j].inl) {
                        size_t e = (size_t)pl->xs[G->mem[M->in_member[j]].stage].n_rows + (size_t)M->tap->term[j].n_inl_in;
                        if (e > edge) edge = e;
                    }
                if (((size_t)M->tap->n_rows + edge) * piece > need) need = ((size_t)M->tap->n_rows + edge) * piece;
                if (M->tap2) {
                    const size_t piece2 = PS_FUSED_CHUNK + (size_t)M->tap2_span;
                    if ((size_t)M->tap2->n_rows * piece2 > need) need = (size_t)M->tap2->n_rows * piece2;
                    if (piece2 > fetch) fetch = piece2;
                }
                if (piece > fetch) fetch = piece;
            }
            if (need > staging) staging = need;
            if (fetch > zeros) zeros = fetch;
            if (w * C + 16 > temp) temp = w * C + 16;
        }
        G->scratch_floats = off;
        if (off > scratch_max) scratch_max = off;
    }
    pl->staging_floats = round16(staging);
    pl->temp_floats = round16(temp);
    pl->regs_floats = round16(regs);
    pl->fused_floats = round16(fused);
    pl->zero_floats = round16(zeros);
    pl->boxes_floats = round16((size_t)pl->max_members * sizeof(ps_box) / sizeof(float));
    pl->temp_rows = 2;
    for (int gi = 0; gi < pl->n_groups; gi++)
        for (int k = 0; k < pl->groups[gi].n; k++)
            if (pl->groups[gi].mem[k].tap2 && pl->groups[gi].mem[k].tap2->rows_per_call > pl->temp_rows)
                pl->temp_rows = pl->groups[gi].mem[k].tap2->rows_per_call;
    pl->thread_floats = round16(scratch_max) + pl->staging_floats + (size_t)pl->temp_rows * pl->temp_floats + pl->regs_floats +
                        pl->fused_floats + 3 * pl->zero_floats + pl->boxes_floats;
    double bytes = ((double)round16(pl->ws_tensor_floats) + (double)pl->nthreads * (double)pl->thread_floats) * 4.0;
    if (bytes > 1e18) return ps_error(PS_ERR_OVERFLOW, "ps_graph_plan_create: the workspace would overflow");
    pl->workspace_bytes = (size_t)bytes;
    if (pl->ctx->memory_limit && pl->workspace_bytes > pl->ctx->memory_limit)
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: the plan needs a %zu-byte workspace, over the context's limit of %zu",
                        pl->workspace_bytes, pl->ctx->memory_limit);
    return PS_SUCCESS;
}

/* The cache key of a plan: the graph's content hash, its outputs and
 * everything in the options that changes the plan. */
static void plan_key(const ps_graph *g, const ps_graph_options *o, int nthreads, uint64_t key[2])
{
    key[0] = g->hash[0];
    key[1] = g->hash[1];
    /* a measured layer plan's choice depends on the timing options too */
    const double budget = o->layer_top_k > 1 ? o->layer_time_budget_ms : 0.0;
    int64_t head[] = {g->n, g->n_inputs, g->n_outputs, nthreads, o->fusion, o->tile_h, o->tile_w, o->chunk_w,
                      o->group_limit, (int64_t)(o->flags & ~PS_GRAPH_NO_CACHE), o->layer_top_k > 1 ? o->layer_top_k : 0};
    ps_hash_bytes(key, head, sizeof head);
    ps_hash_bytes(key, &budget, sizeof budget);
    for (int i = 0; i < g->n_outputs; i++) {
        const ps_node *nd = &g->nodes[g->outputs[i]];
        int64_t out[] = {g->outputs[i], nd->layout, nd->out_region.y0, nd->out_region.x0, nd->out_region.h,
                         nd->out_region.w};
        ps_hash_bytes(key, out, sizeof out);
    }
    if (o->fusion == PS_FUSION_FIXED) ps_hash_bytes(key, o->group_of, (size_t)o->n_group_of * sizeof *o->group_of);
}

/* A cached plan with this key (a new reference), or NULL. */
static ps_graph_plan *cache_lookup(ps_context *ctx, const uint64_t key[2])
{
    ps_graph_plan *hit = NULL;
    pthread_mutex_lock(&ctx->cache_lock);
    for (int i = 0; i < ctx->graph_n && !hit; i++)
        if (ctx->graph_plans[i]->key[0] == key[0] && ctx->graph_plans[i]->key[1] == key[1]) hit = ctx->graph_plans[i];
    if (hit) __atomic_add_fetch(&hit->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&ctx->cache_lock);
    return hit;
}

/* Gives the context a reference to pl (nothing when out of memory: the
 * plan is then just not cached). The context keeps the newest
 * PS_GRAPH_CACHE_MAX plans: a process that plans ever new graphs does not
 * accumulate them. */
#define PS_GRAPH_CACHE_MAX 64
static void cache_insert(ps_context *ctx, ps_graph_plan *pl)
{
    pthread_mutex_lock(&ctx->cache_lock);
    if (ctx->graph_n == PS_GRAPH_CACHE_MAX) {
        ps_graph_plan *old = ctx->graph_plans[0];
        memmove(ctx->graph_plans, ctx->graph_plans + 1, (size_t)(ctx->graph_n - 1) * sizeof *ctx->graph_plans);
        ctx->graph_n--;
        ps_graph_plan_destroy(old); /* the context's reference; a caller's keeps it alive */
    }
    if (ctx->graph_n == ctx->graph_cap) {
        int cap = ctx->graph_cap ? 2 * ctx->graph_cap : 8;
        ps_graph_plan **v = realloc(ctx->graph_plans, (size_t)cap * sizeof *v);
        if (v) {
            ctx->graph_plans = v;
            ctx->graph_cap = cap;
        }
    }
    if (ctx->graph_n < ctx->graph_cap) {
        __atomic_add_fetch(&pl->refs, 1, __ATOMIC_ACQ_REL);
        ctx->graph_plans[ctx->graph_n++] = pl;
    }
    pthread_mutex_unlock(&ctx->cache_lock);
}

ps_status ps_graph_plan_create(ps_context *ctx, const ps_graph *graph, const ps_graph_options *opts, ps_graph_plan **out)
{
    static const char who[] = "ps_graph_plan_create";
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "%s: plan is NULL", who);
    *out = NULL;
    if (!ctx || !graph) return ps_error(PS_ERR_NULL_POINTER, "%s: ctx or graph is NULL", who);
    ps_graph_options def;
    if (!opts) {
        ps_graph_options_init(&def);
        opts = &def;
    }
    ps_status st = check_options(graph, opts);
    if (st) return st;
    double t0 = ps_now_ms();
    uint64_t key[2];
    const int use_cache = !(opts->flags & PS_GRAPH_NO_CACHE);
    plan_key(graph, opts, opts->num_threads ? opts->num_threads : ctx->num_threads, key);
    if (use_cache && (*out = cache_lookup(ctx, key))) {
        if (ctx->verbose)
            fprintf(stderr, "polysci_verbose,graph_create,%d stages,%d groups,%s,%.3f,cache_hit\n", (*out)->pipe.n,
                    (*out)->n_groups, (*out)->k->isa, ps_now_ms() - t0);
        return PS_SUCCESS;
    }
    ps_graph_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    pl->refs = 1;
    pl->key[0] = key[0];
    pl->key[1] = key[1];
    pl->ctx = ctx;
    pl->opts = *opts;
    pl->opts.group_of = NULL;
    pl->nthreads = opts->num_threads ? opts->num_threads : ctx->num_threads;
    st = ps_pipeline_build(graph, !(opts->flags & PS_GRAPH_NO_INLINE), &pl->pipe);
    if (st) {
        free(pl);
        return st;
    }
    ps_pipeline *p = &pl->pipe;
    pl->k = ps_row_kernels_for(ctx->machine.simd_f32_lanes < ctx->row_lanes_max ? ctx->machine.simd_f32_lanes
                                                                                : ctx->row_lanes_max);
    pl->xs = calloc((size_t)p->n, sizeof *pl->xs);
    int *group_of = malloc(((size_t)p->n + 1) * sizeof *group_of), *group_in = NULL;
    if (!pl->xs || !group_of) st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    for (int s = 0; s < p->n && !st; s++) {
        ps_pstage *S = &p->st[s];
        pl->xs[s].ws_off = SIZE_MAX;
        pl->xs[s].slice_of = -1;
        if (S->kind == PS_NODE_POINTWISE) st = ps_vprog_lower(S->expr, &S->prog);
        if (!st && ps_pstage_has_taps(S) && stencil_rows(S, &pl->xs[s]))
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
        if (!st && S->px) st = prepare_pixel_stage(S, &pl->xs[s]);
    }
    if (!st && opts->fusion == PS_FUSION_FIXED) {
        group_in = malloc(((size_t)p->n + 1) * sizeof *group_in);
        if (!group_in) st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
        else
            for (int s = 0; s < p->n; s++) group_in[s] = opts->group_of[p->st[s].graph_tensor];
    }
    isl_ctx *ictx = NULL;
    ps_fusion_state *fs = NULL;
    if (!st) {
        ictx = isl_ctx_alloc();
        if (ictx) isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
        ps_cost_model cm;
        ps_cost_model_init(&cm, &ctx->machine, pl->nthreads);
        cm.force_ty = opts->tile_h;
        cm.force_tx = opts->tile_w;
        for (int s = 0; s < p->n; s++) pl->xs[s].prefetch = ps_tensor_in_memory(&cm, &p->st[s]);
        pl->prefetch_piece = (int64_t)(cm.cache[0] / 64) < 16 ? 16 : (int64_t)(cm.cache[0] / 64);
        fs = ictx ? ps_fusion_state_create(ictx, p, &cm) : NULL;
        if (!fs) st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
    if (!st) st = ps_fuse(fs, opts->fusion, group_in, opts->group_limit, group_of, &pl->n_groups, &pl->fuse_ms, &pl->dp_states);
    for (int s = 0; s < p->n && !st; s++) pl->xs[s].group = group_of[s];
    if (!st) place_slices(pl, group_of);
    if (!st) st = place_tensors(pl, group_of);
    if (!st) {
        pl->groups = calloc((size_t)pl->n_groups, sizeof *pl->groups);
        if (!pl->groups) st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
    for (int gi = 0; gi < pl->n_groups && !st; gi++) st = build_group(pl, fs, group_of, gi);
    for (int gi = 0; gi < pl->n_groups && !st; gi++) st = explain_group(pl, fs, group_of, gi);
    if (!st) st = compile_programs(pl);
    for (int gi = 0; gi < pl->n_groups && !st; gi++) ps_graph_taps_drop_failed(&pl->groups[gi]);
    if (!st) st = layout(pl);
    if (!st) plan_layer_groups(pl, opts->layer_top_k, opts->layer_time_budget_ms);
    for (int gi = 0; gi < pl->n_groups && !st; gi++) {
        /* a concatenation alone whose inputs all wrote their slices (its
         * member is direct: alone, stored once, in the workspace) */
        const ps_gx_group *G = &pl->groups[gi];
        const ps_pstage *Q = &p->st[G->mem[0].stage];
        pl->groups[gi].nothing_left = G->n == 1 && Q->kind == PS_NODE_CONCAT && pl->xs[G->mem[0].stage].sliced_inputs == Q->n_in;
    }
    if (fs) pl->cost_evaluations = fs->evaluations;
    ps_fusion_state_destroy(fs);
    if (ictx) isl_ctx_free(ictx);
    free(group_of);
    free(group_in);
    if (st) {
        ps_graph_plan_destroy(pl);
        return st;
    }
    pl->plan_ms = ps_now_ms() - t0;
    if (ctx->verbose)
        fprintf(stderr, "polysci_verbose,graph_create,%d stages,%d groups,%s,%.3f,planned\n", p->n, pl->n_groups,
                pl->k->isa, pl->plan_ms);
    if (use_cache) cache_insert(ctx, pl);
    *out = pl;
    return PS_SUCCESS;
}

ps_status ps_graph_plan_workspace_size(const ps_graph_plan *plan, size_t *bytes)
{
    if (!plan || !bytes) return ps_error(PS_ERR_NULL_POINTER, "ps_graph_plan_workspace_size: plan or bytes is NULL");
    *bytes = plan->workspace_bytes;
    return PS_SUCCESS;
}

ps_status ps_graph_execute(const ps_graph_plan *plan, const float *const *inputs, float *const *outputs, void *workspace)
{
    static const char who[] = "ps_graph_execute";
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "%s: plan is NULL", who);
    if (!inputs && plan->pipe.n_inputs) return ps_error(PS_ERR_NULL_POINTER, "%s: inputs is NULL", who);
    if (!outputs) return ps_error(PS_ERR_NULL_POINTER, "%s: outputs is NULL", who);
    for (int i = 0; i < plan->pipe.n_inputs; i++)
        if (!inputs[i]) return ps_error(PS_ERR_NULL_POINTER, "%s: input %d (\"%s\") is NULL", who, i,
                                        plan->pipe.st[plan->pipe.input_stage[i]].name);
    for (int i = 0; i < plan->pipe.n_outputs; i++)
        if (!outputs[i]) return ps_error(PS_ERR_NULL_POINTER, "%s: output %d (\"%s\") is NULL", who, i,
                                         plan->pipe.st[plan->pipe.output_stage[i]].name);
    if (workspace && ((uintptr_t)workspace & 63))
        return ps_error(PS_ERR_INVALID_ARG, "%s: workspace must be 64-byte aligned", who);
    void *ws = workspace;
    if (!ws) {
        ws = aligned_alloc(64, (plan->workspace_bytes + 63) / 64 * 64 + 64);
        if (!ws) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: cannot allocate the %zu-byte workspace", who, plan->workspace_bytes);
    }
    double t0 = plan->ctx->verbose ? ps_now_ms() : 0;
    double *group_ms = plan->ctx->verbose >= 2 ? calloc((size_t)plan->n_groups, sizeof *group_ms) : NULL;
    ps_graph_run(plan, inputs, outputs, ws, group_ms);
    if (plan->ctx->verbose)
        fprintf(stderr, "polysci_verbose,graph_exec,%d stages,%d groups,%.3f\n", plan->pipe.n, plan->n_groups, ps_now_ms() - t0);
    for (int g = 0; group_ms && g < plan->n_groups; g++)
        fprintf(stderr, "polysci_verbose,graph_group_exec,%d,%s,%s,%.4f\n", g,
                plan->pipe.st[plan->groups[g].mem[plan->groups[g].n - 1].stage].name,
                plan->groups[g].layer ? "layer" : "tiles", group_ms[g]);
    free(group_ms);
    if (!workspace) free(ws);
    return PS_SUCCESS;
}

ps_status ps_graph_plan_get_stats(const ps_graph_plan *plan, ps_graph_plan_stats *s)
{
    if (!plan || !s) return ps_error(PS_ERR_NULL_POINTER, "ps_graph_plan_get_stats: plan or stats is NULL");
    if (s->struct_size != sizeof *s)
        return ps_error(PS_ERR_INVALID_ARG, "ps_graph_plan_get_stats: stats.struct_size is %zu, expected %zu", s->struct_size,
                        sizeof *s);
    double comp = 0, need = 0, cost = 0;
    size_t scratch = 0;
    for (int g = 0; g < plan->n_groups; g++) {
        comp += plan->groups[g].computed_pts;
        need += plan->groups[g].needed_pts;
        cost += plan->groups[g].ev.cost;
        if (plan->groups[g].scratch_floats > scratch) scratch = plan->groups[g].scratch_floats;
    }
    s->n_stages = 0;
    for (int i = 0; i < plan->pipe.n; i++) s->n_stages += ps_pstage_computed(&plan->pipe.st[i]);
    s->n_groups = plan->n_groups;
    s->plan_ms = plan->plan_ms;
    /* Tiles of a strided consumer may skip rows between them that the
     * needed region's hull counts: never below 0. */
    s->redundant_fraction = need > 0 && comp > need ? comp / need - 1.0 : 0.0;
    s->scratch_bytes = plan->thread_floats * sizeof(float);
    s->workspace_bytes = plan->workspace_bytes;
    s->cost = cost;
    (void)scratch;
    return PS_SUCCESS;
}

/* snprintf into buf at *off, counting what would have been written. */
static void out(char *buf, size_t len, size_t *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void out(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = *off < len ? len - *off : 0;
    int n = vsnprintf(room ? buf + *off : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) *off += (size_t)n;
}

static const char *kind_name(const ps_pstage *S)
{
    switch (S->kind) {
    case PS_NODE_STENCIL: return S->affine ? "batchnorm" : "stencil";
    case PS_NODE_CONV: return "conv";
    case PS_NODE_CONCAT: return "concat";
    case PS_NODE_GAP: return "global avg pool";
    case PS_NODE_POINTWISE: return "pointwise";
    case PS_NODE_MIX: return "channel mix";
    case PS_NODE_RESAMPLE:
        return S->resample == PS_RESAMPLE_UP2_NEAREST ? "up2 nearest"
               : S->resample == PS_RESAMPLE_UP2_BILINEAR ? "up2 bilinear" : "down2 average";
    default: return "input";
    }
}

static const char *fusion_name(ps_fusion f)
{
    return f == PS_FUSION_GREEDY ? "greedy" : f == PS_FUSION_NONE ? "none" : f == PS_FUSION_FIXED ? "fixed" : "dp";
}

/* The group's tiled schedule tree, indented, or NULL. */
static char *group_tree(const ps_graph_plan *pl, const ps_gx_group *G)
{
    isl_ctx *ictx = isl_ctx_alloc();
    if (!ictx) return NULL;
    isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
    int *m = malloc((size_t)G->n * sizeof *m);
    ps_region_form *forms = malloc((size_t)G->n * sizeof *forms);
    char *text = NULL, *res = NULL;
    if (m && forms) {
        for (int k = 0; k < G->n; k++) {
            m[k] = G->mem[k].stage;
            forms[k] = G->mem[k].form;
        }
        ps_group_geom geom = {.n = G->n, .m = m};
        text = ps_group_schedule_tree(ictx, &pl->pipe, &geom, forms, G->ti0, G->ti0 + G->gy, G->tj0, G->tj0 + G->gx);
    }
    if (text) {
        size_t lines = 1, n = strlen(text);
        for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
        res = malloc(n + 4 * lines + 2);
        if (res) {
            size_t o = 0;
            int bol = 1;
            for (size_t i = 0; i < n; i++) {
                if (bol) {
                    memcpy(res + o, "    ", 4);
                    o += 4;
                }
                res[o++] = text[i];
                bol = text[i] == '\n';
            }
            if (!bol) res[o++] = '\n';
            res[o] = '\0';
        }
    }
    free(text);
    free(m);
    free(forms);
    isl_ctx_free(ictx);
    return res;
}

ps_status ps_graph_plan_describe(const ps_graph_plan *pl, char *buf, size_t len, size_t *needed)
{
    if (!pl) return ps_error(PS_ERR_NULL_POINTER, "ps_graph_plan_describe: plan is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_graph_plan_describe: buf is NULL");
    const ps_pipeline *p = &pl->pipe;
    size_t off = 0;
    int n_stages = 0, n_inlined = 0;
    for (int s = 0; s < p->n; s++) {
        n_stages += ps_pstage_computed(&p->st[s]);
        n_inlined += p->st[s].n_inlined;
    }
    ps_graph_plan_stats stats = {.struct_size = sizeof stats};
    ps_graph_plan_get_stats(pl, &stats);
    out(buf, len, &off,
        "graph plan: %d stages (%d pointwise stages inlined), %d groups, fusion %s, %d threads, %s row kernels\n"
        "planned in %.2f ms (grouping %.2f ms, %ld DP states, %ld group costs evaluated)\n"
        "redundant computation %.1f%%, workspace %zu bytes (%zu per thread)\n",
        n_stages, n_inlined, pl->n_groups, fusion_name(pl->opts.fusion), pl->nthreads, pl->k->isa, pl->plan_ms, pl->fuse_ms,
        pl->dp_states, pl->cost_evaluations, 100.0 * stats.redundant_fraction, pl->workspace_bytes,
        pl->thread_floats * sizeof(float));
    if (pl->code_progs)
        out(buf, len, &off, "expression code: %d of %d programs compiled (%s, %.1f ms)%s%s\n", pl->code_compiled,
            pl->code_progs, pl->code_compiled ? (pl->code_cached ? "from the cache" : "built") : "interpreted",
            pl->code_ms, pl->code_why[0] ? "; interpreted: " : "", pl->code_why);
    if (pl->code_taps)
        out(buf, len, &off, "tap programs: %d of %d compiled (stencil sums, their pointwise producers or sibling sums in registers)\n",
            pl->code_taps_compiled, pl->code_taps);
    for (int gi = 0; gi < pl->n_groups; gi++) {
        const ps_gx_group *G = &pl->groups[gi];
        const ps_group_eval *ev = &G->ev;
        out(buf, len, &off,
            "group %d: %d stage%s, tile %lld x %lld (%s), %lld x %lld tiles x %lld images (%d boundary), "
            "redundant %.1f%%, scratch %zu bytes/thread\n"
            "  cost %.4g ms: %.3g in+out bytes/point, cores busy %.0f%%, overlap %.1f%%, extent spread %.3g\n",
            gi, G->n, G->n == 1 ? "" : "s", (long long)G->ty, (long long)G->tx,
            ev->level == 0 ? "forced" : "rings of rows in L2", (long long)G->gy, (long long)G->gx,
            (long long)G->images, G->n_btiles, G->needed_pts > 0 ? 100.0 * (G->computed_pts / G->needed_pts - 1.0) : 0.0,
            G->scratch_floats * sizeof(float), ev->cost * 1e3, ev->terms[0], 100.0 * ev->terms[1], 100.0 * ev->terms[2], ev->terms[3]);
        if (G->why) out(buf, len, &off, "  %s\n", G->why);
        for (int k = 0; k < G->n; k++) {
            const ps_gx_member *M = &G->mem[k];
            const ps_pstage *S = &p->st[M->stage];
            out(buf, len, &off, "  %-16s %-13s %lld ch, region %lld x %lld for a %lld x %lld share%s%s%s%s%s", S->name,
                kind_name(S), (long long)S->c, (long long)M->form.h, (long long)M->form.w, (long long)M->own_h,
                (long long)M->own_w, M->live_out ? ", live-out" : "",
                M->fused_into >= 0 ? " (computed in its reader's pass)" : M->direct ? " (written in place)" : "",
                S->output_index >= 0 ? ", graph output" : "", S->n_inlined ? ", inlines " : "", S->n_inlined ? S->inlined : "");
            const ps_gx_stage *X = &pl->xs[M->stage];
            if (X->slice_of >= 0)
                out(buf, len, &off, ", stored in channels %lld-%lld of %s", (long long)X->slice_c0,
                    (long long)(X->slice_c0 + S->c - 1), p->st[X->slice_of].name);
            if (X->sliced_inputs)
                out(buf, len, &off, ", %d of %d inputs write their slices themselves%s", X->sliced_inputs, S->n_in,
                    G->nothing_left ? " (nothing left to run)" : "");
            if (M->inlined_into >= 0)
                out(buf, len, &off, " (computed at the taps of %s's sums, never stored)", p->st[G->mem[M->inlined_into].stage].name);
            if (M->tap) out(buf, len, &off, ", its sums in a compiled tap program (%d rows", M->tap->n_rows);
            if (M->tap2) out(buf, len, &off, "; %d output rows per call over %d", M->tap2->rows_per_call, M->tap2->n_rows);
            if (M->tap) {
                const ps_tap_form tf = ps_codegen_tap_form(M->tap, pl->k->isa);
                out(buf, len, &off, "%s)", tf == PS_TAP_BY_VECTORS ? "; by vectors"
                                           : tf == PS_TAP_BOX_COLUMNS ? "; box sums by columns" : "");
            }
            if (M->sib_lead >= 0)
                out(buf, len, &off, " (computed with %s, sibling sums in one compiled loop)", p->st[G->mem[M->sib_lead].stage].name);
            if (M->stap) {
                out(buf, len, &off, ", sibling sums with");
                for (int j = 0; j < M->n_sib; j++) out(buf, len, &off, "%s%s", j ? "," : " ", p->st[G->mem[M->sib[j]].stage].name);
                out(buf, len, &off, " in one compiled loop (%d rows%s)", M->stap->n_rows,
                    M->stap2 ? "; 2 output rows per call" : "");
            }
            out(buf, len, &off, "\n");
        }
        /* The schedule tree is built here, not at planning: only a
         * description needs it, and isl takes milliseconds to print it. */
        char *tree = group_tree(pl, G);
        if (tree) out(buf, len, &off, "  schedule tree:\n%s", tree);
        free(tree);
    }
    if (needed) *needed = off;
    if (len > 0) buf[off < len ? off : len - 1] = '\0';
    if (len && off >= len)
        return ps_error(PS_ERR_BUFFER_TOO_SMALL, "ps_graph_plan_describe: needs %zu bytes plus NUL", off);
    return PS_SUCCESS;
}
