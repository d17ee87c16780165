/* Tap programs (lib/codegen, graph_exec.h): a pointwise stage whose inputs
 * are stencil sums, the sums' pointwise producers inlined at every tap, run
 * as one compiled loop, two output rows per call where both are inside
 * the producers' domains (the pair program). They must compute exactly
 * what the interpreted epilogue path computes (the producer's rows stored, the sums by the row
 * kernel, the expression interpreted): every output bit for bit, with every
 * boundary (the edge path where an inlined producer's taps leave its
 * domain), strided rows, shared, unit and per-channel weights, broadcast
 * inputs, NCHW and NHWC, forced small tiles and 1 and 2 threads.
 *
 * Sibling sums (several stencil sums of one ring computed in one compiled
 * loop, graph_exec.h) likewise, bit for bit against the row kernel's sums.
 *
 * Box sums (graph_exec.h box stages) likewise: the compiled loops compute
 * each column sum once for the outputs that share it, in box_sum's order;
 * and the programs that run by vectors (codegen.h PS_TAP_BY_VECTORS), each
 * tap a shifted vector of the values its rows give.
 *
 * Each graph: inputs -> [a stored 3x3 stencil] -> one or two pointwise
 * producers -> 1..3 stencil sums -> a pointwise reader (the output); the
 * sibling graphs are drawn by build_sibs, the box graphs by build_boxes. Each is
 * planned twice (default, and PS_GRAPH_NO_CODEGEN) and the outputs compared
 * with memcmp. The run fails unless most graphs really had a tap program
 * with an inlined producer, so it cannot pass by never taking the path.
 * Compiled code goes to a cache directory of the test's own.
 *
 * PS_TEST_SEED, PS_TEST_COUNT (default 48 graphs of each family). */
#define _GNU_SOURCE /* mkdtemp, setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polysci/polysci.h"
#include "test_util.h"
#include "tu_jit_cache.h"

static ps_expr *in_(int i) { return ps_expr_input(i); }
static ps_expr *k_(float v) { return ps_expr_const(v); }
static ps_expr *bin(ps_expr_op op, ps_expr *a, ps_expr *b) { return ps_expr_binary(op, a, b); }

/* A random expression reading every one of inputs 0 .. n-1. */
static ps_expr *random_expr(tu_rng *r, int n)
{
    ps_expr *e = NULL;
    for (int i = 0; i < n; i++) {
        ps_expr *x = in_(i);
        switch (tu_range(r, 0, 4)) {
        case 0: x = bin(PS_EXPR_MUL, x, ps_expr_copy(x)); break;
        case 1: x = bin(PS_EXPR_MUL, k_(0.5f + (float)tu_range(r, 0, 3)), x); break;
        case 2: x = ps_expr_unary(PS_EXPR_ABS, x); break;
        case 3: x = bin(PS_EXPR_SUB, x, k_(0.25f)); break;
        default: break;
        }
        if (!e) {
            e = x;
            continue;
        }
        switch (tu_range(r, 0, 5)) {
        case 0: e = bin(PS_EXPR_ADD, e, x); break;
        case 1: e = bin(PS_EXPR_SUB, e, x); break;
        case 2: e = bin(PS_EXPR_MUL, e, x); break;
        case 3: e = bin(PS_EXPR_MAX, e, x); break;
        case 4: e = ps_expr_select(bin(PS_EXPR_GT, ps_expr_copy(e), ps_expr_copy(x)), e, bin(PS_EXPR_MUL, x, k_(-0.75f))); break;
        default: e = bin(PS_EXPR_ADD, bin(PS_EXPR_MUL, e, k_(0.125f)), bin(PS_EXPR_MUL, x, ps_expr_copy(x))); break;
        }
    }
    if (tu_range(r, 0, 3) == 0) e = ps_expr_clamp(e, k_(-2.0f), k_(3.0f));
    return e;
}

/* A random expression reading every one of inputs 0 .. n-1 with the
 * operations compiled box sums compute as vectors: + - *, negation,
 * constants and the multiply-adds they contract into. */
