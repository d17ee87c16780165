/* polysci stencil — plan, run and time one of the iterated-stencil
 * benchmarks (stencils.h) with a chosen or forced tiling. */
#include "cli.h"
#include "stencils.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const tiling_names[5] = {"auto", "step", "overlap", "split", "hybrid"};

static void usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci stencil NAME [options]\n\n"
               "Builds stencil NAME (heat1d, heat2d, heat3d, jacobi2d) over a grid of --size points\n"
               "(default: the benchmark's: 160000, 4000x4000, 150x150x150, 4000x4000) for --T steps,\n"
               "plans it (the cost model's tiling, or the one --tiling forces, with --band and --tile\n"
               "sizes), runs it --reps times after --warmup runs and prints the median time and GFLOP/s\n"
               "(flops per point as bench/stencil's Halide versions count them). --check compares one\n"
               "run from the initial grid with the step-by-step plan (bitwise) and with a float64\n"
               "reference (within the error bound), --describe prints the plan.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

/* "A", "AxB" or "AxBxC" into n[0..ndim-1] (one value: every dimension);
 * 0 when it does not parse. */
static int parse_dims(const char *text, int ndim, int64_t lo, int64_t *n)
{
    int64_t v[PS_ITER_MAX_DIMS];
    int k = 0;
    const char *p = text;
    while (k < PS_ITER_MAX_DIMS) {
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p || x < lo || x > (1LL << 40)) return 0;
        v[k++] = x;
        if (*end == '\0') break;
        if (*end != 'x') return 0;
        p = end + 1;
    }
    if (*p == '\0' && k == 0) return 0;
    if (k != 1 && k != ndim) return 0;
    for (int d = 0; d < ndim; d++) n[d] = v[k == 1 ? 0 : d];
    return 1;
}

