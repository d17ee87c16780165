/* bench/onednn_ref — see onednn_ref.h. */
#define _POSIX_C_SOURCE 200809L
#include "onednn_ref.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char g_err[512];

static void set_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
}

const char *onednn_last_error(void) { return g_err; }

#define CHK(call)                                                                   \
    do {                                                                            \
        dnnl_status_t st_ = (call);                                                 \
        if (st_ != dnnl_success) {                                                  \
            set_err("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,              \
                    dnnl_status2str(st_));                                          \
            goto fail;                                                              \
        }                                                                           \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- engine / stream (process-wide, created on first use) ---------------- */

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

static int ensure_engine(void)
{
    if (g_engine && g_stream)
        return 0;
    if (!g_engine)
        CHK(dnnl_engine_create(&g_engine, dnnl_cpu, 0));
    if (!g_stream)
        CHK(dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags));
    return 0;
fail:
    return -1;
}

void onednn_set_num_threads(int n)
{
    if (n > 0)
        omp_set_num_threads(n);
}

int onednn_get_num_threads(void) { return omp_get_max_threads(); }

void onednn_disable_primitive_cache(void) { (void)dnnl_set_primitive_cache_capacity(0); }

const char *onednn_version_string(void)
{
    static char buf[128];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "%d.%d.%d (cpu runtime %s) isa:%s", v->major, v->minor,
             v->patch, dnnl_runtime2str(v->cpu_runtime),
             dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
    return buf;
}

/* ---- parameters ----------------------------------------------------------- */

void onednn_conv_params_init(onednn_conv_params *p)
{
    memset(p, 0, sizeof *p);
    p->stride_h = p->stride_w = 1;
    p->dil_h = p->dil_w = 1;
    p->act_layout = ONEDNN_ACT_NHWC;
    p->w_layout = ONEDNN_W_KCRS;
}

int onednn_conv_out_size(const onednn_conv_params *p, int64_t *OH, int64_t *OW)
{
    if (p->N <= 0 || p->C <= 0 || p->K <= 0 || p->H <= 0 || p->W <= 0 || p->R <= 0 ||
        p->S <= 0 || p->stride_h <= 0 || p->stride_w <= 0 || p->dil_h <= 0 || p->dil_w <= 0 ||
        p->pad_t < 0 || p->pad_b < 0 || p->pad_l < 0 || p->pad_r < 0) {
        set_err("invalid conv params");
        return -1;
    }
    int64_t er = (p->R - 1) * p->dil_h + 1, es = (p->S - 1) * p->dil_w + 1;
    int64_t hh = p->H + p->pad_t + p->pad_b - er, ww = p->W + p->pad_l + p->pad_r - es;
    if (hh < 0 || ww < 0) {
        set_err("filter larger than padded input");
        return -1;
    }
    if (OH)
        *OH = hh / p->stride_h + 1;
    if (OW)
        *OW = ww / p->stride_w + 1;
    return 0;
}

double onednn_conv_flops(const onednn_conv_params *p)
{
    int64_t OH = 0, OW = 0;
    if (onednn_conv_out_size(p, &OH, &OW))
        return 0.0;
    return 2.0 * (double)p->N * (double)p->K * (double)p->C * (double)OH * (double)OW *
           (double)p->R * (double)p->S;
}

static dnnl_format_tag_t act_tag(onednn_act_layout l)
{
    return l == ONEDNN_ACT_NCHW ? dnnl_nchw : dnnl_nhwc;
}

static dnnl_format_tag_t w_tag(onednn_weight_layout l)
{
    switch (l) {
    case ONEDNN_W_KRSC: return dnnl_ohwi;
    case ONEDNN_W_RSCK: return dnnl_hwio;
    default: return dnnl_oihw;
    }
}

/* ---- memory-descriptor pretty printer (blocked formats) ------------------- */

static void md_str(const dnnl_memory_desc_t *md, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (md->format_kind != dnnl_blocked) {
        snprintf(buf, len, "%s", dnnl_fmt_kind2str((dnnl_format_kind_t)md->format_kind));
        return;
    }
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    int nd = md->ndims, order[DNNL_MAX_NDIMS], blocked[DNNL_MAX_NDIMS] = {0};
    for (int i = 0; i < nd; i++)
        order[i] = i;
    /* outer dims by decreasing stride (stable) */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && b->strides[order[j]] > b->strides[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < b->inner_nblks; i++)
        blocked[b->inner_idxs[i]] = 1;
    size_t pos = 0;
    for (int i = 0; i < nd && pos + 1 < len; i++)
        buf[pos++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int i = 0; i < b->inner_nblks && pos + 1 < len; i++) {
        int n = snprintf(buf + pos, len - pos, "%lld%c", (long long)b->inner_blks[i],
                         (char)('a' + b->inner_idxs[i]));
        if (n < 0)
            break;
        pos += (size_t)n;
        if (pos >= len)
            pos = len - 1;
    }
    buf[pos < len ? pos : len - 1] = '\0';
}

/* ---- reorders --------------------------------------------------------------- */

/* Copies between a user buffer (plain md) and a primitive memory. */
static int reorder_user(const dnnl_memory_desc_t *user_md, void *user_ptr, dnnl_memory_t prim_mem,
                        const dnnl_memory_desc_t *prim_md, int to_prim)
{
    dnnl_memory_t umem = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    int rc = -1;
    CHK(dnnl_memory_create(&umem, user_md, g_engine, user_ptr));
    const dnnl_memory_desc_t *from_md = to_prim ? user_md : prim_md;
    const dnnl_memory_desc_t *to_md = to_prim ? prim_md : user_md;
    CHK(dnnl_reorder_primitive_desc_create(&rpd, from_md, g_engine, to_md, g_engine, NULL));
    CHK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {
        {DNNL_ARG_FROM, to_prim ? umem : prim_mem},
        {DNNL_ARG_TO, to_prim ? prim_mem : umem},
    };
    CHK(dnnl_primitive_execute(r, g_stream, 2, args));
    CHK(dnnl_stream_wait(g_stream));
    rc = 0;
fail:
    if (r)
        dnnl_primitive_destroy(r);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (umem)
        dnnl_memory_destroy(umem);
    return rc;
}

/* ---- convolution ------------------------------------------------------------ */

struct onednn_conv {
    onednn_conv_params p;
    onednn_conv_mode mode;
    int64_t OH, OW;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src_md, w_md, dst_md, b_md;             /* primitive's */
    dnnl_memory_desc_t usrc_md, uw_md, udst_md;                /* user's */
    dnnl_memory_t src, w, dst, bias;
    double create_ms, pd_ms;
    char impl[128];
    char layouts[256];
};

int onednn_conv_create(const onednn_conv_params *p, onednn_conv_mode mode, onednn_conv **out)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    *out = NULL;
    onednn_conv *c = calloc(1, sizeof *c);
    if (!c) {
        set_err("out of memory");
        return -1;
    }
    c->p = *p;
    c->mode = mode;
    if (onednn_conv_out_size(p, &c->OH, &c->OW))
        goto fail;
    if (ensure_engine())
        goto fail;

    dnnl_dims_t sd = {p->N, p->C, p->H, p->W};
    dnnl_dims_t wd = {p->K, p->C, p->R, p->S};
    dnnl_dims_t dd = {p->N, p->K, c->OH, c->OW};
    dnnl_dims_t bd = {p->K};
    dnnl_format_tag_t at = mode == ONEDNN_MODE_NHWC ? dnnl_nhwc : dnnl_format_tag_any;
    dnnl_memory_desc_t s_any, w_any, d_any, b_any;
    CHK(dnnl_memory_desc_init_by_tag(&s_any, 4, sd, dnnl_f32, at));
    CHK(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CHK(dnnl_memory_desc_init_by_tag(&d_any, 4, dd, dnnl_f32, at));
    CHK(dnnl_memory_desc_init_by_tag(&b_any, 1, bd, dnnl_f32, dnnl_x));
    CHK(dnnl_memory_desc_init_by_tag(&c->usrc_md, 4, sd, dnnl_f32, act_tag(p->act_layout)));
    CHK(dnnl_memory_desc_init_by_tag(&c->uw_md, 4, wd, dnnl_f32, w_tag(p->w_layout)));
    CHK(dnnl_memory_desc_init_by_tag(&c->udst_md, 4, dd, dnnl_f32, act_tag(p->act_layout)));

    dnnl_dims_t strides = {p->stride_h, p->stride_w};
    dnnl_dims_t dil = {p->dil_h - 1, p->dil_w - 1};
    dnnl_dims_t pl = {p->pad_t, p->pad_l}, pr = {p->pad_b, p->pad_r};
    dnnl_convolution_desc_t cd;
    CHK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &s_any, &w_any,
                                                   p->with_bias ? &b_any : NULL, &d_any,
                                                   strides, dil, pl, pr));
    if (p->with_relu) {
        CHK(dnnl_primitive_attr_create(&attr));
        CHK(dnnl_post_ops_create(&po));
        CHK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        CHK(dnnl_primitive_attr_set_post_ops(attr, po));
    }

    double t0 = now_ms();
    CHK(dnnl_primitive_desc_create(&c->pd, &cd, attr, g_engine, NULL));
    double t1 = now_ms();
    CHK(dnnl_primitive_create(&c->prim, c->pd));
    double t2 = now_ms();
    c->pd_ms = t1 - t0;
    c->create_ms = t2 - t0;

    const char *impl = NULL;
    if (dnnl_primitive_desc_query(c->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl)
        snprintf(c->impl, sizeof c->impl, "%s", impl);
    c->src_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_src_md, 0);
    c->w_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_weights_md, 0);
    c->dst_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_dst_md, 0);
    CHK(dnnl_memory_create(&c->src, &c->src_md, g_engine, DNNL_MEMORY_ALLOCATE));
    CHK(dnnl_memory_create(&c->w, &c->w_md, g_engine, DNNL_MEMORY_ALLOCATE));
    CHK(dnnl_memory_create(&c->dst, &c->dst_md, g_engine, DNNL_MEMORY_ALLOCATE));
    if (p->with_bias) {
        c->b_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_weights_md, 1);
        CHK(dnnl_memory_create(&c->bias, &c->b_md, g_engine, DNNL_MEMORY_ALLOCATE));
    }
    {
        char s[64], w[64], d[64];
        md_str(&c->src_md, s, sizeof s);
        md_str(&c->w_md, w, sizeof w);
        md_str(&c->dst_md, d, sizeof d);
        snprintf(c->layouts, sizeof c->layouts, "src %s wei %s dst %s", s, w, d);
    }
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    *out = c;
    return 0;
