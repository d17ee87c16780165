/* Tap programs of a graph plan (graph_exec.h, lib/codegen): which
 * pointwise members run their stencil sums, and the pointwise producers
 * those read, as one compiled loop, and the rows each loop reads. */
#include "plan/graph_taps.h"
#include "core/intmath.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "plan/context_impl.h"


static void tprog_free(ps_tprog *T)
{
    if (!T) return;
    for (int j = 0; T->term && j < T->n_terms; j++) {
        free(T->term[j].tap_row);
        free(T->term[j].tap_off);
    }
    free(T->term);
    free(T);
}

void ps_graph_taps_free(ps_gx_member *M)
{
    tprog_free(M->tap);
    tprog_free(M->tap2);
    free(M->rows);
    free(M->rows2);
    M->tap = M->tap2 = NULL;
    M->rows = M->rows2 = NULL;
    tprog_free(M->stap);
    tprog_free(M->stap2);
    M->stap = M->stap2 = NULL;
}

/* A term's box fields from its stencil S (rows and columns in XS). */
static void term_box(ps_tap_term *X, const ps_pstage *S, const ps_gx_stage *XS)
{
    X->box_s = XS->box_s;
    X->box_r = XS->box_s ? XS->n_rows : 0;
    X->box_dx0 = XS->dx_min;
    X->box_row = XS->box_s ? XS->tap_row : NULL;
    X->box_dx = XS->box_s ? S->dx : NULL;
}

/* Taps of one sum a tap program writes out per output vector: beyond this
 * the loop's code outgrows the instruction cache's benefit. */
#define PS_TAP_MAX_STENCIL_TAPS 49

/* Whether fused member k of the group can be a term of a tap program: a
 * planar stencil summing taps of unit column stride. */
static int tap_stencil(const ps_pipeline *p, const ps_gx_member *K)
{
    const ps_pstage *S = &p->st[K->stage];
    return S->kind == PS_NODE_STENCIL && !S->px && S->reduce == PS_REDUCE_SUM && S->sx == 1 && S->n_in == 1 &&
           S->n_taps <= PS_TAP_MAX_STENCIL_TAPS;
}

/* Whether member P (pointwise) can be computed at the taps of the sums of
 * reader q: read only by fused sums of q with as many channels, not
 * stored for anyone else, its own inputs stored. */
static int tap_inlinable(const ps_pipeline *p, const ps_gx_group *G, int pk, int q)
{
    const ps_gx_member *P = &G->mem[pk];
    const ps_pstage *PS = &p->st[P->stage];
    /* its inputs stored (an input computed in P's own pass has no rows to read) */
    if (PS->kind != PS_NODE_POINTWISE || PS->px || P->live_out || P->n_reads == 0 || P->n_fused) return 0;
    if (!ps_codegen_covers(&PS->prog)) return 0;
    for (int i = 0; i < P->n_reads; i++) {
        const ps_gx_member *K = &G->mem[P->read_by[i]];
        if (K->fused_into != q || !tap_stencil(p, K) || p->st[K->stage].c != PS->c) return 0;
    }
    return 1;
}

/* Row r of a program's rows[*n_rows] for (stage, chan0, sy, dy, bd),
 * added if new, its columns widened to dx; -1 when there are
 * PS_TAP_ROWS_MAX rows already. */
static int tap_row_of(ps_gx_taprow *rows, int *n_rows, int stage, int member, int chan0, int sy, int dy, ps_boundary bd,
                      int dx)
{
    int r = 0;
    while (r < *n_rows && !(rows[r].stage == stage && rows[r].chan0 == chan0 && rows[r].sy == sy && rows[r].dy == dy &&
                            rows[r].bd == bd))
        r++;
    if (r == *n_rows) {
        if (r == PS_TAP_ROWS_MAX) return -1;
        rows[r] = (ps_gx_taprow){stage, member, chan0, sy, dy, dx, 0, bd, 0};
        ++*n_rows;
    }
    ps_gx_taprow *R = &rows[r];
    if (dx < R->dx0) {
        R->span += R->dx0 - dx;
        R->dx0 = dx;
    }
    if (dx > R->dx0 + R->span) R->span = dx - R->dx0;
    return r;
}

