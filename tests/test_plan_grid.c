/* Every valid descriptor plans: no rule or ranker may hand the planner a
 * schedule its own check rejects (one-row oh tiles on a slow last level are the trap).
 *
 * Under each machine model whose predicates the expert rules read (a fast
 * and a slow last level, small and large L2, a small L1, no L3, no L2:
 * cache sizes and the L3's bandwidth set through the context, as
 * ps_context_options.cache_sizes and a calibration would), on 1 and 2
 * threads:
 *  - a dense grid of conv shapes: C and K over 21 sizes (1 ... 2048 and odd
 *    ones), 1x1, 3x3, 5x5, 7x7, 1x7, 7x1 filters, strides 1-3, valid and
 *    same padding, H = W swept over 1-300 and at the usual sizes, N 1-8;
 *    at least 50,000 distinct valid shapes per machine;
 *  - 74,088 GEMMs: M, N, K over the same sizes, both orders, transposes;
 *  - a few extreme shapes (rows wider than a kernel may be, large strides,
 *    dilation, one-pixel images).
 * Each is planned without building the executor: the planner's choice for
 * the default options (ps_planner_choose, which checks every candidate) and
 * the expert schedule itself must both pass ps_schedule_check, and no
 * candidate may be refused (a refusal means a rule proposed an invalid
 * schedule and the planner fell back). Where the default options would rank
 * with the DNN (convs of N >= 2 images on a fast last level), the expert
 * path is planned for every shape and the DNN's on a deterministic sample.
 * Then for every machine and every rule that applied on it, the cheapest
 * few shapes where it applied are planned in full (ps_plan_create: LIBXSMM
 * kernels) and executed against the double-precision reference, so every
 * rule's schedules run under the predicates that choose them; and issue
 * 48's three layers are planned in full. Prints counts, the rules' tallies
 * and the time per phase.
 *
 * Under AddressSanitizer (the suite's second run, which looks for memory
 * errors, not for rules that misfire) every allocation and access costs
 * several times more (a DNN ranking about a second): there the grids are
 * strided (every 7th shape), the DNN sample is thinner, one shape per rule
 * and machine runs, and the extreme shapes plan with the expert only. PS_TEST_GRID_STRIDE=S sets the stride either way; the bound of
 * 50,000 shapes per machine is checked on the whole grid (stride 1). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "descriptors/shape.h"
#include "expert/expert.h"
#include "plan/context_impl.h"
#include "ranking/planner.h"
#include "reference.h"
#include "test_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ machines */

typedef struct machine_case {
    const char *name;
    int n_levels;
    size_t caches[3];
    double l3_speed; /* the L3's bandwidth in memory's: >= 2 fast, < 2 slow (ps_machine_llc_slow) */
} machine_case;

#define K_ (1u << 10)
#define M_ (1u << 20)
static const machine_case machines[] = {
    {"fast L3 32M, L2 1M, L1 48K", 3, {48 * K_, 1 * M_, 32 * M_}, 3.0},
    {"slow L3 32M, L2 2M, L1 48K", 3, {48 * K_, 2 * M_, 32 * M_}, 1.0},
    {"fast L3 32M, L2 2M, L1 48K", 3, {48 * K_, 2 * M_, 32 * M_}, 3.0},
    {"slow L3 16M, L2 1M, L1 32K", 3, {32 * K_, 1 * M_, 16 * M_}, 1.0},
    {"slow L3 8M, L2 256K, L1 32K", 3, {32 * K_, 256 * K_, 8 * M_}, 1.0},
    {"slow L3 1M, L2 128K, L1 16K", 3, {16 * K_, 128 * K_, 1 * M_}, 1.0},
    {"fast L3 1M, L2 128K, L1 16K", 3, {16 * K_, 128 * K_, 1 * M_}, 3.0},
    {"no L3: L2 1M, L1 32K", 2, {32 * K_, 1 * M_, 0}, 0},
    {"no L2: L1 48K", 1, {48 * K_, 0, 0}, 0},
};
#define N_MACHINES ((int)(sizeof machines / sizeof machines[0]))

