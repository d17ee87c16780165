/* polysci CLI — `polysci bench conv|gemm`: per layer of a layers file, in one
 * process, alternating timed trials of polysci's chosen plan, the default
 * schedule (the paper's "Microkernel" baseline) and optionally oneDNN (its
 * blocked `any` layouts, plain NHWC, or both; creation times cold unless
 * --onednn-cache); plan creation times (cold and cache hit); with
 * --exhaustive every ranked variant is timed too, to see where the cost
 * model's choice lands; with --candidates a given list of schedules per layer
 * joins the alternating trials (a low-noise re-timing of the front runners of
 * an exhaustive run); with --check-only nothing is timed, every output is
 * checked. The table, a markdown table (--markdown) and a CSV (--csv). */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef POLYSCI_CLI_HAVE_ONEDNN
#include "onednn_ref.h"
#include "onednn_ref_polysci.h"
#endif

#define CSV_HEADER                                                                                      \
    "name,N,threads,polysci_ms,onednn_ms,ratio,polysci_gflops,onednn_gflops,plan_ms,plan_warm_ms,"      \
    "default_ms,best_ms,worst_ms,chosen_rank,n_variants,polysci_min_ms,onednn_min_ms,onednn_create_ms,"  \
    "onednn_nhwc_ms,ratio_nhwc,onednn_nhwc_min_ms,onednn_nhwc_create_ms,onednn_impl,max_rel_err,ok,schedule,"   \
    "chosen_series_ms,final_chosen_ms,final_best_ms"
#define DIST_HEADER                                                                                    \
    "name,N,threads,rank_by_cost,schedule,ms,gflops,cost,ws_l1,ws_l2,ws_l3,ws_mem,kernel_m,kernel_n,kernel_k," \
    "kernel_batch,par_iters,par_eff,red_steps"

typedef struct bench_opts {
    ps_op_kind kind;
    int threads;            /* resolved: the context's */
    ps_ranker ranker;
    int top_k;              /* planner option: time the k best-ranked schedules */
    double budget_ms;       /* planner option: ... within this much planning time */
    int vs_onednn, exhaustive;
    int onednn_nhwc;        /* oneDNN with plain NHWC activations: 0 no, 1 instead of `any`, 2 as well */
    int check_only;         /* verify every output, time nothing */
    int describe;           /* print each plan's description (and oneDNN's implementation) */
    FILE *rows_out;         /* per-layer table rows: stdout, or stderr with --quiet */
    int reps, variant_reps, plan_reps;
    double min_trial_ms, warmup_ms, tol;
    uint64_t seed;
    int progress;           /* stderr is a terminal */
    FILE *dist;             /* --dist, or NULL */
    const struct candidate *cands; /* --candidates: schedules re-timed with the chosen plan */
    int n_cands;
} bench_opts;

/* One --candidates row: a schedule to time for the layer called `name`. */
typedef struct candidate {
    char name[64];
    char schedule[256];
} candidate;

/* One layer's results; NAN / 0 = not measured (empty CSV field). */
typedef struct bench_row {
    char name[64], shape[96], schedule[256];
    int64_t batch;          /* conv N; 0 for gemm */
    int threads;
    double flops, err;
    double ps_ms, dn_ms, plan_ms, plan_warm_ms, default_ms, best_ms, worst_ms;
    /* the chosen schedule's time in the series best_ms and worst_ms come
     * from (--exhaustive: the variants' loops; --candidates: the alternating
     * trials, = ps_ms), NaN where it is no ranked variant */
    double chosen_series_ms;
    /* --exhaustive: the chosen schedule and the fastest variants timed
     * again, in alternating trials among themselves (time_finals) */
    double final_chosen_ms, final_best_ms;
    double ps_min_ms, dn_min_ms, dn_create_ms;            /* fastest trial; oneDNN's primitive creation */
    double dn_nhwc_ms, dn_nhwc_min_ms, dn_nhwc_create_ms; /* --onednn-mode both: the plain-NHWC primitive */
    char dn_impl[64];       /* oneDNN's implementation name (conv) */
    int chosen_rank, n_variants;
    int ok;                 /* everything ran and matched */
} bench_row;

/* The operands of one layer, shared by every implementation. */
typedef struct operands {
    float *src, *wei;       /* conv: NHWC input, KCRS weights */
    float *a, *b;           /* gemm: row-major A (MxK), B (KxN) */
    float *out;             /* conv dst / gemm C written by polysci */
    size_t n_out;
    double *ref;            /* the reference output (oneDNN's or the CLI's) */
} operands;

static void free_operands(operands *o)
{
    free(o->src);
    free(o->wei);
    free(o->a);
    free(o->b);
    free(o->out);
    free(o->ref);
}

__attribute__((format(printf, 2, 3)))
static void progress(const bench_opts *bo, const char *fmt, ...)
{
    if (!bo->progress) return;
    char msg[80]; /* one terminal line: a wrapped line would not be cleared by \r */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", msg);
    fflush(stderr);
}

static void progress_done(const bench_opts *bo)
{
    if (bo->progress) fprintf(stderr, "\r\033[K");
}

static int layer_status(const char *layer, const char *what, ps_status st)
{
    const char *msg = ps_last_error_message();
    fprintf(stderr, "polysci bench: %s: %s failed: %s%s%s\n", layer, what, ps_status_str(st),
            msg && *msg ? ": " : "", msg ? msg : "");
    return CLI_FAIL;
}

static int layer_oom(const char *layer)
{
    fprintf(stderr, "polysci bench: %s: out of memory\n", layer);
    return CLI_FAIL;
}

/* ---------------------------------------------------------------- polysci runs */

typedef struct runner {
    ps_plan *plan;
    void *packed, *ws;
    ps_exec_args args;
    const char *layer;
} runner;

static void runner_release(runner *r)
{
    ps_plan_destroy(r->plan);
    free(r->packed);
    free(r->ws);
    memset(r, 0, sizeof *r);
}

/* Takes `plan`: workspace, packed weights (untimed), arguments. */
static int runner_setup(runner *r, ps_plan *plan, const operands *o, const char *layer)
{
    memset(r, 0, sizeof *r);
    r->plan = plan;
    r->layer = layer;
    ps_exec_args_init(&r->args);
    size_t ws = 0;
    ps_status st = ps_plan_workspace_size(plan, &ws);
    if (st != PS_SUCCESS) return layer_status(layer, "ps_plan_workspace_size", st);
    if (ws && !(r->ws = cli_alloc(ws))) return layer_oom(layer);
    r->args.workspace = r->ws;
    if (ps_plan_get_desc(plan)->kind == PS_OP_CONV_FWD) {
        size_t pb = 0;
        if ((st = ps_plan_packed_weights_size(plan, &pb)) != PS_SUCCESS)
            return layer_status(layer, "ps_plan_packed_weights_size", st);
        if (!(r->packed = cli_alloc(pb))) return layer_oom(layer);
        if ((st = ps_plan_pack_weights(plan, o->wei, r->packed)) != PS_SUCCESS)
            return layer_status(layer, "ps_plan_pack_weights", st);
        r->args.src = o->src;
        r->args.weights = r->packed;
        r->args.dst = o->out;
    } else {
        r->args.a = o->a;
        r->args.b = o->b;
        r->args.c = o->out;
    }
    return CLI_OK;
}

static int run_polysci(void *arg)
{
    runner *r = arg;
    ps_status st = ps_plan_execute(r->plan, &r->args);
    return st == PS_SUCCESS ? 0 : (layer_status(r->layer, "ps_plan_execute", st), -1);
}

/* Creates a plan running exactly `sched` and sets up a runner for it. */
static int runner_for_schedule(runner *r, ps_context *ctx, const ps_desc *desc, const ps_schedule *sched,
                               const operands *o, const char *layer)
{
    ps_plan_options po;
    ps_plan_options_init(&po);
    po.schedule = sched;
    po.flags = PS_PLAN_NO_CACHE;
    ps_plan *plan = NULL;
    ps_status st = ps_plan_create(ctx, desc, &po, &plan);
    if (st != PS_SUCCESS) {
        memset(r, 0, sizeof *r);
        return layer_status(layer, "ps_plan_create (given schedule)", st);
    }
    return runner_setup(r, plan, o, layer);
}

/* Runs once on a NaN-filled output and compares with the reference. */
static int verify(const bench_opts *bo, runner *r, const operands *o, const char *what, double *err)
{
    cli_fill_nan(o->out, o->n_out);
    if (run_polysci(r)) return CLI_FAIL;
    ref_cmp c;
    ref_compare(o->out, o->ref, o->n_out, &c);
    double e = c.n_nonfinite ? INFINITY : c.rel_err;
    if (err && (e > *err || isnan(*err))) *err = e;
    if (c.n_nonfinite == 0 && c.rel_err <= bo->tol) return CLI_OK;
    char sched[256];
    cli_plan_schedule_text(r->plan, sched, sizeof sched);
    fprintf(stderr,
            "polysci bench: FAIL %s: %s [%s] does not match the %s reference: max |err| %.3g = %.3g of "
            "max |ref| (tol %g), %zu non-finite outputs; worst element %zu: got %.9g, expected %.9g\n",
            r->layer, what, sched, bo->vs_onednn ? "oneDNN" : "CLI's double-precision", c.max_abs_err,
            c.rel_err, bo->tol, c.n_nonfinite, c.worst, (double)o->out[c.worst], o->ref[c.worst]);
    return CLI_FAIL;
}

