/* Random stage graphs through every planner mode, against the double
 * reference (graph_ref.c).
 *
 * Each graph comes from its own seed (PS_TEST_SEED + graph number, so one
 * graph reruns alone with PS_TEST_SEED=<its seed> PS_TEST_COUNT=1): a DAG of
 * 1..25 stages of every kind (stencils with box, line, cross, scattered and
 * off-centre taps, strides 1..3, ZERO/CLAMP/VALID boundaries, sum/max/min,
 * shared and per-channel weights; pointwise expression trees over 1..4
 * inputs with 1-channel broadcast; channel mixes; up/down resampling) with
 * fan-out, fan-in of tensors at different resolutions and origins where their
 * domains intersect, several outputs (some cropped to a region), NHWC and
 * NCHW, sizes from 1 x 1 through primes, N 1..3 and C 1..5.
 *
 * Every graph is planned with PS_FUSION_NONE, GREEDY, DP and FIXED (a random
 * grouping, legal or not: a refusal must be a clear status with a message,
 * never a crash), and once more with a forced tile size on a random mode
 * (1 x 1, 3 x 5, 7 x 2, ... on even graphs; far larger than any tensor, up
 * to 2^24, on odd ones), on 1 and 2 threads; each plan is executed
 * into NaN-filled outputs (an unwritten element fails), compared with the
 * reference within the propagated f32 bound (graph_ref.c states it and why it
 * holds), executed again with a caller's workspace (bitwise the same result:
 * execution is deterministic) and the inputs checked unmodified. Some plans
 * are made from a copy of the graph that is destroyed before they execute,
 * and some are executed from two threads at once.
 *
 * Without the engine in the library (graph_engine.h) the graphs are still
 * built and evaluated (the builder's domains are checked against the
 * definitions) and the test exits 77 (skipped).
 *
 * PS_TEST_COUNT: graphs (default 200; 100 under ASan). PS_TEST_VERBOSE=1
 * prints every plan's time and every refused FIXED grouping. */
#include <pthread.h>
#include <time.h>

#include "graph_engine.h"
#include "graph_ref.h"
#include "test_util.h"
/* Struct layouts of the builder's nodes, for the coverage summary. */
#include "graph/graph_impl.h"

#define MAX_T 96              /* tensors of one graph (inputs + stages) */
#define MAX_PIXELS 2600       /* h * w of any tensor */
#define MAX_ELEMS 14000       /* n * h * w * c of any tensor */
#define MAG_LIMIT 8.0         /* bound on |value| the generator keeps every tensor under */
/* Graphs of the default run. Under ASan+UBSan (scripts/sanitize.sh) the
 * planner's isl analysis runs several times slower, so that run takes fewer;
 * PS_TEST_COUNT overrides both. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_COUNT 100
#else
#define DEFAULT_COUNT 200
#endif

/* ---------------------------------------------------------------- generator */

typedef struct gen {
    tu_rng *r;
    ps_graph *g;
    int64_t N;
    int n;              /* tensors */
    double mag[MAX_T];  /* bound on |value| of each tensor (inputs are in [-1, 1]) */
    int consumers[MAX_T];
    int refusals;       /* stages the builder refused as expected (empty VALID domain) */
    int bad;            /* the builder misbehaved */
} gen;

static double frand(tu_rng *r) { return 0.5 * (1.0 + (double)tu_uniform(r)); } /* [0, 1) */
static int chance(tu_rng *r, double p) { return frand(r) < p; }

static void dom(const gen *G, ps_tensor t, ps_tensor_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    if (ps_graph_tensor_info(G->g, t, info) != PS_SUCCESS) {
        fprintf(stderr, "tensor_info(%d): %s\n", t, ps_last_error_message());
        exit(1);
    }
}

/* A tensor to read: mostly one of the latest (chains), sometimes any (fan-out). */
static ps_tensor pick(gen *G)
{
    if (G->n > 1 && chance(G->r, 0.65)) {
        const int back = (int)tu_range(G->r, 1, G->n < 4 ? G->n : 4);
        return G->n - back;
    }
    return (ps_tensor)tu_range(G->r, 0, G->n - 1);
}

static int64_t elems(const ps_tensor_info *i) { return i->n * i->h * i->w * i->c; }

static void added(gen *G, ps_tensor t, double mag, const ps_tensor *in, int n_in)
{
    if (t != G->n) {
        fprintf(stderr, "builder returned tensor %d, expected %d\n", t, G->n);
        G->bad++;
    }
    G->mag[G->n++] = mag;
    for (int i = 0; i < n_in; i++) G->consumers[in[i]]++;
}

static void add_inputs(gen *G)
{
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 19, 23, 29, 31, 32, 37, 41, 43, 47, 53};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    tu_rng *r = G->r;
    G->N = tu_range(r, 1, 3);
    int64_t H = sizes[tu_range(r, 0, ns - 1)], W = sizes[tu_range(r, 0, ns - 1)], C = tu_range(r, 1, 5);
    if (chance(r, 0.05)) H = W = 1;
    else if (chance(r, 0.08)) H = 1;
    else if (chance(r, 0.08)) W = 1;
    while (H * W > MAX_PIXELS / 2) H = (H + 1) / 2;
    while (G->N * H * W * C > MAX_ELEMS / 2 && C > 1) C--;
    while (G->N * H * W * C > MAX_ELEMS / 2) W = (W + 1) / 2;
    const int n_in = chance(r, 0.6) ? 1 : chance(r, 0.6) ? 2 : 3;
    for (int i = 0; i < n_in; i++) {
        int64_t h = H, w = W, c = C;
        if (i > 0) {
            const double k = frand(r);
            if (k < 0.25) {
                h = (H + 1) / 2; /* a pyramid level */
                w = (W + 1) / 2;
            } else if (k < 0.45) {
                h = sizes[tu_range(r, 0, ns - 1)];
                w = sizes[tu_range(r, 0, ns - 1)];
                while (h * w > MAX_PIXELS / 2) h = (h + 1) / 2;
            }
            c = chance(r, 0.5) ? C : 1;
        }
        ps_tensor t;
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (ps_graph_add_input(G->g, name, G->N, h, w, c, chance(r, 0.5) ? PS_LAYOUT_NCHW : PS_LAYOUT_NHWC, &t)) {
            fprintf(stderr, "add_input %lld x %lld x %lld x %lld: %s\n", (long long)G->N, (long long)h, (long long)w,
                    (long long)c, ps_last_error_message());
            G->bad++;
            return;
        }
        added(G, t, 1.0, NULL, 0);
    }
}

/* Random f32 weights with sum |w| = s (per row of `per` values). */
static void norm_weights(tu_rng *r, float *w, int n, double s)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        w[i] = tu_uniform(r);
        if (fabsf(w[i]) < 0.05f) w[i] = w[i] < 0 ? -0.05f : 0.05f;
        sum += fabs(w[i]);
    }
    for (int i = 0; i < n; i++) w[i] = (float)(w[i] * s / sum);
}

