/* Iterated stencils (include/polysci/iterated.h): every tiling bitwise
 * equal to the step-by-step run, the step-by-step run against a float64
 * reference, on the benchmark stencils and on random descriptors (1-D to
 * 3-D grids, radius 1-2, coupled arrays, fixed and periodic boundaries,
 * random sizes, steps, bands, tiles and threads); split tiling's redundant
 * work counted as zero; bad arguments rejected with nothing written.
 *
 * PS_TEST_SEED and PS_TEST_COUNT (random descriptors, default 60) from the
 * environment. */
#include "cli.h"
#include "stencils.h"
#include "test_util.h"

static tu_rng rng;
static uint64_t rnd(void) { return tu_next(&rng); }
static int64_t rint_in(int64_t lo, int64_t hi) { return tu_range(&rng, lo, hi); }
static double runif(void) { return 0.5 * (1.0 + tu_uniform(&rng)); }

static const char *const tiling_names[] = {"auto", "step", "overlap", "split", "hybrid"};

typedef struct grid {
    int na;
    size_t n;
    float *a[PS_ITER_MAX_ARRAYS];
} grid;

static int grid_alloc(grid *g, const ps_iter *it)
{
    ps_iter_info info = {.struct_size = sizeof info};
    ps_iter_get_info(it, &info);
    memset(g, 0, sizeof *g);
    g->na = info.n_arrays;
    g->n = (size_t)(info.n[0] * info.n[1] * info.n[2]);
    for (int a = 0; a < g->na; a++)
        if (!(g->a[a] = malloc(g->n * sizeof(float)))) return -1;
    return 0;
}
static void grid_free(grid *g)
{
    for (int a = 0; a < g->na; a++) free(g->a[a]);
}
static void grid_copy(grid *to, const grid *from)
{
    for (int a = 0; a < from->na; a++) memcpy(to->a[a], from->a[a], from->n * sizeof(float));
}
static int grid_equal(const grid *x, const grid *y, size_t *where)
{
    for (int a = 0; a < x->na; a++)
        if (memcmp(x->a[a], y->a[a], x->n * sizeof(float))) {
            for (size_t i = 0; i < x->n; i++)
                if (memcmp(&x->a[a][i], &y->a[a][i], sizeof(float))) {
                    *where = i + (size_t)a * x->n;
                    break;
                }
            return 0;
        }
    return 1;
}

/* The descriptor's T steps: plan `o`, execute on a copy of init. */
static ps_status run(ps_context *ctx, const ps_iter *it, const ps_iter_options *o, const grid *init, grid *out,
                     ps_iter_plan_stats *stats)
{
    ps_iter_plan *p = NULL;
    ps_status st = ps_iter_plan_create(ctx, it, o, &p);
    if (st) return st;
    grid_copy(out, init);
    /* every other run with the caller's workspace */
    size_t ws_bytes = 0;
    ps_iter_plan_workspace_size(p, &ws_bytes);
    void *ws = rnd() & 1 ? cli_alloc(ws_bytes + 64) : NULL;
    st = ps_iter_execute(p, out->a, ws);
    free(ws);
    if (!st && stats) {
        stats->struct_size = sizeof *stats;
        st = ps_iter_plan_get_stats(p, stats);
    }
    if (!st) {
        size_t need = 0;
        st = ps_iter_plan_describe(p, NULL, 0, &need);
        char *text = malloc(need + 1);
        if (!st && text) st = ps_iter_plan_describe(p, text, need + 1, NULL);
        if (!st && text && getenv("PS_TEST_DESCRIBE")) fputs(text, stderr);
        free(text);
    }
    ps_iter_plan_destroy(p);
    return st;
}

static void describe_it(const ps_iter *it, char *buf, size_t len)
{
    ps_iter_info info = {.struct_size = sizeof info};
    ps_iter_get_info(it, &info);
    int o = snprintf(buf, len, "%dD", info.ndim);
    for (int d = 0; d < info.ndim; d++) o += snprintf(buf + o, len - (size_t)o, "%s%lld", d ? "x" : " ", (long long)info.n[d]);
    snprintf(buf + o, len - (size_t)o, " %s T=%lld arrays=%d taps=%lld radius=%d,%d,%d",
             info.boundary == PS_ITER_PERIODIC ? "periodic" : "fixed", (long long)info.steps, info.n_arrays, (long long)info.taps,
             info.radius[0], info.radius[1], info.radius[2]);
}

