/* Random deep-learning chains (include/polysci/graph_dl.h) through the
 * planner's fusion modes, against a double-precision reference computed
 * here from the chain's own parameters (PyTorch's definitions: the output
 * size from padding, dilation, stride and ceil_mode; zero padding;
 * max pooling ignoring its padding; batch normalization in eval mode).
 *
 * Each chain comes from its own seed (PS_TEST_SEED + number; rerun one with
 * PS_TEST_SEED=<its seed> PS_TEST_COUNT=1): an input (NHWC or NCHW, N 1..2,
 * 4..18 pixels a side, 1..20 channels) and 3..9 stages drawn from dense
 * convolutions (1 x 1 to 5 x 5 and rectangular, strides 1..2, dilation
 * 1..2, asymmetric padding, with or without bias), depthwise convolutions,
 * max/avg pooling (ceil_mode too), batch normalization (after a
 * convolution, so it is folded, or elsewhere), ReLU and ReLU6, residual
 * adds around a same-shape convolution, channel concatenations and a
 * global average pooling at the end; one or two outputs in either layout.
 * Every chain is planned with DP, greedy and no fusion, executed into
 * NaN-filled outputs and compared element by element within the
 * propagated f32 bound (the sum bound of graph_ref.c: tol(L) = 8u sqrt(L) +
 * 2u of the terms' magnitudes plus what the inputs carry).
 *
 * PS_TEST_COUNT: chains (default 200); PS_TEST_STAGES: most stages drawn
 * per chain (default 9; 1 isolates single stages). */
#include <math.h>
#include <string.h>
#include <time.h>

#include "graph_engine.h"
#include "graph_ref.h"
#include "polysci/polysci.h"
#include "test_util.h"

#define MAX_OPS 24
#define GR_U (1.0 / 16777216.0)

typedef enum op_kind { OP_INPUT, OP_CONV, OP_DW, OP_POOL, OP_BN, OP_RELU, OP_RELU6, OP_ADD, OP_CONCAT, OP_GAP } op_kind;

typedef struct op {
    op_kind kind;
    int in[2];
    int64_t n, h, w, c;
    int r, s, sh, sw, dh, dw, pt, pb, pl, pr, ceil_mode, avg;
    float *wt, *bias, *mean, *var, *gamma, *beta, eps;
    ps_tensor t;
    double *v, *e; /* NHWC */
} op;

typedef struct chain {
    int n;
    op o[MAX_OPS];
    int n_out, out[2];
    ps_act_layout out_layout[2], in_layout;
} chain;

static int64_t idx(const op *o, int64_t n, int64_t y, int64_t x, int64_t c) { return ((n * o->h + y) * o->w + x) * o->c + c; }

static float *rand_arr(tu_rng *r, int64_t n, float lo, float hi)
{
    float *p = tu_alloc_f(n);
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * 0.5f * (tu_uniform(r) + 1.0f); /* tu_uniform: [-1, 1) */
    return p;
}

static int64_t out_dim(int64_t len, int p0, int p1, int64_t ext, int st, int ceil_mode)
{
    int64_t span = len + p0 + p1 - ext;
    if (span < 0) return 0;
    int64_t o = span / st + 1;
    if (ceil_mode && span % st) {
        o++;
        if ((o - 1) * st >= len + p0) o--;
    }
    return o;
}

/* --------------------------------------------------------------- reference */

static void alloc_ref(op *o)
{
    o->v = tu_alloc_d(o->n * o->h * o->w * o->c);
    o->e = tu_alloc_d(o->n * o->h * o->w * o->c);
}

static double tol(int64_t L) { return 8.0 * GR_U * sqrt((double)(L < 1 ? 1 : L)) + 2.0 * GR_U; }

