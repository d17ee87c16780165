/* A chain of layers as a framework runs it on oneDNN 2.x (onednn_chain.h). */
#include "onednn_chain.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

/* The last failure, also printed to stderr (the benchmark stops on it). */
static char g_chain_err[512];

static void chain_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void chain_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_chain_err, sizeof g_chain_err, fmt, ap);
    va_end(ap);
    fprintf(stderr, "onednn_chain: %s\n", g_chain_err);
}

#define CK(call)                                                                             \
    do {                                                                                     \
        dnnl_status_t s_ = (call);                                                           \
        if (s_ != dnnl_success) {                                                            \
            chain_err("%s failed (status %d) at %s:%d", #call, (int)s_, __FILE__, __LINE__); \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)

#define MAX_ARGS 8

typedef struct step {
    dnnl_primitive_t prim;
    int n_args;
    dnnl_exec_arg_t args[MAX_ARGS];
    dnnl_memory_t owned[4]; /* weights, bias, dw weights, dw bias */
} step;

typedef struct tensor {
    int64_t h, w, c;
    int alias;            /* the tensor whose buffer this one is (itself if none) */
    dnnl_memory_t mem;    /* owned when alias == own index */
} tensor;

struct onednn_chain {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    int64_t N;
    int n_tensors, n_steps, fused_dw;
    tensor *t;
    step *s;
    int out;              /* tensor of the output */
};

static int64_t out_len(int64_t len, int64_t k, int64_t stride, int64_t pad) { return (len + 2 * pad - k) / stride + 1; }

static dnnl_memory_t mem_of(onednn_chain *c, int t) { return c->t[c->t[t].alias].mem; }

static int nhwc_md(const onednn_chain *c, const tensor *t, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d = {c->N, t->c, t->h, t->w};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nhwc) == dnnl_success ? 0 : -1;
}

/* A memory of `want`'s layout filled from user data of `user_md`. */
static int reordered(onednn_chain *c, const dnnl_memory_desc_t *user_md, const float *data, const dnnl_memory_desc_t *want,
                     dnnl_memory_t *out)
{
    dnnl_memory_t user = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    *out = NULL;
    CK(dnnl_memory_create(out, want, c->eng, DNNL_MEMORY_ALLOCATE));
    CK(dnnl_memory_create(&user, user_md, c->eng, (void *)data));
    CK(dnnl_reorder_primitive_desc_create(&rpd, user_md, c->eng, want, c->eng, NULL));
    CK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, *out}};
    CK(dnnl_primitive_execute(r, c->stream, 2, a));
    CK(dnnl_stream_wait(c->stream));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(user);
    return 0;
fail:
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (user) dnnl_memory_destroy(user);
    return -1;
}

static int weights_user_md(const onednn_chain_layer *L, int64_t C, dnnl_memory_desc_t *md)
{
    if (L->groups > 1) {
        dnnl_dims_t d = {L->groups, L->K / L->groups, C / L->groups, L->R, L->S};
        return dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, dnnl_goihw) == dnnl_success ? 0 : -1;
    }
    dnnl_dims_t d = {L->K, C, L->R, L->S};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_oihw) == dnnl_success ? 0 : -1;
}

static int append_act(dnnl_post_ops_t po, onednn_chain_act act)
{
    if (act == ONEDNN_ACT_RELU) return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) == dnnl_success ? 0 : -1;
    if (act == ONEDNN_ACT_RELU6) return dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f) == dnnl_success ? 0 : -1;
    return 0;
}

static int reads(const onednn_chain_layer *layers, int n, int from, int t)
{
    int r = 0;
    for (int j = from; j < n; j++) r += layers[j].src == t || (layers[j].kind == ONEDNN_CL_ADD && layers[j].src2 == t);
    return r;
}

