/* Poly-ranking: Alg. 2 + Eq. 1 on a hand-worked example, deterministic and
 * ascending ranked lists, the measured mode's budget, and the plan cache
 * serving a second create. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/context_impl.h"
#include "polysci/polysci.h"
#include "ranking/rank.h"
#include "test_util.h"


/* Figure 4 matmul, M=4 N=5 K=6, order ijk. Its working sets (bytes) are
 * A: 60 / 144, B: 172 / 260, and C: 20 / 52 for each of RAR, RAW, WAR, WAW.
 * With private caches L1 = 64 B, L2 = 200 B, L3 = 1000 B, Alg. 2 gives
 *   L1: 60 + 4 * (20 + 52) = 348, L2: 144 + 172 = 316, L3: 260, mem: 0
 * and Eq. 1 with (lat, bw) = (1, 100), (4, 50), (20, 20), mem (100, 10):
 *   348 * 1/100 + 316 * 4/50 + 260 * 20/20 = 3.48 + 25.28 + 260 = 288.76. */
static void hand_worked(void)
{
    ps_machine m;
    memset(&m, 0, sizeof m);
    m.n_levels = 3;
    const size_t size[3] = {64, 200, 1000};
    const double lat[3] = {1, 4, 20}, bw[3] = {100, 50, 20};
    for (int l = 0; l < 3; l++)
        m.levels[l] = (ps_cache_level){.level = l + 1, .size_bytes = size[l], .line_bytes = 64, .shared_by = 1,
                                       .source = "test", .latency_ns = lat[l], .bandwidth_gbs = bw[l]};
    m.mem_latency_ns = 100;
    m.mem_bandwidth_gbs = 10;
    ps_analysis *a;
    ps_status st = ps_analysis_create_matmul(4, 5, 6, "ijk", NULL, &a);
    TU_CHECK(st == PS_SUCCESS, "analysis: %s", ps_last_error_message());
    if (st) return;
    double ws[PS_COST_LEVELS];
    ps_rank_alg2(&m, 1, a, ws);
    TU_CHECK(ws[PS_COST_L1] == 348 && ws[PS_COST_L2] == 316 && ws[PS_COST_L3] == 260 && ws[PS_COST_MEM] == 0,
          "Alg. 2 gave L1 %g L2 %g L3 %g mem %g, want 348 316 260 0", ws[0], ws[1], ws[2], ws[3]);
    double cost = ps_rank_eq1(&m, ws);
    TU_CHECK(fabs(cost - 288.76) < 1e-9, "Eq. 1 gave %.6f, want 288.76", cost);
    /* Shrink L3 below B's WSmax: 260 bytes move to memory. */
    m.levels[2].size_bytes = 200 + 1;
    ps_rank_alg2(&m, 1, a, ws);
    cost = ps_rank_eq1(&m, ws);
    TU_CHECK(ws[PS_COST_MEM] == 260 && fabs(cost - (3.48 + 25.28 + 260 * 100.0 / 10)) < 1e-9,
          "with a small L3: mem %g cost %.6f", ws[PS_COST_MEM], cost);
    ps_analysis_destroy(a);
}