static void ref_window(op *o, const op *a)
{
    const int depthwise = o->kind == OP_DW, pool = o->kind == OP_POOL, cg = depthwise || pool ? 1 : (int)a->c;
    const int64_t L = (int64_t)cg * o->r * o->s + 1;
    for (int64_t n = 0; n < o->n; n++)
        for (int64_t y = 0; y < o->h; y++)
            for (int64_t x = 0; x < o->w; x++)
                for (int64_t k = 0; k < o->c; k++) {
                    double acc = o->bias ? o->bias[k] : 0.0, mag = fabs(acc), prop = 0, best = -INFINITY, beste = 0;
                    for (int i = 0; i < o->r; i++)
                        for (int j = 0; j < o->s; j++) {
                            int64_t iy = y * o->sh - o->pt + (int64_t)i * o->dh, ix = x * o->sw - o->pl + (int64_t)j * o->dw;
                            int in_img = iy >= 0 && iy < a->h && ix >= 0 && ix < a->w;
                            for (int c = 0; c < cg; c++) {
                                int64_t ch = depthwise || pool ? k : c;
                                double v = in_img ? a->v[idx(a, n, iy, ix, ch)] : 0.0, e = in_img ? a->e[idx(a, n, iy, ix, ch)] : 0.0;
                                if (pool && !o->avg) {
                                    if (in_img && v > best) best = v;
                                    if (in_img && e > beste) beste = e;
                                    continue;
                                }
                                double w = pool ? 1.0 / (o->r * o->s)
                                           : depthwise ? o->wt[(k * o->r + i) * o->s + j]
                                                       : o->wt[((k * a->c + c) * o->r + i) * o->s + j];
                                acc += w * v;
                                mag += fabs(w * v);
                                prop += fabs(w) * e;
                            }
                        }
                    int64_t d = idx(o, n, y, x, k);
                    if (pool && !o->avg) {
                        o->v[d] = best;
                        o->e[d] = beste;
                    } else {
                        o->v[d] = acc;
                        o->e[d] = prop + tol(L) * mag;
                    }
                }
}

static void ref_eval(op *o, const chain *ch)
{
    const op *a = &ch->o[o->in[0]], *b = o->kind == OP_ADD || o->kind == OP_CONCAT ? &ch->o[o->in[1]] : NULL;
    alloc_ref(o);
    switch (o->kind) {
    case OP_CONV:
    case OP_DW:
    case OP_POOL: ref_window(o, a); return;
    case OP_GAP:
        for (int64_t n = 0; n < o->n; n++)
            for (int64_t c = 0; c < o->c; c++) {
                double acc = 0, mag = 0, prop = 0;
                for (int64_t y = 0; y < a->h; y++)
                    for (int64_t x = 0; x < a->w; x++) {
                        acc += a->v[idx(a, n, y, x, c)];
                        mag += fabs(a->v[idx(a, n, y, x, c)]);
                        prop += a->e[idx(a, n, y, x, c)];
                    }
                double hw = (double)(a->h * a->w);
                o->v[idx(o, n, 0, 0, c)] = acc / hw;
                o->e[idx(o, n, 0, 0, c)] = (prop + tol(a->h * a->w + 1) * mag) / hw + 2 * GR_U * fabs(acc / hw);
            }
        return;
    default: break;
    }
    for (int64_t n = 0; n < o->n; n++)
        for (int64_t y = 0; y < o->h; y++)
            for (int64_t x = 0; x < o->w; x++)
                for (int64_t c = 0; c < o->c; c++) {
                    int64_t d = idx(o, n, y, x, c);
                    double v = 0, e = 0;
                    if (o->kind == OP_CONCAT) {
                        const op *src = c < a->c ? a : b;
                        int64_t i = idx(src, n, y, x, c < a->c ? c : c - a->c);
                        v = src->v[i];
                        e = src->e[i];
                    } else {
                        int64_t i = idx(a, n, y, x, c);
                        double av = a->v[i], ae = a->e[i];
                        if (o->kind == OP_RELU) v = fmax(av, 0), e = ae;
                        else if (o->kind == OP_RELU6) v = fmin(fmax(av, 0), 6), e = ae;
                        else if (o->kind == OP_ADD) {
                            v = av + b->v[i];
                            e = ae + b->e[i] + 2 * GR_U * (fabs(av) + fabs(b->v[i]));
                        } else { /* BN; folded into a convolution it also rounds the scaled weights */
                            double sc = (o->gamma ? o->gamma[c] : 1.0) / sqrt((double)o->var[c] + o->eps);
                            double sh = (o->beta ? o->beta[c] : 0.0) - o->mean[c] * sc;
                            v = av * sc + sh;
                            e = 1.5 * fabs(sc) * ae + 8 * GR_U * (fabs(av * sc) + fabs(sh)) + 4 * GR_U * fabs(o->mean[c] * sc);
                        }
                    }
                    o->v[d] = v;
                    o->e[d] = e;
                }
}

