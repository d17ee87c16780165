/* Allocation-failure injection.
 *
 * The library is linked from a copy of its sources compiled with
 * alloc_shim.h force-included (see CMakeLists.txt), so every malloc, calloc,
 * realloc, aligned_alloc, posix_memalign, strdup and free polysci makes is
 * counted. Two scenarios cover the API: "context" (ps_context_create, a GEMM,
 * destroy) and "api" (on one shared context: schedules, conv and GEMM plans
 * with the planner ranking (Eq. 1, volumes, the DNN tournament) and timing
 * variants, plan-cache hits, packing, execution with and without a caller
 * workspace, cost queries (Eq. 1 and DNN), wisdom
 * export/import from file and memory). Each is run once to count its
 * allocations, then again for N = 1, 2, ... with the Nth allocation failing,
 * until a run makes fewer than N allocations (nothing left to fail). Each run
 * checks:
 *   - every call either succeeds (and then produces correct results: a failed
 *     allocation may be absorbed, e.g. a cache lookup that misses) or returns
 *     an error status with a non-empty message of its own; output pointers of
 *     failed create calls are NULL; a failed execute writes nothing;
 *   - the failure is reported as PS_ERR_OUT_OF_MEMORY (any other status is
 *     listed and fails the test unless PS_FAULT_ALLOW_OTHER=1);
 *   - after everything is destroyed, no block the library allocated is left
 *     (leaks are attributed to the failing N and the allocation site).
 * Then the same with "sticky" failures (every allocation from N on fails).
 *
 * Environment: PS_FAULT_MAX (cap on N per mode, default: all),
 * PS_FAULT_STRIDE (test every k-th N only, default 1), PS_FAULT_VERBOSE=1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_shim_ctl.h"
#include "polysci/polysci.h"
#include "reference.h"

static int failures;
static int verbose;
static int allow_other;
static long cur_n;
static int cur_sticky;
static char wisdom_path[256];

/* Statuses returned under injection, for the summary. */
static long status_count[16];

