/* polysci CLI — plan, pack, execute, time and check one operation. */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const cli_ranker_names[5] = {"default", "cost", "dnn", "none", "volume"};

static int fail_status(cli_result *res, const char *what, ps_status st)
{
    const char *msg = ps_last_error_message();
    snprintf(res->error, sizeof res->error, "%s failed: %s%s%s", what, ps_status_str(st),
             msg && *msg ? ": " : "", msg ? msg : "");
    return CLI_FAIL;
}

__attribute__((format(printf, 2, 3)))
static int fail_msg(cli_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    return CLI_FAIL;
}

static void merge_cmp(ref_cmp *acc, const ref_cmp *c, int first)
{
    if (first || c->rel_err > acc->rel_err || c->n_nonfinite > acc->n_nonfinite) {
        size_t nf = first ? c->n_nonfinite
                          : (c->n_nonfinite > acc->n_nonfinite ? c->n_nonfinite : acc->n_nonfinite);
        *acc = *c;
        acc->n_nonfinite = nf;
    }
}

/* Buffers of one check; everything freed by free_bufs. */
typedef struct bufs {
    float *src, *wei, *bias, *dst, *a, *b, *c0, *c;
    void *packed, *workspace;
    double *ref;
} bufs;

static void free_bufs(bufs *b)
{
    free(b->src);
    free(b->wei);
    free(b->bias);
    free(b->dst);
    free(b->a);
    free(b->b);
    free(b->c0);
    free(b->c);
    free(b->packed);
    free(b->workspace);
    free(b->ref);
}

static int exec_timed(const ps_plan *plan, const ps_exec_args *args, double *ms, cli_result *res)
{
    double t0 = cli_now_ms();
    ps_status st = ps_plan_execute(plan, args);
    *ms = cli_now_ms() - t0;
    return st == PS_SUCCESS ? CLI_OK : fail_status(res, "ps_plan_execute", st);
}

static int check_conv(const ps_plan *plan, const ps_conv_desc *d, const cli_check_opts *o,
                      bufs *B, ps_exec_args *args, cli_result *res)
{
    int64_t OH, OW, lOH = 0, lOW = 0;
    ref_conv_out_size(d, &OH, &OW);
    ps_status st = ps_conv_output_size(ps_plan_get_desc(plan), &lOH, &lOW);
    if (st != PS_SUCCESS) return fail_status(res, "ps_conv_output_size", st);
    if (lOH != OH || lOW != OW)
        return fail_msg(res, "output size mismatch: library %lldx%lld, reference %lldx%lld",
                        (long long)lOH, (long long)lOW, (long long)OH, (long long)OW);
    res->flops = 2.0 * (double)d->N * (double)d->K * (double)d->C * (double)OH * (double)OW *
                 (double)d->R * (double)d->S;

    size_t n_src, n_wei, n_dst;
    int64_t fs[4] = {d->N, d->C, d->H, d->W}, fw[4] = {d->K, d->C, d->R, d->S},
            fd[4] = {d->N, d->K, OH, OW};
    if (!cli_mul_size(&n_src, fs, 4) || !cli_mul_size(&n_wei, fw, 4) || !cli_mul_size(&n_dst, fd, 4))
        return fail_msg(res, "tensor sizes overflow");
    B->src = cli_alloc(n_src * sizeof(float));
    B->wei = cli_alloc(n_wei * sizeof(float));
    B->bias = cli_alloc((size_t)d->K * sizeof(float));
    B->dst = cli_alloc(n_dst * sizeof(float));
    B->ref = malloc(n_dst * sizeof(double));
    if (!B->src || !B->wei || !B->bias || !B->dst || !B->ref)
        return fail_msg(res, "out of memory for the operands (%.1f MiB)",
                        (double)((n_src + n_wei + n_dst * 3) * sizeof(float)) / 1048576.0);
    cli_fill_random(B->src, n_src, o->seed + 1);
    cli_fill_random(B->wei, n_wei, o->seed + 2);
    cli_fill_random(B->bias, (size_t)d->K, o->seed + 3);

    size_t packed_bytes = 0;
    if ((st = ps_plan_packed_weights_size(plan, &packed_bytes)) != PS_SUCCESS)
        return fail_status(res, "ps_plan_packed_weights_size", st);
    if (!(B->packed = cli_alloc(packed_bytes)))
        return fail_msg(res, "out of memory for packed weights (%zu bytes)", packed_bytes);
    double t0 = cli_now_ms();
    st = ps_plan_pack_weights(plan, B->wei, B->packed);
    res->pack_ms = cli_now_ms() - t0;
    if (st != PS_SUCCESS) return fail_status(res, "ps_plan_pack_weights", st);

    t0 = cli_now_ms();
    if (ref_conv_fwd(d, B->src, B->wei, B->bias, B->ref))
        return fail_msg(res, "out of memory in the reference");
    res->ref_ms = cli_now_ms() - t0;

    args->src = B->src;
    args->weights = B->packed;
    args->bias = (d->post_ops & PS_POST_BIAS) ? B->bias : NULL;
    args->dst = B->dst;

    /* First run on NaN: every output must be written. */
    cli_fill_nan(B->dst, n_dst);
    double ms;
    if (exec_timed(plan, args, &ms, res)) return CLI_FAIL;
    ref_cmp c;
    ref_compare(B->dst, B->ref, n_dst, &c);
    merge_cmp(&res->cmp, &c, 1);

    double *times = malloc((size_t)o->reps * sizeof *times);
    if (!times) return fail_msg(res, "out of memory");
    for (int r = 0; r < o->reps; r++)
        if (exec_timed(plan, args, &times[r], res)) {
            free(times);
            return CLI_FAIL;
        }
    ref_compare(B->dst, B->ref, n_dst, &c);
    merge_cmp(&res->cmp, &c, 0);
    res->exec_ms = cli_median(times, o->reps); /* sorts: times[0] is the minimum */
    res->exec_ms_min = times[0];
    free(times);
    return CLI_OK;
}