/* The descriptor's updates, to reproduce a failure. */
static void dump_iter(const ps_iter *it)
{
    ps_iter_info info = {.struct_size = sizeof info};
    ps_iter_get_info(it, &info);
    for (int a = 0; a < info.n_arrays; a++) {
        ps_iter_tap taps[64];
        int nt = 0;
        float c = 0;
        ps_iter_get_update(it, a, NULL, &nt, taps, 64, &c);
        fprintf(stderr, "  array %d = %a", a, c);
        for (int k = 0; k < nt && k < 64; k++)
            fprintf(stderr, " + %a * a%d(%d, %d, %d)", taps[k].weight, taps[k].array, taps[k].offset[0], taps[k].offset[1],
                    taps[k].offset[2]);
        fputc('\n', stderr);
    }
}

/* Step-by-step against float64, then every tiling (with the options
 * opt_for gives) bitwise against step-by-step. */
static void check_all(ps_context *ctx, const ps_iter *it, const grid *init, int randomize, int threads)
{
    char what[256];
    int failures_before = tu_failures;
    describe_it(it, what, sizeof what);
    grid ref, res;
    if (grid_alloc(&ref, it) || grid_alloc(&res, it)) {
        TU_CHECK(0, "out of memory");
        grid_free(&ref);
        grid_free(&res);
        return;
    }
    ps_iter_options o;
    ps_iter_options_init(&o);
    o.tiling = PS_ITER_TILING_STEP;
    o.num_threads = threads;
    ps_iter_plan_stats s;
    ps_status st = run(ctx, it, &o, init, &ref, &s);
    TU_CHECK(!st, "%s: step-by-step failed: %s", what, ps_last_error_message());
    if (!st) {
        TU_CHECK(s.redundant_fraction == 0 && s.points_computed == s.points_needed, "%s: step-by-step computes %.0f of %.0f", what,
              s.points_computed, s.points_needed);
        /* float64 reference */
        double *dref[PS_ITER_MAX_ARRAYS] = {0};
        int ok = 1;
        for (int a = 0; a < init->na; a++) ok &= (dref[a] = malloc(init->n * sizeof(double))) != NULL;
        if (ok && !cli_stencil_reference(it, (const float *const *)init->a, dref)) {
            double max_in = 0, err = 0;
            for (int a = 0; a < init->na; a++)
                for (size_t i = 0; i < init->n; i++) {
                    max_in = fmax(max_in, fabs(init->a[a][i]));
                    double e = fabs((double)ref.a[a][i] - dref[a][i]);
                    if (!(e <= err)) err = isnan(e) ? INFINITY : e;
                }
            double tol = cli_stencil_tolerance(it, max_in);
            TU_CHECK(err <= tol, "%s: step-by-step differs from float64 by %.3g (tolerance %.3g)", what, err, tol);
        }
        for (int a = 0; a < init->na; a++) free(dref[a]);
    }
    for (int t = PS_ITER_TILING_AUTO; t <= PS_ITER_TILING_HYBRID && !st; t++) {
        if (t == PS_ITER_TILING_STEP) continue;
        for (int variant = 0; variant < (randomize ? 2 : 1); variant++) {
            ps_iter_info info = {.struct_size = sizeof info};
            ps_iter_get_info(it, &info);
            ps_iter_options_init(&o);
            o.tiling = (ps_iter_tiling)t;
            o.num_threads = threads;
            int forced = 0;
            if (randomize && variant == 1) {
                if (rnd() & 1) o.band = rint_in(1, info.steps + 2);
                for (int d = 0; d < info.ndim; d++)
                    if (rnd() % 3) {
                        o.tile[d] = rint_in(1, info.n[d] + 1);
                        forced = 1;
                    }
                if (rnd() & 1) o.skew_width = rint_in(1, 40);
                o.split_order = (ps_iter_split_order)rint_in(0, 2);
            }
            ps_status ts = run(ctx, it, &o, init, &res, &s);
            /* split with forced sizes may have uprights too narrow */
            if (ts == PS_ERR_INVALID_ARG && t == PS_ITER_TILING_SPLIT && (forced || o.band)) continue;
            TU_CHECK(!ts, "%s: tiling %s (band %lld, tile %lld %lld %lld, skew %lld) failed: %s", what, tiling_names[t],
                  (long long)o.band, (long long)o.tile[0], (long long)o.tile[1], (long long)o.tile[2], (long long)o.skew_width,
                  ps_last_error_message());
            if (ts) continue;
            size_t where = 0;
            int eq = grid_equal(&ref, &res, &where);
            TU_CHECK(eq, "%s: tiling %s (chose %s, band %lld, tile %lld %lld %lld, skew %lld) differs from step-by-step at element %zu: %.9g vs %.9g",
                  what, tiling_names[t], tiling_names[s.tiling], (long long)s.band, (long long)s.tile[0], (long long)s.tile[1],
                  (long long)s.tile[2], (long long)s.skew_width, where, eq ? 0.0 : res.a[where / init->n][where % init->n],
                  eq ? 0.0 : ref.a[where / init->n][where % init->n]);
            if (s.tiling == PS_ITER_TILING_SPLIT || s.tiling == PS_ITER_TILING_STEP)
                TU_CHECK(s.points_computed == s.points_needed, "%s: %s computes %.0f point updates for %.0f needed", what,
                      tiling_names[s.tiling], s.points_computed, s.points_needed);
            else
                TU_CHECK(s.points_computed >= s.points_needed, "%s: %s computes %.0f point updates for %.0f needed", what,
                      tiling_names[s.tiling], s.points_computed, s.points_needed);
        }
    }
    if (tu_failures > failures_before) dump_iter(it);
    grid_free(&ref);
    grid_free(&res);
}

