/* Self-test of bench/onednn_ref against naive loops (no polysci needed):
 * conv in both modes, all user layouts, bias+relu, dilation, asymmetric pads,
 * and sgemm with transposes. Exit 0 on success. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "onednn_ref.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* user-layout index helpers */
static size_t act_idx(onednn_act_layout l, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C,
                      int64_t H, int64_t W)
{
    return l == ONEDNN_ACT_NHWC ? (size_t)(((n * H + h) * W + w) * C + c)
                                : (size_t)(((n * C + c) * H + h) * W + w);
}

static size_t w_idx(onednn_weight_layout l, int64_t k, int64_t c, int64_t r, int64_t s, int64_t K,
                    int64_t C, int64_t R, int64_t S)
{
    switch (l) {
    case ONEDNN_W_KRSC: return (size_t)(((k * R + r) * S + s) * C + c);
    case ONEDNN_W_RSCK: return (size_t)(((r * S + s) * C + c) * K + k);
    default: return (size_t)(((k * C + c) * R + r) * S + s);
    }
}

static void naive_conv(const onednn_conv_params *p, const float *src, const float *wei,
                       const float *bias, float *dst)
{
    int64_t OH, OW;
    onednn_conv_out_size(p, &OH, &OW);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t k = 0; k < p->K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = p->with_bias ? bias[k] : 0.0;
                    for (int64_t c = 0; c < p->C; c++)
                        for (int64_t r = 0; r < p->R; r++)
                            for (int64_t s = 0; s < p->S; s++) {
                                int64_t ih = oh * p->stride_h - p->pad_t + r * p->dil_h;
                                int64_t iw = ow * p->stride_w - p->pad_l + s * p->dil_w;
                                if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W)
                                    continue;
                                acc += (double)src[act_idx(p->act_layout, n, c, ih, iw, p->C,
                                                           p->H, p->W)] *
                                       wei[w_idx(p->w_layout, k, c, r, s, p->K, p->C, p->R, p->S)];
                            }
                    if (p->with_relu && acc < 0)
                        acc = 0;
                    dst[act_idx(p->act_layout, n, k, oh, ow, p->K, OH, OW)] = (float)acc;
                }
}

static double relerr(const float *a, const float *b, size_t n)
{
    double me = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= me))
            me = isnan(e) ? INFINITY : e;
        if (fabs((double)b[i]) > mr)
            mr = fabs((double)b[i]);
    }
    return me / (mr > 0 ? mr : 1e-30);
}

static int test_conv(const onednn_conv_params *p, const char *what)
{
    int64_t OH, OW;
    if (onednn_conv_out_size(p, &OH, &OW))
        return 1;
    size_t ns = (size_t)(p->N * p->C * p->H * p->W), nw = (size_t)(p->K * p->C * p->R * p->S);
    size_t nd = (size_t)(p->N * p->K * OH * OW);
    float *src = malloc(ns * 4), *wei = malloc(nw * 4), *bias = malloc((size_t)p->K * 4);
    float *ref = malloc(nd * 4), *out = malloc(nd * 4);
    for (size_t i = 0; i < ns; i++)
        src[i] = frand();
    for (size_t i = 0; i < nw; i++)
        wei[i] = frand();
    for (int64_t i = 0; i < p->K; i++)
        bias[i] = frand();
    naive_conv(p, src, wei, bias, ref);
    int fails = 0;
    /* run_once */
    for (size_t i = 0; i < nd; i++)
        out[i] = NAN;
    if (onednn_conv_run_once(p, src, wei, bias, out)) {
        printf("FAIL %s run_once: %s\n", what, onednn_last_error());
        fails++;
    } else {
        double e = relerr(out, ref, nd);
        printf("%s %-40s run_once      err %.2e\n", e < 1e-5 ? "ok  " : "FAIL", what, e);
        fails += !(e < 1e-5);
    }
    /* both modes through the step-by-step API */
    for (int m = 0; m < 2; m++) {
        onednn_conv *c = NULL;
        if (onednn_conv_create(p, (onednn_conv_mode)m, &c) || onednn_conv_set_src(c, src) ||
            onednn_conv_set_weights(c, wei) || (p->with_bias && onednn_conv_set_bias(c, bias)) ||
            onednn_conv_execute(c) || onednn_conv_get_dst(c, out)) {
            printf("FAIL %s mode %d: %s\n", what, m, onednn_last_error());
            fails++;
        } else {
            double e = relerr(out, ref, nd);
            printf("%s %-40s %-5s %-6s err %.2e  %s  %s  %.2f ms\n", e < 1e-5 ? "ok  " : "FAIL",
                   what, m ? "nhwc" : "any", "", e, onednn_conv_impl(c), onednn_conv_layouts(c),
                   onednn_conv_create_ms(c));
            fails += !(e < 1e-5);
        }
        onednn_conv_destroy(c);
    }
    free(src);
    free(wei);
    free(bias);
    free(ref);
    free(out);
    return fails;
}

