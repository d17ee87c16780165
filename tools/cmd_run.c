/* polysci CLI — `polysci run conv|gemm`: plan, run and check one operation. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

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
    {"ranker", CLI_OPT_STRING, &(c).ranker, 0, 0, "NAME  planner's ranker: default, cost, volume, dnn or none", 0}, \
    {"top-k", CLI_OPT_INT, &(c).top_k, 0, 1000000, "K  time the default and the K best-ranked schedules (ranker default: DNN), keep the fastest", 0}, \
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
    int ranker = cli_choice(cmd, "ranker", c->ranker, cli_ranker_names, 5);
    if (ranker < 0) return CLI_USAGE;
    ps_context *ctx = NULL;
    if (cli_context_create((int)c->threads, &ctx) != CLI_OK) return CLI_FAIL;

    ps_status st;
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
    cli_conv_shape s;
    cli_conv_shape_defaults(&s);
    common_args c;
    common_defaults(&c);
    cli_opt opts[] = {
        CLI_CONV_SHAPE_OPTS(s),
        COMMON_OPTS(c),
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        conv_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    ps_desc desc;
    if ((rc = cli_conv_shape_desc(cmd, &s, opts, n_opts, &desc))) return rc;
    char shape[512];
    cli_conv_shape_text(&desc, shape, sizeof shape);
    return run_and_report(cmd, &desc, &c, shape, cli_conv_json_shape);
}

/* ---------------------------------------------------------------- gemm */

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
    cli_gemm_shape s;
    cli_gemm_shape_defaults(&s);
    common_args c;
    common_defaults(&c);
    cli_opt opts[] = {
        CLI_GEMM_SHAPE_OPTS(s),
        COMMON_OPTS(c),
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        gemm_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    ps_desc desc;
    if ((rc = cli_gemm_shape_desc(cmd, &s, opts, n_opts, &desc))) return rc;
    char shape[512];
    cli_gemm_shape_text(&desc, shape, sizeof shape);
    return run_and_report(cmd, &desc, &c, shape, cli_gemm_json_shape);
}

/* ---------------------------------------------------------------- dispatch */

static int run_op(ps_op_kind kind, int argc, char **argv)
{
    return kind == PS_OP_GEMM ? run_gemm(argc, argv) : run_conv(argc, argv);
}

int cmd_run(int argc, char **argv)
{
    static const char usage[] =
        "usage: polysci run conv [options]   plan, run and check one convolution\n"
        "       polysci run gemm [options]   plan, run and check one GEMM\n"
        "See 'polysci run conv --help' and 'polysci run gemm --help'.\n";
    return cli_dispatch_op("run", usage, argc, argv, run_op);
}
