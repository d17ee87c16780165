/* White-box: the pixel-row kernels of deep-learning graphs under every
 * row-kernel table the CPU runs (AVX-512, AVX2 + FMA, baseline), against
 * double-precision sums of their definitions (kernels.h):
 *   px_grid     grid stencils (3 x 3, 5 x 5, other row counts; stride 1
 *               and 2) on rows of
 *               1-40 pixels, channel counts with and without a tail of 16,
 *               the valid columns [j0, j1) anywhere (edge pixels) and rows
 *               missing (NULL), bias and clamp on and off, output pixels
 *               further apart than the input's;
 *   bias_clamp  blocks of m = 1-80 rows (whole vectors, a tail, beyond the
 *               64 rows kept in registers), bias and residual on and off,
 *               the residual read in place (sum = out);
 *   px_small_gemm  1 x 1 blocks of 16-64 rows (every register shape),
 *               1-40 pixels (each remainder path), 1-64 channels, strided
 *               inputs and outputs, bias, residual and a clamp that cuts.
 * And the planar sum_pair (two rows of a vertical line stencil) against two
 * calls of sum on the same rows, bit for bit: rows of 1-300 columns at
 * every alignment, 1-9 and 64 taps; sum at column step 2 over 1-17
 * consecutive columns of one row against the same taps apart, bit for bit;
 * the two halves of bilinear x2 against their definitions.
 * Nothing outside the written pixels and rows may change. */
#include "row_tables.h"
#include "test_util.h"

#include <math.h>

static tu_rng rng = {7};

static float frand(void) { return tu_uniform(&rng) - 0.5f; }

static void test_px_grid(const ps_row_kernels *k)
{
    static const int64_t Cs[] = {1, 5, 16, 24, 40, 64, 100};
    enum { MAXN = 40, MAXS = 5, MAXR = 5, MAXC = 100, OPS_EXTRA = 3 };
    const int64_t in_cols = 2 * MAXN + MAXS;
    float *in = tu_alloc_f(MAXR * in_cols * MAXC), *w = tu_alloc_f(MAXR * MAXS * MAXC), *bias = tu_alloc_f(MAXC);
    float *out = tu_alloc_f(MAXN * (MAXC + OPS_EXTRA));
    for (int trial = 0; trial < 600; trial++) {
        const int64_t C = tu_pick(&rng, Cs, (int)(sizeof Cs / sizeof Cs[0]));
        const int S = tu_range(&rng, 0, 1) ? 3 : 5, R = (int)tu_range(&rng, 1, MAXR);
        const int step = (int)tu_range(&rng, 1, 2);
        const int64_t n = tu_range(&rng, 1, MAXN), len = step * (n - 1) + S, ops = C + tu_range(&rng, 0, OPS_EXTRA);
        /* the valid columns: usually all, often cut at either side, sometimes none */
        int64_t j0 = tu_range(&rng, 0, 2) ? 0 : tu_range(&rng, 0, len), j1 = tu_range(&rng, 0, 2) ? len : tu_range(&rng, 0, len);
        if (j1 < j0) j1 = j0;
        const int act = (int)tu_range(&rng, 0, 1), with_bias = (int)tu_range(&rng, 0, 1);
        const float lo = act ? -0.2f : -INFINITY, hi = act ? 0.3f : INFINITY;
        const float *rows[MAXR];
        for (int r = 0; r < R; r++) {
            float *row = in + (int64_t)r * in_cols * MAXC;
            for (int64_t i = 0; i < (j1 - j0) * C; i++) row[i] = frand();
            rows[r] = tu_range(&rng, 0, 4) ? row : NULL;
        }
        for (int64_t i = 0; i < (int64_t)R * S * C; i++) w[i] = frand();
        for (int64_t i = 0; i < C; i++) bias[i] = frand();
        const float sentinel = tu_sentinel();
        tu_fill(out, n * ops, sentinel);
        k->px_grid(out, n, C, ops, rows, w, R, S, step, j0, j1, with_bias ? bias : NULL, act, lo, hi);
        double worst = 0;
        int untouched = 1;
        for (int64_t i = 0; i < n; i++) {
            for (int64_t c = 0; c < C; c++) {
                double a = with_bias ? bias[c] : 0.0, mag = fabs(a);
                for (int r = 0; r < R; r++)
                    for (int s = 0; s < S; s++) {
                        const int64_t j = step * i + s;
                        if (!rows[r] || j < j0 || j >= j1) continue;
                        const double p = (double)w[((int64_t)r * S + s) * C + c] * rows[r][(j - j0) * C + c];
                        a += p, mag += fabs(p);
                    }
                if (act) a = fmin(fmax(a, lo), hi);
                const double e = fabs(out[i * ops + c] - a) / (mag > 1 ? mag : 1);
                if (!(e <= worst)) worst = e; /* NaN too */
            }
            for (int64_t c = C; c < ops; c++) untouched &= !memcmp(&out[i * ops + c], &sentinel, sizeof sentinel);
        }
        TU_CHECK(worst <= 1e-6, "%s px_grid: C %lld, R %d, S %d, step %d, n %lld, j [%lld, %lld), act %d, bias %d: error %.3g",
                 k->isa, (long long)C, R, S, step, (long long)n, (long long)j0, (long long)j1, act, with_bias, worst);
        TU_CHECK(untouched, "%s px_grid: C %lld, ops %lld: wrote between output pixels", k->isa, (long long)C, (long long)ops);
    }
    free(in), free(w), free(bias), free(out);
}