/* ---------------------------------------------------------------- oneDNN runs */

#ifdef POLYSCI_CLI_HAVE_ONEDNN
typedef struct dn_gemm {
    int64_t M, N, K;
    const float *a, *b;
    float *c;
} dn_gemm;

static int run_onednn_gemm(void *arg)
{
    dn_gemm *g = arg;
    if (onednn_sgemm(0, 0, g->M, g->N, g->K, 1.0f, g->a, 0, g->b, 0, 0.0f, g->c, 0)) {
        fprintf(stderr, "polysci bench: dnnl_sgemm failed: %s\n", onednn_last_error());
        return -1;
    }
    return 0;
}

static int run_onednn_conv(void *arg)
{
    if (onednn_conv_execute(arg)) {
        fprintf(stderr, "polysci bench: oneDNN conv execute failed: %s\n", onednn_last_error());
        return -1;
    }
    return 0;
}
#endif

/* ---------------------------------------------------------------- timing */

static double minimum(const double *v, int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        if (v[i] < m) m = v[i];
    return n > 0 ? m : NAN;
}

typedef int (*bench_fn)(void *arg);

typedef struct timed {
    bench_fn run;
    void *arg;
    long loops;             /* executions per trial */
    long warm_loops;        /* untimed executions before a trial that follows another implementation */
    double *samples;        /* ms per execution, one per trial */
} timed;

/* Warm-up that also sets how many executions make a trial of >= min_ms and
 * how many make a warm-up of >= warmup_ms (none for 0). */
static int calibrate(timed *t, int threads, double min_ms, double warmup_ms)
{
    omp_set_num_threads(threads);
    if (t->run(t->arg)) return -1;
    long n = 0;
    double t0 = cli_now_ms(), el;
    do {
        if (t->run(t->arg)) return -1;
        n++;
        el = cli_now_ms() - t0;
    } while (n < 2 || el < min_ms);
    double per = el / (double)n;
    long loops = per > 0.0 ? (long)ceil(min_ms / per) : 1;
    t->loops = loops < 1 ? 1 : loops;
    long warm = warmup_ms <= 0.0 ? 0 : per > 0.0 ? (long)ceil(warmup_ms / per) : 1;
    t->warm_loops = warm < 0 ? 0 : warm;
    return 0;
}

/* `trials` rounds; each runs one trial of every implementation, rotating
 * which goes first. A trial that follows another implementation starts with
 * its untimed warm-up: when a layer's operands far exceed the last-level
 * cache, the first executions after a switch to other buffers run slower
 * (up to 1.4x for fastrcnn_05 at N = 2, 72 MB of operands), so without a
 * warm-up whichever implementation shares its operands with its predecessor
 * (the chosen plan and the default schedule share them) would gain.
 * `polysci bench conv --layers fastrcnn --only fastrcnn_05 --warmup-ms 0
 * --vs onednn` against the default --warmup-ms shows it. */
static int time_alternating(timed *ts, int n, int trials, int threads, double min_ms, double warmup_ms)
{
    for (int i = 0; i < n; i++)
        if (calibrate(&ts[i], threads, min_ms, warmup_ms)) return -1;
    for (int t = 0; t < trials; t++)
        for (int j = 0; j < n; j++) {
            timed *im = &ts[(t + j) % n];
            omp_set_num_threads(threads); /* oneDNN runs on omp_get_max_threads() */
            if (n > 1)
                for (long r = 0; r < im->warm_loops; r++)
                    if (im->run(im->arg)) return -1;
            double t0 = cli_now_ms();
            for (long r = 0; r < im->loops; r++)
                if (im->run(im->arg)) return -1;
            im->samples[t] = (cli_now_ms() - t0) / (double)im->loops;
        }
    return 0;
}

/* ---------------------------------------------------------------- one layer */

/* Cold (empty plan cache) and cache-hit creation times; *plan gets the last
 * (cache-hit) plan. */
static int time_planning(ps_context *ctx, const bench_opts *bo, const ps_desc *desc, const char *layer,
                         bench_row *row, ps_plan **plan)
{
    ps_plan_options po;
    ps_plan_options_init(&po);
    po.ranker = bo->ranker;
    po.top_k = bo->top_k;
    po.time_budget_ms = bo->budget_ms;
    double cold[64], warm[64];
    int n = bo->plan_reps < 64 ? bo->plan_reps : 64;
    *plan = NULL;
    for (int i = 0; i < n; i++) {
        ps_context_forget_plans(ctx);
        ps_plan *p = NULL;
        double t0 = cli_now_ms();
        ps_status st = ps_plan_create(ctx, desc, &po, &p);
        cold[i] = cli_now_ms() - t0;
        if (st != PS_SUCCESS) return layer_status(layer, "ps_plan_create", st);
        ps_plan_destroy(p);
    }
    for (int i = 0; i < n; i++) {
        ps_plan *p = NULL;
        double t0 = cli_now_ms();
        ps_status st = ps_plan_create(ctx, desc, &po, &p);
        warm[i] = cli_now_ms() - t0;
        if (st != PS_SUCCESS) {
            ps_plan_destroy(*plan);
            *plan = NULL;
            return layer_status(layer, "ps_plan_create (cached)", st);
        }
        ps_plan_destroy(*plan);
        *plan = p;
    }
    row->plan_ms = cli_median(cold, n);
    row->plan_warm_ms = cli_median(warm, n);
    return CLI_OK;
}

/* One --dist row. v = NULL: a schedule that is not among the ranked variants
 * (its rank and statistics stay empty). */
static void dist_row(const bench_opts *bo, const bench_row *row, const ps_variant_cost *v, const char *schedule,
                     double ms)
{
    if (!bo->dist) return;
    FILE *f = bo->dist;
    fprintf(f, "%s,%" PRId64 ",%d,", row->name, row->batch, row->threads);
    if (v) fprintf(f, "%d", v->rank);
    fprintf(f, ",\"%s\",%.4f,%.2f", v ? v->schedule : schedule, ms, row->flops / (ms * 1e6));
    if (v) /* The working sets and shape statistics ride along: they are the DNN ranker's inputs. */
        fprintf(f, ",%.6g,%.0f,%.0f,%.0f,%.0f,%d,%d,%d,%d,%lld,%.17g,%lld\n", v->cost, v->ws_bytes[PS_COST_L1],
                v->ws_bytes[PS_COST_L2], v->ws_bytes[PS_COST_L3], v->ws_bytes[PS_COST_MEM], v->kernel_m, v->kernel_n,
                v->kernel_k, v->kernel_batch, v->parallel_iterations, v->parallel_efficiency, v->reduction_steps);
    else
        fprintf(f, ",,,,,,,,,,,,\n");
    fflush(f);
}

/* The ranked variants in Eq. 1 order (what --exhaustive times, and where
 * --dist finds a schedule's statistics). */
static int ranked_variants(ps_context *ctx, const ps_desc *desc, const char *layer, ps_cost_report **rep)
{
    ps_plan_options po;
    ps_plan_options_init(&po);
    po.ranker = PS_RANKER_COST;
    ps_status st = ps_cost_query(ctx, desc, &po, rep);
    return st == PS_SUCCESS ? CLI_OK : layer_status(layer, "ps_cost_query", st);
}

/* The fastest of hundreds of noisy timings is biased low: the variant with
 * the luckiest samples wins. So the chosen schedule is judged again against
 * the PS_BENCH_FINALISTS fastest variants of the series, all timed anew in
 * alternating trials among themselves (the chosen one included when it is
 * one of them): final_chosen_ms and final_best_ms (the fastest median). */
#define PS_BENCH_FINALISTS 5

static int time_finals(ps_context *ctx, const bench_opts *bo, const ps_desc *desc, const operands *o,
                       ps_cost_report *rep, const double *ms, int n, int chosen_idx, bench_row *row)
{
    int pick[PS_BENCH_FINALISTS], np = 0;
    for (int k = 0; k < PS_BENCH_FINALISTS; k++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            int taken = i == chosen_idx || isnan(ms[i]);
            for (int j = 0; j < np && !taken; j++) taken = pick[j] == i;
            if (!taken && (best < 0 || ms[i] < ms[best])) best = i;
        }
        if (best < 0) break;
        pick[np++] = best;
    }
    runner r[PS_BENCH_FINALISTS + 1];
    timed t[PS_BENCH_FINALISTS + 1];
    double *samples = malloc((size_t)(np + 1) * (size_t)bo->variant_reps * sizeof *samples);
    int nr = 0, rc = samples ? CLI_OK : layer_oom(row->name);
    for (int k = -1; k < np && rc == CLI_OK; k++) {
        /* k = -1: the chosen schedule, which need not be a ranked variant */
        ps_variant_cost v;
        const char *text = row->schedule;
        if (k >= 0) {
            ps_status st = ps_cost_report_get(rep, pick[k], &v);
            if (st != PS_SUCCESS) {
                rc = layer_status(row->name, "ps_cost_report_get", st);
                break;
            }
            text = v.schedule;
        }
        ps_schedule *sched = NULL;
        ps_status st = ps_schedule_parse(desc->kind, text, &sched);
        if (st != PS_SUCCESS) {
            rc = layer_status(row->name, "ps_schedule_parse (finalist)", st);
            break;
        }
        rc = runner_for_schedule(&r[nr], ctx, desc, sched, o, row->name);
        ps_schedule_destroy(sched);
        if (rc != CLI_OK) break;
        t[nr] = (timed){run_polysci, &r[nr], 0, 0, samples + (size_t)nr * (size_t)bo->variant_reps};
        nr++;
    }
    if (rc == CLI_OK && time_alternating(t, nr, bo->variant_reps, bo->threads, bo->min_trial_ms, bo->warmup_ms))
        rc = CLI_FAIL;
    if (rc == CLI_OK) {
        row->final_chosen_ms = cli_median(t[0].samples, bo->variant_reps);
        row->final_best_ms = row->final_chosen_ms;
        for (int k = 1; k < nr; k++) row->final_best_ms = fmin(row->final_best_ms, cli_median(t[k].samples, bo->variant_reps));
    }
    for (int k = 0; k < nr; k++) runner_release(&r[k]);
    free(samples);
    return rc;
}

