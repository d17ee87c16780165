/* polysci pipeline — plan, run and time one of the benchmark pipelines
 * (pipelines.h) with the stage-graph engine. */
#include "cli.h"
#include "pipelines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const fusion_names[4] = {"dp", "greedy", "none", "fixed"};

static void usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci pipeline NAME [options]\n\n"
               "Builds pipeline NAME (harris, unsharp, unsharp_pm, blur3x3, laplacian) for an image of\n"
               "--height x --width pixels and 3 channels, plans it, runs it --reps times and prints\n"
               "the median time; --check also compares the output with the plan that fuses nothing\n"
               "(each stage computed whole), --describe prints the plan.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

int cmd_pipeline(int argc, char **argv)
{
    static const char cmd[] = "pipeline";
    int64_t height = 2832, width = 4256, images = 1, threads = 0, reps = 5, tile_h = 0, tile_w = 0, limit = 0, chunk = 0;
    const char *fusion = "dp";
    int describe = 0, check = 0, json = 0, no_inline = 0, no_epilogue = 0, no_codegen = 0;
    cli_opt opts[] = {
        {"height", CLI_OPT_INT, &height, 1, 1 << 20, "H  image rows (default 2832)", 0},
        {"width", CLI_OPT_INT, &width, 1, 1 << 20, "W  image columns (default 4256)", 0},
        {"images", CLI_OPT_INT, &images, 1, 1 << 16, "N  images (default 1)", 0},
        {"fusion", CLI_OPT_STRING, &fusion, 0, 0, "F  dp (default), greedy or none", 0},
        {"tile-h", CLI_OPT_INT, &tile_h, 0, 1 << 24, "T  force tiles of T rows (with --tile-w)", 0},
        {"tile-w", CLI_OPT_INT, &tile_w, 0, 1 << 24, "T  force tiles of T columns (with --tile-h)", 0},
        {"chunk-w", CLI_OPT_INT, &chunk, 0, 1 << 24, "C  force bands to run in chunks of C columns", 0},
        {"group-limit", CLI_OPT_INT, &limit, 0, 4096, "L  first group-size bound of the bounded DP (0 = automatic)", 0},
        {"no-inline", CLI_OPT_FLAG, &no_inline, 0, 0, "keep pointwise stages as stages of their own", 0},
        {"no-epilogue", CLI_OPT_FLAG, &no_epilogue, 0, 0, "store every stage's rows (no producer epilogues)", 0},
        {"no-codegen", CLI_OPT_FLAG, &no_codegen, 0, 0, "interpret expressions (no code compiled at plan time)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 4096, "T  threads (default: the context's)", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  timed executions (default 5)", 0},
        {"describe", CLI_OPT_FLAG, &describe, 0, 0, "print the plan", 0},
        {"check", CLI_OPT_FLAG, &check, 0, 0, "compare with the unfused plan", 0},
        {"json", CLI_OPT_FLAG, &json, 0, 0, "one JSON object on stdout", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout, opts, n_opts);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *name = argv[1];
    int which = cli_choice(cmd, "NAME", name, cli_pipeline_names, CLI_N_PIPELINES);
    if (which < 0) return CLI_USAGE;
    int rc = cli_parse(cmd, argc - 1, argv + 1, opts, n_opts);
    if (rc < 0) {
        usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    int mode = cli_choice(cmd, "--fusion", fusion, fusion_names, 3);
    if (mode < 0) return CLI_USAGE;
    if (!tile_h != !tile_w) {
        fprintf(stderr, "polysci pipeline: --tile-h and --tile-w go together\n");
        return CLI_USAGE;
    }
    ps_context_options co;
    ps_context_options_init(&co);
    co.num_threads = (int)threads;
    ps_context *ctx = NULL;
    ps_graph *g = NULL;
    ps_graph_plan *plan = NULL, *ref = NULL;
    float *in = NULL, *out = NULL, *out_ref = NULL;
    void *ws = NULL;
    rc = CLI_FAIL;
    ps_status st = ps_context_create(&co, &ctx);
    if (!st) st = cli_pipeline_build(name, images, height, width, &g);
    ps_graph_options go;
    ps_graph_options_init(&go);
    go.fusion = (ps_fusion)mode;
    go.tile_h = tile_h;
    go.tile_w = tile_w;
    go.group_limit = (int)limit;
    go.chunk_w = chunk;
    go.flags = (no_inline ? PS_GRAPH_NO_INLINE : 0) | (no_epilogue ? PS_GRAPH_NO_EPILOGUE : 0) |
               (no_codegen ? PS_GRAPH_NO_CODEGEN : 0);
    double t0 = cli_now_ms();
    if (!st) st = ps_graph_plan_create(ctx, g, &go, &plan);
    double plan_ms = cli_now_ms() - t0;
    if (st) {
        cli_report_status("pipeline: planning", st);
        goto done;
    }
    ps_tensor_info ii = {.struct_size = sizeof ii}, oi = {.struct_size = sizeof oi};
    ps_graph_tensor_info(g, ps_graph_input(g, 0), &ii);
    ps_graph_tensor_info(g, ps_graph_output(g, 0), &oi);
    size_t n_in = (size_t)(ii.n * ii.c * ii.h * ii.w), n_out = (size_t)(oi.n * oi.c * oi.h * oi.w), ws_bytes = 0;
    ps_graph_plan_workspace_size(plan, &ws_bytes);
    in = cli_alloc(n_in * sizeof(float));
    out = cli_alloc(n_out * sizeof(float));
    ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64 + 64);
    if (!in || !out || !ws) {
        fprintf(stderr, "polysci pipeline: out of memory\n");
        goto done;
    }
    /* Inputs uniform in [0.05, 1), as the Halide benchmarks draw them. */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n_in; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        in[i] = 0.05f + 0.95f * (float)((seed >> 40) & 0xffffff) / 16777216.0f;
    }
    const float *ins[1] = {in};
    float *outs[1] = {out};
    if ((st = ps_graph_execute(plan, ins, outs, ws))) {
        cli_report_status("pipeline: execute", st);
        goto done;
    }
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) goto done;
    for (int64_t r = 0; r < reps; r++) {
        double a = cli_now_ms();
        ps_graph_execute(plan, ins, outs, ws);
        t[r] = cli_now_ms() - a;
    }
    double med = cli_median(t, (int)reps), best = t[0];
    free(t);
    double max_err = 0;
    int ok = 1;
    if (check) {
        ps_graph_options ro;
        ps_graph_options_init(&ro);
        ro.fusion = PS_FUSION_NONE;
        out_ref = cli_alloc(n_out * sizeof(float));
        if (!out_ref || (st = ps_graph_plan_create(ctx, g, &ro, &ref))) {
            cli_report_status("pipeline: planning the unfused reference", st);
            goto done;
        }
        float *ro_[1] = {out_ref};
        if ((st = ps_graph_execute(ref, ins, ro_, NULL))) {
            cli_report_status("pipeline: execute (reference)", st);
            goto done;
        }
        double scale = 0;
        for (size_t i = 0; i < n_out; i++) scale = fmax(scale, fabs(out_ref[i]));
        for (size_t i = 0; i < n_out; i++) {
            double e = fabs((double)out[i] - (double)out_ref[i]);
            if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
        }
        max_err /= scale > 0 ? scale : 1;
        ok = max_err <= 1e-5;
    }
    ps_graph_plan_stats ps = {.struct_size = sizeof ps};
    ps_graph_plan_get_stats(plan, &ps);
    if (json) {
        printf("{\"pipeline\": \"%s\", \"fusion\": \"%s\", \"height\": %lld, \"width\": %lld, \"images\": %lld, "
               "\"threads\": %d, \"groups\": %d, \"stages\": %d, \"plan_ms\": %.3f, \"median_ms\": %.4f, \"best_ms\": %.4f, "
               "\"redundant\": %.4f, \"workspace_bytes\": %zu%s%.3g%s}\n",
               name, fusion_names[mode], (long long)height, (long long)width, (long long)images, ps_context_num_threads(ctx),
               ps.n_groups, ps.n_stages, plan_ms, med, best, ps.redundant_fraction, ps.workspace_bytes,
               check ? ", \"max_rel_err\": " : "", check ? max_err : 0.0, check ? (ok ? ", \"ok\": true" : ", \"ok\": false") : "");
    } else {
        if (describe) {
            size_t need = 0;
            ps_graph_plan_describe(plan, NULL, 0, &need);
            char *text = malloc(need + 1);
            if (text) {
                ps_graph_plan_describe(plan, text, need + 1, NULL);
                fputs(text, stdout);
                free(text);
            }
        }
        printf("%s %lldx%lld x%lld, fusion %s: %d groups of %d stages, planned in %.2f ms, median %.3f ms over %lld runs "
               "(best %.3f), redundant %.1f%%\n",
               name, (long long)width, (long long)height, (long long)images, fusion_names[mode], ps.n_groups, ps.n_stages,
               plan_ms, med, (long long)reps, best, 100 * ps.redundant_fraction);
        if (check) printf("check against the unfused plan: max error %.3g of the largest value: %s\n", max_err, ok ? "OK" : "FAIL");
    }
    rc = ok ? CLI_OK : CLI_FAIL;
done:
    free(in);
    free(out);
    free(out_ref);
    free(ws);
    ps_graph_plan_destroy(plan);
    ps_graph_plan_destroy(ref);
    ps_graph_destroy(g);
    ps_context_destroy(ctx);
    return rc;
}
