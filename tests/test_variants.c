/* Random variants from the planner's variant space (via ps_cost_query, both
 * rankers) run exactly as given and match the double-precision reference:
 * every schedule the variant generator emits must be valid for the executor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polysci/polysci.h"
#include "reference.h"

static int failures, checked;

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void run_variant(ps_context *ctx, const ps_desc *d, const char *text, unsigned seed)
{
    ps_schedule *s = NULL;
    ps_plan *p = NULL;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.num_threads = 2;
    if (ps_schedule_parse(d->kind, text, &s) || (o.schedule = s, ps_plan_create(ctx, d, &o, &p))) {
        printf("FAIL variant '%s': %s\n", text, ps_last_error_message());
        failures++;
        ps_schedule_destroy(s);
        return;
    }
    checked++;
    ref_cmp cmp;
    int64_t L = 0;
    if (d->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &d->u.conv;
        int64_t OH, OW;
        ref_conv_out_size(c, &OH, &OW);
        size_t ns = (size_t)(c->N * c->C * c->H * c->W), nw = (size_t)(c->K * c->C * c->R * c->S);
        size_t nd = (size_t)(c->N * c->K * OH * OW), pb;
        float *src = malloc(ns * 4), *w = malloc(nw * 4), *bias = malloc((size_t)c->K * 4), *dst = malloc(nd * 4);
        double *ref = malloc(nd * 8), *mag = malloc(nd * 8);
        for (size_t i = 0; i < ns; i++) src[i] = frand(&seed);
        for (size_t i = 0; i < nw; i++) w[i] = frand(&seed);
        for (int64_t i = 0; i < c->K; i++) bias[i] = frand(&seed);
        ps_plan_packed_weights_size(p, &pb);
        void *packed = aligned_alloc(64, (pb + 63) / 64 * 64);
        ps_plan_pack_weights(p, w, packed);
        if (ps_conv_execute(p, src, packed, bias, dst)) {
            printf("FAIL execute '%s': %s\n", text, ps_last_error_message());
            failures++;
        } else {
            ref_conv_fwd(c, src, w, bias, ref, mag, &L);
            ref_compare(dst, ref, mag, (int64_t)nd, L, &cmp);
            if (cmp.n_bad) {
                printf("FAIL conv variant '%s': %lld bad elements (max normalized error %.3g)\n", text,
                       (long long)cmp.n_bad, cmp.max_norm_err);
                failures++;
            }
        }
        free(src); free(w); free(bias); free(dst); free(ref); free(mag); free(packed);
    } else {
        const ps_gemm_desc *g = &d->u.gemm;
        size_t na = (size_t)ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a'));
        size_t nb = (size_t)ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b'));
        size_t nc = (size_t)ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
        float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *c0 = malloc(nc * 4);
        size_t n = (size_t)(g->M * g->N);
        double *ref = malloc(n * 8), *mag = malloc(n * 8);
        float *got = malloc(n * 4);
        for (size_t i = 0; i < na; i++) a[i] = frand(&seed);
        for (size_t i = 0; i < nb; i++) b[i] = frand(&seed);
        for (size_t i = 0; i < nc; i++) c[i] = c0[i] = frand(&seed);
        if (ps_gemm_execute(p, a, b, c)) {
            printf("FAIL execute '%s': %s\n", text, ps_last_error_message());
            failures++;
        } else {
            ref_gemm(g, a, b, c0, ref, mag, &L);
            for (int64_t j = 0; j < g->N; j++)
                for (int64_t i = 0; i < g->M; i++) got[i + j * g->M] = c[ref_gemm_index(g, 'c', i, j)];
            ref_compare(got, ref, mag, (int64_t)n, L, &cmp);
            if (cmp.n_bad) {
                printf("FAIL gemm variant '%s': %lld bad elements\n", text, (long long)cmp.n_bad);
                failures++;
            }
        }
        free(a); free(b); free(c); free(c0); free(ref); free(mag); free(got);
    }
    ps_plan_destroy(p);
    ps_schedule_destroy(s);
}

static void sample(ps_context *ctx, const ps_desc *d, unsigned seed, int per_ranker)
{
    const ps_ranker rankers[2] = {PS_RANKER_COST, PS_RANKER_VOLUME};
    for (int r = 0; r < 2; r++) {
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.num_threads = 2;
        o.ranker = rankers[r];
        ps_cost_report *rep;
        if (ps_cost_query(ctx, d, &o, &rep)) {
            printf("FAIL cost query: %s\n", ps_last_error_message());
            failures++;
            return;
        }
        int n = ps_cost_report_size(rep);
        for (int i = 0; i < per_ranker && i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            ps_variant_cost v;
            ps_cost_report_get(rep, i == 0 ? 0 : (int)((seed >> 8) % (unsigned)n), &v);
            run_variant(ctx, d, v.schedule, seed);
        }
        ps_cost_report_destroy(rep);
    }
}

/* The space is large and free of literal duplicates: ResNet-50 shapes whose
 * tile space has few non-trivial loops (a flattened 1x1 with C and K in one
 * block each; a 7x7 1x1) still get at least 100 distinct schedules. */
