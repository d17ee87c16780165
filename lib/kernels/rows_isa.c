/* Row kernels of the stage-graph executor (kernels.h), compiled once per
 * instruction set: PS_KERNEL_TABLE names the table this build defines, and
 * the compiler flags (lib/CMakeLists.txt) choose the vector instructions.
 * GCC vector types of 16 floats become one zmm register with AVX-512, two
 * ymm with AVX2 and four xmm on baseline x86-64; the rest are plain loops
 * the compiler vectorizes. */
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef PS_KERNEL_TABLE
#error "PS_KERNEL_TABLE must name the kernel table this build defines"
#endif

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v16i __attribute__((vector_size(64)));

/* Loops over the vectors of a register block: fully unrolled, so each
 * accumulator is a register of its own. */
#define PS_UNROLL _Pragma("GCC unroll 32")

static inline v16 ld(const float *p) { return *(const v16u *)p; }
static inline void st(float *p, v16 v) { *(v16u *)p = v; }
static inline v16 splat(float x) { return (v16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }

static const v16i even_idx = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
static const v16i odd_idx = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
static const v16i lo_interleave = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
static const v16i hi_interleave = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
/* (a, b) -> a[15], b[0 .. 14] and (a, b) -> a[1 .. 15], b[0] */
static const v16i shift_left1 = {15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
static const v16i shift_right1 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* Elements 0, 2, 4, ... of the 32 floats at p. */
static inline v16 ld_even(const float *p) { return __builtin_shuffle(ld(p), ld(p + 16), even_idx); }

/* ---------------------------------------------------------------- sum */

#if defined(__AVX512F__)
/* Elements 1, 3, 5, ... of the 32 floats at p. */
static inline v16 ld_odd(const float *p) { return __builtin_shuffle(ld(p), ld(p + 16), odd_idx); }

/* sum at column step 2 whose taps are n_taps consecutive columns of one row
 * from s (a horizontal line: pyramid downsampling, strided blurs): output
 * i reads s[2i + t]. Loaded as it is per tap (two loads and a shuffle of
 * each tap's 32 floats) the loads bound it; here each block of 32 input
 * floats is loaded once and split into its even and odd elements, and tap
 * t is the even (t even) or odd stream moved t / 2 elements on, one
 * shuffle of this block's and the next block's streams. The same products
 * in the same order as the per-tap loop. Returns the outputs done (all
 * but the last 16-31, whose next block would pass the row's end). */
static inline __attribute__((always_inline)) int64_t sum_run2_n(float *restrict out, int64_t n, const float *s,
                                                                 const float *w, const int n_taps, float init)
{
    v16i shift[9];
    v16 wt[17];
    for (int k = 1; k <= (n_taps - 1) / 2 && k < 9; k++)
        for (int l = 0; l < 16; l++) shift[k][l] = k + l;
    for (int t = 0; t < n_taps && t < 17; t++) wt[t] = splat(w[t]);
    int64_t i = 0;
    if (n < 32) return 0;
    v16 e = ld_even(s), o = ld_odd(s);
    for (; i + 32 <= n; i += 16) {
        const float *p = s + 2 * i + 32;
        const v16 en = ld_even(p), on = ld_odd(p);
        v16 a = splat(init);
        for (int t = 0; t < n_taps && t < 17; t++) {
            const int k = t >> 1;
            const v16 x = t & 1 ? (k ? __builtin_shuffle(o, on, shift[k]) : o) : (k ? __builtin_shuffle(e, en, shift[k]) : e);
            a += wt[t] * x;
        }
        st(out + i, a);
        e = en;
        o = on;
    }
    return i;
}

/* sum_run2_n with its tap count a constant for the common lines (3 and 5
 * taps: the loops unrolled, weights and shuffles in registers). */
static int64_t sum_run2(float *restrict out, int64_t n, const float *s, const float *w, int n_taps, float init)
{
    switch (n_taps) {
    case 3: return sum_run2_n(out, n, s, w, 3, init);
    case 5: return sum_run2_n(out, n, s, w, 5, init);
    default: return sum_run2_n(out, n, s, w, n_taps, init);
    }
}
#endif

static void sum_rows(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps, int step,
                     float init)
{
    int64_t i = 0;
    if (step == 1) {
        /* Eight vectors per pass: each weight is broadcast once for 128
         * outputs, and eight independent FMA chains cover the FMA latency
         * (4 cycles) at two FMAs per cycle. Only with 32 vector registers
         * (AVX-512): with 16 the accumulators would spill. */
        for (; PS_KERNEL_VECTOR_FLOATS >= 16 && i + 128 <= n; i += 128) {
            v16 a0 = splat(init), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int t = 0; t < n_taps; t++) {
                const float *s = src[t] + i;
                v16 wt = splat(w[t]);
                a0 += wt * ld(s);
                a1 += wt * ld(s + 16);
                a2 += wt * ld(s + 32);
                a3 += wt * ld(s + 48);
                a4 += wt * ld(s + 64);
                a5 += wt * ld(s + 80);
                a6 += wt * ld(s + 96);
                a7 += wt * ld(s + 112);
            }
            st(out + i, a0);
            st(out + i + 16, a1);
            st(out + i + 32, a2);
            st(out + i + 48, a3);
            st(out + i + 64, a4);
            st(out + i + 80, a5);
            st(out + i + 96, a6);
            st(out + i + 112, a7);
        }
        for (; i + 64 <= n; i += 64) {
            v16 a0 = splat(init), a1 = a0, a2 = a0, a3 = a0;
            for (int t = 0; t < n_taps; t++) {
                const float *s = src[t] + i;
                v16 wt = splat(w[t]);
                a0 += wt * ld(s);
                a1 += wt * ld(s + 16);
                a2 += wt * ld(s + 32);
                a3 += wt * ld(s + 48);
            }
            st(out + i, a0);
            st(out + i + 16, a1);
            st(out + i + 32, a2);
            st(out + i + 48, a3);
        }
        for (; i + 16 <= n; i += 16) {
            v16 a0 = splat(init);
            for (int t = 0; t < n_taps; t++) a0 += splat(w[t]) * ld(src[t] + i);
            st(out + i, a0);
        }
    } else if (step == 2) {
#if defined(__AVX512F__)
        int run = n_taps >= 2 && n_taps <= 17;
        for (int t = 1; t < n_taps && run; t++) run = src[t] == src[0] + t;
        if (run) i = sum_run2(out, n, src[0], w, n_taps, init);
#endif
        /* Each tap reads 32 floats per output vector from 2i: up to 2i + 63
         * and 2i + 31, before the last output's own column 2n - 2, so no
         * load passes the row's end (a tap's row may end there) */
        for (; i + 32 < n; i += 32) {
            v16 a0 = splat(init), a1 = a0;
            for (int t = 0; t < n_taps; t++) {
                const float *s = src[t] + 2 * i;
                v16 wt = splat(w[t]);
                a0 += wt * ld_even(s);
                a1 += wt * ld_even(s + 32);
            }
            st(out + i, a0);
            st(out + i + 16, a1);
        }
        for (; i + 16 < n; i += 16) {
            v16 a0 = splat(init);
            for (int t = 0; t < n_taps; t++) a0 += splat(w[t]) * ld_even(src[t] + 2 * i);
            st(out + i, a0);
        }
    }
    for (; i < n; i++) {
        float a = init;
        for (int t = 0; t < n_taps; t++) a += w[t] * src[t][i * step];
        out[i] = a;
    }
}

/* nv vectors of sum_pair's two rows at i: 2 nv accumulators, one load of
 * each input row serving tap t of row 0 and tap t - 1 of row 1. */
static inline __attribute__((always_inline)) void pair_block(float *restrict out0, float *restrict out1, int64_t i,
                                                             const float *const *rows, const float *w, int n_taps,
                                                             float init, const int nv)
{
    v16 a0[4], a1[4];
    PS_UNROLL for (int v = 0; v < nv; v++) a0[v] = a1[v] = splat(init);
    for (int t = 0; t <= n_taps; t++) {
        const float *s = rows[t] + i;
        v16 x[4];
        PS_UNROLL for (int v = 0; v < nv; v++) x[v] = ld(s + 16 * v);
        if (t < n_taps) {
            const v16 wt = splat(w[t]);
            PS_UNROLL for (int v = 0; v < nv; v++) a0[v] += wt * x[v];
        }
        if (t > 0) {
            const v16 wt = splat(w[t - 1]);
            PS_UNROLL for (int v = 0; v < nv; v++) a1[v] += wt * x[v];
        }
    }
    PS_UNROLL for (int v = 0; v < nv; v++) {
        st(out0 + i + 16 * v, a0[v]);
        st(out1 + i + 16 * v, a1[v]);
    }
}

static void sum_pair_rows(float *restrict out0, float *restrict out1, int64_t n, const float *const *rows,
                          const float *w, int n_taps, float init)
{
    int64_t i = 0;
    /* Four vectors a row with 32 registers (eight accumulators, four
     * loads); one with 16, where more would spill. */
    for (; PS_KERNEL_VECTOR_FLOATS >= 16 && i + 64 <= n; i += 64) pair_block(out0, out1, i, rows, w, n_taps, init, 4);
    for (; i + 16 <= n; i += 16) pair_block(out0, out1, i, rows, w, n_taps, init, 1);
    if (i < n) { /* the last columns, each row by sum */
        const float *r[PS_SUM_PAIR_MAX_TAPS + 1];
        for (int t = 0; t <= n_taps; t++) r[t] = rows[t] + i;
        sum_rows(out0 + i, n - i, r, w, n_taps, 1, init);
        sum_rows(out1 + i, n - i, r + 1, w, n_taps, 1, init);
    }
}

/* nv vectors of sum at out + i (nv a constant where it is inlined, so the
 * accumulators stay in registers): nv independent chains of n_taps
 * dependent multiply-adds. */
static inline __attribute__((always_inline)) void sum_block(float *out, int64_t i, const float *const *src, const float *w,
                                                            int n_taps, float init, const int nv)
{
    v16 acc[8];
    for (int v = 0; v < nv; v++) acc[v] = splat(init);
    for (int t = 0; t < n_taps; t++) {
        const float *s = src[t] + i;
        v16 wt = splat(w[t]);
        for (int v = 0; v < nv; v++) acc[v] += wt * ld(s + 16 * v);
    }
    for (int v = 0; v < nv; v++) st(out + i + 16 * v, acc[v]);
}

static inline void sum_vec(float *out, int64_t i, const float *const *src, const float *w, int n_taps, float init)
{
    sum_block(out, i, src, w, n_taps, init, 1);
}

#if defined(__AVX512F__)
/* Lanes [0, m) of one vector of sum at out + i: masked loads and store, so
 * nothing past them is read or written. */
static inline void sum_vec_masked(float *out, int64_t i, const float *const *src, const float *w, int n_taps, float init,
                                  __mmask16 m)
{
    v16 a = splat(init);
    for (int t = 0; t < n_taps; t++) a += splat(w[t]) * (v16)_mm512_maskz_loadu_ps(m, src[t] + i);
    _mm512_mask_storeu_ps(out + i, m, (__m512)a);
}
#endif

static void sum_disjoint_rows(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps,
                              float init)
{
    int64_t i = 16 - (int64_t)(((uintptr_t)out / sizeof *out) & 15);
#if defined(__AVX512F__)
    /* Masked head up to the first aligned store, masked tail: no value is
     * stored twice (a load spanning two overlapping stores of a row just
     * written would wait for both to retire). */
    if (i == 16) i = 0;
    if (i > n) i = n;
    if (i) sum_vec_masked(out, 0, src, w, n_taps, init, (__mmask16)((1u << i) - 1));
#else
    if (n < 16) {
        sum_rows(out, n, src, w, n_taps, 1, init);
        return;
    }
    /* the first vector, then from the first aligned store on */
    sum_vec(out, 0, src, w, n_taps, init);
#endif
    /* Eight independent chains of FMAs, then four: a chain of n_taps
     * dependent multiply-adds (4 cycles each) per vector, so fewer chains
     * leave the FMA pipes idle on short stencils. */
    for (; i + 128 <= n; i += 128) sum_block(out, i, src, w, n_taps, init, 8);
    for (; i + 64 <= n; i += 64) sum_block(out, i, src, w, n_taps, init, 4);
    for (; i + 16 <= n; i += 16) sum_vec(out, i, src, w, n_taps, init);
#if defined(__AVX512F__)
    if (i < n) sum_vec_masked(out, i, src, w, n_taps, init, (__mmask16)((1u << (n - i)) - 1));
#else
    if (i < n) sum_vec(out, n - 16, src, w, n_taps, init);
#endif
}

/* The taps of sum_runs one by one, from column i of each run's row. */
static int runs_taps(const float **src, const float *const *ctr, int s0, int n3, int s1, int64_t i)
{
    int q = 0, r = 0;
    for (int k = 0; k < s0; k++) src[q++] = ctr[r++] + i;
    for (int k = 0; k < n3; k++, r++) {
        src[q++] = ctr[r] + i - 1;
        src[q++] = ctr[r] + i;
        src[q++] = ctr[r] + i + 1;
    }
    for (int k = 0; k < s1; k++) src[q++] = ctr[r++] + i;
    return q;
}

#if defined(__AVX512F__)
static inline __m512 lanes_from(__m512 hi, __m512 lo, const int k)
{
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), k));
}