static int test_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    float *A = malloc((size_t)(M * K) * 4), *B = malloc((size_t)(K * N) * 4);
    float *C = malloc((size_t)(M * N) * 4), *R = malloc((size_t)(M * N) * 4);
    for (int64_t i = 0; i < M * K; i++)
        A[i] = frand();
    for (int64_t i = 0; i < K * N; i++)
        B[i] = frand();
    for (int64_t i = 0; i < M * N; i++)
        C[i] = R[i] = frand();
    float alpha = 0.5f, beta = 2.0f;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (double)(ta ? A[k * M + m] : A[m * K + k]) * (tb ? B[n * K + k] : B[k * N + n]);
            R[m * N + n] = (float)(alpha * acc + beta * R[m * N + n]);
        }
    int fail = onednn_sgemm(ta, tb, M, N, K, alpha, A, 0, B, 0, beta, C, 0);
    double e = fail ? INFINITY : relerr(C, R, (size_t)(M * N));
    printf("%s sgemm ta=%d tb=%d %lldx%lldx%lld err %.2e\n", e < 1e-5 ? "ok  " : "FAIL", ta, tb,
           (long long)M, (long long)N, (long long)K, e);
    free(A);
    free(B);
    free(C);
    free(R);
    return !(e < 1e-5);
}

int main(void)
{
    onednn_set_num_threads(2);
    printf("oneDNN %s, %d threads\n", onednn_version_string(), onednn_get_num_threads());
    int fails = 0;
    onednn_conv_params p;

    onednn_conv_params_init(&p);
    p.N = 2; p.C = 32; p.K = 48; p.H = 9; p.W = 11; p.R = 3; p.S = 3;
    p.pad_t = p.pad_b = p.pad_l = p.pad_r = 1;
    fails += test_conv(&p, "3x3 pad1 NHWC/KCRS");

    p.stride_h = 2; p.stride_w = 2; p.pad_b = 0; p.pad_r = 2; p.with_bias = 1; p.with_relu = 1;
    p.act_layout = ONEDNN_ACT_NCHW; p.w_layout = ONEDNN_W_RSCK;
    fails += test_conv(&p, "3x3 s2 asym-pad bias relu NCHW/RSCK");

    onednn_conv_params_init(&p);
    p.N = 1; p.C = 16; p.K = 16; p.H = 12; p.W = 10; p.R = 3; p.S = 3;
    p.dil_h = 2; p.dil_w = 3; p.pad_t = 2; p.pad_b = 1; p.pad_l = 3; p.pad_r = 0;
    p.w_layout = ONEDNN_W_KRSC;
    fails += test_conv(&p, "3x3 dilated NHWC/KRSC");

    onednn_conv_params_init(&p);
    p.N = 2; p.C = 3; p.K = 64; p.H = 23; p.W = 23; p.R = 7; p.S = 7; p.stride_h = p.stride_w = 2;
    p.pad_t = p.pad_b = p.pad_l = p.pad_r = 3;
    fails += test_conv(&p, "7x7 s2 C=3 (resnet_00-like)");

    onednn_conv_params_init(&p);
    p.N = 2; p.C = 64; p.K = 256; p.H = 14; p.W = 14; p.R = 1; p.S = 1;
    fails += test_conv(&p, "1x1 C64 K256");

    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            fails += test_gemm(ta, tb, 37, 29, 53);
    fails += test_gemm(0, 0, 128, 96, 256);

    printf("%s (%d failure(s))\n", fails ? "FAILED" : "PASSED", fails);
    return fails ? 1 : 0;
}