static ps_context *machine_context(const machine_case *mc)
{
    ps_context_options o;
    ps_context_options_init(&o);
    o.num_threads = 2;
    o.n_cache_sizes = mc->n_levels;
    for (int i = 0; i < mc->n_levels; i++) o.cache_sizes[i] = mc->caches[i];
    ps_context *ctx = NULL;
    if (ps_context_create(&o, &ctx) != PS_SUCCESS) {
        fprintf(stderr, "FAIL: context for %s: %s\n", mc->name, ps_last_error_message());
        tu_failures++;
        return NULL;
    }
    if (mc->l3_speed > 0) tu_set_l3_speed(ctx, mc->l3_speed);
    const int slow = mc->l3_speed > 0 && mc->l3_speed < 2;
    TU_CHECK(ps_machine_llc_slow(&ctx->machine) == slow, "%s: the machine model's last level is %s", mc->name,
             slow ? "fast" : "slow");
    return ctx;
}

/* ------------------------------------------------------------ the grids */

static const int64_t sizes[] = {1, 3, 16, 24, 32, 64, 96, 128, 192, 256, 384, 512, 1024, 2048,
                                5, 17, 100, 200, 350, 375, 1000};
#define N_SIZES ((int64_t)(sizeof sizes / sizeof sizes[0]))
static const int64_t filters[][2] = {{1, 1}, {3, 3}, {5, 5}, {7, 7}, {1, 7}, {7, 1}};
#define N_FILTERS 6
/* Image sizes: four per (C, K, filter, stride, padding) swept over 1-300 in
 * steps of 37 (mod 300: every size in turn), and the sizes of the usual
 * layer sets. */
static const int64_t usual_hw[] = {7, 13, 14, 27, 28, 55, 56, 112, 224, 227, 300};
#define N_USUAL ((int64_t)(sizeof usual_hw / sizeof usual_hw[0]))
#define N_SWEEP 4
#define HW_SLOTS (N_SWEEP + N_USUAL)
#define CONV_GRID (N_SIZES * N_SIZES * N_FILTERS * 3 * 2 * HW_SLOTS)

/* Conv i of the grid; 0 where that slot has no shape (a swept size equal to
 * a usual one) or the shape is not valid (a filter larger than the padded
 * image). */
static int conv_grid(int64_t i, ps_desc *d)
{
    const int64_t slot = i % HW_SLOTS, combo = i / HW_SLOTS;
    int64_t x = combo;
    const int pad = (int)(x % 2);
    x /= 2;
    const int64_t stride = 1 + x % 3;
    x /= 3;
    const int f = (int)(x % N_FILTERS);
    x /= N_FILTERS;
    const int64_t K = sizes[x % N_SIZES], C = sizes[x / N_SIZES];
    int64_t hw;
    if (slot < N_SWEEP) {
        hw = 1 + (combo * N_SWEEP + slot) * 37 % 300;
        for (int64_t u = 0; u < N_USUAL; u++)
            if (usual_hw[u] == hw) return 0;
    } else {
        hw = usual_hw[slot - N_SWEEP];
    }
    ps_desc_init_conv(d);
    ps_conv_desc *c = &d->u.conv;
    c->N = 1 + (combo * HW_SLOTS + slot) % 8;
    c->C = C;
    c->K = K;
    c->H = c->W = hw;
    c->R = filters[f][0];
    c->S = filters[f][1];
    c->stride_h = c->stride_w = stride;
    if (pad) {
        c->pad_top = c->pad_bottom = (c->R - 1) / 2;
        c->pad_left = c->pad_right = (c->S - 1) / 2;
    }
    return ps_desc_validate(d) == PS_SUCCESS;
}

#define GEMM_GRID (N_SIZES * N_SIZES * N_SIZES * 2 * 4)

static void gemm_grid(int64_t i, ps_desc *d)
{
    ps_desc_init_gemm(d);
    ps_gemm_desc *g = &d->u.gemm;
    int64_t x = i;
    g->trans_a = (int)(x % 2);
    g->trans_b = (int)(x / 2 % 2);
    x /= 4;
    g->order = x % 2 ? PS_ROW_MAJOR : PS_COL_MAJOR;
    x /= 2;
    g->M = sizes[x % N_SIZES];
    g->N = sizes[x / N_SIZES % N_SIZES];
    g->K = sizes[x / (N_SIZES * N_SIZES)];
    g->alpha = i % 5 == 0 ? 0.5f : 1.0f;
    g->beta = i % 3 == 0 ? 1.0f : 0.0f;
}