/* nv vectors (8, 4, 2 or 1) of sum_runs at out + i (aligned, as is every ctr
 * row + i), s0, s1, n3 and nv constants where it is inlined: the
 * accumulators, a triple's row window of nv + 1 vectors and the weights
 * (wv, broadcast once per row: out may alias w as far as the compiler
 * knows, so a weight read from memory would be read again after every
 * store) stay in registers. win[k] holds triple k's lane before the block
 * (only lane 15 counts) and its first vector on entry, the same for the
 * next block on return: a window slides along its row, one load per
 * vector. */
static inline __attribute__((always_inline)) void runs_block(float *out, int64_t i, const float *const *ctr, const int s0,
                                                             const int s1, const __m512 *wv, __m512 vinit, const int n3,
                                                             const int nv, __m512 (*slide)[2])
{
    __m512 acc[8];
    PS_UNROLL for (int v = 0; v < nv; v++) acc[v] = vinit;
    int r = 0, t = 0;
    PS_UNROLL for (int k = 0; k < s0; k++, r++, t++) {
        const float *p = ctr[r] + i;
        PS_UNROLL for (int v = 0; v < nv; v++) acc[v] = _mm512_fmadd_ps(wv[t], _mm512_load_ps(p + 16 * v), acc[v]);
    }
    PS_UNROLL for (int k = 0; k < n3; k++) {
        const float *p = ctr[r + k] + i;
        const __m512 wl = wv[t + 3 * k], wc = wv[t + 3 * k + 1], wr = wv[t + 3 * k + 2];
        __m512 win[9];
        win[0] = slide[k][1];
        PS_UNROLL for (int v = 1; v <= nv; v++) win[v] = _mm512_load_ps(p + 16 * v);
        PS_UNROLL for (int v = 0; v < nv; v++) {
            acc[v] = _mm512_fmadd_ps(wl, lanes_from(win[v], v ? win[v - 1] : slide[k][0], 15), acc[v]);
            acc[v] = _mm512_fmadd_ps(wc, win[v], acc[v]);
            acc[v] = _mm512_fmadd_ps(wr, lanes_from(win[v + 1], win[v], 1), acc[v]);
        }
        slide[k][0] = win[nv - 1];
        slide[k][1] = win[nv];
    }
    r += n3;
    t += 3 * n3;
    PS_UNROLL for (int k = 0; k < s1; k++, r++, t++) {
        const float *p = ctr[r] + i;
        PS_UNROLL for (int v = 0; v < nv; v++) acc[v] = _mm512_fmadd_ps(wv[t], _mm512_load_ps(p + 16 * v), acc[v]);
    }
    PS_UNROLL for (int v = 0; v < nv; v++) _mm512_store_ps(out + i + 16 * v, acc[v]);
}

