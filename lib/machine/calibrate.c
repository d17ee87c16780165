/* Latency, bandwidth and peak: the built-in table, the measurement (pointer
 * chase, streaming reads, FMA loop, dependent-add clock) and the calibration
 * that repeats it until two runs agree, then caches the result (profile.c). */
#include "machine/machine.h"
#include "machine/machine_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PS_X86 1
#else
#define PS_X86 0
#endif

#define MIB ((size_t)1 << 20)

/* ----------------------------------------------------------------- table */

/* Rough single-core figures of current x86 server cores at ~3.5 GHz; Eq. 1
 * needs their ratios more than their values. Two rows. The default is a
 * Zen-like core: an L3 several times faster than memory (a Zen 5 VM
 * measures L1 1.1 ns/450 GB/s, L2 4.4/230, L3 ~20/105, memory ~90-150
 * ns/40 GB/s; a Zen 4 VM L1 1.1/215, L2 5/115, L3 ~21/100, memory ~130/35).
 * Intel Xeons since Skylake-SP reach their L3 slices over a mesh, and one
 * core reads it at about memory's rate: a Xeon VM (model 0xa7) measures L1
 * 1.2/404, L2 4.9/193, L3 48/30, memory 138/22. The row follows the vendor
 * and the brand's "Xeon" (CPUID says nothing about the L3's interconnect).
 * Which row applies decides, before any calibration, whether the LLC counts
 * as slow (ps_machine_llc_slow). */
typedef struct perf_row {
    const char *name;
    double lat_ns[PS_MAX_CACHE_LEVELS], bw_gbs[PS_MAX_CACHE_LEVELS];
    double mem_lat_ns, mem_bw_gbs;
} perf_row;
static const perf_row table_default = {"default", {1.2, 4.0, 18.0, 40.0}, {300.0, 150.0, 60.0, 30.0}, 100.0, 20.0};
static const perf_row table_xeon = {"Intel Xeon", {1.2, 4.9, 48.0, 80.0}, {400.0, 190.0, 30.0, 25.0}, 140.0, 22.0};

static const perf_row *table_row(const ps_machine *m)
{
    return strncmp(m->cpu_key, "GenuineIntel", 12) == 0 && strstr(m->cpu_name, "Xeon") ? &table_xeon : &table_default;
}

const char *ps_machine_perf_table(ps_machine *m)
{
    const perf_row *t = table_row(m);
    for (int i = 0; i < m->n_levels && i < PS_MAX_CACHE_LEVELS; i++) {
        m->levels[i].latency_ns = t->lat_ns[i];
        m->levels[i].bandwidth_gbs = t->bw_gbs[i];
    }
    m->mem_latency_ns = t->mem_lat_ns;
    m->mem_bandwidth_gbs = t->mem_bw_gbs;
    m->perf_source = "table";
    return t->name;
}

#define STENCIL_TABLE_L1 0.8
#define STENCIL_TABLE_L2 0.55

void ps_machine_stencil_table(ps_machine *m)
{
    m->stencil_gflops[0] = STENCIL_TABLE_L1 * m->peak_gflops_core;
    m->stencil_gflops[1] = STENCIL_TABLE_L2 * m->peak_gflops_core;
}

double ps_machine_stencil_rate(const ps_machine *m, int in_l1)
{
    const double v = m->stencil_gflops[in_l1 ? 0 : 1];
    return v > 0 ? v : (in_l1 ? STENCIL_TABLE_L1 : STENCIL_TABLE_L2) * m->peak_gflops_core;
}

int ps_machine_calibrate_mode(ps_machine *m)
{
    const char *e = getenv("PS_CALIBRATE");
    if (!e || !*e || strcmp(e, "1") == 0) return 1;
    if (strcmp(e, "0") == 0) return 0;
    if (strcmp(e, "force") == 0) return 2;
    if (m) ps_machine_note(m, "PS_CALIBRATE=\"%.16s\" not understood (0, 1 or force); using 1", e);
    return 1;
}

/* ----------------------------------------------------------- measurement */

/* The loops that are timed measure the hardware, not a sanitizer: without
 * this, an ASan build reads L1 at a fifth of its bandwidth, and the profile
 * it would write is shared with every other build on the machine. They
 * touch only memory this file allocated. */
#define PS_TIMED_LOOP __attribute__((noinline, no_sanitize("address", "undefined")))

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