static void test_bias_clamp(const ps_row_kernels *k)
{
    enum { MAXM = 80, MAXN = 30, LD_EXTRA = 5 };
    float *out = tu_alloc_f(MAXN * (MAXM + LD_EXTRA)), *want = tu_alloc_f(MAXN * (MAXM + LD_EXTRA));
    float *sum = tu_alloc_f(MAXN * (MAXM + LD_EXTRA)), *bias = tu_alloc_f(MAXM);
    for (int trial = 0; trial < 800; trial++) {
        const int64_t m = tu_range(&rng, 1, MAXM), n = tu_range(&rng, 1, MAXN), ld = m + tu_range(&rng, 0, LD_EXTRA);
        const int with_bias = (int)tu_range(&rng, 0, 1), with_sum = (int)tu_range(&rng, 0, 2), relu = (int)tu_range(&rng, 0, 2);
        const float lo = relu ? 0.0f : -INFINITY, hi = relu == 2 ? 0.25f : INFINITY;
        for (int64_t i = 0; i < n * ld; i++) out[i] = frand(), sum[i] = frand();
        for (int64_t i = 0; i < m; i++) bias[i] = frand();
        /* with_sum 2: the residual is the output itself (out += out) */
        const float *sp = with_sum == 1 ? sum : with_sum == 2 ? out : NULL;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < ld; i++) {
                float v = out[j * ld + i];
                if (i < m) {
                    v += with_bias ? bias[i] : 0.0f;
                    if (sp) v += sp[j * ld + i];
                    v = fminf(fmaxf(v, lo), hi);
                }
                want[j * ld + i] = v;
            }
        k->bias_clamp(out, m, n, ld, with_bias ? bias : NULL, sp, lo, hi);
        double worst = 0;
        for (int64_t i = 0; i < n * ld; i++) {
            const double e = fabs(out[i] - want[i]);
            if (!(e <= worst)) worst = e;
        }
        TU_CHECK(worst <= 1e-6, "%s bias_clamp: m %lld, n %lld, ld %lld, bias %d, sum %d, relu %d: error %.3g", k->isa,
                 (long long)m, (long long)n, (long long)ld, with_bias, with_sum, relu, worst);
    }
    free(out), free(want), free(sum), free(bias);
}