/* One vector of sum_runs at out + i (aligned), its lanes in `m` stored:
 * every load masked to the columns the stored lanes read (a triple's row
 * one column either side of them), so nothing outside the row's taps is
 * touched, and the multiply-adds in runs_block's order. */
static inline void runs_vec_masked(float *out, int64_t i, const float *const *ctr, int s0, int n3, int s1,
                                   const float *w, float init, __mmask16 m)
{
    const __mmask16 wide = (__mmask16)(m | (m << 1) | (m >> 1));
    __m512 acc = _mm512_set1_ps(init);
    int r = 0;
    for (int k = 0; k < s0; k++, r++) acc = _mm512_fmadd_ps(_mm512_set1_ps(*w++), _mm512_maskz_load_ps(m, ctr[r] + i), acc);
    for (int k = 0; k < n3; k++, r++) {
        const float *p = ctr[r] + i;
        const __m512 prev = _mm512_maskz_loadu_ps((__mmask16)((m & 1) << 15), p - 16);
        const __m512 next = _mm512_maskz_loadu_ps((__mmask16)(m >> 15), p + 16);
        const __m512 cur = _mm512_maskz_load_ps(wide, p);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(w[0]), lanes_from(cur, prev, 15), acc);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(w[1]), cur, acc);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(w[2]), lanes_from(next, cur, 1), acc);
        w += 3;
    }
    for (int k = 0; k < s1; k++, r++) acc = _mm512_fmadd_ps(_mm512_set1_ps(*w++), _mm512_maskz_load_ps(m, ctr[r] + i), acc);
    _mm512_mask_store_ps(out + i, m, acc);
}

/* sum_runs from i (aligned) to the row's end e (columns relative to the
 * aligned pointers): blocks of eight, four, two and one vectors while the vector
 * after a block lies inside the columns a triple may read (up to e, the
 * last output's right neighbour), then masked vectors. */
static inline __attribute__((always_inline)) void runs_blocks(float *out, int64_t i, int64_t e, const float *const *ctr,
                                                              const int s0, const int s1, const float *w, float init,
                                                              const int n3)
{
    if (i + 16 + 15 <= e) {
        __m512 slide[PS_SUM_RUNS_MAX_TRIPLES][2], wv[PS_SUM_RUNS_MAX_TAPS];
        const __m512 vinit = _mm512_set1_ps(init);
        PS_UNROLL for (int t = 0; t < s0 + 3 * n3 + s1; t++) wv[t] = _mm512_set1_ps(w[t]);
        PS_UNROLL for (int k = 0; k < n3; k++) {
            const float *p = ctr[s0 + k] + i;
            slide[k][0] = _mm512_maskz_loadu_ps((__mmask16)0x8000, p - 16); /* the rest of that line may lie before the row */
            slide[k][1] = _mm512_load_ps(p);
        }
        for (; i + 128 + 15 <= e; i += 128) runs_block(out, i, ctr, s0, s1, wv, vinit, n3, 8, slide);
        for (; i + 64 + 15 <= e; i += 64) runs_block(out, i, ctr, s0, s1, wv, vinit, n3, 4, slide);
        for (; i + 32 + 15 <= e; i += 32) runs_block(out, i, ctr, s0, s1, wv, vinit, n3, 2, slide);
        for (; i + 16 + 15 <= e; i += 16) runs_block(out, i, ctr, s0, s1, wv, vinit, n3, 1, slide);
    }
    for (; i < e; i += 16) {
        const int64_t left = e - i;
        runs_vec_masked(out, i, ctr, s0, n3, s1, w, init, left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1));
    }
}
#endif

#if defined(__AVX512F__)
/* Rows r < n_rows of sum_runs (runs_blocks' constants as its own), each
 * from the aligned vector holding its first output on: a masked first
 * vector where the row starts inside it (h lanes after that vector's start,
 * the same in every row), blocks, masked last vectors. */
static inline __attribute__((always_inline)) void runs_rows(float *out, int64_t h, int64_t n, const float *const *ctr,
                                                            const int s0, const int s1, const float *w, float init,
                                                            const int n3, int64_t n_rows, int64_t in_rs, int64_t out_rs)
{
    const int rows = s0 + n3 + s1;
    const int64_t e = h + n;
    const unsigned hi = e < 16 ? (1u << e) - 1 : 0xffffu;
    for (int64_t r = 0; r < n_rows; r++) {
        const float *c[PS_SUM_RUNS_MAX_TAPS];
        for (int k = 0; k < rows; k++) c[k] = ctr[k] - h + r * in_rs;
        float *o = out - h + r * out_rs;
        int64_t i = 0;
        if (h) {
            runs_vec_masked(o, 0, c, s0, n3, s1, w, init, (__mmask16)(hi & ~((1u << h) - 1)));
            i = 16;
        }
        runs_blocks(o, i, e, c, s0, s1, w, init, n3);
    }
}
#endif

static void sum_runs_rows(float *restrict out, int64_t n, const float *const *ctr, int s0, int n3, int s1,
                          const float *w, float init, int64_t n_rows, int64_t in_rs, int64_t out_rs)
{
#if defined(__AVX512F__)
    /* Every row at out's alignment (the strides are whole vectors). */
    const int64_t h = (int64_t)(((uintptr_t)out / sizeof *out) & 15);
    int rows = s0 + n3 + s1, same = n3 >= 1 && n3 <= PS_SUM_RUNS_MAX_TRIPLES && n > 0 && (n_rows <= 1 || (in_rs % 16 == 0 && out_rs % 16 == 0));
    for (int r = 0; r < rows && same; r++) same = ((uintptr_t)ctr[r] & 63) == ((uintptr_t)out & 63);
    if (same) {
        /* The iterated stencils' runs with the single taps as constants
         * too (their loops unrolled, the weights in registers): heat-1d/2d
         * (0 or 1 around a triple), heat-3d (2 around one), the 9-point
         * Jacobi (three triples). */
        if (n3 == 1 && s0 == s1 && s0 <= 2) {
            if (s0 == 0) runs_rows(out, h, n, ctr, 0, 0, w, init, 1, n_rows, in_rs, out_rs);
            else if (s0 == 1) runs_rows(out, h, n, ctr, 1, 1, w, init, 1, n_rows, in_rs, out_rs);
            else runs_rows(out, h, n, ctr, 2, 2, w, init, 1, n_rows, in_rs, out_rs);
            return;
        }
        if (n3 == 3 && s0 == 0 && s1 == 0) {
            runs_rows(out, h, n, ctr, 0, 0, w, init, 3, n_rows, in_rs, out_rs);
            return;
        }
        switch (n3) {
        case 1: runs_rows(out, h, n, ctr, s0, s1, w, init, 1, n_rows, in_rs, out_rs); break;
        case 2: runs_rows(out, h, n, ctr, s0, s1, w, init, 2, n_rows, in_rs, out_rs); break;
        default: runs_rows(out, h, n, ctr, s0, s1, w, init, 3, n_rows, in_rs, out_rs); break;
        }
        return;
    }
#endif
    for (int64_t r = 0; r < n_rows; r++) {
        const float *src[PS_SUM_RUNS_MAX_TAPS];
        int nt = runs_taps(src, ctr, s0, n3, s1, r * in_rs);
        sum_disjoint_rows(out + r * out_rs, n, src, w, nt, init);
    }
}

