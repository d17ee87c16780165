/* Randomized GEMMs against the double-precision reference.
 *
 * >= 300 cases (PS_TEST_SEED overrides the seed, PS_TEST_COUNT the count):
 * column/row major x trans_a x trans_b recur every 8 cases; M, N, K are drawn
 * from 1, small odd primes, powers of two and neighbours; leading dimensions
 * are 0 (tight), explicitly tight or padded; alpha and beta include 0, 1, -1
 * and other values. The planner chooses the schedule. Checks: the result
 * within ref_tolerance, elements of C outside the M x N matrix (the ldc gap)
 * untouched, A and B unmodified, and with beta == 0 C is not read (it is
 * filled with NaN in half of those cases — the BLAS convention that lets
 * callers pass uninitialised output). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "plan/context_impl.h"
#include "reference.h"
#include "test_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_gemm(FILE *f, const ps_gemm_desc *g)
{
    fprintf(f,
            "M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " %s trans_a=%d trans_b=%d lda=%" PRId64
            " ldb=%" PRId64 " ldc=%" PRId64 " alpha=%.9g beta=%.9g",
            g->M, g->N, g->K, g->order == PS_ROW_MAJOR ? "row-major" : "col-major", g->trans_a,
            g->trans_b, g->lda, g->ldb, g->ldc, (double)g->alpha, (double)g->beta);
}

static int64_t draw_size(tu_rng *r)
{
    static const int64_t v[] = {1,  1,  2,  3,  5,  7,  8,  13, 16, 17,  23,  31,
                                32, 33, 37, 47, 61, 64, 65, 97, 96, 127, 128, 131};
    if (tu_range(r, 0, 4) == 0) return tu_range(r, 1, 160);
    return tu_pick(r, v, (int)(sizeof v / sizeof v[0]));
}

static int64_t draw_ld(tu_rng *r, int64_t min_ld)
{
    switch (tu_range(r, 0, 2)) {
    case 0: return 0;                              /* tight, implicit */
    case 1: return min_ld;                         /* tight, explicit */
    default: return min_ld + tu_range(r, 1, 17);   /* padded */
    }
}

static float draw_scalar(tu_rng *r, int is_beta)
{
    static const float alphas[] = {1.0f, 1.0f, 0.0f, -1.0f, 0.5f, 2.5f, -0.3125f};
    static const float betas[] = {0.0f, 0.0f, 1.0f, 1.0f, -0.75f, 2.0f, 0.1f};
    if (tu_range(r, 0, 7) == 0) return tu_uniform(r) * 3.0f;
    return is_beta ? betas[tu_range(r, 0, 6)] : alphas[tu_range(r, 0, 6)];
}

typedef struct stats {
    int cases, failed;
    double max_norm_err, t_plan, t_exec;
} stats;

static void fail_case(stats *st, int idx, const ps_gemm_desc *g, const char *what, const char *detail)
{
    st->failed++;
    fprintf(stderr, "FAIL case #%d: %s: %s\n    ", idx, what, detail ? detail : "");
    print_gemm(stderr, g);
    fprintf(stderr, "\n");
}

static ps_ranker g_rankers[4] = {PS_RANKER_DEFAULT};
static int g_n_rankers = 1;

/* want_in_plan: NULL, or the case runs the default plan, whose description
 * must contain that text. C starts c_off floats past a 64-byte boundary. */