static ps_expr *vector_expr(tu_rng *r, int n)
{
    ps_expr *e = NULL;
    for (int i = 0; i < n; i++) {
        ps_expr *x = in_(i);
        switch (tu_range(r, 0, 3)) {
        case 0: x = bin(PS_EXPR_MUL, x, ps_expr_copy(x)); break;
        case 1: x = bin(PS_EXPR_MUL, k_(0.5f + (float)tu_range(r, 0, 3)), x); break;
        case 2: x = ps_expr_unary(PS_EXPR_NEG, x); break;
        default: break;
        }
        if (!e) {
            e = x;
            continue;
        }
        switch (tu_range(r, 0, 3)) {
        case 0: e = bin(PS_EXPR_ADD, e, x); break;
        case 1: e = bin(PS_EXPR_SUB, e, x); break;
        case 2: e = bin(PS_EXPR_MUL, e, x); break;
        default: e = bin(PS_EXPR_SUB, bin(PS_EXPR_MUL, e, ps_expr_copy(x)), bin(PS_EXPR_MUL, k_(0.04f), x)); break;
        }
    }
    return e;
}

/* Random taps of a stencil (at most 25): a box, a line, a 5x5 grid or scattered. */
static int random_taps(tu_rng *r, int *dy, int *dx)
{
    int n = 0;
    switch (tu_range(r, 0, 3)) {
    case 0: /* 3x3 box */
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++) dy[n] = a, dx[n++] = b;
        break;
    case 1: /* a line along x or y */
        for (int a = -2; a <= 2; a++) {
            const int vertical = (int)tu_range(r, 0, 1);
            dy[n] = vertical ? a : 0, dx[n++] = vertical ? 0 : a;
        }
        break;
    case 2: /* 5x5 */
        for (int a = -2; a <= 2; a++)
            for (int b = -2; b <= 2; b++) dy[n] = a, dx[n++] = b;
        break;
    default: /* scattered, off centre */
        n = (int)tu_range(r, 1, 9);
        for (int t = 0; t < n; t++) dy[t] = (int)tu_range(r, -2, 3), dx[t] = (int)tu_range(r, -3, 2);
        break;
    }
    return n;
}

static const ps_boundary bds[] = {PS_BOUNDARY_ZERO, PS_BOUNDARY_CLAMP, PS_BOUNDARY_IGNORE, PS_BOUNDARY_VALID};

/* A stencil sum of `input` (C channels) with unit column stride over the
 * n taps given, boundary bd (or drawn where bd < 0), its weights drawn. */
static ps_status add_sum(tu_rng *r, ps_graph *g, ps_tensor input, int64_t C, int sy, int n, const int *dy, const int *dx,
                         int bd, ps_tensor *out)
{
    float w[25 * 3];
    const int mode = (int)tu_range(r, 0, 3); /* all 1, shared, shared +-1, per channel */
    for (int t = 0; t < n * C; t++)
        w[t] = mode == 2 ? (tu_range(r, 0, 1) ? 1.0f : -1.0f) : (float)tu_range(r, -8, 8) / 8.0f + 0.0625f;
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = input;
    st.boundary = bds[bd >= 0 ? bd : tu_range(r, 0, 3)];
    st.stride_h = sy;
    st.n_taps = n;
    st.dy = dy;
    st.dx = dx;
    st.weights = mode == 0 ? NULL : w;
    st.per_channel_weights = mode == 3;
    return ps_graph_add_stencil(g, NULL, &st, out);
}

/* A random stencil sum of `input` (C channels) with unit column stride. */
static ps_status random_sum(tu_rng *r, ps_graph *g, ps_tensor input, int64_t C, int sy, ps_tensor *out)
{
    int dy[25], dx[25];
    const int n = random_taps(r, dy, dx);
    return add_sum(r, g, input, C, sy, n, dy, dx, -1, out);
}

typedef struct built {
    ps_graph *g;
    int n_in;
    int64_t in_elems[2], out_elems;
    int fixed;              /* planned with the grouping grp (PS_FUSION_FIXED) */
    int grp[32];
} built;

/* A new graph with its first input in0: N images of H x W pixels and C
 * channels in layout lay, drawn (wide rows of 900-1300 columns one time in
 * `wide`); b->g NULL where it could not be created. Returns whether the
 * input was added. */
