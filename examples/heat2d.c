/* A 2-D heat equation stepped T times (iterated.h): the stencil built tap by
 * tap, planned once with the cost model's time tiling, executed in place,
 * and checked: bit for bit against the step-by-step plan (every tiling
 * performs the same operations per point) and within float32 rounding of a
 * double-precision loop. Prints both plans' times.
 *
 *     example_heat2d [ROWS COLS STEPS]      (default 1000 1200 100) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "polysci/polysci.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        ps_status st_ = (call);                                                                    \
        if (st_ != PS_SUCCESS) {                                                                   \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, ps_status_str(st_), ps_last_error_message()); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* Median of 3 executions, each from a fresh copy of init. */
static double time_plan(const ps_iter_plan *p, const float *init, float *grid, size_t n, int *failed)
{
    double t[3];
    for (int r = 0; r < 3; r++) {
        memcpy(grid, init, n * sizeof *grid);
        float *arrays[1] = {grid};
        double t0 = now_ms();
        if (ps_iter_execute(p, arrays, NULL) != PS_SUCCESS) *failed = 1;
        t[r] = now_ms() - t0;
    }
    double lo = fmin(t[0], fmin(t[1], t[2])), hi = fmax(t[0], fmax(t[1], t[2]));
    return t[0] + t[1] + t[2] - lo - hi;
}

int main(int argc, char **argv)
{
    const int64_t rows = argc > 3 ? atoll(argv[1]) : 1000, cols = argc > 3 ? atoll(argv[2]) : 1200;
    const int64_t steps = argc > 3 ? atoll(argv[3]) : 100;
    if (rows < 3 || cols < 3 || steps < 0) {
        fprintf(stderr, "usage: example_heat2d [ROWS COLS STEPS] (ROWS, COLS >= 3)\n");
        return 2;
    }
    ps_context *ctx;
    CHECK(ps_context_create(NULL, &ctx));

    /* u' = u + 0.125 (u[y-1] - 2u + u[y+1]) + 0.125 (u[x-1] - 2u + u[x+1]), as five taps */
    ps_iter *it;
    int64_t n[2] = {rows, cols};
    CHECK(ps_iter_create(2, n, PS_ITER_FIXED, steps, &it));
    int u;
    CHECK(ps_iter_add_array(it, "u", &u));
    const ps_iter_tap taps[5] = {{u, {-1, 0, 0}, 0.125f}, {u, {0, -1, 0}, 0.125f}, {u, {0, 0, 0}, 0.5f},
                                 {u, {0, 1, 0}, 0.125f}, {u, {1, 0, 0}, 0.125f}};
    CHECK(ps_iter_set_update(it, u, 5, taps, 0.0f));

    ps_iter_plan *plan, *step;
    CHECK(ps_iter_plan_create(ctx, it, NULL, &plan)); /* the cost model's tiling and sizes */
    ps_iter_options o;
    ps_iter_options_init(&o);
    o.tiling = PS_ITER_TILING_STEP;
    CHECK(ps_iter_plan_create(ctx, it, &o, &step));
    ps_iter_plan_stats s = {.struct_size = sizeof s};
    CHECK(ps_iter_plan_get_stats(plan, &s));
    static const char *const names[] = {"auto", "step", "overlap", "split", "hybrid"};
    printf("heat2d %lldx%lld, T = %lld: %s tiles, band %lld, tile %lldx%lld, redundant %.2f%%\n", (long long)rows,
           (long long)cols, (long long)steps, names[s.tiling], (long long)s.band, (long long)s.tile[0],
           (long long)s.tile[1], 100 * s.redundant_fraction);

    const size_t npts = (size_t)(rows * cols);
    float *init = malloc(npts * sizeof *init), *a = malloc(npts * sizeof *a), *b = malloc(npts * sizeof *b);
    double *r0 = malloc(npts * sizeof *r0), *r1 = malloc(npts * sizeof *r1);
    if (!init || !a || !b || !r0 || !r1) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    unsigned seed = 12345;
    for (size_t i = 0; i < npts; i++) {
        seed = seed * 1103515245u + 12345u;
        init[i] = (float)((seed >> 8) & 0xffff) / 65536.0f;
    }
    int failed = 0;
    const double t_plan = time_plan(plan, init, a, npts, &failed), t_step = time_plan(step, init, b, npts, &failed);
    if (failed) {
        fprintf(stderr, "ps_iter_execute failed: %s\n", ps_last_error_message());
        return 1;
    }
    const int same = memcmp(a, b, npts * sizeof *a) == 0;

    /* double-precision reference: the same five terms, boundary cells fixed */
    for (size_t i = 0; i < npts; i++) r0[i] = r1[i] = init[i];
    for (int64_t t = 0; t < steps; t++) {
        for (int64_t y = 1; y < rows - 1; y++)
            for (int64_t x = 1; x < cols - 1; x++) {
                const double *c = r0 + y * cols + x;
                r1[y * cols + x] = 0.125 * c[-cols] + 0.125 * c[-1] + 0.5 * c[0] + 0.125 * c[1] + 0.125 * c[cols];
            }
        double *sw = r0;
        r0 = r1;
        r1 = sw;
    }
    double err = 0;
    for (size_t i = 0; i < npts; i++) err = fmax(err, fabs((double)a[i] - r0[i]));
    /* each step rounds 5 multiply-adds of values in [0, 1): errors add up at most linearly in T */
    const double tol = 6.0 * 0x1p-24 * (double)(steps + 1);
    printf("auto %.2f ms, step by step %.2f ms (%.2fx); bit for bit equal to step by step: %s; "
           "max |polysci - double| = %.2e (bound %.2e)\n",
           t_plan, t_step, t_step / t_plan, same ? "yes" : "NO", err, tol);
    const int ok = same && err <= tol;
    puts(ok ? "OK" : "FAILED");

    free(init);
    free(a);
    free(b);
    free(r0);
    free(r1);
    ps_iter_plan_destroy(plan);
    ps_iter_plan_destroy(step);
    ps_iter_destroy(it);
    ps_context_destroy(ctx);
    return ok ? 0 : 1;
}