/* --------------------------------------------------------------- generator */

static int add_op(chain *ch, op *o) { ch->o[ch->n] = *o; return ch->n++; }

static void set_shape(op *o, const op *a) { o->n = a->n, o->h = a->h, o->w = a->w, o->c = a->c; }

/* A dense convolution's output channels: a quarter whole vectors (16-80,
 * where 1 x 1 convolutions over few channels run the small GEMM with its
 * epilogue in registers, alone and fused), the rest 1-24. */
static int64_t conv_channels(tu_rng *r) { return tu_range(r, 0, 3) == 0 ? 16 * tu_range(r, 1, 5) : tu_range(r, 1, 24); }

/* A convolution (dense or depthwise) or pooling of a, with random geometry;
 * -1 when the window does not fit. */
static int gen_window(tu_rng *r, chain *ch, int a_i, op_kind kind, int64_t k, int same)
{
    const op *a = &ch->o[a_i];
    op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.in[0] = a_i;
    static const int64_t sizes[] = {1, 1, 3, 3, 3, 5, 2};
    o.r = (int)tu_pick(r, sizes, 7);
    o.s = tu_range(r, 0, 3) ? o.r : (int)tu_pick(r, sizes, 7);
    o.sh = o.sw = same ? 1 : (int)tu_range(r, 1, 2);
    if (!same && tu_range(r, 0, 5) == 0) o.sw = 3 - o.sh;
    o.dh = o.dw = kind != OP_POOL && !same && tu_range(r, 0, 6) == 0 ? 2 : 1;
    int eh = o.dh * (o.r - 1) + 1, ew = o.dw * (o.s - 1) + 1;
    if (kind == OP_POOL) {
        o.r = (int)tu_range(r, 2, 3);
        o.s = (int)tu_range(r, 2, 3);
        eh = o.r, ew = o.s;
        o.avg = (int)tu_range(r, 0, 1);
        o.ceil_mode = !o.avg && tu_range(r, 0, 2) == 0;
    }
    if (same) {
        if (o.r % 2 == 0) o.r++;
        if (o.s % 2 == 0) o.s++;
        eh = o.r, ew = o.s;
        o.pt = o.pb = (o.r - 1) / 2;
        o.pl = o.pr = (o.s - 1) / 2;
    } else {
        o.pt = (int)tu_range(r, 0, (eh - 1) / 2 + (eh > 2));
        o.pb = (int)tu_range(r, 0, eh - 1);
        o.pl = (int)tu_range(r, 0, (ew - 1) / 2 + (ew > 2));
        o.pr = (int)tu_range(r, 0, ew - 1);
        if (kind == OP_POOL) {
            o.pt = o.pt < o.r / 2 ? o.pt : o.r / 2;
            o.pb = o.pb < o.r / 2 ? o.pb : o.r / 2;
            o.pl = o.pl < o.s / 2 ? o.pl : o.s / 2;
            o.pr = o.pr < o.s / 2 ? o.pr : o.s / 2;
        }
    }
    o.n = a->n;
    o.c = kind == OP_CONV ? k : a->c;
    o.h = out_dim(a->h, o.pt, o.pb, eh, o.sh, o.ceil_mode);
    o.w = out_dim(a->w, o.pl, o.pr, ew, o.sw, o.ceil_mode);
    if (o.h < 1 || o.w < 1) return -1;
    if (kind == OP_CONV || kind == OP_DW) {
        int64_t cg = kind == OP_CONV ? a->c : 1, nw = o.c * cg * o.r * o.s;
        float sc = 1.0f / sqrtf((float)(cg * o.r * o.s));
        o.wt = rand_arr(r, nw, -sc, sc);
        if (tu_range(r, 0, 1)) o.bias = rand_arr(r, o.c, -0.5f, 0.5f);
    }
    return add_op(ch, &o);
}

