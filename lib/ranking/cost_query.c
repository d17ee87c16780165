/* Public cost queries over the ranking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"
#include "plan/context_impl.h"
#include "plan/plan_impl.h"
#include "ranking/planner.h"
#include "ranking/rank.h"
#include "schedule/schedule_impl.h"

struct ps_cost_report {
    ps_op_kind kind;
    int n;
    ps_variant_cost *v;
    char **text; /* schedule strings */
};

ps_status ps_cost_query(ps_context *ctx, const ps_desc *desc, const ps_plan_options *opts, ps_cost_report **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_cost_query: out is NULL");
    *out = NULL;
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_cost_query: ctx is NULL");
    ps_problem prob;
    ps_status st = ps_problem_of(desc, &prob);
    if (st) return st;
    ps_plan_options def;
    if ((st = ps_plan_options_check("ps_cost_query", &opts, &def))) return st;
    /* A cost query is a question to a cost model: the default is Eq. 1. */
    ps_ranker ranker = opts->ranker == PS_RANKER_DEFAULT ? PS_RANKER_COST : opts->ranker;
    if (ranker != PS_RANKER_COST && ranker != PS_RANKER_VOLUME && ranker != PS_RANKER_DNN)
        return ps_error(PS_ERR_UNSUPPORTED, "ps_cost_query: ranker %d has no cost model", (int)opts->ranker);
    int nthreads = opts->num_threads ? opts->num_threads : ctx->num_threads;
    ps_ranking r;
    if ((st = ps_rank_variants(&ctx->machine, &prob, nthreads, ranker, &r))) return st;
    ps_cost_report *rep = calloc(1, sizeof *rep);
    if (rep) {
        rep->v = calloc((size_t)(r.n ? r.n : 1), sizeof *rep->v);
        rep->text = calloc((size_t)(r.n ? r.n : 1), sizeof *rep->text);
    }
    if (!rep || !rep->v || !rep->text) {
        st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_cost_query: out of memory");
        goto fail;
    }
    rep->kind = desc->kind;
    for (int i = 0; i < r.n; i++) {
        char buf[512];
        ps_schedule_format(r.v[i].schedule, desc->kind, buf, sizeof buf, NULL);
        if (!(rep->text[i] = strdup(buf))) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_cost_query: out of memory");
            goto fail;
        }
        rep->n = i + 1;
        ps_variant_cost *v = &rep->v[i];
        v->rank = i + 1;
        v->schedule = rep->text[i];
        /* The tournament has no cost; its losses say how contested a place is. */
        v->cost = ranker == PS_RANKER_DNN ? (double)r.v[i].losses : r.v[i].cost;
        memcpy(v->ws_bytes, r.v[i].ws, sizeof v->ws_bytes);
        const ps_kernel_shape *ks = &r.v[i].schedule->stages[0].kernel;
        v->kernel_m = ks->m;
        v->kernel_n = ks->n;
        v->kernel_k = ks->k;
        v->kernel_batch = ks->batch;
        v->parallel_iterations = (long long)r.v[i].shape[PS_SHAPE_PAR_ITERS];
        v->parallel_efficiency = r.v[i].shape[PS_SHAPE_PAR_EFF];
        v->reduction_steps = (long long)r.v[i].shape[PS_SHAPE_RED_STEPS];
    }
    ps_ranking_release(&r);
    *out = rep;
    return PS_SUCCESS;
fail:
    ps_ranking_release(&r);
    ps_cost_report_destroy(rep);
    return st;
}

int ps_cost_report_size(const ps_cost_report *report) { return report ? report->n : 0; }

ps_status ps_cost_report_get(const ps_cost_report *report, int i, ps_variant_cost *out)
{
    if (!report || !out) return ps_error(PS_ERR_NULL_POINTER, "ps_cost_report_get: report or out is NULL");
    if (i < 0 || i >= report->n)
        return ps_error(PS_ERR_INVALID_ARG, "ps_cost_report_get: index %d out of range (0..%d)", i, report->n - 1);
    *out = report->v[i];
    return PS_SUCCESS;
}

ps_status ps_cost_report_to_json(const ps_cost_report *report, int top, char *buf, size_t len, size_t *needed)
{
    if (!report) return ps_error(PS_ERR_NULL_POINTER, "ps_cost_report_to_json: report is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_cost_report_to_json: buf is NULL");
    int n = top > 0 && top < report->n ? top : report->n;
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_cost_report_to_json: out of memory");
    fprintf(f, "{\"n_variants\": %d, \"variants\": [", report->n);
    for (int i = 0; i < n; i++) {
        const ps_variant_cost *v = &report->v[i];
        fprintf(f, "%s{\"rank\": %d, \"schedule\": \"%s\", \"cost\": %.6g, \"ws_bytes\": {\"L1\": %.0f, \"L2\": %.0f, "
                "\"L3\": %.0f, \"mem\": %.0f}, \"kernel\": [%d, %d, %d, %d], \"parallel_iterations\": %lld, "
                "\"parallel_efficiency\": %.17g, \"reduction_steps\": %lld}",
                i ? ", " : "", v->rank, v->schedule, v->cost, v->ws_bytes[0], v->ws_bytes[1], v->ws_bytes[2], v->ws_bytes[3],
                v->kernel_m, v->kernel_n, v->kernel_k, v->kernel_batch, v->parallel_iterations, v->parallel_efficiency,
                v->reduction_steps);
    }
    fputs("]}", f);
    if (fclose(f) != 0 || !text) {
        free(text);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_cost_report_to_json: out of memory");
    }
    if (needed) *needed = tlen;
    ps_status st = PS_SUCCESS;
    if (len) {
        size_t c = tlen < len ? tlen : len - 1;
        memcpy(buf, text, c);
        buf[c] = 0;
    }
    if (tlen >= len) st = ps_error(PS_ERR_BUFFER_TOO_SMALL, "ps_cost_report_to_json: needs %zu bytes plus NUL", tlen);
    free(text);
    return st;
}

void ps_cost_report_destroy(ps_cost_report *report)
{
    if (!report) return;
    for (int i = 0; i < report->n; i++) free(report->text[i]);
    free(report->text);
    free(report->v);
    free(report);
}