static int start_graph(tu_rng *r, built *b, int wide, int64_t *N, int64_t *C, int64_t *H, int64_t *W, ps_act_layout *lay,
                       ps_tensor *in0)
{
    memset(b, 0, sizeof *b);
    *N = tu_range(r, 1, 2), *C = tu_range(r, 1, 3);
    *H = tu_range(r, 1, 40), *W = tu_range(r, 0, wide) == 0 ? tu_range(r, 900, 1300) : tu_range(r, 1, 90);
    *lay = tu_range(r, 0, 3) == 0 ? PS_LAYOUT_NHWC : PS_LAYOUT_NCHW;
    if (ps_graph_create(&b->g)) {
        b->g = NULL;
        return 0;
    }
    b->in_elems[0] = *N * *H * *W * *C;
    b->n_in = 1;
    return !ps_graph_add_input(b->g, "in0", *N, *H, *W, *C, *lay, in0);
}

/* The reader of the terms (a random expression, the output) and the
 * output's size: 1, or 0 with the graph destroyed where a stage was refused
 * (ok == 0 on entry: one before). */
static int finish_graph(tu_rng *r, built *b, int ok, int n_terms, const ps_tensor *terms, ps_act_layout lay, ps_tensor *q,
                        int safe)
{
    if (ok) {
        ps_expr *e = safe ? vector_expr(r, n_terms) : random_expr(r, n_terms);
        ok = e && !ps_graph_add_pointwise(b->g, "Q", e, n_terms, terms, q);
        ps_expr_free(e);
    }
    if (ok) ok = !ps_graph_mark_output(b->g, *q, lay);
    ps_tensor_info info = {.struct_size = sizeof info};
    if (ok) ok = !ps_graph_tensor_info(b->g, *q, &info);
    if (!ok) {
        ps_graph_destroy(b->g);
        b->g = NULL;
        return 0;
    }
    b->out_elems = info.n * info.h * info.w * info.c;
    return 1;
}

/* One random graph; 0 where the builder refused a stage (an empty VALID
 * domain): the caller draws another. */
static int build(tu_rng *r, built *b)
{
    int64_t N, C, H, W;
    ps_act_layout lay;
    ps_tensor in0, in1 = -1, a, p[2], s[4];
    int ok = start_graph(r, b, 5, &N, &C, &H, &W, &lay, &in0);
    if (!b->g) return 0;
    if (ok && tu_range(r, 0, 1)) {
        ok = !ps_graph_add_input(b->g, "in1", N, H, W, 1, lay, &in1);
        b->in_elems[1] = N * H * W;
        b->n_in = 2;
    }
    a = in0;
    if (ok && tu_range(r, 0, 1)) {
        /* a stored stencil: the producer's input comes from a ring */
        int dy[9], dx[9];
        for (int t = 0; t < 9; t++) dy[t] = t / 3 - 1, dx[t] = t % 3 - 1;
        static const float w[9] = {1, 2, 1, 0, 0, 0, -1, -2, -1};
        ps_stencil st;
        ps_stencil_init(&st);
        st.input = in0;
        st.boundary = tu_range(r, 0, 1) ? PS_BOUNDARY_CLAMP : PS_BOUNDARY_ZERO;
        st.n_taps = 9;
        st.dy = dy;
        st.dx = dx;
        st.weights = w;
        ok = !ps_graph_add_stencil(b->g, "A", &st, &a);
    }
    const int n_p = (int)tu_range(r, 1, 2);
    for (int i = 0; i < n_p && ok; i++) {
        ps_tensor ins[2] = {i ? in0 : a, in1 >= 0 ? in1 : a};
        const int n = in1 >= 0 || tu_range(r, 0, 1) ? 2 : 1;
        ps_expr *e = tu_range(r, 0, 2) ? random_expr(r, n) : vector_expr(r, n);
        ok = e && !ps_graph_add_pointwise(b->g, i ? "P2" : "P", e, n, ins, &p[i]);
        ps_expr_free(e);
    }
    const int sy = tu_range(r, 0, 3) == 0 ? 2 : 1, n_s = (int)tu_range(r, 1, 3);
    for (int j = 0; j < n_s && ok; j++) {
        /* mostly the producers, sometimes the input itself (a sum read in place) */
        ps_tensor from = tu_range(r, 0, 4) == 0 ? in0 : p[tu_range(r, 0, n_p - 1)];
        ok = random_sum(r, b->g, from, C, sy, &s[j]) == PS_SUCCESS;
    }
    int n_q = n_s;
    if (ok && sy == 1 && tu_range(r, 0, 2) == 0) s[n_q++] = in0; /* an input read at the point */
    ps_tensor q;
    return finish_graph(r, b, ok, n_q, s, lay, &q, tu_range(r, 0, 1) == 0);
}