/* The four benchmark stencils from `first` on, both boundaries, every
 * tiling against step by step. */
static void run_examples(ps_context *ctx, const int64_t (*sizes)[3], const int64_t *steps, int first, uint64_t seed)
{
    for (int e = first; e < 4; e++)
        for (int b = 0; b < 2; b++) {
            ps_iter *it = NULL;
            ps_status st = ps_iter_create_example((ps_iter_example)e, sizes[e], (ps_iter_boundary)b, steps[e], &it);
            TU_CHECK(!st, "example %d: %s", e, ps_last_error_message());
            if (st) continue;
            grid init;
            if (!grid_alloc(&init, it)) {
                cli_stencil_fill(it, init.a, seed + (uint64_t)e);
                check_all(ctx, it, &init, 1, 2);
            }
            grid_free(&init);
            ps_iter_destroy(it);
        }
}

static void test_examples(ps_context *ctx)
{
    static const int64_t sizes[4][3] = {{1201, 1, 1}, {67, 93, 1}, {19, 23, 17}, {45, 71, 1}};
    static const int64_t steps[4] = {37, 13, 7, 11};
    run_examples(ctx, sizes, steps, 0, 7);
}

/* Rows longer than a strip (iter_plan.c: strip_columns): a context with a
 * 1 KiB L1 cuts rows into strips of 128 columns; the benchmark stencils
 * and random two- and three-dimensional descriptors with rows of hundreds
 * of points, against step by step (which runs whole rows). */
static ps_iter *random_iter_wide(void);
static void test_random_from(ps_context *ctx, int count, ps_iter *(*make)(void));
static void test_strips(void)
{
    ps_context *ctx = NULL;
    if (tu_context_with_caches(0, 1 << 10, 1 << 20, 32 << 20, &ctx)) {
        TU_CHECK(0, "context with a 1 KiB L1: %s", ps_last_error_message());
        return;
    }
    static const int64_t sizes[4][3] = {{1201, 1, 1}, {29, 611, 1}, {9, 11, 301}, {23, 517, 1}};
    static const int64_t steps[4] = {5, 9, 5, 7};
    run_examples(ctx, sizes, steps, 1, 11);
    test_random_from(ctx, 8, random_iter_wide);
    ps_context_destroy(ctx);
}

