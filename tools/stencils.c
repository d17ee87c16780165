/* polysci CLI — the iterated-stencil benchmarks and their float64
 * reference (stencils.h). */
#include "stencils.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *const cli_stencil_names[CLI_N_STENCILS] = {"heat1d", "heat2d", "heat3d", "jacobi2d"};

static const cli_stencil_bench benches[CLI_N_STENCILS] = {
    {"heat1d", PS_ITER_HEAT1D, 1, {160000, 1, 1}, 1000, 5},
    {"heat2d", PS_ITER_HEAT2D, 2, {4000, 4000, 1}, 64, 10},
    {"heat3d", PS_ITER_HEAT3D, 3, {150, 150, 150}, 100, 15},
    {"jacobi2d", PS_ITER_JACOBI2D, 2, {4000, 4000, 1}, 64, 9},
};

const cli_stencil_bench *cli_stencil_find(const char *name)
{
    for (int i = 0; i < CLI_N_STENCILS && name; i++)
        if (!strcmp(benches[i].name, name)) return &benches[i];
    return NULL;
}

ps_status cli_stencil_build(const cli_stencil_bench *b, const int64_t *n, int64_t steps, ps_iter_boundary boundary,
                            ps_iter **it)
{
    return ps_iter_create_example(b->example, n ? n : b->n, boundary, steps < 0 ? b->steps : steps, it);
}

void cli_stencil_fill(const ps_iter *it, float *const *arrays, uint64_t seed)
{
    ps_iter_info info = {.struct_size = sizeof info};
    if (ps_iter_get_info(it, &info)) return;
    size_t n = (size_t)(info.n[0] * info.n[1] * info.n[2]);
    for (int a = 0; a < info.n_arrays; a++) {
        cli_fill_random(arrays[a], n, seed + (uint64_t)a);
        for (size_t i = 0; i < n; i++) arrays[a][i] = 0.525f + 0.475f * arrays[a][i];
    }
}

ps_status cli_stencil_time(const ps_iter_plan *plan, float *const *arrays, void *ws, int warmup, int reps, double *median_ms,
                           double *best_ms)
{
    for (int i = 0; i < warmup; i++) {
        ps_status st = ps_iter_execute(plan, arrays, ws);
        if (st) return st;
    }
    double *t = malloc((size_t)(reps > 0 ? reps : 1) * sizeof *t);
    if (!t) return PS_ERR_OUT_OF_MEMORY;
    for (int r = 0; r < reps; r++) {
        double a = cli_now_ms();
        ps_status st = ps_iter_execute(plan, arrays, ws);
        t[r] = cli_now_ms() - a;
        if (st) {
            free(t);
            return st;
        }
    }
    double best = t[0];
    for (int r = 1; r < reps; r++) best = t[r] < best ? t[r] : best;
    *median_ms = reps > 0 ? cli_median(t, reps) : 0;
    *best_ms = reps > 0 ? best : 0;
    free(t);
    return PS_SUCCESS;
}

ps_status cli_stencil_measure(const ps_iter *it, const ps_iter_plan *plan, int flops_per_point, int warmup, int reps,
                              cli_stencil_result *r)
{
    memset(r, 0, sizeof *r);
    ps_iter_info info = {.struct_size = sizeof info};
    ps_status st = ps_iter_get_info(it, &info);
    if (st) return st;
    size_t npts = (size_t)(info.n[0] * info.n[1] * info.n[2]), ws_bytes = 0;
    ps_iter_plan_workspace_size(plan, &ws_bytes);
    float *arrays[PS_ITER_MAX_ARRAYS] = {0};
    void *ws = cli_alloc(ws_bytes + 64);
    int ok = ws != NULL;
    for (int a = 0; a < info.n_arrays; a++) ok &= (arrays[a] = cli_alloc(npts * sizeof(float))) != NULL;
    if (ok) {
        cli_stencil_fill(it, arrays, 1);
        st = cli_stencil_time(plan, arrays, ws, warmup, reps, &r->median_ms, &r->best_ms);
    } else {
        st = PS_ERR_OUT_OF_MEMORY;
    }
    for (int a = 0; a < info.n_arrays; a++) free(arrays[a]);
    free(ws);
    if (st) return st;
    r->stats.struct_size = sizeof r->stats;
    st = ps_iter_plan_get_stats(plan, &r->stats);
    r->gflops = r->median_ms > 0 ? (double)flops_per_point * (double)info.updated_points * (double)info.steps / (r->median_ms * 1e6) : 0;
    return st;
}

static int64_t wrap(int64_t i, int64_t n)
{
    int64_t r = i % n;
    return r < 0 ? r + n : r;
}