/* Sibling sums: 2..4 stencil sums of one ring (a stored 3x3 stencil of the
 * input; sometimes the input itself, which is no ring), the first's taps
 * drawn, the others' mostly inside its rows and columns so that they are
 * computed in its loop, each sum stored (read by a 3x3 box sum, or by two
 * pointwise producers inlined at the taps of box sums, as Harris's
 * gradients are), then one pointwise reader. */
static int build_sibs(tu_rng *r, built *b)
{
    int64_t N, C, H, W;
    ps_act_layout lay;
    ps_tensor in0, a, s[4], t[4], q;
    int ok = start_graph(r, b, 4, &N, &C, &H, &W, &lay, &in0);
    if (!b->g) return 0;
    a = in0;
    if (ok && tu_range(r, 0, 5)) {
        int dy[9], dx[9];
        for (int k = 0; k < 9; k++) dy[k] = k / 3 - 1, dx[k] = k % 3 - 1;
        ok = add_sum(r, b->g, in0, C, 1, 9, dy, dx, -1, &a) == PS_SUCCESS;
    }
    /* mostly one boundary of the three that keep the domain (VALID shrinks
     * it by the taps: regions differ, and the sums are computed apart) */
    const int n_s = (int)tu_range(r, 2, 4), sy = tu_range(r, 0, 3) == 0 ? 2 : 1, bd = (int)tu_range(r, 0, 2);
    int same_sy = 1;
    int dy0[25], dx0[25], n0 = 0, ylo = 0, yhi = 0, xlo = 0, xhi = 0;
    for (int j = 0; j < n_s && ok; j++) {
        int dy[25], dx[25], n = random_taps(r, dy, dx);
        if (j == 0) {
            memcpy(dy0, dy, sizeof dy);
            memcpy(dx0, dx, sizeof dx);
            n0 = n;
            ylo = yhi = dy[0];
            xlo = xhi = dx[0];
            for (int k = 0; k < n; k++) {
                ylo = dy[k] < ylo ? dy[k] : ylo, yhi = dy[k] > yhi ? dy[k] : yhi;
                xlo = dx[k] < xlo ? dx[k] : xlo, xhi = dx[k] > xhi ? dx[k] : xhi;
            }
        } else if (tu_range(r, 0, 7)) {
            /* inside the first's rows and columns: its taps in another
             * order, or a part of them, or the drawn taps clamped */
            switch (tu_range(r, 0, 2)) {
            case 0:
                n = n0;
                for (int k = 0; k < n; k++) dy[k] = dy0[n - 1 - k], dx[k] = dx0[n - 1 - k];
                break;
            case 1:
                n = (int)tu_range(r, 1, n0);
                for (int k = 0; k < n; k++) {
                    const int i = (int)tu_range(r, 0, n0 - 1);
                    dy[k] = dy0[i], dx[k] = dx0[i];
                }
                break;
            default:
                for (int k = 0; k < n; k++) {
                    dy[k] = dy[k] < ylo ? ylo : dy[k] > yhi ? yhi : dy[k];
                    dx[k] = dx[k] < xlo ? xlo : dx[k] > xhi ? xhi : dx[k];
                }
                break;
            }
        }
        const int sj = tu_range(r, 0, 9) ? sy : 3 - sy;
        same_sy &= sj == sy;
        ok = add_sum(r, b->g, a, C, sj, n, dy, dx, tu_range(r, 0, 5) ? bd : -1, &s[j]) == PS_SUCCESS;
    }
    int box_y[9], box_x[9];
    for (int k = 0; k < 9; k++) box_y[k] = k / 3 - 1, box_x[k] = k % 3 - 1;
    int n_t = n_s;
    if (ok && tu_range(r, 0, 1)) {
        for (int j = 0; j < n_s && ok; j++) ok = add_sum(r, b->g, s[j], C, 1, 9, box_y, box_x, -1, &t[j]) == PS_SUCCESS;
    } else if (ok) {
        /* two readers of every sum (one reader would compute it in its pass) */
        ps_tensor p[2];
        for (int i = 0; i < 2 && ok; i++) {
            ps_expr *e = random_expr(r, n_s);
            ok = e && !ps_graph_add_pointwise(b->g, i ? "P2" : "P", e, n_s, s, &p[i]);
            ps_expr_free(e);
        }
        n_t = (int)tu_range(r, 2, 3);
        for (int j = 0; j < n_t && ok; j++) ok = add_sum(r, b->g, p[j % 2], C, 1, 9, box_y, box_x, -1, &t[j]) == PS_SUCCESS;
    }
    if (!finish_graph(r, b, ok, n_t, t, lay, &q, 0)) return 0;
    /* The planner often keeps small images' stages apart, and siblings are
     * computed in one loop only within a group: mostly a fixed grouping,
     * everything in one group or the sums (live-outs) with their input. */
    const int mode = same_sy && ps_graph_num_tensors(b->g) <= 32 ? (int)tu_range(r, 0, 2) : 0;
    b->fixed = mode > 0;
    for (int i = 0; i < 32; i++) b->grp[i] = 0;
    if (mode == 2) {
        for (int i = 0; i < ps_graph_num_tensors(b->g); i++) b->grp[i] = 1;
        b->grp[a] = 0;
        for (int j = 0; j < n_s; j++) b->grp[s[j]] = 0;
    }
    return 1;
}