/* Which rows of a program no other row follows (the next row read is
 * requested ahead) and the widest row's columns beyond a call's. */
static int tap_rows_finish(ps_gx_taprow *rows, int n_rows)
{
    int span = 0;
    for (int r = 0; r < n_rows; r++) {
        ps_gx_taprow *R = &rows[r];
        if (R->span > span) span = R->span;
        R->ahead = 1;
        for (int o = 0; o < n_rows; o++)
            if (rows[o].stage == R->stage && rows[o].chan0 == R->chan0 && rows[o].sy == R->sy && rows[o].dy == R->dy + R->sy)
                R->ahead = 0;
    }
    return span;
}

/* Member M's program of R output rows per call (codegen.h): rows y .. y +
 * R - 1 over the union of their rows. *ok = 0 where the union has too many
 * rows. */
static ps_status plan_multi(ps_gx_member *M, int R, int *ok)
{
    const ps_tprog *T = M->tap;
    *ok = 0;
    M->tap2 = calloc(1, sizeof *M->tap2);
    M->rows2 = calloc(PS_TAP_ROWS_MAX, sizeof *M->rows2);
    if (M->tap2) M->tap2->term = calloc((size_t)T->n_terms, sizeof *M->tap2->term);
    if (!M->tap2 || !M->rows2 || !M->tap2->term) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    ps_tprog *P = M->tap2;
    P->prog = T->prog;
    P->n_terms = T->n_terms;
    P->rows_per_call = R;
    int n_rows = 0;
    for (int j = 0; j < T->n_terms; j++) {
        const ps_tap_term *X = &T->term[j];
        ps_tap_term *Y = &P->term[j];
        *Y = *X;
        const size_t cnt = (size_t)(X->n_taps > 0 ? X->n_taps : 1) * (size_t)(X->n_inl_in > 0 ? X->n_inl_in : 1);
        Y->tap_row = malloc((size_t)R * cnt * sizeof *Y->tap_row);
        Y->tap_off = malloc((size_t)R * cnt * sizeof *Y->tap_off);
        if (!Y->tap_row || !Y->tap_off) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    /* rows first (each row's columns span every body's reads), offsets after */
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < T->n_terms; j++) {
            const ps_tap_term *X = &T->term[j];
            ps_tap_term *Y = &P->term[j];
            const size_t cnt = (size_t)(X->n_taps > 0 ? X->n_taps : 1) * (size_t)(X->n_inl_in > 0 ? X->n_inl_in : 1);
            for (size_t i = 0; i < cnt; i++) {
                const ps_gx_taprow *Rw = &M->rows[X->tap_row[i]];
                const int dx = Rw->dx0 + X->tap_off[i];
                for (int b = 0; b < R; b++) {
                    int r = tap_row_of(M->rows2, &n_rows, Rw->stage, Rw->member, Rw->chan0, Rw->sy, Rw->dy + b * Rw->sy,
                                       Rw->bd, dx);
                    if (r < 0) return PS_SUCCESS;
                    if (pass) {
                        Y->tap_row[(size_t)b * cnt + i] = r;
                        Y->tap_off[(size_t)b * cnt + i] = dx - M->rows2[r].dx0;
                    }
                }
            }
        }
    P->n_rows = n_rows;
    M->tap2_span = tap_rows_finish(M->rows2, n_rows);
    if (M->tap_span > M->tap2_span) M->tap2_span = M->tap_span;
    *ok = 1;
    return PS_SUCCESS;
}

/* Tap programs for group G (graph_exec.h): for each pointwise member whose
 * producer epilogues are all sums of unit column stride, the program and
 * its rows; the pointwise producers of those sums that qualify are marked
 * inlined. The programs are compiled with the others (compile_programs);
 * those that do not compile are dropped again (ps_graph_taps_drop_failed). */