/* One random cycle through every `stride`-th line of [base, base+ws)
 * (Sattolo's algorithm), so hardware prefetchers cannot follow it. */
static int build_chain(unsigned char *base, size_t ws, size_t stride, uint64_t *seed)
{
    size_t n = ws / stride;
    if (n < 2) return -1;
    uint32_t *perm = malloc(n * sizeof *perm);
    if (!perm) return -1;
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(rng_next(seed) % i);
        uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    for (size_t i = 0; i < n; i++) *(void **)(void *)(base + i * stride) = base + (size_t)perm[i] * stride;
    free(perm);
    return 0;
}

PS_TIMED_LOOP static void *chase(void *p, size_t steps)
{
    for (size_t i = 0; i < steps; i += 8) {
        p = *(void **)p; p = *(void **)p; p = *(void **)p; p = *(void **)p;
        p = *(void **)p; p = *(void **)p; p = *(void **)p; p = *(void **)p;
    }
    return p;
}

/* Reads n floats (n a multiple of 128, 64-byte aligned); returns their sum so
 * the loads are not optimised away. */
typedef float (*sum_fn)(const float *, size_t);

#if PS_X86
PS_TIMED_LOOP __attribute__((target("avx512f"))) static float sum_avx512(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 128) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    return _mm512_reduce_add_ps(a0);
}

