/* The planner's stage list: copy, dead-stage removal, pointwise inlining,
 * needed regions (pipeline.h). */
#include "fusion/pipeline.h"
#include "core/intmath.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Inlining stops where an expression would grow past this many nodes: the
 * lowered program's registers must stay in L1 (kernels.h, PS_VCHUNK). */
#define PS_INLINE_MAX_NODES 256


ps_box ps_box_intersect(const ps_box *a, const ps_box *b)
{
    int64_t y0 = a->y0 > b->y0 ? a->y0 : b->y0, x0 = a->x0 > b->x0 ? a->x0 : b->x0;
    int64_t y1 = a->y0 + a->h < b->y0 + b->h ? a->y0 + a->h : b->y0 + b->h;
    int64_t x1 = a->x0 + a->w < b->x0 + b->w ? a->x0 + a->w : b->x0 + b->w;
    ps_box r = {y0, x0, y1 - y0, x1 - x0};
    if (r.h < 0) r.h = 0;
    if (r.w < 0) r.w = 0;
    return r;
}

ps_box ps_box_hull(const ps_box *a, const ps_box *b)
{
    if (ps_box_empty(a)) return *b;
    if (ps_box_empty(b)) return *a;
    int64_t y0 = a->y0 < b->y0 ? a->y0 : b->y0, x0 = a->x0 < b->x0 ? a->x0 : b->x0;
    int64_t y1 = a->y0 + a->h > b->y0 + b->h ? a->y0 + a->h : b->y0 + b->h;
    int64_t x1 = a->x0 + a->w > b->x0 + b->w ? a->x0 + a->w : b->x0 + b->w;
    return (ps_box){y0, x0, y1 - y0, x1 - x0};
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

ps_box ps_box_clamp(const ps_box *b, const ps_box *dom)
{
    if (ps_box_empty(b)) return *b;
    int64_t y0 = clamp64(b->y0, dom->y0, dom->y0 + dom->h - 1), y1 = clamp64(b->y0 + b->h - 1, dom->y0, dom->y0 + dom->h - 1);
    int64_t x0 = clamp64(b->x0, dom->x0, dom->x0 + dom->w - 1), x1 = clamp64(b->x0 + b->w - 1, dom->x0, dom->x0 + dom->w - 1);
    return (ps_box){y0, x0, y1 - y0 + 1, x1 - x0 + 1};
}

ps_box ps_read_box(const ps_pipeline *p, int s, int j, const ps_box *b)
{
    const ps_pstage *st = &p->st[s];
    if (ps_box_empty(b)) return *b;
    int64_t y1 = b->y0 + b->h - 1, x1 = b->x0 + b->w - 1;
    if (st->kind == PS_NODE_CONV && j >= 1) return *b; /* the residual, read at the output's pixels */
    switch (st->kind) {
    case PS_NODE_GAP: return p->st[st->in[0]].dom;
    case PS_NODE_CONV:
    case PS_NODE_STENCIL: {
        int dy0 = st->dy[0], dy1 = st->dy[0], dx0 = st->dx[0], dx1 = st->dx[0];
        for (int t = 1; t < st->n_taps; t++) {
            if (st->dy[t] < dy0) dy0 = st->dy[t];
            if (st->dy[t] > dy1) dy1 = st->dy[t];
            if (st->dx[t] < dx0) dx0 = st->dx[t];
            if (st->dx[t] > dx1) dx1 = st->dx[t];
        }
        int64_t ry0 = st->sy * b->y0 + dy0, ry1 = st->sy * y1 + dy1;
        int64_t rx0 = st->sx * b->x0 + dx0, rx1 = st->sx * x1 + dx1;
        return (ps_box){ry0, rx0, ry1 - ry0 + 1, rx1 - rx0 + 1};
    }
    case PS_NODE_RESAMPLE:
        switch (st->resample) {
        case PS_RESAMPLE_UP2_NEAREST: {
            int64_t ry0 = ps_floor_div(b->y0, 2), rx0 = ps_floor_div(b->x0, 2);
            return (ps_box){ry0, rx0, ps_floor_div(y1, 2) - ry0 + 1, ps_floor_div(x1, 2) - rx0 + 1};
        }
        case PS_RESAMPLE_UP2_BILINEAR: {
            int64_t ry0 = ps_floor_div(b->y0 - 1, 2), rx0 = ps_floor_div(b->x0 - 1, 2);
            return (ps_box){ry0, rx0, ps_floor_div(y1 + 1, 2) - ry0 + 1, ps_floor_div(x1 + 1, 2) - rx0 + 1};
        }
        case PS_RESAMPLE_DOWN2_AVERAGE:
            return (ps_box){2 * b->y0, 2 * b->x0, 2 * b->h, 2 * b->w};
        }
        return *b;
    default:
        return *b;
    }
}

ps_box ps_input_region(const ps_pipeline *p, int s, int j, const ps_box *box)
{
    const ps_pstage *st = &p->st[s];
    ps_box r = ps_read_box(p, s, j, box);
    const ps_box *dom = &p->st[st->in[j]].dom;
    if ((st->boundary == PS_BOUNDARY_ZERO || st->boundary == PS_BOUNDARY_IGNORE) &&
        (ps_pstage_has_taps(st) || st->kind == PS_NODE_RESAMPLE))
        return ps_box_intersect(&r, dom);
    return ps_box_clamp(&r, dom);
}

double ps_stage_flops(const ps_pstage *s)
{
    switch (s->kind) {
    case PS_NODE_STENCIL: return 2.0 * s->n_taps;
    case PS_NODE_POINTWISE: return s->expr ? (double)ps_expr_size(s->expr) : 1.0;
    case PS_NODE_MIX: return 2.0 * (double)s->in_c;
    case PS_NODE_RESAMPLE: return 4.0;
    case PS_NODE_CONV: return 2.0 * (double)s->in_c * s->n_taps;
    case PS_NODE_CONCAT:
    case PS_NODE_GAP: return 1.0;
    default: return 0.0;
    }
}

/* Weights and biases the kernels load a vector at a time: 64-byte aligned,
 * so no vector load spans two cache lines. free() releases them. */
static float *alloc_aligned_floats(size_t n)
{
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64);
}

