/* The planner: candidate generation, ranking, optional timing of the top k. */
#include "ranking/planner.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "execution/engine.h"
#include "ranking/rank.h"
#include "schedule/schedule_impl.h"

/* Measured (docs/performance.md, against a low-noise re-timing of each
 * layer's front runners). Convolutions of N >= 2 images: the DNN's first
 * choice, ~2% faster than the fixed-order expert schedule on layers it was not
 * trained on (0.969-0.973 vs 0.948-0.953 of the best), for ~10 ms of cold
 * planning. But only where the last-level cache is fast, as on the Zen 5 VM
 * whose timings trained it: its inputs are bytes served per level, so what
 * an L3 byte costs against a memory byte is baked into its weights. Where
 * the L3 is about as slow as memory (ps_machine_llc_slow: the Intel Xeon VM
 * of sessions 13-17), its first choice ran at 0.99x the expert schedule over
 * the six conv sets at N = 2 (binary against binary, two rounds each:
 * VGG-A 0.97 -> 1.01x oneDNN, AlexNet 0.96 -> 0.98, the other sets within
 * +-0.6%; docs/performance.md, session 17), so there the expert schedule.
 * One image: the expert schedule (the DNN was trained on N = 2 timings only,
 * and its first choice ran 1.5-1.8% slower than the expert schedule on
 * ResNet-50 at N = 1 in three runs). GEMMs: the expert schedule with its L2
 * band tiles (ps_schedule_expert; the DNN saw one GEMM in training and its
 * first choice ran at 0.80x the fixed-order schedule). Timed (top_k > 1):
 * the DNN's order gives the best candidates. */
ps_ranker ps_planner_default_ranker(const ps_machine *m, const ps_desc *desc, int top_k)
{
    if (top_k > 1) return PS_RANKER_DNN;
    return desc->kind == PS_OP_CONV_FWD && desc->u.conv.N >= 2 && !ps_machine_llc_slow(m) ? PS_RANKER_DNN
                                                                                          : PS_RANKER_NONE;
}

/* Operands for timing candidates: allocated once for all of them. */
typedef struct bench_buffers {
    float *src, *wraw, *wpacked, *dst, *a, *b, *c;
    void *ws;
    size_t ws_bytes, wpacked_elems; /* grown per candidate (padded kernels pack more) */
} bench_buffers;

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) & ~(size_t)63); }

static ps_status alloc_buffers(const ps_desc *desc, bench_buffers *b)
{
    memset(b, 0, sizeof *b);
    if (desc->kind == PS_OP_CONV_FWD) {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        size_t ns = (size_t)ps_conv_src_elems(&c), nw = (size_t)ps_conv_weight_elems(&c), nd = (size_t)ps_conv_dst_elems(&c);
        b->src = alloc64(ns * 4); b->wraw = alloc64(nw * 4); b->dst = alloc64(nd * 4);
        if (!b->src || !b->wraw || !b->dst) return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        fill(b->src, ns);
        fill(b->wraw, nw);
    } else {
        ps_gemm_shape g;
        ps_gemm_shape_of(&desc->u.gemm, &g);
        size_t na = (size_t)g.lda * (size_t)(g.trans_a ? g.M : g.K), nb = (size_t)g.ldb * (size_t)(g.trans_b ? g.K : g.N);
        size_t nc = (size_t)g.ldc * (size_t)g.N;
        b->a = alloc64(na * 4); b->b = alloc64(nb * 4); b->c = alloc64(nc * 4);
        if (!b->a || !b->b || !b->c) return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        fill(b->a, na);
        fill(b->b, nb);
        fill(b->c, nc);
    }
    return PS_SUCCESS;
}

static void free_buffers(bench_buffers *b)
{
    free(b->src); free(b->wraw); free(b->wpacked); free(b->dst); free(b->a); free(b->b); free(b->c); free(b->ws);
}