PS_TIMED_LOOP __attribute__((target("avx"))) static float sum_avx(const float *p, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float t[8];
    _mm256_storeu_ps(t, a0);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif

typedef float v4f __attribute__((vector_size(16)));

PS_TIMED_LOOP static float sum_generic(const float *p, size_t n)
{
    v4f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (size_t i = 0; i < n; i += 16) {
        v4f x0, x1, x2, x3;
        memcpy(&x0, p + i, 16); memcpy(&x1, p + i + 4, 16);
        memcpy(&x2, p + i + 8, 16); memcpy(&x3, p + i + 12, 16);
        a0 += x0; a1 += x1; a2 += x2; a3 += x3;
    }
    a0 += a1 + a2 + a3;
    return a0[0] + a0[1] + a0[2] + a0[3];
}

/* Independent FMA chains (enough to cover latency x pipes on every current
 * core); returns the flops done so the result is used. */
typedef double (*fma_fn)(size_t iters, float *sink);

#if PS_X86
PS_TIMED_LOOP __attribute__((target("avx512f"))) static double fma_avx512(size_t iters, float *sink)
{
    __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a0 = _mm512_set1_ps(1.0f), a1 = _mm512_set1_ps(1.1f), a2 = _mm512_set1_ps(1.2f),
           a3 = _mm512_set1_ps(1.3f), a4 = _mm512_set1_ps(1.4f), a5 = _mm512_set1_ps(1.5f),
           a6 = _mm512_set1_ps(1.6f), a7 = _mm512_set1_ps(1.7f), a8 = _mm512_set1_ps(1.8f),
           a9 = _mm512_set1_ps(1.9f), a10 = _mm512_set1_ps(2.0f), a11 = _mm512_set1_ps(2.1f);
    for (size_t i = 0; i < iters; i++) {
        a0 = _mm512_fmadd_ps(a0, b, c); a1 = _mm512_fmadd_ps(a1, b, c);
        a2 = _mm512_fmadd_ps(a2, b, c); a3 = _mm512_fmadd_ps(a3, b, c);
        a4 = _mm512_fmadd_ps(a4, b, c); a5 = _mm512_fmadd_ps(a5, b, c);
        a6 = _mm512_fmadd_ps(a6, b, c); a7 = _mm512_fmadd_ps(a7, b, c);
        a8 = _mm512_fmadd_ps(a8, b, c); a9 = _mm512_fmadd_ps(a9, b, c);
        a10 = _mm512_fmadd_ps(a10, b, c); a11 = _mm512_fmadd_ps(a11, b, c);
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    a0 = _mm512_add_ps(a0, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    *sink = _mm512_reduce_add_ps(a0);
    return (double)iters * 12 * 16 * 2;
}

PS_TIMED_LOOP __attribute__((target("avx2,fma"))) static double fma_avx2(size_t iters, float *sink)
{
    __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f),
           a3 = _mm256_set1_ps(1.3f), a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f),
           a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f), a8 = _mm256_set1_ps(1.8f),
           a9 = _mm256_set1_ps(1.9f), a10 = _mm256_set1_ps(2.0f), a11 = _mm256_set1_ps(2.1f);
    for (size_t i = 0; i < iters; i++) {
        a0 = _mm256_fmadd_ps(a0, b, c); a1 = _mm256_fmadd_ps(a1, b, c);
        a2 = _mm256_fmadd_ps(a2, b, c); a3 = _mm256_fmadd_ps(a3, b, c);
        a4 = _mm256_fmadd_ps(a4, b, c); a5 = _mm256_fmadd_ps(a5, b, c);
        a6 = _mm256_fmadd_ps(a6, b, c); a7 = _mm256_fmadd_ps(a7, b, c);
        a8 = _mm256_fmadd_ps(a8, b, c); a9 = _mm256_fmadd_ps(a9, b, c);
        a10 = _mm256_fmadd_ps(a10, b, c); a11 = _mm256_fmadd_ps(a11, b, c);
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float t[8];
    _mm256_storeu_ps(t, a0);
    *sink = t[0] + t[7];
    return (double)iters * 12 * 8 * 2;
}
#endif

PS_TIMED_LOOP static double fma_generic(size_t iters, float *sink)
{
    v4f b = {0.9999999f, 0.9999999f, 0.9999999f, 0.9999999f}, c = {1e-7f, 1e-7f, 1e-7f, 1e-7f};
    v4f a[8];
    for (int k = 0; k < 8; k++) a[k] = (v4f){1.0f + 0.1f * (float)k, 1.0f, 1.0f, 1.0f};
    for (size_t i = 0; i < iters; i++)
        for (int k = 0; k < 8; k++) a[k] = a[k] * b + c;
    *sink = a[0][0] + a[7][3];
    return (double)iters * 8 * 4 * 2;
}

/* Core clock from a chain of dependent register adds (1 cycle each on every
 * x86 core; a register operand so no renamer can fold it). 0 if unknown. */
static double measure_clock_ghz(void)
{
#if defined(__x86_64__)
    double best = 0;
    for (int rep = 0; rep < 8; rep++) { /* short reps: some escape preemption */
        uint64_t x = 0, y = 1;
        const size_t iters = 40000; /* x 64 adds, ~0.7 ms */
        double t0 = now_ns();
        for (size_t i = 0; i < iters; i++)
            __asm__ volatile(".rept 64\n\taddq %1, %0\n\t.endr" : "+r"(x) : "r"(y));
        double t = now_ns() - t0;
        if (x != iters * 64) return 0;
        double ghz = (double)iters * 64 / t;
        if (ghz > best) best = ghz;
    }
    return best;
#else
    return 0;
#endif
}

/* Working set that lives in `level` (1-based) but not in the level below:
 * half of L1; for outer levels at least twice the level below, a half (L2)
 * or a quarter (L3+, shared with other cores) of the level. */
static size_t level_ws(const ps_machine *m, int level)
{
    size_t s = m->levels[level - 1].size_bytes;
    size_t ws = level == 1 ? s / 2 : s / (level >= 3 ? 4 : 2);
    if (level > 1 && ws < 2 * m->levels[level - 2].size_bytes) ws = 2 * m->levels[level - 2].size_bytes;
    if (ws > s - s / 4) ws = s - s / 4;
    /* Bounds for odd overrides: a chain needs a few pages; beyond 64 MiB the
     * measurement costs too much time and memory. */
    if (ws < 4096) ws = 4096;
    if (ws > 64 * MIB) ws = 64 * MIB;
    return ws & ~(size_t)511; /* whole 512-byte blocks for the read kernels */
}

static size_t clamp_size(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Repetition length and count: short repetitions, the best one kept, so a
 * preempted or disturbed one (a core shared with other processes) does not
 * count. Counts adapt to the measured speed, so a slow machine does not
 * take longer. */
#define REP_NS 1e6
#define REPS 5
/* One run stops measuring past this; what it did not reach stays 0 (not
 * measured) and the run is not used. An idle core needs ~50 ms. */
#define BUDGET_NS 700e6
/* ps_machine_calibrate starts no further run past this. */
#define CALIBRATE_NS 1500e6

/* Follows `steps` links in chunks, giving up past `deadline`. */
static void *chase_bounded(void *p, size_t steps, double deadline)
{
    for (size_t done = 0; done < steps; done += 8192) {
        p = chase(p, steps - done < 8192 ? ((steps - done) + 7) & ~(size_t)7 : 8192);
        if (now_ns() > deadline) break;
    }
    return p;
}

/* Best ns per link over REPS repetitions of ~REP_NS, at most max_steps links
 * in all (memory: links must not be revisited). */
static double time_chase(void **pp, size_t max_steps, double deadline)
{
    size_t probe = 512;
    double t0 = now_ns();
    *pp = chase(*pp, probe);
    double per = (now_ns() - t0) / (double)probe;
    size_t steps = clamp_size((size_t)(REP_NS / per), 64, (max_steps - probe) / REPS) & ~(size_t)7;
    double best = per;
    for (int rep = 0; rep < REPS && now_ns() < deadline; rep++) {
        t0 = now_ns();
        *pp = chase(*pp, steps);
        double t = (now_ns() - t0) / (double)steps;
        if (t < best) best = t;
    }
    return best;
}

/* Best GB/s reading ws bytes over REPS repetitions of ~REP_NS. */
static double time_read(sum_fn sum, const float *p, size_t ws, double deadline, float *sink)
{
    double t0 = now_ns();
    *sink += sum(p, ws / sizeof(float)); /* warm, and how long one pass takes */
    double pass = now_ns() - t0;
    size_t passes = clamp_size((size_t)(REP_NS / pass), 1, 1u << 20);
    double best = (double)ws / pass;
    for (int rep = 0; rep < REPS && now_ns() < deadline; rep++) {
        t0 = now_ns();
        for (size_t k = 0; k < passes; k++) {
            /* The sums are pure functions of unchanged memory: without this
             * barrier the compiler may call them once per repetition. */
            __asm__ volatile("" ::: "memory");
            *sink += sum(p, ws / sizeof(float));
        }
        double g = (double)ws * (double)passes / (now_ns() - t0);
        if (g > best) best = g;
    }
    return best;
}

/* One row of a five-point stencil in the form of the row kernels' loop
 * (lib/kernels' sum: taps as row pointers and weights, eight independent
 * vectors per pass, every tap a load and a multiply-add, taps in order):
 * out[i] = sum_t w[t] src[t][i], n a multiple of 128. The taps here: up,
 * left, centre, right, down (two unaligned). */
typedef void (*stencil_fn)(float *out, const float *const *src, const float *w, int taps, size_t n);

#if PS_X86
PS_TIMED_LOOP __attribute__((target("avx512f"))) static void stencil_avx512(float *out, const float *const *src,
                                                                           const float *w, int taps, size_t n)
{
    for (size_t i = 0; i < n; i += 128) {
        __m512 a[8];
        for (int v = 0; v < 8; v++) a[v] = _mm512_setzero_ps();
        for (int t = 0; t < taps; t++) {
            const float *s = src[t] + i;
            const __m512 wt = _mm512_set1_ps(w[t]);
            for (int v = 0; v < 8; v++) a[v] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(s + 16 * v), a[v]);
        }
        for (int v = 0; v < 8; v++) _mm512_storeu_ps(out + i + 16 * v, a[v]);
    }
}

PS_TIMED_LOOP __attribute__((target("avx2,fma"))) static void stencil_avx2(float *out, const float *const *src,
                                                                          const float *w, int taps, size_t n)
{
    for (size_t i = 0; i < n; i += 64) {
        __m256 a[8];
        for (int v = 0; v < 8; v++) a[v] = _mm256_setzero_ps();
        for (int t = 0; t < taps; t++) {
            const float *s = src[t] + i;
            const __m256 wt = _mm256_set1_ps(w[t]);
            for (int v = 0; v < 8; v++) a[v] = _mm256_fmadd_ps(wt, _mm256_loadu_ps(s + 8 * v), a[v]);
        }
        for (int v = 0; v < 8; v++) _mm256_storeu_ps(out + i + 8 * v, a[v]);
    }
}
#endif

PS_TIMED_LOOP static void stencil_generic(float *out, const float *const *src, const float *w, int taps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float a = 0;
        for (int t = 0; t < taps; t++) a += w[t] * src[t][i];
        out[i] = a;
    }
}