/* Shapes at the edges of what the rules assume. */
static int extreme_shapes(ps_desc *out)
{
    static const int64_t v[][12] = {
        /* N, C, K, H, W, R, S, sh, sw, pad h, pad w, dilation */
        {1, 3, 64, 8, 1055, 7, 7, 1, 1, 0, 0, 1},      /* merged taps, a 1049-column row (kernels <= 1024) */
        {2, 3, 64, 9, 2100, 11, 11, 1, 1, 5, 5, 1},    /* ... 11 tap phases */
        {1, 16, 512, 3, 4000, 3, 3, 1, 1, 1, 1, 1},    /* a very wide row */
        {1, 64, 64, 1, 1, 1, 1, 1, 1, 0, 0, 1},        /* one pixel */
        {8, 2048, 2048, 1, 1, 3, 3, 1, 1, 1, 1, 1},    /* one pixel, only the centre tap */
        {1, 3, 96, 227, 227, 11, 11, 4, 4, 0, 0, 1},   /* AlexNet's first layer */
        {2, 256, 256, 21, 64, 2, 2, 3, 1, 0, 0, 1},    /* one-row oh tile on a slow last level */
        {1, 350, 375, 5, 150, 2, 1, 1, 1, 0, 0, 1},    /* one-row oh tile on a slow last level */
        {1, 256, 256, 224, 224, 3, 3, 2, 2, 1, 1, 1},  /* one-row oh tile on a slow last level */
        {2, 512, 512, 64, 64, 3, 3, 1, 1, 2, 2, 2},    /* dilated */
        {1, 1000, 1000, 300, 300, 7, 7, 3, 3, 3, 3, 1},
        {4, 17, 5, 299, 1, 7, 1, 2, 1, 3, 0, 1},       /* one column */
        {3, 2048, 3, 7, 7, 1, 1, 2, 2, 0, 0, 1},       /* strided 1x1, few outputs */
        {2, 64, 1024, 7, 7, 1, 1, 3, 3, 0, 0, 1},      /* subsampled copy, K >= 512 */
    };
    const int n = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < n; i++) {
        ps_desc_init_conv(&out[i]);
        ps_conv_desc *c = &out[i].u.conv;
        c->N = v[i][0]; c->C = v[i][1]; c->K = v[i][2]; c->H = v[i][3]; c->W = v[i][4];
        c->R = v[i][5]; c->S = v[i][6]; c->stride_h = v[i][7]; c->stride_w = v[i][8];
        c->pad_top = c->pad_bottom = v[i][9];
        c->pad_left = c->pad_right = v[i][10];
        c->dilation_h = c->dilation_w = v[i][11];
    }
    return n;
}

/* ------------------------------------------------------------ planning */

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* How much of the test runs (see the top). */
typedef struct budget {
    int64_t stride;    /* every stride-th shape of the grids */
    int64_t dnn_every; /* the DNN path on every dnn_every-th conv where it is the default */
    int keep;          /* shapes executed per (machine, rule) */
    double max_macs;   /* the reference's multiply-adds per executed shape, at most */
} budget;

static budget g_budget = {1, 16001, 2, 4e7};

/* Shapes kept per (machine, rule) to execute: the cheapest where it applied. */
#define KEEP 2
typedef struct kept {
    int n;
    ps_desc d[KEEP];
    double macs[KEEP];
} kept;

typedef struct tally {
    int64_t conv_valid, gemms, extreme;   /* distinct problems planned (each on 1 and 2 threads) */
    int64_t plans, dnn_plans, refused, failed;
    int64_t fired[PS_RULE_COUNT];         /* plans (either thread count) shaped by each rule */
    kept keep[PS_RULE_COUNT];
} tally;

static double macs_of(const ps_problem *p)
{
    if (p->desc.kind == PS_OP_GEMM) return (double)p->gemm.M * (double)p->gemm.N * (double)p->gemm.K;
    const ps_conv_shape *c = &p->conv;
    return (double)c->N * (double)c->K * (double)c->C * (double)c->OH * (double)c->OW * (double)(c->R * c->S);
}

static void keep_for_rule(kept *k, const ps_problem *p)
{
    const double m = macs_of(p);
    if (m > g_budget.max_macs) return;
    int at = k->n;
    if (k->n == g_budget.keep) { /* full: replace the dearest where this one is cheaper */
        at = 0;
        for (int i = 1; i < k->n; i++)
            if (k->macs[i] > k->macs[at]) at = i;
        if (k->macs[at] <= m) return;
    } else {
        k->n++;
    }
    k->d[at] = p->desc;
    k->macs[at] = m;
}