static void add_stencil(gen *G)
{
    tu_rng *r = G->r;
    const ps_tensor in = pick(G);
    ps_tensor_info di;
    dom(G, in, &di);
    int dy[64], dx[64], n = 0;
    switch ((int)tu_range(r, 0, 5)) {
    case 0: { /* box, centred or shifted, odd or even sides */
        const int kh = (int)tu_range(r, 1, 4), kw = (int)tu_range(r, 1, 4);
        const int oy = -kh / 2 + (chance(r, 0.2) ? (int)tu_range(r, -2, 2) : 0);
        const int ox = -kw / 2 + (chance(r, 0.2) ? (int)tu_range(r, -2, 2) : 0);
        for (int a = 0; a < kh; a++)
            for (int b = 0; b < kw; b++) {
                dy[n] = oy + a;
                dx[n++] = ox + b;
            }
        break;
    }
    case 1:
    case 2: { /* a row or a column, any start */
        const int k = (int)tu_range(r, 2, 7), o = -(int)tu_range(r, 0, k - 1);
        const int vertical = chance(r, 0.5);
        for (int a = 0; a < k; a++) {
            dy[n] = vertical ? o + a : 0;
            dx[n++] = vertical ? 0 : o + a;
        }
        break;
    }
    case 3: { /* a cross */
        const int arm = (int)tu_range(r, 1, 2);
        dy[n] = dx[n] = 0;
        n++;
        for (int a = 1; a <= arm; a++) {
            const int d[4][2] = {{a, 0}, {-a, 0}, {0, a}, {0, -a}};
            for (int k = 0; k < 4; k++) {
                dy[n] = d[k][0];
                dx[n++] = d[k][1];
            }
        }
        break;
    }
    case 4: /* scattered (duplicates allowed) */
        n = (int)tu_range(r, 1, 9);
        for (int a = 0; a < n; a++) {
            dy[a] = (int)tu_range(r, -3, 3);
            dx[a] = (int)tu_range(r, -3, 3);
        }
        break;
    default: /* one tap, anywhere near */
        dy[0] = (int)tu_range(r, -3, 3);
        dx[0] = (int)tu_range(r, -3, 3);
        n = 1;
        break;
    }
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.n_taps = n;
    st.dy = dy;
    st.dx = dx;
    st.boundary = (ps_boundary)tu_range(r, 0, 2);
    const double rk = frand(r);
    st.reduce = rk < 0.7 ? PS_REDUCE_SUM : rk < 0.85 ? PS_REDUCE_MAX : PS_REDUCE_MIN;
    if (chance(r, 0.25)) {
        st.stride_h = (int)tu_range(r, 1, 3);
        st.stride_w = (int)tu_range(r, 1, 3);
    }
    float w[64 * 5];
    const int per = di.c > 1 && chance(r, 0.35);
    const int nw = n * (per ? (int)di.c : 1);
    double mag = G->mag[in];
    if (st.reduce == PS_REDUCE_SUM) {
        if (chance(r, 0.2) && n * mag <= MAG_LIMIT) {
            mag *= n; /* weights NULL: every weight 1 */
        } else {
            double s = 0.5 + frand(r);
            if (s * mag > MAG_LIMIT) s = MAG_LIMIT / mag;
            if (per) {
                for (int c = 0; c < di.c; c++) {
                    float row[64];
                    norm_weights(r, row, n, s);
                    for (int t = 0; t < n; t++) w[t * di.c + c] = row[t];
                }
            } else {
                norm_weights(r, w, n, s);
            }
            st.weights = w;
            mag *= s * 1.0001; /* the f32 rounding of the weights */
        }
    } else if (chance(r, 0.6)) {
        for (int i = 0; i < nw; i++) w[i] = (float)((0.25 + 0.75 * frand(r)) * (chance(r, 0.3) ? -1 : 1));
        st.weights = w;
    }
    st.per_channel_weights = st.weights && per;
    ps_tensor t;
    const int before = ps_graph_num_tensors(G->g);
    ps_status s = ps_graph_add_stencil(G->g, NULL, &st, &t);
    /* An empty domain is refused, and the graph stays as it was: VALID taps
     * wider than the input, or strides that step over a domain that does not
     * start at 0 (stride 3 over the single column 1). Then the same stencil
     * with CLAMP, then with stride 1. */
    for (int retry = 0; retry < 2 && s == PS_ERR_INVALID_ARG &&
                        (strstr(ps_last_error_message(), "no valid pixel") || strstr(ps_last_error_message(), "no pixel"));
         retry++) {
        if (ps_graph_num_tensors(G->g) != before || t != -1) {
            fprintf(stderr, "a refused stencil changed the graph (%d -> %d tensors, out %d)\n", before,
                    ps_graph_num_tensors(G->g), t);
            G->bad++;
        }
        G->refusals++;
        if (st.boundary == PS_BOUNDARY_VALID) st.boundary = PS_BOUNDARY_CLAMP;
        else st.stride_h = st.stride_w = 1;
        s = ps_graph_add_stencil(G->g, NULL, &st, &t);
    }
    if (s) {
        fprintf(stderr, "add_stencil: %s: %s\n", ps_status_str(s), ps_last_error_message());
        G->bad++;
        return;
    }
    added(G, t, mag, &in, 1);
}

/* A random expression over inputs with bounds m[i]; *M receives a bound on
 * its value. Divisions, square roots, logarithms and exponentials are
 * guarded so the value stays finite and well-conditioned:
 * a / (|b| + c), sqrt(|a| + c), log(|a| + c) with c >= 1/4, exp(clamp(a, -3, 3)). */
