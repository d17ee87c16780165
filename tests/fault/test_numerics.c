/* Numerical accuracy against the double-precision reference (docs/numerics.md).
 *
 * Every output is checked against the bound the whole suite uses
 * (tests/reference.c):
 *     |got - ref| <= (8u*sqrt(L) + 2u) * sum|terms| + 1e-30,   u = 2^-24,
 * with L the reduction length (conv C*R*S (+1 with bias), GEMM K+2). The
 * test concentrates on long reductions (C*R*S >= 4608, GEMM K up to 8192),
 * where the sqrt(L) bound is tightest relative to the worst case, under every
 * ranker (different reduction blockings: batch = all blocks, 1/2, 1/4), with
 * mixed-sign data (cancellation: large relative error of the result, small
 * normalized error) and with all-positive data (no cancellation). It prints
 * the maximum normalized error |got-ref| / bound (must be <= 1) and the
 * maximum relative error |got-ref| / sum|terms| per shape and overall.
 * PS_TEST_SEED / PS_TEST_COUNT (random shapes, default 6) as elsewhere. */
#include <float.h>

#include "reference.h"
#include "test_util.h"

typedef struct summary {
    double max_norm, max_rel;
    int64_t max_L;
    int shapes;
} summary;

static summary total;

static void report(const char *what, const char *shape, const char *data, ps_ranker rk, int64_t L, const ref_cmp *c)
{
    printf("  %-5s %-44s %-8s ranker %d  L=%-6lld max normalized %.3f  max rel %.2e (u*sqrt(L) = %.2e)\n", what,
           shape, data, (int)rk, (long long)L, c->max_norm_err, c->max_rel_err,
           (double)FLT_EPSILON / 2 * sqrt((double)L));
    if (c->max_norm_err > total.max_norm) total.max_norm = c->max_norm_err;
    if (c->max_rel_err > total.max_rel) total.max_rel = c->max_rel_err;
    if (L > total.max_L) total.max_L = L;
    total.shapes++;
}

static void fill(tu_rng *r, float *p, int64_t n, int positive)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = tu_uniform(r);
        p[i] = positive ? fabsf(v) : v;
    }
}

static void conv_case(ps_context *ctx, tu_rng *r, int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t RS,
                      int64_t stride, int64_t pad, unsigned post, ps_ranker rk, int positive)
{
    ps_desc d;
    ps_desc_init_conv(&d);
    ps_conv_desc *c = &d.u.conv;
    c->N = N; c->C = C; c->K = K; c->H = H; c->W = W; c->R = c->S = RS;
    c->stride_h = c->stride_w = stride;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = pad;
    c->post_ops = post;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = rk;
    o.flags = PS_PLAN_NO_CACHE;
    ps_plan *p = NULL;
    ps_status st = ps_plan_create(ctx, &d, &o, &p);
    if (st == PS_ERR_UNSUPPORTED) return;
    TU_OK(st);
    if (st) return;
    int64_t OH, OW;
    ps_conv_output_size(&d, &OH, &OW);
    const int64_t ns = N * C * H * W, nw = K * C * RS * RS, nd = N * K * OH * OW;
    size_t pb = 0;
    ps_plan_packed_weights_size(p, &pb);
    float *src = tu_alloc_f(ns), *w = tu_alloc_f(nw), *bias = tu_alloc_f(K), *dst = tu_alloc_f(nd);
    void *packed = tu_alloc(pb);
    double *ref = tu_alloc_d(nd), *mag = tu_alloc_d(nd);
    fill(r, src, ns, positive);
    fill(r, w, nw, positive);
    fill(r, bias, K, positive);
    TU_OK(ps_plan_pack_weights(p, w, packed));
    TU_OK(ps_conv_execute(p, src, packed, bias, dst));
    int64_t L = 0;
    ref_conv_fwd(c, src, w, bias, ref, mag, &L);
    ref_cmp cmp;
    ref_compare(dst, ref, mag, nd, L, &cmp);
    char shape[128];
    snprintf(shape, sizeof shape, "N%lld C%lld K%lld %lldx%lld %lldx%lld s%lld p%lld%s", (long long)N, (long long)C,
             (long long)K, (long long)H, (long long)W, (long long)RS, (long long)RS, (long long)stride, (long long)pad,
             post ? " +bias" : "");
    report("conv", shape, positive ? "positive" : "mixed", rk, L, &cmp);
    TU_CHECK(cmp.n_bad == 0, "conv %s: %lld outputs outside the bound (first %lld: got %.9g want %.9g)", shape,
             (long long)cmp.n_bad, (long long)cmp.first_bad, cmp.first_got, cmp.first_ref);
    free(src); free(w); free(bias); free(dst); free(packed); free(ref); free(mag);
    ps_plan_destroy(p);
}