static int add_conv(onednn_chain *c, const onednn_chain_layer *layers, int n, int i, int fuse_dw, int *consumed)
{
    const onednn_chain_layer *L = &layers[i];
    const int src = L->src;
    tensor *ti = &c->t[src];
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    step *S = &c->s[c->n_steps];
    memset(S, 0, sizeof *S);
    *consumed = 1;
    /* what follows it */
    const onednn_chain_layer *N1 = i + 1 < n ? &layers[i + 1] : NULL;
    int sum_into = -1, dw = 0;
    if (N1 && N1->kind == ONEDNN_CL_ADD && N1->src2 == i + 1 && reads(layers, n, i + 1, i + 1) == 1 && L->act == ONEDNN_ACT_NONE)
        sum_into = N1->src;
    else if (fuse_dw && N1 && N1->kind == ONEDNN_CL_CONV && N1->src == i + 1 && N1->groups > 1 && N1->groups == N1->K &&
             N1->R == 3 && N1->S == 3 && N1->pad == 1 && N1->stride == 1 && L->R == 1 && L->S == 1 &&
             L->stride == 1 && L->groups == 1 && reads(layers, n, i + 1, i + 1) == 1 &&
             !(i + 2 < n && layers[i + 2].kind == ONEDNN_CL_ADD && layers[i + 2].src2 == i + 2))
        dw = 1;
    tensor *to = &c->t[i + 1];
    to->c = L->K;
    to->h = out_len(ti->h, L->R, L->stride, L->pad);
    to->w = out_len(ti->w, L->S, L->stride, L->pad);
    tensor *final = to;
    if (dw) {
        tensor *t2 = &c->t[i + 2];
        t2->c = N1->K;
        t2->h = (to->h + N1->stride - 1) / N1->stride;
        t2->w = (to->w + N1->stride - 1) / N1->stride;
        to->alias = i + 2; /* never materialized */
        final = t2;
        *consumed = 2;
    }
    if (sum_into >= 0) {
        tensor *t2 = &c->t[i + 2];
        *t2 = *to;
        to->alias = t2->alias = c->t[sum_into].alias;
        final = t2;
        *consumed = 2;
        if (c->t[sum_into].h != to->h || c->t[sum_into].w != to->w || c->t[sum_into].c != to->c) {
            chain_err("layer %d: the residual add's operands differ in shape", i + 1);
            return -1;
        }
    }
    dnnl_memory_desc_t s_md, d_md, w_any, b_md, w_user;
    if (nhwc_md(c, ti, &s_md) || nhwc_md(c, final, &d_md) || weights_user_md(L, ti->c, &w_user)) goto fail;
    {
        dnnl_memory_desc_t conv_dst = d_md;
        if (dw && nhwc_md(c, to, &conv_dst)) goto fail;
        CK(dnnl_memory_desc_init_by_tag(&w_any, w_user.ndims, w_user.dims, dnnl_f32, dnnl_format_tag_any));
        dnnl_dims_t bd = {L->K};
        CK(dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_x));
        dnnl_dims_t strides = {L->stride, L->stride}, dil = {0, 0}, pad = {L->pad, L->pad};
        dnnl_convolution_desc_t cd;
        CK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &s_md, &w_any,
                                                      L->bias ? &b_md : NULL, &conv_dst, strides, dil, pad, pad));
        CK(dnnl_primitive_attr_create(&attr));
        CK(dnnl_post_ops_create(&po));
        if (sum_into >= 0) {
            CK(dnnl_post_ops_append_sum(po, 1.0f));
            if (append_act(po, N1->act)) goto fail;
        } else {
            if (append_act(po, L->act)) goto fail;
            if (dw) {
                if (N1->stride == 1) CK(dnnl_post_ops_append_dw_k3s1p1(po, dnnl_f32, dnnl_f32, dnnl_f32, 0, 0, NULL));
                else CK(dnnl_post_ops_append_dw_k3s2p1(po, dnnl_f32, dnnl_f32, dnnl_f32, 0, 0, NULL));
                if (append_act(po, N1->act)) goto fail;
            }
        }
        CK(dnnl_primitive_attr_set_post_ops(attr, po));
        CK(dnnl_primitive_desc_create(&pd, &cd, attr, c->eng, NULL));
        CK(dnnl_primitive_create(&S->prim, pd));
        const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        if (reordered(c, &w_user, L->weights, w_md, &S->owned[0])) goto fail;
        S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem_of(c, src)};
        S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, S->owned[0]};
        if (L->bias) {
            if (reordered(c, &b_md, L->bias, &b_md, &S->owned[1])) goto fail;
            S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, S->owned[1]};
        }
        if (dw) {
            dnnl_memory_desc_t dw_user, dwb;
            if (weights_user_md(N1, to->c, &dw_user)) goto fail;
            const dnnl_memory_desc_t *dw_md =
                dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
            if (!dw_md || reordered(c, &dw_user, N1->weights, dw_md, &S->owned[2])) goto fail;
            S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, S->owned[2]};
            dnnl_dims_t bd2 = {N1->K};
            CK(dnnl_memory_desc_init_by_tag(&dwb, 1, bd2, dnnl_f32, dnnl_x));
            static const float zero_bias[4096];
            const float *b = N1->bias ? N1->bias : zero_bias;
            if (!N1->bias && N1->K > 4096) goto fail;
            if (reordered(c, &dwb, b, &dwb, &S->owned[3])) goto fail;
            S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, S->owned[3]};
            c->fused_dw++;
        }
        /* the destination: a new buffer, or the shortcut's (sum in place) */
        int dst_t = dw || sum_into >= 0 ? i + 2 : i + 1;
        if (sum_into < 0) CK(dnnl_memory_create(&c->t[dst_t].mem, &d_md, c->eng, DNNL_MEMORY_ALLOCATE));
        S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem_of(c, dst_t)};
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    c->n_steps++;
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    c->n_steps++; /* destroy frees what the step holds */
    return -1;
}

