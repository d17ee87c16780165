/* The plan cache: key text -> chosen schedule, guarded by the context's lock. */
#include "plan/cache.h"

#include "polysci/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "polysci/wisdom.h"

#define CONV_KEY "conv N=%lld C=%lld K=%lld H=%lld W=%lld R=%lld S=%lld sh=%lld sw=%lld pt=%lld pb=%lld pl=%lld pr=%lld dh=%lld dw=%lld layout=%d wl=%d post=%u"
#define GEMM_KEY "gemm M=%lld N=%lld K=%lld order=%d ta=%d tb=%d lda=%lld ldb=%lld ldc=%lld alpha=%a beta=%a"
#define LDO_KEY " ldo=%lld"
#define OPTS_KEY " threads=%d ranker=%d topk=%d"
#define BUDGET_KEY " budget=%g"

int ps_plan_key(const ps_desc *desc, int nthreads, ps_ranker ranker, int top_k, double budget_ms, char *buf,
                size_t len)
{
    int n;
    if (desc->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &desc->u.conv;
        /* a strided output only where it is not tight: tight keys keep the
         * form wisdom files have always had */
        const long long ldo = c->dst_pixel_stride > c->K ? (long long)c->dst_pixel_stride : 0;
        char ld[40] = "";
        if (ldo) snprintf(ld, sizeof ld, LDO_KEY, ldo);
        n = snprintf(buf, len, CONV_KEY "%s" OPTS_KEY, (long long)c->N, (long long)c->C, (long long)c->K, (long long)c->H,
                     (long long)c->W, (long long)c->R, (long long)c->S, (long long)c->stride_h, (long long)c->stride_w,
                     (long long)c->pad_top, (long long)c->pad_bottom, (long long)c->pad_left, (long long)c->pad_right,
                     (long long)c->dilation_h, (long long)c->dilation_w, (int)c->layout, (int)c->weight_layout,
                     c->post_ops, ld, nthreads, (int)ranker, top_k);
    } else {
        const ps_gemm_desc *g = &desc->u.gemm;
        n = snprintf(buf, len, GEMM_KEY OPTS_KEY, (long long)g->M, (long long)g->N, (long long)g->K, (int)g->order,
                     g->trans_a, g->trans_b, (long long)g->lda, (long long)g->ldb, (long long)g->ldc, (double)g->alpha,
                     (double)g->beta, nthreads, (int)ranker, top_k);
    }
    /* a timing budget only where it limits timing: other keys keep the form
     * wisdom files have always had */
    if (top_k > 1 && budget_ms > 0 && n >= 0) {
        const size_t used = (size_t)n < len ? (size_t)n : len;
        n += snprintf(buf + used, len - used, BUDGET_KEY, budget_ms);
    }
    return n;
}

ps_status ps_plan_key_parse(const char *in, ps_desc *desc, int *nthreads, ps_ranker *ranker, int *top_k,
                            double *budget_ms)
{
    /* The optional budget ends the key; the rest parses as before. */
    char key[1024];
    double budget = 0.0;
    const char *b = strstr(in, " budget=");
    const size_t head = b ? (size_t)(b - in) : strlen(in);
    if (head >= sizeof key) return ps_error(PS_ERR_PARSE, "wisdom: key too long \"%.200s\"", in);
    memcpy(key, in, head);
    key[head] = 0;
    if (b) {
        int used = 0;
        if (sscanf(b, " budget=%lf%n", &budget, &used) != 1 || b[used] != 0 || !(budget > 0 && budget <= 1e7))
            return ps_error(PS_ERR_PARSE, "wisdom: malformed budget in key \"%.200s\"", in);
    }
    long long v[16];
    int layout, wl, order, ta, tb, rk, consumed = 0;
    unsigned post;
    double alpha, beta;
    if (strncmp(key, "conv ", 5) == 0) {
        v[15] = 0;
        if ((sscanf(key, CONV_KEY LDO_KEY OPTS_KEY "%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
                    &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &layout, &wl, &post, &v[15], nthreads, &rk, top_k,
                    &consumed) != 22 ||
             key[consumed] != 0) &&
            (consumed = 0, v[15] = 0,
             sscanf(key, CONV_KEY OPTS_KEY "%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                    &v[10], &v[11], &v[12], &v[13], &v[14], &layout, &wl, &post, nthreads, &rk, top_k, &consumed) != 21 ||
                 key[consumed] != 0))
            return ps_error(PS_ERR_PARSE, "wisdom: malformed conv key \"%.200s\"", key);
        ps_desc_init_conv(desc);
        ps_conv_desc *c = &desc->u.conv;
        c->N = v[0]; c->C = v[1]; c->K = v[2]; c->H = v[3]; c->W = v[4]; c->R = v[5]; c->S = v[6];
        c->stride_h = v[7]; c->stride_w = v[8]; c->pad_top = v[9]; c->pad_bottom = v[10];
        c->pad_left = v[11]; c->pad_right = v[12]; c->dilation_h = v[13]; c->dilation_w = v[14];
        c->layout = (ps_act_layout)layout; c->weight_layout = (ps_weight_layout)wl; c->post_ops = post;
        c->dst_pixel_stride = v[15];
    } else if (strncmp(key, "gemm ", 5) == 0) {
        if (sscanf(key, "gemm M=%lld N=%lld K=%lld order=%d ta=%d tb=%d lda=%lld ldb=%lld ldc=%lld alpha=%la beta=%la" OPTS_KEY "%n",
                   &v[0], &v[1], &v[2], &order, &ta, &tb, &v[3], &v[4], &v[5], &alpha, &beta, nthreads, &rk, top_k,
                   &consumed) != 14 || key[consumed] != 0)
            return ps_error(PS_ERR_PARSE, "wisdom: malformed gemm key \"%.200s\"", key);
        ps_desc_init_gemm(desc);
        ps_gemm_desc *g = &desc->u.gemm;
        g->M = v[0]; g->N = v[1]; g->K = v[2]; g->order = (ps_matrix_order)order; g->trans_a = ta; g->trans_b = tb;
        g->lda = v[3]; g->ldb = v[4]; g->ldc = v[5]; g->alpha = (float)alpha; g->beta = (float)beta;
    } else {
        return ps_error(PS_ERR_PARSE, "wisdom: unknown plan kind in \"%.200s\"", key);
    }
    if (b && *top_k <= 1) return ps_error(PS_ERR_PARSE, "wisdom: a budget without top_k > 1 in key \"%.200s\"", in);
    *ranker = (ps_ranker)rk;
    if (budget_ms) *budget_ms = budget;
    return PS_SUCCESS;
}

void ps_cache_init(ps_context *ctx)
{
    pthread_mutex_init(&ctx->cache_lock, NULL);
    ctx->cache = NULL;
    ctx->cache_n = ctx->cache_cap = 0;
    ctx->graph_plans = NULL;
    ctx->graph_n = ctx->graph_cap = 0;
}

static void forget_locked(ps_context *ctx)
{
    for (int i = 0; i < ctx->cache_n; i++) {
        free(ctx->cache[i].key);
        ps_schedule_destroy(ctx->cache[i].schedule);
    }
    ctx->cache_n = 0;
    for (int i = 0; i < ctx->graph_n; i++) ps_graph_plan_destroy(ctx->graph_plans[i]);
    ctx->graph_n = 0;
}

void ps_cache_release(ps_context *ctx)
{
    forget_locked(ctx);
    free(ctx->cache);
    ctx->cache = NULL;
    free(ctx->graph_plans);
    ctx->graph_plans = NULL;
    pthread_mutex_destroy(&ctx->cache_lock);
}

void ps_context_forget_plans(ps_context *ctx)
{
    if (!ctx) return;
    pthread_mutex_lock(&ctx->cache_lock);
    forget_locked(ctx);
    pthread_mutex_unlock(&ctx->cache_lock);
}

int ps_context_cached_plans(const ps_context *ctx)
{
    if (!ctx) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&ctx->cache_lock);
    int n = ctx->cache_n;
    pthread_mutex_unlock((pthread_mutex_t *)&ctx->cache_lock);
    return n;
}

