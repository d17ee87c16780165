/* Small helpers shared by the tests: a seeded RNG, aligned buffers, checks. */
#ifndef PS_TESTS_UTIL_H
#define PS_TESTS_UTIL_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polysci/polysci.h"

/* ------------------------------------------------------------ RNG (splitmix64) */
typedef struct tu_rng { uint64_t s; } tu_rng;

static inline uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform integer in [lo, hi]. */
static inline int64_t tu_range(tu_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(tu_next(r) % (uint64_t)(hi - lo + 1));
}
/* Uniform in [-1, 1), an f32 value. */
static inline float tu_uniform(tu_rng *r)
{
    return (float)((double)(tu_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}
static inline int64_t tu_pick(tu_rng *r, const int64_t *v, int n) { return v[tu_range(r, 0, n - 1)]; }

/* Seed: PS_TEST_SEED (decimal or 0x hex) if set, else `dflt`. Printed. */
static inline uint64_t tu_seed(const char *test, uint64_t dflt)
{
    const char *e = getenv("PS_TEST_SEED");
    uint64_t s = dflt;
    if (e && *e) s = strtoull(e, NULL, 0);
    printf("%s: seed %" PRIu64 " (override with PS_TEST_SEED)\n", test, s);
    fflush(stdout);
    return s;
}

/* ------------------------------------------------------------ buffers */
/* 64-byte aligned, size rounded up for aligned_alloc; never NULL (aborts). */
static inline void *tu_alloc(size_t bytes)
{
    size_t b = (bytes + 63) / 64 * 64;
    if (b == 0) b = 64;
    void *p = aligned_alloc(64, b);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}
static inline float *tu_alloc_f(int64_t n) { return (float *)tu_alloc((size_t)n * sizeof(float)); }
static inline double *tu_alloc_d(int64_t n) { return (double *)tu_alloc((size_t)n * sizeof(double)); }
static inline void tu_fill_random(tu_rng *r, float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) p[i] = tu_uniform(r);
}
static inline void tu_fill(float *p, int64_t n, float v)
{
    for (int64_t i = 0; i < n; i++) p[i] = v;
}
/* A float bit pattern that no computation produces (a NaN with a payload). */
static inline float tu_sentinel(void)
{
    uint32_t u = 0x7fa5a5a5u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* Index of the first element whose bits differ from the sentinel, -1 if none. */
static inline int64_t tu_find_not_sentinel(const float *p, int64_t n)
{
    const float s = tu_sentinel();
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&p[i], &s, sizeof s) != 0) return i;
    return -1;
}

/* ------------------------------------------------------------ checks */
static int tu_failures = 0;
static int tu_checks = 0;

#define TU_CHECK(cond, ...)                                                        \
    do {                                                                           \
        tu_checks++;                                                               \
        if (!(cond)) {                                                             \
            tu_failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
        }                                                                          \
    } while (0)

/* A call that must succeed; on failure prints the status and message. */
#define TU_OK(call)                                                                \
    do {                                                                           \
        ps_status st_ = (call);                                                    \
        tu_checks++;                                                               \
        if (st_ != PS_SUCCESS) {                                                   \
            tu_failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__,      \
                    #call, ps_status_str(st_), ps_last_error_message());           \
        }                                                                          \
    } while (0)

/* Error-message freshness: ps_last_error_message() keeps the last failure's
 * text, so a call that fails without setting a message would still show an
 * old one. Before the call under test we set a known message with a failing
 * "primer" call; the message must change. Two different primers are used so
 * that a call whose own message happens to equal a primer's still passes. */
static inline void tu_prime(int which, char *buf, size_t len)
{
    if (which == 0) {
        (void)ps_desc_validate(NULL);
    } else {
        ps_schedule *s = NULL;
        (void)ps_schedule_parse(PS_OP_GEMM, "@@ primer: not a schedule @@", &s);
        ps_schedule_destroy(s);
    }
    snprintf(buf, len, "%s", ps_last_error_message());
}

/* A call that must fail with `want` and leave a non-empty message of its own.
 * The call is evaluated once, or twice when its message equals the first
 * primer's (so it must be free of side effects when it fails). */