/* ------------------------------------------------------------- max/min */

/* a > b ? a : b (and a < b ? a : b): b where either is NaN, exactly what
 * MAXPS/MINPS compute, so AVX-512 builds issue one instruction instead of
 * the compare and blend the select compiles to. */
static inline v16 vmax(v16 a, v16 b)
{
#if defined(__AVX512F__)
    return (v16)_mm512_max_ps((__m512)a, (__m512)b);
#else
    v16i m = (v16i)(a > b);
    return (v16)(((v16i)a & m) | ((v16i)b & ~m));
#endif
}
static inline v16 vmin(v16 a, v16 b)
{
#if defined(__AVX512F__)
    return (v16)_mm512_min_ps((__m512)a, (__m512)b);
#else
    v16i m = (v16i)(a < b);
    return (v16)(((v16i)a & m) | ((v16i)b & ~m));
#endif
}

static void maxmin_rows(float *restrict out, int64_t n, const float *const *src, const float *w, int n_taps, int step,
                        int is_max)
{
    int64_t i = 0;
    if (step == 1) {
        for (; i + 32 <= n; i += 32) {
            v16 a0 = splat(w[0]) * ld(src[0] + i), a1 = splat(w[0]) * ld(src[0] + i + 16);
            for (int t = 1; t < n_taps; t++) {
                v16 wt = splat(w[t]);
                v16 b0 = wt * ld(src[t] + i), b1 = wt * ld(src[t] + i + 16);
                a0 = is_max ? vmax(a0, b0) : vmin(a0, b0);
                a1 = is_max ? vmax(a1, b1) : vmin(a1, b1);
            }
            st(out + i, a0);
            st(out + i + 16, a1);
        }
    } else if (step == 2) {
        for (; i + 16 <= n; i += 16) {
            v16 a0 = splat(w[0]) * ld_even(src[0] + 2 * i);
            for (int t = 1; t < n_taps; t++) {
                v16 b0 = splat(w[t]) * ld_even(src[t] + 2 * i);
                a0 = is_max ? vmax(a0, b0) : vmin(a0, b0);
            }
            st(out + i, a0);
        }
    }
    for (; i < n; i++) {
        float a = w[0] * src[0][i * step];
        for (int t = 1; t < n_taps; t++) {
            float b = w[t] * src[t][i * step];
            a = is_max ? (a > b ? a : b) : (a < b ? a : b);
        }
        out[i] = a;
    }
}

/* --------------------------------------------- pixel rows (channels last) */

/* Depthwise stencils over pixel rows. Channels run 16 at a time (one
 * vector) and pixels four at a time: four accumulators, one per pixel, held
 * across all taps, so each tap's weight vector is loaded once for four
 * FMAs (1.25 loads per FMA instead of 2, and four independent FMA chains
 * instead of one dependent chain per vector). Eight channels of a remainder
 * go through half vectors, the last few through scalars. Weights are
 * [t][c]: a tap's channels contiguous, like the pixels'. */
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
static inline v8 ld8(const float *p) { return *(const v8u *)p; }
static inline void st8(float *p, v8 v) { *(v8u *)p = v; }

static void px_sum_rows(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *src, const float *w,
                        int n_taps, int64_t step, const float *bias)
{
    int64_t c = 0;
    for (; c + 16 <= C; c += 16) {
        const v16 b = bias ? ld(bias + c) : splat(0.0f);
        for (int64_t i = 0; i + 4 <= n; i += 4) {
            v16 a0 = b, a1 = b, a2 = b, a3 = b;
            const int64_t s0 = i * step + c;
            for (int t = 0; t < n_taps; t++) {
                const v16 wt = ld(w + (int64_t)t * C + c);
                const float *s = src[t] + s0;
                a0 += wt * ld(s);
                a1 += wt * ld(s + step);
                a2 += wt * ld(s + 2 * step);
                a3 += wt * ld(s + 3 * step);
            }
            st(out + i * ops + c, a0);
            st(out + (i + 1) * ops + c, a1);
            st(out + (i + 2) * ops + c, a2);
            st(out + (i + 3) * ops + c, a3);
        }
    }
    /* the last n % 4 pixels (and single edge pixels): four channel vectors
     * at a time, so four FMA chains run side by side */
    const int64_t n4 = n / 4 * 4, c16 = C / 16 * 16;
    for (int64_t i = n4; i < n; i++) {
        const int64_t si = i * step;
        int64_t c2 = 0;
        for (; c2 + 64 <= c16; c2 += 64) {
            v16 a0 = bias ? ld(bias + c2) : splat(0.0f), a1 = bias ? ld(bias + c2 + 16) : splat(0.0f);
            v16 a2 = bias ? ld(bias + c2 + 32) : splat(0.0f), a3 = bias ? ld(bias + c2 + 48) : splat(0.0f);
            for (int t = 0; t < n_taps; t++) {
                const float *sp = src[t] + si + c2, *wt = w + (int64_t)t * C + c2;
                a0 += ld(wt) * ld(sp);
                a1 += ld(wt + 16) * ld(sp + 16);
                a2 += ld(wt + 32) * ld(sp + 32);
                a3 += ld(wt + 48) * ld(sp + 48);
            }
            st(out + i * ops + c2, a0);
            st(out + i * ops + c2 + 16, a1);
            st(out + i * ops + c2 + 32, a2);
            st(out + i * ops + c2 + 48, a3);
        }
        for (; c2 < c16; c2 += 16) {
            v16 a0 = bias ? ld(bias + c2) : splat(0.0f);
            for (int t = 0; t < n_taps; t++) a0 += ld(w + (int64_t)t * C + c2) * ld(src[t] + si + c2);
            st(out + i * ops + c2, a0);
        }
    }
    for (; c + 8 <= C; c += 8) {
        const v8 b = bias ? ld8(bias + c) : (v8){0};
        for (int64_t i = 0; i < n; i++) {
            v8 a0 = b;
            for (int t = 0; t < n_taps; t++) a0 += ld8(w + (int64_t)t * C + c) * ld8(src[t] + i * step + c);
            st8(out + i * ops + c, a0);
        }
    }
    for (; c < C; c++)
        for (int64_t i = 0; i < n; i++) {
            float a = bias ? bias[c] : 0.0f;
            for (int t = 0; t < n_taps; t++) a += w[(int64_t)t * C + c] * src[t][i * step + c];
            out[i * ops + c] = a;
        }
}