fail:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    onednn_conv_destroy(c);
    return -1;
}

void onednn_conv_destroy(onednn_conv *c)
{
    if (!c)
        return;
    if (c->src)
        dnnl_memory_destroy(c->src);
    if (c->w)
        dnnl_memory_destroy(c->w);
    if (c->dst)
        dnnl_memory_destroy(c->dst);
    if (c->bias)
        dnnl_memory_destroy(c->bias);
    if (c->prim)
        dnnl_primitive_destroy(c->prim);
    if (c->pd)
        dnnl_primitive_desc_destroy(c->pd);
    free(c);
}

double onednn_conv_create_ms(const onednn_conv *c) { return c->create_ms; }
double onednn_conv_pd_ms(const onednn_conv *c) { return c->pd_ms; }
const char *onednn_conv_impl(const onednn_conv *c) { return c->impl; }
const char *onednn_conv_layouts(const onednn_conv *c) { return c->layouts; }

int onednn_conv_set_src(onednn_conv *c, const float *src)
{
    return reorder_user(&c->usrc_md, (void *)src, c->src, &c->src_md, 1);
}

int onednn_conv_set_weights(onednn_conv *c, const float *weights)
{
    return reorder_user(&c->uw_md, (void *)weights, c->w, &c->w_md, 1);
}