static void run_case(ps_context *ctx, tu_rng *r, int idx, const ps_gemm_desc *g, int nan_c, stats *st,
                     const char *want_in_plan, int64_t c_off)
{
    char msg[1024], text[512] = "", text2[512] = "";
    ps_desc desc;
    ps_desc_init_gemm(&desc);
    desc.u.gemm = *g;
    st->cases++;
    ps_status s = ps_desc_validate(&desc);
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_case(st, idx, g, "ps_desc_validate", msg);
        return;
    }
    const double want_flops = 2.0 * (double)g->M * (double)g->N * (double)g->K;
    if (fabs(ps_desc_flops(&desc) - want_flops) > 1e-9 * want_flops) {
        snprintf(msg, sizeof msg, "got %.0f want %.0f", ps_desc_flops(&desc), want_flops);
        fail_case(st, idx, g, "ps_desc_flops", msg);
    }

    const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a'));
    const int64_t nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b'));
    const int64_t nc = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
    const int64_t MN = g->M * g->N;
    float *a = tu_alloc_f(na), *b = tu_alloc_f(nb), *c_buf = tu_alloc_f(nc + c_off), *c = c_buf + c_off;
    float *a0 = tu_alloc_f(na), *b0 = tu_alloc_f(nb), *c0 = tu_alloc_f(nc), *got = tu_alloc_f(MN);
    double *ref = tu_alloc_d(MN), *mag = tu_alloc_d(MN);
    unsigned char *in_c = calloc((size_t)nc, 1);
    void *ws = NULL;
    tu_fill_random(r, a, na);
    tu_fill_random(r, b, nb);
    /* C: logical elements random (or NaN when beta == 0 must not read them),
     * the gaps between columns/rows hold a sentinel that must survive */
    tu_fill(c, nc, tu_sentinel());
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) {
            const int64_t o = ref_gemm_index(g, 'c', i, j);
            c[o] = nan_c ? NAN : tu_uniform(r);
            in_c[o] = 1;
        }
    memcpy(a0, a, (size_t)na * sizeof(float));
    memcpy(b0, b, (size_t)nb * sizeof(float));
    memcpy(c0, c, (size_t)nc * sizeof(float));

    ps_plan *plan = NULL;
    double t0 = now_s();
    ps_plan_options popts;
    ps_plan_options_init(&popts);
    popts.ranker = g_rankers[(idx / 3) % g_n_rankers]; /* not in step with the layout cycle */
    popts.top_k = idx % 7 == 3 ? 3 : 0;
    popts.flags = idx % 5 == 2 ? PS_PLAN_NO_CACHE : 0;
    s = ps_plan_create(ctx, &desc, idx % 6 == 0 || want_in_plan ? NULL : &popts, &plan);
    st->t_plan += now_s() - t0;
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_case(st, idx, g, "ps_plan_create", msg);
        goto out;
    }
    if (want_in_plan) { /* substrings separated by "&&" */
        char about[2048] = "";
        ps_plan_describe(plan, about, sizeof about, NULL);
        for (const char *w = want_in_plan; *w;) {
            const char *end = strstr(w, "&&");
            const size_t len = end ? (size_t)(end - w) : strlen(w);
            char part[256];
            snprintf(part, sizeof part, "%.*s", (int)len, w);
            if (!strstr(about, part)) fail_case(st, idx, g, part, about);
            w += len + (end ? 2 : 0);
        }
    }
    const ps_schedule *sched = ps_plan_get_schedule(plan);
    if (!sched) {
        fail_case(st, idx, g, "ps_plan_get_schedule", "NULL");
        goto out;
    }
    s = ps_schedule_check(sched, &desc);
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_case(st, idx, g, "ps_schedule_check(plan's schedule)", msg);
    }
    s = ps_schedule_format(sched, PS_OP_GEMM, text, sizeof text, NULL);
    if (s == PS_SUCCESS) {
        ps_schedule *back = NULL;
        s = ps_schedule_parse(PS_OP_GEMM, text, &back);
        if (s == PS_SUCCESS) s = ps_schedule_format(back, PS_OP_GEMM, text2, sizeof text2, NULL);
        ps_schedule_destroy(back);
    }
    if (s != PS_SUCCESS || strcmp(text, text2) != 0) {
        snprintf(msg, sizeof msg, "'%s' -> %s '%s'", text, ps_status_str(s), text2);
        fail_case(st, idx, g, "schedule format/parse round trip", msg);
    }
    size_t wsbytes = 0;
    s = ps_plan_workspace_size(plan, &wsbytes);
    if (s != PS_SUCCESS) {
        fail_case(st, idx, g, "ps_plan_workspace_size", ps_status_str(s));
        goto out;
    }
    if (wsbytes && idx % 2) ws = tu_alloc(wsbytes);

    t0 = now_s();
    if (idx % 3 == 0) {
        s = ps_gemm_execute(plan, a, b, c);
    } else {
        ps_exec_args args;
        ps_exec_args_init(&args);
        args.a = a;
        args.b = b;
        args.c = c;
        args.workspace = ws;
        s = ps_plan_execute(plan, &args);
    }
    st->t_exec += now_s() - t0;
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_case(st, idx, g, "execute", msg);
        goto out;
    }

    int64_t L = 0;
    ref_gemm(g, a0, b0, c0, ref, mag, &L);
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) got[i + j * g->M] = c[ref_gemm_index(g, 'c', i, j)];
    ref_cmp cmp;
    ref_compare(got, ref, mag, MN, L, &cmp);
    if (cmp.n_bad) {
        const int64_t i = cmp.first_bad % g->M, j = cmp.first_bad / g->M;
        snprintf(msg, sizeof msg,
                 "%" PRId64 " of %" PRId64 " wrong; first C(%" PRId64 ",%" PRId64 "): got %.9g want %.9g%s; "
                 "schedule '%s'",
                 cmp.n_bad, MN, i, j, cmp.first_got, cmp.first_ref,
                 nan_c ? " (C held NaN on input, beta = 0 must not read it)" : "", text);
        fail_case(st, idx, g, "wrong result", msg);
    } else if (cmp.max_norm_err > st->max_norm_err) {
        st->max_norm_err = cmp.max_norm_err;
    }
    for (int64_t o = 0; o < nc; o++)
        if (!in_c[o] && memcmp(&c[o], &c0[o], sizeof(float))) {
            snprintf(msg, sizeof msg, "C buffer offset %" PRId64 " (outside the M x N matrix) written", o);
            fail_case(st, idx, g, "ldc gap written", msg);
            break;
        }
    if (memcmp(a, a0, (size_t)na * sizeof(float)) || memcmp(b, b0, (size_t)nb * sizeof(float)))
        fail_case(st, idx, g, "inputs modified", "A or B changed");

