/* polysci CLI — `polysci demo`: plan, run and check every layer of a layers file. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define DEFAULT_LAYERS "resnet50.txt"

typedef struct layer {
    char name[64];
    ps_desc desc;
} layer;

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Resolves --layers: an existing path as given; else a bare name looked up in
 * shared/layers/ (with or without ".txt"); with no flag, the default file. */
static int resolve_layers(const char *arg, char *path, size_t len)
{
    if (arg && file_exists(arg)) {
        snprintf(path, len, "%s", arg);
        return 0;
    }
    if (arg && strchr(arg, '/')) {
        fprintf(stderr, "polysci demo: cannot read layers file '%s': %s\n", arg, strerror(ENOENT));
        return -1;
    }
    char shared[4096];
    if (!cli_find_shared(shared, sizeof shared)) {
        fprintf(stderr, "polysci demo: %s%s%s not found and no shared/ folder located; "
                        "pass --layers FILE or set POLYSCI_SHARED=/path/to/shared\n",
                arg ? "layers file '" : "default layers file", arg ? arg : "", arg ? "'" : "");
        return -1;
    }
    const char *name = arg ? arg : DEFAULT_LAYERS;
    int n = snprintf(path, len, "%s/layers/%s", shared, name);
    if (n > 0 && (size_t)n < len && file_exists(path)) return 0;
    n = snprintf(path, len, "%s/layers/%s.txt", shared, name);
    if (n > 0 && (size_t)n < len && file_exists(path)) return 0;
    fprintf(stderr, "polysci demo: layers file '%s' not found (looked in %s/layers/)\n", name, shared);
    return -1;
}

/* Reads "name H W C K R S stride pad_h pad_w" (conv) or "name M N K" (gemm)
 * lines; '#' starts a comment. */
static int read_layers(const char *path, int64_t batch, ps_act_layout act, unsigned post,
                       layer **out, int *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "polysci demo: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    layer *v = NULL;
    int n = 0, cap = 0, line_no = 0, rc = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *tok[16];
        int nt = 0;
        for (char *t = strtok(line, " \t\r\n"); t && nt < 16; t = strtok(NULL, " \t\r\n")) tok[nt++] = t;
        if (nt == 0) continue;
        if (nt != 10 && nt != 4) {
            fprintf(stderr, "polysci demo: %s:%d: expected 'name H W C K R S stride pad_h pad_w' "
                            "or 'name M N K', got %d fields\n", path, line_no, nt);
            rc = -1;
            break;
        }
        int64_t x[9];
        for (int i = 1; i < nt && rc == 0; i++) {
            /* sizes and strides >= 1, pads >= 0 */
            int64_t min = (nt == 10 && i >= 8) ? 0 : 1;
            if (cli_strict_int(tok[i], min, INT32_MAX, &x[i - 1])) {
                fprintf(stderr, "polysci demo: %s:%d: field %d of '%s' is '%s', expected an integer "
                                "in [%" PRId64 ", %d]\n",
                        path, line_no, i + 1, tok[0], tok[i], min, INT32_MAX);
                rc = -1;
            }
        }
        if (rc) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            layer *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                fprintf(stderr, "polysci demo: out of memory\n");
                rc = -1;
                break;
            }
            v = nv;
        }
        layer *l = &v[n++];
        snprintf(l->name, sizeof l->name, "%s", tok[0]);
        if (nt == 10) {
            ps_desc_init_conv(&l->desc);
            ps_conv_desc *d = &l->desc.u.conv;
            d->N = batch;
            d->H = x[0];
            d->W = x[1];
            d->C = x[2];
            d->K = x[3];
            d->R = x[4];
            d->S = x[5];
            d->stride_h = d->stride_w = x[6];
            d->pad_top = d->pad_bottom = x[7];
            d->pad_left = d->pad_right = x[8];
            d->layout = act;
            d->post_ops = post;
        } else {
            ps_desc_init_gemm(&l->desc);
            ps_gemm_desc *g = &l->desc.u.gemm;
            g->M = x[0];
            g->N = x[1];
            g->K = x[2];
        }
    }
    fclose(f);
    if (rc == 0 && n == 0) {
        fprintf(stderr, "polysci demo: %s has no layers\n", path);
        rc = -1;
    }
    if (rc) {
        free(v);
        return -1;
    }
    *out = v;
    *n_out = n;
    return 0;
}

static void shape_text(const ps_desc *desc, char *buf, size_t len)
{
    if (desc->kind == PS_OP_GEMM) {
        const ps_gemm_desc *g = &desc->u.gemm;
        snprintf(buf, len, "%" PRId64 "x%" PRId64 "x%" PRId64, g->M, g->N, g->K);
        return;
    }
    const ps_conv_desc *d = &desc->u.conv;
    char pad[48];
    if (d->pad_top == d->pad_left) snprintf(pad, sizeof pad, "%" PRId64, d->pad_top);
    else snprintf(pad, sizeof pad, "%" PRId64 ",%" PRId64, d->pad_top, d->pad_left);
    snprintf(buf, len, "%" PRId64 "x%" PRId64 " %" PRId64 "->%" PRId64 " %" PRId64 "x%" PRId64
                       "/%" PRId64 " p%s",
             d->H, d->W, d->C, d->K, d->R, d->S, d->stride_h, pad);
}