/* A random descriptor: convex-ish weights (absolute sum at most 1) keep
 * values and errors bounded over the steps. */
static ps_iter *random_iter_shaped(int wide)
{
    int nd = wide ? (int)rint_in(2, 3) : (int)rint_in(1, 3), periodic = (int)(rnd() & 1);
    int na = rnd() % 4 == 0 ? (int)rint_in(2, 3) : 1;
    int rad[3];
    for (int d = 0; d < nd; d++) rad[d] = rnd() % 5 == 0 ? 0 : (int)rint_in(1, 2);
    int64_t n[3];
    static const int64_t maxn[3] = {700, 60, 20};
    for (int d = 0; d < nd; d++) {
        int64_t lo = periodic ? 1 : 2 * rad[d] + 1;
        n[d] = rint_in(lo, lo + maxn[nd - 1]);
        if (rnd() % 6 == 0) n[d] = lo + (int64_t)(rnd() % 3);
        /* a few rows of hundreds of points */
        if (wide) n[d] = d == nd - 1 ? rint_in(200, 700) : rint_in(lo, lo + 8);
    }
    int64_t T = rnd() % 10 == 0 ? rint_in(0, 1) : rint_in(2, 14);
    ps_iter *it = NULL;
    if (ps_iter_create(nd, n, periodic ? PS_ITER_PERIODIC : PS_ITER_FIXED, T, &it)) return NULL;
    for (int a = 0; a < na; a++) {
        int id;
        ps_iter_add_array(it, NULL, &id);
    }
    for (int a = 0; a < na; a++) {
        ps_iter_tap taps[12];
        int nt = (int)rint_in(1, 9);
        double sum = 0;
        memset(taps, 0, sizeof taps);
        for (int k = 0; k < nt; k++) {
            taps[k].array = (int)(rnd() % (uint64_t)na);
            for (int d = 0; d < nd; d++) taps[k].offset[d] = rad[d] ? (int)rint_in(-rad[d], rad[d]) : 0;
            taps[k].weight = (float)((rnd() % 5 == 0 ? -1 : 1) * (0.1 + runif()));
            sum += fabs(taps[k].weight);
        }
        /* reach the radius along every dimension at least once */
        if (nt < 12)
            for (int d = 0; d < nd; d++)
                if (rad[d]) {
                    memset(&taps[nt], 0, sizeof taps[nt]);
                    taps[nt].array = (int)(rnd() % (uint64_t)na);
                    taps[nt].offset[d] = rnd() & 1 ? rad[d] : -rad[d];
                    taps[nt].weight = (float)(0.1 + runif());
                    sum += taps[nt].weight;
                    if (++nt == 12) break;
                }
        for (int k = 0; k < nt; k++) taps[k].weight = (float)(taps[k].weight / (sum * (1.0 + 0.1 * runif())));
        float c = rnd() & 1 ? 0.0f : (float)(0.05 * runif());
        if (ps_iter_set_update(it, a, nt, taps, c)) {
            ps_iter_destroy(it);
            return NULL;
        }
    }
    return it;
}

static ps_iter *random_iter(void) { return random_iter_shaped(0); }
static ps_iter *random_iter_wide(void) { return random_iter_shaped(1); }

static void test_random_from(ps_context *ctx, int count, ps_iter *(*make)(void))
{
    for (int i = 0; i < count; i++) {
        ps_iter *it = make();
        TU_CHECK(it != NULL, "random descriptor %d: %s", i, ps_last_error_message());
        if (!it) continue;
        grid init;
        if (!grid_alloc(&init, it)) {
            cli_stencil_fill(it, init.a, rnd());
            check_all(ctx, it, &init, 1, (int)rint_in(1, 3));
        }
        grid_free(&init);
        ps_iter_destroy(it);
    }
}

static void test_random(ps_context *ctx, int count) { test_random_from(ctx, count, random_iter); }

