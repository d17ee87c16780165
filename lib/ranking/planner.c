/* The planner: candidate generation, ranking, optional timing of the top k. */
#include "ranking/planner.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "execution/engine.h"
#include "plan/cache.h"
#include "ranking/rank.h"
#include "schedule/schedule_impl.h"

/* The least ps_rank_balance the static choice takes without looking
 * further down the ranking: the busiest thread holds at most ~11% more than
 * an even share. */
#define PS_PLANNER_MIN_BALANCE 0.9

/* Places of the DNN's ranking the static choice has settled before it scans
 * for an even split (ps_dnn_tournament_top); past them the whole tournament
 * is played. */
#define PS_PLANNER_BALANCE_PLACES 8

/* Convolutions of N >= 2 images: the DNN's first choice, ~2% faster than the
 * fixed-order expert schedule on layers it was not trained on (0.969-0.973
 * vs 0.948-0.953 of the best), for ~10 ms of cold planning. But only where
 * the last-level cache is fast, as on the machine whose timings trained it:
 * its inputs are bytes served per level, so what an L3 byte costs against a
 * memory byte is baked into its weights. Where the L3 is about as slow as
 * memory (ps_machine_llc_slow) its first choice ran at 0.99x the expert
 * schedule over the six conv sets at N = 2 (VGG-A 0.97 against 1.01x
 * oneDNN, AlexNet 0.96 against 0.98, the others within +-0.6%), so there the
 * expert schedule. One image: the expert schedule (the DNN was trained on
 * N = 2 timings only, and its first choice ran 1.5-1.8% slower than the
 * expert schedule on ResNet-50 at N = 1). GEMMs: the expert schedule with
 * its L2 band tiles (the DNN saw one GEMM in training and its first choice
 * ran at 0.80x the fixed order). Timed (top_k > 1): the DNN's order gives
 * the best candidates. Each comparison is a binary with one default against
 * one with the other, e.g. `bash bench/ab.sh OLD NEW 3 /tmp/ab -- conv
 * --layers vgga --N 2`. */