/* Box sums (every tap of R x S rows and columns, weights 1: graph_exec.h
 * box stages) read by one pointwise reader: 1..3 boxes of 2..4 x 2..6
 * taps in row- or column-major order, anywhere around the point, of
 * pointwise producers (inlined at the taps) or of the input, with unit
 * weights given or left out, sometimes a row read at the point; the
 * reader's expression and the producers' mostly of the operations the
 * compiled boxes compute as vectors (the loop of vectors), else any (the
 * buffer of columns). */
static int build_boxes(tu_rng *r, built *b)
{
    int64_t N, C, H, W;
    ps_act_layout lay;
    ps_tensor in0, in1 = -1, p[2], s[4], q;
    int ok = start_graph(r, b, 2, &N, &C, &H, &W, &lay, &in0);
    if (!b->g) return 0;
    if (ok && tu_range(r, 0, 2) == 0) {
        ok = !ps_graph_add_input(b->g, "in1", N, H, W, 1, lay, &in1);
        b->in_elems[1] = N * H * W;
        b->n_in = 2;
    }
    const int safe = tu_range(r, 0, 1) != 0;
    const int n_p = (int)tu_range(r, 1, 2);
    for (int i = 0; i < n_p && ok; i++) {
        ps_tensor ins[2] = {in0, in1 >= 0 ? in1 : in0};
        const int n = in1 >= 0 || tu_range(r, 0, 1) ? 2 : 1;
        ps_expr *e = tu_range(r, 0, 4) ? vector_expr(r, n) : random_expr(r, n);
        ok = e && !ps_graph_add_pointwise(b->g, i ? "P2" : "P", e, n, ins, &p[i]);
        ps_expr_free(e);
    }
    const int n_s = (int)tu_range(r, 1, 3), sy = tu_range(r, 0, 4) == 0 ? 2 : 1;
    for (int j = 0; j < n_s && ok; j++) {
        const int R = (int)tu_range(r, 2, 4), S = (int)tu_range(r, 2, 6), y0 = (int)tu_range(r, -3, 1),
                  x0 = (int)tu_range(r, -5, 1), col_major = (int)tu_range(r, 0, 1);
        int dy[24], dx[24], n = 0;
        for (int a = 0; a < (col_major ? S : R); a++)
            for (int c = 0; c < (col_major ? R : S); c++, n++) {
                dy[n] = y0 + (col_major ? c : a);
                dx[n] = x0 + (col_major ? a : c);
            }
        float ones[24 * 3];
        for (int t = 0; t < n * C; t++) ones[t] = 1.0f;
        ps_stencil st;
        ps_stencil_init(&st);
        st.input = tu_range(r, 0, 4) == 0 ? in0 : p[tu_range(r, 0, n_p - 1)];
        st.boundary = bds[tu_range(r, 0, 3)];
        st.stride_h = sy;
        st.n_taps = n;
        st.dy = dy;
        st.dx = dx;
        const int wmode = (int)tu_range(r, 0, 2); /* left out, shared ones, ones per channel */
        st.weights = wmode ? ones : NULL;
        st.per_channel_weights = wmode == 2;
        ok = ps_graph_add_stencil(b->g, NULL, &st, &s[j]) == PS_SUCCESS;
    }
    int n_q = n_s;
    if (ok && sy == 1 && tu_range(r, 0, 3) == 0) s[n_q++] = in0;
    return finish_graph(r, b, ok, n_q, s, lay, &q, safe);
}