static int gen_bn(tu_rng *r, chain *ch, int a_i)
{
    op o;
    memset(&o, 0, sizeof o);
    o.kind = OP_BN;
    o.in[0] = a_i;
    set_shape(&o, &ch->o[a_i]);
    o.mean = rand_arr(r, o.c, -0.5f, 0.5f);
    o.var = rand_arr(r, o.c, 0.2f, 2.0f);
    if (tu_range(r, 0, 3)) o.gamma = rand_arr(r, o.c, 0.5f, 1.5f);
    if (tu_range(r, 0, 3)) o.beta = rand_arr(r, o.c, -0.5f, 0.5f);
    o.eps = 1e-5f;
    return add_op(ch, &o);
}

static int gen_unary(chain *ch, int a_i, op_kind kind)
{
    op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.in[0] = a_i;
    set_shape(&o, &ch->o[a_i]);
    if (kind == OP_GAP) o.h = o.w = 1;
    return add_op(ch, &o);
}

static int gen_binary(chain *ch, int a_i, int b_i, op_kind kind)
{
    op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.in[0] = a_i;
    o.in[1] = b_i;
    set_shape(&o, &ch->o[a_i]);
    if (kind == OP_CONCAT) o.c = ch->o[a_i].c + ch->o[b_i].c;
    return add_op(ch, &o);
}

static void gen_chain(tu_rng *r, chain *ch, int max_stages)
{
    memset(ch, 0, sizeof *ch);
    op in;
    memset(&in, 0, sizeof in);
    in.kind = OP_INPUT;
    in.n = tu_range(r, 1, 2);
    in.h = tu_range(r, 4, 18);
    in.w = tu_range(r, 4, 18);
    in.c = tu_range(r, 1, 20);
    ch->in_layout = tu_range(r, 0, 3) ? PS_LAYOUT_NHWC : PS_LAYOUT_NCHW;
    int cur = add_op(ch, &in);
    int stages = (int)tu_range(r, max_stages < 3 ? max_stages : 3, max_stages);
    for (int i = 0; i < stages && ch->n < MAX_OPS - 3; i++) {
        int src = tu_range(r, 0, 3) ? cur : (int)tu_range(r, 0, ch->n - 1);
        int got = -1;
        switch (tu_range(r, 0, 9)) {
        case 0:
        case 1: got = gen_window(r, ch, src, OP_CONV, conv_channels(r), 0); break;
        case 2: got = gen_window(r, ch, src, OP_DW, 0, 0); break;
        case 3: got = gen_window(r, ch, src, OP_POOL, 0, 0); break;
        case 4: {
            int c = gen_window(r, ch, src, OP_CONV, conv_channels(r), 0);
            got = c >= 0 ? gen_bn(r, ch, c) : -1;
            break;
        }
        case 5: got = gen_bn(r, ch, src); break;
        case 6: got = gen_unary(ch, src, tu_range(r, 0, 1) ? OP_RELU : OP_RELU6); break;
        case 7: {
            /* residual: a same-shape convolution (maybe with BN, ReLU) added back */
            int b = gen_window(r, ch, src, tu_range(r, 0, 1) ? OP_CONV : OP_DW, ch->o[src].c, 1);
            if (b >= 0 && tu_range(r, 0, 1)) b = gen_bn(r, ch, b);
            if (b >= 0) got = gen_binary(ch, src, b, OP_ADD);
            break;
        }
        case 8: {
            int b = gen_window(r, ch, src, OP_CONV, tu_range(r, 1, 12), 1);
            if (b >= 0) got = tu_range(r, 0, 1) ? gen_binary(ch, src, b, OP_CONCAT) : gen_binary(ch, b, src, OP_CONCAT);
            break;
        }
        default: got = gen_unary(ch, src, OP_RELU); break;
        }
        if (got >= 0) cur = got;
    }
    if (cur == 0) cur = gen_window(r, ch, 0, OP_DW, 0, 1);
    if (tu_range(r, 0, 4) == 0) cur = gen_unary(ch, cur, OP_GAP);
    ch->out[ch->n_out++] = cur;
    if (ch->n > 3 && tu_range(r, 0, 2) == 0) {
        int other = (int)tu_range(r, 1, ch->n - 2);
        if (other != cur) ch->out[ch->n_out++] = other;
    }
    for (int i = 0; i < ch->n_out; i++) ch->out_layout[i] = tu_range(r, 0, 2) ? PS_LAYOUT_NHWC : PS_LAYOUT_NCHW;
}