ps_ranker ps_planner_default_ranker(const ps_machine *m, const ps_problem *p, int top_k)
{
    if (top_k > 1) return PS_RANKER_DNN;
    return p->desc.kind == PS_OP_CONV_FWD && p->conv.N >= 2 && !ps_machine_llc_slow(m) ? PS_RANKER_DNN
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

/* Elements of one run's operands: source, weights, destination (a slice's
 * stride ldo >= K included) of a conv; A, B, C of a GEMM (no weights). */
static void operand_elems(const ps_problem *p, size_t n[3])
{
    if (p->desc.kind == PS_OP_CONV_FWD) {
        const ps_conv_shape *c = &p->conv;
        n[0] = (size_t)ps_conv_src_elems(c);
        n[1] = (size_t)ps_conv_weight_elems(c);
        n[2] = (size_t)(c->N * c->OH * c->OW * c->ldo);
        return;
    }
    const ps_gemm_shape *g = &p->gemm;
    n[0] = (size_t)g->lda * (size_t)(g->trans_a ? g->M : g->K);
    n[1] = (size_t)g->ldb * (size_t)(g->trans_b ? g->K : g->N);
    n[2] = (size_t)g->ldc * (size_t)g->N;
}

static ps_status alloc_buffers(const ps_problem *p, bench_buffers *b)
{
    memset(b, 0, sizeof *b);
    size_t n[3];
    operand_elems(p, n);
    if (p->desc.kind == PS_OP_CONV_FWD) {
        b->src = alloc64(n[0] * 4); b->wraw = alloc64(n[1] * 4); b->dst = alloc64(n[2] * 4);
        if (!b->src || !b->wraw || !b->dst) return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        fill(b->src, n[0]);
        fill(b->wraw, n[1]);
        memset(b->dst, 0, n[2] * 4); /* its pages mapped before any timed run */
    } else {
        b->a = alloc64(n[0] * 4); b->b = alloc64(n[1] * 4); b->c = alloc64(n[2] * 4);
        if (!b->a || !b->b || !b->c) return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        fill(b->a, n[0]);
        fill(b->b, n[1]);
        fill(b->c, n[2]);
    }
    return PS_SUCCESS;
}

static void free_buffers(bench_buffers *b)
{
    free(b->src); free(b->wraw); free(b->wpacked); free(b->dst); free(b->a); free(b->b); free(b->c); free(b->ws);
}

/* Operand bytes of one run and, of them, the weights' (a conv's timing packs
 * them into a fresh buffer). */
static double operand_bytes(const ps_problem *p, double *weight_bytes)
{
    size_t n[3];
    operand_elems(p, n);
    *weight_bytes = p->desc.kind == PS_OP_CONV_FWD ? 4.0 * (double)n[1] : 0.0;
    return 4.0 * ((double)n[0] + (double)n[1] + (double)n[2]);
}

/* A lower bound of one run in ms: its FLOPs at the threads' FMA peak, or its
 * operands once through memory, whichever is longer. */
static double run_floor_ms(const ps_problem *p, int nthreads, const ps_machine *m)
{
    double wbytes;
    const double bytes = operand_bytes(p, &wbytes);
    const double peak = (m->peak_gflops_core > 0 ? m->peak_gflops_core : 50.0) * (nthreads > 0 ? nthreads : 1);
    const double bw = m->mem_bandwidth_gbs > 0 ? m->mem_bandwidth_gbs : 10.0;
    const double fl = ps_desc_flops(&p->desc) / (peak * 1e6), mem = bytes / (bw * 1e6);
    return fl > mem ? fl : mem;
}

/* A run lasting this long is its own measurement under a budget: the
 * operands' pages are mapped and the kernels compiled before it, and a
 * second run would double the candidate's cost. */
#define TIME_ONE_RUN_MS 2.0
/* Shorter runs are timed in trials of this many ms: one run of a few tens of
 * microseconds is mostly timer and scheduling noise. */
#define TIME_TRIAL_MS 0.5

/* The candidate's time per run in ms: a first run, then (unless it took
 * TIME_ONE_RUN_MS or more and budgeted is set) the best of three trials of
 * as many runs as last TIME_TRIAL_MS. */
static ps_status time_schedule(const ps_problem *p, const ps_schedule *s, int nthreads, const ps_machine *m,
                               bench_buffers *b, int budgeted, double *ms)
{
    ps_exec e;
    ps_status st = ps_exec_build(&e, p, s, nthreads, m);
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
        memset(b->ws, 0, need); /* mapped before the first run, which may be the only one */
    }
    const size_t need_w = p->desc.kind == PS_OP_CONV_FWD ? (size_t)ps_exec_packed_weight_elems(&e) : 0;
    if (need_w > b->wpacked_elems) {
        free(b->wpacked);
        b->wpacked = alloc64(need_w * sizeof(float));
        b->wpacked_elems = b->wpacked ? need_w : 0;
        if (!b->wpacked) {
            ps_exec_release(&e);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: no memory to time candidates");
        }
    }
    if (p->desc.kind == PS_OP_CONV_FWD) ps_exec_pack_weights(&e, p->desc.u.conv.weight_layout, b->wraw, b->wpacked);
    ps_exec_operands ops = {.src = b->src, .weights = b->wpacked, .bias = b->wraw, .dst = b->dst,
                            .a = b->a, .b = b->b, .c = b->c, .workspace = b->ws};
    double t0 = omp_get_wtime();
    ps_exec_run(&e, &ops, NULL);
    double best = (omp_get_wtime() - t0) * 1e3;
    if (!(budgeted && best >= TIME_ONE_RUN_MS)) {
        const int iters = best >= TIME_TRIAL_MS ? 1 : best > 1e-6 ? (int)(TIME_TRIAL_MS / best) + 1 : 1000;
        best = 1e300;
        for (int r = 0; r < 3; r++) {
            t0 = omp_get_wtime();
            for (int i = 0; i < iters; i++) ps_exec_run(&e, &ops, NULL);
            const double t = (omp_get_wtime() - t0) * 1e3 / iters;
            if (t < best) best = t;
        }
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

/* A candidate the planner does not use (its check or its timing failed, or
 * the ranking that should give it): one PS_VERBOSE line, like oneDNN's,
 * `polysci_verbose,refused,KEY,WHO,SCHEDULE,REASON`. */
static void note_refused(const ps_context *ctx, const ps_problem *p, int nthreads, const char *who,
                         const ps_schedule *s, const char *reason, int *refused)
{
    (*refused)++;
    if (!ctx->verbose) return;
    char key[1024], text[512] = "-";
    ps_plan_key(&p->desc, nthreads, PS_RANKER_DEFAULT, 0, 0.0, key, sizeof key);
    if (s) ps_schedule_format(s, p->desc.kind, text, sizeof text, NULL);
    fprintf(stderr, "polysci_verbose,refused,%s,%s,%s,%s\n", key, who, text, reason);
}

/* A candidate timed at plan time: `polysci_verbose,timed,KEY,WHO,SCHEDULE,MS`
 * (WHO: expert, or ranked:I for the ranker's I-th candidate), so a user sees
 * what the measured mode compared and what the budget left out. */
static void note_timed(const ps_context *ctx, const ps_problem *p, int nthreads, const char *who, int i,
                       const ps_schedule *s, double ms)
{
    if (!ctx->verbose) return;
    char key[1024], text[512];
    ps_plan_key(&p->desc, nthreads, PS_RANKER_DEFAULT, 0, 0.0, key, sizeof key);
    ps_schedule_format(s, p->desc.kind, text, sizeof text, NULL);
    if (i > 0) fprintf(stderr, "polysci_verbose,timed,%s,%s:%d,%s,%.4f\n", key, who, i, text, ms);
    else fprintf(stderr, "polysci_verbose,timed,%s,%s,%s,%.4f\n", key, who, text, ms);
}

/* A measured-mode plan left untimed because the expert schedule's and the
 * first candidate's timings would not end within the budget:
 * `polysci_verbose,untimed,KEY,PREDICTED_MS,BUDGET_MS` (the prediction is
 * per timing). */
static void note_untimed(const ps_context *ctx, const ps_problem *p, int nthreads, double pred_ms, double budget_ms)
{
    if (!ctx->verbose) return;
    char key[1024];
    ps_plan_key(&p->desc, nthreads, PS_RANKER_DEFAULT, 0, 0.0, key, sizeof key);
    fprintf(stderr, "polysci_verbose,untimed,%s,%.4f,%g\n", key, pred_ms, budget_ms);
}

/* Takes candidate *s where it passes the check, else notes and destroys it. */
static int accept(const ps_context *ctx, const ps_problem *p, int nthreads, const char *who, ps_schedule **s,
                  int *refused)
{
    if (ps_schedule_check_problem(*s, p) == PS_SUCCESS) return 1;
    note_refused(ctx, p, nthreads, who, *s, ps_last_error_message(), refused);
    ps_schedule_destroy(*s);
    *s = NULL;
    return 0;
}

/* The expert schedule where it passes the check, else the default loop order. */
static ps_status expert_choice(ps_context *ctx, const ps_problem *p, int nthreads, ps_schedule **out, int *refused)
{
    const ps_expert_facts facts = ps_planner_expert_facts(&ctx->machine);
    unsigned fired = 0;
    ps_status st = ps_expert_schedule(p, nthreads, &facts, out, &fired);
    if (st == PS_ERR_OUT_OF_MEMORY) return st;
    if (!st) {
        char who[256] = "expert";
        for (int r = 0; r < PS_RULE_COUNT; r++)
            if (fired & 1u << r)
                snprintf(who + strlen(who), sizeof who - strlen(who), "%c%s", who[6] ? '+' : ':',
                         ps_expert_rule_name((ps_expert_rule)r));
        if (accept(ctx, p, nthreads, who, out, refused)) return PS_SUCCESS;
    } else {
        note_refused(ctx, p, nthreads, "expert", NULL, ps_last_error_message(), refused);
    }
    if ((st = ps_expert_default(p, out))) return st;
    if (accept(ctx, p, nthreads, "default", out, refused)) return PS_SUCCESS;
    return ps_error(PS_ERR_INVALID_SCHEDULE, "planner: the default loop order fails its own check");
}

/* The ranker's candidates in its order, the first that passes the check; for
 * top_k > 1 the fastest of the k best that pass and the expert schedule
 * (timing then never ends below what the default options would run). Under
 * budget_ms (> 0) the expert schedule and the first candidate are timed where
 * both should end within it (else the static default's choice: the expert
 * schedule where static_expert, else the first, untimed); the others follow
 * in the ranker's order while planning, with what the last candidate cost,
 * stays within the budget. */
static ps_status ranked_choice(ps_context *ctx, const ps_problem *p, int nthreads, ps_ranker ranker, int top_k,
                               double budget_ms, int static_expert, ps_schedule **out, int *refused)
{
    const double t0 = omp_get_wtime();
    ps_ranking r;
    int balanced = top_k <= 1 && ranker == PS_RANKER_DNN;
    /* The places the choice reads must be the full tournament's: the first
     * k, or for the balance guard the first PS_PLANNER_BALANCE_PLACES (the
     * ranking is completed below where the scan goes past them). Verbose
     * listings show the full ranking. */
    const int top = ctx->verbose >= 2 ? 0 : balanced ? PS_PLANNER_BALANCE_PLACES : top_k < 1 ? 1 : top_k;
    ps_status st = ps_rank_variants_top(&ctx->machine, p, nthreads, ranker, top, &r);
    if (st == PS_ERR_OUT_OF_MEMORY) return st;
    if (st) {
        note_refused(ctx, p, nthreads, "ranking", NULL, ps_last_error_message(), refused);
        return expert_choice(ctx, p, nthreads, out, refused);
    }
    if (ctx->verbose >= 2) {
        for (int i = 0; i < r.n; i++) {
            char text[512];
            ps_schedule_format(r.v[i].schedule, p->desc.kind, text, sizeof text, NULL);
            fprintf(stderr, "polysci_verbose,rank,%d,%s,%.6g,L1=%.0f,L2=%.0f,L3=%.0f,mem=%.0f", i + 1, text, r.v[i].cost,
                    r.v[i].ws[0], r.v[i].ws[1], r.v[i].ws[2], r.v[i].ws[3]);
            if (ranker == PS_RANKER_DNN) fprintf(stderr, ",wins=%d,losses=%d", r.v[i].wins, r.v[i].losses);
            fputc('\n', stderr);
        }
    }
    /* Timing under a budget starts only where the expert schedule's and the
     * first candidate's timings should end within it: first by their runs'
     * lower bound (run_floor_ms), then with what mapping the operands cost
     * (on a VM a first touch runs at a few GB/s: 20 ms for a layer's 50 MB),
     * which packing the weights pays again. Otherwise the plan is the static
     * default's, untimed: planning then stays near the budget instead of
     * doubling it on layers whose one run takes a fifth of it. */
    bench_buffers b;
    memset(&b, 0, sizeof b);
    int timed = top_k > 1;
    const double floor_ms = timed && budget_ms > 0 ? run_floor_ms(p, nthreads, &ctx->machine) : 0.0;
    double pred = floor_ms;
    if (timed && budget_ms > 0 && (omp_get_wtime() - t0) * 1e3 + 2.0 * pred > budget_ms) timed = 0;
    if (timed) {
        const double ta = omp_get_wtime();
        if ((st = alloc_buffers(p, &b))) {
            free_buffers(&b);
            ps_ranking_release(&r);
            return st;
        }
        double wbytes;
        const double bytes = operand_bytes(p, &wbytes);
        pred = floor_ms + (omp_get_wtime() - ta) * 1e3 * (bytes > 0 ? wbytes / bytes : 0.0);
        if (budget_ms > 0 && (omp_get_wtime() - t0) * 1e3 + 2.0 * pred > budget_ms) {
            timed = 0;
            free_buffers(&b);
            memset(&b, 0, sizeof b);
        }
    }
    if (top_k > 1 && !timed) {
        note_untimed(ctx, p, nthreads, pred, budget_ms);
        if (static_expert) {
            ps_ranking_release(&r);
            return expert_choice(ctx, p, nthreads, out, refused);
        }
        balanced = ranker == PS_RANKER_DNN;
    }
    /* The candidates in the ranker's order that pass the check, at most k
     * (taken out of the ranking). */
    const int k = !timed || top_k < 1 ? 1 : top_k < r.n ? top_k : r.n;
    if (r.exact < r.n) {
        /* Where the scan below would read past the settled places (checks
         * refused candidates, or no even split among them), the whole
         * tournament is played first. Refused schedules are left out (NULL)
         * of both scans. */
        int found = 0, passed = 0;
        for (int i = 0; i < r.exact && !found; i++) {
            if (!r.v[i].schedule || !accept(ctx, p, nthreads, "ranked", &r.v[i].schedule, refused)) continue;
            passed++;
            found = balanced ? ps_rank_balance(p, r.v[i].schedule, nthreads) >= PS_PLANNER_MIN_BALANCE : passed >= k;
        }
        if (!found && (st = ps_ranking_complete(&r, nthreads))) {
            free_buffers(&b);
            ps_ranking_release(&r);
            return st;
        }
    }
    ps_schedule **cand = malloc((size_t)(k ? k : 1) * sizeof *cand);
    if (!cand) {
        free_buffers(&b);
        ps_ranking_release(&r);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "planner: out of memory");
    }
    int n = 0;
    if (balanced) {
        /* One candidate, untimed, by the DNN: its first unless its split
         * of the parallel band leaves a core idle part of the time
         * (balance below PS_PLANNER_MIN_BALANCE) and one further down
         * splits the work that evenly. The DNN sees the split only as
         * iteration counts, one input of 11: on random layers (N = 3, 2
         * threads) its first choices with 3 or 7 band iterations ran at
         * 0.75-0.8 of the next even one's speed. The paper's rankers (Eq.
         * 1, volume) are kept as they are: their first candidate. */
        int first = -1, even = -1;
        for (int i = 0; i < r.n && even < 0; i++) {
            if (!r.v[i].schedule || !accept(ctx, p, nthreads, "ranked", &r.v[i].schedule, refused)) continue;
            if (first < 0) first = i;
            if (ps_rank_balance(p, r.v[i].schedule, nthreads) >= PS_PLANNER_MIN_BALANCE) even = i;
        }
        const int take = even >= 0 ? even : first;
        if (take >= 0) {
            cand[n++] = r.v[take].schedule;
            r.v[take].schedule = NULL;
            if (take != first && ctx->verbose) {
                char key[1024], text[512];
                ps_plan_key(&p->desc, nthreads, PS_RANKER_DEFAULT, 0, 0.0, key, sizeof key);
                ps_schedule_format(r.v[first].schedule, p->desc.kind, text, sizeof text, NULL);
                fprintf(stderr, "polysci_verbose,passed_over,%s,ranked:%d,%s,balance %.2f\n", key, first + 1, text,
                        ps_rank_balance(p, r.v[first].schedule, nthreads));
            }
        }
    }
    for (int i = 0; !balanced && i < r.n && n < k; i++) {
        if (r.v[i].schedule && accept(ctx, p, nthreads, "ranked", &r.v[i].schedule, refused)) cand[n++] = r.v[i].schedule;
        r.v[i].schedule = NULL;
    }
    ps_ranking_release(&r);
    if (n == 0) {
        free(cand);
        free_buffers(&b);
        return expert_choice(ctx, p, nthreads, out, refused);
    }
    int pick = 0;
    ps_schedule *expert = NULL;
    if (timed) {
        double best = 1e300, ms = 0.0;
        if (!(st = expert_choice(ctx, p, nthreads, &expert, refused)) &&
            !(st = time_schedule(p, expert, nthreads, &ctx->machine, &b, budget_ms > 0, &ms))) {
            note_timed(ctx, p, nthreads, "expert", 0, expert, ms);
            best = ms;
            pick = -1;
            /* what timing one candidate costs (building it included): the
             * last one's, so the next starts only where it should end within
             * the budget */
            double last = 0.0;
            for (int i = 0; i < n && !st; i++) {
                const double start = omp_get_wtime();
                if (i > 0 && budget_ms > 0 && ((start - t0) * 1e3 + last) > budget_ms) break;
                if ((st = time_schedule(p, cand[i], nthreads, &ctx->machine, &b, budget_ms > 0, &ms))) break;
                last = (omp_get_wtime() - start) * 1e3;
                note_timed(ctx, p, nthreads, "ranked", i + 1, cand[i], ms);
                if (ms < best) {
                    best = ms;
                    pick = i;
                }
            }
        }
        free_buffers(&b);
    }
    if (!st) {
        *out = pick < 0 ? expert : cand[pick];
        if (pick < 0) expert = NULL;
        else cand[pick] = NULL;
    }
    ps_schedule_destroy(expert);
    for (int i = 0; i < n; i++) ps_schedule_destroy(cand[i]);
    free(cand);
    return st;
}

ps_status ps_planner_choose(ps_context *ctx, const ps_problem *p, int nthreads, ps_ranker ranker, int top_k,
                            double budget_ms, ps_schedule **out, int *refused)
{
    *out = NULL;
    int dropped = 0;
    if (!refused) refused = &dropped;
    *refused = 0;
    /* what the static default runs where a budget leaves no time to measure */
    int static_expert = 0;
    if (ranker == PS_RANKER_DEFAULT) {
        static_expert = ps_planner_default_ranker(&ctx->machine, p, 1) == PS_RANKER_NONE;
        ranker = ps_planner_default_ranker(&ctx->machine, p, top_k);
    }
    if (ranker == PS_RANKER_NONE) return expert_choice(ctx, p, nthreads, out, refused);
    if (ranker != PS_RANKER_COST && ranker != PS_RANKER_VOLUME && ranker != PS_RANKER_DNN)
        return ps_error(PS_ERR_UNSUPPORTED, "planner: ranker %d is not available in this build", (int)ranker);
    return ranked_choice(ctx, p, nthreads, ranker, top_k, budget_ms, static_expert, out, refused);
}
