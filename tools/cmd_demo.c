/* polysci CLI — `polysci demo`: plan, run and check every layer of a layers file. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LAYERS "resnet50.txt"

static void demo_usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci demo [--layers FILE] [--N 2] [--threads T] [options]\n"
               "Plans and runs every layer of a layers file (default: %s of bench/layers),\n"
               "checks each full output against a double-precision reference and prints a\n"
               "table. Exits non-zero if any layer fails. FILE may be a path or the name of a\n"
               "layer set the repository ships (bench/layers, installed as share/polysci/layers):\n"
               "resnet50, fastrcnn, mobilenet, alexnet, overfeat, vgga, googlenet, gemm.\n"
               "Shapes: conv 'HxW C->K RxS/stride p<pad>', gemm 'MxNxK'.\n\noptions:\n",
            DEFAULT_LAYERS);
    cli_print_options(f, opts, n);
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    const char *layers_arg = NULL, *layout = "nhwc";
    int64_t batch = 2, reps = 5;
    int bias = 0, relu = 0, describe = 0;
    cli_plan_args pa;
    cli_check_args ca;
    cli_plan_args_defaults(&pa);
    cli_check_args_defaults(&ca);
    cli_opt opts[] = {
        {"layers", CLI_OPT_STRING, &layers_arg, 0, 0, "FILE  layers file, or a set name of bench/layers (e.g. vgga)", 0},
        {"N", CLI_OPT_INT, &batch, 1, INT32_MAX, "N  batch size of the conv layers (default 2)", 0},
        CLI_THREADS_OPT(pa, 0, "T  threads (default: OpenMP's)"),
        CLI_RANKER_OPT(pa),
        CLI_TOP_K_OPT(pa),
        {"reps", CLI_OPT_INT, &reps, 1, 1000000, "R  timed executions per layer, median (default 5)", 0},
        {"layout", CLI_OPT_STRING, &layout, 0, 0, "L  activation layout: nhwc (default) or nchw", 0},
        {"bias", CLI_OPT_FLAG, &bias, 0, 0, "fused bias epilogue on every conv layer", 0},
        {"relu", CLI_OPT_FLAG, &relu, 0, 0, "fused ReLU epilogue on every conv layer", 0},
        CLI_CHECK_OPTS(ca),
        CLI_NO_CACHE_OPT(pa),
        {"describe", CLI_OPT_FLAG, &describe, 0, 0, "also print each plan's description", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        demo_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    int li = cli_choice(cmd, "layout", layout, cli_layout_names, 2);
    ps_ranker ranker;
    ps_plan_options po;
    if (li < 0 || cli_plan_args_options(cmd, &pa, &ranker, &po) || cli_check_args_valid(cmd, &ca)) return CLI_USAGE;

    char path[4096];
    if (cli_resolve_layers(cmd, layers_arg, DEFAULT_LAYERS, path, sizeof path)) return CLI_FAIL;
    cli_layer *layers = NULL;
    int n_layers = 0;
    unsigned post = (bias ? PS_POST_BIAS : 0u) | (relu ? PS_POST_RELU : 0u);
    if (cli_read_layers(cmd, path, batch, (ps_act_layout)li, post, &layers, &n_layers)) return CLI_FAIL;

    ps_context *ctx = NULL;
    if (cli_context_create((int)pa.threads, &ctx) != CLI_OK) {
        free(layers);
        return CLI_FAIL;
    }

    printf("polysci %s demo: %s\n", ps_version(), path);
    printf("%d layers, conv batch N=%" PRId64 ", layout %s%s%s, %d threads, ranker %s%s, median of %"
           PRId64 " runs, tolerance %.1e (max |err| / max |ref|)\n\n",
           n_layers, batch, cli_layout_names[li], bias ? ", +bias" : "", relu ? ", +relu" : "",
           ps_context_num_threads(ctx), cli_ranker_names[ranker], pa.top_k > 1 ? " (top-k timed)" : "", reps,
           ca.tol);
    int nw = 16, sw = 24; /* column widths: the longest name and shape */
    for (int i = 0; i < n_layers; i++) {
        char shp[128];
        cli_shape_short(&layers[i].desc, shp, sizeof shp);
        int ln = (int)strlen(layers[i].name), ls = (int)strlen(shp);
        if (ln > nw) nw = ln;
        if (ls > sw) sw = ls;
    }
    printf("%-*s %-*s %10s %10s %9s %12s  %s\n", nw, "layer", sw, "shape", "plan ms", "exec ms", "GFLOP/s",
           "max rel err", "result");
    fflush(stdout);

    int n_ok = 0;
    double total_exec = 0.0, total_plan = 0.0, total_flops = 0.0;
    for (int i = 0; i < n_layers; i++) {
        char shp[128];
        cli_shape_short(&layers[i].desc, shp, sizeof shp);
        cli_check_opts o = {.schedule = NULL, .num_threads = po.num_threads, .ranker = po.ranker,
                            .top_k = po.top_k, .budget_ms = po.time_budget_ms, .plan_flags = po.flags, .reps = (int)reps,
                            .tol = ca.tol, .describe = describe, .seed = (uint64_t)ca.seed + (uint64_t)i};
        cli_result res;
        int r = ps_desc_validate(&layers[i].desc) == PS_SUCCESS ? cli_check(ctx, &layers[i].desc, &o, &res)
                                                                : -1;
        if (r == -1) {
            memset(&res, 0, sizeof res);
            snprintf(res.error, sizeof res.error, "ps_desc_validate failed: %s", ps_last_error_message());
        }
        if (r == CLI_OK) {
            printf("%-*s %-*s %10.2f %10.3f %9.2f %12.2e  %s\n", nw, layers[i].name, sw, shp, res.plan_ms,
                   res.exec_ms, res.gflops, res.cmp.rel_err, res.ok ? "OK" : "FAIL");
            total_exec += res.exec_ms;
            total_plan += res.plan_ms;
            total_flops += res.flops;
            if (res.ok) n_ok++;
            else if (res.cmp.n_nonfinite)
                printf("  %zu outputs are NaN/inf (not written or overflowed)\n", res.cmp.n_nonfinite);
        } else {
            printf("%-*s %-*s %10s %10s %9s %12s  FAIL\n", nw, layers[i].name, sw, shp, "-", "-", "-", "-");
            printf("  %s\n", res.error);
        }
        if (describe && res.description) printf("%s\n", res.description);
        free(res.description);
        fflush(stdout);
    }
    printf("\n%d/%d layers OK; plan %.1f ms total, exec %.2f ms total (%.2f GFLOP/s overall)\n", n_ok,
           n_layers, total_plan, total_exec, total_exec > 0 ? total_flops / (total_exec * 1e6) : 0.0);
    ps_context_destroy(ctx);
    free(layers);
    return n_ok == n_layers ? CLI_OK : CLI_FAIL;
}