/* Taps on a full grid of R rows x S (3 or 5) unit-spaced columns, stride
 * 1 or 2 (the 3 x 3 and 5 x 5 depthwise convolutions): out pixel i,
 * channel c = bias[c] + sum over r, s of w[(r * S + s) * C + c] *
 * in_r(step * i + s, c), clamped to [lo, hi] where act; in_r(j, c) =
 * rows[r][(j - j0) * C + c] for j0 <= j < j1, and 0 outside those columns
 * or where rows[r] is NULL (zero padding without copies). Neighbouring
 * pixels share their inputs: a block of NB pixels loads a row's
 * step * (NB - 1) + S input vectors once for its NB * S FMAs, where one
 * pixel at a time loads an input per FMA (with one 512-bit load per cycle
 * the loads, not the FMAs, would bound it). */
#define PS_GRID_BLOCK(NB, S_, ST)                                                                                      \
    do {                                                                                                               \
        v16 a[NB];                                                                                                     \
        for (int j = 0; j < (NB); j++) a[j] = b;                                                                       \
        for (int r = 0; r < R; r++) {                                                                                  \
            if (!rows[r]) continue;                                                                                    \
            const float *x = rows[r] + ((ST) * i - j0) * C + c;                                                        \
            v16 in[(ST) * ((NB)-1) + (S_)];                                                                            \
            for (int j = 0; j < (ST) * ((NB)-1) + (S_); j++) in[j] = ld(x + j * C);                                   \
            for (int sx = 0; sx < (S_); sx++) {                                                                        \
                const v16 wt = ld(w + (int64_t)(r * (S_) + sx) * C + c);                                               \
                for (int j = 0; j < (NB); j++) a[j] += wt * in[(ST) * j + sx];                                         \
            }                                                                                                          \
        }                                                                                                              \
        for (int j = 0; j < (NB); j++) st(out + (i + j) * ops + c, act ? vmin(vmax(a[j], vl), vh) : a[j]);           \
    } while (0)
#define PS_GRID_FITS(NB) (step * i >= j0 && i + (NB) <= n && step * (i + (NB)-1) + S <= j1)
/* the block's code for this call's filter width and stride (constants in each) */
#define PS_GRID_ANY(NB)                                                                                                \
    do {                                                                                                               \
        if (S == 3 && step == 1) PS_GRID_BLOCK(NB, 3, 1);                                                              \
        else if (S == 3) PS_GRID_BLOCK(NB, 3, 2);                                                                      \
        else if (step == 1) PS_GRID_BLOCK(NB, 5, 1);                                                                   \
        else PS_GRID_BLOCK(NB, 5, 2);                                                                                  \
    } while (0)
static void px_grid_rows(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *rows,
                         const float *w, int R, int S, int step, int64_t j0, int64_t j1, const float *bias, int act,
                         float lo, float hi)
{
    const v16 vl = splat(lo), vh = splat(hi);
    const int64_t c16 = C / 16 * 16;
    for (int64_t c = 0; c < c16; c += 16) {
        const v16 b = bias ? ld(bias + c) : splat(0.0f);
        for (int64_t i = 0; i < n;) {
            if (PS_GRID_FITS(8)) {
                PS_GRID_ANY(8);
                i += 8;
            } else if (PS_GRID_FITS(4)) {
                PS_GRID_ANY(4);
                i += 4;
            } else {
                /* an edge pixel (or one of the last few): its taps inside */
                const int64_t x0 = step * i, s0 = j0 - x0 > 0 ? j0 - x0 : 0, s1 = j1 - x0 < S ? j1 - x0 : S;
                v16 a0 = b;
                for (int r = 0; r < R; r++)
                    for (int64_t sx = s0; rows[r] && sx < s1; sx++)
                        a0 += ld(w + (int64_t)(r * S + sx) * C + c) * ld(rows[r] + (x0 + sx - j0) * C + c);
                st(out + i * ops + c, act ? vmin(vmax(a0, vl), vh) : a0);
                i++;
            }
        }
    }
    for (int64_t c = c16; c < C; c++)
        for (int64_t i = 0; i < n; i++) {
            const int64_t x0 = step * i, s0 = j0 - x0 > 0 ? j0 - x0 : 0, s1 = j1 - x0 < S ? j1 - x0 : S;
            float a0 = bias ? bias[c] : 0.0f;
            for (int r = 0; r < R; r++)
                for (int64_t sx = s0; rows[r] && sx < s1; sx++)
                    a0 += w[(int64_t)(r * S + sx) * C + c] * rows[r][(x0 + sx - j0) * C + c];
            if (act) {
                a0 = a0 > lo ? a0 : lo;
                a0 = a0 < hi ? a0 : hi;
            }
            out[i * ops + c] = a0;
        }
}
#undef PS_GRID_ANY
#undef PS_GRID_FITS
#undef PS_GRID_BLOCK

/* out[j * ldo + i] = act(bias[i] + sum over c < C of w[c * ldw + i] *
 * x[j * ldx + c] (+ res[j * ldo + i])) for i < 16 * mv (mv 1-4), j < n: a
 * 1 x 1 convolution's output block over few input channels with its
 * epilogue in registers. Where a reduction of C <= 64 is short, the
 * epilogue as a pass of its own (a load and a store per output vector,
 * against C FMAs) costs a fifth of the layer; here the accumulators start
 * at the bias and are clamped before their only store. np pixels x mv
 * vectors of accumulators (at most 24 of the 32 registers). */
#define PS_SMALL_GEMM(MV, NP)                                                                                          \
    for (; j + (NP) <= n; j += (NP)) {                                                                                 \
        v16 acc[NP][MV];                                                                                               \
        PS_UNROLL for (int p = 0; p < (NP); p++)                                                                       \
            PS_UNROLL for (int v = 0; v < (MV); v++) acc[p][v] = bv[v];                                                \
        const float *xj = x + j * ldx;                                                                                 \
        for (int64_t c = 0; c < C; c++) {                                                                              \
            v16 wv[MV];                                                                                                \
            PS_UNROLL for (int v = 0; v < (MV); v++) wv[v] = ld(w + c * ldw + 16 * v);                                 \
            PS_UNROLL for (int p = 0; p < (NP); p++) {                                                                 \
                const v16 xb = splat(xj[p * ldx + c]);                                                                 \
                PS_UNROLL for (int v = 0; v < (MV); v++) acc[p][v] += wv[v] * xb;                                      \
            }                                                                                                          \
        }                                                                                                              \
        if (res)                                                                                                       \
            PS_UNROLL for (int p = 0; p < (NP); p++)                                                                   \
                PS_UNROLL for (int v = 0; v < (MV); v++) acc[p][v] += ld(res + (j + p) * ldo + 16 * v);               \
        if (act)                                                                                                       \
            PS_UNROLL for (int p = 0; p < (NP); p++)                                                                   \
                PS_UNROLL for (int v = 0; v < (MV); v++) acc[p][v] = vmin(vmax(acc[p][v], vl), vh);                   \
        PS_UNROLL for (int p = 0; p < (NP); p++)                                                                       \
            PS_UNROLL for (int v = 0; v < (MV); v++) st(out + (j + p) * ldo + 16 * v, acc[p][v]);                      \
    }
