/* polysci CLI — `polysci rank conv|gemm`: the planner's ranked candidate
 * schedules with their cost-model scores (ps_cost_query; nothing is run). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct rank_args {
    cli_plan_args plan; /* --threads, --ranker */
    int64_t top;
    int json;
} rank_args;

#define RANK_OPTS(r)                                                                                    \
    CLI_THREADS_OPT((r).plan, 0, "T  threads the schedules run on (default: OpenMP's)"),                 \
    {"top", CLI_OPT_INT, &(r).top, 0, 1000000, "K  list only the K best-ranked variants (default: all)", 0}, \
    {"json", CLI_OPT_FLAG, &(r).json, 0, 0, "print one JSON object (ps_cost_report_to_json)", 0},       \
    CLI_RANKER_OPT_HELP((r).plan, "NAME  cost (Eq. 1, also 'default'), volume or dnn (tournament)")

static void bytes_text(char *buf, size_t len, double b)
{
    if (b <= 0.0) snprintf(buf, len, "0");
    else if (b >= 1073741824.0) snprintf(buf, len, "%.1fG", b / 1073741824.0);
    else if (b >= 1048576.0) snprintf(buf, len, "%.1fM", b / 1048576.0);
    else if (b >= 1024.0) snprintf(buf, len, "%.1fK", b / 1024.0);
    else snprintf(buf, len, "%.0f", b);
}

static int rank_report(const char *cmd, const ps_desc *desc, const rank_args *r, const char *shape)
{
    ps_ranker ranker; /* default: Eq. 1 (a cost query's default) */
    ps_plan_options po;
    int rc = cli_plan_args_options(cmd, &r->plan, &ranker, &po);
    if (rc) return rc;
    ps_context *ctx = NULL;
    if (cli_context_create((int)r->plan.threads, &ctx) != CLI_OK) return CLI_FAIL;
    int threads = ps_context_num_threads(ctx);
    ps_cost_report *rep = NULL;
    ps_status st = ps_cost_query(ctx, desc, &po, &rep);
    ps_context_destroy(ctx);
    if (st != PS_SUCCESS) return cli_report_status("ps_cost_query", st);
    int n = ps_cost_report_size(rep);
    int shown = r->top > 0 && r->top < n ? (int)r->top : n;
    if (r->json) {
        size_t need = 0;
        char *buf = NULL;
        st = ps_cost_report_to_json(rep, shown, NULL, 0, &need);
        if (st != PS_SUCCESS && st != PS_ERR_BUFFER_TOO_SMALL) {
            rc = cli_report_status("ps_cost_report_to_json", st);
        } else if (!(buf = malloc(need + 1))) {
            fprintf(stderr, "polysci %s: out of memory\n", cmd);
            rc = CLI_FAIL;
        } else if ((st = ps_cost_report_to_json(rep, shown, buf, need + 1, NULL)) != PS_SUCCESS) {
            rc = cli_report_status("ps_cost_report_to_json", st);
        } else {
            printf("%s\n", buf);
        }
        free(buf);
    } else {
        printf("polysci %s: %s\n", cmd, shape);
        const int dnn = ranker == PS_RANKER_DNN;
        printf("%d variants ranked by %s for %d thread%s; rank 1 is what the planner runs with --ranker %s\n\n", n,
               dnn ? "the DNN tournament (most wins; games over Alg. 2 working sets)"
                   : ranker == PS_RANKER_VOLUME ? "the volume model (Eq. 1 over data volumes)"
                                                : "the cost model (Eq. 1 over Alg. 2 working sets)",
               threads, threads == 1 ? "" : "s", dnn ? "dnn" : ranker == PS_RANKER_VOLUME ? "volume" : "cost");
        printf("%5s %12s %9s %9s %9s %9s  %s\n", "rank", dnn ? "losses" : "cost", "ws_L1", "ws_L2", "ws_L3", "ws_mem",
               "schedule");
        for (int i = 0; i < shown; i++) {
            ps_variant_cost v;
            if ((st = ps_cost_report_get(rep, i, &v)) != PS_SUCCESS) {
                rc = cli_report_status("ps_cost_report_get", st);
                break;
            }
            char b[PS_COST_LEVELS][16];
            for (int l = 0; l < PS_COST_LEVELS; l++) bytes_text(b[l], sizeof b[l], v.ws_bytes[l]);
            printf("%5d %12.6g %9s %9s %9s %9s  %s\n", v.rank, v.cost, b[0], b[1], b[2], b[3], v.schedule);
        }
        if (shown < n) printf("... %d more (--top 0 lists all)\n", n - shown);
        printf("\nws_*: bytes of working sets served by each level (Alg. 2); %s\n",
               dnn ? "losses: tournament games lost (of 2 per opponent)." : "cost: lower is better.");
    }
    ps_cost_report_destroy(rep);
    return rc;
}

static const char conv_usage[] =
    "usage: polysci rank conv --H H --W W --C C --K K [shape options] [--threads T] [--top K]\n"
    "                         [--ranker cost|volume|dnn] [--json]\n"
    "Lists the planner's candidate schedules for this convolution in rank order with\n"
    "their cost (PolyScientist Eq. 1; with --ranker dnn the tournament's losses) and\n"
    "working-set bytes per cache level. Nothing is executed.\n\noptions:\n";

static const char gemm_usage[] =
    "usage: polysci rank gemm --M M --N N --K K [gemm options] [--threads T] [--top K]\n"
    "                         [--ranker cost|volume|dnn] [--json]\n"
    "Lists the planner's candidate schedules for this GEMM in rank order with their\n"
    "cost (PolyScientist Eq. 1; with --ranker dnn the tournament's losses) and\n"
    "working-set bytes per cache level. Nothing is executed.\n\noptions:\n";

static int rank_op(ps_op_kind kind, int argc, char **argv)
{
    const char *cmd = kind == PS_OP_GEMM ? "rank gemm" : "rank conv";
    rank_args r = {.top = 0, .json = 0};
    cli_plan_args_defaults(&r.plan);
    cli_opt own[] = {RANK_OPTS(r)};
    ps_desc desc;
    char shape[512];
    int rc = cli_parse_op(cmd, kind, argc, argv, own, CLI_ARRAY_LEN(own), kind == PS_OP_GEMM ? gemm_usage : conv_usage,
                          &desc, shape, sizeof shape);
    if (rc < 0) return CLI_OK;
    if (rc) return rc;
    return rank_report(cmd, &desc, &r, shape);
}

int cmd_rank(int argc, char **argv)
{
    static const char usage[] =
        "usage: polysci rank conv [options]   ranked candidate schedules of a convolution\n"
        "       polysci rank gemm [options]   ranked candidate schedules of a GEMM\n"
        "See 'polysci rank conv --help' and 'polysci rank gemm --help'.\n";
    return cli_dispatch_op("rank", usage, argc, argv, rank_op);
}