static void check_space(ps_context *ctx)
{
    const struct { int N, C, K, H, W, R, S, st, pad; } shapes[] = {
        {2, 64, 64, 56, 56, 1, 1, 1, 0}, {2, 2048, 512, 7, 7, 1, 1, 1, 0}, {2, 3, 64, 224, 224, 7, 7, 2, 3},
        {2, 128, 128, 28, 28, 3, 3, 1, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        ps_desc d;
        ps_desc_init_conv(&d);
        ps_conv_desc *c = &d.u.conv;
        c->N = shapes[i].N; c->C = shapes[i].C; c->K = shapes[i].K; c->H = shapes[i].H; c->W = shapes[i].W;
        c->R = shapes[i].R; c->S = shapes[i].S; c->stride_h = c->stride_w = shapes[i].st;
        c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = shapes[i].pad;
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.num_threads = 2;
        o.ranker = PS_RANKER_VOLUME;
        ps_cost_report *rep;
        if (ps_cost_query(ctx, &d, &o, &rep)) {
            printf("FAIL cost query: %s\n", ps_last_error_message());
            failures++;
            continue;
        }
        int n = ps_cost_report_size(rep), dups = 0;
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                ps_variant_cost va, vb;
                ps_cost_report_get(rep, a, &va);
                ps_cost_report_get(rep, b, &vb);
                dups += !strcmp(va.schedule, vb.schedule);
            }
        if (n < 100 || dups) {
            printf("FAIL variant space of shape %zu: %d variants (want >= 100), %d duplicates\n", i, n, dups);
            failures++;
        }
        ps_cost_report_destroy(rep);
    }
}

int main(void)
{
    const char *env = getenv("PS_TEST_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : 7u;
    printf("test_variants: seed %u (override with PS_TEST_SEED)\n", seed);
    ps_context *ctx;
    if (ps_context_create(NULL, &ctx)) return 1;
    /* name, N, C, K, H, W, R, S, stride, pad t/b/l/r, dilation, layout */
    const struct { int N, C, K, H, W, R, S, st, pt, pb, pl, pr, dil, nchw; unsigned post; } convs[] = {
        {2, 64, 128, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 0, PS_POST_BIAS | PS_POST_RELU}, /* many C/K blocks, padding */
        {1, 200, 72, 9, 11, 3, 3, 2, 1, 0, 2, 1, 1, 1, 0},    /* remainders, asymmetric pad, stride 2, NCHW */
        {2, 256, 96, 7, 7, 1, 1, 1, 0, 0, 0, 0, 1, 0, PS_POST_BIAS}, /* flattened 1x1, chunked reduction */
        {1, 3, 40, 20, 20, 7, 7, 2, 3, 3, 3, 3, 1, 0, 0},     /* merged taps (C=3) */
        {1, 130, 64, 12, 12, 3, 3, 1, 2, 2, 2, 2, 2, 0, 0},   /* dilation 2 */
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        ps_desc d;
        ps_desc_init_conv(&d);
        ps_conv_desc *c = &d.u.conv;
        c->N = convs[i].N; c->C = convs[i].C; c->K = convs[i].K; c->H = convs[i].H; c->W = convs[i].W;
        c->R = convs[i].R; c->S = convs[i].S; c->stride_h = c->stride_w = convs[i].st;
        c->pad_top = convs[i].pt; c->pad_bottom = convs[i].pb; c->pad_left = convs[i].pl; c->pad_right = convs[i].pr;
        c->dilation_h = c->dilation_w = convs[i].dil;
        c->layout = convs[i].nchw ? PS_LAYOUT_NCHW : PS_LAYOUT_NHWC;
        c->post_ops = convs[i].post;
        sample(ctx, &d, seed + (unsigned)i, 8);
    }
    const struct { int M, N, K, row, ta, tb; float alpha, beta; } gemms[] = {
        {200, 300, 1000, 0, 0, 0, 1.0f, 0.0f}, {130, 70, 257, 1, 1, 0, 0.5f, 1.0f}, {64, 900, 64, 0, 0, 1, 1.0f, 2.0f}};
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++) {
        ps_desc d;
        ps_desc_init_gemm(&d);
        ps_gemm_desc *g = &d.u.gemm;
        g->M = gemms[i].M; g->N = gemms[i].N; g->K = gemms[i].K;
        g->order = gemms[i].row ? PS_ROW_MAJOR : PS_COL_MAJOR;
        g->trans_a = gemms[i].ta; g->trans_b = gemms[i].tb; g->alpha = gemms[i].alpha; g->beta = gemms[i].beta;
        sample(ctx, &d, seed + 100u + (unsigned)i, 8);
    }
    check_space(ctx);
    ps_context_destroy(ctx);
    printf("test_variants: %d variants run, %d failures\n", checked, failures);
    return failures != 0 || checked == 0;
}
