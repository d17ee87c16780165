/* The double reference of stage graphs (graph_ref.c) on tiny cases computed
 * by hand from the definitions in graph.h: the reference is what the random
 * test trusts, so it is checked on its own first. */
#include <math.h>

#include "graph_ref.h"
#include "test_util.h"

#define CLOSE(a, b) (fabs((double)(a) - (double)(b)) <= 1e-12 * (1 + fabs((double)(b))))

static ps_graph *new_graph(void)
{
    ps_graph *g = NULL;
    if (ps_graph_create(&g) != PS_SUCCESS) {
        fprintf(stderr, "ps_graph_create: %s\n", ps_last_error_message());
        exit(1);
    }
    return g;
}

static ps_tensor stencil(ps_graph *g, ps_tensor in, ps_boundary b, ps_reduce red, int sy, int sx, int n, const int *dy,
                         const int *dx, const float *w, int per_channel)
{
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.boundary = b;
    st.reduce = red;
    st.stride_h = sy;
    st.stride_w = sx;
    st.n_taps = n;
    st.dy = dy;
    st.dx = dx;
    st.weights = w;
    st.per_channel_weights = per_channel;
    ps_tensor t = -1;
    TU_OK(ps_graph_add_stencil(g, NULL, &st, &t));
    return t;
}

/* Evaluates g on `in` (one input per graph input); aborts on failure. */
static void eval(const ps_graph *g, const float *const *in, gr_eval *ev)
{
    if (gr_eval_graph(g, in, ev)) {
        tu_failures++;
        fprintf(stderr, "FAIL: gr_eval_graph: %s\n", ev->msg);
        gr_print_graph(g, stderr);
        exit(1);
    }
}

/* value of tensor t at (img, y, x, ch) in its own coordinates */
static double V(const gr_eval *ev, ps_tensor t, int64_t img, int64_t y, int64_t x, int64_t ch)
{
    const gr_tensor *s = &ev->t[t];
    return s->v[((img * s->h + (y - s->y0)) * s->w + (x - s->x0)) * s->c + ch];
}
static double E(const gr_eval *ev, ps_tensor t, int64_t img, int64_t y, int64_t x, int64_t ch)
{
    const gr_tensor *s = &ev->t[t];
    return s->e[((img * s->h + (y - s->y0)) * s->w + (x - s->x0)) * s->c + ch];
}

static void dom_is(const gr_eval *ev, ps_tensor t, int64_t y0, int64_t x0, int64_t h, int64_t w, const char *what)
{
    const gr_tensor *s = &ev->t[t];
    TU_CHECK(s->y0 == y0 && s->x0 == x0 && s->h == h && s->w == w,
             "%s: domain [%lld,+%lld) x [%lld,+%lld), want [%lld,+%lld) x [%lld,+%lld)", what, (long long)s->y0,
             (long long)s->h, (long long)s->x0, (long long)s->w, (long long)y0, (long long)h, (long long)x0, (long long)w);
}