out:
    ps_plan_destroy(plan);
    free(a); free(b); free(c_buf); free(a0); free(b0); free(c0); free(got);
    free(ref); free(mag); free(in_c); free(ws);
}

/* The random leading dimensions, alpha, beta (and NaNs in C where beta = 0
 * must not read it) of a case whose shape and layout are set, then the case. */
static void draw_and_run(ps_context *ctx, tu_rng *r, int idx, ps_gemm_desc *g, stats *st, const char *want_in_plan)
{
    g->lda = draw_ld(r, ref_gemm_min_ld(g, 'a'));
    g->ldb = draw_ld(r, ref_gemm_min_ld(g, 'b'));
    g->ldc = draw_ld(r, ref_gemm_min_ld(g, 'c'));
    g->alpha = draw_scalar(r, 0);
    g->beta = draw_scalar(r, 1);
    const int nan_c = g->beta == 0.0f && tu_range(r, 0, 1);
    run_case(ctx, r, idx, g, nan_c, st, want_in_plan, 0);
}

/* A default GEMM descriptor of this order, transposes and M, N, K. */
static ps_gemm_desc gemm_of(int row_major, int trans_a, int trans_b, const int64_t mnk[3])
{
    ps_desc d;
    ps_desc_init_gemm(&d);
    ps_gemm_desc g = d.u.gemm;
    g.order = (ps_matrix_order)row_major;
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.M = mnk[0];
    g.N = mnk[1];
    g.K = mnk[2];
    return g;
}