ps_status ps_graph_taps_plan(ps_graph_plan *pl, ps_gx_group *G)
{
    const ps_pipeline *p = &pl->pipe;
    for (int k = 0; k < G->n; k++) G->mem[k].inlined_into = G->mem[k].sib_lead = -1;
    if ((pl->opts.flags & PS_GRAPH_NO_CODEGEN) || !pl->ctx->codegen) return PS_SUCCESS;
    for (int q = 0; q < G->n; q++) {
        ps_gx_member *M = &G->mem[q];
        const ps_pstage *Q = &p->st[M->stage];
        if (!M->n_fused || Q->px || !ps_codegen_covers(&Q->prog)) continue;
        int ok = 1;
        for (int j = 0; j < Q->n_in && ok; j++) ok = !M->fused[j] || tap_stencil(p, &G->mem[M->in_member[j]]);
        if (!ok) continue;
        M->tap = calloc(1, sizeof *M->tap);
        M->rows = calloc(PS_TAP_ROWS_MAX, sizeof *M->rows);
        if (M->tap) M->tap->term = calloc((size_t)Q->n_in, sizeof *M->tap->term);
        if (!M->tap || !M->rows || !M->tap->term) {
            ps_graph_taps_free(M);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        }
        ps_tprog *T = M->tap;
        T->prog = &Q->prog;
        T->n_terms = Q->n_in;
        int n_rows = 0;
        /* rows first (each row's columns span all its reads), offsets after */
        for (int pass = 0; pass < 2 && ok; pass++)
            for (int j = 0; j < Q->n_in && ok; j++) {
                ps_tap_term *X = &T->term[j];
                if (!M->fused[j]) {
                    if (!pass) {
                        X->tap_row = malloc(sizeof *X->tap_row);
                        X->tap_off = malloc(sizeof *X->tap_off);
                        if (!X->tap_row || !X->tap_off) {
                            ok = -1;
                            break;
                        }
                    }
                    int r = tap_row_of(M->rows, &n_rows, Q->in[j], M->in_member[j], Q->bcast[j], 1, 0, PS_BOUNDARY_CLAMP, 0);
                    if (r < 0) ok = 0;
                    else {
                        X->tap_row[0] = r;
                        X->tap_off[0] = -M->rows[r].dx0;
                    }
                    continue;
                }
                const int sk = M->in_member[j];
                const ps_pstage *S = &p->st[G->mem[sk].stage];
                const int pk = G->mem[sk].in_member[0];
                const int inl = pk >= 0 && (pass ? G->mem[pk].inlined_into == q : tap_inlinable(p, G, pk, q));
                const ps_pstage *PS = inl ? &p->st[G->mem[pk].stage] : NULL;
                const int ld = inl ? PS->n_in : 1;
                if (!pass) {
                    if (inl) G->mem[pk].inlined_into = q;
                    X->n_taps = S->n_taps;
                    X->w = S->per_channel ? NULL : S->w;
                    X->act = S->act;
                    X->lo = S->act_lo;
                    X->hi = S->act_hi;
                    X->inl = inl ? &PS->prog : NULL;
                    X->n_inl_in = inl ? PS->n_in : 0;
                    term_box(X, S, &pl->xs[G->mem[sk].stage]);
                    X->tap_row = malloc((size_t)S->n_taps * (size_t)ld * sizeof *X->tap_row);
                    X->tap_off = malloc((size_t)S->n_taps * (size_t)ld * sizeof *X->tap_off);
                    if (!X->tap_row || !X->tap_off) {
                        ok = -1;
                        break;
                    }
                }
                for (int t = 0; t < S->n_taps && ok > 0; t++)
                    for (int k = 0; k < ld && ok > 0; k++) {
                        int r = inl ? tap_row_of(M->rows, &n_rows, PS->in[k], G->mem[pk].in_member[k], PS->bcast[k], S->sy, S->dy[t],
                                                 PS_BOUNDARY_CLAMP, S->dx[t])
                                    : tap_row_of(M->rows, &n_rows, S->in[0], pk, 0, S->sy, S->dy[t], S->boundary, S->dx[t]);
                        if (r < 0) ok = 0;
                        else {
                            X->tap_row[t * ld + k] = r;
                            X->tap_off[t * ld + k] = S->dx[t] - M->rows[r].dx0;
                        }
                    }
            }
        if (ok < 0) {
            ps_graph_taps_free(M);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        }
        if (!ok) {
            /* more rows than a program takes: the epilogues as they are */
            for (int k = 0; k < G->n; k++)
                if (G->mem[k].inlined_into == q) G->mem[k].inlined_into = -1;
            ps_graph_taps_free(M);
            continue;
        }
        T->n_rows = n_rows;
        /* the outputs whose inlined taps all read inside their producers'
         * domains: elsewhere the boundary applies to the producer's value,
         * which the compiled loop does not see (compute_taps' edge path) */
        M->tap_valid = (ps_box){INT64_MIN / 4, INT64_MIN / 4, INT64_MAX / 2, INT64_MAX / 2};
        for (int j = 0; j < Q->n_in; j++) {
            if (!M->fused[j]) continue;
            const ps_gx_member *K = &G->mem[M->in_member[j]];
            const int pk = K->in_member[0];
            if (pk < 0 || G->mem[pk].inlined_into != q) continue;
            const ps_pstage *S = &p->st[K->stage], *PS = &p->st[G->mem[pk].stage];
            const ps_gx_stage *XS = &pl->xs[K->stage];
            int dy0 = S->dy[0], dy1 = S->dy[0];
            for (int t = 0; t < S->n_taps; t++) {
                if (S->dy[t] < dy0) dy0 = S->dy[t];
                if (S->dy[t] > dy1) dy1 = S->dy[t];
            }
            /* sy * y + dy0 >= dom.y0 and sy * y + dy1 <= dom.y1 - 1 */
            const int64_t ya = -ps_floor_div(-(PS->dom.y0 - dy0), S->sy), yb = ps_floor_div(PS->dom.y0 + PS->dom.h - 1 - dy1, S->sy) + 1;
            const ps_box v = {ya, PS->dom.x0 - XS->dx_min, yb - ya, PS->dom.w - (XS->dx_max - XS->dx_min)};
            M->tap_valid = ps_box_intersect(&M->tap_valid, &v);
        }
        /* a piece's columns beyond its outputs: any row's, and any sum's
         * (its rows as the edge path computes or fetches them) */
        M->tap_span = 0;
        for (int j = 0; j < Q->n_in; j++)
            if (M->fused[j]) {
                const ps_gx_stage *XS = &pl->xs[G->mem[M->in_member[j]].stage];
                if (XS->dx_max - XS->dx_min > M->tap_span) M->tap_span = XS->dx_max - XS->dx_min;
            }
        const int span = tap_rows_finish(M->rows, n_rows);
        if (span > M->tap_span) M->tap_span = span;
        /* PS_TAP_ROWS_PER_CALL rows per call where the union of their rows
         * fits a program, else two */
        for (int R = PS_TAP_ROWS_PER_CALL; R >= 2 && !M->tap2; R /= 2) {
            int multi_ok = 0;
            ps_status st = plan_multi(M, R, &multi_ok);
            if (st) {
                ps_graph_taps_free(M);
                return st;
            }
            if (!multi_ok) {
                tprog_free(M->tap2);
                free(M->rows2);
                M->tap2 = NULL;
                M->rows2 = NULL;
            }
        }
    }
    /* bands of as many rows, so a step gives the program its rows */
    int R = 1;
    for (int q = 0; q < G->n; q++)
        if (G->mem[q].tap2 && G->mem[q].tap2->rows_per_call > R) R = G->mem[q].tap2->rows_per_call;
    G->band *= R;
    return PS_SUCCESS;
}