static ps_expr *gen_expr(gen *G, int depth, int n_in, const double *m, double *M)
{
    tu_rng *r = G->r;
    if (depth == 0 || chance(r, 0.2)) {
        if (chance(r, 0.75)) {
            const int i = (int)tu_range(r, 0, n_in - 1);
            *M = m[i];
            return ps_expr_input(i);
        }
        const float c = (float)(2.0 * tu_uniform(r));
        *M = fabs(c);
        return ps_expr_const(c);
    }
    static const float guards[3] = {0.25f, 0.5f, 1.0f};
    double a, b, c;
    ps_expr *e = NULL;
    const int kind = (int)tu_range(r, 0, 15);
    switch (kind) {
    case 0: e = ps_expr_unary(PS_EXPR_NEG, gen_expr(G, depth - 1, n_in, m, &a)); *M = a; break;
    case 1: e = ps_expr_unary(PS_EXPR_ABS, gen_expr(G, depth - 1, n_in, m, &a)); *M = a; break;
    case 2: e = ps_expr_unary(PS_EXPR_FLOOR, gen_expr(G, depth - 1, n_in, m, &a)); *M = a + 1; break;
    case 3: {
        const float k = guards[tu_range(r, 0, 2)];
        e = ps_expr_unary(PS_EXPR_SQRT, ps_expr_binary(PS_EXPR_ADD, ps_expr_unary(PS_EXPR_ABS, gen_expr(G, depth - 1, n_in, m, &a)),
                                                       ps_expr_const(k)));
        *M = sqrt(a + k);
        break;
    }
    case 4: {
        const float k = guards[tu_range(r, 0, 2)];
        e = ps_expr_unary(PS_EXPR_LOG, ps_expr_binary(PS_EXPR_ADD, ps_expr_unary(PS_EXPR_ABS, gen_expr(G, depth - 1, n_in, m, &a)),
                                                      ps_expr_const(k)));
        *M = fmax(fabs(log(k)), log(a + k));
        break;
    }
    case 5:
        e = ps_expr_unary(PS_EXPR_EXP, ps_expr_clamp(gen_expr(G, depth - 1, n_in, m, &a), ps_expr_const(-3), ps_expr_const(3)));
        *M = exp(fmin(a, 3));
        break;
    case 6: e = ps_expr_binary(PS_EXPR_ADD, gen_expr(G, depth - 1, n_in, m, &a), gen_expr(G, depth - 1, n_in, m, &b)); *M = a + b; break;
    case 7: e = ps_expr_binary(PS_EXPR_SUB, gen_expr(G, depth - 1, n_in, m, &a), gen_expr(G, depth - 1, n_in, m, &b)); *M = a + b; break;
    case 8: e = ps_expr_binary(PS_EXPR_MUL, gen_expr(G, depth - 1, n_in, m, &a), gen_expr(G, depth - 1, n_in, m, &b)); *M = a * b; break;
    case 9: {
        const float k = 2 * guards[tu_range(r, 0, 2)];
        e = ps_expr_binary(PS_EXPR_DIV, gen_expr(G, depth - 1, n_in, m, &a),
                           ps_expr_binary(PS_EXPR_ADD, ps_expr_unary(PS_EXPR_ABS, gen_expr(G, depth - 1, n_in, m, &b)),
                                          ps_expr_const(k)));
        *M = a / k;
        break;
    }
    case 10:
        e = ps_expr_binary(chance(r, 0.5) ? PS_EXPR_MIN : PS_EXPR_MAX, gen_expr(G, depth - 1, n_in, m, &a),
                           gen_expr(G, depth - 1, n_in, m, &b));
        *M = fmax(a, b);
        break;
    case 11: {
        const ps_expr_op ops[6] = {PS_EXPR_LT, PS_EXPR_LE, PS_EXPR_GT, PS_EXPR_GE, PS_EXPR_EQ, PS_EXPR_NE};
        e = ps_expr_binary(ops[tu_range(r, 0, 5)], gen_expr(G, depth - 1, n_in, m, &a), gen_expr(G, depth - 1, n_in, m, &b));
        *M = 1;
        break;
    }
    case 12:
    case 13: {
        /* select on a comparison (mostly) or on any value (c != 0) */
        ps_expr *cond;
        if (chance(r, 0.75)) {
            const ps_expr_op ops[4] = {PS_EXPR_LT, PS_EXPR_LE, PS_EXPR_GT, PS_EXPR_GE};
            cond = ps_expr_binary(ops[tu_range(r, 0, 3)], gen_expr(G, depth - 1, n_in, m, &c),
                                  gen_expr(G, depth - 1, n_in, m, &c));
        } else {
            cond = gen_expr(G, depth - 1, n_in, m, &c);
        }
        e = ps_expr_select(cond, gen_expr(G, depth - 1, n_in, m, &a), gen_expr(G, depth - 1, n_in, m, &b));
        *M = fmax(a, b);
        break;
    }
    default: {
        ps_expr *x = gen_expr(G, depth - 1, n_in, m, &a);
        if (chance(r, 0.7)) {
            float lo = (float)(2 * tu_uniform(r)), hi = (float)(2 * tu_uniform(r));
            if (lo > hi && chance(r, 0.8)) { /* mostly lo <= hi; else the result is hi */
                const float t = lo;
                lo = hi;
                hi = t;
            }
            e = ps_expr_clamp(x, ps_expr_const(lo), ps_expr_const(hi));
            *M = fmax(fabs(lo), fabs(hi));
        } else {
            e = ps_expr_clamp(x, gen_expr(G, depth - 1, n_in, m, &b), gen_expr(G, depth - 1, n_in, m, &c));
            *M = fmax(b, c);
        }
        break;
    }
    }
    if (*M > 64) { /* keep intermediate values moderate: scale by a power of 2 (exact) */
        const double k = exp2(-ceil(log2(*M / 8)));
        e = ps_expr_binary(PS_EXPR_MUL, e, ps_expr_const((float)k));
        *M *= k;
    }
    return e;
}

static int compatible_c(int64_t a, int64_t b) { return a == 1 || b == 1 || a == b; }

static void add_pointwise(gen *G)
{
    tu_rng *r = G->r;
    ps_tensor in[4];
    double m[4];
    in[0] = pick(G);
    ps_tensor_info d;
    dom(G, in[0], &d);
    int64_t C = d.c, y0 = d.y0, x0 = d.x0, y1 = d.y0 + d.h, x1 = d.x0 + d.w;
    const double k = frand(r);
    const int want = k < 0.35 ? 1 : k < 0.7 ? 2 : k < 0.9 ? 3 : 4;
    int n = 1;
    for (int tries = 0; tries < 16 && n < want; tries++) {
        ps_tensor t = chance(r, 0.5) ? pick(G) : (ps_tensor)tu_range(r, 0, G->n - 1);
        if (chance(r, 0.3)) /* look for a 1-channel tensor to broadcast */
            for (int j = G->n - 1; j >= 0; j--) {
                ps_tensor_info e;
                dom(G, j, &e);
                if (e.c == 1 && chance(r, 0.5)) {
                    t = j;
                    break;
                }
            }
        ps_tensor_info e;
        dom(G, t, &e);
        const int64_t ny0 = e.y0 > y0 ? e.y0 : y0, nx0 = e.x0 > x0 ? e.x0 : x0;
        const int64_t ny1 = e.y0 + e.h < y1 ? e.y0 + e.h : y1, nx1 = e.x0 + e.w < x1 ? e.x0 + e.w : x1;
        if (!compatible_c(e.c, C) || ny1 <= ny0 || nx1 <= nx0) continue;
        if (C == 1 && e.c > 1 && (ny1 - ny0) * (nx1 - nx0) * e.c * G->N > MAX_ELEMS) continue;
        in[n++] = t;
        C = e.c > C ? e.c : C;
        y0 = ny0;
        x0 = nx0;
        y1 = ny1;
        x1 = nx1;
    }
    for (int i = 0; i < n; i++) m[i] = G->mag[in[i]];
    double M;
    ps_expr *e = gen_expr(G, (int)tu_range(r, 0, 4), n, m, &M);
    if (M > MAG_LIMIT) {
        const double s = exp2(-ceil(log2(M / (MAG_LIMIT / 2))));
        e = ps_expr_binary(PS_EXPR_MUL, e, ps_expr_const((float)s));
        M *= s;
    }
    ps_tensor t;
    const ps_status s = ps_graph_add_pointwise(G->g, NULL, e, n, in, &t);
    ps_expr_free(e);
    if (s) {
        fprintf(stderr, "add_pointwise: %s: %s\n", ps_status_str(s), ps_last_error_message());
        G->bad++;
        return;
    }
    added(G, t, M, in, n);
}