/* Plans g with `flags` (and a forced tile), runs it; the output, or NULL
 * with the failure counted. describe: the plan's description (caller frees). */
static float *run(ps_context *ctx, const built *b, float *const *in, unsigned flags, int64_t th, int64_t tw, int threads,
                  char **describe)
{
    ps_graph_options o;
    ps_graph_options_init(&o);
    o.flags = flags | PS_GRAPH_NO_CACHE;
    o.tile_h = th;
    o.tile_w = tw;
    o.num_threads = threads;
    if (b->fixed) {
        o.n_group_of = ps_graph_num_tensors(b->g);
        o.fusion = PS_FUSION_FIXED;
        o.group_of = b->grp;
    }
    ps_graph_plan *pl = NULL;
    ps_status st = ps_graph_plan_create(ctx, b->g, &o, &pl);
    TU_CHECK(st == PS_SUCCESS, "plan_create: %s", ps_last_error_message());
    if (st) return NULL;
    float *out = tu_alloc_f(b->out_elems > 0 ? b->out_elems : 1);
    tu_fill(out, b->out_elems, tu_sentinel());
    float *outs[1] = {out};
    TU_CHECK(ps_graph_execute(pl, (const float *const *)in, outs, NULL) == PS_SUCCESS, "execute: %s", ps_last_error_message());
    if (describe) {
        size_t need = 0;
        ps_graph_plan_describe(pl, NULL, 0, &need);
        *describe = calloc(need + 1, 1);
        if (*describe) ps_graph_plan_describe(pl, *describe, need + 1, NULL);
    }
    ps_graph_plan_destroy(pl);
    return out;
}