static void describe(const ps_desc *d, char *buf, size_t len)
{
    if (d->kind == PS_OP_GEMM) {
        const ps_gemm_desc *g = &d->u.gemm;
        snprintf(buf, len, "gemm M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " %s ta=%d tb=%d alpha=%g beta=%g", g->M, g->N,
                 g->K, g->order == PS_ROW_MAJOR ? "row" : "col", g->trans_a, g->trans_b, (double)g->alpha,
                 (double)g->beta);
    } else {
        const ps_conv_desc *c = &d->u.conv;
        snprintf(buf, len,
                 "conv N=%" PRId64 " C=%" PRId64 " K=%" PRId64 " H=%" PRId64 " W=%" PRId64 " R=%" PRId64 " S=%" PRId64
                 " stride=%" PRId64 "x%" PRId64 " pad=%" PRId64 ",%" PRId64 " dil=%" PRId64,
                 c->N, c->C, c->K, c->H, c->W, c->R, c->S, c->stride_h, c->stride_w, c->pad_top, c->pad_left,
                 c->dilation_h);
    }
}

static void fail_plan(const machine_case *mc, const ps_desc *d, int threads, const char *what, const char *detail,
                      tally *t)
{
    if (++t->failed > 20) return;
    char s[256];
    describe(d, s, sizeof s);
    fprintf(stderr, "FAIL [%s, %d thread%s] %s: %s: %s\n", mc->name, threads, threads > 1 ? "s" : "", s, what, detail);
}

/* Plans desc (valid) on 1 and 2 threads under ctx's machine: the expert
 * schedule and the planner's choice (with_dnn: the default options' ranker
 * even where it is the DNN), both checked. */
static void plan_problem(ps_context *ctx, const machine_case *mc, const ps_expert_facts *facts, const ps_desc *d,
                         int with_dnn, tally *t)
{
    ps_problem p;
    ps_status st = ps_problem_of(d, &p);
    if (st) {
        fail_plan(mc, d, 0, "ps_problem_of", ps_last_error_message(), t);
        return;
    }
    for (int threads = 1; threads <= 2; threads++) {
        unsigned fired = 0;
        ps_schedule *s = NULL;
        st = ps_expert_schedule(&p, threads, facts, &s, &fired);
        if (!st && (st = ps_schedule_check_problem(s, &p))) {
            char text[512] = "", detail[1024];
            ps_schedule_format(s, d->kind, text, sizeof text, NULL);
            snprintf(detail, sizeof detail, "'%s': %s", text, ps_last_error_message());
            fail_plan(mc, d, threads, "the expert schedule fails its check", detail, t);
        } else if (st) {
            fail_plan(mc, d, threads, "ps_expert_schedule", ps_last_error_message(), t);
        }
        ps_schedule_destroy(s);
        s = NULL;
        for (int r = 0; r < PS_RULE_COUNT; r++)
            if (fired & 1u << r) {
                t->fired[r]++;
                if (threads == 2) keep_for_rule(&t->keep[r], &p);
            }
        ps_ranker ranker = ps_planner_default_ranker(&ctx->machine, &p, 1);
        if (ranker != PS_RANKER_NONE && !with_dnn) ranker = PS_RANKER_NONE;
        int refused = 0;
        st = ps_planner_choose(ctx, &p, threads, ranker, 1, 0.0, &s, &refused);
        t->plans++;
        if (ranker != PS_RANKER_NONE) t->dnn_plans++;
        t->refused += refused;
        if (st) fail_plan(mc, d, threads, "ps_planner_choose", ps_last_error_message(), t);
        else if (refused) fail_plan(mc, d, threads, "the planner refused a candidate", "see PS_VERBOSE=1", t);
        else if ((st = ps_schedule_check_problem(s, &p)))
            fail_plan(mc, d, threads, "the planner's choice fails its check", ps_last_error_message(), t);
        ps_schedule_destroy(s);
    }
}

/* ------------------------------------------------------------ execution */

/* Plans d in full with the expert (PS_RANKER_NONE) and runs it against the
 * reference; 1 when it ran and matched. */