static void add_mix(gen *G)
{
    tu_rng *r = G->r;
    const ps_tensor in = pick(G);
    ps_tensor_info d;
    dom(G, in, &d);
    int64_t K = tu_range(r, 1, 5);
    while (K > 1 && G->N * d.h * d.w * K > MAX_ELEMS) K--;
    float w[5 * 5], bias[5];
    double s = 0.5 + 0.5 * frand(r), bmax = 0;
    if (s * G->mag[in] > MAG_LIMIT - 0.5) s = (MAG_LIMIT - 0.5) / G->mag[in];
    for (int k = 0; k < K; k++) {
        norm_weights(r, w + k * d.c, (int)d.c, s);
        bias[k] = (float)(0.5 * tu_uniform(r));
        bmax = fmax(bmax, fabs(bias[k]));
    }
    const int with_bias = chance(r, 0.5);
    ps_tensor t;
    const ps_status st = ps_graph_add_channel_mix(G->g, NULL, in, K, w, with_bias ? bias : NULL, &t);
    if (st) {
        fprintf(stderr, "add_channel_mix: %s: %s\n", ps_status_str(st), ps_last_error_message());
        G->bad++;
        return;
    }
    added(G, t, G->mag[in] * s * 1.0001 + (with_bias ? bmax : 0), &in, 1);
}

static void add_resample(gen *G)
{
    tu_rng *r = G->r;
    const ps_tensor in = pick(G);
    ps_tensor_info d;
    dom(G, in, &d);
    ps_resample kind;
    if (4 * d.h * d.w <= MAX_PIXELS && 4 * elems(&d) <= MAX_ELEMS && chance(r, 0.55))
        kind = chance(r, 0.5) ? PS_RESAMPLE_UP2_BILINEAR : PS_RESAMPLE_UP2_NEAREST;
    else
        kind = PS_RESAMPLE_DOWN2_AVERAGE;
    /* downsampling one row (column) at an odd coordinate has no pixel y with
     * 2y inside: test_graph_api covers it, the random graphs avoid it */
    if (kind == PS_RESAMPLE_DOWN2_AVERAGE && ((d.h == 1 && (d.y0 & 1)) || (d.w == 1 && (d.x0 & 1)))) return;
    ps_tensor t;
    const ps_status st =
        ps_graph_add_resample(G->g, NULL, in, kind, chance(r, 0.5) ? PS_BOUNDARY_ZERO : PS_BOUNDARY_CLAMP, &t);
    if (st) {
        fprintf(stderr, "add_resample: %s: %s\n", ps_status_str(st), ps_last_error_message());
        G->bad++;
        return;
    }
    added(G, t, G->mag[in], &in, 1);
}