static void test_small_gemm(const ps_row_kernels *k)
{
    enum { MAXN = 40, MAXC = 64, EXTRA = 7 };
    const int64_t ldo_max = 64 + EXTRA, ldx_max = MAXC + EXTRA;
    float *w = tu_alloc_f(MAXC * 80), *x = tu_alloc_f(MAXN * ldx_max), *bias = tu_alloc_f(64);
    float *res = tu_alloc_f(MAXN * ldo_max), *out = tu_alloc_f(MAXN * ldo_max);
    for (int trial = 0; trial < 800; trial++) {
        const int mv = (int)tu_range(&rng, 1, 4);
        const int64_t m = 16 * mv, n = tu_range(&rng, 1, MAXN), C = tu_range(&rng, 1, MAXC);
        const int64_t ldw = m + 16 * tu_range(&rng, 0, 1), ldo = m + tu_range(&rng, 0, EXTRA), ldx = C + tu_range(&rng, 0, EXTRA);
        const int with_bias = (int)tu_range(&rng, 0, 1), with_res = (int)tu_range(&rng, 0, 1), act = (int)tu_range(&rng, 0, 1);
        /* values of a few units, so a ReLU6-like clamp at [0, 1.5] cuts both ways */
        for (int64_t i = 0; i < C * ldw; i++) w[i] = 2.0f * frand();
        for (int64_t i = 0; i < n * ldx; i++) x[i] = 4.0f * frand();
        for (int64_t i = 0; i < m; i++) bias[i] = frand();
        for (int64_t i = 0; i < n * ldo; i++) res[i] = 2.0f * frand();
        const float sentinel = tu_sentinel(), lo = 0.0f, hi = 1.5f;
        tu_fill(out, n * ldo, sentinel);
        k->px_small_gemm(out, ldo, n, mv, w, ldw, C, x, ldx, with_bias ? bias : NULL, with_res ? res : NULL, act, lo, hi);
        double worst = 0;
        int untouched = 1, cut = 0;
        for (int64_t j = 0; j < n; j++) {
            for (int64_t i = 0; i < m; i++) {
                double a = with_bias ? bias[i] : 0.0, mag = fabs(a);
                for (int64_t c = 0; c < C; c++) {
                    const double p = (double)w[c * ldw + i] * x[j * ldx + c];
                    a += p, mag += fabs(p);
                }
                if (with_res) a += res[j * ldo + i], mag += fabs(res[j * ldo + i]);
                if (act) {
                    cut += a < lo || a > hi;
                    a = fmin(fmax(a, lo), hi);
                }
                const double e = fabs(out[j * ldo + i] - a) / (mag > 1 ? mag : 1);
                if (!(e <= worst)) worst = e;
            }
            for (int64_t i = m; i < ldo; i++) untouched &= !memcmp(&out[j * ldo + i], &sentinel, sizeof sentinel);
        }
        TU_CHECK(worst <= 1e-6, "%s px_small_gemm: mv %d, n %lld, C %lld, ldw %lld, ldo %lld, ldx %lld, bias %d, res %d, act %d: error %.3g",
                 k->isa, mv, (long long)n, (long long)C, (long long)ldw, (long long)ldo, (long long)ldx, with_bias, with_res,
                 act, worst);
        TU_CHECK(untouched, "%s px_small_gemm: wrote past the block's %lld rows", k->isa, (long long)m);
        TU_CHECK(!act || n * m < 8 || cut > 0, "%s px_small_gemm: the clamp never cut (test data too small)", k->isa);
    }
    free(w), free(x), free(bias), free(res), free(out);
}

static void test_sum_pair(const ps_row_kernels *k)
{
    enum { MAXN = 300, MAXT = PS_SUM_PAIR_MAX_TAPS, PAD = 16 };
    float *rows = tu_alloc_f((MAXT + 1) * (MAXN + 2 * PAD)), *w = tu_alloc_f(MAXT);
    float *o0 = tu_alloc_f(MAXN + 2 * PAD), *o1 = tu_alloc_f(MAXN + 2 * PAD), *r0 = tu_alloc_f(MAXN), *r1 = tu_alloc_f(MAXN);
    for (int64_t i = 0; i < (MAXT + 1) * (MAXN + 2 * PAD); i++) rows[i] = frand();
    for (int t = 0; t < MAXT; t++) w[t] = frand();
    const float sentinel = -7.25f;
    for (int trial = 0; trial < 400; trial++) {
        const int nt = tu_range(&rng, 0, 9) ? (int)tu_range(&rng, 1, 9) : MAXT;
        const int64_t n = tu_range(&rng, 1, MAXN), shift = tu_range(&rng, 0, 15), oshift = tu_range(&rng, 0, 15);
        const float init = tu_range(&rng, 0, 1) ? frand() : 0.0f;
        const float *r[MAXT + 1];
        for (int t = 0; t <= nt; t++) r[t] = rows + t * (MAXN + 2 * PAD) + PAD + shift;
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++) o0[i] = o1[i] = sentinel;
        k->sum_pair(o0 + PAD + oshift, o1 + PAD + oshift, n, r, w, nt, init);
        k->sum(r0, n, r, w, nt, 1, init);
        k->sum(r1, n, r + 1, w, nt, 1, init);
        TU_CHECK(!memcmp(o0 + PAD + oshift, r0, (size_t)n * sizeof(float)) &&
                     !memcmp(o1 + PAD + oshift, r1, (size_t)n * sizeof(float)),
                 "%s sum_pair: n %lld, %d taps, shifts %lld/%lld: differs from sum", k->isa, (long long)n, nt,
                 (long long)shift, (long long)oshift);
        int untouched = 1;
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++)
            if (i < PAD + oshift || i >= PAD + oshift + n)
                untouched &= !memcmp(&o0[i], &sentinel, sizeof sentinel) && !memcmp(&o1[i], &sentinel, sizeof sentinel);
        TU_CHECK(untouched, "%s sum_pair: wrote outside its %lld columns", k->isa, (long long)n);
    }
    free(rows), free(w), free(o0), free(o1), free(r0), free(r1);
}