/* Times every ranked variant; fills best/worst/chosen_rank/n_variants and
 * writes the --dist rows; then the finals (time_finals). */
static int time_variants(ps_context *ctx, const bench_opts *bo, const ps_desc *desc, const operands *o,
                         bench_row *row, int layer_no, int n_layers)
{
    ps_cost_report *rep = NULL;
    ps_status st;
    if (ranked_variants(ctx, desc, row->name, &rep) != CLI_OK) return CLI_FAIL;
    int n = ps_cost_report_size(rep), rc = CLI_OK, n_timed = 0;
    double *ms = malloc((size_t)(n ? n : 1) * sizeof *ms);
    double *samples = malloc((size_t)bo->variant_reps * sizeof *samples);
    if (!ms || !samples) {
        rc = layer_oom(row->name);
        goto done;
    }
    double chosen_ms = NAN, best = INFINITY, worst = -INFINITY;
    int chosen_idx = -1;
    for (int i = 0; i < n; i++) {
        ms[i] = NAN;
        ps_variant_cost v;
        if ((st = ps_cost_report_get(rep, i, &v)) != PS_SUCCESS) {
            rc = layer_status(row->name, "ps_cost_report_get", st);
            break;
        }
        progress(bo, "[%d/%d] %s: variant %d/%d  %s", layer_no, n_layers, row->name, i + 1, n, v.schedule);
        ps_schedule *sched = NULL;
        if ((st = ps_schedule_parse(desc->kind, v.schedule, &sched)) != PS_SUCCESS) {
            rc = layer_status(row->name, "ps_schedule_parse (ranked variant)", st);
            continue;
        }
        runner r;
        int vrc = runner_for_schedule(&r, ctx, desc, sched, o, row->name);
        ps_schedule_destroy(sched);
        char what[48];
        snprintf(what, sizeof what, "variant %d", v.rank);
        if (vrc == CLI_OK) vrc = verify(bo, &r, o, what, &row->err);
        if (vrc == CLI_OK) {
            timed t = {run_polysci, &r, 0, 0, samples};
            if (time_alternating(&t, 1, bo->variant_reps, bo->threads, bo->min_trial_ms, bo->warmup_ms)) vrc = CLI_FAIL;
            else ms[i] = cli_median(samples, bo->variant_reps);
        }
        runner_release(&r);
        if (vrc != CLI_OK) {
            rc = CLI_FAIL;
            continue;
        }
        n_timed++;
        if (ms[i] < best) best = ms[i];
        if (ms[i] > worst) worst = ms[i];
        if (chosen_idx < 0 && !strcmp(v.schedule, row->schedule)) {
            chosen_idx = i;
            chosen_ms = ms[i];
        }
        dist_row(bo, row, &v, NULL, ms[i]);
    }
    progress_done(bo);
    if (n_timed > 0) {
        /* The chosen schedule's time from the same series when it is a ranked
         * variant (the cost ranker's choice is), else the alternating-trials time. */
        row->chosen_series_ms = chosen_ms;
        if (isnan(chosen_ms)) chosen_ms = row->ps_ms;
        int faster = 0;
        for (int i = 0; i < n; i++)
            if (i != chosen_idx && !isnan(ms[i]) && ms[i] < chosen_ms) faster++;
        row->best_ms = best;
        row->worst_ms = worst;
        row->chosen_rank = faster + 1;
        row->n_variants = n_timed;
        progress(bo, "[%d/%d] %s: the chosen schedule and the fastest variants again", layer_no, n_layers, row->name);
        if (time_finals(ctx, bo, desc, o, rep, ms, n, chosen_idx, row) != CLI_OK) rc = CLI_FAIL;
        progress_done(bo);
    }
done:
    free(ms);
    free(samples);
    ps_cost_report_destroy(rep);
    return rc;
}

/* ---------------------------------------------------------------- --candidates */

/* The runners of this layer's --candidates rows whose schedules differ from
 * the chosen plan's and the default's (and from each other's), each checked
 * against the reference. */