static void gemm_case(ps_context *ctx, tu_rng *r, int64_t M, int64_t N, int64_t K, int order, int ta, int tb,
                      float alpha, float beta, ps_ranker rk, int positive)
{
    ps_desc d;
    ps_desc_init_gemm(&d);
    ps_gemm_desc *g = &d.u.gemm;
    g->M = M; g->N = N; g->K = K;
    g->order = (ps_matrix_order)order;
    g->trans_a = ta; g->trans_b = tb;
    g->alpha = alpha; g->beta = beta;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = rk;
    o.flags = PS_PLAN_NO_CACHE;
    ps_plan *p = NULL;
    ps_status st = ps_plan_create(ctx, &d, &o, &p);
    if (st == PS_ERR_UNSUPPORTED) return;
    TU_OK(st);
    if (st) return;
    const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a')),
                  nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b')),
                  nc = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
    float *A = tu_alloc_f(na), *B = tu_alloc_f(nb), *C = tu_alloc_f(nc), *C0 = tu_alloc_f(nc), *got = tu_alloc_f(M * N);
    double *ref = tu_alloc_d(M * N), *mag = tu_alloc_d(M * N);
    fill(r, A, na, positive);
    fill(r, B, nb, positive);
    fill(r, C, nc, positive);
    memcpy(C0, C, (size_t)nc * sizeof(float));
    TU_OK(ps_gemm_execute(p, A, B, C));
    int64_t L = 0;
    ref_gemm(g, A, B, C0, ref, mag, &L);
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < M; i++) got[i + j * M] = C[ref_gemm_index(g, 'c', i, j)];
    ref_cmp cmp;
    ref_compare(got, ref, mag, M * N, L, &cmp);
    char shape[128];
    snprintf(shape, sizeof shape, "M%lld N%lld K%lld %s%s%s a%g b%g", (long long)M, (long long)N, (long long)K,
             order ? "row" : "col", ta ? " tA" : "", tb ? " tB" : "", (double)alpha, (double)beta);
    report("gemm", shape, positive ? "positive" : "mixed", rk, L, &cmp);
    TU_CHECK(cmp.n_bad == 0, "gemm %s: %lld outputs outside the bound (first %lld: got %.9g want %.9g)", shape,
             (long long)cmp.n_bad, (long long)cmp.first_bad, cmp.first_got, cmp.first_ref);
    free(A); free(B); free(C); free(C0); free(got); free(ref); free(mag);
    ps_plan_destroy(p);
}

int main(void)
{
    tu_rng r = {tu_seed("test_numerics", 20240611)};
    const char *ce = getenv("PS_TEST_COUNT");
    const int count = ce && *ce ? atoi(ce) : 6;
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    if (!ctx) return tu_finish("test_numerics");
    ps_ranker rankers[4];
    const int nr = tu_available_rankers(ctx, rankers);
    static const ps_ranker all[] = {PS_RANKER_NONE, PS_RANKER_COST, PS_RANKER_VOLUME};

    printf("fixed long reductions:\n");
    /* Mixed-sign data under every ranker (different reduction blockings);
     * all-positive data with the default schedule. */
    for (int positive = 0; positive < 2; positive++)
        for (size_t i = 0; i < (positive ? 1 : sizeof all / sizeof all[0]); i++) {
            const ps_ranker rk = all[i];
            conv_case(ctx, &r, 1, 512, 64, 6, 6, 3, 1, 1, PS_POST_BIAS, rk, positive);  /* L = 4608 + 1 */
            conv_case(ctx, &r, 1, 2048, 64, 7, 7, 1, 1, 0, 0, rk, positive);            /* L = 2048 */
            conv_case(ctx, &r, 1, 1024, 32, 5, 5, 3, 1, 0, 0, rk, positive);            /* L = 9216 */
            conv_case(ctx, &r, 1, 512, 16, 5, 5, 7, 1, 3, 0, rk, positive);             /* L = 25088 */
            gemm_case(ctx, &r, 64, 48, 8192, 0, 0, 0, 1.0f, 0.0f, rk, positive);        /* L = 8194 */
            gemm_case(ctx, &r, 33, 20, 8192, 1, 1, 1, 0.5f, 2.0f, rk, positive);
            gemm_case(ctx, &r, 16, 16, 32768, 0, 0, 1, 1.0f, 1.0f, rk, positive);
        }

    printf("random shapes (%d):\n", count);
    static const int64_t Cs[] = {3, 64, 96, 256, 384, 512, 1000, 2048};
    for (int t = 0; t < count; t++) {
        const ps_ranker rk = rankers[tu_range(&r, 0, nr - 1)];
        const int positive = (int)tu_range(&r, 0, 1);
        const int64_t RS = tu_range(&r, 1, 3) * 2 - 1, C = tu_pick(&r, Cs, 8), H = tu_range(&r, RS, RS + 6);
        conv_case(ctx, &r, tu_range(&r, 1, 2), C, tu_range(&r, 1, 80), H, tu_range(&r, RS, RS + 9), RS,
                  tu_range(&r, 1, 2), tu_range(&r, 0, RS / 2), tu_range(&r, 0, 1) ? PS_POST_BIAS : 0, rk, positive);
        gemm_case(ctx, &r, tu_range(&r, 1, 90), tu_range(&r, 1, 70), tu_range(&r, 1000, 12000), (int)tu_range(&r, 0, 1),
                  (int)tu_range(&r, 0, 1), (int)tu_range(&r, 0, 1), tu_range(&r, 0, 1) ? 1.0f : -0.75f,
                  tu_range(&r, 0, 1) ? 0.0f : 1.5f, rk, positive);
    }
    printf("test_numerics: %d shapes, longest reduction L = %lld: max normalized error %.3f (bound 1), "
           "max relative error %.2e\n", total.shapes, (long long)total.max_L, total.max_norm, total.max_rel);
    ps_context_destroy(ctx);
    return tu_finish("test_numerics");
}