/* sum at column step 2 over consecutive columns of one row (the kernel's
 * horizontal-line path) against the same taps read from copies of the row
 * (pointers not consecutive: the per-tap path), bit for bit. */
static void test_sum_run2(const ps_row_kernels *k)
{
    enum { MAXN = 300, MAXT = 17, PAD = 16, LEN = 2 * MAXN + MAXT + 2 * PAD };
    float *row = tu_alloc_f(LEN), *copies = tu_alloc_f((size_t)MAXT * LEN), *w = tu_alloc_f(MAXT);
    float *o = tu_alloc_f(MAXN + 2 * PAD), *r = tu_alloc_f(MAXN);
    for (int64_t i = 0; i < LEN; i++) row[i] = frand();
    for (int t = 0; t < MAXT; t++) memcpy(copies + (size_t)t * LEN, row, LEN * sizeof *row);
    for (int t = 0; t < MAXT; t++) w[t] = frand();
    const float sentinel = -7.25f;
    for (int trial = 0; trial < 400; trial++) {
        const int nt = (int)tu_range(&rng, 1, MAXT);
        const int64_t n = tu_range(&rng, 1, MAXN), shift = tu_range(&rng, 0, 15), oshift = tu_range(&rng, 0, 15);
        const float init = tu_range(&rng, 0, 1) ? frand() : 0.0f;
        const float *run[MAXT], *apart[MAXT];
        for (int t = 0; t < nt; t++) {
            run[t] = row + PAD + shift + t;
            apart[t] = copies + (size_t)t * LEN + PAD + shift + t;
        }
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++) o[i] = sentinel;
        k->sum(o + PAD + oshift, n, run, w, nt, 2, init);
        k->sum(r, n, apart, w, nt, 2, init);
        TU_CHECK(!memcmp(o + PAD + oshift, r, (size_t)n * sizeof(float)),
                 "%s sum step 2: n %lld, %d consecutive taps, shifts %lld/%lld: differs from the taps apart", k->isa,
                 (long long)n, nt, (long long)shift, (long long)oshift);
        int untouched = 1;
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++)
            if (i < PAD + oshift || i >= PAD + oshift + n) untouched &= !memcmp(&o[i], &sentinel, sizeof sentinel);
        TU_CHECK(untouched, "%s sum step 2: wrote outside its %lld columns", k->isa, (long long)n);
    }
    free(row), free(copies), free(w), free(o), free(r);
}

/* up2_bilinear_h (the horizontal half of bilinear x2) and up2_bilinear_v
 * against their definitions (kernels.h) in double: rows of 1-300 outputs,
 * both parities, the coarse row at every alignment; nothing written past
 * the n outputs, and of the coarse row only v[-1] .. v[(parity + n) / 2 + 1]
 * is needed (the rest of the buffer is NaN: a read of it would show). */