static void px_small_gemm_rows(float *out, int64_t ldo, int64_t n, int mv, const float *w, int64_t ldw, int64_t C,
                               const float *x, int64_t ldx, const float *bias, const float *res, int act, float lo,
                               float hi)
{
    const v16 vl = splat(lo), vh = splat(hi);
    v16 bv[4];
    for (int v = 0; v < 4; v++) bv[v] = bias && v < mv ? ld(bias + 16 * v) : splat(0.0f);
    int64_t j = 0;
    switch (mv) {
    case 1:
        PS_SMALL_GEMM(1, 16);
        PS_SMALL_GEMM(1, 4);
        PS_SMALL_GEMM(1, 1);
        break;
    case 2:
        PS_SMALL_GEMM(2, 12);
        PS_SMALL_GEMM(2, 4);
        PS_SMALL_GEMM(2, 1);
        break;
    case 3:
        PS_SMALL_GEMM(3, 8);
        PS_SMALL_GEMM(3, 1);
        break;
    default:
        PS_SMALL_GEMM(4, 6);
        PS_SMALL_GEMM(4, 1);
        break;
    }
}
#undef PS_SMALL_GEMM
#undef PS_UNROLL

static void px_maxmin_rows(float *restrict out, int64_t n, int64_t C, int64_t ops, const float *const *src,
                           const float *w, int n_taps, int64_t step, int is_max)
{
    for (int64_t i = 0; i < n; i++) {
        float *o = out + i * ops;
        const int64_t si = i * step;
        int64_t c = 0;
        for (; c + 32 <= C; c += 32) {
            v16 a0 = ld(w + c) * ld(src[0] + si + c), a1 = ld(w + c + 16) * ld(src[0] + si + c + 16);
            for (int t = 1; t < n_taps; t++) {
                const float *s = src[t] + si + c, *wt = w + (int64_t)t * C + c;
                v16 b0 = ld(wt) * ld(s), b1 = ld(wt + 16) * ld(s + 16);
                a0 = is_max ? vmax(a0, b0) : vmin(a0, b0);
                a1 = is_max ? vmax(a1, b1) : vmin(a1, b1);
            }
            st(o + c, a0);
            st(o + c + 16, a1);
        }
        for (; c + 16 <= C; c += 16) {
            v16 a0 = ld(w + c) * ld(src[0] + si + c);
            for (int t = 1; t < n_taps; t++) {
                v16 b0 = ld(w + (int64_t)t * C + c) * ld(src[t] + si + c);
                a0 = is_max ? vmax(a0, b0) : vmin(a0, b0);
            }
            st(o + c, a0);
        }
        for (; c < C; c++) {
            float a = w[c] * src[0][si + c];
            for (int t = 1; t < n_taps; t++) {
                float b = w[(int64_t)t * C + c] * src[t][si + c];
                a = is_max ? (a > b ? a : b) : (a < b ? a : b);
            }
            o[c] = a;
        }
    }
}

/* Column j of a block, out + j * ldo, m floats: min(max(col[i] + bias[i] +
 * sum[j * ldo + i], lo), hi) (bias, sum may be NULL): the layer executor's
 * epilogue of bias, residual add, ReLU and ReLU6, one call per output block
 * while it is in L1. The bias of up to 64 rows stays in registers across
 * the columns: a kernel block of 16-32 rows has one or two vectors per
 * column, so a call per column would cost more than its arithmetic. */
static void bias_clamp_block(float *out, int64_t m, int64_t n, int64_t ldo, const float *bias, const float *sum, float lo,
                             float hi)
{
    const v16 vl = splat(lo), vh = splat(hi), z = splat(0.0f);
    if (m % 16 == 0 && m <= 64) {
        const int64_t nv = m / 16;
        const v16 b0 = bias ? ld(bias) : z, b1 = bias && nv > 1 ? ld(bias + 16) : z,
                  b2 = bias && nv > 2 ? ld(bias + 32) : z, b3 = bias && nv > 3 ? ld(bias + 48) : z;
#define PS_EPI_COL(v, b)                                                                                               \
    do {                                                                                                               \
        v16 x_ = ld(o + 16 * (v)) + (b);                                                                               \
        if (sj) x_ += ld(sj + 16 * (v));                                                                               \
        st(o + 16 * (v), vmin(vmax(x_, vl), vh));                                                                      \
    } while (0)
        for (int64_t j = 0; j < n; j++) {
            float *o = out + j * ldo;
            const float *sj = sum ? sum + j * ldo : NULL;
            PS_EPI_COL(0, b0);
            if (nv > 1) PS_EPI_COL(1, b1);
            if (nv > 2) PS_EPI_COL(2, b2);
            if (nv > 3) PS_EPI_COL(3, b3);
        }
#undef PS_EPI_COL
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        float *o = out + j * ldo;
        const float *sj = sum ? sum + j * ldo : NULL;
        int64_t i = 0;
        for (; i + 16 <= m; i += 16) {
            v16 x = ld(o + i) + (bias ? ld(bias + i) : z);
            if (sj) x += ld(sj + i);
            st(o + i, vmin(vmax(x, vl), vh));
        }
#if defined(__AVX512F__)
        /* the rows past the last 16 (K = 24, 40, ... output channels) in one masked vector */
        if (i < m) {
            const __mmask16 k = (__mmask16)((1u << (m - i)) - 1u);
            __m512 x = _mm512_maskz_loadu_ps(k, o + i);
            if (bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, bias + i));
            if (sj) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, sj + i));
            _mm512_mask_storeu_ps(o + i, k, (__m512)vmin(vmax((v16)x, vl), vh));
            i = m;
        }
#endif
        for (; i < m; i++) {
            float x = o[i] + (bias ? bias[i] : 0.0f);
            if (sj) x += sj[i];
            x = x > lo ? x : lo;
            o[i] = x < hi ? x : hi;
        }
    }
}

/* out[i] = min(max(out[i], lo), hi): a ReLU or ReLU6 folded into the stage
 * that produced the block, while the block is in L1. */
static void clamp_rows(float *restrict out, int64_t n, float lo, float hi)
{
    int64_t i = 0;
    const v16 vl = splat(lo), vh = splat(hi);
    for (; i + 16 <= n; i += 16) st(out + i, vmin(vmax(ld(out + i), vl), vh));
    for (; i < n; i++) {
        float v = out[i] > lo ? out[i] : lo;
        out[i] = v < hi ? v : hi;
    }
}

/* ----------------------------------------------- expression programs */

/* exp and log as branch-free polynomials (Cephes' single-precision
 * coefficients, about 1 ulp), so the loops around them vectorize; libm's
 * would be called once per element. */
static inline float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float exp_poly(float x)
{
    float xc = x > 88.3762626647949f ? 88.3762626647949f : x;
    xc = xc < -87.3365478515625f ? -87.3365478515625f : xc;
    float fn = floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * z + r + 1.0f;
    int32_t e = (int32_t)fn + 127;
    float y = p * bits_to_float((uint32_t)e << 23);
    y = x > 88.72283935546875f ? INFINITY : y;
    y = x < -87.3365478515625f ? 0.0f : y;
    return x != x ? x : y;
}