int onednn_conv_set_bias(onednn_conv *c, const float *bias)
{
    if (!c->bias) {
        set_err("conv created without bias");
        return -1;
    }
    dnnl_memory_desc_t umd;
    dnnl_dims_t bd = {c->p.K};
    CHK(dnnl_memory_desc_init_by_tag(&umd, 1, bd, dnnl_f32, dnnl_x));
    return reorder_user(&umd, (void *)bias, c->bias, &c->b_md, 1);
fail:
    return -1;
}

int onednn_conv_get_dst(onednn_conv *c, float *dst)
{
    return reorder_user(&c->udst_md, dst, c->dst, &c->dst_md, 0);
}

int onednn_conv_execute(onednn_conv *c)
{
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, c->src},
        {DNNL_ARG_WEIGHTS, c->w},
        {DNNL_ARG_DST, c->dst},
        {DNNL_ARG_BIAS, c->bias},
    };
    CHK(dnnl_primitive_execute(c->prim, g_stream, c->bias ? 4 : 3, args));
    CHK(dnnl_stream_wait(g_stream));
    return 0;
fail:
    return -1;
}

int onednn_conv_run_once(const onednn_conv_params *p, const float *src, const float *weights,
                         const float *bias, float *dst)
{
    onednn_conv *c = NULL;
    if (onednn_conv_create(p, ONEDNN_MODE_NHWC, &c) &&
        onednn_conv_create(p, ONEDNN_MODE_ANY, &c))
        return -1;
    int rc = -1;
    if (onednn_conv_set_src(c, src) || onednn_conv_set_weights(c, weights))
        goto out;
    if (p->with_bias && (!bias || onednn_conv_set_bias(c, bias))) {
        if (!bias)
            set_err("with_bias set but bias is NULL");
        goto out;
    }
    if (onednn_conv_execute(c) || onednn_conv_get_dst(c, dst))
        goto out;
    rc = 0;
out:
    onednn_conv_destroy(c);
    return rc;
}

/* ---- GEMM ------------------------------------------------------------------- */

int onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                 int64_t ldc)
{
    if (lda <= 0)
        lda = trans_a ? M : K;
    if (ldb <= 0)
        ldb = trans_b ? K : N;
    if (ldc <= 0)
        ldc = N;
    CHK(dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                   beta, C, ldc));
    return 0;
fail:
    return -1;
}