/* Linear search: a process plans tens to hundreds of layers, and a lookup
 * costs far less than building the executor it precedes. */
static int find_locked(const ps_context *ctx, const char *key)
{
    for (int i = 0; i < ctx->cache_n; i++)
        if (strcmp(ctx->cache[i].key, key) == 0) return i;
    return -1;
}

ps_schedule *ps_cache_lookup(ps_context *ctx, const char *key)
{
    pthread_mutex_lock(&ctx->cache_lock);
    int i = find_locked(ctx, key);
    ps_schedule *s = i >= 0 ? ps_schedule_copy(ctx->cache[i].schedule) : NULL;
    pthread_mutex_unlock(&ctx->cache_lock);
    return s;
}

ps_status ps_cache_insert(ps_context *ctx, const char *key, const ps_schedule *sched)
{
    return ps_cache_insert_all(ctx, &key, &sched, 1);
}

ps_status ps_cache_insert_all(ps_context *ctx, const char *const *keys, const ps_schedule *const *scheds, int n)
{
    /* Copy everything first; once the lock is held and capacity reserved,
     * nothing can fail, so the cache never holds half an insertion. */
    ps_cache_entry *fresh = calloc((size_t)(n ? n : 1), sizeof *fresh);
    ps_status st = PS_SUCCESS;
    if (!fresh) return ps_error(PS_ERR_OUT_OF_MEMORY, "plan cache: out of memory");
    for (int i = 0; i < n && !st; i++) {
        fresh[i].key = strdup(keys[i]);
        fresh[i].schedule = ps_schedule_copy(scheds[i]);
        if (!fresh[i].key || !fresh[i].schedule) st = ps_error(PS_ERR_OUT_OF_MEMORY, "plan cache: out of memory");
    }
    if (!st) {
        pthread_mutex_lock(&ctx->cache_lock);
        if (ctx->cache_n + n > ctx->cache_cap) {
            int cap = ctx->cache_cap ? ctx->cache_cap : 64;
            while (cap < ctx->cache_n + n) cap *= 2;
            ps_cache_entry *e = realloc(ctx->cache, (size_t)cap * sizeof *e);
            if (!e) {
                st = ps_error(PS_ERR_OUT_OF_MEMORY, "plan cache: out of memory");
            } else {
                ctx->cache = e;
                ctx->cache_cap = cap;
            }
        }
        for (int i = 0; i < n && !st; i++) {
            int j = find_locked(ctx, fresh[i].key);
            if (j >= 0) {
                /* Replace: the old entry's memory goes, the new one moves in. */
                ps_schedule_destroy(ctx->cache[j].schedule);
                free(ctx->cache[j].key);
                ctx->cache[j] = fresh[i];
            } else {
                ctx->cache[ctx->cache_n++] = fresh[i];
            }
            fresh[i] = (ps_cache_entry){NULL, NULL};
        }
        pthread_mutex_unlock(&ctx->cache_lock);
    }
    for (int i = 0; i < n; i++) {
        free(fresh[i].key);
        ps_schedule_destroy(fresh[i].schedule);
    }
    free(fresh);
    return st;
}