int cli_stencil_reference(const ps_iter *it, const float *const *in, double *const *out)
{
    ps_iter_info info = {.struct_size = sizeof info};
    if (ps_iter_get_info(it, &info)) return -1;
    const int na = info.n_arrays, periodic = info.boundary == PS_ITER_PERIODIC;
    const int64_t npts = info.n[0] * info.n[1] * info.n[2];
    /* extents and radii as 3-D, the grid's dimensions last */
    int64_t N[3] = {1, 1, 1};
    int R[3] = {0, 0, 0};
    for (int d = 0; d < info.ndim; d++) {
        N[3 - info.ndim + d] = info.n[d];
        R[3 - info.ndim + d] = info.radius[d];
    }
    double *prev[PS_ITER_MAX_ARRAYS];
    int n_taps[PS_ITER_MAX_ARRAYS];
    float cst[PS_ITER_MAX_ARRAYS];
    ps_iter_tap *taps[PS_ITER_MAX_ARRAYS];
    int ok = 1;
    for (int a = 0; a < na; a++) {
        prev[a] = malloc((size_t)npts * sizeof(double));
        ps_iter_get_update(it, a, NULL, &n_taps[a], NULL, 0, &cst[a]);
        taps[a] = malloc((size_t)(n_taps[a] > 0 ? n_taps[a] : 1) * sizeof(ps_iter_tap));
        if (!prev[a] || !taps[a]) ok = 0;
        else {
            ps_iter_get_update(it, a, NULL, NULL, taps[a], n_taps[a], NULL);
            for (int64_t i = 0; i < npts; i++) out[a][i] = in[a][i];
        }
    }
    for (int64_t t = 0; t < info.steps && ok; t++) {
        for (int a = 0; a < na; a++) memcpy(prev[a], out[a], (size_t)npts * sizeof(double));
        for (int a = 0; a < na; a++) {
#pragma omp parallel for collapse(2) schedule(static) if (npts >= 65536)
            for (int64_t z = 0; z < N[0]; z++)
                for (int64_t y = 0; y < N[1]; y++)
                    for (int64_t x = 0; x < N[2]; x++) {
                        int64_t c[3] = {z, y, x};
                        int inner = 1;
                        for (int d = 0; d < 3; d++) inner &= periodic || (c[d] >= R[d] && c[d] < N[d] - R[d]);
                        if (!inner) continue;
                        double v = cst[a];
                        for (int k = 0; k < n_taps[a]; k++) {
                            int64_t s[3];
                            for (int d = 0; d < 3; d++) {
                                int od = d - (3 - info.ndim);
                                int64_t q = c[d] + (od >= 0 ? taps[a][k].offset[od] : 0);
                                s[d] = periodic ? wrap(q, N[d]) : q;
                            }
                            v += (double)taps[a][k].weight * prev[taps[a][k].array][(s[0] * N[1] + s[1]) * N[2] + s[2]];
                        }
                        out[a][(z * N[1] + y) * N[2] + x] = v;
                    }
        }
    }
    for (int a = 0; a < na; a++) {
        free(prev[a]);
        free(taps[a]);
    }
    return ok ? 0 : -1;
}

double cli_stencil_tolerance(const ps_iter *it, double max_in)
{
    ps_iter_info info = {.struct_size = sizeof info};
    if (ps_iter_get_info(it, &info)) return 0;
    double g = 0, c = 0;
    int k = 0;
    for (int a = 0; a < info.n_arrays; a++) {
        int nt = 0;
        float cst = 0;
        ps_iter_get_update(it, a, NULL, &nt, NULL, 0, &cst);
        ps_iter_tap *taps = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *taps);
        if (!taps) return 0;
        ps_iter_get_update(it, a, NULL, NULL, taps, nt, NULL);
        double s = 0;
        for (int j = 0; j < nt; j++) s += fabs((double)taps[j].weight);
        free(taps);
        g = s > g ? s : g;
        c = fabs((double)cst) > c ? fabs((double)cst) : c;
        k = nt > k ? nt : k;
    }
    /* |u_t| <= g |u_{t-1}| + c, so |u| <= (max_in + T c) max(1, g^T); the
     * error of step t is at most (k + 1) u |u| plus g times the error
     * before it. */
    double T = (double)info.steps, gT = pow(g > 1 ? g : 1.0, T);
    double bound = (max_in + T * c) * gT;
    double amp = g <= 1 ? T : (gT - 1) / (g - 1);
    return 4.0 * (k + 1) * ldexp(1.0, -24) * bound * amp;
}
