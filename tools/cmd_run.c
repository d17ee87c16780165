/* polysci CLI — `polysci run conv|gemm`: plan, run and check one operation. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Options every `run` variant has. */
typedef struct run_args {
    cli_plan_args plan;
    cli_check_args check;
    int64_t reps;
    const char *schedule;
    int json;
} run_args;

#define RUN_OPTS(c)                                                                                   \
    CLI_THREADS_OPT((c).plan, 0, "T  threads (default: the context's, OpenMP's)"),                     \
    {"schedule", CLI_OPT_STRING, &(c).schedule, 0, 0,                                                 \
     "TEXT  run exactly this schedule, e.g. \"64x28x64/4 : n* k:4* oh k ow c\"", 0},                  \
    CLI_RANKER_OPT((c).plan),                                                                         \
    CLI_TOP_K_OPT((c).plan),                                                                          \
    {"reps", CLI_OPT_INT, &(c).reps, 1, 1000000, "R  timed executions, median reported (default 5)", 0}, \
    CLI_CHECK_OPTS((c).check),                                                                        \
    CLI_NO_CACHE_OPT((c).plan),                                                                       \
    {"json", CLI_OPT_FLAG, &(c).json, 0, 0, "print one JSON object instead of text", 0}

/* Creates the context and the schedule, runs the check, prints the result. */
static int run_and_report(const char *cmd, const ps_desc *desc, const run_args *c, const char *shape_text)
{
    ps_ranker ranker;
    ps_plan_options po;
    int rc = cli_check_args_valid(cmd, &c->check);
    if (rc || (rc = cli_plan_args_options(cmd, &c->plan, &ranker, &po))) return rc;
    ps_context *ctx = NULL;
    if (cli_context_create((int)c->plan.threads, &ctx) != CLI_OK) return CLI_FAIL;

    ps_status st;
    ps_schedule *sched = NULL;
    if (c->schedule && (st = ps_schedule_parse(desc->kind, c->schedule, &sched)) != PS_SUCCESS) {
        cli_report_status("ps_schedule_parse", st);
        ps_context_destroy(ctx);
        return CLI_USAGE;
    }

    cli_check_opts o = {.schedule = sched, .num_threads = po.num_threads, .ranker = po.ranker,
                        .top_k = po.top_k, .budget_ms = po.time_budget_ms, .plan_flags = po.flags, .reps = (int)c->reps, .tol = c->check.tol,
                        .describe = 1, .seed = (uint64_t)c->check.seed};
    cli_result res;
    rc = cli_check(ctx, desc, &o, &res);
    ps_schedule_destroy(sched);
    ps_context_destroy(ctx);

    if (c->json) {
        printf("{\"op\": \"%s\", ", desc->kind == PS_OP_CONV_FWD ? "conv" : "gemm");
        cli_json_shape(stdout, desc);
        printf(", \"threads\": %d, \"ranker\": \"%s\", \"top_k\": %d, \"schedule\": ", res.threads,
               c->schedule ? "given" : cli_ranker_names[ranker], (int)c->plan.top_k);
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
                   res.cmp.n_nonfinite, c->check.tol, res.ok ? "true" : "false");
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
                   res.cmp.rel_err, c->check.tol);
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

/* ---------------------------------------------------------------- conv, gemm */

static const char conv_usage[] =
    "usage: polysci run conv --H H --W W --C C --K K [options]\n"
    "Plans one forward f32 convolution, packs random weights, runs it, checks the\n"
    "full output against a double-precision reference and reports the timing.\n"
    "GFLOP/s are nominal: 2*N*K*C*OH*OW*R*S / median time.\n\noptions:\n";

static const char gemm_usage[] =
    "usage: polysci run gemm --M M --N N --K K [options]\n"
    "Plans C = alpha*op(A)*op(B) + beta*C (f32), runs it on random operands, checks\n"
    "all of C against a double-precision reference and reports the timing.\n"
    "GFLOP/s are nominal: 2*M*N*K / median time.\n\noptions:\n";

static int run_op(ps_op_kind kind, int argc, char **argv)
{
    const char *cmd = kind == PS_OP_GEMM ? "run gemm" : "run conv";
    run_args c = {.reps = 5, .schedule = NULL, .json = 0};
    cli_plan_args_defaults(&c.plan);
    cli_check_args_defaults(&c.check);
    cli_opt own[] = {RUN_OPTS(c)};
    ps_desc desc;
    char shape[512];
    int rc = cli_parse_op(cmd, kind, argc, argv, own, CLI_ARRAY_LEN(own), kind == PS_OP_GEMM ? gemm_usage : conv_usage,
                          &desc, shape, sizeof shape);
    if (rc < 0) return CLI_OK;
    if (rc) return rc;
    return run_and_report(cmd, &desc, &c, shape);
}

int cmd_run(int argc, char **argv)
{
    static const char usage[] =
        "usage: polysci run conv [options]   plan, run and check one convolution\n"
        "       polysci run gemm [options]   plan, run and check one GEMM\n"
        "See 'polysci run conv --help' and 'polysci run gemm --help'.\n";
    return cli_dispatch_op("run", usage, argc, argv, run_op);
}
