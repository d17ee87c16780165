/* A program outside the polysci tree, built against an installed polysci
 * (see CMakeLists.txt and check.sh next to this file): one small convolution
 * and one small GEMM, every output checked against a direct computation.
 * Exit status 0 when all is right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <polysci/polysci.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        ps_status st_ = (call);                                                                       \
        if (st_ != PS_SUCCESS) {                                                                      \
            fprintf(stderr, "consumer: %s: %s: %s\n", #call, ps_status_str(st_), ps_last_error_message()); \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static int close_enough(double got, double want) { return fabs(got - want) <= 1e-4 * (1.0 + fabs(want)); }

/* NHWC conv, KCRS weights, 3x3, pad 1, bias + ReLU fused. */
static int conv_check(ps_context *ctx)
{
    enum { N = 2, H = 9, W = 7, C = 16, K = 24, R = 3, S = 3, PAD = 1, OH = H, OW = W };
    static float src[N * H * W * C], wt[K * C * R * S], bias[K], dst[N * OH * OW * K];
    unsigned seed = 1;
    for (int i = 0; i < N * H * W * C; i++) src[i] = frand(&seed);
    for (int i = 0; i < K * C * R * S; i++) wt[i] = frand(&seed) * 0.2f;
    for (int i = 0; i < K; i++) bias[i] = frand(&seed);

    ps_desc desc;
    ps_desc_init_conv(&desc);
    ps_conv_desc *d = &desc.u.conv;
    d->N = N; d->H = H; d->W = W; d->C = C; d->K = K; d->R = R; d->S = S;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = PAD;
    d->post_ops = PS_POST_BIAS | PS_POST_RELU;

    ps_plan *plan = NULL;
    CHECK(ps_plan_create(ctx, &desc, NULL, &plan));
    size_t bytes = 0;
    CHECK(ps_plan_packed_weights_size(plan, &bytes));
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!packed) return 1;
    CHECK(ps_plan_pack_weights(plan, wt, packed));
    CHECK(ps_conv_execute(plan, src, packed, bias, dst));

    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                for (int k = 0; k < K; k++) {
                    double acc = bias[k];
                    for (int c = 0; c < C; c++)
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                int ih = oh - PAD + r, iw = ow - PAD + s;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)src[((n * H + ih) * W + iw) * C + c] * wt[((k * C + c) * R + r) * S + s];
                            }
                    double want = acc > 0.0 ? acc : 0.0;
                    float got = dst[((n * OH + oh) * OW + ow) * K + k];
                    if (!close_enough(got, want) && bad++ < 5)
                        fprintf(stderr, "consumer: conv dst[%d][%d][%d][%d] = %.7g, expected %.7g\n", n, oh, ow, k,
                                got, want);
                }
    printf("consumer: conv %dx%dx%dx%d (NHWC) * %dx%dx%dx%d, pad 1, bias+relu: %s\n", N, H, W, C, K, C, R, S,
           bad ? "MISMATCH" : "OK");
    free(packed);
    ps_plan_destroy(plan);
    return bad != 0;
}

/* Column-major C = A * B + 0.5 * C. */
static int gemm_check(ps_context *ctx)
{
    enum { M = 37, N = 29, K = 53 };
    static float a[M * K], b[K * N], c[M * N], c0[M * N];
    unsigned seed = 2;
    for (int i = 0; i < M * K; i++) a[i] = frand(&seed);
    for (int i = 0; i < K * N; i++) b[i] = frand(&seed);
    for (int i = 0; i < M * N; i++) c[i] = c0[i] = frand(&seed);

    ps_desc desc;
    ps_desc_init_gemm(&desc);
    desc.u.gemm.M = M; desc.u.gemm.N = N; desc.u.gemm.K = K;
    desc.u.gemm.beta = 0.5f;
    ps_plan *plan = NULL;
    CHECK(ps_plan_create(ctx, &desc, NULL, &plan));
    CHECK(ps_gemm_execute(plan, a, b, c));

    int bad = 0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            double acc = 0.5 * c0[j * M + i];
            for (int p = 0; p < K; p++) acc += (double)a[p * M + i] * b[j * K + p];
            if (!close_enough(c[j * M + i], acc) && bad++ < 5)
                fprintf(stderr, "consumer: gemm C(%d,%d) = %.7g, expected %.7g\n", i, j, c[j * M + i], acc);
        }
    printf("consumer: gemm C(%dx%d) = A(%dx%d) * B(%dx%d) + 0.5 C, column-major: %s\n", M, N, M, K, K, N,
           bad ? "MISMATCH" : "OK");
    ps_plan_destroy(plan);
    return bad != 0;
}

int main(void)
{
    printf("consumer: polysci %s (headers %d.%d.%d)\n", ps_version(), PS_VERSION_MAJOR, PS_VERSION_MINOR,
           PS_VERSION_PATCH);
    if (ps_api_version() != PS_API_VERSION) {
        fprintf(stderr, "consumer: library API version %d, headers %d\n", ps_api_version(), PS_API_VERSION);
        return 1;
    }
    ps_context *ctx = NULL;
    CHECK(ps_context_create(NULL, &ctx));
    int bad = conv_check(ctx) + gemm_check(ctx);
    ps_context_destroy(ctx);
    return bad ? 1 : 0;
}