#define TU_ERR(want, call)                                                         \
    do {                                                                           \
        char prime_[1100];                                                         \
        tu_checks++;                                                               \
        tu_prime(0, prime_, sizeof prime_);                                        \
        ps_status st_ = (call);                                                    \
        const char *m_ = ps_last_error_message();                                  \
        int fresh_ = strcmp(m_, prime_) != 0;                                      \
        if (!fresh_ && st_ == (want)) {                                            \
            tu_prime(1, prime_, sizeof prime_);                                    \
            st_ = (call);                                                          \
            m_ = ps_last_error_message();                                          \
            fresh_ = strcmp(m_, prime_) != 0;                                      \
        }                                                                          \
        if (st_ != (want)) {                                                       \
            tu_failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s -> %s (want %s): %s\n", __FILE__,      \
                    __LINE__, #call, ps_status_str(st_), ps_status_str(want),      \
                    st_ == PS_SUCCESS ? "" : m_);                                  \
        } else if (!m_ || !m_[0] || !fresh_) {                                     \
            tu_failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s -> %s but left %s error message\n",    \
                    __FILE__, __LINE__, #call, ps_status_str(st_),                 \
                    (!m_ || !m_[0]) ? "an empty" : "no new");                      \
        }                                                                          \
    } while (0)

/* Rankers this build can plan with (PS_ERR_UNSUPPORTED = not built in, a
 * documented outcome); any other failure is reported. Returns the count. */
static inline int tu_available_rankers(ps_context *ctx, ps_ranker out[4])
{
    static const char *names[] = {"default", "cost", "dnn", "none"};
    ps_desc d;
    ps_desc_init_gemm(&d);
    d.u.gemm.M = 8; d.u.gemm.N = 8; d.u.gemm.K = 8;
    int n = 0;
    printf("rankers:");
    for (int r = PS_RANKER_DEFAULT; r <= PS_RANKER_NONE; r++) {
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.ranker = (ps_ranker)r;
        o.flags = PS_PLAN_NO_CACHE;
        ps_plan *p = NULL;
        const ps_status st = ps_plan_create(ctx, &d, &o, &p);
        ps_plan_destroy(p);
        if (st == PS_SUCCESS) out[n++] = (ps_ranker)r;
        else if (st != PS_ERR_UNSUPPORTED) {
            tu_failures++;
            fprintf(stderr, "FAIL: probing ranker %d: %s: %s\n", r, ps_status_str(st), ps_last_error_message());
        }
        printf(" %s%s", names[r], st == PS_SUCCESS ? "" : " (unavailable)");
    }
    printf("\n");
    return n;
}

/* A context with these cache sizes (L1, L2, L3) instead of the detected
 * ones, so that the planner's cache rules decide alike on every machine;
 * threads 0 = OpenMP's default. Reports a failure itself. */
static inline ps_status tu_context_with_caches(int threads, size_t l1, size_t l2, size_t l3, ps_context **ctx)
{
    ps_context_options o;
    ps_context_options_init(&o);
    o.num_threads = threads;
    o.n_cache_sizes = 3;
    o.cache_sizes[0] = l1;
    o.cache_sizes[1] = l2;
    o.cache_sizes[2] = l3;
    const ps_status st = ps_context_create(&o, ctx);
    if (st != PS_SUCCESS)
        fprintf(stderr, "ps_context_create (caches %zu, %zu, %zu): %s: %s\n", l1, l2, l3, ps_status_str(st),
                ps_last_error_message());
    return st;
}

static inline int tu_finish(const char *test)
{
    if (tu_failures) {
        printf("%s: FAILED %d of %d checks\n", test, tu_failures, tu_checks);
        return 1;
    }
    printf("%s: all %d checks passed\n", test, tu_checks);
    return 0;
}

#ifdef PS_CONTEXT_IMPL_H
/* Tests with the library's internals: the machine model's L3 bandwidth as a
 * multiple of memory's, >= 2 fast, below slow (ps_machine_llc_slow). The
 * built-in table's row depends on the CPU, so tests of rules that follow it
 * set it. */
static inline void tu_set_l3_speed(ps_context *ctx, double times_memory)
{
    for (int i = 0; i < ctx->machine.n_levels; i++)
        if (ctx->machine.levels[i].level == 3)
            ctx->machine.levels[i].bandwidth_gbs = times_memory * ctx->machine.mem_bandwidth_gbs;
}
#endif

#endif