/* 3-tap horizontal [1 2 1] over one row 1..5: clamp and zero at both edges. */
static void test_blur3(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, c, z;
    TU_OK(ps_graph_add_input(g, "in", 1, 1, 5, 1, PS_LAYOUT_NHWC, &in));
    const int dy[3] = {0, 0, 0}, dx[3] = {-1, 0, 1};
    const float w[3] = {1, 2, 1};
    c = stencil(g, in, PS_BOUNDARY_CLAMP, PS_REDUCE_SUM, 1, 1, 3, dy, dx, w, 0);
    z = stencil(g, in, PS_BOUNDARY_ZERO, PS_REDUCE_SUM, 1, 1, 3, dy, dx, w, 0);
    const float x[5] = {1, 2, 3, 4, 5};
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    dom_is(&ev, c, 0, 0, 1, 5, "blur clamp");
    /* clamp: in(-1) = in(0) = 1, in(5) = in(4) = 5 */
    const double want_c[5] = {1 + 2 + 2, 1 + 4 + 3, 2 + 6 + 4, 3 + 8 + 5, 4 + 10 + 5};
    const double want_z[5] = {0 + 2 + 2, 1 + 4 + 3, 2 + 6 + 4, 3 + 8 + 5, 4 + 10 + 0};
    for (int i = 0; i < 5; i++) {
        TU_CHECK(CLOSE(V(&ev, c, 0, 0, i, 0), want_c[i]), "clamp x=%d: %g want %g", i, V(&ev, c, 0, 0, i, 0), want_c[i]);
        TU_CHECK(CLOSE(V(&ev, z, 0, 0, i, 0), want_z[i]), "zero x=%d: %g want %g", i, V(&ev, z, 0, 0, i, 0), want_z[i]);
        /* inputs are exact: the bound is the summation's own, tol(3) * sum |terms| */
        const double mag = want_c[i];
        TU_CHECK(CLOSE(E(&ev, c, 0, 0, i, 0), gr_sum_tolerance(3) * mag), "clamp x=%d: bound %g", i,
                 E(&ev, c, 0, 0, i, 0));
    }
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* A valid 3 x 3 box sum: its domain starts at (1, 1). */
static void test_valid_box(void)
{
    ps_graph *g = new_graph();
    ps_tensor in;
    TU_OK(ps_graph_add_input(g, "in", 1, 5, 6, 1, PS_LAYOUT_NCHW, &in));
    int dy[9], dx[9];
    for (int i = 0; i < 9; i++) {
        dy[i] = i / 3 - 1;
        dx[i] = i % 3 - 1;
    }
    const ps_tensor b = stencil(g, in, PS_BOUNDARY_VALID, PS_REDUCE_SUM, 1, 1, 9, dy, dx, NULL, 0);
    /* taps 0..2 (not centred): the domain starts at 0 and is 2 shorter */
    int dy2[9], dx2[9];
    for (int i = 0; i < 9; i++) {
        dy2[i] = dy[i] + 1;
        dx2[i] = dx[i] + 1;
    }
    const ps_tensor b2 = stencil(g, in, PS_BOUNDARY_VALID, PS_REDUCE_SUM, 1, 1, 9, dy2, dx2, NULL, 0);
    float x[30];
    for (int i = 0; i < 30; i++) x[i] = (float)i; /* NCHW: x[y * 6 + x] */
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    dom_is(&ev, b, 1, 1, 3, 4, "valid 3x3 centred");
    dom_is(&ev, b2, 0, 0, 3, 4, "valid 3x3 at 0..2");
    double s = 0;
    for (int y = 0; y < 3; y++)
        for (int xx = 0; xx < 3; xx++) s += y * 6 + xx;
    TU_CHECK(CLOSE(V(&ev, b, 0, 1, 1, 0), s), "box(1,1) = %g want %g", V(&ev, b, 0, 1, 1, 0), s);
    TU_CHECK(CLOSE(V(&ev, b2, 0, 0, 0, 0), s), "box2(0,0) = %g want %g", V(&ev, b2, 0, 0, 0, 0), s);
    /* the last valid pixel (3, 4) sums rows 2..4, columns 3..5 */
    s = 0;
    for (int y = 2; y < 5; y++)
        for (int xx = 3; xx < 6; xx++) s += y * 6 + xx;
    TU_CHECK(CLOSE(V(&ev, b, 0, 3, 4, 0), s), "box(3,4) = %g want %g", V(&ev, b, 0, 3, 4, 0), s);
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* Stride 2 over an odd number of rows: ceil(H / 2) rows with ZERO/CLAMP,
 * fewer with VALID; DOWN2_AVERAGE reads past the last row through its
 * boundary. */
static void test_stride2_odd(void)
{
    ps_graph *g = new_graph();
    ps_tensor in;
    TU_OK(ps_graph_add_input(g, "in", 1, 7, 1, 1, PS_LAYOUT_NHWC, &in));
    const int dy3[3] = {0, 1, 2}, dx3[3] = {0, 0, 0}, dyn[2] = {-2, -1}, dxn[2] = {0, 0}, d0[1] = {0};
    const ps_tensor sc = stencil(g, in, PS_BOUNDARY_CLAMP, PS_REDUCE_SUM, 2, 1, 3, dy3, dx3, NULL, 0);
    const ps_tensor sv = stencil(g, in, PS_BOUNDARY_VALID, PS_REDUCE_SUM, 2, 1, 3, dy3, dx3, NULL, 0);
    const ps_tensor sn = stencil(g, in, PS_BOUNDARY_VALID, PS_REDUCE_SUM, 2, 1, 2, dyn, dxn, NULL, 0);
    const ps_tensor s3 = stencil(g, in, PS_BOUNDARY_ZERO, PS_REDUCE_SUM, 3, 1, 1, d0, d0, NULL, 0);
    ps_tensor dc, dz;
    TU_OK(ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_CLAMP, &dc));
    TU_OK(ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_ZERO, &dz));
    const float x[7] = {1, 2, 3, 4, 5, 6, 7};
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    dom_is(&ev, sc, 0, 0, 4, 1, "stride 2 clamp over 7 rows");
    dom_is(&ev, sv, 0, 0, 3, 1, "stride 2 valid taps 0..2 over 7 rows"); /* 2y + 2 <= 6 */
    dom_is(&ev, sn, 1, 0, 3, 1, "stride 2 valid taps -2..-1 over 7 rows"); /* 2y - 2 >= 0, 2y - 1 <= 6 */
    dom_is(&ev, s3, 0, 0, 3, 1, "stride 3 over 7 rows");                  /* rows 0, 3, 6 */
    dom_is(&ev, dc, 0, 0, 4, 1, "down2 over 7 rows");
    /* clamp stencil at y = 3 reads rows 6, 7 -> 6, 8 -> 6 */
    TU_CHECK(CLOSE(V(&ev, sc, 0, 3, 0, 0), 21), "stride-2 clamp y=3: %g", V(&ev, sc, 0, 3, 0, 0));
    TU_CHECK(CLOSE(V(&ev, sn, 0, 1, 0, 0), 1 + 2), "stride-2 valid y=1: %g", V(&ev, sn, 0, 1, 0, 0));
    TU_CHECK(CLOSE(V(&ev, s3, 0, 2, 0, 0), 7), "stride 3 y=2: %g", V(&ev, s3, 0, 2, 0, 0));
    /* down2, 1 column: mean of rows 2y, 2y+1 and the columns 0 and 1 (1 is outside) */
    TU_CHECK(CLOSE(V(&ev, dc, 0, 0, 0, 0), 1.5), "down2 clamp y=0: %g", V(&ev, dc, 0, 0, 0, 0));
    TU_CHECK(CLOSE(V(&ev, dc, 0, 3, 0, 0), 7), "down2 clamp y=3: %g", V(&ev, dc, 0, 3, 0, 0));
    TU_CHECK(CLOSE(V(&ev, dz, 0, 0, 0, 0), 0.75), "down2 zero y=0: %g", V(&ev, dz, 0, 0, 0, 0));
    TU_CHECK(CLOSE(V(&ev, dz, 0, 3, 0, 0), 7 * 0.25), "down2 zero y=3: %g", V(&ev, dz, 0, 3, 0, 0));
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* Bilinear x2 samples at ((y - 0.5) / 2, (x - 0.5) / 2). */
static void test_bilinear(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, uc, uz, un;
    TU_OK(ps_graph_add_input(g, "in", 1, 2, 2, 1, PS_LAYOUT_NHWC, &in));
    TU_OK(ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_CLAMP, &uc));
    TU_OK(ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_ZERO, &uz));
    TU_OK(ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_UP2_NEAREST, PS_BOUNDARY_ZERO, &un));
    const float a = 1, b = 10, c = 100, d = 1000; /* in = [[a, b], [c, d]] */
    const float x[4] = {a, b, c, d};
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    dom_is(&ev, uc, 0, 0, 4, 4, "bilinear up2 of 2x2");
    /* row 0: x = 0 reads column -1 (clamped to 0) and 0: a; x = 1 at 0.25: 3/4 a + 1/4 b;
     * x = 2 at 0.75: 1/4 a + 3/4 b; x = 3 at 1.25: 3/4 b + 1/4 b(clamped) = b */
    const double row0[4] = {a, 0.75 * a + 0.25 * b, 0.25 * a + 0.75 * b, b};
    for (int i = 0; i < 4; i++)
        TU_CHECK(CLOSE(V(&ev, uc, 0, 0, i, 0), row0[i]), "bilinear clamp (0,%d) = %g want %g", i, V(&ev, uc, 0, 0, i, 0),
                 row0[i]);
    /* (1, 1): rows 0 (3/4), 1 (1/4); columns 0 (3/4), 1 (1/4) */
    const double v11 = 0.75 * (0.75 * a + 0.25 * b) + 0.25 * (0.75 * c + 0.25 * d);
    TU_CHECK(CLOSE(V(&ev, uc, 0, 1, 1, 0), v11), "bilinear (1,1) = %g want %g", V(&ev, uc, 0, 1, 1, 0), v11);
    /* (2, 3): row 0.75 -> rows 0 (1/4), 1 (3/4); column 1.25 -> 1 (3/4), 2 (1/4, clamped to 1) */
    const double v23 = 0.25 * b + 0.75 * d;
    TU_CHECK(CLOSE(V(&ev, uc, 0, 2, 3, 0), v23), "bilinear (2,3) = %g want %g", V(&ev, uc, 0, 2, 3, 0), v23);
    /* zero boundary: (0, 0) reads 3 zeros and a with 3/4 * 3/4 */
    TU_CHECK(CLOSE(V(&ev, uz, 0, 0, 0, 0), 0.5625 * a), "bilinear zero (0,0) = %g", V(&ev, uz, 0, 0, 0, 0));
    TU_CHECK(CLOSE(V(&ev, uz, 0, 0, 1, 0), 0.75 * (0.75 * a + 0.25 * b)), "bilinear zero (0,1) = %g",
             V(&ev, uz, 0, 0, 1, 0));
    TU_CHECK(CLOSE(V(&ev, un, 0, 3, 2, 0), d) && CLOSE(V(&ev, un, 0, 1, 2, 0), b) && E(&ev, un, 0, 3, 2, 0) == 0,
             "nearest up2");
    gr_eval_free(&ev);
    ps_graph_destroy(g);

    /* A domain not at 0: up2 of a valid stencil that starts at (1, 1) starts at (2, 2). */
    g = new_graph();
    TU_OK(ps_graph_add_input(g, "in", 1, 4, 4, 1, PS_LAYOUT_NHWC, &in));
    const int dy[2] = {-1, 0}, dx[2] = {-1, 0};
    const ps_tensor s = stencil(g, in, PS_BOUNDARY_VALID, PS_REDUCE_MAX, 1, 1, 2, dy, dx, NULL, 0);
    TU_OK(ps_graph_add_resample(g, NULL, s, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_CLAMP, &uc));
    float x16[16];
    for (int i = 0; i < 16; i++) x16[i] = (float)i;
    ins[0] = x16;
    eval(g, ins, &ev);
    dom_is(&ev, s, 1, 1, 3, 3, "valid max (-1..0)^2");
    dom_is(&ev, uc, 2, 2, 6, 6, "up2 of a domain at (1, 1)");
    /* s(y, x) = in(y, x) (max of the upper-left pair is the pixel itself);
     * up(3, 3) samples (1.25, 1.25): 3/4 s(1,1) + ... */
    const double s11 = 5, s12 = 6, s21 = 9, s22 = 10;
    const double v = 0.75 * (0.75 * s11 + 0.25 * s12) + 0.25 * (0.75 * s21 + 0.25 * s22);
    TU_CHECK(CLOSE(V(&ev, uc, 0, 3, 3, 0), v), "up2 at (3,3) = %g want %g", V(&ev, uc, 0, 3, 3, 0), v);
    /* up(2, 2) samples (0.75, 0.75): row 0 is outside s, clamped to 1 */
    TU_CHECK(CLOSE(V(&ev, uc, 0, 2, 2, 0), s11), "up2 at (2,2) = %g want %g", V(&ev, uc, 0, 2, 2, 0), s11);
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* Pointwise: channel broadcast, domain intersection, select and comparisons. */
static void test_pointwise(void)
{
    ps_graph *g = new_graph();
    ps_tensor a, b, p, box, q;
    TU_OK(ps_graph_add_input(g, "a", 2, 3, 3, 3, PS_LAYOUT_NCHW, &a));
    TU_OK(ps_graph_add_input(g, "b", 2, 3, 3, 1, PS_LAYOUT_NHWC, &b));
    ps_expr *e = ps_expr_binary(PS_EXPR_MUL, ps_expr_input(0), ps_expr_input(1));
    const ps_tensor ab[2] = {a, b};
    TU_OK(ps_graph_add_pointwise(g, "mul", e, 2, ab, &p));
    ps_expr_free(e);
    int dy[4] = {0, 0, 1, 1}, dx[4] = {0, 1, 0, 1};
    box = stencil(g, b, PS_BOUNDARY_VALID, PS_REDUCE_MIN, 1, 1, 4, dy, dx, NULL, 0);
    /* select(a < box, a, box) over a's 3 channels and box's 1: min(a, box), on box's domain */
    e = ps_expr_select(ps_expr_binary(PS_EXPR_LT, ps_expr_input(0), ps_expr_input(1)), ps_expr_input(0), ps_expr_input(1));
    const ps_tensor abox[2] = {a, box};
    TU_OK(ps_graph_add_pointwise(g, "sel", e, 2, abox, &q));
    ps_expr_free(e);
    /* comparisons of exact values are exact; ==, != , >= on equal values */
    e = ps_expr_binary(PS_EXPR_ADD,
                       ps_expr_binary(PS_EXPR_ADD, ps_expr_binary(PS_EXPR_EQ, ps_expr_input(0), ps_expr_input(0)),
                                      ps_expr_binary(PS_EXPR_MUL, ps_expr_const(2),
                                                     ps_expr_binary(PS_EXPR_NE, ps_expr_input(0), ps_expr_const(4)))),
                       ps_expr_binary(PS_EXPR_MUL, ps_expr_const(4),
                                      ps_expr_binary(PS_EXPR_GE, ps_expr_input(0), ps_expr_const(4))));
    ps_tensor cmpt;
    TU_OK(ps_graph_add_pointwise(g, "cmp", e, 1, &b, &cmpt));
    ps_expr_free(e);
    /* a comparison of values with rounding error is ambiguous where they are close: e = 1 */
    const float w3[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    const ps_tensor sum = stencil(g, b, PS_BOUNDARY_ZERO, PS_REDUCE_SUM, 1, 1, 4, dy, dx, w3, 0);
    e = ps_expr_binary(PS_EXPR_LT, ps_expr_input(0), ps_expr_input(0));
    ps_tensor amb;
    TU_OK(ps_graph_add_pointwise(g, "amb", e, 1, &sum, &amb));
    ps_expr_free(e);

    float xa[54], xb[18];
    for (int i = 0; i < 54; i++) xa[i] = (float)((i * 7) % 11) - 5; /* NCHW */
    for (int i = 0; i < 18; i++) xb[i] = (float)((i * 5) % 9);       /* NHWC, 1 channel */
    const float *ins[2] = {xa, xb};
    gr_eval ev;
    eval(g, ins, &ev);
    dom_is(&ev, p, 0, 0, 3, 3, "broadcast mul");
    dom_is(&ev, box, 0, 0, 2, 2, "valid 2x2 min");
    dom_is(&ev, q, 0, 0, 2, 2, "intersection with the valid min");
    TU_CHECK(ev.t[p].c == 3 && ev.t[q].c == 3, "broadcast channels %lld %lld", (long long)ev.t[p].c, (long long)ev.t[q].c);
    int ok_mul = 1, ok_sel = 1, ok_cmp = 1;
    for (int n = 0; n < 2; n++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++) {
                const double bv = xb[(n * 3 + y) * 3 + x];
                const double want_cmp = 1 + 2 * (bv != 4) + 4 * (bv >= 4);
                ok_cmp &= CLOSE(V(&ev, cmpt, n, y, x, 0), want_cmp) && E(&ev, cmpt, n, y, x, 0) == 0;
                for (int c = 0; c < 3; c++) {
                    const double av = xa[((n * 3 + c) * 3 + y) * 3 + x];
                    ok_mul &= CLOSE(V(&ev, p, n, y, x, c), av * bv);
                    if (y < 2 && x < 2) {
                        double m = INFINITY;
                        for (int k = 0; k < 4; k++) m = fmin(m, xb[(n * 3 + y + dy[k]) * 3 + x + dx[k]]);
                        ok_sel &= CLOSE(V(&ev, q, n, y, x, c), fmin(av, m)) && E(&ev, q, n, y, x, c) == 0;
                    }
                }
            }
    TU_CHECK(ok_mul, "broadcast: a * b");
    TU_CHECK(ok_sel, "select(a < min, a, min) is min(a, min), exactly");
    TU_CHECK(ok_cmp, "comparisons of exact values");
    /* the weighted sum carries rounding (e > 0) where it is not 0: x < x is then "0 or 1" */
    int amb_seen = 0, amb_ok = 1;
    for (int n = 0; n < 2; n++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++) {
                const double pe = E(&ev, sum, n, y, x, 0);
                amb_ok &= V(&ev, amb, n, y, x, 0) == 0 && E(&ev, amb, n, y, x, 0) == (pe > 0 ? 1 : 0);
                amb_seen += pe > 0;
            }
    TU_CHECK(amb_seen > 0 && amb_ok, "ambiguous comparisons (%d)", amb_seen);
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* Error bounds of the elementary functions, per-channel weights, channel
 * mix with bias, max reduction with negative weights and zero boundary. */
static void test_bounds_and_weights(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, s, f, m, mx;
    TU_OK(ps_graph_add_input(g, "in", 1, 2, 3, 2, PS_LAYOUT_NHWC, &in));
    const int dy[2] = {0, 0}, dx[2] = {0, 1};
    const float wpc[4] = {1, -2, 0.5f, 4}; /* weights[t * C + c] */
    s = stencil(g, in, PS_BOUNDARY_ZERO, PS_REDUCE_SUM, 1, 1, 2, dy, dx, wpc, 1);
    ps_expr *e = ps_expr_unary(PS_EXPR_SQRT, ps_expr_binary(PS_EXPR_ADD, ps_expr_unary(PS_EXPR_ABS, ps_expr_input(0)),
                                                            ps_expr_const(1)));
    TU_OK(ps_graph_add_pointwise(g, "sqrt", e, 1, &s, &f));
    ps_expr_free(e);
    const float mw[6] = {1, 2, -1, 0.5f, 0, 3}, bias[3] = {0.5f, -1, 2};
    TU_OK(ps_graph_add_channel_mix(g, "mix", in, 3, mw, bias, &m));
    const float wneg[2] = {-1, 1};
    mx = stencil(g, in, PS_BOUNDARY_ZERO, PS_REDUCE_MAX, 1, 1, 2, dy, dx, wneg, 0);
    const float x[12] = {1, 2, 3, 4, 5, 6, /* row 0: (c0, c1) at x = 0, 1, 2 */ -1, -2, -3, -4, -5, -6};
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    /* s(0, 0, c=1) = -2 * in(0,0,1) + 4 * in(0,1,1) = -4 + 16 */
    TU_CHECK(CLOSE(V(&ev, s, 0, 0, 0, 1), 12), "per-channel (0,0,1) = %g", V(&ev, s, 0, 0, 0, 1));
    TU_CHECK(CLOSE(V(&ev, s, 0, 0, 2, 0), 5), "per-channel (0,2,0) zero boundary = %g", V(&ev, s, 0, 0, 2, 0));
    const double es = E(&ev, s, 0, 0, 0, 1);
    TU_CHECK(CLOSE(es, gr_sum_tolerance(2) * 20), "sum bound %g", es);
    /* sqrt(|12| + 1): the image of [13 - es', 13 + es'] (es' = es plus the add's rounding),
     * then 4 u relative */
    const double ea = es + (13 + es) / 16777216.0;
    const double want_f = sqrt(13.0), want_e0 = fmax(sqrt(13 + ea) - want_f, want_f - sqrt(13 - ea));
    const double want_fe = want_e0 + 4.0 / 16777216.0 * (want_f + want_e0);
    TU_CHECK(CLOSE(V(&ev, f, 0, 0, 0, 1), want_f) && CLOSE(E(&ev, f, 0, 0, 0, 1), want_fe), "sqrt: %g +- %g, want %g +- %g",
             V(&ev, f, 0, 0, 0, 1), E(&ev, f, 0, 0, 0, 1), want_f, want_fe);
    /* mix (1, 2, c): k = 2: 0 * in0 + 3 * in1 + 2 at pixel (1, 2) = (-5, -6) */
    TU_CHECK(CLOSE(V(&ev, m, 0, 1, 2, 2), -18 + 2), "mix = %g", V(&ev, m, 0, 1, 2, 2));
    TU_CHECK(CLOSE(V(&ev, m, 0, 0, 0, 1), -1 * 1 + 0.5 * 2 - 1), "mix k=1 = %g", V(&ev, m, 0, 0, 0, 1));
    /* max(-in(y, x), in(y, x + 1)); at x = 2 the second tap reads 0 outside */
    TU_CHECK(CLOSE(V(&ev, mx, 0, 1, 2, 0), 5), "max row 1 x 2 = %g", V(&ev, mx, 0, 1, 2, 0));
    TU_CHECK(CLOSE(V(&ev, mx, 0, 0, 2, 1), 0), "max row 0 x 2 c 1 = %g", V(&ev, mx, 0, 0, 2, 1));
    TU_CHECK(CLOSE(V(&ev, mx, 0, 0, 0, 0), 3), "max row 0 x 0 = %g", V(&ev, mx, 0, 0, 0, 0));
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

/* Outputs: the stored region in the user's layout, and the comparison. */
static void test_outputs_and_compare(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, p;
    TU_OK(ps_graph_add_input(g, "in", 2, 4, 5, 3, PS_LAYOUT_NHWC, &in));
    ps_expr *e = ps_expr_binary(PS_EXPR_ADD, ps_expr_input(0), ps_expr_const(0.5f));
    TU_OK(ps_graph_add_pointwise(g, "p", e, 1, &in, &p));
    ps_expr_free(e);
    TU_OK(ps_graph_mark_output(g, p, PS_LAYOUT_NCHW));
    TU_OK(ps_graph_set_output_region(g, p, 1, 2, 2, 3));
    TU_CHECK(gr_output_elems(g, 0) == 2 * 2 * 3 * 3, "output elements %lld", (long long)gr_output_elems(g, 0));
    TU_CHECK(gr_input_elems(g, 0) == 2 * 4 * 5 * 3, "input elements %lld", (long long)gr_input_elems(g, 0));
    float x[120];
    for (int i = 0; i < 120; i++) x[i] = (float)i;
    const float *ins[1] = {x};
    gr_eval ev;
    eval(g, ins, &ev);
    float out[36];
    gr_store_output(g, &ev, 0, out);
    int ok = 1;
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 2; y++)
                for (int xx = 0; xx < 3; xx++)
                    ok &= out[((n * 3 + c) * 2 + y) * 3 + xx] == x[((n * 4 + y + 1) * 5 + xx + 2) * 3 + c] + 0.5f;
    TU_CHECK(ok, "stored region (NCHW, corner (1, 2))");
    gr_cmp cmp;
    TU_CHECK(gr_compare(g, &ev, 0, out, &cmp) == 0 && cmp.max_norm_err <= 1, "exact output: %lld bad, norm %g",
             (long long)cmp.n_bad, cmp.max_norm_err);
    /* in + 0.5 over small integers is exact in f32: so is the bound */
    out[7] = nextafterf(out[7], INFINITY);
    TU_CHECK(gr_compare(g, &ev, 0, out, &cmp) == 1, "one ulp off an exact result: %lld bad", (long long)cmp.n_bad);
    out[7] += 0.01f;
    TU_CHECK(gr_compare(g, &ev, 0, out, &cmp) == 1 && cmp.bad_img == 0 && cmp.bad_ch == 1 && cmp.bad_y == 1 &&
                 cmp.bad_x == 3, /* NCHW offset 7 of 2 x 3: c 1, y 0, x 1, plus the corner */
             "0.01 off: %lld bad at (%lld, %lld, %lld, %lld)", (long long)cmp.n_bad, (long long)cmp.bad_img,
             (long long)cmp.bad_ch, (long long)cmp.bad_y, (long long)cmp.bad_x);
    gr_store_output(g, &ev, 0, out);
    out[35] = tu_sentinel();
    TU_CHECK(gr_compare(g, &ev, 0, out, &cmp) == 1, "an unwritten (NaN) element must fail");
    gr_eval_free(&ev);
    ps_graph_destroy(g);
}

int main(void)
{
    test_blur3();
    test_valid_box();
    test_stride2_odd();
    test_bilinear();
    test_pointwise();
    test_bounds_and_weights();
    test_outputs_and_compare();
    return tu_finish("test_graph_ref");
}
