/* Concurrency, as the headers promise it:
 *  - a context may be used from many threads at once (plan creation from
 *    several threads on one context, sharing its plan cache);
 *  - a plan may be executed from several threads at once with separate dst
 *    buffers (and workspaces).
 * Every result is compared with the reference; every thread's results must
 * also be bitwise identical to a single-threaded run of the same plan. */
#include <pthread.h>

#include "reference.h"
#include "test_util.h"

#define N_THREADS 8 /* the concurrency the API guide promises to test */
#define N_SHAPES 6
#define ROUNDS 3

typedef struct shape_data {
    ps_desc desc;
    float *src, *w, *bias;
    double *ref, *mag;
    int64_t n_dst, L;
} shape_data;

static ps_context *g_ctx;
static shape_data g_shapes[N_SHAPES];
static const ps_plan *g_shared_plan;
static const void *g_shared_packed;
static const float *g_shared_expect; /* single-threaded result of the shared plan */

typedef struct worker {
    int id, failures;
    char first_failure[512];
} worker;

static void wfail(worker *w, const char *fmt, const char *a, const char *b)
{
    if (!w->failures++) snprintf(w->first_failure, sizeof w->first_failure, fmt, a, b);
}

static int check_result(const shape_data *s, const float *dst)
{
    ref_cmp cmp;
    ref_compare(dst, s->ref, s->mag, s->n_dst, s->L, &cmp);
    return cmp.n_bad == 0;
}

static void *work(void *arg)
{
    worker *w = arg;
    for (int round = 0; round < ROUNDS; round++) {
        /* plan every shape (threads start at different shapes, so the same
         * descriptor is planned by several threads at about the same time) */
        for (int j = 0; j < N_SHAPES; j++) {
            const shape_data *s = &g_shapes[(j + w->id) % N_SHAPES];
            ps_plan *plan = NULL;
            ps_status st = ps_plan_create(g_ctx, &s->desc, NULL, &plan);
            if (st != PS_SUCCESS) {
                wfail(w, "ps_plan_create: %s: %s", ps_status_str(st), ps_last_error_message());
                continue;
            }
            size_t bytes = 0;
            ps_plan_packed_weights_size(plan, &bytes);
            void *packed = tu_alloc(bytes);
            float *dst = tu_alloc_f(s->n_dst);
            tu_fill(dst, s->n_dst, NAN);
            st = ps_plan_pack_weights(plan, s->w, packed);
            if (st == PS_SUCCESS) st = ps_conv_execute(plan, s->src, packed, s->bias, dst);
            if (st != PS_SUCCESS) wfail(w, "pack/execute: %s: %s", ps_status_str(st), ps_last_error_message());
            else if (!check_result(s, dst)) wfail(w, "%s%swrong result from a plan created concurrently", "", "");
            free(packed);
            free(dst);
            ps_plan_destroy(plan);
        }
        /* the shared plan, executed by every thread at once */
        const shape_data *s = &g_shapes[0];
        float *dst = tu_alloc_f(s->n_dst);
        for (int k = 0; k < 4; k++) {
            tu_fill(dst, s->n_dst, NAN);
            ps_status st = ps_conv_execute(g_shared_plan, s->src, g_shared_packed, s->bias, dst);
            if (st != PS_SUCCESS) wfail(w, "shared plan execute: %s: %s", ps_status_str(st), ps_last_error_message());
            else if (memcmp(dst, g_shared_expect, (size_t)s->n_dst * sizeof(float)))
                wfail(w, "%s%sshared plan: result differs from the single-threaded run", "", "");
        }
        free(dst);
    }
    return NULL;
}

int main(void)
{
    const uint64_t seed = tu_seed("test_threads", 31337u);
    tu_rng r = {seed};
    if (ps_context_create(NULL, &g_ctx) != PS_SUCCESS) {
        fprintf(stderr, "ps_context_create: %s\n", ps_last_error_message());
        return 1;
    }
    static const int64_t dims[N_SHAPES][7] = {
        /* N C K H W R S */
        {2, 16, 32, 12, 12, 3, 3}, {1, 3, 17, 15, 9, 5, 5}, {3, 8, 8, 7, 20, 1, 7},
        {1, 32, 5, 9, 9, 1, 1},    {2, 5, 24, 11, 6, 7, 1}, {1, 24, 40, 6, 6, 3, 3}};
    for (int i = 0; i < N_SHAPES; i++) {
        shape_data *s = &g_shapes[i];
        ps_desc_init_conv(&s->desc);
        ps_conv_desc *c = &s->desc.u.conv;
        c->N = dims[i][0]; c->C = dims[i][1]; c->K = dims[i][2]; c->H = dims[i][3]; c->W = dims[i][4];
        c->R = dims[i][5]; c->S = dims[i][6];
        c->pad_top = c->pad_bottom = (c->R - 1) / 2;
        c->pad_left = c->pad_right = (c->S - 1) / 2;
        c->layout = (ps_act_layout)(i % 2);
        c->weight_layout = (ps_weight_layout)(i % 3);
        c->post_ops = PS_POST_BIAS | (i % 2 ? PS_POST_RELU : 0);
        int64_t OH, OW;
        ref_conv_out_size(c, &OH, &OW);
        const int64_t ns = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S;
        s->n_dst = c->N * c->K * OH * OW;
        s->src = tu_alloc_f(ns);
        s->w = tu_alloc_f(nw);
        s->bias = tu_alloc_f(c->K);
        tu_fill_random(&r, s->src, ns);
        tu_fill_random(&r, s->w, nw);
        tu_fill_random(&r, s->bias, c->K);
        s->ref = tu_alloc_d(s->n_dst);
        s->mag = tu_alloc_d(s->n_dst);
        ref_conv_fwd(c, s->src, s->w, s->bias, s->ref, s->mag, &s->L);
    }

    /* the shared plan and its single-threaded (one caller) result */
    ps_plan *shared = NULL;
    TU_OK(ps_plan_create(g_ctx, &g_shapes[0].desc, NULL, &shared));
    if (!shared) return tu_finish("test_threads");
    size_t bytes = 0;
    TU_OK(ps_plan_packed_weights_size(shared, &bytes));
    void *packed = tu_alloc(bytes);
    TU_OK(ps_plan_pack_weights(shared, g_shapes[0].w, packed));
    float *expect = tu_alloc_f(g_shapes[0].n_dst);
    tu_fill(expect, g_shapes[0].n_dst, NAN);
    TU_OK(ps_conv_execute(shared, g_shapes[0].src, packed, g_shapes[0].bias, expect));
    TU_CHECK(check_result(&g_shapes[0], expect), "shared plan: wrong result single-threaded");
    g_shared_plan = shared;
    g_shared_packed = packed;
    g_shared_expect = expect;

    pthread_t th[N_THREADS];
    worker w[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker){.id = i};
        TU_CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        TU_CHECK(w[i].failures == 0, "thread %d: %d failures, first: %s", i, w[i].failures, w[i].first_failure);
    }

    ps_plan_destroy(shared);
    free(packed);
    free(expect);
    for (int i = 0; i < N_SHAPES; i++) {
        free(g_shapes[i].src); free(g_shapes[i].w); free(g_shapes[i].bias);
        free(g_shapes[i].ref); free(g_shapes[i].mag);
    }
    ps_context_destroy(g_ctx);
    return tu_finish("test_threads");
}
