/* polysci CLI — `polysci run conv|gemm`: plan, run and check one operation. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DIM_MAX INT32_MAX
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Options every `run` variant has. */
typedef struct common_args {
    int64_t threads, reps, seed, top_k;
    double tol;
    const char *schedule, *ranker;
    int json, no_cache;
} common_args;

static void common_defaults(common_args *c)
{
    c->threads = 0;
    c->reps = 5;
    c->seed = 1;
    c->tol = 1e-4;
    c->schedule = NULL;
    c->ranker = "default";
    c->top_k = 0;
    c->json = 0;
    c->no_cache = 0;
}

#define COMMON_OPTS(c)                                                                                \
    {"threads", CLI_OPT_INT, &(c).threads, 0, 4096, "T  threads (default: the context's, OpenMP's)", 0}, \
    {"schedule", CLI_OPT_STRING, &(c).schedule, 0, 0,                                                 \
     "TEXT  run exactly this schedule, e.g. \"64x28x64/4 : n* k:4* oh k ow c\"", 0},                  \
    {"ranker", CLI_OPT_STRING, &(c).ranker, 0, 0, "NAME  planner's ranker: default, cost, dnn or none", 0}, \
    {"top-k", CLI_OPT_INT, &(c).top_k, 0, 1000000, "K  time the K best-ranked schedules, keep the fastest", 0}, \
    {"reps", CLI_OPT_INT, &(c).reps, 1, 1000000, "R  timed executions, median reported (default 5)", 0}, \
    {"tol", CLI_OPT_FLOAT, &(c).tol, 0, 0, "X  max error relative to max|reference| (default 1e-4)", 0}, \
    {"seed", CLI_OPT_INT, &(c).seed, 0, INT64_MAX, "S  seed of the random operands (default 1)", 0},   \
    {"no-cache", CLI_OPT_FLAG, &(c).no_cache, 0, 0, "bypass the context's plan cache", 0},      \
    {"json", CLI_OPT_FLAG, &(c).json, 0, 0, "print one JSON object instead of text", 0}