static inline float log_poly(float x)
{
    /* Denormals are scaled into the normal range first. */
    int denormal = x < 1.17549435e-38f;
    float xs = denormal ? x * 8388608.0f : x;
    uint32_t u = float_to_bits(xs);
    int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - (denormal ? 23 : 0);
    float m = bits_to_float((u & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
    int small = m < 0.707106781186547524f;
    float fe = (float)(e - small);
    float t = small ? m + m - 1.0f : m - 1.0f;
    float z = t * t;
    float p = 7.0376836292E-2f;
    p = p * t - 1.1514610310E-1f;
    p = p * t + 1.1676998740E-1f;
    p = p * t - 1.2420140846E-1f;
    p = p * t + 1.4249322787E-1f;
    p = p * t - 1.6668057665E-1f;
    p = p * t + 2.0000714765E-1f;
    p = p * t - 2.4999993993E-1f;
    p = p * t + 3.3333331174E-1f;
    float y = t * z * p;
    y = y + fe * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = t + y;
    r = r + fe * 0.693359375f;
    r = x == INFINITY ? INFINITY : r;
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? NAN : r;
    return x != x ? x : r;
}

#define UNARY_LOOP(EXPR)                                        \
    do {                                                        \
        for (int64_t i = 0; i < n; i++) {                       \
            float x = a[i];                                     \
            d[i] = (EXPR);                                      \
        }                                                       \
    } while (0)

static void unary(ps_expr_op op, float *restrict d, const float *restrict a, int64_t n)
{
    switch (op) {
    case PS_EXPR_NEG: UNARY_LOOP(-x); break;
    case PS_EXPR_ABS: UNARY_LOOP(fabsf(x)); break;
    case PS_EXPR_SQRT: UNARY_LOOP(sqrtf(x)); break;
    case PS_EXPR_EXP: UNARY_LOOP(exp_poly(x)); break;
    case PS_EXPR_LOG: UNARY_LOOP(log_poly(x)); break;
    case PS_EXPR_FLOOR: UNARY_LOOP(floorf(x)); break;
    default: break;
    }
}

/* Binary operators with each operand a row or a constant: three loop forms
 * so a constant stays in a register. */
#define BIN_FORMS(EXPR)                                                                        \
    do {                                                                                       \
        if (ak) {                                                                              \
            const float x = *a;                                                                \
            for (int64_t i = 0; i < n; i++) {                                                  \
                const float y = b[i];                                                          \
                d[i] = (EXPR);                                                                 \
            }                                                                                  \
        } else if (bk) {                                                                       \
            const float y = *b;                                                                \
            for (int64_t i = 0; i < n; i++) {                                                  \
                const float x = a[i];                                                          \
                d[i] = (EXPR);                                                                 \
            }                                                                                  \
        } else {                                                                               \
            for (int64_t i = 0; i < n; i++) {                                                  \
                const float x = a[i], y = b[i];                                                \
                d[i] = (EXPR);                                                                 \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* restrict throughout: a destination register is never one its operation
 * reads (lowering guarantees it), and operands that alias each other are
 * only read. */
static void binary(ps_expr_op op, float *restrict d, const float *restrict a, int ak, const float *restrict b, int bk,
                   int64_t n)
{
    switch (op) {
    case PS_EXPR_ADD: BIN_FORMS(x + y); break;
    case PS_EXPR_SUB: BIN_FORMS(x - y); break;
    case PS_EXPR_MUL: BIN_FORMS(x * y); break;
    case PS_EXPR_DIV: BIN_FORMS(x / y); break;
    case PS_EXPR_MIN: BIN_FORMS(x < y ? x : y); break;
    case PS_EXPR_MAX: BIN_FORMS(x > y ? x : y); break;
    case PS_EXPR_LT: BIN_FORMS(x < y ? 1.0f : 0.0f); break;
    case PS_EXPR_LE: BIN_FORMS(x <= y ? 1.0f : 0.0f); break;
    case PS_EXPR_GT: BIN_FORMS(x > y ? 1.0f : 0.0f); break;
    case PS_EXPR_GE: BIN_FORMS(x >= y ? 1.0f : 0.0f); break;
    case PS_EXPR_EQ: BIN_FORMS(x == y ? 1.0f : 0.0f); break;
    case PS_EXPR_NE: BIN_FORMS(x != y ? 1.0f : 0.0f); break;
    default: break;
    }
}

/* The fused operations (kernels.h): every operand a row. */
static void fused(const ps_vop *op, float *restrict d, const float *restrict a, const float *restrict b,
                  const float *restrict c, const float *restrict e, int64_t n)
{
    switch (op->op) {
    case PS_VOP_FMA:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i] + c[i];
        break;
    case PS_VOP_FMS:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i] - c[i];
        break;
    case PS_VOP_FNMA:
        for (int64_t i = 0; i < n; i++) d[i] = c[i] - a[i] * b[i];
        break;
    case PS_VOP_MAM:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i] + c[i] * e[i];
        break;
    case PS_VOP_MSM:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i] - c[i] * e[i];
        break;
    case PS_VOP_ABSDIFF:
        for (int64_t i = 0; i < n; i++) d[i] = fabsf(a[i] - b[i]);
        break;
    case PS_VOP_SELCMP:
        switch (op->cmp) {
        case PS_EXPR_LT:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] < b[i] ? c[i] : e[i];
            break;
        case PS_EXPR_LE:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] <= b[i] ? c[i] : e[i];
            break;
        case PS_EXPR_GT:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] > b[i] ? c[i] : e[i];
            break;
        case PS_EXPR_GE:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] >= b[i] ? c[i] : e[i];
            break;
        case PS_EXPR_EQ:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] == b[i] ? c[i] : e[i];
            break;
        default:
            for (int64_t i = 0; i < n; i++) d[i] = a[i] != b[i] ? c[i] : e[i];
            break;
        }
        break;
    default: break;
    }
}