static void stage_release(ps_pstage *s)
{
    free(s->cons);
    free(s->dy);
    free(s->dx);
    free(s->w);
    free(s->pxw);
    free(s->mix_w);
    free(s->bias);
    ps_expr_free(s->expr);
    ps_vprog_release(&s->prog);
    memset(s, 0, sizeof *s);
}

void ps_pipeline_release(ps_pipeline *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) stage_release(&p->st[i]);
    free(p->st);
    free(p->input_stage);
    free(p->output_stage);
    memset(p, 0, sizeof *p);
}

static ps_status copy_node(const ps_graph *g, int t, int px, ps_pstage *s)
{
    const ps_node *nd = &g->nodes[t];
    memset(s, 0, sizeof *s);
    s->kind = nd->kind;
    memcpy(s->name, nd->name, sizeof s->name);
    s->n = nd->n;
    s->c = nd->c;
    s->dom = nd->dom;
    s->n_in = nd->n_in;
    for (int j = 0; j < nd->n_in; j++) {
        s->in[j] = nd->in[j];
        s->bcast[j] = nd->kind == PS_NODE_POINTWISE && g->nodes[nd->in[j]].c == 1 && nd->c > 1;
    }
    s->boundary = nd->boundary;
    s->input_index = -1;
    s->output_index = nd->output_index;
    s->layout = nd->layout;
    s->out_region = nd->out_region;
    s->graph_tensor = t;
    s->px = px;
    if (nd->bias) {
        s->bias = alloc_aligned_floats((size_t)nd->c);
        if (!s->bias) return PS_ERR_OUT_OF_MEMORY;
        memcpy(s->bias, nd->bias, (size_t)nd->c * sizeof *s->bias);
    }
    switch (nd->kind) {
    case PS_NODE_STENCIL: {
        s->reduce = nd->reduce;
        s->sy = nd->sy;
        s->sx = nd->sx;
        s->n_taps = nd->n_taps;
        s->per_channel = nd->per_channel;
        size_t nt = (size_t)nd->n_taps, nch = nd->per_channel ? (size_t)nd->c : 1;
        s->dy = malloc(nt * sizeof *s->dy);
        s->dx = malloc(nt * sizeof *s->dx);
        s->w = malloc(nt * nch * sizeof *s->w);
        if (!s->dy || !s->dx || !s->w) return PS_ERR_OUT_OF_MEMORY;
        memcpy(s->dy, nd->dy, nt * sizeof *s->dy);
        memcpy(s->dx, nd->dx, nt * sizeof *s->dx);
        /* [t * C + c] (the API's order) -> [c * n_taps + t]: one channel's
         * taps contiguous, as a row kernel call takes them. */
        for (size_t ch = 0; ch < nch; ch++)
            for (size_t tp = 0; tp < nt; tp++) s->w[ch * nt + tp] = nd->w[tp * nch + ch];
        s->affine = nd->affine;
        break;
    }
    case PS_NODE_CONV: {
        s->in_c = nd->in_c;
        s->conv_r = nd->conv_r, s->conv_s = nd->conv_s, s->dil_h = nd->dil_h, s->dil_w = nd->dil_w;
        s->pad_t = nd->pad_t, s->pad_b = nd->pad_b, s->pad_l = nd->pad_l, s->pad_r = nd->pad_r;
        s->sy = nd->sy;
        s->sx = nd->sx;
        s->n_taps = nd->n_taps;
        size_t nt = (size_t)nd->n_taps, C = (size_t)nd->in_c, K = (size_t)nd->c;
        s->dy = malloc(nt * sizeof *s->dy);
        s->dx = malloc(nt * sizeof *s->dx);
        s->w = alloc_aligned_floats(nt * C * K);
        if (!s->dy || !s->dx || !s->w) return PS_ERR_OUT_OF_MEMORY;
        memcpy(s->dy, nd->dy, nt * sizeof *s->dy);
        memcpy(s->dx, nd->dx, nt * sizeof *s->dx);
        /* KCRS -> per tap the K x C column-major block a batch-reduce GEMM
         * multiplies a pixel block's channels by */
        for (size_t k = 0; k < K; k++)
            for (size_t c = 0; c < C; c++)
                for (size_t tp = 0; tp < nt; tp++) s->w[(tp * C + c) * K + k] = nd->w[(k * C + c) * nt + tp];
        break;
    }
    case PS_NODE_MIX: {
        s->in_c = g->nodes[nd->in[0]].c;
        if (px) {
            /* on pixel rows a channel mix is the 1 x 1 convolution */
            size_t C = (size_t)s->in_c, K = (size_t)nd->c;
            s->kind = PS_NODE_CONV;
            s->boundary = PS_BOUNDARY_ZERO;
            s->conv_r = s->conv_s = s->dil_h = s->dil_w = 1;
            s->sy = s->sx = 1;
            s->n_taps = 1;
            s->dy = calloc(1, sizeof *s->dy);
            s->dx = calloc(1, sizeof *s->dx);
            s->w = alloc_aligned_floats(C * K);
            if (!s->dy || !s->dx || !s->w) return PS_ERR_OUT_OF_MEMORY;
            for (size_t k = 0; k < K; k++)
                for (size_t c = 0; c < C; c++) s->w[c * K + k] = nd->mix_w[k * C + c];
            break;
        }
        size_t nw = (size_t)nd->c * (size_t)s->in_c;
        s->mix_w = malloc(nw * sizeof *s->mix_w);
        if (!s->mix_w) return PS_ERR_OUT_OF_MEMORY;
        memcpy(s->mix_w, nd->mix_w, nw * sizeof *s->mix_w);
        break;
    }
    case PS_NODE_RESAMPLE: s->resample = nd->resample; break;
    case PS_NODE_POINTWISE:
        s->expr = ps_expr_copy(nd->expr);
        if (!s->expr) return PS_ERR_OUT_OF_MEMORY;
        break;
    default: break;
    }
    return PS_SUCCESS;
}

