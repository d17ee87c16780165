/* Plans: create (validate the descriptor once into its canonical problem,
 * choose a schedule, build the executor), describe, pack weights, execute. */
#include "plan/plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "plan/cache.h"
#include "plan/context_impl.h"
#include "ranking/planner.h"

void ps_plan_options_init(ps_plan_options *opts)
{
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

void ps_exec_args_init(ps_exec_args *args)
{
    if (!args) return;
    memset(args, 0, sizeof *args);
    args->struct_size = sizeof *args;
}

/* FNV-1a over the fields that define the packed-weight layout. */
static uint64_t weight_signature(const ps_exec *e)
{
    const int64_t f[] = {e->conv.K, e->conv.C, e->conv.R, e->conv.S, e->ks.m};
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)f;
    for (size_t i = 0; i < sizeof f; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

ps_status ps_plan_options_check(const char *who, const ps_plan_options **opts, ps_plan_options *defaults)
{
    if (!*opts) {
        ps_plan_options_init(defaults);
        *opts = defaults;
    }
    const ps_plan_options *o = *opts;
    if (o->struct_size != sizeof *o)
        return ps_error(PS_ERR_INVALID_ARG, "%s: opts.struct_size is %zu, expected %zu (use ps_plan_options_init)", who,
                        o->struct_size, sizeof *o);
    if (o->num_threads < 0 || o->num_threads > 4096)
        return ps_error(PS_ERR_INVALID_ARG, "%s: num_threads %d out of range (0..4096)", who, o->num_threads);
    if ((int)o->ranker < PS_RANKER_DEFAULT || o->ranker > PS_RANKER_VOLUME)
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown ranker %d", who, (int)o->ranker);
    if (o->top_k < 0 || o->top_k > 100000)
        return ps_error(PS_ERR_INVALID_ARG, "%s: top_k %d out of range (0..100000)", who, o->top_k);
    if (!(o->time_budget_ms >= 0 && o->time_budget_ms <= 1e7))
        return ps_error(PS_ERR_INVALID_ARG, "%s: time_budget_ms %g out of range (0..1e7 ms; 0: no limit)", who,
                        o->time_budget_ms);
    if (o->flags & ~PS_PLAN_NO_CACHE)
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown flags 0x%x", who, o->flags & ~PS_PLAN_NO_CACHE);
    return PS_SUCCESS;
}

/* PS_VERBOSE lines, like ONEDNN_VERBOSE: one per creation and execution;
 * an execution's line ends with its phases (prof), those the plan has. */
static void ps_plan_verbose(const ps_plan *p, const char *what, double ms, const ps_exec_profile *prof)
{
    char key[1024], sched[512], phases[160] = "";
    ps_plan_key(&p->problem.desc, p->exec.nthreads, PS_RANKER_DEFAULT, 0, 0.0, key, sizeof key);
    ps_schedule_format(p->schedule, p->problem.desc.kind, sched, sizeof sched, NULL);
    if (prof) {
        const ps_exec *e = &p->exec;
        if (e->kind == PS_OP_GEMM)
            snprintf(phases, sizeof phases, ",pack=%.4f kernels=%.4f", prof->prepare_ms, prof->kernels_ms);
        else if (e->nchw)
            snprintf(phases, sizeof phases, ",to_nhwc=%.4f kernels=%.4f to_nchw=%.4f", prof->prepare_ms,
                     prof->kernels_ms, prof->finish_ms);
        else
            snprintf(phases, sizeof phases, ",kernels=%.4f", prof->kernels_ms);
    }
    fprintf(stderr, "polysci_verbose,%s,%s,%s,%s,%.4f%s\n", what, key, sched,
            strcmp(what, "create") ? "-" : (p->from_cache ? "cache_hit" : "planned"), ms, phases);
}

ps_status ps_plan_create(ps_context *ctx, const ps_desc *desc, const ps_plan_options *opts, ps_plan **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_create: plan is NULL");
    *out = NULL;
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_create: ctx is NULL");
    double t0 = ps_now_ms();
    /* The one validation: everything below takes the canonical problem. */
    ps_problem prob;
    ps_status st = ps_problem_of(desc, &prob);
    if (st) return st;
    ps_plan_options def;
    if ((st = ps_plan_options_check("ps_plan_create", &opts, &def))) return st;
    const int nthreads = opts->num_threads ? opts->num_threads : ctx->num_threads;
    const int top_k = opts->top_k > 1 ? opts->top_k : 1;
    const double budget_ms = top_k > 1 ? opts->time_budget_ms : 0.0;
    const ps_ranker ranker = opts->ranker == PS_RANKER_DEFAULT ? ps_planner_default_ranker(&ctx->machine, &prob, top_k)
                                                               : opts->ranker;

    char key[1024];
    int remember = 0; /* a newly planned schedule to put in the plan cache */
    ps_plan *p = calloc(1, sizeof *p);
    if (!p) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_plan_create: out of memory");
    p->ctx = ctx;
    p->problem = prob;
    const ps_problem *pr = &p->problem;
    if (opts->schedule) {
        if ((st = ps_schedule_check_problem(opts->schedule, pr))) goto fail;
        if (!(p->schedule = ps_schedule_copy(opts->schedule))) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_plan_create: out of memory");
            goto fail;
        }
    } else {
        ps_plan_key(&pr->desc, nthreads, ranker, top_k, budget_ms, key, sizeof key);
        /* A cached schedule was checked for this key's problem when planned
         * (or imported, lib/plan/wisdom.c). */
        if (!(opts->flags & PS_PLAN_NO_CACHE)) p->schedule = ps_cache_lookup(ctx, key);
        p->from_cache = p->schedule != NULL;
        if (!p->schedule) {
            /* Every candidate is checked before the planner returns it. */
            if ((st = ps_planner_choose(ctx, pr, nthreads, opts->ranker, top_k, budget_ms, &p->schedule, NULL))) goto fail;
            remember = !(opts->flags & PS_PLAN_NO_CACHE);
        }
    }
    if ((st = ps_exec_build(&p->exec, pr, p->schedule, nthreads, &ctx->machine))) goto fail;
    p->workspace_bytes = ps_exec_workspace_bytes(&p->exec);
    if (pr->desc.kind == PS_OP_CONV_FWD) {
        p->weight_signature = weight_signature(&p->exec);
        p->packed_bytes = PS_PACKED_HEADER + (size_t)ps_exec_packed_weight_elems(&p->exec) * sizeof(float);
    }
    if (ctx->memory_limit && (p->workspace_bytes > ctx->memory_limit || p->packed_bytes > ctx->memory_limit)) {
        st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_plan_create: plan needs %zu bytes of workspace and %zu of packed weights; "
                      "the context's memory limit is %zu", p->workspace_bytes, p->packed_bytes, ctx->memory_limit);
        goto fail;
    }
    /* Only a plan that was built completely teaches the cache anything. */
    if (remember && (st = ps_cache_insert(ctx, key, p->schedule))) goto fail;
    p->create_ms = ps_now_ms() - t0;
    if (ctx->verbose) ps_plan_verbose(p, "create", p->create_ms, NULL);
    *out = p;
    return PS_SUCCESS;
fail:
    ps_plan_destroy(p);
    return st;
}