/* Split tiling does no redundant work; overlapped tiles do, exactly as
 * many points as their trapezoids hold. heat1d, 1000 points (998 interior),
 * band 8, tiles of 100: every overlapped tile but the two at the edges
 * recomputes 8 * 7 / 2 points on each side. */
static void test_counts(ps_context *ctx)
{
    int64_t n[1] = {1000};
    ps_iter *it = NULL;
    ps_iter_create_example(PS_ITER_HEAT1D, n, PS_ITER_FIXED, 16, &it);
    ps_iter_options o;
    ps_iter_plan *p = NULL;
    ps_iter_plan_stats s = {.struct_size = sizeof s};
    for (int t = PS_ITER_TILING_STEP; t <= PS_ITER_TILING_HYBRID; t++) {
        ps_iter_options_init(&o);
        o.tiling = (ps_iter_tiling)t;
        o.band = t == PS_ITER_TILING_STEP ? 1 : 8;
        o.tile[0] = 100;
        o.skew_width = 32;
        ps_status st = ps_iter_plan_create(ctx, it, &o, &p);
        TU_CHECK(!st, "counts, %s: %s", tiling_names[t], ps_last_error_message());
        if (st) continue;
        ps_iter_plan_get_stats(p, &s);
        TU_CHECK(s.points_needed == 998.0 * 16, "counts: needed %.0f", s.points_needed);
        double expect = s.points_needed;
        /* 10 tiles (the last 98 wide), 2 bands: tiles 1..8 grow 28 points
         * on each side, tiles 0 and 9 on one */
        if (t == PS_ITER_TILING_OVERLAP || t == PS_ITER_TILING_HYBRID) expect += 2 * (8 * 2 * 28 + 2 * 28);
        TU_CHECK(s.points_computed == expect, "counts, %s: %.0f point updates, expected %.0f", tiling_names[t], s.points_computed,
              expect);
        if (t == PS_ITER_TILING_SPLIT) TU_CHECK(s.redundant_fraction == 0 && s.phases == 2, "split: redundant %g, %d phases",
                                             s.redundant_fraction, s.phases);
        ps_iter_plan_destroy(p);
    }
    ps_iter_destroy(it);
    /* 2-D and 3-D split, no redundancy: in phases, d + 1 of them; pipelined
     * (4 tiles along i0 for 2 threads), two (the blocks, their edges); 2
     * tiles for 2 threads fall back to phases */
    int64_t n2[3] = {64, 80, 48};
    for (int nd = 2; nd <= 3; nd++) {
        ps_iter_create_example(nd == 2 ? PS_ITER_HEAT2D : PS_ITER_HEAT3D, n2, PS_ITER_PERIODIC, 9, &it);
        for (int order = PS_ITER_SPLIT_AUTO; order <= PS_ITER_SPLIT_PIPELINED + 1; order++) {
            ps_iter_options_init(&o);
            o.tiling = PS_ITER_TILING_SPLIT;
            o.num_threads = 2;
            o.split_order = (ps_iter_split_order)(order <= PS_ITER_SPLIT_PIPELINED ? order : PS_ITER_SPLIT_PIPELINED);
            o.band = 4;
            for (int d = 0; d < nd; d++) o.tile[d] = 16;
            if (order > PS_ITER_SPLIT_PIPELINED) o.tile[0] = 32;
            const int pipelined = o.split_order != PS_ITER_SPLIT_PHASES && order <= PS_ITER_SPLIT_PIPELINED;
            ps_status st = ps_iter_plan_create(ctx, it, &o, &p);
            TU_CHECK(!st, "split %dD: %s", nd, ps_last_error_message());
            if (st) continue;
            ps_iter_plan_get_stats(p, &s);
            TU_CHECK(s.phases == (pipelined ? 2 : nd + 1) && s.points_computed == s.points_needed &&
                         s.split_order == (pipelined ? PS_ITER_SPLIT_PIPELINED : PS_ITER_SPLIT_PHASES),
                     "split %dD, order %d: %d phases (order %d), %.0f of %.0f points", nd, order, s.phases, (int)s.split_order,
                     s.points_computed, s.points_needed);
            ps_iter_plan_destroy(p);
        }
        ps_iter_destroy(it);
    }
}