static int setup_candidates(ps_context *ctx, const bench_opts *bo, const ps_desc *desc, const operands *o,
                            bench_row *row, const runner *deflt, runner **out, int *n_out)
{
    int cap = 0;
    for (int i = 0; i < bo->n_cands; i++) cap += !strcmp(bo->cands[i].name, row->name);
    *out = NULL;
    *n_out = 0;
    if (!cap) return CLI_OK;
    runner *v = calloc((size_t)cap, sizeof *v);
    char (*text)[256] = malloc(((size_t)cap + 2) * sizeof *text);
    if (!v || !text) {
        free(v);
        free(text);
        return layer_oom(row->name);
    }
    /* Compared as the plans print them: the canonical text, whatever spelling the file used. */
    snprintf(text[0], sizeof text[0], "%s", row->schedule);
    cli_plan_schedule_text(deflt->plan, text[1], sizeof text[1]);
    int n = 0, n_text = 2, rc = CLI_OK;
    for (int i = 0; i < bo->n_cands && rc == CLI_OK; i++) {
        const candidate *c = &bo->cands[i];
        if (strcmp(c->name, row->name)) continue;
        ps_schedule *sched = NULL;
        ps_status st = ps_schedule_parse(desc->kind, c->schedule, &sched);
        if (st != PS_SUCCESS) {
            fprintf(stderr, "polysci bench: %s: --candidates schedule '%s' does not parse: %s%s%s\n", row->name,
                    c->schedule, ps_status_str(st), *ps_last_error_message() ? ": " : "", ps_last_error_message());
            rc = CLI_FAIL;
            break;
        }
        rc = runner_for_schedule(&v[n], ctx, desc, sched, o, row->name);
        ps_schedule_destroy(sched);
        if (rc != CLI_OK) break;
        cli_plan_schedule_text(v[n].plan, text[n_text], sizeof text[n_text]);
        int dup = 0;
        for (int j = 0; j < n_text && !dup; j++) dup = !strcmp(text[j], text[n_text]);
        if (dup) {
            runner_release(&v[n]);
            continue;
        }
        char what[300];
        snprintf(what, sizeof what, "candidate [%s]", text[n_text]);
        if ((rc = verify(bo, &v[n], o, what, &row->err)) != CLI_OK) {
            runner_release(&v[n]);
            break;
        }
        n++;
        n_text++;
    }
    free(text);
    if (rc != CLI_OK) {
        for (int i = 0; i < n; i++) runner_release(&v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return CLI_OK;
}

/* best/worst/chosen_rank/n_variants over the timed polysci schedules (ts[0]
 * the chosen plan, ts[1] the default, then the candidates) and their --dist
 * rows, with the ranked variant's statistics where the schedule is one. */
static int candidate_results(ps_context *ctx, const bench_opts *bo, const ps_desc *desc, bench_row *row,
                             timed *ts, int n)
{
    ps_cost_report *rep = NULL;
    if (ranked_variants(ctx, desc, row->name, &rep) != CLI_OK) return CLI_FAIL;
    int n_rep = ps_cost_report_size(rep), faster = 0;
    double best = INFINITY, worst = -INFINITY;
    int counted = 0;
    for (int i = 0; i < n; i++) {
        char text[256];
        cli_plan_schedule_text(((const runner *)ts[i].arg)->plan, text, sizeof text);
        if (i == 1 && !strcmp(text, row->schedule)) continue; /* the default is the chosen plan */
        double ms = cli_median(ts[i].samples, bo->reps);
        if (ms < best) best = ms;
        if (ms > worst) worst = ms;
        if (i > 0 && ms < row->ps_ms) faster++;
        counted++;
        ps_variant_cost v, *found = NULL;
        for (int j = 0; j < n_rep && !found; j++)
            if (ps_cost_report_get(rep, j, &v) == PS_SUCCESS && !strcmp(v.schedule, text)) found = &v;
        dist_row(bo, row, found, text, ms);
    }
    ps_cost_report_destroy(rep);
    row->best_ms = best;
    row->worst_ms = worst;
    row->chosen_rank = faster + 1;
    row->n_variants = counted;
    row->chosen_series_ms = row->ps_ms;
    return CLI_OK;
}

static int bench_layer(ps_context *ctx, const bench_opts *bo, const cli_layer *layer, int layer_no,
                       int n_layers, bench_row *row)
{
    const ps_desc *desc = &layer->desc;
    const char *name = layer->name;
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    cli_shape_short(desc, row->shape, sizeof row->shape);
    row->batch = desc->kind == PS_OP_CONV_FWD ? desc->u.conv.N : 0;
    row->threads = bo->threads;
    row->flops = ps_desc_flops(desc);
    row->err = NAN;
    row->ps_ms = row->dn_ms = row->plan_ms = row->plan_warm_ms = row->default_ms = NAN;
    row->best_ms = row->worst_ms = row->chosen_series_ms = row->final_chosen_ms = row->final_best_ms = NAN;
    row->ps_min_ms = row->dn_min_ms = row->dn_create_ms = NAN;
    row->dn_nhwc_ms = row->dn_nhwc_min_ms = row->dn_nhwc_create_ms = NAN;
    snprintf(row->schedule, sizeof row->schedule, "-");

    ps_status st = ps_desc_validate(desc);
    if (st != PS_SUCCESS) return layer_status(name, "ps_desc_validate", st);

    operands o;
    memset(&o, 0, sizeof o);
    runner chosen, deflt;
    memset(&chosen, 0, sizeof chosen);
    memset(&deflt, 0, sizeof deflt);
    ps_schedule *dsched = NULL;
    ps_plan *plan = NULL;
    double *samples = NULL;
    float *dn_out = NULL;
    int n_timed = 2, n_extra = 0;
    timed *ts = NULL;
    runner *extra = NULL;
#ifdef POLYSCI_CLI_HAVE_ONEDNN
    onednn_conv *dn = NULL, *dn_nhwc = NULL; /* dn_nhwc: --onednn-mode both's second primitive */
    float *dn_nhwc_out = NULL;
    dn_gemm dg;
    memset(&dg, 0, sizeof dg);
#endif
    int rc = CLI_FAIL;
    uint64_t seed = bo->seed + 1000u * (uint64_t)layer_no;

    /* Operands and the reference output. */
    progress(bo, "[%d/%d] %s: reference", layer_no, n_layers, name);
    if (desc->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *d = &desc->u.conv;
        int64_t OH, OW;
        ref_conv_out_size(d, &OH, &OW);
        size_t n_src, n_wei;
        int64_t fs[4] = {d->N, d->C, d->H, d->W}, fw[4] = {d->K, d->C, d->R, d->S}, fd[4] = {d->N, d->K, OH, OW};
        if (!cli_mul_size(&n_src, fs, 4) || !cli_mul_size(&n_wei, fw, 4) || !cli_mul_size(&o.n_out, fd, 4)) {
            fprintf(stderr, "polysci bench: %s: tensor sizes overflow\n", name);
            goto out;
        }
        o.src = cli_alloc(n_src * sizeof(float));
        o.wei = cli_alloc(n_wei * sizeof(float));
        o.out = cli_alloc(o.n_out * sizeof(float));
        o.ref = malloc(o.n_out * sizeof(double));
        if (!o.src || !o.wei || !o.out || !o.ref) {
            layer_oom(name);
            goto out;
        }
        cli_fill_random(o.src, n_src, seed + 1);
        cli_fill_random(o.wei, n_wei, seed + 2);
    } else {
        const ps_gemm_desc *g = &desc->u.gemm;
        size_t n_a, n_b;
        int64_t fa[2] = {g->M, g->K}, fb[2] = {g->K, g->N}, fc[2] = {g->M, g->N};
        if (!cli_mul_size(&n_a, fa, 2) || !cli_mul_size(&n_b, fb, 2) || !cli_mul_size(&o.n_out, fc, 2)) {
            fprintf(stderr, "polysci bench: %s: matrix sizes overflow\n", name);
            goto out;
        }
        o.a = cli_alloc(n_a * sizeof(float));
        o.b = cli_alloc(n_b * sizeof(float));
        o.out = cli_alloc(o.n_out * sizeof(float));
        o.ref = malloc(o.n_out * sizeof(double));
        if (!o.a || !o.b || !o.out || !o.ref) {
            layer_oom(name);
            goto out;
        }
        cli_fill_random(o.a, n_a, seed + 11);
        cli_fill_random(o.b, n_b, seed + 12);
    }
    if (bo->vs_onednn) {
#ifdef POLYSCI_CLI_HAVE_ONEDNN
        if (!(dn_out = cli_alloc(o.n_out * sizeof(float)))) {
            layer_oom(name);
            goto out;
        }
        omp_set_num_threads(bo->threads); /* before creation: oneDNN blocks for it */
        if (desc->kind == PS_OP_CONV_FWD) {
            onednn_conv_params p;
            onednn_params_from_ps(desc, &p);
            int64_t OH, OW, dOH = 0, dOW = 0;
            ref_conv_out_size(&desc->u.conv, &OH, &OW);
            if (onednn_conv_out_size(&p, &dOH, &dOW) || dOH != OH || dOW != OW) {
                fprintf(stderr, "polysci bench: %s: output size %" PRId64 "x%" PRId64 ", oneDNN's %" PRId64 "x%" PRId64
                                "\n", name, OH, OW, dOH, dOW);
                goto out;
            }
            if (onednn_conv_create(&p, bo->onednn_nhwc == 1 ? ONEDNN_MODE_NHWC : ONEDNN_MODE_ANY, &dn) ||
                onednn_conv_set_src(dn, o.src) || onednn_conv_set_weights(dn, o.wei) ||
                onednn_conv_execute(dn) || onednn_conv_get_dst(dn, dn_out)) {
                fprintf(stderr, "polysci bench: %s: oneDNN conv failed: %s\n", name, onednn_last_error());
                goto out;
            }
            row->dn_create_ms = onednn_conv_create_ms(dn);
            snprintf(row->dn_impl, sizeof row->dn_impl, "%s", onednn_conv_impl(dn));
            if (bo->onednn_nhwc == 2) {
                if (!(dn_nhwc_out = cli_alloc(o.n_out * sizeof(float)))) {
                    layer_oom(name);
                    goto out;
                }
                if (onednn_conv_create(&p, ONEDNN_MODE_NHWC, &dn_nhwc) || onednn_conv_set_src(dn_nhwc, o.src) ||
                    onednn_conv_set_weights(dn_nhwc, o.wei) || onednn_conv_execute(dn_nhwc) ||
                    onednn_conv_get_dst(dn_nhwc, dn_nhwc_out)) {
                    fprintf(stderr, "polysci bench: %s: oneDNN nhwc conv failed: %s\n", name, onednn_last_error());
                    goto out;
                }
                row->dn_nhwc_create_ms = onednn_conv_create_ms(dn_nhwc);
            }
            if (bo->describe) {
                printf("  oneDNN %s: %s  %s  create %.2f ms\n", bo->onednn_nhwc == 1 ? "nhwc" : "any ",
                       onednn_conv_impl(dn), onednn_conv_layouts(dn), row->dn_create_ms);
                if (dn_nhwc)
                    printf("  oneDNN nhwc: %s  %s  create %.2f ms\n", onednn_conv_impl(dn_nhwc),
                           onednn_conv_layouts(dn_nhwc), row->dn_nhwc_create_ms);
            }
        } else {
            const ps_gemm_desc *g = &desc->u.gemm;
            dg = (dn_gemm){g->M, g->N, g->K, o.a, o.b, dn_out};
            if (run_onednn_gemm(&dg)) goto out;
        }
        for (size_t i = 0; i < o.n_out; i++) o.ref[i] = (double)dn_out[i];
        if (dn_nhwc_out) { /* the two oneDNN primitives should agree; a difference is theirs, not polysci's */
            ref_cmp c;
            ref_compare(dn_nhwc_out, o.ref, o.n_out, &c);
            if (c.n_nonfinite || c.rel_err > bo->tol)
                fprintf(stderr, "polysci bench: %s: warning: oneDNN's nhwc and any primitives differ by %.3g of max "
                                "|out|\n", name, c.n_nonfinite ? INFINITY : c.rel_err);
        }
#endif
    } else if (desc->kind == PS_OP_CONV_FWD) {
        if (ref_conv_fwd(&desc->u.conv, o.src, o.wei, NULL, o.ref)) {
            layer_oom(name);
            goto out;
        }
    } else {
        float *c0 = calloc(o.n_out, sizeof(float)); /* beta = 0: not read */
        int r = c0 ? ref_gemm(&desc->u.gemm, o.a, o.b, c0, o.ref) : -1;
        free(c0);
        if (r) {
            layer_oom(name);
            goto out;
        }
    }

    /* polysci: planning times, the chosen plan, the default schedule. */
    progress(bo, "[%d/%d] %s: planning", layer_no, n_layers, name);
    if (time_planning(ctx, bo, desc, name, row, &plan)) goto out;
    cli_plan_schedule_text(plan, row->schedule, sizeof row->schedule);
    if (bo->describe) {
        char *text = cli_plan_describe(plan);
        if (text) {
            size_t len = strlen(text);
            printf("%s%s", text, len && text[len - 1] == '\n' ? "" : "\n");
            free(text);
        }
    }
    int setup = runner_setup(&chosen, plan, &o, name); /* takes the plan */
    plan = NULL;
    if (setup) goto out;
    if ((st = ps_schedule_default(desc, &dsched)) != PS_SUCCESS) {
        layer_status(name, "ps_schedule_default", st);
        goto out;
    }
    if (runner_for_schedule(&deflt, ctx, desc, dsched, &o, name)) goto out;
    if (verify(bo, &chosen, &o, "the chosen plan", &row->err) |
        verify(bo, &deflt, &o, "the default schedule", &row->err))
        goto out;
    if (bo->check_only) {
        rc = CLI_OK;
        row->ok = 1;
        goto out;
    }

    /* --candidates: the listed schedules join the alternating trials. */
    if (bo->n_cands && setup_candidates(ctx, bo, desc, &o, row, &deflt, &extra, &n_extra)) goto out;

    /* Alternating trials: the chosen plan, the default schedule, the
     * candidates, oneDNN. */
    progress(bo, "[%d/%d] %s: timing", layer_no, n_layers, name);
    n_timed = 2 + n_extra;
    int i_dn = -1, i_nhwc = -1; /* oneDNN's places among the timed implementations */
    if (!(samples = malloc(((size_t)n_timed + 2) * (size_t)bo->reps * sizeof *samples)) ||
        !(ts = calloc((size_t)n_timed + 2, sizeof *ts))) {
        layer_oom(name);
        goto out;
    }
    for (int i = 0; i < n_timed + 2; i++)
        ts[i] = (timed){run_polysci, NULL, 0, 0, samples + (size_t)i * (size_t)bo->reps};
    ts[0].arg = &chosen;
    ts[1].arg = &deflt;
    for (int i = 0; i < n_extra; i++) ts[2 + i].arg = &extra[i];
#ifdef POLYSCI_CLI_HAVE_ONEDNN
    if (bo->vs_onednn) {
        ts[n_timed].run = desc->kind == PS_OP_CONV_FWD ? run_onednn_conv : run_onednn_gemm;
        ts[n_timed].arg = desc->kind == PS_OP_CONV_FWD ? (void *)dn : (void *)&dg;
        i_dn = n_timed++;
    }
    if (dn_nhwc) {
        ts[n_timed].run = run_onednn_conv;
        ts[n_timed].arg = dn_nhwc;
        i_nhwc = n_timed++;
    }
#endif
    if (time_alternating(ts, n_timed, bo->reps, bo->threads, bo->min_trial_ms, bo->warmup_ms)) goto out;
    row->ps_ms = cli_median(ts[0].samples, bo->reps);
    row->ps_min_ms = minimum(ts[0].samples, bo->reps);
    row->default_ms = cli_median(ts[1].samples, bo->reps);
    if (i_dn >= 0) {
        row->dn_ms = cli_median(ts[i_dn].samples, bo->reps);
        row->dn_min_ms = minimum(ts[i_dn].samples, bo->reps);
    }
    if (i_nhwc >= 0) {
        row->dn_nhwc_ms = cli_median(ts[i_nhwc].samples, bo->reps);
        row->dn_nhwc_min_ms = minimum(ts[i_nhwc].samples, bo->reps);
    }
    progress_done(bo);

    rc = CLI_OK;
    if (bo->n_cands) {
        rc = candidate_results(ctx, bo, desc, row, ts, 2 + n_extra);
    } else if (bo->exhaustive) {
        /* The plans above are no longer needed: free their memory first. */
        runner_release(&chosen);
        runner_release(&deflt);
        rc = time_variants(ctx, bo, desc, &o, row, layer_no, n_layers);
    }
    row->ok = rc == CLI_OK;
out:
    progress_done(bo);
    runner_release(&chosen);
    runner_release(&deflt);
    for (int i = 0; i < n_extra; i++) runner_release(&extra[i]);
    free(extra);
    free(ts);
    ps_schedule_destroy(dsched);
    ps_plan_destroy(plan);
#ifdef POLYSCI_CLI_HAVE_ONEDNN
    onednn_conv_destroy(dn);
    onednn_conv_destroy(dn_nhwc);
    free(dn_nhwc_out);
#endif
    free(dn_out);
    free(samples);
    free_operands(&o);
    return rc;
}

/* ---------------------------------------------------------------- output */

static void csv_num(FILE *f, double v, const char *fmt)
{
    fputc(',', f);
    if (!isnan(v) && isfinite(v)) fprintf(f, fmt, v);
}

static double gflops(double flops, double ms) { return ms > 0.0 ? flops / (ms * 1e6) : NAN; }
static double ratio(double num, double den) { return num > 0.0 && den > 0.0 ? num / den : NAN; }

/* A CSV text field, quoted (RFC 4180: a quote doubled). */
static void csv_str(FILE *f, const char *v)
{
    fputs(",\"", f);
    for (; *v; v++) {
        if (*v == '"') fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

static void csv_row(FILE *f, const bench_row *r)
{
    fprintf(f, "%s,", r->name);
    if (r->batch > 0) fprintf(f, "%" PRId64, r->batch);
    fprintf(f, ",%d", r->threads);
    csv_num(f, r->ps_ms, "%.4f");
    csv_num(f, r->dn_ms, "%.4f");
    csv_num(f, ratio(r->dn_ms, r->ps_ms), "%.4f");
    csv_num(f, gflops(r->flops, r->ps_ms), "%.2f");
    csv_num(f, gflops(r->flops, r->dn_ms), "%.2f");
    csv_num(f, r->plan_ms, "%.3f");
    csv_num(f, r->plan_warm_ms, "%.4f");
    csv_num(f, r->default_ms, "%.4f");
    csv_num(f, r->best_ms, "%.4f");
    csv_num(f, r->worst_ms, "%.4f");
    fputc(',', f);
    if (r->chosen_rank > 0) fprintf(f, "%d", r->chosen_rank);
    fputc(',', f);
    if (r->n_variants > 0) fprintf(f, "%d", r->n_variants);
    csv_num(f, r->ps_min_ms, "%.4f");
    csv_num(f, r->dn_min_ms, "%.4f");
    csv_num(f, r->dn_create_ms, "%.3f");
    csv_num(f, r->dn_nhwc_ms, "%.4f");
    csv_num(f, ratio(r->dn_nhwc_ms, r->ps_ms), "%.4f");
    csv_num(f, r->dn_nhwc_min_ms, "%.4f");
    csv_num(f, r->dn_nhwc_create_ms, "%.3f");
    if (*r->dn_impl) csv_str(f, r->dn_impl);
    else fputc(',', f);
    csv_num(f, r->err, "%.3e");
    fprintf(f, ",%d", r->ok);
    csv_str(f, r->schedule);
    csv_num(f, r->chosen_series_ms, "%.4f");
    csv_num(f, r->final_chosen_ms, "%.4f");
    csv_num(f, r->final_best_ms, "%.4f");
    fputc('\n', f);
    fflush(f);
}

static void cell(char *buf, size_t len, double v, const char *fmt)
{
    if (isnan(v) || !isfinite(v)) snprintf(buf, len, "-");
    else snprintf(buf, len, fmt, v);
}

static void table_header(const bench_opts *bo, int nw, int sw)
{
    FILE *f = bo->rows_out;
    fprintf(f, "%-*s %-*s %10s", nw, "layer", sw, "shape", "polysci_ms");
    if (bo->vs_onednn) fprintf(f, " %10s %7s", "onednn_ms", "ratio");
    if (bo->onednn_nhwc == 2) fprintf(f, " %10s %7s", "dnnhwc_ms", "r_nhwc");
    fprintf(f, " %8s", "GFLOP/s");
    if (bo->vs_onednn) fprintf(f, " %8s", "dn_GF/s");
    fprintf(f, " %10s %7s %9s %9s", "default_ms", "vs_def", "plan_ms", "warm_ms");
    if (bo->exhaustive || bo->n_cands) fprintf(f, " %10s %10s %9s", "best_ms", "worst_ms", "rank");
    fprintf(f, " %9s  %s\n", "max_err", "schedule");
}

static void table_row(const bench_opts *bo, const bench_row *r, int nw, int sw)
{
    FILE *f = bo->rows_out;
    char c[15][32];
    cell(c[0], 32, r->ps_ms, "%.4f");
    cell(c[1], 32, r->dn_ms, "%.4f");
    cell(c[2], 32, ratio(r->dn_ms, r->ps_ms), "%.3f");
    cell(c[3], 32, gflops(r->flops, r->ps_ms), "%.1f");
    cell(c[4], 32, gflops(r->flops, r->dn_ms), "%.1f");
    cell(c[5], 32, r->default_ms, "%.4f");
    cell(c[6], 32, ratio(r->default_ms, r->ps_ms), "%.3f");
    cell(c[7], 32, r->plan_ms, "%.2f");
    cell(c[8], 32, r->plan_warm_ms, "%.3f");
    cell(c[9], 32, r->best_ms, "%.4f");
    cell(c[10], 32, r->worst_ms, "%.4f");
    if (r->n_variants > 0) snprintf(c[11], 32, "%d/%d", r->chosen_rank, r->n_variants);
    else snprintf(c[11], 32, "-");
    cell(c[12], 32, r->dn_nhwc_ms, "%.4f");
    cell(c[13], 32, ratio(r->dn_nhwc_ms, r->ps_ms), "%.3f");
    cell(c[14], 32, r->err, "%.2e");
    fprintf(f, "%-*s %-*s %10s", nw, r->name, sw, r->shape, c[0]);
    if (bo->vs_onednn) fprintf(f, " %10s %7s", c[1], c[2]);
    if (bo->onednn_nhwc == 2) fprintf(f, " %10s %7s", c[12], c[13]);
    fprintf(f, " %8s", c[3]);
    if (bo->vs_onednn) fprintf(f, " %8s", c[4]);
    fprintf(f, " %10s %7s %9s %9s", c[5], c[6], c[7], c[8]);
    if (bo->exhaustive || bo->n_cands) fprintf(f, " %10s %10s %9s", c[9], c[10], c[11]);
    fprintf(f, " %9s  %s%s\n", c[14], r->schedule, r->ok ? "" : "  FAIL");
    fflush(f);
}

/* Geometric mean of num/den over the rows where both were measured. */
static double geomean(const bench_row *rows, int n, size_t num_off, size_t den_off, int *count)
{
    double s = 0.0;
    int c = 0;
    for (int i = 0; i < n; i++) {
        const char *base = (const char *)&rows[i];
        double v = ratio(*(const double *)(base + num_off), *(const double *)(base + den_off));
        if (!isnan(v)) {
            s += log(v);
            c++;
        }
    }
    *count = c;
    return c ? exp(s / c) : NAN;
}

/* Geometric mean of the nominal GFLOP/s at the time at ms_off, over the rows that have one. */
static double geomean_gflops(const bench_row *rows, int n, size_t ms_off)
{
    double s = 0.0;
    int c = 0;
    for (int i = 0; i < n; i++) {
        double v = gflops(rows[i].flops, *(const double *)((const char *)&rows[i] + ms_off));
        if (!isnan(v)) {
            s += log(v);
            c++;
        }
    }
    return c ? exp(s / c) : NAN;
}

/* --markdown: the timed columns of the table as markdown, then a geomean row. */
static void markdown_table(const bench_opts *bo, const bench_row *rows, int n)
{
    const int dn = bo->vs_onednn, nhwc = bo->onednn_nhwc == 2, conv = bo->kind == PS_OP_CONV_FWD;
    printf("\n| layer | shape |%s threads | polysci ms | polysci GFLOP/s |", conv ? " N |" : "");
    if (dn) printf(" oneDNN ms | oneDNN GFLOP/s | ratio (oneDNN/polysci) |");
    if (nhwc) printf(" oneDNN NHWC ms | ratio NHWC |");
    printf(" default ms | default/polysci | plan ms |%s\n", dn && conv ? " oneDNN create ms |" : "");
    printf("|---|---|");
    for (int i = 0, cols = 8 + conv + 3 * dn + 2 * nhwc + (dn && conv); i < cols - 2; i++) printf("--:|");
    printf("\n");
    char c[10][32];
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        cell(c[0], 32, r->ps_ms, "%.4f");
        cell(c[1], 32, gflops(r->flops, r->ps_ms), "%.1f");
        cell(c[2], 32, r->dn_ms, "%.4f");
        cell(c[3], 32, gflops(r->flops, r->dn_ms), "%.1f");
        cell(c[4], 32, ratio(r->dn_ms, r->ps_ms), "%.3f");
        cell(c[5], 32, r->dn_nhwc_ms, "%.4f");
        cell(c[6], 32, ratio(r->dn_nhwc_ms, r->ps_ms), "%.3f");
        cell(c[7], 32, r->default_ms, "%.4f");
        cell(c[8], 32, ratio(r->default_ms, r->ps_ms), "%.3f");
        cell(c[9], 32, r->plan_ms, "%.2f");
        printf("| %s | %s |", r->name, r->shape);
        if (conv) printf(" %" PRId64 " |", r->batch);
        printf(" %d | %s | %s |", r->threads, c[0], c[1]);
        if (dn) printf(" %s | %s | %s |", c[2], c[3], c[4]);
        if (nhwc) printf(" %s | %s |", c[5], c[6]);
        printf(" %s | %s | %s |", c[7], c[8], c[9]);
        if (dn && conv) {
            cell(c[0], 32, r->dn_create_ms, "%.2f");
            printf(" %s |", c[0]);
        }
        printf("\n");
    }
    int k;
    cell(c[0], 32, geomean_gflops(rows, n, offsetof(bench_row, ps_ms)), "%.1f");
    cell(c[1], 32, geomean_gflops(rows, n, offsetof(bench_row, dn_ms)), "%.1f");
    cell(c[2], 32, geomean(rows, n, offsetof(bench_row, dn_ms), offsetof(bench_row, ps_ms), &k), "**%.3f**");
    cell(c[3], 32, geomean(rows, n, offsetof(bench_row, dn_nhwc_ms), offsetof(bench_row, ps_ms), &k), "**%.3f**");
    cell(c[4], 32, geomean(rows, n, offsetof(bench_row, default_ms), offsetof(bench_row, ps_ms), &k), "%.3f");
    printf("| **geomean** | |%s | | %s |", conv ? " |" : "", c[0]);
    if (dn) printf(" | %s | %s |", c[1], c[2]);
    if (nhwc) printf(" | %s |", c[3]);
    printf(" | %s | |%s\n", c[4], dn && conv ? " |" : "");
}

/* ---------------------------------------------------------------- command */

/* Splits one CSV line into at most max fields in place (RFC 4180 quoting:
 * "a, b" and "" inside quotes); returns the field count, -1 on a bad quote. */
static int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *r = line, *w = line;
    line[strcspn(line, "\r\n")] = '\0';
    for (;;) {
        if (n == max) return n;
        fields[n++] = w;
        if (*r == '"') {
            r++;
            for (;;) {
                if (!*r) return -1;
                if (*r == '"' && r[1] == '"') {
                    *w++ = '"';
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    break;
                } else {
                    *w++ = *r++;
                }
            }
            if (*r && *r != ',') return -1;
        } else {
            while (*r && *r != ',') *w++ = *r++;
        }
        int more = *r == ',';
        *w++ = '\0';
        if (!more) return n;
        r++;
    }
}

/* --candidates FILE: a CSV with (at least) the columns name and schedule,
 * e.g. a --dist file or tools/dnn/train.py --candidates. */
static int read_candidates(const char *cmd, const char *path, candidate **out, int *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "polysci %s: cannot open '%s': %s\n", cmd, path, strerror(errno));
        return CLI_FAIL;
    }
    char line[2048], *fld[64];
    int col_name = -1, col_sched = -1, line_no = 1, n = 0, cap = 0, rc = CLI_OK;
    candidate *v = NULL;
    int nf = fgets(line, sizeof line, f) ? csv_split(line, fld, 64) : -1;
    for (int i = 0; i < nf; i++) {
        if (!strcmp(fld[i], "name")) col_name = i;
        if (!strcmp(fld[i], "schedule")) col_sched = i;
    }
    if (col_name < 0 || col_sched < 0) {
        fprintf(stderr, "polysci %s: %s: the first line must be a CSV header with columns 'name' and 'schedule'\n",
                cmd, path);
        rc = CLI_USAGE;
    }
    while (rc == CLI_OK && fgets(line, sizeof line, f)) {
        line_no++;
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, "polysci %s: %s:%d: line longer than %zu characters\n", cmd, path, line_no,
                    sizeof line - 2);
            rc = CLI_USAGE;
            break;
        }
        if (line[strspn(line, " \t\r\n")] == '\0') continue;
        nf = csv_split(line, fld, 64);
        if (nf <= col_name || nf <= col_sched) {
            fprintf(stderr, "polysci %s: %s:%d: %s\n", cmd, path, line_no,
                    nf < 0 ? "unterminated quote" : "fewer fields than the header");
            rc = CLI_USAGE;
            break;
        }
        if (strlen(fld[col_name]) >= sizeof v->name || strlen(fld[col_sched]) >= sizeof v->schedule) {
            fprintf(stderr, "polysci %s: %s:%d: name or schedule too long\n", cmd, path, line_no);
            rc = CLI_USAGE;
            break;
        }
        if (n == cap) {
            candidate *t = realloc(v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *v);
            if (!t) {
                fprintf(stderr, "polysci %s: out of memory\n", cmd);
                rc = CLI_FAIL;
                break;
            }
            v = t;
        }
        snprintf(v[n].name, sizeof v[n].name, "%s", fld[col_name]);
        snprintf(v[n].schedule, sizeof v[n].schedule, "%s", fld[col_sched]);
        n++;
    }
    fclose(f);
    if (rc == CLI_OK && n == 0) {
        fprintf(stderr, "polysci %s: %s: no candidate rows\n", cmd, path);
        rc = CLI_USAGE;
    }
    if (rc != CLI_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return CLI_OK;
}

