/* White-box: the iterated-stencil executor under every row-kernel table
 * the CPU runs (AVX-512, AVX2 + FMA, baseline): sum_disjoint gives sum's
 * values bit for bit on rows of every length and alignment, and each
 * tiling of the benchmark stencils (both boundaries) is bitwise equal to
 * the step-by-step run with the same table. */
#include "plan/context_impl.h"
#include "row_tables.h"
#include "test_util.h"

static tu_rng rng = {42};
static float frand(void) { return 0.5f * tu_uniform(&rng); }

static void test_rows(const ps_row_kernels *k)
{
    enum { CAP = 400 };
    float src[5][CAP + 32], w[5], out1[CAP + 32], out2[CAP + 32];
    for (int t = 0; t < 5; t++) {
        w[t] = frand();
        for (int i = 0; i < CAP + 32; i++) src[t][i] = frand();
    }
    for (int n = 1; n <= 300; n += n < 40 ? 1 : 7)
        for (int shift = 0; shift < 16; shift += 5) {
            const float *p[5];
            for (int t = 0; t < 5; t++) p[t] = src[t] + t + 1;
            k->sum(out1 + shift, n, p, w, 5, 1, 0.125f);
            k->sum_disjoint(out2 + shift, n, p, w, 5, 0.125f);
            TU_CHECK(!memcmp(out1 + shift, out2 + shift, (size_t)n * sizeof(float)), "%s: sum_disjoint differs from sum, n %d, shift %d",
                  k->isa, n, shift);
        }
}

/* sum_runs against sum on the same taps, bit for bit: rows sharing out's
 * alignment (its fast path) and not, every length around its blocks. */
static void test_runs(const ps_row_kernels *k)
{
    enum { CAP = 416, ROWS = 7 }; /* rows CAP + 64 floats apart: a whole number of vectors */
    static const int pat[][3] = {{0, 1, 0}, {1, 1, 1}, {3, 1, 3}, {0, 3, 0}, {2, 2, 1}, {0, 2, 0}, {1, 3, 2}};
    float *rows = tu_alloc_f(ROWS * (CAP + 64)), *o1 = tu_alloc_f(CAP + 64), *o2 = tu_alloc_f(CAP + 64),
          w[PS_SUM_RUNS_MAX_TAPS];
    for (size_t i = 0; i < (size_t)ROWS * (CAP + 64); i++) rows[i] = frand();
    for (int t = 0; t < PS_SUM_RUNS_MAX_TAPS; t++) w[t] = frand();
    for (size_t p = 0; p < sizeof pat / sizeof pat[0]; p++)
        for (int n = 1; n <= CAP - 20; n += n < 40 ? 3 : n < 300 ? 13 : 1)
            for (int shift = 1; shift < 32; shift += 7)
                for (int misalign = 0; misalign < 2; misalign++) {
                    /* every row at column `shift` of its own (aligned) row of
                     * the buffer; out at the same alignment, or one float off */
                    const int s0 = pat[p][0], n3 = pat[p][1], s1 = pat[p][2], nr = s0 + n3 + s1;
                    const float *ctr[PS_SUM_RUNS_MAX_TAPS], *src[PS_SUM_RUNS_MAX_TAPS];
                    for (int r = 0; r < nr; r++) ctr[r] = rows + (size_t)r * (CAP + 64) + shift;
                    int q = 0, r = 0;
                    for (int j = 0; j < s0; j++) src[q++] = ctr[r++];
                    for (int j = 0; j < n3; j++, r++) {
                        src[q++] = ctr[r] - 1;
                        src[q++] = ctr[r];
                        src[q++] = ctr[r] + 1;
                    }
                    for (int j = 0; j < s1; j++) src[q++] = ctr[r++];
                    float *out1 = o1 + shift + misalign, *out2 = o2 + shift + misalign;
                    for (int i = 0; i < CAP + 64; i++) o2[i] = -7.0f;
                    k->sum(out1, n, src, w, q, 1, 0.25f);
                    k->sum_runs(out2, n, ctr, s0, n3, s1, w, 0.25f, 1, 0, 0);
                    TU_CHECK(!memcmp(out1, out2, (size_t)n * sizeof(float)),
                             "%s: sum_runs (%d, %d, %d) differs from sum, n %d, shift %d, misalign %d", k->isa, s0, n3, s1,
                             n, shift, misalign);
                    /* nothing stored outside the row (its masked first and last vectors) */
                    int outside = 0;
                    for (int i = 0; i < CAP + 64; i++) outside += (o2 + i < out2 || o2 + i >= out2 + n) && o2[i] != -7.0f;
                    TU_CHECK(!outside, "%s: sum_runs (%d, %d, %d) stored %d values outside the row, n %d, shift %d", k->isa, s0,
                             n3, s1, outside, n, shift);
                }
    free(rows);
    free(o1);
    free(o2);
}

static void test_tilings(ps_context *ctx)
{
    static const int64_t sizes[4][3] = {{2003, 1, 1}, {61, 150, 1}, {17, 21, 40}, {37, 83, 1}};
    static const int64_t steps[4] = {41, 12, 6, 9};
    for (int e = 0; e < 4; e++)
        for (int b = 0; b < 2; b++) {
            ps_iter *it = NULL;
            if (ps_iter_create_example((ps_iter_example)e, sizes[e], (ps_iter_boundary)b, steps[e], &it)) {
                TU_CHECK(0, "example %d: %s", e, ps_last_error_message());
                continue;
            }
            size_t n = (size_t)(sizes[e][0] * sizes[e][1] * sizes[e][2]);
            float *init = malloc(n * sizeof *init), *ref = malloc(n * sizeof *ref), *res = malloc(n * sizeof *res);
            for (size_t i = 0; init && i < n; i++) init[i] = 0.5f + frand();
            for (int t = PS_ITER_TILING_STEP; t <= PS_ITER_TILING_HYBRID && init && ref && res; t++) {
                ps_iter_options o;
                ps_iter_options_init(&o);
                o.tiling = (ps_iter_tiling)t;
                ps_iter_plan *p = NULL;
                float *dst = t == PS_ITER_TILING_STEP ? ref : res;
                memcpy(dst, init, n * sizeof *dst);
                ps_status st = ps_iter_plan_create(ctx, it, &o, &p);
                if (!st) st = ps_iter_execute(p, &dst, NULL);
                TU_CHECK(!st, "example %d tiling %d: %s", e, t, ps_last_error_message());
                if (!st && t != PS_ITER_TILING_STEP)
                    TU_CHECK(!memcmp(ref, res, n * sizeof *res), "lanes %d, example %d, boundary %d: tiling %d differs from step by step",
                          ctx->machine.simd_f32_lanes, e, b, t);
                ps_iter_plan_destroy(p);
            }
            free(init);
            free(ref);
            free(res);
            ps_iter_destroy(it);
        }
}

int main(void)
{
    const ps_row_kernels *tables[3];
    int lanes[3];
    const int n = tu_row_tables(tables, lanes);
    ps_context *ctx = NULL;
    if (ps_context_create(NULL, &ctx)) return 1;
    for (int l = 0; l < n; l++) {
        const ps_row_kernels *k = tables[l];
        test_rows(k);
        test_runs(k);
        /* plans pick their table from the machine model's vector width */
        ctx->machine.simd_f32_lanes = lanes[l];
        test_tilings(ctx);
        printf("%s kernels checked\n", k->isa);
    }
    ps_context_destroy(ctx);
    return tu_finish("test_iter_kernels");
}