#define FAIL(...)                                                                            \
    do {                                                                                     \
        failures++;                                                                          \
        fprintf(stderr, "FAIL (N=%ld%s, %s:%d): ", cur_n, cur_sticky ? " sticky" : "", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                                        \
        fprintf(stderr, "\n");                                                               \
    } while (0)

static void print_site(const char *what, void *site)
{
    Dl_info info;
    if (site && dladdr(site, &info) && info.dli_fname) {
        fprintf(stderr, "  %s: %s+0x%lx (%s)\n", what, info.dli_sname ? info.dli_sname : "?",
                (unsigned long)((char *)site - (char *)(info.dli_saddr ? info.dli_saddr : info.dli_fbase)),
                info.dli_fname);
        fprintf(stderr, "    addr2line -f -e %s 0x%lx\n", info.dli_fname,
                (unsigned long)((char *)site - (char *)info.dli_fbase));
    } else {
        fprintf(stderr, "  %s: %p\n", what, site);
    }
}

static void show_live(void *block, size_t size, void *site)
{
    char what[96];
    snprintf(what, sizeof what, "live block %p (%zu bytes) allocated at", block, size);
    print_site(what, site);
}

/* Checks the outcome of one API call under injection. Returns 1 if it
 * succeeded. */
static int outcome(ps_status st, const char *call)
{
    if (st == PS_SUCCESS) return 1;
    if ((int)st >= 0 && (int)st < 16) status_count[st]++;
    const char *m = ps_last_error_message();
    if (verbose) fprintf(stderr, "  N=%ld: %s -> %s: %s\n", cur_n, call, ps_status_str(st), m);
    if (!m || !m[0]) FAIL("%s -> %s with an empty message", call, ps_status_str(st));
    if (strstr(m, "@@fault-primer@@")) FAIL("%s -> %s but set no message of its own", call, ps_status_str(st));
    if (ps_fault_failed() == 0) {
        FAIL("%s -> %s although no allocation was failed: %s", call, ps_status_str(st), m);
    } else if (st != PS_ERR_OUT_OF_MEMORY && !allow_other) {
        FAIL("%s -> %s (want PS_ERR_OUT_OF_MEMORY): %s", call, ps_status_str(st), m);
        print_site("failed allocation", ps_fault_site(cur_n));
    }
    return 0;
}

static void prime(void)
{
    ps_schedule *s = NULL;
    (void)ps_schedule_parse(PS_OP_GEMM, "@@fault-primer@@", &s);
}

/* Deterministic operand data. */
static uint64_t rng = 1;
static float rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static float sentinel(void)
{
    uint32_t u = 0x7fa5a5a5u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---------------------------------------------------------------- operations */

static void conv_desc(ps_desc *d)
{
    ps_desc_init_conv(d);
    ps_conv_desc *c = &d->u.conv;
    c->N = 2; c->C = 24; c->K = 40; c->H = 9; c->W = 11; c->R = 3; c->S = 3;
    c->stride_h = 1; c->stride_w = 2;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 1;
    c->layout = PS_LAYOUT_NCHW; /* needs a workspace */
    c->weight_layout = PS_WEIGHTS_KRSC;
    c->post_ops = PS_POST_BIAS | PS_POST_RELU;
}

static void gemm_desc(ps_desc *d)
{
    ps_desc_init_gemm(d);
    ps_gemm_desc *g = &d->u.gemm;
    g->M = 70; g->N = 33; g->K = 90;
    g->order = PS_ROW_MAJOR;
    g->trans_a = 1; /* packed into the workspace */
    g->alpha = 0.5f;
    g->beta = 2.0f;
}

/* Plans (when it can), packs and runs a conv; checks results. */
static void do_conv(ps_context *ctx, ps_ranker ranker, int top_k, int own_workspace)
{
    ps_desc d;
    conv_desc(&d);
    const ps_conv_desc *c = &d.u.conv;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = ranker;
    o.top_k = top_k;
    ps_plan *p = (ps_plan *)&d;
    prime();
    if (!outcome(ps_plan_create(ctx, &d, &o, &p), "ps_plan_create(conv)")) {
        if (p) FAIL("failed ps_plan_create left *plan = %p", (void *)p);
        return;
    }
    int64_t OH, OW;
    ps_conv_output_size(&d, &OH, &OW);
    const int64_t ns = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S, nd = c->N * c->K * OH * OW;
    size_t pb = 0, wb = 0;
    ps_plan_packed_weights_size(p, &pb);
    ps_plan_workspace_size(p, &wb);
    float *src = malloc((size_t)ns * 4), *w = malloc((size_t)nw * 4), *bias = malloc((size_t)c->K * 4),
          *dst = malloc((size_t)nd * 4);
    double *ref = malloc((size_t)nd * 8), *mag = malloc((size_t)nd * 8);
    void *packed = aligned_alloc(64, (pb + 63) / 64 * 64), *ws = own_workspace ? malloc(wb) : NULL;
    if (!src || !w || !bias || !dst || !ref || !mag || !packed || (own_workspace && !ws)) abort();
    rng = 42;
    for (int64_t i = 0; i < ns; i++) src[i] = rnd();
    for (int64_t i = 0; i < nw; i++) w[i] = rnd();
    for (int64_t i = 0; i < c->K; i++) bias[i] = rnd();
    for (int64_t i = 0; i < nd; i++) dst[i] = sentinel();
    prime();
    if (outcome(ps_plan_pack_weights(p, w, packed), "ps_plan_pack_weights")) {
        ps_exec_args a;
        ps_exec_args_init(&a);
        a.src = src;
        a.weights = packed;
        a.bias = bias;
        a.dst = dst;
        a.workspace = ws;
        prime();
        if (outcome(ps_plan_execute(p, &a), "ps_plan_execute(conv)")) {
            int64_t L;
            ref_conv_fwd(c, src, w, bias, ref, mag, &L);
            ref_cmp cmp;
            ref_compare(dst, ref, mag, nd, L, &cmp);
            if (cmp.n_bad) FAIL("conv: %" PRId64 " wrong outputs after a successful execute", cmp.n_bad);
        } else {
            const float s = sentinel();
            for (int64_t i = 0; i < nd; i++)
                if (memcmp(&dst[i], &s, 4)) {
                    FAIL("a failed conv execute wrote dst[%" PRId64 "]", i);
                    break;
                }
        }
    }
    char text[4096];
    prime();
    outcome(ps_plan_describe(p, text, sizeof text, NULL), "ps_plan_describe");
    ps_plan_destroy(p);
    free(src); free(w); free(bias); free(dst); free(ref); free(mag); free(packed); free(ws);
}

static void do_gemm(ps_context *ctx, ps_ranker ranker, int top_k, int own_workspace, const ps_schedule *sched)
{
    ps_desc d;
    gemm_desc(&d);
    const ps_gemm_desc *g = &d.u.gemm;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = ranker;
    o.top_k = top_k;
    o.schedule = sched;
    ps_plan *p = (ps_plan *)&d;
    prime();
    if (!outcome(ps_plan_create(ctx, &d, &o, &p), "ps_plan_create(gemm)")) {
        if (p) FAIL("failed ps_plan_create left *plan = %p", (void *)p);
        return;
    }
    const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a')),
                  nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b')),
                  nc = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
    size_t wb = 0;
    ps_plan_workspace_size(p, &wb);
    float *A = malloc((size_t)na * 4), *B = malloc((size_t)nb * 4), *C = malloc((size_t)nc * 4),
          *C0 = malloc((size_t)nc * 4), *got = malloc((size_t)(g->M * g->N) * 4);
    double *ref = malloc((size_t)(g->M * g->N) * 8), *mag = malloc((size_t)(g->M * g->N) * 8);
    void *ws = own_workspace ? malloc(wb + 3) : NULL;
    if (!A || !B || !C || !C0 || !got || !ref || !mag || (own_workspace && !ws)) abort();
    rng = 7;
    for (int64_t i = 0; i < na; i++) A[i] = rnd();
    for (int64_t i = 0; i < nb; i++) B[i] = rnd();
    for (int64_t i = 0; i < nc; i++) C[i] = rnd();
    memcpy(C0, C, (size_t)nc * 4);
    ps_exec_args a;
    ps_exec_args_init(&a);
    a.a = A;
    a.b = B;
    a.c = C;
    a.workspace = ws ? (char *)ws + 3 : NULL; /* any alignment */
    prime();
    if (outcome(ps_plan_execute(p, &a), "ps_plan_execute(gemm)")) {
        int64_t L;
        ref_gemm(g, A, B, C0, ref, mag, &L);
        for (int64_t j = 0; j < g->N; j++)
            for (int64_t i = 0; i < g->M; i++) got[i + j * g->M] = C[ref_gemm_index(g, 'c', i, j)];
        ref_cmp cmp;
        ref_compare(got, ref, mag, g->M * g->N, L, &cmp);
        if (cmp.n_bad) FAIL("gemm: %" PRId64 " wrong outputs after a successful execute", cmp.n_bad);
    } else if (memcmp(C, C0, (size_t)nc * 4)) {
        FAIL("a failed gemm execute modified C");
    }
    ps_plan_destroy(p);
    free(A); free(B); free(C); free(C0); free(got); free(ref); free(mag); free(ws);
}

static void do_wisdom(ps_context *ctx)
{
    const int before = ps_context_cached_plans(ctx);
    prime();
    if (!outcome(ps_wisdom_export(ctx, wisdom_path), "ps_wisdom_export")) return;
    /* Back from the file, then from memory, each into the emptied cache. */
    ps_context_forget_plans(ctx);
    int n = -1;
    prime();
    if (outcome(ps_wisdom_import(ctx, wisdom_path, &n), "ps_wisdom_import")) {
        if (n != before) FAIL("wisdom round trip: %d plans exported, %d imported", before, n);
    } else if (n != 0 || ps_context_cached_plans(ctx) != 0) {
        FAIL("failed import: n_imported %d, cache %d (want 0, 0)", n, ps_context_cached_plans(ctx));
    }
    FILE *f = fopen(wisdom_path, "rb");
    if (!f) {
        FAIL("exported wisdom %s cannot be opened", wisdom_path);
        return;
    }
    static char buf[1 << 16];
    const size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ps_context_forget_plans(ctx);
    n = -1;
    prime();
    if (outcome(ps_wisdom_import_buffer(ctx, buf, len, &n), "ps_wisdom_import_buffer")) {
        if (n != before) FAIL("wisdom from memory: %d plans exported, %d imported", before, n);
    } else if (ps_context_cached_plans(ctx) != 0) {
        FAIL("failed import changed the (empty) cache to %d plans", ps_context_cached_plans(ctx));
    }
}

static void do_cost_query(ps_context *ctx, ps_ranker ranker)
{
    ps_desc d;
    gemm_desc(&d);
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = ranker;
    ps_cost_report *r = (ps_cost_report *)&d;
    prime();
    if (!outcome(ps_cost_query(ctx, &d, &o, &r), "ps_cost_query")) {
        if (r) FAIL("failed ps_cost_query left *out non-NULL");
        return;
    }
    char json[512];
    prime();
    const ps_status st = ps_cost_report_to_json(r, 2, json, sizeof json, NULL);
    if (st != PS_ERR_BUFFER_TOO_SMALL) outcome(st, "ps_cost_report_to_json");
    ps_cost_report_destroy(r);
}

/* Context creation on its own: creating a context reads the machine
 * (hwloc), tens of ms, so the rest of the scenario uses one shared context. */
static void scenario_context(void)
{
    ps_context_options co;
    ps_context_options_init(&co);
    co.num_threads = 2;
    ps_context *ctx = (ps_context *)&co;
    prime();
    if (!outcome(ps_context_create(&co, &ctx), "ps_context_create")) {
        if (ctx) FAIL("failed ps_context_create left *ctx non-NULL");
        return;
    }
    do_gemm(ctx, PS_RANKER_NONE, 1, 0, NULL);
    ps_context_destroy(ctx);
}

static ps_context *shared_ctx;
static double now_s(void);
#define PHASE(call)                                                                       \
    do {                                                                                  \
        const double t_ = now_s();                                                        \
        call;                                                                             \
        if (verbose > 1) fprintf(stderr, "  %-50s %8.2f ms\n", #call, (now_s() - t_) * 1e3); \
    } while (0)

/* Everything else; all it creates is destroyed (and the shared context's
 * plan cache emptied) before it returns. */
static void scenario_api(void)
{
    ps_context *ctx = shared_ctx;
    /* Schedules. */
    ps_schedule *s = (ps_schedule *)&ctx;
    prime();
    if (outcome(ps_schedule_parse(PS_OP_GEMM, "64x24x64/2 : n* m k", &s), "ps_schedule_parse")) {
        ps_schedule *c = ps_schedule_copy(s);
        ps_schedule_destroy(c);
    } else if (s) {
        FAIL("failed ps_schedule_parse left *out non-NULL");
    }
    ps_desc gd;
    gemm_desc(&gd);
    ps_schedule *def = (ps_schedule *)&ctx;
    prime();
    if (!outcome(ps_schedule_default(&gd, &def), "ps_schedule_default") && def) FAIL("failed ps_schedule_default left *out");

    PHASE(do_conv(ctx, PS_RANKER_COST, 2, 0));   /* ranking + timing, own workspace allocation */
    PHASE(do_conv(ctx, PS_RANKER_COST, 2, 1));   /* plan-cache hit, caller's workspace */
    PHASE(do_conv(ctx, PS_RANKER_DNN, 2, 0));    /* ranking, tournament, timing */
    PHASE(do_gemm(ctx, PS_RANKER_VOLUME, 1, 0, NULL));
    PHASE(do_gemm(ctx, PS_RANKER_NONE, 1, 1, NULL));
    if (s) do_gemm(ctx, PS_RANKER_DEFAULT, 1, 0, s); /* the user's schedule */
    PHASE(do_cost_query(ctx, PS_RANKER_DEFAULT));
    PHASE(do_cost_query(ctx, PS_RANKER_DNN));
    PHASE(do_wisdom(ctx));
    ps_schedule_destroy(s);
    ps_schedule_destroy(def);
    ps_context_forget_plans(ctx);
}

/* Runs the scenario with injection armed at n; returns the calls made. */
static long run_at(void (*scenario)(void), long n, int sticky, int check_leaks)
{
    cur_n = n;
    cur_sticky = sticky;
    const long live0 = ps_fault_live();
    ps_fault_arm(n, sticky);
    scenario();
    const long calls = ps_fault_calls();
    ps_fault_arm(0, 0);
    const long leaked = ps_fault_live() - live0;
    if (leaked && check_leaks) {
        FAIL("%ld blocks (%zu bytes live in all) not freed", leaked, ps_fault_live_bytes());
        print_site("the failed allocation", n > 0 ? ps_fault_site(n) : NULL);
        ps_fault_dump_live(5, show_live);
    }
    return calls;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    setenv("PS_CALIBRATE", "0", 0);
    verbose = getenv("PS_FAULT_VERBOSE") ? atoi(getenv("PS_FAULT_VERBOSE")) : 0;
    allow_other = getenv("PS_FAULT_ALLOW_OTHER") && atoi(getenv("PS_FAULT_ALLOW_OTHER"));
    const long max_n = getenv("PS_FAULT_MAX") ? atol(getenv("PS_FAULT_MAX")) : 0;
    long stride = getenv("PS_FAULT_STRIDE") ? atol(getenv("PS_FAULT_STRIDE")) : 1;
    if (stride < 1) stride = 1;
    snprintf(wisdom_path, sizeof wisdom_path, "%s/polysci-fault-%d.wisdom",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());

    /* One thread: on a loaded machine OpenMP barriers would dominate the
     * run time; threading is not what this test is about. */
    ps_context_options so;
    ps_context_options_init(&so);
    so.num_threads = 1;
    if (ps_context_create(&so, &shared_ctx)) {
        printf("test_alloc_failures: cannot create a context: %s\n", ps_last_error_message());
        return 1;
    }
    static const struct {
        const char *name;
        void (*fn)(void);
    } scen[] = {{"context", scenario_context}, {"api", scenario_api}};
    for (int k = 0; k < 2; k++) {
        /* Warm-up: process-wide lazy state (OpenMP, LIBXSMM registry) settles. */
        const long warm = run_at(scen[k].fn, 0, 0, 0);
        const double t0 = now_s();
        const long total = run_at(scen[k].fn, 0, 0, 1);
        const double t_run = now_s() - t0;
        printf("test_alloc_failures: scenario %s makes %ld allocation calls (%ld in the first run), %.1f ms per run\n",
               scen[k].name, total, warm, t_run * 1e3);
        if (failures) {
            printf("test_alloc_failures: FAILED without any injection\n");
            return 1;
        }
        for (int sticky = 0; sticky < 2; sticky++) {
            long runs = 0;
            const double t1 = now_s();
            for (long n = 1;; n += stride) {
                if (max_n && n > max_n) break;
                const long calls = run_at(scen[k].fn, n, sticky, 1);
                runs++;
                if (calls < n) break; /* nothing was left to fail: the run completed */
                if (failures > 50) {
                    printf("test_alloc_failures: too many failures, stopping\n");
                    return 1;
                }
            }
            printf("test_alloc_failures: scenario %s, %s failures: %ld runs in %.1f s\n", scen[k].name,
                   sticky ? "sticky" : "one-shot", runs, now_s() - t1);
        }
    }
    ps_context_destroy(shared_ctx);
    printf("test_alloc_failures: statuses under injection:");
    for (int s = 1; s < 16; s++)
        if (status_count[s]) printf(" %s x%ld", ps_status_str((ps_status)s), status_count[s]);
    printf("\n");
    unlink(wisdom_path);
    if (failures) {
        printf("test_alloc_failures: FAILED %d checks\n", failures);
        return 1;
    }
    printf("test_alloc_failures: passed\n");
    return 0;
}