/* Sweeps of the stencil over `rows` rows of w columns (w a multiple of 128)
 * from one buffer into the other and back, at `area` (2 x rows x (w + 32)
 * floats, 64-byte aligned): batches of sweeps grown to about REP_NS, then
 * the best rate of REPS batches, GFLOP/s (0 past the deadline). */
static double time_stencil(stencil_fn fn, float *area, size_t rows, size_t w, double deadline)
{
    const size_t stride = w + 32;
    const double flops_sweep = 10.0 * (double)(rows - 2) * (double)w;
    float *buf[2] = {area, area + rows * stride};
    const float weights[5] = {0.125f, 0.125f, 0.5f, 0.125f, 0.125f};
    size_t sweeps = 1;
    double best = 0;
    for (int rep = -1; rep < REPS && now_ns() < deadline; rep++) {
        double t0 = now_ns();
        for (size_t k = 0; k < sweeps; k++) {
            const float *in = buf[k & 1] + 16;
            float *out = buf[(k + 1) & 1] + 16;
            for (size_t r = 1; r + 1 < rows; r++) {
                const float *c = in + r * stride, *src[5] = {c - stride, c - 1, c, c + 1, c + stride};
                fn(out + r * stride, src, weights, 5, w);
            }
        }
        double t = now_ns() - t0;
        if (rep < 0) { /* sizing: this batch is not counted */
            sweeps = (size_t)((double)sweeps * REP_NS / (t > 1 ? t : 1)) + 1;
            continue;
        }
        if ((double)sweeps * flops_sweep / t > best) best = (double)sweeps * flops_sweep / t;
    }
    return now_ns() < deadline ? best : 0;
}