/* Inlines pointwise stage pw into pointwise consumer q: q reads pw's inputs
 * instead of pw. Returns 0 (q unchanged) when the merged stage would read
 * too many inputs or grow too large. */
static int inline_into(ps_pstage *st, int pw, int q, ps_status *err)
{
    ps_pstage *P = &st[pw], *Q = &st[q];
    int in[PS_POINTWISE_MAX_INPUTS], bc[PS_POINTWISE_MAX_INPUTS], n = 0;
    int qmap[PS_POINTWISE_MAX_INPUTS], pmap[PS_POINTWISE_MAX_INPUTS];
    for (int j = 0; j < Q->n_in; j++) {
        if (Q->in[j] == pw) {
            qmap[j] = -1;
            continue;
        }
        int k = 0;
        while (k < n && in[k] != Q->in[j]) k++;
        if (k == n) {
            in[n] = Q->in[j];
            bc[n++] = Q->bcast[j];
        }
        qmap[j] = k;
    }
    for (int j = 0; j < P->n_in; j++) {
        int k = 0;
        while (k < n && in[k] != P->in[j]) k++;
        if (k == n) {
            if (n == PS_POINTWISE_MAX_INPUTS) return 0;
            in[n] = P->in[j];
            bc[n++] = st[P->in[j]].c == 1 && Q->c > 1;
        }
        pmap[j] = k;
    }
    ps_expr *pe = ps_expr_substitute(P->expr, pmap, NULL);
    if (!pe) {
        *err = PS_ERR_OUT_OF_MEMORY;
        return 0;
    }
    ps_expr *repl[PS_POINTWISE_MAX_INPUTS] = {0};
    for (int j = 0; j < Q->n_in; j++)
        if (qmap[j] < 0) repl[j] = pe;
    for (int j = 0; j < Q->n_in; j++)
        if (qmap[j] < 0) qmap[j] = 0; /* unused: replaced */
    ps_expr *qe = ps_expr_substitute(Q->expr, qmap, repl);
    ps_expr_free(pe);
    if (!qe) {
        *err = PS_ERR_OUT_OF_MEMORY;
        return 0;
    }
    if (ps_expr_size(qe) > PS_INLINE_MAX_NODES) {
        ps_expr_free(qe);
        return 0;
    }
    ps_expr_free(Q->expr);
    Q->expr = qe;
    Q->n_in = n;
    memcpy(Q->in, in, (size_t)n * sizeof *in);
    memcpy(Q->bcast, bc, (size_t)n * sizeof *bc);
    size_t len = strlen(Q->inlined);
    snprintf(Q->inlined + len, sizeof Q->inlined - len, "%s%s%s%s", len ? "," : "", P->name, P->inlined[0] ? "," : "",
             P->inlined);
    Q->n_inlined += 1 + P->n_inlined;
    return 1;
}