/* Creates the context and the schedule, runs the check, prints the result. */
static int run_and_report(const char *cmd, const ps_desc *desc, const common_args *c,
                          const char *shape_text, void (*json_shape)(FILE *, const ps_desc *))
{
    if (c->tol < 0.0) {
        fprintf(stderr, "polysci %s: invalid value for --tol: must be >= 0\n", cmd);
        return CLI_USAGE;
    }
    int ranker = cli_choice(cmd, "ranker", c->ranker, cli_ranker_names, 4);
    if (ranker < 0) return CLI_USAGE;
    ps_context_options copts;
    ps_context_options_init(&copts);
    copts.num_threads = (int)c->threads;
    ps_context *ctx = NULL;
    ps_status st = ps_context_create(&copts, &ctx);
    if (st != PS_SUCCESS) return cli_report_status("ps_context_create", st);

    ps_schedule *sched = NULL;
    if (c->schedule && (st = ps_schedule_parse(desc->kind, c->schedule, &sched)) != PS_SUCCESS) {
        cli_report_status("ps_schedule_parse", st);
        ps_context_destroy(ctx);
        return CLI_USAGE;
    }

    cli_check_opts o = {.schedule = sched, .num_threads = (int)c->threads, .ranker = (ps_ranker)ranker,
                        .top_k = (int)c->top_k, .plan_flags = c->no_cache ? PS_PLAN_NO_CACHE : 0u,
                        .reps = (int)c->reps, .tol = c->tol, .describe = 1, .seed = (uint64_t)c->seed};
    cli_result res;
    int rc = cli_check(ctx, desc, &o, &res);
    ps_schedule_destroy(sched);
    ps_context_destroy(ctx);

    if (c->json) {
        printf("{\"op\": \"%s\", ", desc->kind == PS_OP_CONV_FWD ? "conv" : "gemm");
        json_shape(stdout, desc);
        printf(", \"threads\": %d, \"ranker\": \"%s\", \"top_k\": %d, \"schedule\": ", res.threads,
               c->schedule ? "given" : cli_ranker_names[ranker], (int)c->top_k);
        cli_json_string(stdout, res.schedule);
        printf(", \"description\": ");
        cli_json_string(stdout, res.description ? res.description : "");
        if (rc == CLI_OK) {
            printf(", \"flops\": %.0f, \"plan_ms\": %.4f, \"pack_ms\": %.4f, \"reference_ms\": %.3f"
                   ", \"reps\": %d, \"exec_ms\": %.6f, \"exec_ms_min\": %.6f, \"gflops\": %.3f"
                   ", \"max_abs_err\": %.6g, \"max_rel_err\": %.6g, \"nonfinite\": %zu, \"tol\": %g"
                   ", \"ok\": %s}\n",
                   res.flops, res.plan_ms, res.pack_ms, res.ref_ms, (int)c->reps, res.exec_ms,
                   res.exec_ms_min, res.gflops, res.cmp.max_abs_err, res.cmp.rel_err,
                   res.cmp.n_nonfinite, c->tol, res.ok ? "true" : "false");
        } else {
            printf(", \"ok\": false, \"error\": ");
            cli_json_string(stdout, res.error);
            printf("}\n");
        }
    } else {
        printf("polysci %s: %s\n", cmd, shape_text);
        if (res.description) {
            size_t len = strlen(res.description);
            printf("%s%s", res.description, len && res.description[len - 1] == '\n' ? "" : "\n");
        }
        if (rc == CLI_OK) {
            printf("plan       %10.3f ms   (pack weights %.3f ms, reference %.1f ms)\n", res.plan_ms,
                   res.pack_ms, res.ref_ms);
            printf("execute    %10.4f ms   median of %d (min %.4f ms), %.2f GFLOP/s, %d threads\n",
                   res.exec_ms, (int)c->reps, res.exec_ms_min, res.gflops, res.threads);
            printf("check      max abs err %.3g, max rel err %.3g (tol %.3g)", res.cmp.max_abs_err,
                   res.cmp.rel_err, c->tol);
            if (res.cmp.n_nonfinite) printf(", %zu non-finite outputs", res.cmp.n_nonfinite);
            printf(": %s\n", res.ok ? "OK" : "MISMATCH");
            if (!res.ok)
                fprintf(stderr, "polysci %s: result does not match the reference (worst element %zu)\n",
                        cmd, res.cmp.worst);
        }
    }
    if (rc != CLI_OK) fprintf(stderr, "polysci %s: %s\n", cmd, res.error);
    free(res.description);
    if (rc != CLI_OK) return rc;
    return res.ok ? CLI_OK : CLI_FAIL;
}

/* ---------------------------------------------------------------- conv */

static const char *const layout_names[] = {"nhwc", "nchw"};     /* ps_act_layout order */
static const char *const weight_names[] = {"kcrs", "krsc", "rsck"}; /* ps_weight_layout order */

static void conv_json_shape(FILE *f, const ps_desc *desc)
{
    const ps_conv_desc *d = &desc->u.conv;
    fprintf(f, "\"N\": %" PRId64 ", \"C\": %" PRId64 ", \"K\": %" PRId64 ", \"H\": %" PRId64
               ", \"W\": %" PRId64 ", \"R\": %" PRId64 ", \"S\": %" PRId64 ", \"stride_h\": %" PRId64
               ", \"stride_w\": %" PRId64 ", \"pad_top\": %" PRId64 ", \"pad_bottom\": %" PRId64
               ", \"pad_left\": %" PRId64 ", \"pad_right\": %" PRId64 ", \"dilation_h\": %" PRId64
               ", \"dilation_w\": %" PRId64 ", \"layout\": \"%s\", \"weights\": \"%s\", \"bias\": %s"
               ", \"relu\": %s",
            d->N, d->C, d->K, d->H, d->W, d->R, d->S, d->stride_h, d->stride_w, d->pad_top,
            d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h, d->dilation_w,
            layout_names[d->layout], weight_names[d->weight_layout],
            (d->post_ops & PS_POST_BIAS) ? "true" : "false", (d->post_ops & PS_POST_RELU) ? "true" : "false");
}

static void conv_usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci run conv --H H --W W --C C --K K [options]\n"
               "Plans one forward f32 convolution, packs random weights, runs it, checks the\n"
               "full output against a double-precision reference and reports the timing.\n"
               "GFLOP/s are nominal: 2*N*K*C*OH*OW*R*S / median time.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