ps_status ps_machine_measure(const ps_machine *m, ps_machine_figures *out)
{
    if (!m || !out) return ps_error(PS_ERR_NULL_POINTER, "ps_machine_measure: NULL argument");
    memset(out, 0, sizeof *out);
    double t_start = now_ns(), deadline = t_start + BUDGET_NS;
    float fsink = 0;
    volatile uintptr_t psink = 0;
    sum_fn sum = sum_generic;
    fma_fn fma = fma_generic;
    stencil_fn stencil = stencil_generic;
    int lanes = 4;
#if PS_X86
    if (__builtin_cpu_supports("avx512f")) { sum = sum_avx512; fma = fma_avx512; stencil = stencil_avx512; lanes = 16; }
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        sum = sum_avx; fma = fma_avx2; stencil = stencil_avx2; lanes = 8;
    }
    else if (__builtin_cpu_supports("avx")) sum = sum_avx;
#endif

    int nl = m->n_levels;
    size_t last = nl > 0 ? m->levels[nl - 1].size_bytes : 32 * MIB;
    size_t stride = nl > 0 && m->levels[0].line_bytes >= (int)sizeof(void *) ? (size_t)m->levels[0].line_bytes : 64;
    /* Chase region: the cache working sets, then memory (after a sweep of
     * the read region evicted it). Read region: twice the last level, so a
     * sequential sweep misses in every cache. Kept small: on a VM, first
     * touch of fresh memory can cost ~2.5 ms per MiB (host page faults). */
    size_t chase_bytes = clamp_size(last / 2, 16 * MIB, 64 * MIB);
    for (int l = 1; l <= nl; l++)
        if (level_ws(m, l) > chase_bytes) chase_bytes = level_ws(m, l);
    size_t read_bytes = clamp_size(2 * last, 32 * MIB, 256 * MIB);
    size_t total = chase_bytes + read_bytes;
    void *mem = NULL;
    if (posix_memalign(&mem, 2 * MIB, total) != 0)
        return ps_error(PS_ERR_OUT_OF_MEMORY, "machine calibration: cannot allocate %zu MiB", total / MIB);

    /* Clock first: it also wakes the core up from any idle state. */
    out->freq_ghz = measure_clock_ghz();
    out->simd_f32_lanes = lanes;
    for (int rep = 0; rep < 8; rep++) {
        double t0 = now_ns();
        double flops = fma(60000, &fsink); /* ~0.7 ms at AVX-512 peak */
        double g = flops / (now_ns() - t0);
        if (g > out->peak_gflops_core) out->peak_gflops_core = g;
    }

#ifdef MADV_HUGEPAGE
    madvise(mem, total, MADV_HUGEPAGE); /* fewer TLB misses, much cheaper first touch */