void ps_plan_destroy(ps_plan *plan)
{
    if (!plan) return;
    ps_exec_release(&plan->exec);
    ps_schedule_destroy(plan->schedule);
    free(plan);
}

const ps_desc *ps_plan_get_desc(const ps_plan *plan) { return plan ? &plan->problem.desc : NULL; }
const ps_schedule *ps_plan_get_schedule(const ps_plan *plan) { return plan ? plan->schedule : NULL; }

static const char *stream_note(const ps_exec *e)
{
    if (e->kind == PS_OP_CONV_FWD && e->small_1x1)
        return "; blocks of whole vectors run the row kernels' 1x1 GEMM with the post-ops in registers";
    return e->stream_out ? "; output written once, with streaming stores when 64-byte aligned" : "";
}

ps_status ps_plan_describe(const ps_plan *plan, char *buf, size_t len, size_t *needed)
{
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_describe: plan is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_describe: buf is NULL");
    char sched[512], text[2048];
    ps_schedule_format(plan->schedule, plan->problem.desc.kind, sched, sizeof sched, NULL);
    const ps_exec *e = &plan->exec;
    int n;
    if (plan->problem.desc.kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &plan->problem.desc.u.conv;
        int64_t OH, OW;
        ps_conv_output_dims(c, &OH, &OW);
        n = snprintf(text, sizeof text,
                     "conv_fwd f32 %s N=%lld C=%lld K=%lld H=%lld W=%lld R=%lld S=%lld stride=%lldx%lld "
                     "pad=%lld,%lld,%lld,%lld dilation=%lldx%lld -> OH=%lld OW=%lld%s%s%s\n"
                     "schedule: %s\n"
                     "tile space: n=%lld k=%lld oh=%lld ow=%lld c=%lld%s; %lld edge segments; threads=%d\n"
                     "microkernel: LIBXSMM batch-reduce GEMM %dx%dx%d, batch %lld (C blocks x taps), remainders m=%lld k=%lld%s\n"
                     "packed weights: %zu bytes; workspace: %zu bytes; planned in %.3f ms",
                     c->layout == PS_LAYOUT_NHWC ? "nhwc" : "nchw", (long long)c->N, (long long)c->C, (long long)c->K,
                     (long long)c->H, (long long)c->W, (long long)c->R, (long long)c->S, (long long)c->stride_h,
                     (long long)c->stride_w, (long long)c->pad_top, (long long)c->pad_bottom, (long long)c->pad_left,
                     (long long)c->pad_right, (long long)c->dilation_h, (long long)c->dilation_w, (long long)OH,
                     (long long)OW, (c->post_ops & PS_POST_BIAS) ? " +bias" : "", (c->post_ops & PS_POST_SUM) ? ((c->post_ops & PS_POST_RELU) ? " +sum+relu" : (c->post_ops & PS_POST_RELU6) ? " +sum+relu6" : " +sum")
                     : (c->post_ops & PS_POST_RELU) ? " +relu" : (c->post_ops & PS_POST_RELU6) ? " +relu6" : "",
                     e->conv.ldo != c->K ? " (into a channel slice: dst_pixel_stride)" : "", sched, (long long)e->ext[0], (long long)e->ext[1], (long long)e->ext[2], (long long)e->ext[3],
                     (long long)e->ext[4],
                     e->conv.sub_h > 1 || e->conv.sub_w > 1 ? " (strided 1x1: a subsampled input copy, its rows flattened into one)"
                     : e->conv.OH != OH                     ? " (1x1: image rows flattened into one)"
                                                            : "",
                     (long long)e->n_segs, e->nthreads, e->ks.m, e->ks.n, e->ks.k,
                     (long long)e->batch_cap, (long long)e->m_tail, (long long)e->k_tail, stream_note(e), plan->packed_bytes,
                     plan->workspace_bytes, plan->create_ms);
    } else {
        const ps_gemm_desc *g = &plan->problem.desc.u.gemm;
        n = snprintf(text, sizeof text,
                     "gemm f32 %s M=%lld N=%lld K=%lld trans_a=%d trans_b=%d lda=%lld ldb=%lld ldc=%lld alpha=%g beta=%g\n"
                     "schedule: %s\n"
                     "tile space: m=%lld n=%lld k=%lld; threads=%d; operands packed: A=%s B=%s\n"
                     "microkernel: LIBXSMM batch-reduce GEMM %dx%dx%d, batch %lld, remainders m=%lld n=%lld k=%lld%s\n"
                     "workspace: %zu bytes; planned in %.3f ms",
                     g->order == PS_COL_MAJOR ? "col-major" : "row-major", (long long)g->M, (long long)g->N,
                     (long long)g->K, g->trans_a, g->trans_b, (long long)g->lda, (long long)g->ldb, (long long)g->ldc,
                     (double)g->alpha, (double)g->beta, sched, (long long)e->ext[1], (long long)e->ext[3],
                     (long long)e->ext[4], e->nthreads, e->panels ? "panels" : e->pack_a ? "yes" : "no",
                     e->panels ? "panels" : e->pack_b ? "yes" : "no", e->ks.m,
                     e->ks.n, e->ks.k, (long long)e->batch_cap, (long long)e->m_tail, (long long)e->n_tail,
                     (long long)e->k_tail, stream_note(e), plan->workspace_bytes, plan->create_ms);
    }
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof text) n = (int)sizeof text - 1;
    if (needed) *needed = (size_t)n;
    if (len) {
        size_t c = (size_t)n < len ? (size_t)n : len - 1;
        memcpy(buf, text, c);
        buf[c] = 0;
    }
    if ((size_t)n >= len) return ps_error(PS_ERR_BUFFER_TOO_SMALL, "ps_plan_describe: needs %d bytes plus NUL", n);
    return PS_SUCCESS;
}