int main(void)
{
    char dir[] = "/tmp/ps_test_taps_XXXXXX";
    if (!tu_jit_cache_create(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const uint64_t seed = tu_seed("test_taps", 20261127);
    const char *cnt = getenv("PS_TEST_COUNT");
    const int count = cnt ? atoi(cnt) : 48;
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    int graphs = 0, with_tap = 0, with_inline = 0, with_pair = 0, refused = 0, sib_graphs = 0, with_sibs = 0;
    int box_graphs = 0, by_vectors = 0, by_columns = 0, with_vec = 0;
    /* the first `count` graphs test tap programs, as many after them sibling
     * sums, as many after those box sums */
    for (int gi = 0; gi < 3 * count && ctx; gi++) {
        tu_rng r = {seed + (uint64_t)gi * 7919u};
        built b;
        int tries = 0;
        const int sibs = gi >= count && gi < 2 * count, boxes = gi >= 2 * count;
        while (!(boxes ? build_boxes(&r, &b) : sibs ? build_sibs(&r, &b) : build(&r, &b)) && ++tries < 50) refused++;
        if (!b.g) continue;
        graphs += !sibs && !boxes;
        sib_graphs += sibs;
        box_graphs += boxes;
        float *in[2] = {NULL, NULL};
        for (int i = 0; i < b.n_in; i++) {
            in[i] = tu_alloc_f(b.in_elems[i]);
            tu_fill_random(&r, in[i], b.in_elems[i]);
        }
        const int threads = (int)tu_range(&r, 1, 2);
        const int64_t th = tu_range(&r, 0, 2) == 0 ? tu_range(&r, 1, 9) : 0, tw = th ? tu_range(&r, 1, 40) : 0;
        char *desc = NULL;
        float *a = run(ctx, &b, in, 0, th, tw, threads, &desc);
        float *ref = run(ctx, &b, in, PS_GRAPH_NO_CODEGEN, th, tw, threads, NULL);
        if (desc && sibs) with_sibs += strstr(desc, "sibling sums with") != NULL;
        if (desc && boxes) {
            by_vectors += strstr(desc, "; by vectors") != NULL;
            by_columns += strstr(desc, "box sums by columns") != NULL;
        }
        if (desc && !sibs && !boxes) {
            with_vec += strstr(desc, "; by vectors") != NULL;
            with_tap += strstr(desc, "compiled tap program") != NULL;
            with_inline += strstr(desc, "never stored") != NULL;
            with_pair += strstr(desc, "2 output rows per call") != NULL;
        }
        if (a && ref) {
            int64_t bad = -1;
            for (int64_t i = 0; i < b.out_elems && bad < 0; i++)
                if (memcmp(&a[i], &ref[i], sizeof *a)) bad = i;
            TU_CHECK(bad < 0, "graph %d (seed %llu, tile %lldx%lld, %d threads): element %lld is %a with the tap program, %a interpreted",
                     gi, (unsigned long long)(seed + (uint64_t)gi * 7919u), (long long)th, (long long)tw, threads, (long long)bad,
                     bad >= 0 ? (double)a[bad] : 0.0, bad >= 0 ? (double)ref[bad] : 0.0);
            if (bad >= 0 && desc && getenv("PS_TEST_VERBOSE")) {
                fputs(desc, stderr);
                int shown = 0;
                for (int64_t i = 0; i < b.out_elems && shown < 40; i++)
                    if (memcmp(&a[i], &ref[i], sizeof *a)) fprintf(stderr, "%s%lld", shown++ ? "," : "differ at ", (long long)i);
                fputs("\n", stderr);
            }
            const float sent = tu_sentinel();
            int64_t unwritten = -1;
            for (int64_t i = 0; i < b.out_elems && unwritten < 0; i++)
                if (!memcmp(&a[i], &sent, sizeof sent)) unwritten = i;
            TU_CHECK(unwritten < 0, "graph %d: output element %lld never written", gi, (long long)unwritten);
        }
        free(desc);
        free(a);
        free(ref);
        for (int i = 0; i < b.n_in; i++) free(in[i]);
        ps_graph_destroy(b.g);
    }
    printf("test_taps: %d graphs (%d drawn again), %d with a tap program, %d with an inlined producer, %d with a pair "
           "program, %d by vectors; %d graphs of sibling sums, %d computed in one loop; %d graphs of box sums, %d by "
           "vectors, %d by columns\n",
           graphs, refused, with_tap, with_inline, with_pair, with_vec, sib_graphs, with_sibs, box_graphs, by_vectors,
           by_columns);
    /* the path under test was taken: most graphs fuse their sums into the reader */
    TU_CHECK(graphs >= count * 3 / 4, "only %d of %d graphs built", graphs, count);
    TU_CHECK(with_tap >= graphs / 2, "only %d of %d graphs had a tap program", with_tap, graphs);
    TU_CHECK(with_inline >= graphs / 5, "only %d of %d graphs inlined a producer", with_inline, graphs);
    TU_CHECK(with_pair >= graphs / 2, "only %d of %d graphs had a pair program", with_pair, graphs);
    TU_CHECK(with_vec >= graphs / 8, "only %d of %d graphs ran their tap program by vectors", with_vec, graphs);
    TU_CHECK(sib_graphs >= count * 3 / 4, "only %d of %d graphs of sibling sums built", sib_graphs, count);
    TU_CHECK(with_sibs >= sib_graphs / 2, "only %d of %d graphs computed sibling sums in one loop", with_sibs, sib_graphs);
    TU_CHECK(box_graphs >= count * 3 / 4, "only %d of %d graphs of box sums built", box_graphs, count);
    TU_CHECK(by_vectors >= box_graphs / 8, "only %d of %d graphs computed box sums by vectors", by_vectors, box_graphs);
    TU_CHECK(by_columns >= box_graphs / 16, "only %d of %d graphs computed box sums by columns", by_columns, box_graphs);
    ps_context_destroy(ctx);
    tu_jit_cache_remove(dir);
    return tu_finish("test_taps");
}