/* Readers of stage p among the stages after it. */
static int count_readers(const ps_pstage *st, int n, int p)
{
    int readers = 0;
    for (int q = p + 1; q < n; q++)
        for (int j = 0; j < st[q].n_in; j++) readers += st[q].in[j] == p;
    return readers;
}

/* Stage a takes over its producer p: p's computation under a's identity
 * (name, output marking, graph tensor); a's own arrays are released and p,
 * read by nothing else, is left dead. p's name joins a's inlined names. */
static void take_over(ps_pstage *st, int a, int p)
{
    ps_pstage *A = &st[a], *P = &st[p];
    ps_pstage keep = *A; /* its plain fields; its arrays die with stage_release */
    stage_release(A);
    *A = *P;
    memset(P, 0, sizeof *P);
    P->kind = PS_NODE_POINTWISE; /* nothing reads it: dead */
    P->output_index = P->input_index = -1;
    size_t len = strlen(A->inlined);
    snprintf(A->inlined + len, sizeof A->inlined - len, "%s%s", len ? "," : "", A->name);
    memcpy(A->name, keep.name, sizeof A->name);
    A->output_index = keep.output_index;
    A->layout = keep.layout;
    A->out_region = keep.out_region;
    A->graph_tensor = keep.graph_tensor;
    A->n_inlined++;
}

/* Batch normalization folded into its producer (seed 002's inlining, at
 * plan time): an affine stage whose input is a convolution, a depthwise
 * (per-channel sum) stencil or a channel mix that nothing else reads and
 * that is no output becomes that producer with scaled weights and bias,
 * reading the producer's input; the producer is then dead. */