static int execute(ps_context *ctx, const machine_case *mc, const ps_desc *d, tu_rng *rng, tally *t)
{
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = PS_RANKER_NONE;
    o.num_threads = 2;
    o.flags = PS_PLAN_NO_CACHE;
    ps_plan *plan = NULL;
    ps_status st = ps_plan_create(ctx, d, &o, &plan);
    if (st) {
        fail_plan(mc, d, 2, "ps_plan_create", ps_last_error_message(), t);
        return 0;
    }
    int ok = 1;
    char text[512] = "";
    ps_schedule_format(ps_plan_get_schedule(plan), d->kind, text, sizeof text, NULL);
    ref_cmp cmp = {0};
    if (d->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &d->u.conv;
        int64_t OH, OW;
        ref_conv_out_size(c, &OH, &OW);
        const int64_t ns = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S, nd = c->N * c->K * OH * OW;
        size_t pb = 0;
        ps_plan_packed_weights_size(plan, &pb);
        float *src = tu_alloc_f(ns), *w = tu_alloc_f(nw), *dst = tu_alloc_f(nd);
        double *ref = tu_alloc_d(nd), *mag = tu_alloc_d(nd);
        void *packed = tu_alloc(pb);
        tu_fill_random(rng, src, ns);
        tu_fill_random(rng, w, nw);
        tu_fill(dst, nd, NAN);
        int64_t L = 0;
        if (ps_plan_pack_weights(plan, w, packed) || ps_conv_execute(plan, src, packed, NULL, dst)) {
            fail_plan(mc, d, 2, "execute", ps_last_error_message(), t);
            ok = 0;
        } else {
            ref_conv_fwd(c, src, w, NULL, ref, mag, &L);
            ref_compare(dst, ref, mag, nd, L, &cmp);
        }
        free(src); free(w); free(dst); free(ref); free(mag); free(packed);
    } else {
        const ps_gemm_desc *g = &d->u.gemm;
        const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a'));
        const int64_t nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b'));
        const int64_t nc = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
        float *a = tu_alloc_f(na), *b = tu_alloc_f(nb), *cbuf = tu_alloc_f(nc), *c0 = tu_alloc_f(nc);
        float *got = tu_alloc_f(g->M * g->N);
        double *ref = tu_alloc_d(g->M * g->N), *mag = tu_alloc_d(g->M * g->N);
        tu_fill_random(rng, a, na);
        tu_fill_random(rng, b, nb);
        tu_fill_random(rng, cbuf, nc);
        memcpy(c0, cbuf, (size_t)nc * sizeof(float));
        int64_t L = 0;
        if (ps_gemm_execute(plan, a, b, cbuf)) {
            fail_plan(mc, d, 2, "execute", ps_last_error_message(), t);
            ok = 0;
        } else {
            ref_gemm(g, a, b, c0, ref, mag, &L);
            for (int64_t j = 0; j < g->N; j++)
                for (int64_t i = 0; i < g->M; i++) got[i + j * g->M] = cbuf[ref_gemm_index(g, 'c', i, j)];
            ref_compare(got, ref, mag, g->M * g->N, L, &cmp);
        }
        free(a); free(b); free(cbuf); free(c0); free(got); free(ref); free(mag);
    }
    if (ok && cmp.n_bad) {
        char detail[1024];
        snprintf(detail, sizeof detail, "schedule '%s': %" PRId64 " wrong outputs (first %g, want %g)", text,
                 cmp.n_bad, cmp.first_got, cmp.first_ref);
        fail_plan(mc, d, 2, "wrong result", detail, t);
        ok = 0;
    }
    ps_plan_destroy(plan);
    return ok;
}

/* ------------------------------------------------------------ main */