/* Whether member K of G can be one of a set of sibling sums: a planar
 * stencil summing taps of unit column stride, stored (no epilogue, not
 * inlined). */
static int sib_candidate(const ps_pipeline *p, const ps_gx_group *G, int k)
{
    const ps_gx_member *K = &G->mem[k];
    return tap_stencil(p, K) && K->fused_into < 0 && K->inlined_into < 0 && !K->tap && K->sib_lead < 0 && !K->n_sib;
}

/* Whether members a and b have the same region in every tile. */
static int same_regions(const ps_gx_group *G, int a, int b)
{
    const ps_region_form *f = &G->mem[a].form, *g = &G->mem[b].form;
    if (f->ay != g->ay || f->by != g->by || f->h != g->h || f->ax != g->ax || f->bx != g->bx || f->w != g->w) return 0;
    for (int t = 0; t < G->n_btiles; t++) {
        const ps_box *x = &G->bbox[(size_t)t * G->n + a], *y = &G->bbox[(size_t)t * G->n + b];
        if (x->y0 != y->y0 || x->x0 != y->x0 || x->h != y->h || x->w != y->w) return 0;
    }
    return 1;
}

/* Whether every step of member b directly follows a step of member a with
 * the same block, and every step of a is so followed: b can run in a's
 * steps, nothing in between. */