static int run_conv(int argc, char **argv)
{
    const char *cmd = "run conv";
    int64_t N = 1, H = 0, W = 0, C = 0, K = 0, R = 1, S = 1;
    int64_t stride = 1, stride_h = 1, stride_w = 1, pad = 0, pt = 0, pb = 0, pl = 0, pr = 0;
    int64_t dil = 1, dil_h = 1, dil_w = 1;
    const char *layout = "nhwc", *weights = "kcrs";
    int bias = 0, relu = 0;
    common_args c;
    common_defaults(&c);
    cli_opt opts[] = {
        {"N", CLI_OPT_INT, &N, 1, DIM_MAX, "N  batch size (default 1)", 0},
        {"H", CLI_OPT_INT, &H, 1, DIM_MAX, "H  input height (required)", 0},
        {"W", CLI_OPT_INT, &W, 1, DIM_MAX, "W  input width (required)", 0},
        {"C", CLI_OPT_INT, &C, 1, DIM_MAX, "C  input channels (required)", 0},
        {"K", CLI_OPT_INT, &K, 1, DIM_MAX, "K  output channels (required)", 0},
        {"R", CLI_OPT_INT, &R, 1, DIM_MAX, "R  filter height (default 1)", 0},
        {"S", CLI_OPT_INT, &S, 1, DIM_MAX, "S  filter width (default 1)", 0},
        {"stride", CLI_OPT_INT, &stride, 1, DIM_MAX, "U  stride in both directions (default 1)", 0},
        {"stride-h", CLI_OPT_INT, &stride_h, 1, DIM_MAX, "U  vertical stride (overrides --stride)", 0},
        {"stride-w", CLI_OPT_INT, &stride_w, 1, DIM_MAX, "U  horizontal stride (overrides --stride)", 0},
        {"pad", CLI_OPT_INT, &pad, 0, DIM_MAX, "P  zero padding on all four sides (default 0)", 0},
        {"pad-top", CLI_OPT_INT, &pt, 0, DIM_MAX, "P  padding above (overrides --pad)", 0},
        {"pad-bottom", CLI_OPT_INT, &pb, 0, DIM_MAX, "P  padding below (overrides --pad)", 0},
        {"pad-left", CLI_OPT_INT, &pl, 0, DIM_MAX, "P  padding left (overrides --pad)", 0},
        {"pad-right", CLI_OPT_INT, &pr, 0, DIM_MAX, "P  padding right (overrides --pad)", 0},
        {"dilation", CLI_OPT_INT, &dil, 1, DIM_MAX, "D  filter dilation, both directions (default 1)", 0},
        {"dilation-h", CLI_OPT_INT, &dil_h, 1, DIM_MAX, "D  vertical dilation (overrides --dilation)", 0},
        {"dilation-w", CLI_OPT_INT, &dil_w, 1, DIM_MAX, "D  horizontal dilation (overrides --dilation)", 0},
        {"layout", CLI_OPT_STRING, &layout, 0, 0, "L  activation layout: nhwc (default) or nchw", 0},
        {"weights", CLI_OPT_STRING, &weights, 0, 0, "L  user weight layout: kcrs (default), krsc or rsck", 0},
        {"bias", CLI_OPT_FLAG, &bias, 0, 0, "fused bias epilogue", 0},
        {"relu", CLI_OPT_FLAG, &relu, 0, 0, "fused ReLU epilogue (after the bias)", 0},
        COMMON_OPTS(c),
    };
    size_t n_opts = ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        conv_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    const char *required[] = {"H", "W", "C", "K"};
    for (size_t i = 0; i < ARRAY_LEN(required); i++)
        for (size_t k = 0; k < n_opts; k++)
            if (!strcmp(opts[k].name, required[i]) && !opts[k].seen) {
                fprintf(stderr, "polysci %s: missing required option --%s (see 'polysci %s --help')\n",
                        cmd, required[i], cmd);
                return CLI_USAGE;
            }
    int li = cli_choice(cmd, "layout", layout, layout_names, 2);
    int wi = cli_choice(cmd, "weights", weights, weight_names, 3);
    if (li < 0 || wi < 0) return CLI_USAGE;
    /* General options first, then the specific ones override. */
    int seen_sh = 0, seen_sw = 0, seen_pt = 0, seen_pb = 0, seen_pl = 0, seen_pr = 0, seen_dh = 0,
        seen_dw = 0;
    for (size_t k = 0; k < n_opts; k++) {
        const char *nm = opts[k].name;
        int s = opts[k].seen;
        if (!strcmp(nm, "stride-h")) seen_sh = s;
        else if (!strcmp(nm, "stride-w")) seen_sw = s;
        else if (!strcmp(nm, "pad-top")) seen_pt = s;
        else if (!strcmp(nm, "pad-bottom")) seen_pb = s;
        else if (!strcmp(nm, "pad-left")) seen_pl = s;
        else if (!strcmp(nm, "pad-right")) seen_pr = s;
        else if (!strcmp(nm, "dilation-h")) seen_dh = s;
        else if (!strcmp(nm, "dilation-w")) seen_dw = s;
    }

    ps_desc desc;
    ps_desc_init_conv(&desc);
    ps_conv_desc *d = &desc.u.conv;
    d->N = N;
    d->C = C;
    d->K = K;
    d->H = H;
    d->W = W;
    d->R = R;
    d->S = S;
    d->stride_h = seen_sh ? stride_h : stride;
    d->stride_w = seen_sw ? stride_w : stride;
    d->pad_top = seen_pt ? pt : pad;
    d->pad_bottom = seen_pb ? pb : pad;
    d->pad_left = seen_pl ? pl : pad;
    d->pad_right = seen_pr ? pr : pad;
    d->dilation_h = seen_dh ? dil_h : dil;
    d->dilation_w = seen_dw ? dil_w : dil;
    d->layout = (ps_act_layout)li;
    d->weight_layout = (ps_weight_layout)wi;
    d->post_ops = (bias ? PS_POST_BIAS : 0u) | (relu ? PS_POST_RELU : 0u);

    /* The library is the judge of validity; its message is the clearest. */
    ps_status st = ps_desc_validate(&desc);
    if (st != PS_SUCCESS) {
        cli_report_status("ps_desc_validate", st);
        return CLI_USAGE;
    }

    int64_t OH, OW;
    ref_conv_out_size(d, &OH, &OW);
    char shape[512];
    snprintf(shape, sizeof shape,
             "N=%" PRId64 " C=%" PRId64 " K=%" PRId64 " H=%" PRId64 " W=%" PRId64 " R=%" PRId64
             " S=%" PRId64 " stride=%" PRId64 "x%" PRId64 " pad=%" PRId64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 " dilation=%" PRId64 "x%" PRId64 " -> OH=%" PRId64 " OW=%" PRId64
             " layout=%s weights=%s%s%s",
             N, C, K, H, W, R, S, d->stride_h, d->stride_w, d->pad_top, d->pad_bottom, d->pad_left,
             d->pad_right, d->dilation_h, d->dilation_w, OH, OW, layout_names[li], weight_names[wi],
             bias ? " +bias" : "", relu ? " +relu" : "");
    return run_and_report(cmd, &desc, &c, shape, conv_json_shape);
}