int cmd_stencil(int argc, char **argv)
{
    static const char cmd[] = "stencil";
    int64_t steps = -1, threads = 0, reps = 5, warmup = 1, band = 0, skew = 0;
    const char *size = NULL, *tiling = "auto", *tile = NULL, *split_order = "auto";
    int periodic = 0, describe = 0, check = 0, json = 0;
    cli_opt opts[] = {
        {"size", CLI_OPT_STRING, &size, 0, 0, "N[xN[xN]]  grid extents, outermost first (one value: every dimension)", 0},
        {"T", CLI_OPT_INT, &steps, 0, 1 << 30, "T  time steps (default: the benchmark's)", 0},
        {"periodic", CLI_OPT_FLAG, &periodic, 0, 0, "periodic boundaries (default fixed)", 0},
        {"tiling", CLI_OPT_STRING, &tiling, 0, 0, "K  auto (default), step, overlap, split or hybrid", 0},
        {"band", CLI_OPT_INT, &band, 0, 1 << 20, "B  time steps per band (0: the model's)", 0},
        {"tile", CLI_OPT_STRING, &tile, 0, 0, "N[xN[xN]]  space tile per dimension (0: the model's)", 0},
        {"skew-width", CLI_OPT_INT, &skew, 0, 1 << 30, "W  hybrid: width of the skewed tiles (0: the model's)", 0},
        {"split-order", CLI_OPT_STRING, &split_order, 0, 0,
         "O  split: auto (default), phases or pipelined (include/polysci/iterated.h)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 4096, "T  threads (default: the context's)", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  timed executions (default 5)", 0},
        {"warmup", CLI_OPT_INT, &warmup, 0, 100000, "W  untimed executions first (default 1)", 0},
        {"describe", CLI_OPT_FLAG, &describe, 0, 0, "print the plan", 0},
        {"check", CLI_OPT_FLAG, &check, 0, 0, "compare with the step-by-step plan and a float64 reference", 0},
        {"json", CLI_OPT_FLAG, &json, 0, 0, "one JSON object on stdout", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout, opts, n_opts);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *name = argv[1];
    if (cli_choice(cmd, "NAME", name, cli_stencil_names, CLI_N_STENCILS) < 0) return CLI_USAGE;
    const cli_stencil_bench *b = cli_stencil_find(name);
    int rc = cli_parse(cmd, argc - 1, argv + 1, opts, n_opts);
    if (rc < 0) {
        usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    int kind = cli_choice(cmd, "--tiling", tiling, tiling_names, 5);
    if (kind < 0) return CLI_USAGE;
    static const char *const split_orders[] = {"auto", "phases", "pipelined"};
    int order = cli_choice(cmd, "--split-order", split_order, split_orders, 3);
    if (order < 0) return CLI_USAGE;
    int64_t n[PS_ITER_MAX_DIMS] = {1, 1, 1}, tiles[PS_ITER_MAX_DIMS] = {0, 0, 0};
    for (int d = 0; d < b->ndim; d++) n[d] = b->n[d];
    if (size && !parse_dims(size, b->ndim, 1, n)) {
        fprintf(stderr, "polysci stencil: --size '%s' is not N or %d extents NxN... >= 1\n", size, b->ndim);
        return CLI_USAGE;
    }
    if (tile && !parse_dims(tile, b->ndim, 0, tiles)) {
        fprintf(stderr, "polysci stencil: --tile '%s' is not N or %d sizes NxN... >= 0\n", tile, b->ndim);
        return CLI_USAGE;
    }
    ps_context *ctx = NULL;
    ps_iter *it = NULL;
    ps_iter_plan *plan = NULL, *ref_plan = NULL;
    float *arr = NULL, *init = NULL, *ref = NULL;
    double *dref = NULL;
    void *ws = NULL;
    rc = CLI_FAIL;
    if (cli_context_create((int)threads, &ctx)) return CLI_FAIL;
    ps_status st = cli_stencil_build(b, n, steps, periodic ? PS_ITER_PERIODIC : PS_ITER_FIXED, &it);
    if (st) {
        cli_report_status("stencil: building the descriptor", st);
        goto done;
    }
    ps_iter_options o;
    ps_iter_options_init(&o);
    o.tiling = (ps_iter_tiling)kind;
    o.band = band;
    o.skew_width = skew;
    o.split_order = (ps_iter_split_order)order;
    for (int d = 0; d < b->ndim; d++) o.tile[d] = tiles[d];
    double t0 = cli_now_ms();
    st = ps_iter_plan_create(ctx, it, &o, &plan);
    double plan_ms = cli_now_ms() - t0;
    if (st) {
        cli_report_status("stencil: planning", st);
        goto done;
    }
    ps_iter_info info = {.struct_size = sizeof info};
    ps_iter_get_info(it, &info);
    size_t npts = (size_t)(info.n[0] * info.n[1] * info.n[2]);
    int ok = 1, bitwise = -1;
    double max_err = 0, tol = 0;
    if (check) {
        /* one run of each plan from the same initial grid */
        size_t ws_bytes = 0;
        ps_iter_plan_workspace_size(plan, &ws_bytes);
        arr = cli_alloc(npts * sizeof(float));
        init = cli_alloc(npts * sizeof(float));
        ws = cli_alloc(ws_bytes + 64);
        if (!arr || !init || !ws) {
            fprintf(stderr, "polysci stencil: out of memory\n");
            goto done;
        }
        cli_stencil_fill(it, &init, 1);
        ps_iter_options so;
        ps_iter_options_init(&so);
        so.tiling = PS_ITER_TILING_STEP;
        ref = cli_alloc(npts * sizeof(float));
        dref = malloc(npts * sizeof(double));
        if (!ref || !dref) {
            fprintf(stderr, "polysci stencil: out of memory\n");
            goto done;
        }
        if ((st = ps_iter_plan_create(ctx, it, &so, &ref_plan))) {
            cli_report_status("stencil: planning step by step", st);
            goto done;
        }
        memcpy(arr, init, npts * sizeof(float));
        memcpy(ref, init, npts * sizeof(float));
        if ((st = ps_iter_execute(plan, &arr, ws)) || (st = ps_iter_execute(ref_plan, &ref, NULL))) {
            cli_report_status("stencil: execute", st);
            goto done;
        }
        bitwise = !memcmp(arr, ref, npts * sizeof(float));
        const float *in[1] = {init};
        if (cli_stencil_reference(it, in, &dref)) {
            fprintf(stderr, "polysci stencil: out of memory\n");
            goto done;
        }
        double max_in = 0;
        for (size_t i = 0; i < npts; i++) {
            max_in = fmax(max_in, fabs(init[i]));
            double e = fabs((double)arr[i] - dref[i]);
            if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
        }
        tol = cli_stencil_tolerance(it, max_in);
        ok = bitwise && max_err <= tol;
    }
    cli_stencil_result r;
    if ((st = cli_stencil_measure(it, plan, b->flops_per_point, (int)warmup, (int)reps, &r))) {
        cli_report_status("stencil: execute", st);
        goto done;
    }
    const ps_iter_plan_stats s = r.stats;
    const double med = r.median_ms, best = r.best_ms, gflops = r.gflops;
    if (json) {
        printf("{\"stencil\": \"%s\", \"shape\": [", name);
        for (int d = 0; d < info.ndim; d++) printf("%s%lld", d ? ", " : "", (long long)info.n[d]);
        printf("], \"T\": %lld, \"boundary\": \"%s\", \"tiling\": \"%s\", \"forced\": %s, \"band\": %lld, \"tile\": [",
               (long long)info.steps, periodic ? "periodic" : "fixed", tiling_names[s.tiling], kind ? "true" : "false",
               (long long)s.band);
        for (int d = 0; d < info.ndim; d++) printf("%s%lld", d ? ", " : "", (long long)s.tile[d]);
        printf("], \"skew_width\": %lld, \"split_order\": \"%s\", \"phases\": %d, \"threads\": %d, \"plan_ms\": %.3f, \"median_ms\": %.4f, "
               "\"best_ms\": %.4f, \"flops_per_point\": %d, \"interior_points\": %lld, \"gflops\": %.3f, \"redundant\": %.6f, "
               "\"model_ms\": %.4f, \"workspace_bytes\": %zu, \"scratch_bytes\": %zu",
               (long long)s.skew_width, s.tiling == PS_ITER_TILING_SPLIT ? split_orders[s.split_order] : "", s.phases,
               ps_context_num_threads(ctx), plan_ms, med, best, b->flops_per_point,
               (long long)info.updated_points, gflops, s.redundant_fraction, s.model_ms, s.workspace_bytes, s.scratch_bytes);
        if (check)
            printf(", \"bitwise_equal_step\": %s, \"max_abs_err\": %.3g, \"tolerance\": %.3g, \"ok\": %s", bitwise ? "true" : "false",
                   max_err, tol, ok ? "true" : "false");
        printf("}\n");
    } else {
        if (describe) {
            size_t need = 0;
            ps_iter_plan_describe(plan, NULL, 0, &need);
            char *text = malloc(need + 1);
            if (text) {
                ps_iter_plan_describe(plan, text, need + 1, NULL);
                fputs(text, stdout);
                free(text);
            }
        }
        printf("%s ", name);
        for (int d = 0; d < info.ndim; d++) printf("%s%lld", d ? "x" : "", (long long)info.n[d]);
        printf(" T=%lld %s: %s%s, band %lld, tile", (long long)info.steps, periodic ? "periodic" : "fixed", tiling_names[s.tiling],
               kind ? " (forced)" : " (model)", (long long)s.band);
        for (int d = 0; d < info.ndim; d++) printf("%s%lld", d ? "x" : " ", (long long)s.tile[d]);
        if (s.skew_width) printf(", skewed tiles %lld", (long long)s.skew_width);
        if (s.tiling == PS_ITER_TILING_SPLIT) printf(", %s", split_orders[s.split_order]);
        printf("; planned in %.2f ms, median %.3f ms over %lld runs (best %.3f), %.2f GFLOP/s, redundant %.2f%%, model %.3g ms\n",
               plan_ms, med, (long long)reps, best, gflops, 100 * s.redundant_fraction, s.model_ms);
        if (check)
            printf("check: %s step by step, max error %.3g against float64 (bound %.3g): %s\n",
                   bitwise ? "bitwise equal to" : "DIFFERENT FROM", max_err, tol, ok ? "OK" : "FAIL");
    }
    rc = ok ? CLI_OK : CLI_FAIL;
done:
    free(arr);
    free(init);
    free(ref);
    free(dref);
    free(ws);
    ps_iter_plan_destroy(plan);
    ps_iter_plan_destroy(ref_plan);
    ps_iter_destroy(it);
    ps_context_destroy(ctx);
    return rc;
}