static int steps_follow(const ps_gx_group *G, int a, int b)
{
    for (size_t i = 0; i < G->n_steps; i++) {
        const ps_gx_step *s = &G->steps[i];
        if (s->k != a && s->k != b) continue;
        /* a's step, then b's (the members between a and b have no step here) */
        if (s->k == b || i + 1 >= G->n_steps) return 0;
        const ps_gx_step *t = &G->steps[i + 1];
        if (t->k != b || t->y0 != s->y0 || t->h != s->h || t->x0 != s->x0 || t->w != s->w) return 0;
        i++;
    }
    return 1;
}

/* The lead's sibling program of R output rows per call: term j the sum
 * of member j of the set (the lead first), its taps' rows numbered from
 * the lead's first (dy0) and columns from its leftmost tap (dx_min). */
static ps_tprog *sib_program(const ps_graph_plan *pl, const ps_gx_group *G, const ps_gx_member *L, const int *set, int n,
                             int R)
{
    const ps_pipeline *p = &pl->pipe;
    const int sy = p->st[L->stage].sy, dx0 = pl->xs[L->stage].dx_min;
    const int n_rows = L->sib_dy1 - L->sib_dy0 + 1 + (R - 1) * sy;
    if (n_rows > PS_TAP_ROWS_MAX || n * R > PS_TAPM_MAX_OUT) return NULL;
    ps_tprog *T = calloc(1, sizeof *T);
    if (!T || !(T->term = calloc((size_t)n, sizeof *T->term))) {
        free(T);
        return NULL;
    }
    T->n_terms = T->n_out = n;
    T->rows_per_call = R;
    T->n_rows = n_rows;
    for (int j = 0; j < n; j++) {
        const ps_pstage *S = &p->st[G->mem[set[j]].stage];
        ps_tap_term *X = &T->term[j];
        X->n_taps = S->n_taps;
        X->w = S->per_channel ? NULL : S->w;
        X->act = S->act;
        X->lo = S->act_lo;
        X->hi = S->act_hi;
        term_box(X, S, &pl->xs[G->mem[set[j]].stage]);
        X->tap_row = malloc((size_t)R * (size_t)S->n_taps * sizeof *X->tap_row);
        X->tap_off = malloc((size_t)R * (size_t)S->n_taps * sizeof *X->tap_off);
        if (!X->tap_row || !X->tap_off) {
            tprog_free(T);
            return NULL;
        }
        for (int b = 0; b < R; b++)
            for (int t = 0; t < S->n_taps; t++) {
                X->tap_row[b * S->n_taps + t] = S->dy[t] - L->sib_dy0 + b * sy;
                X->tap_off[b * S->n_taps + t] = S->dx[t] - dx0;
            }
    }
    return T;
}