static void fold_affine(ps_pstage *st, int n)
{
    for (int t = 0; t < n; t++) {
        ps_pstage *A = &st[t];
        if (!A->affine) continue;
        int p = A->in[0], readers = count_readers(st, n, p);
        ps_pstage *P = &st[p];
        int foldable = P->kind == PS_NODE_CONV || P->kind == PS_NODE_MIX ||
                       (P->kind == PS_NODE_STENCIL && P->reduce == PS_REDUCE_SUM && P->per_channel);
        if (readers != 1 || P->output_index >= 0 || !foldable) continue;
        const int64_t K = P->c;
        const float *scale = A->w, *shift = A->bias; /* one tap: w[ch] */
        for (int64_t k = 0; k < K; k++) {
            if (P->kind == PS_NODE_CONV) {
                size_t per_k = (size_t)P->n_taps * (size_t)P->in_c;
                for (size_t i = 0; i < per_k; i++) P->w[i * (size_t)K + (size_t)k] *= scale[k];
            } else if (P->kind == PS_NODE_MIX) {
                for (int64_t c = 0; c < P->in_c; c++) P->mix_w[k * P->in_c + c] *= scale[k];
            } else {
                for (int tp = 0; tp < P->n_taps; tp++) P->w[k * P->n_taps + tp] *= scale[k];
            }
        }
        /* the affine stage's bias becomes P's bias scaled, plus the shift */
        for (int64_t k = 0; k < K; k++) A->bias[k] = (P->bias ? P->bias[k] : 0.0f) * scale[k] + shift[k];
        float *bias = A->bias;
        A->bias = NULL;
        take_over(st, t, p);
        free(A->bias);
        A->bias = bias;
    }
}

/* Whether e is max(x, lo) or min(max(x, lo), hi) of input 0 with constant
 * bounds (ReLU, ReLU6, clamps), in any operand order or as a clamp. */
static int match_clamp(const ps_expr *e, float *lo, float *hi)
{
    const ps_expr *a, *b;
    *lo = -INFINITY;
    *hi = INFINITY;
    if (e->op == PS_EXPR_CLAMP) {
        if (e->arg[0]->op != PS_EXPR_INPUT || e->arg[0]->index != 0 || e->arg[1]->op != PS_EXPR_CONST ||
            e->arg[2]->op != PS_EXPR_CONST)
            return 0;
        *lo = e->arg[1]->value;
        *hi = e->arg[2]->value;
        return *lo <= *hi;
    }
    for (int round = 0; round < 2; round++) {
        if (e->op != PS_EXPR_MAX && e->op != PS_EXPR_MIN) return 0;
        a = e->arg[0], b = e->arg[1];
        if (a->op == PS_EXPR_CONST) {
            const ps_expr *t = a;
            a = b, b = t;
        }
        if (b->op != PS_EXPR_CONST) return 0;
        if (e->op == PS_EXPR_MAX) {
            if (*lo != -INFINITY) return 0;
            *lo = b->value;
        } else {
            if (*hi != INFINITY) return 0;
            *hi = b->value;
        }
        if (a->op == PS_EXPR_INPUT) return a->index == 0 && *lo <= *hi;
        e = a;
    }
    return 0;
}

/* e with its outer clamps (max with a constant, min with a constant,
 * clamp by constants) stripped into [lo, hi]. */
static const ps_expr *strip_clamps(const ps_expr *e, float *lo, float *hi)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    for (;;) {
        if (e->op == PS_EXPR_CLAMP && e->arg[1]->op == PS_EXPR_CONST && e->arg[2]->op == PS_EXPR_CONST) {
            if (e->arg[1]->value > *lo) *lo = e->arg[1]->value;
            if (e->arg[2]->value < *hi) *hi = e->arg[2]->value;
            e = e->arg[0];
            continue;
        }
        if (e->op != PS_EXPR_MAX && e->op != PS_EXPR_MIN) return e;
        const ps_expr *a = e->arg[0], *b = e->arg[1];
        if (a->op == PS_EXPR_CONST) {
            const ps_expr *t = a;
            a = b, b = t;
        }
        if (b->op != PS_EXPR_CONST) return e;
        if (e->op == PS_EXPR_MAX && b->value > *lo) *lo = b->value;
        if (e->op == PS_EXPR_MIN && b->value < *hi) *hi = b->value;
        e = a;
    }
}

/* A residual add, act(a + conv(...)), folded into the convolution it reads
 * when nothing else reads that convolution, it is no output and both
 * operands cover the same pixels and channels: the convolution adds a to
 * each output block while the block is in L1 (and a layer plan adds it in
 * its epilogue, PS_POST_SUM), instead of a pass of its own. */