static void run_vprog(const ps_vprog *prog, float *restrict out, const float *const *in, int64_t n, float *regs)
{
    if (prog->fn) {
        prog->fn(out, in, n);
        return;
    }
    float konst[3][PS_VCHUNK];
    /* constant registers of the fused operations, once per call */
    int64_t first = n < PS_VCHUNK ? n : PS_VCHUNK;
    for (int c = 0; c < prog->n_consts; c++) {
        float *r = regs + (int64_t)prog->const_reg[c] * PS_VCHUNK, v = prog->const_val[c];
        for (int64_t i = 0; i < first; i++) r[i] = v;
    }
    for (int64_t i0 = 0; i0 < n; i0 += PS_VCHUNK) {
        int64_t len = n - i0 < PS_VCHUNK ? n - i0 : PS_VCHUNK;
        for (int o = 0; o < prog->n_ops; o++) {
            const ps_vop *op = &prog->ops[o];
            float *dd = op->dst == PS_VOP_OUT ? out + i0 : regs + (int64_t)op->dst * PS_VCHUNK;
            if (op->op >= PS_VOP_FMA) {
                const float *p[4];
                for (int j = 0; j < 4; j++) {
                    int a = op->a[j];
                    p[j] = PS_VOP_IS_INPUT(a) ? in[PS_VOP_INPUT_INDEX(a)] + i0
                           : a >= 0           ? regs + (int64_t)a * PS_VCHUNK
                                              : NULL;
                }
                fused(op, dd, p[0], p[1], p[2], p[3], len);
                continue;
            }
            const float *arg[3];
            int isk[3] = {0, 0, 0};
            (void)dd;
            int arity = op->op == PS_EXPR_SELECT || op->op == PS_EXPR_CLAMP ? 3 : op->op >= PS_EXPR_ADD ? 2 : op->op >= PS_EXPR_NEG ? 1 : 0;
            for (int j = 0; j < (arity ? arity : 1); j++) {
                int a = op->a[j];
                if (a == PS_VOP_CONST) {
                    arg[j] = &op->k[j];
                    isk[j] = 1;
                } else if (PS_VOP_IS_INPUT(a)) {
                    arg[j] = in[PS_VOP_INPUT_INDEX(a)] + i0;
                } else {
                    arg[j] = regs + (int64_t)a * PS_VCHUNK;
                }
            }
            float *d = op->dst == PS_VOP_OUT ? out + i0 : regs + (int64_t)op->dst * PS_VCHUNK;
            if (arity == 0) {
                /* a copy (an expression that is a leaf) */
                if (isk[0])
                    for (int64_t i = 0; i < len; i++) d[i] = op->k[0];
                else
                    memmove(d, arg[0], (size_t)len * sizeof *d);
            } else if (arity == 1) {
                if (isk[0]) {
                    float c[1] = {op->k[0]};
                    unary(op->op, konst[0], c, 1);
                    for (int64_t i = 0; i < len; i++) d[i] = konst[0][0];
                } else {
                    unary(op->op, d, arg[0], len);
                }
            } else if (arity == 2) {
                if (isk[0] && isk[1]) {
                    float r = 0.0f;
                    binary(op->op, &r, arg[0], 0, arg[1], 0, 1);
                    for (int64_t i = 0; i < len; i++) d[i] = r;
                } else {
                    binary(op->op, d, arg[0], isk[0], arg[1], isk[1], len);
                }
            } else {
                for (int j = 0; j < 3; j++)
                    if (isk[j]) {
                        for (int64_t i = 0; i < len; i++) konst[j][i] = op->k[j];
                        arg[j] = konst[j];
                    }
                const float *restrict c = arg[0], *restrict x = arg[1], *restrict y = arg[2];
                if (op->op == PS_EXPR_SELECT) {
                    for (int64_t i = 0; i < len; i++) d[i] = c[i] != 0.0f ? x[i] : y[i];
                } else { /* clamp(v = c, lo = x, hi = y) */
                    for (int64_t i = 0; i < len; i++) {
                        float v = c[i] > x[i] ? c[i] : x[i];
                        d[i] = v < y[i] ? v : y[i];
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------------ resample */

static void up2_nearest(float *restrict out, int64_t n, const float *src, int parity)
{
    for (int64_t i = 0; i < n; i++) out[i] = src[(parity + i) >> 1];
}

static void up2_bilinear_v(float *restrict out, int64_t n, const float *a, const float *f)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) st(out + i, splat(0.75f) * ld(a + i) + splat(0.25f) * ld(f + i));
    for (; i < n; i++) out[i] = 0.75f * a[i] + 0.25f * f[i];
}

static void up2_bilinear_h(float *restrict out, int64_t n, const float *v, int parity)
{
    const float q = 0.25f, t = 0.75f;
    int64_t i = 0, j = 0;
    if (parity && n > 0) {
        out[0] = t * v[0] + q * v[1];
        i = 1;
        j = 1;
    }
    /* Pairs of outputs (2j, 2j + 1) from v[j - 1], v[j], v[j + 1]: the
     * neighbours shifted in from the vectors before and after (one load a
     * vector instead of three, two of them across cache lines). Only
     * v[j - 1] of the vector before the first is read, and only v[j + 16]
     * of the one after the last. */
    if (i + 32 <= n) {
        v16 c = ld(v + j), prev = splat(v[j - 1]);
        for (; i + 32 <= n; i += 32, j += 16) {
            const v16 next = i + 64 <= n ? ld(v + j + 16) : splat(v[j + 16]);
            const v16 l = __builtin_shuffle(prev, c, shift_left1), r = __builtin_shuffle(c, next, shift_right1);
            v16 e = splat(t) * c + splat(q) * l;
            v16 o = splat(t) * c + splat(q) * r;
            st(out + i, __builtin_shuffle(e, o, lo_interleave));
            st(out + i + 16, __builtin_shuffle(e, o, hi_interleave));
            prev = c;
            c = next;
        }
    }
    for (; i < n; i++) {
        int64_t jj = (parity + i) >> 1;
        out[i] = ((parity + i) & 1) == 0 ? t * v[jj] + q * v[jj - 1] : t * v[jj] + q * v[jj + 1];
    }
}

static void down2_average(float *restrict out, int64_t n, const float *a, const float *b)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 a0 = ld(a + 2 * i), a1 = ld(a + 2 * i + 16), b0 = ld(b + 2 * i), b1 = ld(b + 2 * i + 16);
        v16 sa = __builtin_shuffle(a0, a1, even_idx) + __builtin_shuffle(a0, a1, odd_idx);
        v16 sb = __builtin_shuffle(b0, b1, even_idx) + __builtin_shuffle(b0, b1, odd_idx);
        st(out + i, splat(0.25f) * (sa + sb));
    }
    for (; i < n; i++) out[i] = 0.25f * ((a[2 * i] + a[2 * i + 1]) + (b[2 * i] + b[2 * i + 1]));
}

static void stream_copy(float *restrict dst, const float *restrict src, int64_t n)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    const int64_t lanes = 16;
#elif defined(__AVX__)
    const int64_t lanes = 8;
#else
    const int64_t lanes = 4;
#endif
    while (i < n && ((uintptr_t)(dst + i) & (size_t)(lanes * 4 - 1))) {
        dst[i] = src[i];
        i++;
    }
    for (; i + lanes <= n; i += lanes) {
#if defined(__AVX512F__)
        _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#elif defined(__AVX__)
        _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
#else
        _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#endif
    }
    for (; i < n; i++) dst[i] = src[i];
}

static void stream_fence(void) { _mm_sfence(); }

/* kernels.h box_sum: per output vector, each column's sum over the rows,
 * then the columns added to init in order (the scalar loop the same). */
static void box_sum_rows(float *restrict out, int64_t n, const float *const *rows, int n_rows, int n_cols, float init)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 a = splat(init);
        for (int s = 0; s < n_cols; s++) {
            v16 c = ld(rows[0] + i + s);
            for (int r = 1; r < n_rows; r++) c += ld(rows[r] + i + s);
            a += c;
        }
        st(out + i, a);
    }
    for (; i < n; i++) {
        float a = init;
        for (int s = 0; s < n_cols; s++) {
            float c = rows[0][i + s];
            for (int r = 1; r < n_rows; r++) c += rows[r][i + s];
            a += c;
        }
        out[i] = a;
    }
}

const ps_row_kernels PS_KERNEL_TABLE = {
    .isa = PS_KERNEL_ISA_NAME,
    .vector_floats = PS_KERNEL_VECTOR_FLOATS,
    .sum = sum_rows,
    .maxmin = maxmin_rows,
    .vprog = run_vprog,
    .up2_nearest = up2_nearest,
    .up2_bilinear_v = up2_bilinear_v,
    .up2_bilinear_h = up2_bilinear_h,
    .down2_average = down2_average,
    .stream_copy = stream_copy,
    .stream_fence = stream_fence,
    .sum_disjoint = sum_disjoint_rows,
    .sum_runs = sum_runs_rows,
    .sum_pair = sum_pair_rows,
    .box_sum = box_sum_rows,
    .px_sum = px_sum_rows,
    .px_grid = px_grid_rows,
    .px_small_gemm = px_small_gemm_rows,
    .clamp = clamp_rows,
    .bias_clamp = bias_clamp_block,
    .px_maxmin = px_maxmin_rows,
};
