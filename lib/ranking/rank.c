/* Poly-ranking: analysis -> Alg. 2 -> Eq. 1 -> sort. */
#include "ranking/rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ranking/dnn.h"
#include "ranking/traffic.h"
#include "schedule/schedule_impl.h"

/* Where the machine model has no numbers (it always should), rank anyway
 * with a plausible ladder rather than dividing by zero. */
static double lat_of(const ps_machine *m, int level)
{
    if (level < m->n_levels) return m->levels[level].latency_ns > 0 ? m->levels[level].latency_ns : 1.0 + 4.0 * level;
    return m->mem_latency_ns > 0 ? m->mem_latency_ns : 80.0;
}

static double bw_of(const ps_machine *m, int level)
{
    if (level < m->n_levels) return m->levels[level].bandwidth_gbs > 0 ? m->levels[level].bandwidth_gbs : 200.0 / (1 + level);
    return m->mem_bandwidth_gbs > 0 ? m->mem_bandwidth_gbs : 20.0;
}

static void assign(const ps_machine *m, int nthreads, double per_thread, double shared, int shared_only,
                   double ws[PS_COST_LEVELS])
{
    const int levels = m->n_levels < PS_COST_MEM ? m->n_levels : PS_COST_MEM;
    for (int l = 0; l < levels; l++) {
        const ps_cache_level *c = &m->levels[l];
        int sharing = c->shared_by > 1 && nthreads > 1;
        /* Threads that share one instance of this cache: at most its sharers. */
        double need = sharing ? shared * (double)(c->shared_by < nthreads ? c->shared_by : nthreads) / nthreads
                              : per_thread;
        if (!sharing && shared_only) continue;
        if (need <= (double)c->size_bytes) {
            ws[l] += need;
            return;
        }
    }
    ws[PS_COST_MEM] += shared_only ? shared : per_thread;
}

void ps_rank_alg2(const ps_machine *m, int nthreads, const ps_analysis *a, double ws[PS_COST_LEVELS])
{
    for (int l = 0; l < PS_COST_LEVELS; l++) ws[l] = 0.0;
    int n = ps_analysis_num_dependences(a);
    for (int i = 0; i < n; i++) {
        ps_dependence_info d;
        if (ps_analysis_get_dependence(a, i, &d)) continue;
        assign(m, nthreads, (double)d.ws_min_bytes, (double)d.ws_min_shared_bytes, d.shared_only, ws);
        assign(m, nthreads, (double)d.ws_max_bytes, (double)d.ws_max_shared_bytes, d.shared_only, ws);
    }
}

double ps_rank_eq1(const ps_machine *m, const double ws[PS_COST_LEVELS])
{
    double cost = 0.0;
    const int levels = m->n_levels < PS_COST_MEM ? m->n_levels : PS_COST_MEM;
    for (int l = 0; l < levels; l++) cost += ws[l] * lat_of(m, l) / bw_of(m, l);
    cost += ws[PS_COST_MEM] * lat_of(m, m->n_levels) / bw_of(m, m->n_levels);
    return cost;
}

void ps_rank_shape(const ps_problem *p, const ps_schedule *sched, int nthreads, double shape[PS_SHAPE_COUNT])
{
    const ps_stage *sg = &sched->stages[0];
    int64_t left[PS_DIM_COUNT], par = 1;
    ps_tile_space_extents(p, &sg->kernel, left);
    const int64_t red = left[PS_DIM_C];
    for (int i = 0; i < sg->n_loops && sg->loops[i].parallel; i++) par *= ps_loop_trips(&sg->loops[i], left);
    const int64_t t = nthreads > 1 ? nthreads : 1;
    shape[PS_SHAPE_KERNEL_M] = sg->kernel.m;
    shape[PS_SHAPE_KERNEL_N] = sg->kernel.n;
    shape[PS_SHAPE_KERNEL_KB] = (double)sg->kernel.k * sg->kernel.batch;
    shape[PS_SHAPE_PAR_ITERS] = (double)par;
    shape[PS_SHAPE_PAR_EFF] = (double)par / (double)(t * ((par + t - 1) / t));
    shape[PS_SHAPE_RED_STEPS] = (double)red;
}