static ps_status build(chain *ch, ps_graph *g)
{
    ps_status st = PS_SUCCESS;
    for (int i = 0; i < ch->n && !st; i++) {
        op *o = &ch->o[i];
        const ps_tensor a = i ? ch->o[o->in[0]].t : -1;
        switch (o->kind) {
        case OP_INPUT: st = ps_graph_add_input(g, NULL, o->n, o->h, o->w, o->c, ch->in_layout, &o->t); break;
        case OP_CONV:
        case OP_DW: {
            ps_conv_stage cv;
            ps_conv_stage_init(&cv);
            cv.input = a;
            cv.k = o->c;
            cv.groups = o->kind == OP_DW ? o->c : 1;
            cv.r = o->r, cv.s = o->s, cv.stride_h = o->sh, cv.stride_w = o->sw, cv.dilation_h = o->dh, cv.dilation_w = o->dw;
            cv.pad_top = o->pt, cv.pad_bottom = o->pb, cv.pad_left = o->pl, cv.pad_right = o->pr;
            cv.weights = o->wt;
            cv.bias = o->bias;
            st = ps_graph_add_conv(g, NULL, &cv, &o->t);
            break;
        }
        case OP_POOL: {
            ps_pool_stage pp;
            ps_pool_stage_init(&pp);
            pp.input = a;
            pp.kind = o->avg ? PS_POOL_AVG : PS_POOL_MAX;
            pp.r = o->r, pp.s = o->s, pp.stride_h = o->sh, pp.stride_w = o->sw;
            pp.pad_top = o->pt, pp.pad_bottom = o->pb, pp.pad_left = o->pl, pp.pad_right = o->pr;
            pp.ceil_mode = o->ceil_mode;
            st = ps_graph_add_pool(g, NULL, &pp, &o->t);
            break;
        }
        case OP_BN: st = ps_graph_add_batchnorm(g, NULL, a, o->mean, o->var, o->gamma, o->beta, o->eps, &o->t); break;
        case OP_RELU:
        case OP_RELU6: {
            ps_expr *x = ps_expr_binary(PS_EXPR_MAX, ps_expr_input(0), ps_expr_const(0.0f));
            if (o->kind == OP_RELU6) x = ps_expr_binary(PS_EXPR_MIN, x, ps_expr_const(6.0f));
            st = ps_graph_add_pointwise(g, NULL, x, 1, &a, &o->t);
            ps_expr_free(x);
            break;
        }
        case OP_ADD: {
            ps_tensor ab[2] = {a, ch->o[o->in[1]].t};
            ps_expr *x = ps_expr_binary(PS_EXPR_ADD, ps_expr_input(0), ps_expr_input(1));
            st = ps_graph_add_pointwise(g, NULL, x, 2, ab, &o->t);
            ps_expr_free(x);
            break;
        }
        case OP_CONCAT: {
            ps_tensor ab[2] = {a, ch->o[o->in[1]].t};
            st = ps_graph_add_concat(g, NULL, 2, ab, &o->t);
            break;
        }
        case OP_GAP: st = ps_graph_add_global_avg_pool(g, NULL, a, &o->t); break;
        }
    }
    for (int i = 0; i < ch->n_out && !st; i++) st = ps_graph_mark_output(g, ch->o[ch->out[i]].t, ch->out_layout[i]);
    return st;
}

static void free_chain(chain *ch)
{
    for (int i = 0; i < ch->n; i++) {
        op *o = &ch->o[i];
        free(o->wt), free(o->bias), free(o->mean), free(o->var), free(o->gamma), free(o->beta), free(o->v), free(o->e);
    }
}