int main(void)
{
    const uint64_t seed = tu_seed("test_gemm_random", 977u);
    const char *cnt = getenv("PS_TEST_COUNT");
    const int n = cnt && *cnt ? atoi(cnt) : 320;
    ps_context *ctx = NULL;
    ps_status s = ps_context_create(NULL, &ctx);
    if (s != PS_SUCCESS) {
        fprintf(stderr, "ps_context_create: %s: %s\n", ps_status_str(s), ps_last_error_message());
        return 1;
    }
    g_n_rankers = tu_available_rankers(ctx, g_rankers);
    if (g_n_rankers == 0) return 1;
    /* after the random cases, a few larger fixed sizes: several blocks in every dimension and
     * reductions longer than one default batch (chunked reduction) */
    static const int64_t fixed[][3] = {{200, 50, 1100}, {65, 129, 1025}, {1, 1, 3000}, {300, 1, 300},
                                       {1, 257, 64}, {128, 128, 2053}, {97, 3, 4099}, {513, 7, 17}};
    const int n_fixed = (int)(sizeof fixed / sizeof fixed[0]);
    stats st = {0};
    const double t0 = now_s();
    for (int i = 0; i < n + n_fixed; i++) {
        tu_rng r = {seed ^ (0x2545F4914F6CDD1Dull * (uint64_t)(i + 1))};
        ps_desc d;
        ps_desc_init_gemm(&d);
        ps_gemm_desc g = d.u.gemm;
        g.order = (ps_matrix_order)(i % 2);
        g.trans_a = (i / 2) % 2;
        g.trans_b = (i / 4) % 2;
        do {
            g.M = draw_size(&r);
            g.N = draw_size(&r);
            g.K = draw_size(&r);
        } while ((double)g.M * (double)g.N * (double)g.K > 1.2e6);
        if (i % 16 == 8) g.M = 1;  /* guaranteed vector cases */
        if (i % 16 == 9) g.N = 1;
        if (i % 16 == 10) g.K = 1;
        if (i >= n) {
            g.M = fixed[i - n][0];
            g.N = fixed[i - n][1];
            g.K = fixed[i - n][2];
        }
        draw_and_run(ctx, &r, i, &g, &st, NULL);
    }
    ps_context_destroy(ctx);
    /* Operands larger than the last-level cache: the executor packs per-thread
     * panels instead of a pass. A context that reports a 64 KiB L3 gets them
     * on small GEMMs: both orders and transposes, tails in every dimension,
     * random leading dimensions, alpha and beta; one reduction chunk with
     * more band tiles than threads (520 x 1600 x 300: the panels' tile tags),
     * several chunks and a remainder chunk (K = 530, 600: the chunk tags),
     * the smaller side too long to keep whole at 5 blocks per chunk (1100 x
     * 1300 x 300: 18 row blocks in two tiles of 9, both with tails), and
     * kept whole at half the batch (1100 x 1300 x 600: 18 row blocks, chunks
     * of 4 reduction blocks, the last of 2 with a tail). */
    if (tu_context_with_caches(2, 16 << 10, 32 << 10, 64 << 10, &ctx) != PS_SUCCESS) return 1;
    /* Then (shapes 5-7) only the larger operand reaches ps_machine_panel_bytes
     * (half the L3 where it is slow; set so, the table's row depends on the
     * CPU): the smaller side whole, 1 or 2 blocks (40, 24 rows; 40 columns),
     * the other cut into tiles of 8 or 12 blocks; one chunk and, with K = 600,
     * two plus a remainder block. */
    static const int64_t panel_shapes[][3] = {{520, 1600, 300}, {1100, 520, 600}, {530, 1700, 530}, {1100, 1300, 300},
                                              {1100, 1300, 600}, {40, 1536, 300},  {24, 1536, 600},  {1536, 40, 300}};
    int n_panel = 0;
    for (int si = 0; si < 8; si++) {
        if (si == 5) tu_set_l3_speed(ctx, 1);
        for (int v = 0; v < 4; v++, n_panel++) {
            tu_rng r = {seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(n_panel + 1))};
            ps_gemm_desc g = gemm_of(v % 2, v / 2, (v + si) % 2, panel_shapes[si]);
            draw_and_run(ctx, &r, n + n_fixed + n_panel, &g, &st, "A=panels B=panels");
        }
    }
    /* Outputs of at least that L3 (ps_machine_stream_bytes; the L3 fast
     * again, so these GEMMs keep their packing pass), written by one call per block
     * (one reduction chunk), with beta = 0: streaming stores where C's
     * blocks are 64-byte aligned (C at a 64-byte boundary, ldc a multiple of
     * 16: variants 0-1), the plain kernels where C is not (2) or ldc may not be
     * (3, random ldc); rows in multiples of 16 and not (LIBXSMM has no masked
     * streaming store), remainder reductions (K = 17, 48). */
    tu_set_l3_speed(ctx, 3);
    static const int64_t stream_shapes[][3] = {{200, 300, 32}, {256, 320, 64}, {130, 257, 17}, {64, 1000, 48}};
    int n_stream = 0;
    for (int si = 0; si < 4; si++)
        for (int v = 0; v < 4; v++, n_stream++) {
            tu_rng r = {seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(n_stream + 1))};
            ps_gemm_desc g = gemm_of((v + si) % 2, v % 2, v / 2, stream_shapes[si]);
            g.lda = draw_ld(&r, ref_gemm_min_ld(&g, 'a'));
            g.ldb = draw_ld(&r, ref_gemm_min_ld(&g, 'b'));
            g.ldc = v < 3 ? (ref_gemm_min_ld(&g, 'c') + 15) / 16 * 16 : draw_ld(&r, ref_gemm_min_ld(&g, 'c'));
            g.alpha = draw_scalar(&r, 0);
            g.beta = 0.0f;
            run_case(ctx, &r, n + n_fixed + n_panel + n_stream, &g, v % 2, &st, "streaming stores", v == 2);
        }
    ps_context_destroy(ctx);
    /* A read in place (no transpose of the normalized A, alpha 1, at most 4
     * column blocks of the normalized problem) under the expert's tiles of
     * whole normalized rows, one tile of columns per thread: both orders,
     * the other transpose either way, random leading dimensions and beta;
     * row and column tails and a remainder reduction chunk (K = 1100: 18
     * blocks, chunks of 8). The L3 large and fast (no panels), L2 small (B
     * does not fit half of it). */
    if (tu_context_with_caches(2, 16 << 10, 32 << 10, 8 << 20, &ctx) != PS_SUCCESS) return 1;
    tu_set_l3_speed(ctx, 3);
    static const struct {
        int64_t mnk[3];
        int row_major;
        const char *want;
    } in_place[] = {
        {{200, 100, 1100}, 1, ": m:2* n:3* k m n&&A=no B=yes"}, /* 4 row blocks (the last of 8) */
        {{100, 190, 1100}, 0, ": m:2* n:2* k m n&&A=no B=yes"}, /* 4 column blocks (the last of 46) */
    };
    int n_in_place = 0;
    for (int si = 0; si < 2; si++)
        for (int v = 0; v < 4; v++, n_in_place++) {
            tu_rng r = {seed ^ (0x94D049BB133111EBull * (uint64_t)(n_in_place + 1))};
            const int row = in_place[si].row_major;
            /* the normalized A is op(A) column-major, op(B) row-major */
            ps_gemm_desc g = gemm_of(row, row ? v % 2 : 0, row ? 0 : v % 2, in_place[si].mnk);
            g.lda = draw_ld(&r, ref_gemm_min_ld(&g, 'a'));
            g.ldb = draw_ld(&r, ref_gemm_min_ld(&g, 'b'));
            g.ldc = draw_ld(&r, ref_gemm_min_ld(&g, 'c'));
            g.beta = draw_scalar(&r, 1);
            run_case(ctx, &r, n + n_fixed + n_panel + n_stream + n_in_place, &g, g.beta == 0.0f && v / 2, &st,
                     in_place[si].want, 0);
        }
    ps_context_destroy(ctx);
    printf("test_gemm_random: %d cases (%d random + %d fixed larger + %d per-thread panels + %d streamed C + %d A in "
           "place), %d "
           "failed; max normalized error %.3g (<= 1 passes, tol(L) = 8u*sqrt(L)+2u); time %.1fs (plan %.1fs, exec "
           "%.1fs)\n",
           st.cases, n, n_fixed, n_panel, n_stream, n_in_place, st.failed, st.max_norm_err, now_s() - t0, st.t_plan, st.t_exec);
    return st.failed || tu_failures ? 1 : 0;
}
