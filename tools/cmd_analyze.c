/* polysci CLI — `polysci analyze conv|gemm`: cache working sets of one schedule
 * (PolyScientist Algorithm 1, see include/polysci/analysis.h). */
#include "cli.h"

#include <inttypes.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[] = {"fast", "isl"}; /* ps_analysis_method order */

/* Options both operations have. */
typedef struct analyze_args {
    const char *schedule, *method;
    int64_t threads;
    int json;
} analyze_args;

#define ANALYZE_OPTS(a)                                                                                   \
    {"schedule", CLI_OPT_STRING, &(a).schedule, 0, 0,                                                    \
     "TEXT  analyse this schedule; 'planner' = the planner's choice, 'default' = ps_schedule_default", 0}, \
    CLI_THREADS_OPT(a, 1, "T  threads the parallel band is split over (default: OpenMP's)"),             \
    {"method", CLI_OPT_STRING, &(a).method, 0, 0,                                                        \
     "M  fast (closed form, default) or isl (Algorithm 1 on isl sets; small problems only)", 0},         \
    {"json", CLI_OPT_FLAG, &(a).json, 0, 0, "print the analysis as one JSON object (ps_analysis_to_json)", 0}

static void size_text(char *buf, size_t len, int64_t bytes)
{
    if (bytes >= 10 * 1048576LL) snprintf(buf, len, "%.1f MiB", (double)bytes / 1048576.0);
    else if (bytes >= 10 * 1024LL) snprintf(buf, len, "%.1f KiB", (double)bytes / 1024.0);
    else snprintf(buf, len, "%" PRId64 " B", bytes);
}

/* Prints the analysis: JSON (the library's object with "schedule"/"order" and
 * "schedule_source" spliced in front) or a table. */
static int report(const char *cmd, const ps_analysis *a, const char *shape, const char *what_key,
                  const char *what, const char *source, int json)
{
    if (json) {
        size_t need = 0;
        ps_status st = ps_analysis_to_json(a, NULL, 0, &need);
        if (st != PS_SUCCESS && st != PS_ERR_BUFFER_TOO_SMALL) return cli_report_status("ps_analysis_to_json", st);
        char *buf = malloc(need + 1);
        if (!buf) {
            fprintf(stderr, "polysci %s: out of memory\n", cmd);
            return CLI_FAIL;
        }
        if ((st = ps_analysis_to_json(a, buf, need + 1, NULL)) != PS_SUCCESS) {
            free(buf);
            return cli_report_status("ps_analysis_to_json", st);
        }
        if (buf[0] != '{') { /* not an object: print as it is */
            printf("%s\n", buf);
        } else {
            printf("{\"%s\": ", what_key);
            cli_json_string(stdout, what);
            printf(", \"schedule_source\": ");
            cli_json_string(stdout, source);
            printf(", %s\n", buf + 1 + strspn(buf + 1, " "));
        }
        free(buf);
        return CLI_OK;
    }
    int n = ps_analysis_num_dependences(a);
    printf("polysci %s: %s\n", cmd, shape);
    printf("%-10s %s (%s)\n", what_key, what, source);
    printf("element    %d bytes; working sets are distinct elements of all arrays touched between a\n"
           "           dependence's source and its first (ws_min) / last (ws_max) target\n",
           ps_analysis_element_bytes(a));
    int shared = 0;
    for (int i = 0; i < n; i++) {
        ps_dependence_info d;
        if (ps_analysis_get_dependence(a, i, &d) == PS_SUCCESS &&
            (d.ws_min_shared != d.ws_min || d.ws_max_shared != d.ws_max || d.shared_only))
            shared = 1;
    }
    printf("\n%-5s %-4s %14s %14s %12s %12s", "array", "kind", "ws_min", "ws_max", "min_bytes", "max_bytes");
    if (shared) printf(" %14s %14s", "ws_min_shared", "ws_max_shared");
    printf("\n");
    for (int i = 0; i < n; i++) {
        ps_dependence_info d;
        ps_status st = ps_analysis_get_dependence(a, i, &d);
        if (st != PS_SUCCESS) return cli_report_status("ps_analysis_get_dependence", st);
        char bmin[32], bmax[32];
        size_text(bmin, sizeof bmin, d.ws_min_bytes);
        size_text(bmax, sizeof bmax, d.ws_max_bytes);
        printf("%-5s %-4s %14" PRId64 " %14" PRId64 " %12s %12s", d.array, d.kind_name, d.ws_min, d.ws_max, bmin,
               bmax);
        if (shared) printf(" %14" PRId64 " %14" PRId64 "%s", d.ws_min_shared, d.ws_max_shared,
                           d.shared_only ? "  (between threads only)" : "");
        printf("\n");
    }
    if (n == 0) printf("(no element is ever reused)\n");
    return CLI_OK;
}