static void fold_sum(ps_pstage *st, int n)
{
    for (int t = 0; t < n; t++) {
        ps_pstage *A = &st[t];
        if (A->kind != PS_NODE_POINTWISE || A->n_in != 2 || !A->expr) continue;
        float lo, hi;
        const ps_expr *e = strip_clamps(A->expr, &lo, &hi);
        if (e->op != PS_EXPR_ADD || e->arg[0]->op != PS_EXPR_INPUT || e->arg[1]->op != PS_EXPR_INPUT ||
            e->arg[0]->index == e->arg[1]->index || lo > hi)
            continue;
        for (int side = 0; side < 2; side++) {
            int p = A->in[side], q = A->in[1 - side], readers = count_readers(st, n, p);
            ps_pstage *P = &st[p];
            const ps_pstage *Q = &st[q];
            if (P->kind != PS_NODE_CONV || !P->px || readers != 1 || P->output_index >= 0 || P->act || P->sum_in ||
                P->c != A->c || Q->c != P->c || memcmp(&P->dom, &Q->dom, sizeof P->dom) || p == q)
                continue;
            take_over(st, t, p);
            A->n_in = 2;
            A->in[1] = q;
            A->bcast[1] = 0;
            A->sum_in = 1;
            A->act = lo > -INFINITY || hi < INFINITY;
            A->act_lo = lo;
            A->act_hi = hi;
            break;
        }
    }
}

/* A clamp (ReLU, ReLU6) folded into the convolution or summing stencil it
 * reads, when nothing else reads that stage and it is no output: applied
 * to each output block while it is in L1, instead of a pass of its own. */
static void fold_act(ps_pstage *st, int n)
{
    for (int t = 0; t < n; t++) {
        ps_pstage *A = &st[t];
        float lo, hi;
        if (A->kind != PS_NODE_POINTWISE || A->n_in != 1 || !A->expr || !match_clamp(A->expr, &lo, &hi)) continue;
        int p = A->in[0], readers = count_readers(st, n, p);
        ps_pstage *P = &st[p];
        int foldable = P->kind == PS_NODE_CONV || (P->kind == PS_NODE_STENCIL && P->reduce == PS_REDUCE_SUM) ||
                       P->kind == PS_NODE_MIX;
        if (readers != 1 || P->output_index >= 0 || !foldable || P->act || P->c != A->c) continue;
        take_over(st, t, p);
        A->act = 1;
        A->act_lo = lo;
        A->act_hi = hi;
    }
}

static int reads(const ps_pstage *s, int p)
{
    for (int j = 0; j < s->n_in; j++)
        if (s->in[j] == p) return 1;
    return 0;
}