static void deterministic(ps_context *ctx, ps_ranker ranker)
{
    ps_desc d;
    ps_desc_init_conv(&d);
    ps_conv_desc *c = &d.u.conv;
    c->N = 2; c->C = 128; c->K = 256; c->H = c->W = 14; c->R = c->S = 3;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 1;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.num_threads = 2;
    o.ranker = ranker;
    ps_cost_report *r1 = NULL, *r2 = NULL;
    TU_CHECK(ps_cost_query(ctx, &d, &o, &r1) == PS_SUCCESS, "cost query: %s", ps_last_error_message());
    TU_CHECK(ps_cost_query(ctx, &d, &o, &r2) == PS_SUCCESS, "cost query: %s", ps_last_error_message());
    if (!r1 || !r2) return;
    int n = ps_cost_report_size(r1);
    TU_CHECK(n > 1 && n == ps_cost_report_size(r2), "variant counts %d vs %d", n, ps_cost_report_size(r2));
    double prev = -1;
    for (int i = 0; i < n; i++) {
        ps_variant_cost a, b;
        ps_cost_report_get(r1, i, &a);
        ps_cost_report_get(r2, i, &b);
        TU_CHECK(a.rank == i + 1 && strcmp(a.schedule, b.schedule) == 0 && a.cost == b.cost,
              "rank %d differs between two identical queries", i + 1);
        TU_CHECK(a.cost >= prev, "costs not ascending at rank %d", i + 1);
        prev = a.cost;
        ps_schedule *s;
        TU_CHECK(ps_schedule_parse(PS_OP_CONV_FWD, a.schedule, &s) == PS_SUCCESS && ps_schedule_check(s, &d) == PS_SUCCESS,
              "ranked schedule '%s' is not valid", a.schedule);
        ps_schedule_destroy(s);
    }
    /* The planner's choice is the first-ranked variant. */
    ps_plan *p;
    o.flags = PS_PLAN_NO_CACHE;
    TU_CHECK(ps_plan_create(ctx, &d, &o, &p) == PS_SUCCESS, "plan: %s", ps_last_error_message());
    char text[512];
    ps_variant_cost first;
    ps_cost_report_get(r1, 0, &first);
    ps_schedule_format(ps_plan_get_schedule(p), PS_OP_CONV_FWD, text, sizeof text, NULL);
    TU_CHECK(strcmp(text, first.schedule) == 0, "planner chose '%s', rank 1 is '%s'", text, first.schedule);
    ps_plan_destroy(p);
    ps_cost_report_destroy(r1);
    ps_cost_report_destroy(r2);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The shape statistics of every ranked variant, recomputed here from the
 * schedule text alone: kernel from "MxNxK/B", the parallel band's trips by
 * walking its loops (a loop over d covers ceil(left_d / tile) iterations and
 * leaves `tile` for the loops inside), the threads' balance and the
 * reduction's extent. */
static void shape_statistics(ps_context *ctx)
{
    ps_desc d[3];
    ps_desc_init_conv(&d[0]); /* 3x3, padded */
    d[0].u.conv.N = 2; d[0].u.conv.C = 96; d[0].u.conv.K = 80; d[0].u.conv.H = d[0].u.conv.W = 13;
    d[0].u.conv.R = d[0].u.conv.S = 3;
    d[0].u.conv.pad_top = d[0].u.conv.pad_bottom = d[0].u.conv.pad_left = d[0].u.conv.pad_right = 1;
    ps_desc_init_conv(&d[1]); /* 1x1: the image is one row of H*W pixels */
    d[1].u.conv.N = 1; d[1].u.conv.C = 64; d[1].u.conv.K = 256; d[1].u.conv.H = d[1].u.conv.W = 28;
    d[1].u.conv.R = d[1].u.conv.S = 1;
    ps_desc_init_gemm(&d[2]);
    d[2].u.gemm.M = 200; d[2].u.gemm.N = 72; d[2].u.gemm.K = 300;
    for (int t = 0; t < 2; t++) {
        const int threads = t ? 3 : 1;
        for (int di = 0; di < 3; di++) {
            ps_plan_options o;
            ps_plan_options_init(&o);
            o.num_threads = threads;
            ps_cost_report *r = NULL;
            TU_CHECK(ps_cost_query(ctx, &d[di], &o, &r) == PS_SUCCESS, "cost query: %s", ps_last_error_message());
            if (!r) continue;
            int bad = 0;
            for (int i = 0; i < ps_cost_report_size(r) && !bad; i++) {
                ps_variant_cost v;
                ps_cost_report_get(r, i, &v);
                int m, n, k, b, used = 0;
                bad = sscanf(v.schedule, "%dx%dx%d/%d :%n", &m, &n, &k, &b, &used) != 4 || !used;
                if (bad) break;
                int64_t left[5]; /* n k oh ow c */
                if (di < 2) {
                    const ps_conv_desc *c = &d[di].u.conv;
                    int64_t oh = c->H + c->pad_top + c->pad_bottom - c->R + 1, ow = c->W + c->pad_left + c->pad_right - c->S + 1;
                    if (c->R == 1 && c->S == 1 && c->pad_top == 0) { ow = oh * ow; oh = 1; }
                    int64_t e[5] = {c->N, cdiv(c->K, m), oh, cdiv(ow, n), cdiv(cdiv(c->C, k), b)};
                    memcpy(left, e, sizeof e);
                } else {
                    const ps_gemm_desc *g = &d[di].u.gemm;
                    int64_t e[5] = {1, cdiv(g->M, m), 1, cdiv(g->N, n), cdiv(cdiv(g->K, k), b)};
                    memcpy(left, e, sizeof e);
                }
                const int64_t red = left[4];
                static const char *const conv_names[5] = {"n", "k", "oh", "ow", "c"};
                static const char *const gemm_names[5] = {"", "m", "", "n", "k"};
                int64_t par = 1;
                for (const char *p = v.schedule + used; *p && !bad;) {
                    char tok[32];
                    int len = 0;
                    if (sscanf(p, " %31s%n", tok, &len) != 1) break;
                    p += len;
                    char *star = strchr(tok, '*');
                    if (!star) break; /* the band ends at the first sequential loop */
                    *star = 0;
                    char *colon = strchr(tok, ':');
                    int64_t tile = colon ? strtoll(colon + 1, NULL, 10) : 1;
                    if (colon) *colon = 0;
                    int dim = -1;
                    for (int x = 0; x < 5; x++)
                        if (!strcmp(tok, di < 2 ? conv_names[x] : gemm_names[x]) && *tok) dim = x;
                    bad = dim < 0 || tile < 1;
                    if (bad) break;
                    par *= cdiv(left[dim], tile);
                    if (tile < left[dim]) left[dim] = tile;
                }
                if (bad) break;
                const double eff = (double)par / (double)(threads * cdiv(par, threads));
                const int same = v.kernel_m == m && v.kernel_n == n && v.kernel_k == k && v.kernel_batch == b &&
                                 v.parallel_iterations == par && v.parallel_efficiency == eff &&
                                 v.reduction_steps == red;
                TU_CHECK(same,
                         "desc %d, %d threads, '%s': kernel %dx%dx%d/%d, %lld parallel iterations (efficiency %g), "
                         "%lld reduction steps; from the text %lld (%g), %lld",
                         di, threads, v.schedule, v.kernel_m, v.kernel_n, v.kernel_k, v.kernel_batch,
                         v.parallel_iterations, v.parallel_efficiency, v.reduction_steps, (long long)par, eff,
                         (long long)red);
                if (!same) break; /* one report per list is enough */
            }
            TU_CHECK(!bad, "desc %d: a schedule text did not parse", di);
            ps_cost_report_destroy(r);
        }
    }
}

/* ps_rank_balance against hand-counted splits, and the static DNN choice
 * (top_k 1) never taking a split below PS_PLANNER_MIN_BALANCE (0.9) where
 * an even one exists. */
static void balance(ps_context *ctx)
{
    /* N = 3, K = 29, 102 x 102 7x7 valid: OH = OW = 96 */
    ps_desc d;
    ps_desc_init_conv(&d);
    d.u.conv.N = 3; d.u.conv.C = 15; d.u.conv.K = 29; d.u.conv.H = d.u.conv.W = 102;
    d.u.conv.R = d.u.conv.S = 7;
    ps_problem p;
    TU_CHECK(ps_problem_of(&d, &p) == PS_SUCCESS, "problem: %s", ps_last_error_message());
    static const struct {
        const char *text;
        int threads;
        double want;
    } cases[] = {
        /* 3 band iterations (n) on 2 threads: 2 and 1 images, 3 / (2 * 2) */
        {"29x96x15/1 : n* k* ow* c oh", 2, 0.75},
        {"29x96x15/1 : n* k* ow* c oh", 3, 1.0},
        {"29x96x15/1 : n* k* ow* c oh", 1, 1.0},
        /* n x oh = 288 rows, 144 each */
        {"29x96x15/1 : n* k* oh* ow* c", 2, 1.0},
        /* 3 x 5 row blocks of 32, the last of 0 rows: 15 iterations, 12 with
         * rows; 8 and 7 iterations hold 7 * 32 and 5 * 32 rows */
        {"29x96x15/1 : n* oh:32* ow* c oh k", 2, 288.0 / (2 * 160.0)},
        /* OW blocks of 80: 80 + 16 points; n* ow*: 6 iterations, a thread
         * gets (80, 16, 80) and the other (16, 80, 16) */
        {"29x80x15/1 : n* ow* k c oh", 2, 288.0 / (2 * 176.0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ps_schedule *s = NULL;
        if (ps_schedule_parse(PS_OP_CONV_FWD, cases[i].text, &s) != PS_SUCCESS) {
            TU_CHECK(0, "parse '%s': %s", cases[i].text, ps_last_error_message());
            continue;
        }
        const double got = ps_rank_balance(&p, s, cases[i].threads);
        TU_CHECK(fabs(got - cases[i].want) < 1e-12, "balance of '%s' on %d threads: %.6f, want %.6f", cases[i].text,
                 cases[i].threads, got, cases[i].want);
        ps_schedule_destroy(s);
    }
    /* the static DNN choice on 2 threads splits evenly where the ranking
     * holds an even split (the first schedule above is even on none) */
    ps_desc shapes[3] = {d, d, d};
    shapes[1].u.conv.C = 9; shapes[1].u.conv.K = 39; shapes[1].u.conv.H = shapes[1].u.conv.W = 176;
    shapes[1].u.conv.R = shapes[1].u.conv.S = 6;
    shapes[1].u.conv.pad_top = shapes[1].u.conv.pad_bottom = shapes[1].u.conv.pad_left = shapes[1].u.conv.pad_right = 2;
    shapes[2].u.conv.C = 9; shapes[2].u.conv.K = 4; shapes[2].u.conv.H = shapes[2].u.conv.W = 25;
    shapes[2].u.conv.R = shapes[2].u.conv.S = 3; shapes[2].u.conv.pad_top = shapes[2].u.conv.pad_bottom = 1;
    shapes[2].u.conv.pad_left = shapes[2].u.conv.pad_right = 1;
    for (int si = 0; si < 3; si++) {
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.num_threads = 2;
        o.ranker = PS_RANKER_DNN;
        ps_plan *plan = NULL;
        if (ps_plan_create(ctx, &shapes[si], &o, &plan) != PS_SUCCESS) {
            TU_CHECK(0, "plan %d: %s", si, ps_last_error_message());
            continue;
        }
        ps_problem q;
        ps_problem_of(&shapes[si], &q);
        char text[256];
        ps_schedule_format(ps_plan_get_schedule(plan), PS_OP_CONV_FWD, text, sizeof text, NULL);
        const double b = ps_rank_balance(&q, ps_plan_get_schedule(plan), 2);
        TU_CHECK(b >= 0.9, "shape %d: the static DNN choice '%s' splits at balance %.3f", si, text, b);
        ps_plan_destroy(plan);
    }
}

/* Plans desc in the measured mode (top_k 8 under budget_ms) with PS_VERBOSE
 * lines captured; returns whether a candidate was timed and whether the plan
 * was noted untimed, and the schedule in text. */
static void measured_plan(const ps_desc *desc, double budget_ms, int *timed, int *untimed, char *text, size_t len)
{
    *timed = *untimed = 0;
    text[0] = 0;
    char path[] = "/tmp/ps_test_verbose_XXXXXX";
    const int fd = mkstemp(path);
    TU_CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    setenv("PS_VERBOSE", "1", 1);
    ps_context *ctx = NULL;
    const ps_status cst = ps_context_create(NULL, &ctx);
    unsetenv("PS_VERBOSE");
    fflush(stderr);
    const int saved = dup(2);
    dup2(fd, 2);
    ps_plan *plan = NULL;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.num_threads = 2;
    o.top_k = 8;
    o.time_budget_ms = budget_ms;
    const ps_status st = cst ? cst : ps_plan_create(ctx, desc, &o, &plan);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    TU_CHECK(st == PS_SUCCESS, "measured plan: %s", ps_last_error_message());
    if (plan) ps_schedule_format(ps_plan_get_schedule(plan), desc->kind, text, len, NULL);
    ps_plan_destroy(plan);
    ps_context_destroy(ctx);
    FILE *f = fopen(path, "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        *timed |= strncmp(line, "polysci_verbose,timed,", 22) == 0;
        *untimed |= strncmp(line, "polysci_verbose,untimed,", 24) == 0;
    }
    if (f) fclose(f);
    close(fd);
    unlink(path);
}

/* The measured mode under a budget times nothing where one run of the layer
 * at the cores' peak would not fit twice in it, and then plans what the
 * static default plans; a layer of microseconds is timed. */
static void measured_budget(ps_context *ctx)
{
    ps_desc heavy[2], light;
    for (int i = 0; i < 2; i++) { /* 3.7 GFLOP per image: ms at any core count's peak */
        ps_desc_init_conv(&heavy[i]);
        heavy[i].u.conv.N = 1 + i;
        heavy[i].u.conv.C = heavy[i].u.conv.K = 256;
        heavy[i].u.conv.H = heavy[i].u.conv.W = 58;
        heavy[i].u.conv.R = heavy[i].u.conv.S = 3;
    }
    ps_desc_init_conv(&light);
    light.u.conv.N = 2; light.u.conv.C = 16; light.u.conv.K = 32; light.u.conv.H = light.u.conv.W = 10;
    light.u.conv.R = light.u.conv.S = 1;
    for (int i = 0; i < 2; i++) {
        int timed, untimed;
        char got[256], want[256] = "";
        measured_plan(&heavy[i], 1.0, &timed, &untimed, got, sizeof got);
        TU_CHECK(!timed && untimed, "N = %d, budget 1 ms: %s%s", i + 1, timed ? "candidates timed" : "",
                 untimed ? "" : " no untimed note");
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.num_threads = 2;
        ps_plan *plan = NULL;
        if (ps_plan_create(ctx, &heavy[i], &o, &plan) == PS_SUCCESS)
            ps_schedule_format(ps_plan_get_schedule(plan), PS_OP_CONV_FWD, want, sizeof want, NULL);
        ps_plan_destroy(plan);
        TU_CHECK(want[0] && !strcmp(got, want), "N = %d untimed: '%s', the static default '%s'", i + 1, got, want);
    }
    int timed, untimed;
    char got[256];
    measured_plan(&light, 50.0, &timed, &untimed, got, sizeof got);
    TU_CHECK(timed && !untimed, "a layer of microseconds under 50 ms: %s%s", timed ? "" : "nothing timed",
             untimed ? ", noted untimed" : "");
}

static void cache(ps_context *ctx)
{
    ps_desc d;
    ps_desc_init_gemm(&d);
    d.u.gemm.M = 96; d.u.gemm.N = 80; d.u.gemm.K = 300;
    ps_context_forget_plans(ctx);
    ps_plan *p1, *p2;
    TU_CHECK(ps_plan_create(ctx, &d, NULL, &p1) == PS_SUCCESS, "plan: %s", ps_last_error_message());
    TU_CHECK(ps_context_cached_plans(ctx) == 1, "cache holds %d plans after one create", ps_context_cached_plans(ctx));
    TU_CHECK(ps_plan_create(ctx, &d, NULL, &p2) == PS_SUCCESS, "plan: %s", ps_last_error_message());
    TU_CHECK(ps_context_cached_plans(ctx) == 1, "second create of the same layer added an entry");
    char a[512], b[512];
    ps_schedule_format(ps_plan_get_schedule(p1), PS_OP_GEMM, a, sizeof a, NULL);
    ps_schedule_format(ps_plan_get_schedule(p2), PS_OP_GEMM, b, sizeof b, NULL);
    TU_CHECK(strcmp(a, b) == 0, "cached plan runs '%s', first ran '%s'", b, a);
    ps_plan_destroy(p1);
    ps_plan_destroy(p2);

    /* A create that fails after planning (here: the memory limit) must not
     * leave its schedule in the cache (found by the fuzzer). */
    ps_context_options co;
    ps_context_options_init(&co);
    co.memory_limit = 64;
    ps_context *small;
    TU_CHECK(ps_context_create(&co, &small) == PS_SUCCESS, "context: %s", ps_last_error_message());
    if (small) {
        ps_plan *p3 = NULL;
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.ranker = PS_RANKER_COST;
        TU_CHECK(ps_plan_create(small, &d, &o, &p3) == PS_ERR_OUT_OF_MEMORY && !p3, "memory limit not enforced");
        TU_CHECK(ps_context_cached_plans(small) == 0, "a failed create left %d plans in the cache",
              ps_context_cached_plans(small));
        ps_context_destroy(small);
    }
}

/* Cache sizes given through the API replace detection. */
static void api_caches(void)
{
    ps_context_options o;
    ps_context_options_init(&o);
    o.n_cache_sizes = 3;
    o.cache_sizes[0] = 32 << 10; o.cache_sizes[1] = 512 << 10; o.cache_sizes[2] = 8 << 20;
    ps_context *ctx;
    TU_CHECK(ps_context_create(&o, &ctx) == PS_SUCCESS, "context with API caches: %s", ps_last_error_message());
    if (ctx) {
        TU_CHECK(ctx->machine.n_levels == 3 && ctx->machine.levels[0].size_bytes == (32 << 10) &&
                  ctx->machine.levels[2].size_bytes == (8 << 20) && strcmp(ctx->machine.levels[1].source, "api") == 0,
              "API cache override not applied (levels %d, L1 %zu, source %s)", ctx->machine.n_levels,
              ctx->machine.levels[0].size_bytes, ctx->machine.levels[1].source);
        ps_context_destroy(ctx);
    }
    o.cache_sizes[1] = 16; /* smaller than L1: rejected */
    ctx = NULL;
    TU_CHECK(ps_context_create(&o, &ctx) != PS_SUCCESS && ctx == NULL, "implausible API cache sizes accepted");
    o.n_cache_sizes = 5;
    TU_CHECK(ps_context_create(&o, &ctx) == PS_ERR_INVALID_ARG, "n_cache_sizes 5 accepted");
}

int main(void)
{
    ps_context *ctx;
    if (ps_context_create(NULL, &ctx) != PS_SUCCESS) {
        printf("context: %s\n", ps_last_error_message());
        return 1;
    }
    hand_worked();
    deterministic(ctx, PS_RANKER_COST);
    deterministic(ctx, PS_RANKER_VOLUME);
    shape_statistics(ctx);
    balance(ctx);
    measured_budget(ctx);
    cache(ctx);
    ps_context_destroy(ctx);
    api_caches();
    printf("test_ranking: %s (%d checks)\n", tu_failures ? "FAILED" : "all checks passed", tu_checks);
    return tu_failures != 0;
}