static int check_gemm(const ps_plan *plan, const ps_gemm_desc *g, const cli_check_opts *o,
                      bufs *B, ps_exec_args *args, cli_result *res)
{
    res->flops = 2.0 * (double)g->M * (double)g->N * (double)g->K;
    ref_gemm_geom geom;
    if (ref_gemm_geometry(g, &geom))
        return fail_msg(res, "leading dimensions too small or sizes overflow");
    B->a = cli_alloc(geom.a_elems * sizeof(float));
    B->b = cli_alloc(geom.b_elems * sizeof(float));
    B->c0 = cli_alloc(geom.c_elems * sizeof(float));
    B->c = cli_alloc(geom.c_elems * sizeof(float));
    B->ref = malloc(geom.c_elems * sizeof(double));
    if (!B->a || !B->b || !B->c0 || !B->c || !B->ref)
        return fail_msg(res, "out of memory for the operands (%.1f MiB)",
                        (double)((geom.a_elems + geom.b_elems + geom.c_elems * 4) * sizeof(float)) /
                            1048576.0);
    cli_fill_random(B->a, geom.a_elems, o->seed + 11);
    cli_fill_random(B->b, geom.b_elems, o->seed + 12);
    cli_fill_random(B->c0, geom.c_elems, o->seed + 13);

    double t0 = cli_now_ms();
    if (ref_gemm(g, B->a, B->b, B->c0, B->ref)) return fail_msg(res, "out of memory in the reference");
    res->ref_ms = cli_now_ms() - t0;

    args->a = B->a;
    args->b = B->b;
    args->c = B->c;

    /* First run: with beta == 0, C is not an input (BLAS convention), so its
     * logical elements start as NaN; elements between rows/columns (ld
     * padding) hold c0 and must stay untouched. */
    memcpy(B->c, B->c0, geom.c_elems * sizeof(float));
    if (g->beta == 0.0f)
        for (int64_t i = 0; i < g->M; i++)
            for (int64_t j = 0; j < g->N; j++)
                B->c[g->order == PS_COL_MAJOR ? (size_t)(i + j * geom.ldc) : (size_t)(i * geom.ldc + j)] = NAN;
    double ms;
    if (exec_timed(plan, args, &ms, res)) return CLI_FAIL;
    ref_cmp c;
    ref_compare(B->c, B->ref, geom.c_elems, &c);
    merge_cmp(&res->cmp, &c, 1);

    double *times = malloc((size_t)o->reps * sizeof *times);
    if (!times) return fail_msg(res, "out of memory");
    for (int r = 0; r < o->reps; r++) {
        if (g->beta != 0.0f) memcpy(B->c, B->c0, geom.c_elems * sizeof(float)); /* untimed */
        if (exec_timed(plan, args, &times[r], res)) {
            free(times);
            return CLI_FAIL;
        }
    }
    ref_compare(B->c, B->ref, geom.c_elems, &c);
    merge_cmp(&res->cmp, &c, 0);
    res->exec_ms = cli_median(times, o->reps); /* sorts: times[0] is the minimum */
    res->exec_ms_min = times[0];
    free(times);
    return CLI_OK;
}

int cli_check(ps_context *ctx, const ps_desc *desc, const cli_check_opts *o, cli_result *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->schedule, sizeof res->schedule, "?");
    res->threads = o->num_threads > 0 ? o->num_threads : ps_context_num_threads(ctx);

    ps_plan_options popts;
    ps_plan_options_init(&popts);
    popts.schedule = o->schedule;
    popts.num_threads = o->num_threads;
    popts.ranker = o->ranker;
    popts.top_k = o->top_k;
    popts.time_budget_ms = o->budget_ms;
    popts.flags = o->plan_flags;
    ps_plan *plan = NULL;
    double t0 = cli_now_ms();
    ps_status st = ps_plan_create(ctx, desc, &popts, &plan);
    res->plan_ms = cli_now_ms() - t0;
    if (st != PS_SUCCESS) return fail_status(res, "ps_plan_create", st);
    cli_plan_schedule_text(plan, res->schedule, sizeof res->schedule);
    if (o->describe && !(res->description = cli_plan_describe(plan))) {
        ps_plan_destroy(plan);
        return fail_msg(res, "ps_plan_describe failed");
    }

    bufs B;
    memset(&B, 0, sizeof B);
    ps_exec_args args;
    ps_exec_args_init(&args);
    size_t ws = 0;
    int rc;
    if ((st = ps_plan_workspace_size(plan, &ws)) != PS_SUCCESS) {
        rc = fail_status(res, "ps_plan_workspace_size", st);
    } else if (ws && !(B.workspace = cli_alloc(ws))) {
        rc = fail_msg(res, "out of memory for the workspace (%zu bytes)", ws);
    } else {
        args.workspace = B.workspace;
        if (desc->kind == PS_OP_CONV_FWD)
            rc = check_conv(plan, &desc->u.conv, o, &B, &args, res);
        else
            rc = check_gemm(plan, &desc->u.gemm, o, &B, &args, res);
    }
    if (rc == CLI_OK) {
        res->gflops = res->exec_ms > 0.0 ? res->flops / (res->exec_ms * 1e6) : 0.0;
        res->ok = res->cmp.n_nonfinite == 0 && res->cmp.rel_err <= o->tol;
    }
    free_bufs(&B);
    ps_plan_destroy(plan);
    return rc;
}