ps_status ps_graph_sibs_plan(ps_graph_plan *pl, ps_gx_group *G)
{
    const ps_pipeline *p = &pl->pipe;
    if ((pl->opts.flags & PS_GRAPH_NO_CODEGEN) || !pl->ctx->codegen) return PS_SUCCESS;
    for (int a = 0; a < G->n; a++) {
        if (!sib_candidate(p, G, a)) continue;
        ps_gx_member *L = &G->mem[a];
        const ps_pstage *SA = &p->st[L->stage];
        const ps_gx_stage *XA = &pl->xs[L->stage];
        int set[PS_TAPM_MAX_OUT] = {a}, n = 1;
        int dy0 = SA->dy[0], dy1 = SA->dy[0];
        for (int t = 0; t < SA->n_taps; t++) {
            if (SA->dy[t] < dy0) dy0 = SA->dy[t];
            if (SA->dy[t] > dy1) dy1 = SA->dy[t];
        }
        /* the members right after it in the steps, reading the same tensor
         * (a ring of the group or memory) at rows and columns the lead reads
         * (they are computed when the lead's step runs) */
        for (int b = a + 1; b < G->n && n < PS_TAPM_MAX_OUT; b++) {
            if (!sib_candidate(p, G, b)) continue;
            const ps_pstage *SB = &p->st[G->mem[b].stage];
            const ps_gx_stage *XB = &pl->xs[G->mem[b].stage];
            if (G->mem[b].in_member[0] != L->in_member[0] || SB->in[0] != SA->in[0] || SB->sy != SA->sy || SB->c != SA->c ||
                XB->dx_min < XA->dx_min || XB->dx_max > XA->dx_max || !same_regions(G, a, b) ||
                !steps_follow(G, set[n - 1], b))
                continue;
            int inside = 1;
            for (int t = 0; t < SB->n_taps; t++) inside &= SB->dy[t] >= dy0 && SB->dy[t] <= dy1;
            if (inside) set[n++] = b;
        }
        if (n < 2) continue;
        L->sib_dy0 = dy0;
        L->sib_dy1 = dy1;
        L->stap = sib_program(pl, G, L, set, n, 1);
        if (!L->stap) continue; /* too many rows, or no memory: each computed alone */
        if (2 * n <= PS_TAPM_MAX_OUT) L->stap2 = sib_program(pl, G, L, set, n, 2);
        L->n_sib = n - 1;
        for (int j = 1; j < n; j++) {
            L->sib[j - 1] = set[j];
            G->mem[set[j]].sib_lead = a;
        }
    }
    return PS_SUCCESS;
}

/* After compilation: a tap program without code is dropped, its inlined
 * producers computed again (their steps stay in the tile programs); the
 * steps of producers that are inlined are removed. */
void ps_graph_taps_drop_failed(ps_gx_group *G)
{
    for (int q = 0; q < G->n; q++) {
        if (G->mem[q].tap2 && !G->mem[q].tap2->fnn) {
            tprog_free(G->mem[q].tap2);
            free(G->mem[q].rows2);
            G->mem[q].tap2 = NULL;
            G->mem[q].rows2 = NULL;
        }
        ps_gx_member *Q = &G->mem[q];
        if (Q->stap2 && !Q->stap2->fns) {
            tprog_free(Q->stap2);
            Q->stap2 = NULL;
        }
        if (Q->stap && !Q->stap->fns) {
            /* no code: each sibling computed alone again */
            tprog_free(Q->stap);
            tprog_free(Q->stap2);
            Q->stap = Q->stap2 = NULL;
            for (int j = 0; j < Q->n_sib; j++) G->mem[Q->sib[j]].sib_lead = -1;
            Q->n_sib = 0;
        }
        if (!G->mem[q].tap || G->mem[q].tap->fn) continue;
        for (int k = 0; k < G->n; k++)
            if (G->mem[k].inlined_into == q) G->mem[k].inlined_into = -1;
        ps_graph_taps_free(&G->mem[q]);
    }
    size_t o = 0;
    for (int kind = 0; kind < G->n_kinds; kind++) {
        size_t first = o;
        for (size_t i = G->kind_first[kind]; i < G->kind_first[kind] + G->kind_len[kind]; i++)
            if (G->mem[G->steps[i].k].inlined_into < 0 && G->mem[G->steps[i].k].sib_lead < 0) G->steps[o++] = G->steps[i];
        G->kind_first[kind] = first;
        G->kind_len[kind] = o - first;
    }
    G->n_steps = o;
}