/* Marks the outputs: every sink (mostly), some inner stages, regions, layouts. */
static void mark_outputs(gen *G, int first_stage)
{
    tu_rng *r = G->r;
    int order[MAX_T], n = 0;
    for (int t = first_stage; t < G->n; t++) {
        const int sink = G->consumers[t] == 0;
        if ((sink && (t == G->n - 1 || chance(r, 0.9))) || (!sink && chance(r, 0.12))) order[n++] = t;
    }
    for (int i = n - 1; i > 0; i--) { /* shuffle: outputs are numbered in marking order */
        const int j = (int)tu_range(r, 0, i), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (int i = 0; i < n; i++) {
        const ps_tensor t = order[i];
        if (ps_graph_mark_output(G->g, t, chance(r, 0.5) ? PS_LAYOUT_NCHW : PS_LAYOUT_NHWC)) {
            fprintf(stderr, "mark_output(%d): %s\n", t, ps_last_error_message());
            G->bad++;
            continue;
        }
        if (chance(r, 0.3)) {
            ps_tensor_info d;
            dom(G, t, &d);
            const int64_t y0 = d.y0 + tu_range(r, 0, d.h - 1), x0 = d.x0 + tu_range(r, 0, d.w - 1);
            const int64_t h = tu_range(r, 1, d.y0 + d.h - y0), w = tu_range(r, 1, d.x0 + d.w - x0);
            if (ps_graph_set_output_region(G->g, t, y0, x0, h, w)) {
                fprintf(stderr, "set_output_region(%d): %s\n", t, ps_last_error_message());
                G->bad++;
            }
        }
    }
}

/* Builds graph number `seed`; returns NULL (and reports) if the builder
 * misbehaved. */
static ps_graph *build(uint64_t seed, int *n_stages, int *refusals)
{
    tu_rng r = {seed * 0x2545F4914F6CDD1Dull + 1};
    gen G;
    memset(&G, 0, sizeof G);
    G.r = &r;
    if (ps_graph_create(&G.g)) return NULL;
    add_inputs(&G);
    const double k = frand(&r);
    const int want = k < 0.5 ? (int)tu_range(&r, 1, 8) : k < 0.85 ? (int)tu_range(&r, 9, 16) : (int)tu_range(&r, 17, 25);
    const int first_stage = G.n;
    for (int i = 0; i < want && G.n < MAX_T && !G.bad; i++) {
        const double s = frand(&r);
        if (s < 0.35) add_stencil(&G);
        else if (s < 0.65) add_pointwise(&G);
        else if (s < 0.8) add_mix(&G);
        else add_resample(&G);
    }
    if (!G.bad) mark_outputs(&G, first_stage);
    *n_stages = G.n - first_stage;
    *refusals = G.refusals;
    if (G.bad) {
        gr_print_graph(G.g, stderr);
        ps_graph_destroy(G.g);
        return NULL;
    }
    return G.g;
}

/* ---------------------------------------------------------------- running */

typedef struct bufs {
    int n;
    void *base[MAX_T];
    float *p[MAX_T]; /* exact size (ASan sees an overrun), maybe 1 float off 16-byte alignment */
    int64_t len[MAX_T];
} bufs;

static void bufs_alloc(bufs *b, int n, const int64_t *len, int misalign)
{
    b->n = n;
    for (int i = 0; i < n; i++) {
        b->len[i] = len[i];
        b->base[i] = malloc((size_t)(len[i] + 1) * sizeof(float));
        if (!b->base[i]) abort();
        b->p[i] = (float *)b->base[i] + (misalign && (i % 2 == 0) ? 1 : 0);
    }
}
static void bufs_free(bufs *b)
{
    for (int i = 0; i < b->n; i++) free(b->base[i]);
    b->n = 0;
}
static void bufs_fill_sentinel(bufs *b)
{
    for (int i = 0; i < b->n; i++) tu_fill(b->p[i], b->len[i], tu_sentinel());
}

typedef struct stats_t {
    int graphs, plans, executions, fixed_refused, fixed_tried, refusals, failed_graphs, concurrent;
    double max_norm[4]; /* per fusion mode */
    int64_t unchecked, ref_unchecked;
    double plan_s, exec_s, ref_s; /* wall time in planning, executing, the reference */
    double plan_mode_s[4];
    int plan_mode_n[4];
} stats_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *mode_name(ps_fusion f)
{
    static const char *names[] = {"dp", "greedy", "none", "fixed"};
    return (int)f >= 0 && (int)f < 4 ? names[f] : "?";
}

typedef struct config {
    ps_fusion fusion;
    int threads;
    int64_t tile_h, tile_w;
    int64_t chunk_w; /* > 0: bands in chunks of so many columns (the skewed column chunks) */
    unsigned flags;
    int group_limit;
    int grouping; /* FIXED: which kind of grouping (see make_grouping) */
    int from_copy; /* plan from a copy of the graph destroyed before executing */
} config;

static void describe_config(const config *c, char *buf, size_t len)
{
    static const char *groupings[] = {"each stage alone", "all in one", "random of 4", "chunks", "random of 2"};
    snprintf(buf, len, "fusion %s, %d thread(s), tile %lldx%lld, chunk %lld, flags 0x%x, group_limit %d%s%s%s",
             mode_name(c->fusion), c->threads, (long long)c->tile_h, (long long)c->tile_w, (long long)c->chunk_w, c->flags,
             c->group_limit,
             c->fusion == PS_FUSION_FIXED ? ", grouping " : "", c->fusion == PS_FUSION_FIXED ? groupings[c->grouping] : "",
             c->from_copy ? ", planned from a copy destroyed before execution" : "");
}

static void make_grouping(tu_rng *r, int grouping, int n, int *group_of)
{
    const int chunk = (int)tu_range(r, 2, 4);
    for (int t = 0; t < n; t++) {
        switch (grouping) {
        case 0: group_of[t] = t * 7 - 3; break; /* any int */
        case 1: group_of[t] = 42; break;
        case 2: group_of[t] = (int)tu_range(r, 0, 3); break;
        case 3: group_of[t] = t / chunk; break;
        default: group_of[t] = (int)tu_range(r, -1, 0); break;
        }
    }
}

typedef struct exec_job {
    const ps_graph_plan *p;
    const float *const *in;
    float *const *out;
    void *ws;
    ps_status st;
} exec_job;

static void *exec_thread(void *arg)
{
    exec_job *j = arg;
    j->st = ps_graph_execute(j->p, j->in, j->out, j->ws);
    return NULL;
}

/* What the generated graphs contain, printed so that coverage claims are
 * checked, not assumed. */
typedef struct coverage {
    int64_t stages, kinds[5], reduce[3], boundary[3], strided, per_channel, null_weights, valid_off_origin, broadcast,
        fan_in, up[2], down, outputs, regions, nchw_out, tiny_images, max_stages, pixels, max_inputs, fan_out, intersect;
} coverage;

static void cover(const ps_graph *g, coverage *cv)
{
    int stages = 0;
    for (int k = 0; k < g->n; k++) {
        const ps_node *nd = &g->nodes[k];
        int readers = 0;
        for (int j = k + 1; j < g->n; j++)
            for (int i = 0; i < g->nodes[j].n_in; i++) readers += g->nodes[j].in[i] == k;
        cv->fan_out += readers > 1;
        cv->pixels += nd->dom.h * nd->dom.w;
        if (nd->kind == PS_NODE_INPUT) {
            cv->tiny_images += nd->dom.h == 1 || nd->dom.w == 1;
            continue;
        }
        stages++;
        cv->kinds[nd->kind]++;
        if (nd->kind == PS_NODE_STENCIL) {
            cv->reduce[nd->reduce]++;
            cv->boundary[nd->boundary]++;
            cv->strided += nd->sy > 1 || nd->sx > 1;
            cv->per_channel += nd->per_channel;
            cv->valid_off_origin += nd->dom.y0 != 0 || nd->dom.x0 != 0;
        }
        if (nd->kind == PS_NODE_POINTWISE) {
            int one = 0, many = 0, differ = 0;
            for (int i = 0; i < nd->n_in; i++) {
                const ps_node *s = &g->nodes[nd->in[i]];
                one += s->c == 1;
                many += s->c > 1;
                differ += s->dom.h != nd->dom.h || s->dom.w != nd->dom.w || s->dom.y0 != nd->dom.y0 || s->dom.x0 != nd->dom.x0;
            }
            cv->broadcast += one && many;
            cv->fan_in += nd->n_in > 1;
            cv->intersect += differ > 0;
            if (nd->n_in > cv->max_inputs) cv->max_inputs = nd->n_in;
        }
        if (nd->kind == PS_NODE_RESAMPLE) {
            if (nd->resample == PS_RESAMPLE_DOWN2_AVERAGE) cv->down++;
            else cv->up[nd->resample]++;
        }
        if (nd->output_index >= 0) {
            cv->outputs++;
            cv->nchw_out += nd->layout == PS_LAYOUT_NCHW;
            cv->regions += nd->out_region.h != nd->dom.h || nd->out_region.w != nd->dom.w;
        }
    }
    cv->stages += stages;
    if (stages > cv->max_stages) cv->max_stages = stages;
}

static void print_coverage(const coverage *cv, int graphs)
{
    printf("test_graph_random: %d graphs, %lld stages (up to %lld in one): %lld stencils (sum/max/min %lld/%lld/%lld, "
           "zero/clamp/valid %lld/%lld/%lld, %lld strided, %lld per-channel, %lld off the origin), %lld pointwise "
           "(%lld with several inputs, up to %lld, %lld broadcasting 1 channel, %lld on an intersection of domains), "
           "%lld mixes, %lld resamples (%lld up nearest, %lld up bilinear, %lld down); %lld tensors read by several "
           "stages; %lld outputs (%lld NCHW, %lld cropped); %lld inputs with 1 row or column; %.0f pixels per tensor\n",
           graphs, (long long)cv->stages, (long long)cv->max_stages, (long long)cv->kinds[PS_NODE_STENCIL],
           (long long)cv->reduce[0], (long long)cv->reduce[1], (long long)cv->reduce[2], (long long)cv->boundary[0],
           (long long)cv->boundary[1], (long long)cv->boundary[2], (long long)cv->strided, (long long)cv->per_channel,
           (long long)cv->valid_off_origin, (long long)cv->kinds[PS_NODE_POINTWISE], (long long)cv->fan_in,
           (long long)cv->max_inputs, (long long)cv->broadcast, (long long)cv->intersect, (long long)cv->kinds[PS_NODE_MIX],
           (long long)cv->kinds[PS_NODE_RESAMPLE], (long long)cv->up[0], (long long)cv->up[1], (long long)cv->down,
           (long long)cv->fan_out, (long long)cv->outputs, (long long)cv->nchw_out, (long long)cv->regions,
           (long long)cv->tiny_images, (double)cv->pixels / (double)(cv->stages + 1));
}

static int g_reports = 0; /* detailed failure reports printed */

/* Plans and runs one configuration; returns 0 or the number of problems. */
static int run_config(ps_context *ctx, const ps_graph *g, uint64_t seed, const config *c, const gr_eval *ev,
                      const float *const *inputs, const bufs *inb, tu_rng *r, stats_t *S)
{
    char what[256];
    describe_config(c, what, sizeof what);
    const int nt = ps_graph_num_tensors(g), nout = ps_graph_num_outputs(g);
    int problems = 0;
#define PROBLEM(...)                                                                   \
    do {                                                                               \
        problems++;                                                                    \
        tu_failures++;                                                                 \
        fprintf(stderr, "FAIL graph seed %llu (%s): ", (unsigned long long)seed, what); \
        fprintf(stderr, __VA_ARGS__);                                                  \
        fprintf(stderr, "\n");                                                         \
    } while (0)
    ps_graph_options o;
    ps_graph_options_init(&o);
    o.fusion = c->fusion;
    o.num_threads = c->threads;
    o.tile_h = c->tile_h;
    o.tile_w = c->tile_w;
    o.chunk_w = c->chunk_w;
    o.flags = c->flags;
    o.group_limit = c->group_limit;
    int group_of[MAX_T];
    if (c->fusion == PS_FUSION_FIXED) {
        make_grouping(r, c->grouping, nt, group_of);
        o.group_of = group_of;
        o.n_group_of = nt;
    }
    ps_graph *copy = NULL;
    if (c->from_copy) {
        int ns, rf;
        copy = build(seed, &ns, &rf);
        if (!copy) {
            PROBLEM("the generator did not rebuild the same graph");
            return problems;
        }
    }
    ps_graph_plan *p = NULL;
    char prime[1100];
    tu_prime(0, prime, sizeof prime);
    double t0 = now_s();
    const ps_status st = ps_graph_plan_create(ctx, copy ? copy : g, &o, &p);
    S->plan_s += now_s() - t0;
    S->plan_mode_s[c->fusion] += now_s() - t0;
    S->plan_mode_n[c->fusion]++;
    if (getenv("PS_TEST_VERBOSE"))
        printf("plan (seed %llu) %s %d tensors %d threads tile %lldx%lld: %.3f s %s\n", (unsigned long long)seed,
               mode_name(c->fusion), nt, c->threads, (long long)c->tile_h, (long long)c->tile_w, now_s() - t0,
               ps_status_str(st));
    ps_graph_destroy(copy);
    tu_checks++;
    if (c->fusion == PS_FUSION_FIXED) S->fixed_tried++;
    if (st != PS_SUCCESS) {
        const char *m = ps_last_error_message();
        if (p) PROBLEM("failed plan_create (%s) left *plan non-NULL", ps_status_str(st));
        if (!m[0] || strcmp(m, prime) == 0) PROBLEM("plan_create -> %s without a message of its own", ps_status_str(st));
        /* Only a FIXED grouping may be refused (other than "each stage alone",
         * which is always legal), and only as a bad argument or unsupported. */
        if (c->fusion == PS_FUSION_FIXED && c->grouping != 0 && (st == PS_ERR_INVALID_ARG || st == PS_ERR_UNSUPPORTED)) {
            S->fixed_refused++;
            if (getenv("PS_TEST_VERBOSE")) printf("FIXED grouping %d refused: %s: %s\n", c->grouping, ps_status_str(st), m);
            return problems;
        }
        PROBLEM("plan_create: %s: %s", ps_status_str(st), m);
        return problems;
    }
    S->plans++;
    /* stats, workspace, describe */
    size_t ws_bytes = 0;
    if (ps_graph_plan_workspace_size(p, &ws_bytes)) PROBLEM("workspace_size: %s", ps_last_error_message());
    ps_graph_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if (ps_graph_plan_get_stats(p, &stats)) PROBLEM("get_stats: %s", ps_last_error_message());
    else if (stats.n_groups < 1 || stats.n_groups > stats.n_stages || stats.workspace_bytes != ws_bytes ||
             !(stats.redundant_fraction >= 0) || (c->fusion == PS_FUSION_NONE && stats.n_groups != stats.n_stages))
        PROBLEM("stats: %d groups of %d stages, workspace %zu (size %zu), redundant %g", stats.n_groups, stats.n_stages,
                stats.workspace_bytes, ws_bytes, stats.redundant_fraction);
    size_t need = 0;
    ps_graph_plan_describe(p, NULL, 0, &need);
    char *text = malloc(need + 1);
    if (ps_graph_plan_describe(p, text, need + 1, NULL) || strlen(text) != need)
        PROBLEM("describe: %s (%zu of %zu bytes)", ps_last_error_message(), strlen(text), need);

    /* outputs: exact sizes, NaN-filled */
    int64_t olen[MAX_T];
    for (int i = 0; i < nout; i++) olen[i] = gr_output_elems(g, i);
    bufs out, again;
    bufs_alloc(&out, nout, olen, (int)(seed & 1));
    bufs_alloc(&again, nout, olen, (int)((seed >> 1) & 1));
    bufs_fill_sentinel(&out);
    /* A workspace can hold every tensor of the graph once per thread and
     * once more at most (scratch tiles are clipped to their tensors): a
     * larger one is a sizing bug, and is not allocated here. */
    int64_t all = 0;
    for (int k = 0; k < nt; k++) all += ev->t[k].n * ev->t[k].c * ev->t[k].h * ev->t[k].w;
    const double ws_cap = 8.0 * (double)all * (c->threads + 2) + (1 << 20);
    if ((double)ws_bytes > ws_cap) {
        PROBLEM("workspace of %zu bytes for a graph of %lld elements in all (at most %.0f expected); not executed",
                ws_bytes, (long long)all, ws_cap);
        free(text);
        bufs_free(&out);
        bufs_free(&again);
        ps_graph_plan_destroy(p);
        return problems;
    }
    t0 = now_s();
    ps_status xs = ps_graph_execute(p, inputs, (float *const *)out.p, NULL);
    S->exec_s += now_s() - t0;
    if (getenv("PS_TEST_VERBOSE")) printf("execute (seed %llu) %s: %.3f s\n", (unsigned long long)seed, what, now_s() - t0);
    S->executions++;
    if (xs) PROBLEM("execute: %s: %s", ps_status_str(xs), ps_last_error_message());
    int wrong = 0;
    for (int i = 0; i < nout && !xs; i++) {
        gr_cmp cmp;
        int64_t n_unwritten = 0;
        const float sent = tu_sentinel();
        for (int64_t k = 0; k < out.len[i]; k++) n_unwritten += memcmp(&out.p[i][k], &sent, sizeof sent) == 0;
        gr_compare(g, ev, i, out.p[i], &cmp);
        S->unchecked += cmp.n_unchecked;
        if (cmp.max_norm_err > S->max_norm[c->fusion] && !cmp.n_bad) S->max_norm[c->fusion] = cmp.max_norm_err;
        if (cmp.n_bad || n_unwritten) {
            ps_tensor_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            ps_graph_tensor_info(g, ps_graph_output(g, i), &info);
            PROBLEM("output %d (tensor %d \"%s\", %lld elements): %lld wrong, %lld unwritten; first at image %lld "
                    "channel %lld (y %lld, x %lld): got %.9g want %.9g (bound %.3g); max normalized error %.3g",
                    i, ps_graph_output(g, i), info.name, (long long)out.len[i], (long long)cmp.n_bad,
                    (long long)n_unwritten, (long long)cmp.bad_img, (long long)cmp.bad_ch, (long long)cmp.bad_y,
                    (long long)cmp.bad_x, cmp.bad_got, cmp.bad_want, cmp.bad_bound, cmp.max_norm_err);
            wrong = 1;
        }
    }
    /* again, with a caller's workspace full of NaN bytes: the same bits */
    void *ws = NULL;
    if (!xs) {
        ws = tu_alloc(ws_bytes ? ws_bytes : 64);
        memset(ws, 0xff, ws_bytes ? ws_bytes : 64);
        bufs_fill_sentinel(&again);
        xs = ps_graph_execute(p, inputs, (float *const *)again.p, ws_bytes ? ws : NULL);
        S->executions++;
        if (xs) PROBLEM("execute with a workspace: %s: %s", ps_status_str(xs), ps_last_error_message());
        for (int i = 0; i < nout && !xs; i++)
            if (memcmp(out.p[i], again.p[i], (size_t)out.len[i] * sizeof(float)))
                PROBLEM("output %d differs between two executions (without and with a workspace)", i);
    }
    /* from two threads at once, distinct outputs and workspaces */
    if (!xs && (tu_next(r) % 6) == 0) {
        bufs o2;
        bufs_alloc(&o2, nout, olen, 0);
        bufs_fill_sentinel(&o2);
        bufs_fill_sentinel(&again);
        void *ws2 = tu_alloc(ws_bytes ? ws_bytes : 64);
        exec_job j[2] = {{p, inputs, (float *const *)again.p, ws_bytes ? ws : NULL, PS_SUCCESS},
                         {p, inputs, (float *const *)o2.p, ws_bytes ? ws2 : NULL, PS_SUCCESS}};
        pthread_t th;
        if (pthread_create(&th, NULL, exec_thread, &j[1]) == 0) {
            exec_thread(&j[0]);
            pthread_join(th, NULL);
            S->concurrent++;
            S->executions += 2;
            if (j[0].st || j[1].st) PROBLEM("concurrent execute: %s / %s", ps_status_str(j[0].st), ps_status_str(j[1].st));
            for (int i = 0; i < nout && !j[0].st && !j[1].st; i++)
                if (memcmp(out.p[i], again.p[i], (size_t)out.len[i] * sizeof(float)) ||
                    memcmp(out.p[i], o2.p[i], (size_t)out.len[i] * sizeof(float)))
                    PROBLEM("output %d differs when executed from two threads at once", i);
        }
        free(ws2);
        bufs_free(&o2);
    }
    /* the inputs are read only */
    for (int i = 0; i < inb->n; i++)
        for (int64_t k = 0; k < inb->len[i]; k++)
            if (memcmp(&inb->p[i][k], &inputs[i][k], sizeof(float))) {
                PROBLEM("execute modified input %d at %lld", i, (long long)k);
                break;
            }
    if (wrong && g_reports < 8) {
        g_reports++;
        fprintf(stderr, "plan:\n%.6000s\n", text);
    }
    free(text);
    free(ws);
    bufs_free(&out);
    bufs_free(&again);
    ps_graph_plan_destroy(p);
    return problems;
#undef PROBLEM
}

int main(void)
{
    /* verbose: line by line, so that the last plan before a crash shows */
    if (getenv("PS_TEST_VERBOSE")) setvbuf(stdout, NULL, _IOLBF, 0);
    const uint64_t seed0 = tu_seed("test_graph_random", 20240);
    const char *ce = getenv("PS_TEST_COUNT");
    const int count = ce && *ce ? atoi(ce) : DEFAULT_COUNT;
    const int engine = ge_engine_present();
    ps_context *ctx = NULL, *small = NULL;
    if (engine && ps_context_create(NULL, &ctx)) {
        fprintf(stderr, "ps_context_create: %s\n", ps_last_error_message());
        return 1;
    }
    if (engine && tu_context_with_caches(0, 1 << 10, 2 << 10, 4 << 10, &small)) return 1;
    stats_t S;
    memset(&S, 0, sizeof S);
    coverage cv;
    memset(&cv, 0, sizeof cv);
    static const int64_t tiny[][2] = {{1, 1}, {3, 5}, {7, 2}, {1, 8}, {2, 1}, {5, 3}, {13, 17}, {1, 64}};
    /* huge: up to 2^24, the largest the planner takes (it refuses larger) */
    static const int64_t huge[][2] = {{4096, 4096}, {1 << 20, 3}, {100000, 100000}, {1 << 24, 1 << 24}};
    const clock_t t0 = clock();
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    for (int gi = 0; gi < count; gi++) {
        const uint64_t seed = seed0 + (uint64_t)gi;
        int n_stages = 0, refusals = 0;
        ps_graph *g = build(seed, &n_stages, &refusals);
        if (!g) {
            tu_failures++;
            fprintf(stderr, "FAIL graph seed %llu: the builder misbehaved while generating it\n", (unsigned long long)seed);
            continue;
        }
        S.graphs++;
        S.refusals += refusals;
        cover(g, &cv);
        tu_rng r = {seed ^ 0x5DEECE66Dull};
        /* inputs in [-1, 1], exact sizes; a copy to check they stay unmodified */
        const int nin = ps_graph_num_inputs(g);
        int64_t ilen[MAX_T];
        for (int i = 0; i < nin; i++) ilen[i] = gr_input_elems(g, i);
        bufs in, keep;
        bufs_alloc(&in, nin, ilen, (int)((seed >> 2) & 1));
        bufs_alloc(&keep, nin, ilen, 0);
        for (int i = 0; i < nin; i++) {
            tu_fill_random(&r, in.p[i], ilen[i]);
            memcpy(keep.p[i], in.p[i], (size_t)ilen[i] * sizeof(float));
        }
        gr_eval ev;
        tu_checks++;
        double t0r = now_s();
        const int ref_failed = gr_eval_graph(g, (const float *const *)in.p, &ev);
        S.ref_s += now_s() - t0r;
        if (ref_failed) {
            tu_failures++;
            fprintf(stderr, "FAIL graph seed %llu: reference: %s\n", (unsigned long long)seed, ev.msg);
            gr_print_graph(g, stderr);
        } else {
            /* The reference rounded to f32 is what a perfect f32 implementation
             * could return: it must pass its own bound. */
            for (int i = 0; i < ps_graph_num_outputs(g); i++) {
                const int64_t n = gr_output_elems(g, i);
                float *o = tu_alloc_f(n);
                gr_store_output(g, &ev, i, o);
                gr_cmp cmp;
                gr_compare(g, &ev, i, o, &cmp);
                S.ref_unchecked += cmp.n_unchecked;
                TU_CHECK(cmp.n_bad == 0, "graph seed %llu output %d: the rounded reference fails its bound (%lld "
                         "elements, got %.9g want %.9g bound %.3g)", (unsigned long long)seed, i, (long long)cmp.n_bad,
                         cmp.bad_got, cmp.bad_want, cmp.bad_bound);
                free(o);
            }
        }
        if (!ev.msg[0] && engine) {
            /* every mode, then a forced tile size on a random mode: tiny
             * (1 x 1, 3 x 5, 7 x 2, ...) on even graphs, huge on odd ones */
            config cf[5];
            memset(cf, 0, sizeof cf);
            const ps_fusion modes[4] = {PS_FUSION_NONE, PS_FUSION_GREEDY, PS_FUSION_DP, PS_FUSION_FIXED};
            for (int k = 0; k < 5; k++) {
                cf[k].fusion = k < 4 ? modes[k] : modes[tu_range(&r, 0, 3)];
                cf[k].threads = 1 + (int)((gi + k) % 2);
                cf[k].flags = (chance(&r, 0.25) ? PS_GRAPH_NO_INLINE : 0) | (chance(&r, 0.25) ? PS_GRAPH_NO_EPILOGUE : 0);
                cf[k].grouping = (int)tu_range(&r, 0, 4);
                if (cf[k].fusion == PS_FUSION_DP && chance(&r, 0.2)) cf[k].group_limit = (int)tu_range(&r, 1, 3);
                /* bands run in chunks of a few columns: the skew between
                 * members' chunks must still give every reader its inputs */
                if (chance(&r, 0.4)) cf[k].chunk_w = tu_range(&r, 1, 9);
            }
            cf[2].from_copy = gi % 3 == 0;
            const int ti = (int)tu_range(&r, 0, 7), hi = (int)tu_range(&r, 0, 3);
            cf[4].tile_h = gi % 2 ? huge[hi][0] : tiny[ti][0];
            cf[4].tile_w = gi % 2 ? huge[hi][1] : tiny[ti][1];
            int bad = 0;
            /* greedy on odd graphs under caches so small that every tensor
             * counts as in memory: readers request rows ahead, pieces of 16
             * columns */
            for (int k = 0; k < 5; k++)
                bad += run_config(k == 1 && gi % 2 && small ? small : ctx, g, seed, &cf[k], &ev,
                                  (const float *const *)in.p, &keep, &r, &S);
            S.failed_graphs += bad > 0;
            if (bad && S.failed_graphs <= 8) {
                fprintf(stderr, "graph (seed %llu; rerun alone: PS_TEST_SEED=%llu PS_TEST_COUNT=1):\n",
                        (unsigned long long)seed, (unsigned long long)seed);
                gr_print_graph(g, stderr);
            }
        }
        gr_eval_free(&ev);
        bufs_free(&in);
        bufs_free(&keep);
        ps_graph_destroy(g);
    }
    clock_gettime(CLOCK_MONOTONIC, &w1);
    const double wall = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    printf("test_graph_random: %d graphs (%d builder refusals of empty VALID domains exercised), %.1f s wall, %.1f s cpu\n",
           S.graphs, S.refusals, wall, (double)(clock() - t0) / CLOCKS_PER_SEC);
    print_coverage(&cv, S.graphs);
    printf("test_graph_random: %lld output elements of the reference are ill-conditioned (infinite bound)\n",
           (long long)S.ref_unchecked);
    ps_context_destroy(ctx);
    ps_context_destroy(small);
    if (!engine) {
        printf("test_graph_random: SKIPPED planning and execution: the library has no graph engine (ps_graph_plan_create); "
               "the graphs were built and evaluated by the reference only\n");
        const int rc = tu_finish("test_graph_random");
        return rc ? rc : 77;
    }
    printf("test_graph_random: %d plans, %d executions (%d concurrent pairs), %d of %d FIXED groupings refused, %d graphs "
           "failed; %lld ill-conditioned elements unchecked\n",
           S.plans, S.executions, S.concurrent, S.fixed_refused, S.fixed_tried, S.failed_graphs, (long long)S.unchecked);
    printf("test_graph_random: wall time planning %.1f s, executing (first runs) %.1f s, reference %.1f s\n", S.plan_s,
           S.exec_s, S.ref_s);
    printf("test_graph_random: planning per call: dp %.3f s, greedy %.3f s, none %.3f s, fixed %.3f s\n",
           S.plan_mode_s[0] / (S.plan_mode_n[0] + !S.plan_mode_n[0]), S.plan_mode_s[1] / (S.plan_mode_n[1] + !S.plan_mode_n[1]),
           S.plan_mode_s[2] / (S.plan_mode_n[2] + !S.plan_mode_n[2]), S.plan_mode_s[3] / (S.plan_mode_n[3] + !S.plan_mode_n[3]));
    printf("test_graph_random: max normalized error (1 = the bound) dp %.3g greedy %.3g none %.3g fixed %.3g\n",
           S.max_norm[PS_FUSION_DP], S.max_norm[PS_FUSION_GREEDY], S.max_norm[PS_FUSION_NONE], S.max_norm[PS_FUSION_FIXED]);
    return tu_finish("test_graph_random");
}