static int add_pool(onednn_chain *c, const onednn_chain_layer *L, int i)
{
    dnnl_primitive_desc_t pd = NULL;
    step *S = &c->s[c->n_steps];
    memset(S, 0, sizeof *S);
    tensor *ti = &c->t[L->src], *to = &c->t[i + 1];
    to->c = ti->c;
    to->h = out_len(ti->h, L->R, L->stride, L->pad);
    to->w = out_len(ti->w, L->S, L->stride, L->pad);
    dnnl_memory_desc_t s_md, d_md;
    if (nhwc_md(c, ti, &s_md) || nhwc_md(c, to, &d_md)) goto fail;
    {
        dnnl_dims_t strides = {L->stride, L->stride}, kernel = {L->R, L->S}, dil = {0, 0}, pad = {L->pad, L->pad};
        dnnl_pooling_v2_desc_t pdsc;
        CK(dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference, dnnl_pooling_max, &s_md, &d_md, strides, kernel,
                                             dil, pad, pad));
        CK(dnnl_primitive_desc_create(&pd, &pdsc, NULL, c->eng, NULL));
        CK(dnnl_primitive_create(&S->prim, pd));
        CK(dnnl_memory_create(&to->mem, &d_md, c->eng, DNNL_MEMORY_ALLOCATE));
        S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem_of(c, L->src)};
        S->args[S->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, to->mem};
    }
    dnnl_primitive_desc_destroy(pd);
    c->n_steps++;
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    c->n_steps++;
    return -1;
}

int onednn_chain_create(int64_t N, int64_t H, int64_t W, int64_t C, const onednn_chain_layer *layers, int n, int fuse_dw,
                        onednn_chain **out)
{
    *out = NULL;
    onednn_chain *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->N = N;
    c->n_tensors = n + 1;
    c->t = calloc((size_t)n + 1, sizeof *c->t);
    c->s = calloc((size_t)n + 1, sizeof *c->s);
    if (!c->t || !c->s) goto fail;
    CK(dnnl_engine_create(&c->eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags));
    for (int i = 0; i <= n; i++) c->t[i].alias = i;
    c->t[0] = (tensor){H, W, C, 0, NULL};
    {
        dnnl_memory_desc_t md;
        if (nhwc_md(c, &c->t[0], &md)) goto fail;
        CK(dnnl_memory_create(&c->t[0].mem, &md, c->eng, DNNL_MEMORY_ALLOCATE));
    }
    for (int i = 0; i < n;) {
        const onednn_chain_layer *L = &layers[i];
        if (L->src < 0 || L->src > i) {
            chain_err("layer %d reads tensor %d", i, L->src);
            goto fail;
        }
        int used = 1;
        if (L->kind == ONEDNN_CL_CONV) {
            if (add_conv(c, layers, n, i, fuse_dw, &used)) goto fail;
        } else if (L->kind == ONEDNN_CL_MAXPOOL) {
            if (add_pool(c, L, i)) goto fail;
        } else {
            chain_err("layer %d: an add not directly after the convolution producing its second operand", i);
            goto fail;
        }
        i += used;
    }
    c->out = n;
    *out = c;
    return 0;
fail:
    onednn_chain_destroy(c);
    return -1;
}

void onednn_chain_destroy(onednn_chain *c)
{
    if (!c) return;
    for (int i = 0; c->s && i < c->n_steps; i++) {
        if (c->s[i].prim) dnnl_primitive_destroy(c->s[i].prim);
        for (int k = 0; k < 4; k++)
            if (c->s[i].owned[k]) dnnl_memory_destroy(c->s[i].owned[k]);
    }
    for (int i = 0; c->t && i < c->n_tensors; i++)
        if (c->t[i].mem) dnnl_memory_destroy(c->t[i].mem);
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->eng) dnnl_engine_destroy(c->eng);
    free(c->t);
    free(c->s);
    free(c);
}

void onednn_chain_output_shape(const onednn_chain *c, int64_t *N, int64_t *H, int64_t *W, int64_t *C)
{
    *N = c->N;
    *H = c->t[c->out].h;
    *W = c->t[c->out].w;
    *C = c->t[c->out].c;
}

int onednn_chain_primitives(const onednn_chain *c, int *fused_dw)
{
    if (fused_dw) *fused_dw = c->fused_dw;
    return c->n_steps;
}

static float *data_of(dnnl_memory_t m)
{
    void *p = NULL;
    return dnnl_memory_get_data_handle(m, &p) == dnnl_success ? p : NULL;
}

int onednn_chain_set_input(onednn_chain *c, const float *nhwc)
{
    const tensor *t = &c->t[0];
    float *p = data_of(c->t[0].mem);
    if (!p) return -1;
    memcpy(p, nhwc, (size_t)(c->N * t->h * t->w * t->c) * sizeof(float));
    return 0;
}

int onednn_chain_get_output(const onednn_chain *c, float *nhwc)
{
    const tensor *t = &c->t[c->out];
    const float *p = data_of(c->t[t->alias].mem);
    if (!p) return -1;
    memcpy(nhwc, p, (size_t)(c->N * t->h * t->w * t->c) * sizeof(float));
    return 0;
}

int onednn_chain_run(onednn_chain *c)
{
    for (int i = 0; i < c->n_steps; i++) CK(dnnl_primitive_execute(c->s[i].prim, c->stream, c->s[i].n_args, c->s[i].args));
    CK(dnnl_stream_wait(c->stream));
    return 0;
fail:
    return -1;
}