static FILE *open_out(const char *path, const char *header)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "polysci bench: cannot write '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    fprintf(f, "%s\n", header);
    fflush(f);
    return f;
}

static void close_out(FILE *f)
{
    if (f && f != stdout) fclose(f);
}

static int bench_op(ps_op_kind kind, int argc, char **argv)
{
    const char *cmd = kind == PS_OP_CONV_FWD ? "bench conv" : "bench gemm";
    const char *layers_arg = NULL, *vs = NULL, *csv = NULL, *dist = NULL;
    const char *only = NULL, *mode_arg = "any", *cands_arg = NULL;
    int64_t batch = 0, reps = 11, variant_reps = 3, plan_reps = 3, random_count = 0; /* batch 0: not given */
    const char *family_arg = "general";
    double min_ms = 20.0, warmup_ms = 20.0;
    cli_plan_args pa;
    cli_check_args ca;
    cli_plan_args_defaults(&pa);
    cli_check_args_defaults(&ca);
    int exhaustive = 0, check_only = 0, describe = 0, markdown = 0, quiet = 0, onednn_cache = 0, list = 0;
    cli_opt opts[] = {
        {"layers", CLI_OPT_STRING, &layers_arg, 0, 0,
         kind == PS_OP_CONV_FWD ? "FILE  layers file, or a set name of bench/layers (default resnet50)"
                                : "FILE  layers file, or a set name of bench/layers (default gemm)", 0},
        CLI_THREADS_OPT(pa, 0, "T  threads for every implementation (default: OpenMP's)"),
        {"vs", CLI_OPT_STRING, &vs, 0, 0, "LIB  also time and verify against LIB: onednn", 0},
        CLI_RANKER_OPT(pa),
        CLI_TOP_K_OPT(pa),
        {"exhaustive", CLI_OPT_FLAG, &exhaustive, 0, 0,
         "also time every ranked variant (best_ms, worst_ms, chosen_rank), then the chosen schedule and the fastest "
         "variants again in alternating trials (final_chosen_ms, final_best_ms)", 0},
        {"candidates", CLI_OPT_STRING, &cands_arg, 0, 0,
         "FILE  CSV with columns name,schedule: per layer, also time these schedules in the alternating "
         "trials (best_ms, worst_ms, chosen_rank among them)", 0},
        {"dist", CLI_OPT_STRING, &dist, 0, 0,
         "FILE  with --exhaustive or --candidates: one CSV row per (layer, timed schedule) for plots", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  alternating trials per implementation, median (default 11)", 0},
        {"variant-reps", CLI_OPT_INT, &variant_reps, 1, 100000,
         "R  trials per variant with --exhaustive, median (default 3)", 0},
        {"min-trial-ms", CLI_OPT_FLOAT, &min_ms, 0, 0, "MS  each trial loops until it lasts >= MS (default 20)", 0},
        {"warmup-ms", CLI_OPT_FLOAT, &warmup_ms, 0, 0,
         "MS  untimed executions lasting >= MS before each trial that follows another implementation (default 20; 0: none)", 0},
        {"plan-reps", CLI_OPT_INT, &plan_reps, 1, 64, "R  cold and cached plan creations timed, median (default 3)", 0},
        {"csv", CLI_OPT_STRING, &csv, 0, 0, "FILE  write the per-layer CSV there ('-': stdout)", 0},
        {"only", CLI_OPT_STRING, &only, 0, 0, "TEXT  only layers whose name contains TEXT", 0},
        CLI_CHECK_OPTS(ca),
        {"check-only", CLI_OPT_FLAG, &check_only, 0, 0, "check every output against the reference, time nothing", 0},
        {"describe", CLI_OPT_FLAG, &describe, 0, 0,
         "print each chosen plan's description (and oneDNN's implementation and layouts)", 0},
        {"markdown", CLI_OPT_FLAG, &markdown, 0, 0, "also print the table as markdown, with geomeans", 0},
        {"quiet", CLI_OPT_FLAG, &quiet, 0, 0, "per-layer rows to stderr (stdout: summary, markdown)", 0},
        {"onednn-cache", CLI_OPT_FLAG, &onednn_cache, 0, 0,
         "keep oneDNN's primitive cache (default: off, so its creation times are cold)", 0},
        {"onednn-mode", CLI_OPT_STRING, &mode_arg, 0, 0,
         "M  oneDNN conv layouts: any (its blocked choice, default), nhwc, or both (any, and nhwc timed too)", 0},
        {"N", CLI_OPT_INT, &batch, 1, INT32_MAX,
         "N  batch size of the conv layers (default 2; --random: drawn per layer, 1-4)", 0},
        {"random", CLI_OPT_INT, &random_count, 1, 100000,
         "COUNT  instead of --layers, COUNT layers drawn with --seed from the shapes frameworks use (channels "
         "3-2048, images 7-300, 1x1 to 7x7 and 1x7/7x1 filters, strides 1-2, same/valid padding, N 1-4; "
         "at most 4 GFLOP each)", 0},
        {"family", CLI_OPT_STRING, &family_arg, 0, 0,
         "F  --random's family: general (above) or few-channel (1-16 input channels, 16-96 outputs, any R x S up to "
         "7 x 7: the layers that start network bodies)", 0},
        {"list", CLI_OPT_FLAG, &list, 0, 0,
         "print the layers (a layers file, each line's N as a comment) and time nothing", 0},
    };
    /* gemm: no --onednn-mode, --N, --random, --family, --list */
    size_t n_opts = CLI_ARRAY_LEN(opts) - (kind == PS_OP_CONV_FWD ? 0 : 5);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        printf("usage: polysci %s --layers FILE [--threads T] [--vs onednn] [--exhaustive [--dist FILE]]\n"
               "       %*s [--ranker NAME] [--reps R] [--csv FILE] [--markdown] [options]\n"
               "Per layer, in one process: plans it (cold and cached creation times), checks the\n"
               "chosen plan and the default schedule (ps_schedule_default, the paper's\n"
               "'Microkernel' baseline) against %s,\n"
               "then times them (and oneDNN with --vs onednn; its weight reorders are untimed) in\n"
               "alternating trials, rotating the order; each trial loops until it lasts\n"
               ">= --min-trial-ms, after an untimed warm-up of >= --warmup-ms; medians are reported\n"
               "(--check-only: the checks alone). GFLOP/s are nominal:\n  %s.\n%s"
               "Prints a table and geomeans; --csv writes\n  %s\n"
               "(ratio = onednn_ms / polysci_ms; unmeasured fields are empty).\n\noptions:\n",
               cmd, (int)strlen(cmd), "",
               "oneDNN's output (--vs onednn)\nor a double-precision reference",
               kind == PS_OP_CONV_FWD ? "2*N*K*C*OH*OW*R*S (NHWC activations, KCRS weights)"
                                      : "2*M*N*K (row-major C = A*B, as dnnl_sgemm)",
               kind == PS_OP_CONV_FWD ? "" : "Layers file lines: 'name M N K'.\n", CSV_HEADER);
        cli_print_options(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    ps_ranker ranker;
    if (cli_plan_args_options(cmd, &pa, &ranker, NULL)) return CLI_USAGE;
    const double tol = ca.tol;
    static const char *const vs_names[] = {"onednn"};
    if (vs && cli_choice(cmd, "vs", vs, vs_names, 1) < 0) return CLI_USAGE;
    static const char *const mode_names[] = {"any", "nhwc", "both"}; /* bench_opts.onednn_nhwc order */
    int mode = cli_choice(cmd, "onednn-mode", mode_arg, mode_names, 3);
    if (mode < 0) return CLI_USAGE;
#ifndef POLYSCI_CLI_HAVE_ONEDNN
    if (vs) {
        fprintf(stderr, "polysci %s: --vs onednn: this polysci was built without oneDNN (libdnnl-dev)\n", cmd);
        return CLI_USAGE;
    }
#endif
    if (dist && !exhaustive && !cands_arg) {
        fprintf(stderr, "polysci %s: --dist needs --exhaustive or --candidates\n", cmd);
        return CLI_USAGE;
    }
    if (exhaustive && cands_arg) {
        fprintf(stderr, "polysci %s: --exhaustive and --candidates exclude each other\n", cmd);
        return CLI_USAGE;
    }
    if (check_only && (exhaustive || cands_arg)) {
        fprintf(stderr, "polysci %s: --check-only times nothing: it excludes --exhaustive and --candidates\n", cmd);
        return CLI_USAGE;
    }
    if ((mode || onednn_cache) && !vs) {
        fprintf(stderr, "polysci %s: --%s needs --vs onednn\n", cmd, mode ? "onednn-mode" : "onednn-cache");
        return CLI_USAGE;
    }
    if (min_ms < 0.0 || warmup_ms < 0.0 || tol < 0.0) {
        fprintf(stderr, "polysci %s: --min-trial-ms, --warmup-ms and --tol must be >= 0\n", cmd);
        return CLI_USAGE;
    }

    if (random_count && layers_arg) {
        fprintf(stderr, "polysci %s: --random and --layers exclude each other\n", cmd);
        return CLI_USAGE;
    }
    char path[4096];
    cli_layer *layers = NULL;
    int n_layers = 0;
    static const char *const families[2] = {"general", "few-channel"};
    int family = cli_choice(cmd, "--family", family_arg, families, 2);
    if (family < 0) return CLI_USAGE;
    if (random_count) {
        snprintf(path, sizeof path, "%lld random %s layers, seed %lld", (long long)random_count, families[family],
                 (long long)ca.seed);
        if (cli_random_layers(cmd, (int)random_count, (uint64_t)ca.seed, family, batch, PS_LAYOUT_NHWC, 0u, &layers,
                              &n_layers))
            return CLI_FAIL;
    } else {
        if (cli_resolve_layers(cmd, layers_arg, kind == PS_OP_CONV_FWD ? "resnet50.txt" : "gemm.txt", path,
                               sizeof path))
            return CLI_FAIL;
        if (cli_read_layers(cmd, path, batch ? batch : 2, PS_LAYOUT_NHWC, 0u, &layers, &n_layers)) return CLI_FAIL;
    }
    int n_sel = 0;
    for (int i = 0; i < n_layers; i++) {
        if (layers[i].desc.kind != kind) {
            fprintf(stderr, "polysci %s: %s: layer '%s' is a %s; use 'polysci bench %s'\n", cmd, path,
                    layers[i].name, layers[i].desc.kind == PS_OP_GEMM ? "GEMM" : "convolution",
                    layers[i].desc.kind == PS_OP_GEMM ? "gemm" : "conv");
            free(layers);
            return CLI_USAGE;
        }
        if (kind == PS_OP_GEMM) layers[i].desc.u.gemm.order = PS_ROW_MAJOR; /* as dnnl_sgemm */
        if (!only || strstr(layers[i].name, only)) layers[n_sel++] = layers[i];
    }
    if (n_sel == 0) {
        fprintf(stderr, "polysci %s: no layer of %s matches --only '%s'\n", cmd, path, only);
        free(layers);
        return CLI_USAGE;
    }
    if (list) {
        /* The layers-file format (cli_read_layers), so a drawn set can be kept and rerun with --layers. */
        printf("# %s\n# name H W C K R S stride pad_h pad_w\n", path);
        for (int i = 0; i < n_sel; i++) {
            const ps_desc *d = &layers[i].desc;
            if (d->kind == PS_OP_GEMM)
                printf("%s %lld %lld %lld\n", layers[i].name, (long long)d->u.gemm.M, (long long)d->u.gemm.N,
                       (long long)d->u.gemm.K);
            else {
                const ps_conv_desc *c = &d->u.conv;
                printf("%s %lld %lld %lld %lld %lld %lld %lld %lld %lld  # N %lld\n", layers[i].name, (long long)c->H,
                       (long long)c->W, (long long)c->C, (long long)c->K, (long long)c->R, (long long)c->S,
                       (long long)c->stride_h, (long long)c->pad_top, (long long)c->pad_left, (long long)c->N);
            }
        }
        free(layers);
        return CLI_OK;
    }

    candidate *cands = NULL;
    int n_cands = 0;
    if (cands_arg && (rc = read_candidates(cmd, cands_arg, &cands, &n_cands)) != CLI_OK) {
        free(layers);
        return rc;
    }

    ps_context *ctx = NULL;
    if (cli_context_create((int)pa.threads, &ctx) != CLI_OK) {
        free(cands);
        free(layers);
        return CLI_FAIL;
    }
#ifdef POLYSCI_CLI_HAVE_ONEDNN
    if (vs && !onednn_cache) onednn_disable_primitive_cache();
#endif
    bench_opts bo = {.kind = kind, .threads = ps_context_num_threads(ctx), .ranker = ranker,
                     .top_k = (int)pa.top_k, .budget_ms = pa.budget_ms, .vs_onednn = vs != NULL, .onednn_nhwc = mode, .check_only = check_only,
                     .describe = describe, .rows_out = quiet ? stderr : stdout, .exhaustive = exhaustive, .reps = (int)reps,
                     .variant_reps = (int)variant_reps, .plan_reps = (int)plan_reps, .min_trial_ms = min_ms, .warmup_ms = warmup_ms,
                     .tol = tol, .seed = (uint64_t)ca.seed, .progress = cli_progress_enabled(), .dist = NULL,
                     .cands = cands, .n_cands = n_cands};
    FILE *csv_f = NULL;
    bench_row *rows = calloc((size_t)n_sel, sizeof *rows);
    rc = CLI_OK;
    if (!rows) {
        fprintf(stderr, "polysci %s: out of memory\n", cmd);
        rc = CLI_FAIL;
    } else if ((csv && !(csv_f = open_out(csv, CSV_HEADER))) || (dist && !(bo.dist = open_out(dist, DIST_HEADER)))) {
        rc = CLI_FAIL;
    }
    if (rc) {
        close_out(csv_f);
        free(rows);
        free(cands);
        free(layers);
        ps_context_destroy(ctx);
        return rc;
    }

    printf("polysci %s %s: %s\n", ps_version(), cmd, path);
    if (check_only)
        printf("%d layer%s%s, %d thread%s, ranker %s; outputs checked (tolerance %.1e), nothing timed%s\n", n_sel,
               n_sel == 1 ? "" : "s", kind == PS_OP_CONV_FWD ? ", NHWC/KCRS" : ", row-major", bo.threads,
               bo.threads == 1 ? "" : "s", cli_ranker_names[ranker], tol, vs ? "; vs oneDNN" : "");
    else
        printf("%d layer%s%s, %d thread%s, ranker %s; %d alternating trials x >= %g ms, medians%s%s\n", n_sel,
               n_sel == 1 ? "" : "s", kind == PS_OP_CONV_FWD ? ", NHWC/KCRS" : ", row-major", bo.threads,
               bo.threads == 1 ? "" : "s", cli_ranker_names[ranker], bo.reps, min_ms, vs ? "; vs oneDNN" : "",
               exhaustive ? "; every ranked variant timed too" : cands ? "; --candidates in the alternating trials" : "");
    if (kind == PS_OP_CONV_FWD) printf("conv batch N=%" PRId64 "\n", batch);
#ifdef POLYSCI_CLI_HAVE_ONEDNN
    static const char *const mode_text[] = {", `any` (blocked) layouts", ", plain nhwc src/dst",
                                            ", `any` (blocked) layouts; dnnhwc = plain nhwc src/dst"};
    if (vs) printf("oneDNN %s%s; primitive cache %s\n", onednn_version_string(),
                   kind == PS_OP_CONV_FWD ? mode_text[mode] : ", dnnl_sgemm", onednn_cache ? "on" : "off");
#endif
    printf("ratio = onednn_ms / polysci_ms, vs_def = default_ms / polysci_ms (> 1: polysci's choice faster)%s\n\n",
           exhaustive ? "; rank = place of the chosen schedule among all variants by time"
           : cands    ? "; rank = place of the chosen schedule among the timed schedules"
                      : "");
    int nw = 12, sw = 12;
    for (int i = 0; i < n_sel; i++) {
        char shp[96];
        cli_shape_short(&layers[i].desc, shp, sizeof shp);
        if ((int)strlen(layers[i].name) > nw) nw = (int)strlen(layers[i].name);
        if ((int)strlen(shp) > sw) sw = (int)strlen(shp);
    }
    table_header(&bo, nw, sw);
    fflush(stdout);

    int n_fail = 0;
    for (int i = 0; i < n_sel; i++) {
        int lrc = bench_layer(ctx, &bo, &layers[i], i + 1, n_sel, &rows[i]);
        if (lrc != CLI_OK) n_fail++;
        table_row(&bo, &rows[i], nw, sw);
        if (csv_f && !isnan(check_only ? rows[i].err : rows[i].ps_ms)) csv_row(csv_f, &rows[i]);
    }

    int c1, c2, c3;
    double g_dn = geomean(rows, n_sel, offsetof(bench_row, dn_ms), offsetof(bench_row, ps_ms), &c1);
    double g_def = geomean(rows, n_sel, offsetof(bench_row, default_ms), offsetof(bench_row, ps_ms), &c2);
    double g_best = geomean(rows, n_sel, offsetof(bench_row, best_ms), offsetof(bench_row, ps_ms), &c3);
    printf("\n");
    if (check_only) {
        int ok = 0;
        for (int i = 0; i < n_sel; i++) ok += rows[i].ok;
        printf("%d of %d layers checked OK\n", ok, n_sel);
    }
    if (c1) printf("geomean ratio onednn_ms/polysci_ms over %d layer%s: %.3f\n", c1, c1 == 1 ? "" : "s", g_dn);
    int c4;
    double g_nhwc = geomean(rows, n_sel, offsetof(bench_row, dn_nhwc_ms), offsetof(bench_row, ps_ms), &c4);
    if (c4) printf("geomean onednn_nhwc_ms/polysci_ms (oneDNN with plain nhwc) over %d layer%s: %.3f\n", c4,
                   c4 == 1 ? "" : "s", g_nhwc);
    double gf_ps = geomean_gflops(rows, n_sel, offsetof(bench_row, ps_ms));
    double gf_dn = geomean_gflops(rows, n_sel, offsetof(bench_row, dn_ms));
    if (!isnan(gf_ps)) {
        printf("geomean GFLOP/s: polysci %.1f", gf_ps);
        if (!isnan(gf_dn)) printf(", oneDNN %.1f", gf_dn);
        printf("\n");
    }
    if (c2) printf("geomean default_ms/polysci_ms (polysci's choice vs the default schedule) over %d layer%s: %.3f\n",
                   c2, c2 == 1 ? "" : "s", g_def);
    if (c3) {
        int first = 0;
        for (int i = 0; i < n_sel; i++) first += rows[i].n_variants > 0 && rows[i].chosen_rank == 1;
        printf("geomean best_ms/polysci_ms (fraction of the fastest variant's speed) over %d layer%s: %.3f; "
               "the chosen schedule was the fastest in %d\n", c3, c3 == 1 ? "" : "s", g_best, first);
    }
    int c5 = 0;
    double g_final = geomean(rows, n_sel, offsetof(bench_row, final_best_ms), offsetof(bench_row, final_chosen_ms), &c5);
    if (c5)
        printf("geomean final_best_ms/final_chosen_ms (the choice against the %d fastest variants, timed again beside "
               "it) over %d layer%s: %.3f\n", PS_BENCH_FINALISTS, c5, c5 == 1 ? "" : "s", g_final);
    if (markdown && !check_only) markdown_table(&bo, rows, n_sel);
    if (n_fail) fprintf(stderr, "polysci %s: %d of %d layers FAILED (see above)\n", cmd, n_fail, n_sel);
    close_out(csv_f);
    close_out(bo.dist);
    free(rows);
    free(cands);
    free(layers);
    ps_context_destroy(ctx);
    return n_fail ? CLI_FAIL : CLI_OK;
}

int cmd_bench(int argc, char **argv)
{
    static const char usage[] =
        "usage: polysci bench conv --layers FILE [options]   time conv layers\n"
        "       polysci bench gemm --layers FILE [options]   time GEMMs\n"
        "       polysci bench pipeline [options]             time stage-graph pipelines against Halide\n"
        "       polysci bench stencil [options]              time iterated stencils against Halide\n"
        "       polysci bench chain [options]                time fused deep-learning blocks against oneDNN\n"
        "See 'polysci bench conv --help'.\n";
    if (argc > 1 && !strcmp(argv[1], "pipeline")) return cli_bench_pipeline(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "stencil")) return cli_bench_stencil(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "chain")) return cli_bench_chain(argc - 1, argv + 1);
    return cli_dispatch_op("bench", usage, argc, argv, bench_op);
}
