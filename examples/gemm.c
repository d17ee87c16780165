/* polysci example: C = alpha * A * B + beta * C in row-major storage.
 *
 * One plan serves any number of calls with the same shape. The whole result
 * is checked against a direct computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <polysci/polysci.h>

enum { M = 100, N = 70, K = 130 };

static void die(const char *what, ps_status st)
{
    fprintf(stderr, "gemm: %s failed: %s: %s\n", what, ps_status_str(st), ps_last_error_message());
    exit(1);
}

int main(void)
{
    static float a[M * K], b[K * N], c[M * N], c_old[M * N];
    unsigned seed = 7;
    for (int i = 0; i < M * K; i++) a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 128.0f - 1.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 128.0f - 1.0f;
    for (int i = 0; i < M * N; i++) c[i] = c_old[i] = (float)(i % 17) - 8.0f;

    ps_context *ctx = NULL;
    ps_status st = ps_context_create(NULL, &ctx);
    if (st != PS_SUCCESS) die("ps_context_create", st);

    ps_desc desc;
    ps_desc_init_gemm(&desc); /* column-major, no transposes, tight lds, alpha 1, beta 0 */
    desc.u.gemm.M = M;
    desc.u.gemm.N = N;
    desc.u.gemm.K = K;
    desc.u.gemm.order = PS_ROW_MAJOR;
    desc.u.gemm.alpha = 0.5f;
    desc.u.gemm.beta = 2.0f;

    ps_plan *plan = NULL;
    if ((st = ps_plan_create(ctx, &desc, NULL, &plan)) != PS_SUCCESS) die("ps_plan_create", st);
    if ((st = ps_gemm_execute(plan, a, b, c)) != PS_SUCCESS) die("ps_gemm_execute", st);

    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * b[p * N + j];
            double want = 0.5 * acc + 2.0 * c_old[i * N + j];
            if (!(fabs(c[i * N + j] - want) <= 1e-4 * (1.0 + fabs(want)))) {
                if (bad++ < 5) fprintf(stderr, "gemm: C[%d][%d] = %.7g, expected %.7g\n", i, j, c[i * N + j], want);
            }
        }
    printf("gemm: C(%dx%d) = 0.5 * A(%dx%d) * B(%dx%d) + 2 * C, row-major: %s\n", M, N, M, K, K, N,
           bad ? "MISMATCH" : "OK");

    ps_plan_destroy(plan);
    ps_context_destroy(ctx);
    return bad ? 1 : 0;
}