/* One plan executed from several threads at once on distinct arrays (each
 * execute's own parallel region nested in the caller's): every result
 * equals a lone run's. */
static void test_concurrent(ps_context *ctx)
{
    int64_t n[2] = {70, 90};
    ps_iter *it = NULL;
    ps_iter_plan *p = NULL;
    ps_iter_options o;
    ps_iter_options_init(&o);
    o.tiling = PS_ITER_TILING_OVERLAP;
    o.band = 4;
    TU_OK(ps_iter_create_example(PS_ITER_JACOBI2D, n, PS_ITER_PERIODIC, 9, &it));
    TU_OK(ps_iter_plan_create(ctx, it, &o, &p));
    if (!p) {
        ps_iter_destroy(it);
        return;
    }
    enum { RUNS = 4 };
    size_t npts = (size_t)(n[0] * n[1]);
    float *init = malloc(npts * sizeof *init), *alone = malloc(npts * sizeof *alone), *out[RUNS] = {0};
    cli_stencil_fill(it, &init, 3);
    memcpy(alone, init, npts * sizeof *alone);
    TU_OK(ps_iter_execute(p, &alone, NULL));
    for (int r = 0; r < RUNS; r++)
        if ((out[r] = malloc(npts * sizeof(float)))) memcpy(out[r], init, npts * sizeof(float));
    ps_status st[RUNS];
#pragma omp parallel for num_threads(RUNS) schedule(static, 1)
    for (int r = 0; r < RUNS; r++) st[r] = out[r] ? ps_iter_execute(p, &out[r], NULL) : PS_ERR_OUT_OF_MEMORY;
    for (int r = 0; r < RUNS; r++) {
        TU_CHECK(st[r] == PS_SUCCESS, "concurrent run %d: %s", r, ps_status_str(st[r]));
        TU_CHECK(out[r] && !memcmp(out[r], alone, npts * sizeof(float)), "concurrent run %d differs from a lone run", r);
    }
    for (int r = 0; r < RUNS; r++) free(out[r]);
    free(init);
    free(alone);
    ps_iter_plan_destroy(p);
    ps_iter_destroy(it);
}