#endif
    unsigned char *chase_base = mem, *read_base = (unsigned char *)mem + chase_bytes;
    const float *rd = (const float *)(void *)read_base;
    memset(read_base, 0, read_bytes);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    ps_status st = PS_SUCCESS;

    /* The row stencil in the read region (zeros): four rows per buffer in
     * half of L1 (512 columns in 32 KiB), then rows of 2048 columns filling
     * half of L2 with both buffers, as a tiled stencil's task streams them. */
    {
        size_t l1 = nl > 0 ? m->levels[0].size_bytes : 32 << 10, l2 = nl > 1 ? m->levels[1].size_bytes : 1 * MIB;
        size_t w1 = l1 / 2 / (2 * 4 * sizeof(float)) / 128 * 128, rows2 = l2 / 2 / (2 * (2048 + 32) * sizeof(float));
        if (w1 < 128) w1 = 128;
        if (rows2 < 8) rows2 = 8;
        if (2 * rows2 * (2048 + 32) * sizeof(float) > read_bytes) rows2 = read_bytes / (2 * (2048 + 32) * sizeof(float));
        out->stencil_gflops[0] = time_stencil(stencil, (float *)(void *)read_base, 4, w1, deadline);
        out->stencil_gflops[1] = time_stencil(stencil, (float *)(void *)read_base, rows2, 2048, deadline);
    }

    out->n_levels = nl;
    for (int l = 1; l <= nl && now_ns() < deadline; l++) {
        size_t ws = level_ws(m, l);
        if (build_chain(chase_base, ws, stride, &seed) != 0) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "machine calibration: cannot build the L%d chase", l);
            break;
        }
        void *p = chase_bounded(chase_base, ws / stride, deadline); /* bring the set into cache */
        double lat = time_chase(&p, SIZE_MAX / 2, deadline);
        psink = (uintptr_t)p;
        double bw = time_read(sum, rd, ws, deadline, &fsink);
        if (now_ns() < deadline) { out->latency_ns[l - 1] = lat; out->bandwidth_gbs[l - 1] = bw; }
    }
    if (st == PS_SUCCESS && now_ns() < deadline) {
        double mbw = 0;
        for (int rep = 0; rep < 3 && now_ns() < deadline; rep++) {
            double t0 = now_ns();
            __asm__ volatile("" ::: "memory");
            fsink += sum(rd, read_bytes / sizeof(float));
            double g = (double)read_bytes / (now_ns() - t0);
            if (g > mbw) mbw = g;
        }
        out->mem_bandwidth_gbs = mbw;
        if (build_chain(chase_base, chase_bytes, stride, &seed) != 0)
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "machine calibration: cannot build the memory chase");
    }
    if (st == PS_SUCCESS && now_ns() < deadline) {
        __asm__ volatile("" ::: "memory");
        fsink += sum(rd, read_bytes / sizeof(float)); /* evict the chain */
        void *p = chase_base;
        double mlat = time_chase(&p, chase_bytes / stride, deadline); /* one long cycle: no link revisited */
        psink = (uintptr_t)p;
        if (now_ns() < deadline) out->mem_latency_ns = mlat;
    }
    free(mem);
    (void)psink;
    volatile float keep = fsink; /* the sums must stay observable */
    (void)keep;
    out->ms = (now_ns() - t_start) / 1e6;
    return st;
}

static ps_status measure_default(const ps_machine *m, ps_machine_figures *out, void *arg)
{
    (void)arg;
    return ps_machine_measure(m, out);
}