static void demo_usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci demo [--layers FILE] [--N 2] [--threads T] [options]\n"
               "Plans and runs every layer of a layers file (default: shared/layers/%s),\n"
               "checks each full output against a double-precision reference and prints a\n"
               "table. Exits non-zero if any layer fails. FILE may be a path or a name in\n"
               "shared/layers/ (e.g. 'vgga'); shared/ is found via $POLYSCI_SHARED or next\n"
               "to the executable's or the source tree's folders.\n"
               "Shapes: conv 'HxW C->K RxS/stride p<pad>', gemm 'MxNxK'.\n\noptions:\n",
            DEFAULT_LAYERS);
    cli_print_options(f, opts, n);
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    const char *layers_arg = NULL, *layout = "nhwc";
    const char *ranker_arg = "default";
    int64_t batch = 2, threads = 0, reps = 5, seed = 1, top_k = 0;
    double tol = 1e-4;
    int bias = 0, relu = 0, describe = 0, no_cache = 0;
    cli_opt opts[] = {
        {"layers", CLI_OPT_STRING, &layers_arg, 0, 0, "FILE  layers file or name in shared/layers/", 0},
        {"N", CLI_OPT_INT, &batch, 1, INT32_MAX, "N  batch size of the conv layers (default 2)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 4096, "T  threads (default: OpenMP's)", 0},
        {"ranker", CLI_OPT_STRING, &ranker_arg, 0, 0, "NAME  planner's ranker: default, cost, dnn or none", 0},
        {"top-k", CLI_OPT_INT, &top_k, 0, 1000000, "K  time the K best-ranked schedules, keep the fastest", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 1000000, "R  timed executions per layer, median (default 5)", 0},
        {"layout", CLI_OPT_STRING, &layout, 0, 0, "L  activation layout: nhwc (default) or nchw", 0},
        {"bias", CLI_OPT_FLAG, &bias, 0, 0, "fused bias epilogue on every conv layer", 0},
        {"relu", CLI_OPT_FLAG, &relu, 0, 0, "fused ReLU epilogue on every conv layer", 0},
        {"tol", CLI_OPT_FLOAT, &tol, 0, 0, "X  max error relative to max|reference| (default 1e-4)", 0},
        {"seed", CLI_OPT_INT, &seed, 0, INT64_MAX, "S  seed of the random operands (default 1)", 0},
        {"no-cache", CLI_OPT_FLAG, &no_cache, 0, 0, "bypass the context's plan cache", 0},
        {"describe", CLI_OPT_FLAG, &describe, 0, 0, "also print each plan's description", 0},
    };
    size_t n_opts = ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        demo_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    static const char *const layout_names[] = {"nhwc", "nchw"};
    int li = cli_choice(cmd, "layout", layout, layout_names, 2);
    int ranker = cli_choice(cmd, "ranker", ranker_arg, cli_ranker_names, 4);
    if (li < 0 || ranker < 0) return CLI_USAGE;
    if (tol < 0.0) {
        fprintf(stderr, "polysci demo: invalid value for --tol: must be >= 0\n");
        return CLI_USAGE;
    }

    char path[4096];
    if (resolve_layers(layers_arg, path, sizeof path)) return CLI_FAIL;
    layer *layers = NULL;
    int n_layers = 0;
    unsigned post = (bias ? PS_POST_BIAS : 0u) | (relu ? PS_POST_RELU : 0u);
    if (read_layers(path, batch, (ps_act_layout)li, post, &layers, &n_layers)) return CLI_FAIL;

    ps_context_options copts;
    ps_context_options_init(&copts);
    copts.num_threads = (int)threads;
    ps_context *ctx = NULL;
    ps_status st = ps_context_create(&copts, &ctx);
    if (st != PS_SUCCESS) {
        free(layers);
        return cli_report_status("ps_context_create", st);
    }

    printf("polysci %s demo: %s\n", ps_version(), path);
    printf("%d layers, conv batch N=%" PRId64 ", layout %s%s%s, %d threads, ranker %s%s, median of %"
           PRId64 " runs, tolerance %.1e (max |err| / max |ref|)\n\n",
           n_layers, batch, layout_names[li], bias ? ", +bias" : "", relu ? ", +relu" : "",
           ps_context_num_threads(ctx), cli_ranker_names[ranker], top_k > 1 ? " (top-k timed)" : "", reps,
           tol);
    int nw = 16, sw = 24; /* column widths: the longest name and shape */
    for (int i = 0; i < n_layers; i++) {
        char shp[128];
        shape_text(&layers[i].desc, shp, sizeof shp);
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
        shape_text(&layers[i].desc, shp, sizeof shp);
        cli_check_opts o = {.schedule = NULL, .num_threads = (int)threads, .ranker = (ps_ranker)ranker,
                            .top_k = (int)top_k, .plan_flags = no_cache ? PS_PLAN_NO_CACHE : 0u, .reps = (int)reps,
                            .tol = tol, .describe = describe, .seed = (uint64_t)seed + (uint64_t)i};
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