/* ---------------------------------------------------------------- gemm */

static void gemm_json_shape(FILE *f, const ps_desc *desc)
{
    const ps_gemm_desc *g = &desc->u.gemm;
    fprintf(f, "\"M\": %" PRId64 ", \"N\": %" PRId64 ", \"K\": %" PRId64 ", \"order\": \"%s\""
               ", \"trans_a\": %s, \"trans_b\": %s, \"lda\": %" PRId64 ", \"ldb\": %" PRId64
               ", \"ldc\": %" PRId64 ", \"alpha\": %.9g, \"beta\": %.9g",
            g->M, g->N, g->K, g->order == PS_ROW_MAJOR ? "row" : "col", g->trans_a ? "true" : "false",
            g->trans_b ? "true" : "false", g->lda, g->ldb, g->ldc, (double)g->alpha, (double)g->beta);
}

static void gemm_usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci run gemm --M M --N N --K K [options]\n"
               "Plans C = alpha*op(A)*op(B) + beta*C (f32), runs it on random operands, checks\n"
               "all of C against a double-precision reference and reports the timing.\n"
               "GFLOP/s are nominal: 2*M*N*K / median time.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

static int run_gemm(int argc, char **argv)
{
    const char *cmd = "run gemm";
    int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
    const char *order = "col";
    int ta = 0, tb = 0;
    double alpha = 1.0, beta = 0.0;
    common_args c;
    common_defaults(&c);
    cli_opt opts[] = {
        {"M", CLI_OPT_INT, &M, 1, DIM_MAX, "M  rows of C (required)", 0},
        {"N", CLI_OPT_INT, &N, 1, DIM_MAX, "N  columns of C (required)", 0},
        {"K", CLI_OPT_INT, &K, 1, DIM_MAX, "K  reduction size (required)", 0},
        {"order", CLI_OPT_STRING, &order, 0, 0, "O  storage order: col (default) or row", 0},
        {"trans-a", CLI_OPT_FLAG, &ta, 0, 0, "A is stored transposed (K x M)", 0},
        {"trans-b", CLI_OPT_FLAG, &tb, 0, 0, "B is stored transposed (N x K)", 0},
        {"lda", CLI_OPT_INT, &lda, 0, DIM_MAX, "LD  leading dimension of A (default 0 = tight)", 0},
        {"ldb", CLI_OPT_INT, &ldb, 0, DIM_MAX, "LD  leading dimension of B (default 0 = tight)", 0},
        {"ldc", CLI_OPT_INT, &ldc, 0, DIM_MAX, "LD  leading dimension of C (default 0 = tight)", 0},
        {"alpha", CLI_OPT_FLOAT, &alpha, 0, 0, "X  scale of op(A)*op(B) (default 1)", 0},
        {"beta", CLI_OPT_FLOAT, &beta, 0, 0, "X  scale of C's old value (default 0)", 0},
        COMMON_OPTS(c),
    };
    size_t n_opts = ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        gemm_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    for (size_t k = 0; k < 3; k++)
        if (!opts[k].seen) {
            fprintf(stderr, "polysci %s: missing required option --%s (see 'polysci %s --help')\n",
                    cmd, opts[k].name, cmd);
            return CLI_USAGE;
        }
    static const char *const order_names[] = {"col", "row"}; /* ps_matrix_order order */
    int oi = cli_choice(cmd, "order", order, order_names, 2);
    if (oi < 0) return CLI_USAGE;

    ps_desc desc;
    ps_desc_init_gemm(&desc);
    ps_gemm_desc *g = &desc.u.gemm;
    g->M = M;
    g->N = N;
    g->K = K;
    g->order = (ps_matrix_order)oi;
    g->trans_a = ta;
    g->trans_b = tb;
    g->lda = lda;
    g->ldb = ldb;
    g->ldc = ldc;
    g->alpha = (float)alpha;
    g->beta = (float)beta;
    ps_status st = ps_desc_validate(&desc);
    if (st != PS_SUCCESS) {
        cli_report_status("ps_desc_validate", st);
        return CLI_USAGE;
    }
    ref_gemm_geom geom;
    if (ref_gemm_geometry(g, &geom)) {
        fprintf(stderr, "polysci %s: a leading dimension is smaller than its matrix allows\n", cmd);
        return CLI_USAGE;
    }

    char shape[512];
    snprintf(shape, sizeof shape,
             "M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " order=%s op(A)=%s op(B)=%s lda=%" PRId64
             " ldb=%" PRId64 " ldc=%" PRId64 " alpha=%g beta=%g",
             M, N, K, order_names[oi], ta ? "A^T" : "A", tb ? "B^T" : "B", geom.lda, geom.ldb,
             geom.ldc, (double)g->alpha, (double)g->beta);
    return run_and_report(cmd, &desc, &c, shape, gemm_json_shape);
}

/* ---------------------------------------------------------------- dispatch */

static void run_usage(FILE *f)
{
    fprintf(f, "usage: polysci run conv [options]   plan, run and check one convolution\n"
               "       polysci run gemm [options]   plan, run and check one GEMM\n"
               "See 'polysci run conv --help' and 'polysci run gemm --help'.\n");
}

int cmd_run(int argc, char **argv)
{
    if (argc < 2) {
        run_usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        run_usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "conv")) return run_conv(argc - 1, argv + 1);
    if (!strcmp(argv[1], "gemm")) return run_gemm(argc - 1, argv + 1);
    fprintf(stderr, "polysci run: unknown operation '%s'\n", argv[1]);
    run_usage(stderr);
    return CLI_USAGE;
}