/* Best of three runs after a warm-up, in ms. */
static ps_status time_schedule(const ps_desc *desc, const ps_schedule *s, int nthreads, const ps_machine *m,
                               bench_buffers *b, double *ms)
{
    ps_exec e;
    ps_status st = ps_exec_build(&e, desc, s, nthreads, m);
    if (st) return st;
    size_t need = ps_exec_workspace_bytes(&e);
    if (need > b->ws_bytes) {
        free(b->ws);
        b->ws = alloc64(need);
        b->ws_bytes = b->ws ? need : 0;
        if (!b->ws) {
            ps_exec_release(&e);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        }
    }
    const size_t need_w = desc->kind == PS_OP_CONV_FWD ? (size_t)ps_exec_packed_weight_elems(&e) : 0;
    if (need_w > b->wpacked_elems) {
        free(b->wpacked);
        b->wpacked = alloc64(need_w * sizeof(float));
        b->wpacked_elems = b->wpacked ? need_w : 0;
        if (!b->wpacked) {
            ps_exec_release(&e);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        }
    }
    if (desc->kind == PS_OP_CONV_FWD) ps_exec_pack_weights(&e, desc->u.conv.weight_layout, b->wraw, b->wpacked);
    ps_exec_operands ops = {.src = b->src, .weights = b->wpacked, .bias = b->wraw, .dst = b->dst,
                            .a = b->a, .b = b->b, .c = b->c, .workspace = b->ws};
    ps_exec_run(&e, &ops, NULL);
    double best = 1e300;
    for (int r = 0; r < 3; r++) {
        double t0 = omp_get_wtime();
        ps_exec_run(&e, &ops, NULL);
        double t = (omp_get_wtime() - t0) * 1e3;
        if (t < best) best = t;
    }
    ps_exec_release(&e);
    *ms = best;
    return PS_SUCCESS;
}

ps_expert_facts ps_planner_expert_facts(const ps_machine *m)
{
    /* The expert's conv rules (L1, L2, a slow last level) and GEMM rule
     * (last level, panels), from the same machine model the executor reads. */
    return (ps_expert_facts){.l1_bytes = ps_machine_cache_bytes(m, 1),
                             .l2_bytes = ps_machine_cache_bytes(m, 2),
                             .llc_bytes = ps_machine_cache_bytes(m, 3),
                             .panel_bytes = ps_machine_panel_bytes(m),
                             .llc_slow = ps_machine_llc_slow(m)};
}

ps_status ps_planner_choose(ps_context *ctx, const ps_desc *desc, int nthreads, ps_ranker ranker, int top_k,
                            ps_schedule **out)
{
    *out = NULL;
    const ps_expert_facts facts = ps_planner_expert_facts(&ctx->machine);
    if (ranker == PS_RANKER_DEFAULT) ranker = ps_planner_default_ranker(&ctx->machine, desc, top_k);
    if (ranker == PS_RANKER_NONE) return ps_schedule_expert(desc, nthreads, &facts, out);
    if (ranker != PS_RANKER_COST && ranker != PS_RANKER_VOLUME && ranker != PS_RANKER_DNN)
        return ps_error(PS_ERR_UNSUPPORTED, "planner: ranker %d is not available in this build", (int)ranker);
    ps_ranking r;
    ps_status st = ps_rank_variants(&ctx->machine, desc, nthreads, ranker, &r);
    if (st) return st;
    if (r.n == 0) {
        ps_ranking_release(&r);
        return ps_schedule_expert(desc, nthreads, &facts, out);
    }
    if (ctx->verbose >= 2) {
        for (int i = 0; i < r.n; i++) {
            char text[512];
            ps_schedule_format(r.v[i].schedule, desc->kind, text, sizeof text, NULL);
            fprintf(stderr, "polysci_verbose,rank,%d,%s,%.6g,L1=%.0f,L2=%.0f,L3=%.0f,mem=%.0f", i + 1, text, r.v[i].cost,
                    r.v[i].ws[0], r.v[i].ws[1], r.v[i].ws[2], r.v[i].ws[3]);
            if (ranker == PS_RANKER_DNN) fprintf(stderr, ",wins=%d,losses=%d", r.v[i].wins, r.v[i].losses);
            fputc('\n', stderr);
        }
    }
    int pick = 0;
    ps_schedule *fallback = NULL;
    if (top_k > 1) {
        /* The expert schedule is a candidate too: timing then never ends
         * below what the default options would run without it. */
        bench_buffers b;
        int k = top_k < r.n ? top_k : r.n;
        double best = 1e300, ms = 0.0;
        if (!(st = alloc_buffers(desc, &b))) {
            for (int i = 0; i < k && !st; i++)
                if (!(st = time_schedule(desc, r.v[i].schedule, nthreads, &ctx->machine, &b, &ms)) && ms < best) {
                    best = ms;
                    pick = i;
                }
            if (!st && !(st = ps_schedule_expert(desc, nthreads, &facts, &fallback)) &&
                !(st = time_schedule(desc, fallback, nthreads, &ctx->machine, &b, &ms)) && ms < best)
                pick = -1;
        }
        free_buffers(&b);
        if (st) {
            ps_schedule_destroy(fallback);
            ps_ranking_release(&r);
            return st;
        }
    }
    if (pick < 0) {
        *out = fallback;
    } else {
        ps_schedule_destroy(fallback);
        *out = r.v[pick].schedule;
        r.v[pick].schedule = NULL;
    }
    ps_ranking_release(&r);
    return PS_SUCCESS;
}