ps_status ps_plan_packed_weights_size(const ps_plan *plan, size_t *bytes)
{
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_packed_weights_size: plan is NULL");
    if (!bytes) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_packed_weights_size: bytes is NULL");
    if (plan->problem.desc.kind != PS_OP_CONV_FWD)
        return ps_error(PS_ERR_INVALID_ARG, "ps_plan_packed_weights_size: only conv plans have packed weights");
    *bytes = plan->packed_bytes;
    return PS_SUCCESS;
}

typedef struct packed_header {
    uint64_t magic, signature, bytes;
} packed_header;

ps_status ps_plan_pack_weights(const ps_plan *plan, const float *weights, void *packed)
{
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_pack_weights: plan is NULL");
    if (!weights) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_pack_weights: weights is NULL");
    if (!packed) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_pack_weights: packed is NULL");
    if (plan->problem.desc.kind != PS_OP_CONV_FWD)
        return ps_error(PS_ERR_INVALID_ARG, "ps_plan_pack_weights: only conv plans have packed weights");
    ps_exec_pack_weights(&plan->exec, plan->problem.desc.u.conv.weight_layout, weights,
                         (float *)((char *)packed + PS_PACKED_HEADER));
    packed_header h = {PS_PACKED_MAGIC, plan->weight_signature, plan->packed_bytes};
    memcpy(packed, &h, sizeof h);
    return PS_SUCCESS;
}