/* Resolves --schedule for a descriptor: given text, the planner's choice
 * (default) or ps_schedule_default. On success *sched is owned by the caller. */
static int resolve_schedule(const char *cmd, const ps_desc *desc, const char *text, int threads,
                            ps_schedule **sched, const char **source)
{
    ps_status st;
    *sched = NULL;
    if (text && !strcmp(text, "default")) {
        *source = "ps_schedule_default";
        if ((st = ps_schedule_default(desc, sched)) != PS_SUCCESS) return cli_report_status("ps_schedule_default", st);
        return CLI_OK;
    }
    if (text && strcmp(text, "planner")) {
        *source = "given";
        if ((st = ps_schedule_parse(desc->kind, text, sched)) != PS_SUCCESS) {
            cli_report_status("ps_schedule_parse", st);
            return CLI_USAGE;
        }
        if ((st = ps_schedule_check(*sched, desc)) != PS_SUCCESS) {
            cli_report_status("ps_schedule_check", st);
            ps_schedule_destroy(*sched);
            *sched = NULL;
            return CLI_USAGE;
        }
        return CLI_OK;
    }
    /* The planner's choice: a plan with default options on `threads` threads. */
    *source = "planner";
    ps_context *ctx = NULL;
    if (cli_context_create(threads, &ctx) != CLI_OK) return CLI_FAIL;
    ps_plan *plan = NULL;
    if ((st = ps_plan_create(ctx, desc, NULL, &plan)) != PS_SUCCESS) {
        cli_report_status("ps_plan_create", st);
        ps_context_destroy(ctx);
        return CLI_FAIL;
    }
    *sched = ps_schedule_copy(ps_plan_get_schedule(plan));
    ps_plan_destroy(plan);
    ps_context_destroy(ctx);
    if (!*sched) {
        fprintf(stderr, "polysci %s: out of memory\n", cmd);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int analyze_schedule(const char *cmd, const ps_desc *desc, const analyze_args *a, const char *shape)
{
    int mi = cli_choice(cmd, "method", a->method, method_names, 2);
    if (mi < 0) return CLI_USAGE;
    int threads = a->threads > 0 ? (int)a->threads : omp_get_max_threads();
    ps_schedule *sched = NULL;
    const char *source = NULL;
    int rc = resolve_schedule(cmd, desc, a->schedule, threads, &sched, &source);
    if (rc) return rc;
    char text[512], src[96];
    cli_schedule_text(sched, desc->kind, text, sizeof text);
    snprintf(src, sizeof src, "%s; %s method, %d thread%s", source, method_names[mi], threads,
             threads == 1 ? "" : "s");
    ps_analysis_options ao;
    ps_analysis_options_init(&ao);
    ao.num_threads = threads;
    ao.method = (ps_analysis_method)mi;
    ps_analysis *an = NULL;
    ps_status st = ps_analysis_create(desc, sched, &ao, &an);
    ps_schedule_destroy(sched);
    if (st != PS_SUCCESS) return cli_report_status("ps_analysis_create", st);
    rc = report(cmd, an, shape, "schedule", text, a->json ? source : src, a->json);
    ps_analysis_destroy(an);
    return rc;
}

/* ---------------------------------------------------------------- conv */

static int analyze_conv(int argc, char **argv)
{
    const char *cmd = "analyze conv";
    analyze_args a = {NULL, "fast", 0, 0};
    cli_opt own[] = {ANALYZE_OPTS(a)};
    ps_desc desc;
    char shape[512];
    int rc = cli_parse_op(cmd, PS_OP_CONV_FWD, argc, argv, own, CLI_ARRAY_LEN(own),
                          "usage: polysci analyze conv --H H --W W --C C --K K [shape options] [--schedule TEXT]\n"
                          "                            [--threads T] [--method fast|isl] [--json]\n"
                          "Cache working sets (WSmin/WSmax per data dependence, PolyScientist Alg. 1) of the\n"
                          "loop nest a schedule runs for this convolution. Without --schedule: the schedule\n"
                          "the planner chooses with default options on T threads (a plan is created).\n\n"
                          "options:\n",
                          &desc, shape, sizeof shape);
    if (rc < 0) return CLI_OK;
    if (rc) return rc;
    return analyze_schedule(cmd, &desc, &a, shape);
}

/* ---------------------------------------------------------------- gemm */

static int analyze_gemm(int argc, char **argv)
{
    const char *cmd = "analyze gemm";
    int64_t M = 0, N = 0, K = 0;
    const char *order = NULL;
    analyze_args a = {NULL, "fast", 0, 0};
    cli_opt opts[] = {
        {"M", CLI_OPT_INT, &M, 1, CLI_DIM_MAX, "M  rows of C (required)", 0},
        {"N", CLI_OPT_INT, &N, 1, CLI_DIM_MAX, "N  columns of C (required)", 0},
        {"K", CLI_OPT_INT, &K, 1, CLI_DIM_MAX, "K  reduction size (required)", 0},
        {"order", CLI_OPT_STRING, &order, 0, 0,
         "PERM  loop order of the paper's Figure 4 matmul, a permutation of ijk (default ijk)", 0},
        ANALYZE_OPTS(a),
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        printf("usage: polysci analyze gemm --M M --N N --K K [--order PERM | --schedule TEXT]\n"
               "                            [--threads T] [--method fast|isl] [--json]\n"
               "With --order (default ijk): the working sets of the paper's Figure 4 matmul\n"
               "    for (i < M) for (j < N) for (k < K) C[i][j] += A[i][k] * B[k][j]\n"
               "with its loops in that order (no threads). With --schedule: those of the\n"
               "column-major GEMM C[MxN] = A[MxK] B[KxN] run by that GEMM schedule\n"
               "('planner' = the planner's choice on T threads, 'default' = ps_schedule_default).\n\n"
               "options:\n");
        cli_print_options(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    static const char *const required[] = {"M", "N", "K"};
    if ((rc = cli_require(cmd, opts, n_opts, required, 3))) return rc;
    if (order && a.schedule) {
        fprintf(stderr, "polysci %s: --order and --schedule exclude each other\n", cmd);
        return CLI_USAGE;
    }
    if (a.schedule) {
        ps_desc desc;
        ps_desc_init_gemm(&desc);
        desc.u.gemm.M = M;
        desc.u.gemm.N = N;
        desc.u.gemm.K = K;
        ps_status st = ps_desc_validate(&desc);
        if (st != PS_SUCCESS) {
            cli_report_status("ps_desc_validate", st);
            return CLI_USAGE;
        }
        char shape[128];
        snprintf(shape, sizeof shape, "GEMM M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " (column-major)", M, N, K);
        return analyze_schedule(cmd, &desc, &a, shape);
    }
    if (cli_opt_seen(opts, n_opts, "threads")) {
        fprintf(stderr, "polysci %s: --threads needs --schedule (the Figure 4 matmul has no parallel loop)\n", cmd);
        return CLI_USAGE;
    }
    int mi = cli_choice(cmd, "method", a.method, method_names, 2);
    if (mi < 0) return CLI_USAGE;
    if (!order) order = "ijk";
    ps_analysis_options ao;
    ps_analysis_options_init(&ao);
    ao.method = (ps_analysis_method)mi;
    ps_analysis *an = NULL;
    ps_status st = ps_analysis_create_matmul(M, N, K, order, &ao, &an);
    if (st != PS_SUCCESS) {
        cli_report_status("ps_analysis_create_matmul", st);
        return st == PS_ERR_INVALID_ARG ? CLI_USAGE : CLI_FAIL;
    }
    char shape[128], src[64];
    snprintf(shape, sizeof shape, "Figure 4 matmul M=%" PRId64 " N=%" PRId64 " K=%" PRId64, M, N, K);
    snprintf(src, sizeof src, "Figure 4 loop order; %s method", method_names[mi]);
    rc = report(cmd, an, shape, "order", order, a.json ? "figure4" : src, a.json);
    ps_analysis_destroy(an);
    return rc;
}

/* ---------------------------------------------------------------- dispatch */

static int analyze_op(ps_op_kind kind, int argc, char **argv)
{
    return kind == PS_OP_GEMM ? analyze_gemm(argc, argv) : analyze_conv(argc, argv);
}

int cmd_analyze(int argc, char **argv)
{
    static const char usage[] =
        "usage: polysci analyze conv [options]   working sets of a conv schedule\n"
        "       polysci analyze gemm [options]   of the Figure 4 matmul or a GEMM schedule\n"
        "See 'polysci analyze conv --help' and 'polysci analyze gemm --help'.\n";
    return cli_dispatch_op("analyze", usage, argc, argv, analyze_op);
}