double ps_rank_balance(const ps_problem *p, const ps_schedule *sched, int nthreads)
{
    const ps_stage *sg = &sched->stages[0];
    int64_t ext[PS_DIM_COUNT], left[PS_DIM_COUNT], trips[PS_SCHEDULE_MAX_LOOPS], total = 1;
    ps_tile_space_extents(p, &sg->kernel, ext);
    memcpy(left, ext, sizeof left);
    int np = 0;
    for (; np < sg->n_loops && sg->loops[np].parallel; np++) total *= trips[np] = ps_loop_trips(&sg->loops[np], left);
    const int64_t threads = nthreads < 1 ? 1 : nthreads, team = threads < total ? threads : total;
    if (threads == 1 || total > PS_BALANCE_MAX_ITERS) return 1.0;
    /* points per tile index: K and OW blocks hold up to m and n points
     * (GEMM: M rows, N columns), the last one the rest */
    int64_t pts_k, pts_ow;
    if (p->desc.kind == PS_OP_GEMM) {
        pts_k = p->desc.u.gemm.M;
        pts_ow = p->desc.u.gemm.N;
    } else {
        pts_k = p->conv.K;
        pts_ow = p->conv.OW;
    }
    double sum = 0.0, busiest = 0.0;
    for (int64_t part = 0; part < team; part++) {
        int64_t begin, end;
        ps_band_part(total, team, part, &begin, &end);
        double work = 0.0;
        for (int64_t it = begin; it < end; it++) {
            int64_t lo[PS_DIM_COUNT], hi[PS_DIM_COUNT];
            if (!ps_band_box(sg->loops, np, trips, ext, it, lo, hi)) continue;
            double w = 1.0;
            for (int d = 0; d < PS_DIM_COUNT; d++) {
                int64_t a = lo[d], b = hi[d];
                if (d == PS_DIM_K) {
                    a *= sg->kernel.m;
                    b = b * sg->kernel.m < pts_k ? b * sg->kernel.m : pts_k;
                } else if (d == PS_DIM_OW) {
                    a *= sg->kernel.n;
                    b = b * sg->kernel.n < pts_ow ? b * sg->kernel.n : pts_ow;
                }
                w *= (double)(b - a);
            }
            work += w;
        }
        sum += work;
        if (work > busiest) busiest = work;
    }
    return busiest > 0.0 ? sum / ((double)threads * busiest) : 1.0;
}

static int by_cost(const void *pa, const void *pb)
{
    const ps_ranked *a = pa, *b = pb;
    if (a->cost < b->cost) return -1;
    if (a->cost > b->cost) return 1;
    return (a->index > b->index) - (a->index < b->index);
}

ps_status ps_rank_variants(const ps_machine *m, const ps_problem *p, int nthreads, ps_ranker ranker, ps_ranking *out)
{
    return ps_rank_variants_top(m, p, nthreads, ranker, 0, out);
}

ps_status ps_ranking_complete(ps_ranking *r, int nthreads)
{
    if (r->exact >= r->n) return PS_SUCCESS;
    qsort(r->v, (size_t)r->n, sizeof *r->v, by_cost);
    return ps_dnn_tournament(&ps_dnn_weights, r, nthreads);
}

ps_status ps_rank_variants_top(const ps_machine *m, const ps_problem *p, int nthreads, ps_ranker ranker, int top,
                               ps_ranking *out)
{
    memset(out, 0, sizeof *out);
    ps_variant_set vs;
    ps_status st = ps_variants_generate(p, &vs);
    if (st) return st;
    out->v = calloc((size_t)(vs.n ? vs.n : 1), sizeof *out->v);
    if (!out->v) {
        ps_variant_set_release(&vs);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ranking: out of memory");
    }
    ps_analysis_options ao;
    ps_analysis_options_init(&ao);
    ao.num_threads = nthreads;
    ao.method = PS_ANALYSIS_FAST;
    /* Variants are independent: analyse them on the plan's threads (cold
     * planning time is the user's wait). Error texts are thread-local, so the
     * first failure's text is carried back to the calling thread. */
    int failed_at = vs.n;
    char failure[512] = "";
#pragma omp parallel for num_threads(nthreads > 0 ? nthreads : 1) schedule(dynamic, 4)
    for (int i = 0; i < vs.n; i++) {
        ps_ranked *r = &out->v[i];
        r->index = i;
        ps_rank_shape(p, vs.items[i], nthreads, r->shape);
        if (ranker == PS_RANKER_VOLUME) {
            ps_traffic_estimate(m, p, vs.items[i], nthreads, r->ws);
            r->cost = ps_traffic_cost(m, r->ws);
            continue;
        }
        /* The analysis is a public component of its own: it takes the
         * user's descriptor. */
        ps_analysis *a;
        ps_status sa = ps_analysis_create(&p->desc, vs.items[i], &ao, &a);
        if (sa) {
#pragma omp critical(ps_rank_failure)
            if (i < failed_at) {
                failed_at = i;
                st = sa;
                snprintf(failure, sizeof failure, "%s", ps_last_error_message());
            }
            continue;
        }
        ps_rank_alg2(m, nthreads, a, r->ws);
        r->cost = ps_rank_eq1(m, r->ws);
        ps_analysis_destroy(a);
    }
    for (int i = 0; i < vs.n; i++) {
        out->v[i].schedule = vs.items[i];
        vs.items[i] = NULL; /* moved */
    }
    out->n = out->exact = vs.n;
    ps_variant_set_release(&vs);
    if (st) {
        ps_ranking_release(out);
        return ps_error(st, "%s", failure);
    }
    qsort(out->v, (size_t)out->n, sizeof *out->v, by_cost);
    /* The tournament breaks its ties by the Eq. 1 order just established. */
    if (ranker == PS_RANKER_DNN && (st = ps_dnn_tournament_top(&ps_dnn_weights, out, nthreads, top)))
        ps_ranking_release(out);
    return st;
}

void ps_ranking_release(ps_ranking *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) ps_schedule_destroy(r->v[i].schedule);
    free(r->v);
    r->v = NULL;
    r->n = 0;
}