static const char *op_name(op_kind k)
{
    static const char *n[] = {"input", "conv", "dw", "pool", "bn", "relu", "relu6", "add", "concat", "gap"};
    return n[k];
}

static void print_chain(const chain *ch)
{
    fprintf(stderr, "    input %s; outputs", ch->in_layout == PS_LAYOUT_NCHW ? "nchw" : "nhwc");
    for (int i = 0; i < ch->n_out; i++)
        fprintf(stderr, " %d (%s)", ch->out[i], ch->out_layout[i] == PS_LAYOUT_NCHW ? "nchw" : "nhwc");
    fprintf(stderr, "\n");
    for (int i = 0; i < ch->n; i++) {
        const op *o = &ch->o[i];
        fprintf(stderr, "    %d %s(%d%s%d) %lldx%lldx%lldx%lld", i, op_name(o->kind), o->in[0],
                o->kind == OP_ADD || o->kind == OP_CONCAT ? "," : ":", o->kind == OP_ADD || o->kind == OP_CONCAT ? o->in[1] : 0,
                (long long)o->n, (long long)o->h, (long long)o->w, (long long)o->c);
        if (o->kind == OP_CONV || o->kind == OP_DW || o->kind == OP_POOL)
            fprintf(stderr, " %dx%d s%dx%d d%dx%d pad %d/%d/%d/%d%s%s", o->r, o->s, o->sh, o->sw, o->dh, o->dw, o->pt, o->pb,
                    o->pl, o->pr, o->ceil_mode ? " ceil" : "", o->avg ? " avg" : "");
        fprintf(stderr, "\n");
    }
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The context's graph plan cache: the same graph, or an identical one built
 * anew, gets the same plan at once; a graph differing in one weight, in its
 * outputs or in the options gets its own; PS_GRAPH_NO_CACHE bypasses it;
 * references outlive ps_context_forget_plans. */
static void test_plan_cache(ps_context *ctx, uint64_t seed)
{
    chain ch, ch2;
    for (uint64_t s = seed;; s++) {
        tu_rng r = {s};
        gen_chain(&r, &ch, 9);
        int convs = 0;
        for (int i = 0; i < ch.n; i++) convs += ch.o[i].kind == OP_CONV;
        if (convs) break;
        free_chain(&ch);
    }
    ch2 = ch; /* the same parameters (pointers shared: built before ch is freed) */
    ps_graph *g1 = NULL, *g2 = NULL, *g3 = NULL;
    TU_OK(ps_graph_create(&g1));
    TU_OK(build(&ch, g1));
    TU_OK(ps_graph_create(&g2));
    TU_OK(build(&ch2, g2));
    int conv = 1;
    while (ch.o[conv].kind != OP_CONV) conv++;
    ch.o[conv].wt[0] += 1.0f; /* one weight differs */
    TU_OK(ps_graph_create(&g3));
    TU_OK(build(&ch, g3));
    ps_graph_plan *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    TU_OK(ps_graph_plan_create(ctx, g1, NULL, &a));
    double t0 = now_ms();
    TU_OK(ps_graph_plan_create(ctx, g2, NULL, &b));
    double hit_ms = now_ms() - t0;
    TU_CHECK(a == b, "an identical graph built anew did not get the cached plan");
    TU_CHECK(hit_ms < 1.0, "a cached plan took %.3f ms (at most 1 ms)", hit_ms);
    TU_OK(ps_graph_plan_create(ctx, g3, NULL, &c));
    TU_CHECK(c != a, "a graph with another weight got the same plan");
    ps_graph_options o;
    ps_graph_options_init(&o);
    o.fusion = PS_FUSION_NONE;
    TU_OK(ps_graph_plan_create(ctx, g1, &o, &d));
    TU_CHECK(d != a, "other options got the same plan");
    /* the layer plans' timing options are part of the key */
    ps_graph_plan *m = NULL, *m2 = NULL;
    o.layer_top_k = 3;
    o.layer_time_budget_ms = 5.0;
    TU_OK(ps_graph_plan_create(ctx, g1, &o, &m));
    TU_CHECK(m != d, "measured layer plans got the static plan");
    o.layer_time_budget_ms = 6.0;
    TU_OK(ps_graph_plan_create(ctx, g1, &o, &m2));
    TU_CHECK(m2 != m, "another layer budget got the same plan");
    ps_graph_plan_destroy(m);
    ps_graph_plan_destroy(m2);
    ps_graph_options_init(&o);
    o.flags = PS_GRAPH_NO_CACHE;
    TU_OK(ps_graph_plan_create(ctx, g1, &o, &e));
    TU_CHECK(e != a, "PS_GRAPH_NO_CACHE returned the cached plan");
    ps_graph_destroy(g1);
    ps_graph_destroy(g2);
    ps_graph_destroy(g3);
    ps_context_forget_plans(ctx);
    /* the caller's references still run */
    const op *in = &ch2.o[0], *out = &ch2.o[ch2.out[0]];
    float *x = tu_alloc_f(in->n * in->h * in->w * in->c);
    float *y[2] = {tu_alloc_f(out->n * out->h * out->w * out->c), NULL};
    if (ch2.n_out > 1) {
        const op *o2 = &ch2.o[ch2.out[1]];
        y[1] = tu_alloc_f(o2->n * o2->h * o2->w * o2->c);
    }
    tu_fill(x, in->n * in->h * in->w * in->c, 0.5f);
    const float *xs[1] = {x};
    TU_OK(ps_graph_execute(b, xs, y, NULL));
    ps_graph_plan_destroy(a);
    TU_OK(ps_graph_execute(b, xs, y, NULL));
    ps_graph_plan_destroy(b);
    ps_graph_plan_destroy(c);
    ps_graph_plan_destroy(d);
    ps_graph_plan_destroy(e);
    free(x), free(y[0]), free(y[1]);
    free_chain(&ch);
    printf("test_graph_dl: plan cache: hit in %.3f ms\n", hit_ms);
}

int main(void)
{
    uint64_t seed = tu_seed("test_graph_dl", 4901);
    int count = 200;
    const char *env = getenv("PS_TEST_COUNT");
    if (env) count = atoi(env);
    env = getenv("PS_TEST_STAGES");
    int max_stages = env && atoi(env) > 0 ? atoi(env) : 9;
    if (!ge_engine_present()) {
        printf("test_graph_dl: the library has no graph engine: skipped\n");
        return 77;
    }
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    static const ps_fusion modes[] = {PS_FUSION_DP, PS_FUSION_GREEDY, PS_FUSION_NONE};
    static const char *mode_names[] = {"dp", "greedy", "none"};
    double worst[3] = {0, 0, 0};
    long fused_groups = 0, stages_total = 0, elems = 0;
    for (int gi = 0; gi < count; gi++) {
        tu_rng r = {seed + (uint64_t)gi};
        chain ch;
        gen_chain(&r, &ch, max_stages);
        ps_graph *g = NULL;
        TU_OK(ps_graph_create(&g));
        ps_status bst = build(&ch, g);
        TU_CHECK(bst == PS_SUCCESS, "chain %d (seed %llu): building failed: %s", gi, (unsigned long long)(seed + gi),
                 ps_last_error_message());
        if (bst) {
            print_chain(&ch);
            ps_graph_destroy(g);
            free_chain(&ch);
            continue;
        }
        /* the input, in the user's layout */
        op *in = &ch.o[0];
        tu_rng ri = {seed * 31 + (uint64_t)gi};
        float *x = rand_arr(&ri, in->n * in->h * in->w * in->c, -1.0f, 1.0f);
        alloc_ref(in);
        for (int64_t n = 0; n < in->n; n++)
            for (int64_t y = 0; y < in->h; y++)
                for (int64_t xx = 0; xx < in->w; xx++)
                    for (int64_t c = 0; c < in->c; c++) {
                        in->v[idx(in, n, y, xx, c)] = x[gr_index(ch.in_layout, in->c, in->h, in->w, n, c, y, xx)];
                        in->e[idx(in, n, y, xx, c)] = 0;
                    }
        for (int i = 1; i < ch.n; i++) ref_eval(&ch.o[i], &ch);
        for (int mi = 0; mi < 3; mi++) {
            ps_graph_options opts;
            ps_graph_options_init(&opts);
            opts.fusion = modes[mi];
            /* every fourth chain's layer plans in the measured mode: the
             * timed choice must compute the same convolution */
            if (modes[mi] == PS_FUSION_NONE && gi % 4 == 1) {
                opts.layer_top_k = 3;
                opts.layer_time_budget_ms = 5.0;
            }
            ps_graph_plan *p = NULL;
            ps_status pst = ps_graph_plan_create(ctx, g, &opts, &p);
            TU_CHECK(pst == PS_SUCCESS, "chain %d (seed %llu) %s: planning failed: %s", gi, (unsigned long long)(seed + gi),
                     mode_names[mi], ps_last_error_message());
            if (pst) {
                print_chain(&ch);
                continue;
            }
            ps_graph_plan_stats stats;
            memset(&stats, 0, sizeof stats);
            stats.struct_size = sizeof stats;
            ps_graph_plan_get_stats(p, &stats);
            if (mi == 0) {
                fused_groups += stats.n_groups;
                stages_total += stats.n_stages;
            }
            float *outs[2];
            for (int i = 0; i < ch.n_out; i++) {
                const op *o = &ch.o[ch.out[i]];
                outs[i] = tu_alloc_f(o->n * o->h * o->w * o->c);
                tu_fill(outs[i], o->n * o->h * o->w * o->c, tu_sentinel());
            }
            const float *ins[1] = {x};
            ps_status est = ps_graph_execute(p, ins, outs, NULL);
            TU_CHECK(est == PS_SUCCESS, "chain %d %s: execute: %s", gi, mode_names[mi], ps_last_error_message());
            int bad = 0;
            for (int i = 0; i < ch.n_out && !est; i++) {
                const op *o = &ch.o[ch.out[i]];
                for (int64_t n = 0; n < o->n && bad < 3; n++)
                    for (int64_t y = 0; y < o->h && bad < 3; y++)
                        for (int64_t xx = 0; xx < o->w && bad < 3; xx++)
                            for (int64_t c = 0; c < o->c && bad < 3; c++) {
                                float got = outs[i][gr_index(ch.out_layout[i], o->c, o->h, o->w, n, c, y, xx)];
                                double v = o->v[idx(o, n, y, xx, c)], e = o->e[idx(o, n, y, xx, c)];
                                double err = fabs((double)got - v);
                                double norm = e > 0 ? err / e : (err > 0 ? INFINITY : 0);
                                if (!(norm <= 2.0)) {
                                    bad++;
                                    TU_CHECK(0, "chain %d (seed %llu) %s: output %d (%s) at n %lld y %lld x %lld c %lld: got %.9g, want %.9g +- %.3g",
                                             gi, (unsigned long long)(seed + gi), mode_names[mi], i, op_name(o->kind),
                                             (long long)n, (long long)y, (long long)xx, (long long)c, (double)got, v, e);
                                }
                                if (norm > worst[mi] && isfinite(norm)) worst[mi] = norm;
                                elems++;
                            }
            }
            if (bad) {
                print_chain(&ch);
                size_t need = 0;
                ps_graph_plan_describe(p, NULL, 0, &need);
                char *txt = malloc(need + 1);
                ps_graph_plan_describe(p, txt, need + 1, NULL);
                fprintf(stderr, "%s\n", txt);
                free(txt);
            }
            for (int i = 0; i < ch.n_out; i++) free(outs[i]);
            ps_graph_plan_destroy(p);
        }
        free(x);
        ps_graph_destroy(g);
        free_chain(&ch);
    }
    printf("test_graph_dl: %d chains, %ld stages in %ld DP groups, %ld elements compared; largest error / bound: dp %.3f, "
           "greedy %.3f, none %.3f\n",
           count, stages_total, fused_groups, elems, worst[0], worst[1], worst[2]);
    test_plan_cache(ctx, seed);
    ps_context_destroy(ctx);
    return tu_finish("test_graph_dl");
}