ps_status ps_plan_workspace_size(const ps_plan *plan, size_t *bytes)
{
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_workspace_size: plan is NULL");
    if (!bytes) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_workspace_size: bytes is NULL");
    *bytes = plan->workspace_bytes;
    return PS_SUCCESS;
}

ps_status ps_plan_execute(const ps_plan *plan, const ps_exec_args *args)
{
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: plan is NULL");
    if (!args) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: args is NULL");
    if (args->struct_size != sizeof *args)
        return ps_error(PS_ERR_INVALID_ARG, "ps_plan_execute: args.struct_size is %zu, expected %zu (use ps_exec_args_init)",
                        args->struct_size, sizeof *args);
    ps_exec_operands ops = {0};
    if (plan->problem.desc.kind == PS_OP_CONV_FWD) {
        if (!args->src) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: conv src is NULL");
        if (!args->weights) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: conv weights is NULL");
        if (!args->dst) return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: conv dst is NULL");
        if ((plan->problem.desc.u.conv.post_ops & PS_POST_BIAS) && !args->bias)
            return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: the plan adds a bias but bias is NULL");
        if ((plan->problem.desc.u.conv.post_ops & PS_POST_SUM) && !args->sum)
            return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: the plan adds a sum (PS_POST_SUM) but sum is NULL");
        packed_header h;
        memcpy(&h, args->weights, sizeof h);
        if (h.magic != PS_PACKED_MAGIC || h.signature != plan->weight_signature || h.bytes != plan->packed_bytes)
            return ps_error(PS_ERR_BAD_WEIGHTS, "ps_plan_execute: weights were not packed by ps_plan_pack_weights for "
                            "a plan of this shape and blocking");
        ops.src = args->src;
        ops.weights = (const float *)((const char *)args->weights + PS_PACKED_HEADER);
        ops.bias = args->bias;
        ops.sum = (plan->problem.desc.u.conv.post_ops & PS_POST_SUM) ? args->sum : NULL;
        ops.dst = args->dst;
    } else {
        if (!args->a || !args->b || !args->c)
            return ps_error(PS_ERR_NULL_POINTER, "ps_plan_execute: gemm a, b and c must all be non-NULL");
        /* Normalized operands: row-major problems swap A and B. */
        ops.a = plan->exec.gemm.swap ? args->b : args->a;
        ops.b = plan->exec.gemm.swap ? args->a : args->b;
        ops.c = args->c;
    }
    void *own = NULL;
    ops.workspace = args->workspace;
    if (!ops.workspace && plan->workspace_bytes) {
        own = malloc(plan->workspace_bytes);
        if (!own) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_plan_execute: cannot allocate %zu bytes of workspace", plan->workspace_bytes);
        ops.workspace = own;
    }
    if (plan->ctx->verbose) {
        ps_exec_profile prof;
        double t0 = ps_now_ms();
        ps_exec_run(&plan->exec, &ops, &prof);
        ps_plan_verbose(plan, "exec", ps_now_ms() - t0, &prof);
    } else {
        ps_exec_run(&plan->exec, &ops, NULL);
    }
    free(own);
    return PS_SUCCESS;
}

ps_status ps_conv_execute(const ps_plan *plan, const float *src, const void *packed_weights, const float *bias, float *dst)
{
    ps_exec_args a;
    ps_exec_args_init(&a);
    a.src = src;
    a.weights = packed_weights;
    a.bias = bias;
    a.dst = dst;
    if (plan && plan->problem.desc.kind != PS_OP_CONV_FWD)
        return ps_error(PS_ERR_INVALID_ARG, "ps_conv_execute: the plan is not a conv plan");
    return ps_plan_execute(plan, &a);
}

ps_status ps_gemm_execute(const ps_plan *plan, const float *a, const float *b, float *c)
{
    ps_exec_args x;
    ps_exec_args_init(&x);
    x.a = a;
    x.b = b;
    x.c = c;
    if (plan && plan->problem.desc.kind != PS_OP_GEMM)
        return ps_error(PS_ERR_INVALID_ARG, "ps_gemm_execute: the plan is not a gemm plan");
    return ps_plan_execute(plan, &x);
}