/* "L1 1.08 ns 214 GB/s, ..., peak 118.2 GFLOP/s at 3.694 GHz" for notes. */
static void figures_text(const ps_machine_figures *f, char *buf, size_t len)
{
    char a[24], b[24];
    size_t used = 0;
    buf[0] = '\0';
    for (int l = 0; l <= f->n_levels && used < len; l++) {
        ps_machine_fmt_fixed(l < f->n_levels ? f->latency_ns[l] : f->mem_latency_ns, 2, a, sizeof a);
        ps_machine_fmt_fixed(l < f->n_levels ? f->bandwidth_gbs[l] : f->mem_bandwidth_gbs, 1, b, sizeof b);
        if (l < f->n_levels) used += (size_t)snprintf(buf + used, len - used, "L%d %s ns %s GB/s, ", l + 1, a, b);
        else used += (size_t)snprintf(buf + used, len - used, "memory %s ns %s GB/s, ", a, b);
    }
    if (used >= len) return;
    ps_machine_fmt_fixed(f->peak_gflops_core, 1, a, sizeof a);
    ps_machine_fmt_fixed(f->freq_ghz, 3, b, sizeof b);
    if (f->freq_ghz > 0) used += (size_t)snprintf(buf + used, len - used, "peak %s GFLOP/s at %s GHz", a, b);
    else used += (size_t)snprintf(buf + used, len - used, "peak %s GFLOP/s, clock unknown", a);
    if (used >= len) return;
    ps_machine_fmt_fixed(f->stencil_gflops[0], 1, a, sizeof a);
    ps_machine_fmt_fixed(f->stencil_gflops[1], 1, b, sizeof b);
    snprintf(buf + used, len - used, ", row stencil %s (L1) / %s (L2) GFLOP/s", a, b);
}

ps_status ps_machine_calibrate_with(ps_machine *m, int use_profile_file, ps_machine_measure_fn measure, void *arg)
{
    if (!m || !measure) return ps_error(PS_ERR_NULL_POINTER, "ps_machine_calibrate: NULL argument");
    int mode = ps_machine_calibrate_mode(m);
    if (mode == 0) {
        ps_machine_perf_table(m);
        ps_machine_note(m, "PS_CALIBRATE=0: latency/bandwidth from the built-in table");
        return PS_SUCCESS;
    }
    if (use_profile_file && mode != 2 && ps_machine_load_profile(m)) return PS_SUCCESS;

    /* Runs until every figure's best value is confirmed by a second run:
     * a run disturbed by another process is slower somewhere, and two runs
     * rarely are in the same figure; the best of each is what the core does
     * undisturbed. */
    ps_machine_figures runs[PS_CALIBRATE_RUNS], best;
    char why[240] = "", times[8 * PS_CALIBRATE_RUNS] = "", text[400];
    int n = 0, found = 0;
    double t0 = now_ns();
    for (int k = 0; k < PS_CALIBRATE_RUNS && !found && (k < 2 || now_ns() - t0 < CALIBRATE_NS); k++) {
        ps_status st = measure(m, &runs[n], arg);
        if (st != PS_SUCCESS) {
            ps_machine_perf_table(m);
            ps_machine_note(m, "calibration failed (%s): built-in table", ps_status_str(st));
            return st;
        }
        size_t used = strlen(times);
        snprintf(times + used, sizeof times - used, "%s%.0f", k ? "+" : "", runs[n].ms);
        n++;
        found = ps_machine_figures_agree(runs, n, &best, why, sizeof why) &&
                ps_machine_figures_check(m, &best, why, sizeof why);
    }
    if (!found) {
        ps_machine_note(m, "calibration not kept after runs of %s ms: %s; figures unchanged (%s), nothing saved; "
                        "measure again on a quiet machine", times, why, m->perf_source ? m->perf_source : "table");
        return PS_SUCCESS;
    }
    ps_machine_apply_figures(m, &best, "measured");
    /* the notes detection wrote of the table's figures, which the measurement replaces */
    ps_machine_drop_notes(m, "peak ");
    ps_machine_drop_notes(m, "latency/bandwidth: built-in table");
    figures_text(&best, text, sizeof text);
    ps_machine_note(m, "calibrated in %.0f ms (runs of %s ms, each figure the best, confirmed by another run): "
                    "%s -> %d FMA(s) of %d lanes per cycle", (now_ns() - t0) / 1e6, times, text, m->fma_units,
                    m->simd_f32_lanes);
    for (int l = 0; l < m->n_levels; l++) {
        const double ratio = m->levels[l].bandwidth_gbs / m->mem_bandwidth_gbs;
        if (m->levels[l].level == 3 && ratio > 1.8 && ratio < 2.2)
            ps_machine_note(m, "calibration: the L3 reads at %.2fx memory's bandwidth, within 10%% of the 2x that "
                            "ps_machine_llc_slow tests: the planner's slow-L3 rules hinge on this measurement", ratio);
    }
    if (use_profile_file) ps_machine_save_profile(m);
    return PS_SUCCESS;
}

ps_status ps_machine_calibrate(ps_machine *m, int use_profile_file)
{
    return ps_machine_calibrate_with(m, use_profile_file, measure_default, NULL);
}