ps_status ps_pipeline_build(const ps_graph *g, int inline_pointwise, ps_pipeline *out)
{
    memset(out, 0, sizeof *out);
    int n = g->n > 0 ? g->n : 0;
    ps_pstage *st = calloc((size_t)n + 1, sizeof *st);
    char *live = calloc((size_t)n + 1, 1);
    int *remap = malloc(((size_t)n + 1) * sizeof *remap);
    ps_status rc = PS_SUCCESS;
    if (!st || !live || !remap) {
        rc = PS_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    int px = 0;
    for (int t = 0; t < n; t++) px |= g->nodes[t].dl;
    for (int t = 0; t < n && !rc; t++) rc = copy_node(g, t, px, &st[t]);
    if (rc) goto fail;
    fold_affine(st, n);
    if (inline_pointwise) {
        fold_act(st, n);
        fold_sum(st, n);
    }
    for (int i = 0; i < g->n_inputs; i++) st[g->inputs[i]].input_index = i;

    /* Live: graph inputs, outputs and whatever an output reads. */
    for (int t = n - 1; t >= 0; t--) {
        if (st[t].output_index >= 0 || st[t].kind == PS_NODE_INPUT) live[t] = 1;
        if (live[t] && st[t].kind != PS_NODE_INPUT)
            for (int j = 0; j < st[t].n_in; j++) live[st[t].in[j]] = 1;
    }
    if (inline_pointwise) {
        for (int t = 0; t < n; t++) {
            ps_pstage *P = &st[t];
            if (!live[t] || P->kind != PS_NODE_POINTWISE || P->output_index >= 0) continue;
            int ok = 1, any = 0;
            for (int q = t + 1; q < n && ok; q++)
                if (live[q] && reads(&st[q], t)) {
                    any = 1;
                    /* A one-channel stage broadcast into a consumer of C
                     * channels would be recomputed C times: only a single
                     * operation is worth that. */
                    ok = st[q].kind == PS_NODE_POINTWISE && (P->c == st[q].c || ps_expr_size(P->expr) <= 3);
                }
            if (!ok || !any) continue;
            /* A consumer inlining fails for keeps reading P, which then
             * stays a stage: still correct, P's value just computed twice. */
            int done = 1;
            for (int q = t + 1; q < n; q++) {
                if (!live[q] || !reads(&st[q], t)) continue;
                int ok2 = inline_into(st, t, q, &rc);
                if (rc) goto fail;
                done &= ok2;
            }
            if (done) live[t] = 0;
        }
        /* Stages only an inlined stage read may be dead now. */
        for (int t = 0; t < n; t++) live[t] = 0;
        for (int t = n - 1; t >= 0; t--) {
            if (st[t].output_index >= 0 || st[t].kind == PS_NODE_INPUT) live[t] = 1;
            if (live[t] && st[t].kind != PS_NODE_INPUT)
                for (int j = 0; j < st[t].n_in; j++) live[st[t].in[j]] = 1;
        }
    }

    /* Compact to the live stages (creation order is topological). */
    int m = 0;
    for (int t = 0; t < n; t++) remap[t] = live[t] ? m++ : -1;
    for (int t = 0; t < n; t++) {
        if (!live[t]) {
            stage_release(&st[t]);
            continue;
        }
        ps_pstage *s = &st[remap[t]];
        if (remap[t] != t) {
            *s = st[t];
            memset(&st[t], 0, sizeof st[t]);
        }
        for (int j = 0; j < s->n_in; j++) s->in[j] = remap[s->in[j]];
    }
    out->st = st;
    out->n = m;
    st = NULL;
    out->n_inputs = g->n_inputs;
    out->n_outputs = g->n_outputs;
    out->input_stage = malloc((size_t)(g->n_inputs ? g->n_inputs : 1) * sizeof *out->input_stage);
    out->output_stage = malloc((size_t)(g->n_outputs ? g->n_outputs : 1) * sizeof *out->output_stage);
    if (!out->input_stage || !out->output_stage) {
        rc = PS_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    for (int i = 0; i < g->n_inputs; i++) out->input_stage[i] = remap[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) out->output_stage[i] = remap[g->outputs[i]];

    /* Consumers. */
    for (int s = 0; s < m && !rc; s++) {
        ps_pstage *S = &out->st[s];
        for (int j = 0; j < S->n_in; j++) {
            ps_pstage *P = &out->st[S->in[j]];
            int dup = 0;
            for (int k = 0; k < P->n_cons; k++) dup |= P->cons[k] == s;
            if (dup) continue;
            int *c = realloc(P->cons, (size_t)(P->n_cons + 1) * sizeof *c);
            if (!c) {
                rc = PS_ERR_OUT_OF_MEMORY;
                break;
            }
            P->cons = c;
            P->cons[P->n_cons++] = s;
        }
    }
    if (rc) goto fail;

    /* Needed regions, from the outputs back. */
    for (int s = m - 1; s >= 0; s--) {
        ps_pstage *S = &out->st[s];
        ps_box need = {0, 0, 0, 0};
        if (S->output_index >= 0) need = S->out_region;
        for (int k = 0; k < S->n_cons; k++) {
            int q = S->cons[k];
            const ps_pstage *Q = &out->st[q];
            for (int j = 0; j < Q->n_in; j++) {
                if (Q->in[j] != s) continue;
                ps_box r = ps_input_region(out, q, j, &Q->need);
                need = ps_box_hull(&need, &r);
            }
        }
        S->need = ps_box_intersect(&need, &S->dom);
        S->needless = S->kind != PS_NODE_INPUT && ps_box_empty(&S->need);
    }
    /* A needless stage computes nothing, so it reads nothing: its producers
     * do not count it as a consumer. */
    for (int s = 0; s < m; s++) {
        ps_pstage *P = &out->st[s];
        int k = 0;
        for (int c = 0; c < P->n_cons; c++)
            if (!out->st[P->cons[c]].needless) P->cons[k++] = P->cons[c];
        P->n_cons = k;
    }
    free(live);
    free(remap);
    return PS_SUCCESS;

fail:
    if (st) {
        for (int t = 0; t < n; t++) stage_release(&st[t]);
        free(st);
    }
    ps_pipeline_release(out);
    free(live);
    free(remap);
    return ps_error(rc ? rc : PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory building the stage list");
}
