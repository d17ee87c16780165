/* polysci example: ask the planner's cost model about a layer shape.
 *
 * ps_cost_query ranks the candidate schedules of a ResNet-50 layer
 * (res2 3x3: 56x56, 64 -> 64 channels, pad 1, batch 1) without executing
 * anything: for each variant its Eq. 1 cost and the bytes of working sets
 * that each cache level serves (PolyScientist Alg. 2). The example prints
 * the five best, then checks that
 *   - the ranks are 1, 2, ... and the costs never decrease, and
 *   - rank 1 is the schedule ps_plan_create picks with the same options.
 * The cost ranker is named explicitly: the planner's default ranker may be
 * another one (see PS_RANKER_DEFAULT in plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polysci/polysci.h>

enum { TOP = 5 };

static void die(const char *what, ps_status st)
{
    fprintf(stderr, "cost_query: %s failed: %s: %s\n", what, ps_status_str(st), ps_last_error_message());
    exit(1);
}

static double kib(double bytes) { return bytes / 1024.0; }

int main(void)
{
    ps_context *ctx = NULL;
    ps_status st = ps_context_create(NULL, &ctx);
    if (st != PS_SUCCESS) die("ps_context_create", st);

    ps_desc desc;
    ps_desc_init_conv(&desc); /* NHWC, KCRS weights, stride 1 */
    ps_conv_desc *d = &desc.u.conv;
    d->N = 1;
    d->H = d->W = 56;
    d->C = d->K = 64;
    d->R = d->S = 3;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = 1;

    ps_plan_options opts;
    ps_plan_options_init(&opts);
    opts.ranker = PS_RANKER_COST; /* Eq. 1 over Alg. 2 working sets; num_threads 0: the context's */

    ps_cost_report *report = NULL;
    if ((st = ps_cost_query(ctx, &desc, &opts, &report)) != PS_SUCCESS) die("ps_cost_query", st);
    int n = ps_cost_report_size(report);
    printf("cost_query: ResNet-50 res2 3x3 conv, N=1 56x56x64 -> 56x56x64, pad 1, %d threads: %d variants\n",
           ps_context_num_threads(ctx), n);
    printf("%4s %12s %10s %10s %10s %10s  %s\n", "rank", "cost", "L1 KiB", "L2 KiB", "L3 KiB", "mem KiB",
           "schedule");

    int bad = 0;
    if (n < 1) {
        fprintf(stderr, "cost_query: the report lists no variant\n");
        bad++;
    }
    ps_variant_cost first;
    memset(&first, 0, sizeof first);
    double prev = 0.0;
    for (int i = 0; i < n; i++) {
        ps_variant_cost v;
        if ((st = ps_cost_report_get(report, i, &v)) != PS_SUCCESS) die("ps_cost_report_get", st);
        if (i == 0) first = v;
        if (i < TOP)
            printf("%4d %12.6g %10.1f %10.1f %10.1f %10.1f  %s\n", v.rank, v.cost, kib(v.ws_bytes[PS_COST_L1]),
                   kib(v.ws_bytes[PS_COST_L2]), kib(v.ws_bytes[PS_COST_L3]), kib(v.ws_bytes[PS_COST_MEM]),
                   v.schedule);
        if (v.rank != i + 1) {
            fprintf(stderr, "cost_query: variant %d has rank %d\n", i, v.rank);
            bad++;
        }
        if (!(v.cost >= 0.0) || (i > 0 && v.cost < prev)) {
            fprintf(stderr, "cost_query: rank %d costs %.9g after %.9g (costs must ascend)\n", v.rank, v.cost, prev);
            bad++;
        }
        for (int l = 0; l < PS_COST_LEVELS; l++)
            if (!(v.ws_bytes[l] >= 0.0)) {
                fprintf(stderr, "cost_query: rank %d has working set %g bytes at level %d\n", v.rank,
                        v.ws_bytes[l], l);
                bad++;
            }
        prev = v.cost;
    }
    if (n > TOP) printf("  ... %d more\n", n - TOP);

    /* The planner with the same options (and its plan cache bypassed) must
     * run rank 1. */
    opts.flags = PS_PLAN_NO_CACHE;
    ps_plan *plan = NULL;
    if ((st = ps_plan_create(ctx, &desc, &opts, &plan)) != PS_SUCCESS) die("ps_plan_create", st);
    char chosen[512];
    if ((st = ps_schedule_format(ps_plan_get_schedule(plan), PS_OP_CONV_FWD, chosen, sizeof chosen, NULL)) !=
        PS_SUCCESS)
        die("ps_schedule_format", st);
    if (n >= 1 && strcmp(chosen, first.schedule) != 0) {
        fprintf(stderr, "cost_query: ps_plan_create picked \"%s\", rank 1 is \"%s\"\n", chosen, first.schedule);
        bad++;
    }
    printf("cost_query: ps_plan_create (ranker cost) runs \"%s\": %s\n", chosen,
           n >= 1 && strcmp(chosen, first.schedule) == 0 ? "rank 1" : "NOT rank 1");
    printf("cost_query: %s\n", bad ? "FAILED" : "OK");

    ps_plan_destroy(plan);
    ps_cost_report_destroy(report);
    ps_context_destroy(ctx);
    return bad ? 1 : 0;
}