static void test_up2(const ps_row_kernels *k)
{
    enum { MAXN = 300, PAD = 32 };
    float *vbuf = tu_alloc_f(MAXN / 2 + 2 * PAD), *o = tu_alloc_f(MAXN + 2 * PAD), *a = tu_alloc_f(MAXN),
          *f = tu_alloc_f(MAXN);
    const float sentinel = -7.25f;
    double worst = 0;
    for (int trial = 0; trial < 400; trial++) {
        const int64_t n = tu_range(&rng, 1, MAXN), shift = tu_range(&rng, 0, 15), oshift = tu_range(&rng, 0, 15);
        const int parity = (int)tu_range(&rng, 0, 1);
        const int64_t last = (parity + n - 1) / 2 + 1; /* the last coarse column read, from v[0] */
        for (int64_t i = 0; i < MAXN / 2 + 2 * PAD; i++) vbuf[i] = NAN;
        float *v = vbuf + PAD / 2 + shift;
        for (int64_t c = -1; c <= last; c++) v[c] = frand();
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++) o[i] = sentinel;
        k->up2_bilinear_h(o + PAD + oshift, n, v, parity);
        for (int64_t i = 0; i < n; i++) {
            const int64_t jj = (parity + i) >> 1, nb = ((parity + i) & 1) ? jj + 1 : jj - 1;
            const double want = 0.75 * v[jj] + 0.25 * v[nb];
            const double err = fabs(o[PAD + oshift + i] - want);
            if (!(err <= worst)) worst = err;
        }
        int untouched = 1;
        for (int64_t i = 0; i < MAXN + 2 * PAD; i++)
            if (i < PAD + oshift || i >= PAD + oshift + n) untouched &= !memcmp(&o[i], &sentinel, sizeof sentinel);
        TU_CHECK(untouched, "%s up2_bilinear_h: wrote outside its %lld columns", k->isa, (long long)n);
        for (int64_t i = 0; i < n; i++) a[i] = frand(), f[i] = frand();
        k->up2_bilinear_v(o, n, a, f);
        for (int64_t i = 0; i < n; i++) {
            const double err = fabs(o[i] - (0.75 * a[i] + 0.25 * f[i]));
            if (!(err <= worst)) worst = err;
        }
    }
    TU_CHECK(worst <= 1e-6, "%s up2_bilinear_h/v: error %.3g", k->isa, worst);
    free(vbuf), free(o), free(a), free(f);
}

/* box_sum against its definition written out (each column's sum over the
 * rows, the columns added to init in order): the same values bit for bit,
 * for every length (vector body and remainder), box shape and row
 * misalignment, and nothing written past n. */
static void test_box_sum(const ps_row_kernels *k)
{
    enum { MAXN = 200, MAXR = 5, MAXS = 7, PAD = 16 };
    float *rows_buf = tu_alloc_f(MAXR * (MAXN + MAXS + PAD)), *o = tu_alloc_f(MAXN + PAD), *want = tu_alloc_f(MAXN);
    const float sentinel = -3.5f;
    int bad = 0;
    for (int trial = 0; trial < 300 && !bad; trial++) {
        const int64_t n = tu_range(&rng, 1, MAXN);
        const int R = (int)tu_range(&rng, 2, MAXR), S = (int)tu_range(&rng, 2, MAXS);
        const float init = frand();
        const float *rows[MAXR];
        for (int r = 0; r < R; r++) {
            float *row = rows_buf + r * (MAXN + MAXS + PAD) + tu_range(&rng, 0, 15);
            for (int64_t i = 0; i < n + S - 1; i++) row[i] = frand() * (float)(1 << tu_range(&rng, 0, 12));
            rows[r] = row;
        }
        for (int64_t i = 0; i < n; i++) {
            float a = init;
            for (int s = 0; s < S; s++) {
                float c = rows[0][i + s];
                for (int r = 1; r < R; r++) c = c + rows[r][i + s];
                a = a + c;
            }
            want[i] = a;
        }
        for (int64_t i = 0; i < MAXN + PAD; i++) o[i] = sentinel;
        k->box_sum(o, n, rows, R, S, init);
        bad = memcmp(o, want, (size_t)n * sizeof *o) != 0;
        for (int64_t i = n; i < MAXN + PAD; i++) bad |= memcmp(&o[i], &sentinel, sizeof sentinel) != 0;
        TU_CHECK(!bad, "%s box_sum: %d x %d box over %lld columns differs from its definition or wrote past n", k->isa,
                 R, S, (long long)n);
    }
    free(rows_buf), free(o), free(want);
}

int main(void)
{
    const ps_row_kernels *tables[3];
    int lanes[3];
    const int n = tu_row_tables(tables, lanes);
    for (int i = 0; i < n; i++) {
        test_px_grid(tables[i]);
        test_bias_clamp(tables[i]);
        test_small_gemm(tables[i]);
        test_sum_pair(tables[i]);
        test_sum_run2(tables[i]);
        test_up2(tables[i]);
        test_box_sum(tables[i]);
        printf("%s pixel-row kernels, sum_pair, the step-2 line sum, bilinear x2 and box sums checked\n", tables[i]->isa);
    }
    return tu_finish("test_px_kernels");
}