static void test_errors(ps_context *ctx)
{
    ps_iter *it = NULL;
    int64_t n[3] = {10, 10, 10}, bad[2] = {10, 0};
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_create(0, n, PS_ITER_FIXED, 1, &it));
    TU_CHECK(!it, "left NULL on error");
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_create(4, n, PS_ITER_FIXED, 1, &it));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_create(2, bad, PS_ITER_FIXED, 1, &it));
    TU_ERR(PS_ERR_NULL_POINTER, ps_iter_create(2, NULL, PS_ITER_FIXED, 1, &it));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_create(2, n, (ps_iter_boundary)7, 1, &it));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_create(2, n, PS_ITER_FIXED, -1, &it));
    int64_t huge[3] = {1 << 20, 1 << 20, 1 << 20};
    TU_ERR(PS_ERR_OVERFLOW, ps_iter_create(3, huge, PS_ITER_FIXED, 1, &it));
    TU_OK(ps_iter_create(2, n, PS_ITER_FIXED, 3, &it));
    int u = -1, v = -1;
    ps_context *c = ctx;
    ps_iter_plan *p = NULL;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, NULL, &p));
    TU_CHECK(!p, "left NULL on error");
    TU_CHECK(ps_iter_add_array(it, "u", &u) == PS_SUCCESS && u == 0, "add u");
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_add_array(it, "u", &v));
    TU_CHECK(ps_iter_add_array(it, "v", &v) == PS_SUCCESS && v == 1, "add v");
    ps_iter_tap taps[3] = {{0, {0, 1, 0}, 0.5f}, {1, {-1, 0, 0}, 0.25f}, {0, {0, 0, 0}, 0.25f}};
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, NULL, &p));
    ps_iter_tap t2 = {2, {0, 0, 0}, 1.0f};
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 1, &t2, 0.0f));
    t2.array = 0;
    t2.offset[2] = 1;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 1, &t2, 0.0f));
    t2.offset[2] = 0;
    t2.offset[0] = 17;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 1, &t2, 0.0f));
    t2.offset[0] = 0;
    t2.weight = NAN;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 1, &t2, 0.0f));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 0, taps, 0.0f));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 3, taps, INFINITY));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 5, 3, taps, 0.0f));
    int nt = -1;
    ps_iter_get_update(it, 0, NULL, &nt, NULL, 0, NULL);
    TU_CHECK(nt == 0, "failed calls left the descriptor unchanged (%d taps)", nt);
    TU_OK(ps_iter_set_update(it, 0, 3, taps, 0.0f));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_set_update(it, 0, 3, taps, 0.0f));
    TU_OK(ps_iter_set_update(it, 1, 3, taps, 0.01f));
    ps_iter_options o;
    ps_iter_options_init(&o);
    o.struct_size = 3;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    ps_iter_options_init(&o);
    o.tiling = PS_ITER_TILING_STEP;
    o.band = 4;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    ps_iter_options_init(&o);
    o.tiling = (ps_iter_tiling)9;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    ps_iter_options_init(&o);
    o.tile[1] = -3;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    ps_iter_options_init(&o);
    o.split_order = (ps_iter_split_order)3;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    ps_iter_options_init(&o);
    o.tiling = PS_ITER_TILING_SPLIT;
    o.band = 3;
    o.tile[0] = 2;
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, &o, &p));
    TU_CHECK(!p, "left NULL on error");
    TU_OK(ps_iter_plan_create(c, it, NULL, &p));
    float a0[100], a1[100], keep0[100];
    for (int i = 0; i < 100; i++) a0[i] = a1[i] = keep0[i] = (float)i;
    float *arr[2] = {a0, a1}, *same[2] = {a0, a0 + 50}, *nul[2] = {a0, NULL};
    TU_ERR(PS_ERR_NULL_POINTER, ps_iter_execute(p, NULL, NULL));
    TU_ERR(PS_ERR_NULL_POINTER, ps_iter_execute(p, nul, NULL));
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_execute(p, same, NULL));
    char *ws = malloc(1 << 20);
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_execute(p, arr, ws + 1));
    free(ws);
    TU_CHECK(!memcmp(a0, keep0, sizeof a0), "nothing written on bad input");
    TU_OK(ps_iter_execute(p, arr, NULL));
    TU_CHECK(memcmp(a0, keep0, sizeof a0), "execute changed the interior");
    ps_iter_plan_destroy(p);
    ps_iter_destroy(it);
    /* no interior */
    int64_t small[1] = {4};
    ps_iter_tap wide = {0, {2, 0, 0}, 1.0f};
    ps_iter_create(1, small, PS_ITER_FIXED, 2, &it);
    ps_iter_add_array(it, NULL, &u);
    ps_iter_set_update(it, u, 1, &wide, 0.0f);
    TU_ERR(PS_ERR_INVALID_ARG, ps_iter_plan_create(c, it, NULL, &p));
    ps_iter_destroy(it);
    ps_iter_destroy(NULL);
    ps_iter_plan_destroy(NULL);
}

int main(void)
{
    const char *count = getenv("PS_TEST_COUNT");
    rng.s = tu_seed("test_iterated", 20240045);
    int n = count ? atoi(count) : 60;
    ps_context *ctx = NULL;
    /* fixed caches: the model decides alike on every machine */
    if (tu_context_with_caches(0, 32 << 10, 1 << 20, 32 << 20, &ctx)) return 1;
    double t0 = cli_now_ms();
    test_errors(ctx);
    test_counts(ctx);
    test_concurrent(ctx);
    test_examples(ctx);
    test_random(ctx, n);
    test_strips();
    ps_context_destroy(ctx);
    printf("test_iterated: %d random descriptors, %.1f s\n", n, (cli_now_ms() - t0) / 1e3);
    return tu_finish("test_iterated");
}