int main(void)
{
    /* The DNN path on a sample where the default options rank with it (its
     * ranking analyses ~480 variants: milliseconds each). */
    if (SANITIZED) g_budget = (budget){7, 16001, 1, 4e7};
    const char *stride_env = getenv("PS_TEST_GRID_STRIDE");
    if (stride_env && atoll(stride_env) > 0) g_budget.stride = atoll(stride_env);
    const int64_t stride = g_budget.stride;
    static tally tallies[N_MACHINES];
    ps_desc extreme[32];
    const int n_extreme = extreme_shapes(extreme);
    double t_plan = 0, t_exec = 0;
    int64_t executed[PS_RULE_COUNT] = {0};
    tu_rng rng = {20250108u};
    printf("test_plan_grid: %" PRId64 " conv grid slots, %" PRId64 " GEMMs, %d extreme shapes, %d machines, "
           "1 and 2 threads; every %" PRId64 "%s shape\n", (int64_t)CONV_GRID, (int64_t)GEMM_GRID, n_extreme,
           N_MACHINES, stride, stride == 1 ? "st" : "th");
    for (int mi = 0; mi < N_MACHINES; mi++) {
        const machine_case *mc = &machines[mi];
        ps_context *ctx = machine_context(mc);
        if (!ctx) continue;
        tally *t = &tallies[mi];
        const ps_expert_facts facts = ps_planner_expert_facts(&ctx->machine);
        double t0 = now_s();
        for (int64_t i = 0; i < CONV_GRID; i += stride) {
            ps_desc d;
            if (!conv_grid(i, &d)) continue;
            t->conv_valid++;
            plan_problem(ctx, mc, &facts, &d, i / stride % g_budget.dnn_every == 0, t);
        }
        for (int64_t i = 0; i < GEMM_GRID; i += stride) {
            ps_desc d;
            gemm_grid(i, &d);
            t->gemms++;
            plan_problem(ctx, mc, &facts, &d, 0, t);
        }
        for (int i = 0; i < n_extreme; i++) {
            t->extreme++;
            plan_problem(ctx, mc, &facts, &extreme[i], !SANITIZED, t);
        }
        const double t1 = now_s();
        t_plan += t1 - t0;
        if (stride == 1)
            TU_CHECK(t->conv_valid >= 50000, "%s: %" PRId64 " distinct valid conv shapes, want >= 50000", mc->name,
                     t->conv_valid);
        TU_CHECK(t->failed == 0 && t->refused == 0, "%s: %" PRId64 " plans failed, %" PRId64 " candidates refused",
                 mc->name, t->failed, t->refused);
        /* Every rule that applied on this machine runs: its cheapest shapes. */
        for (int r = 0; r < PS_RULE_COUNT; r++)
            for (int k = 0; k < t->keep[r].n; k++) executed[r] += execute(ctx, mc, &t->keep[r].d[k], &rng, t);
        /* The extreme shapes (the one-row-tile layers among them) planned in full
         * with the default options: kernels built, not run (too large for
         * the reference here). */
        for (int i = 0; i < n_extreme; i++) {
            ps_plan *plan = NULL;
            ps_plan_options o;
            ps_plan_options_init(&o);
            o.flags = PS_PLAN_NO_CACHE;
            if (SANITIZED) o.ranker = PS_RANKER_NONE;
            const ps_status st = ps_plan_create(ctx, &extreme[i], &o, &plan);
            if (st) fail_plan(mc, &extreme[i], 0, "ps_plan_create (default options)", ps_last_error_message(), t);
            ps_plan_destroy(plan);
        }
        t_exec += now_s() - t1;
        printf("  %-28s %6" PRId64 " convs, %" PRId64 " GEMMs, %" PRId64 " extreme: %" PRId64 " plans (%" PRId64
               " with the DNN), %" PRId64 " refused, %" PRId64 " failed; %.1f s\n",
               mc->name, t->conv_valid, t->gemms, t->extreme, t->plans, t->dnn_plans, t->refused, t->failed, t1 - t0);
        ps_context_destroy(ctx);
    }
    printf("  rule                  plans shaped per machine (in the order above); executed\n");
    for (int r = 0; r < PS_RULE_COUNT; r++) {
        printf("  %-21s", ps_expert_rule_name((ps_expert_rule)r));
        int64_t any = 0;
        for (int mi = 0; mi < N_MACHINES; mi++) {
            printf(" %7" PRId64, tallies[mi].fired[r]);
            any += tallies[mi].fired[r];
        }
        printf("; %" PRId64 "\n", executed[r]);
        TU_CHECK(any > 0, "rule %s shaped no plan of the grid", ps_expert_rule_name((ps_expert_rule)r));
        TU_CHECK(executed[r] > 0, "rule %s: none of its plans ran against the reference",
                 ps_expert_rule_name((ps_expert_rule)r));
    }
    printf("test_plan_grid: planning %.1f s, full plans and execution %.1f s\n", t_plan, t_exec);
    return tu_finish("test_plan_grid");
}
