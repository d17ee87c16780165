/* Descriptor defaults, validation and derived shapes. */
#include "descriptors/shape.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

void ps_desc_init_conv(ps_desc *desc)
{
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->struct_size = sizeof *desc;
    desc->kind = PS_OP_CONV_FWD;
    ps_conv_desc *c = &desc->u.conv;
    c->stride_h = c->stride_w = 1;
    c->dilation_h = c->dilation_w = 1;
    c->layout = PS_LAYOUT_NHWC;
    c->weight_layout = PS_WEIGHTS_KCRS;
}

void ps_desc_init_gemm(ps_desc *desc)
{
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->struct_size = sizeof *desc;
    desc->kind = PS_OP_GEMM;
    desc->u.gemm.order = PS_COL_MAJOR;
    desc->u.gemm.alpha = 1.0f;
    desc->u.gemm.beta = 0.0f;
}

/* Largest element count any buffer may have: its byte size must fit in
 * ptrdiff_t and leave room for offsets computed in int64. */
#define PS_MAX_ELEMS (INT64_MAX / 16)

static ps_status check_positive(const char *name, int64_t v)
{
    if (v <= 0) return ps_error(PS_ERR_INVALID_ARG, "conv: %s must be >= 1 (got %lld)", name, (long long)v);
    return PS_SUCCESS;
}

static ps_status product_ok(const char *what, const int64_t *f, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (!ps_mul_ok(p, f[i], &p) || p > PS_MAX_ELEMS)
            return ps_error(PS_ERR_OVERFLOW, "%s: buffer size overflows", what);
    return PS_SUCCESS;
}

/* Checks conv c and derives its canonical shape into *s. */
static ps_status validate_conv(const ps_conv_desc *c, ps_conv_shape *s)
{
    ps_status st;
    const struct { const char *n; int64_t v; } pos[] = {
        {"N", c->N}, {"C", c->C}, {"K", c->K}, {"H", c->H}, {"W", c->W}, {"R", c->R}, {"S", c->S},
        {"stride_h", c->stride_h}, {"stride_w", c->stride_w},
        {"dilation_h", c->dilation_h}, {"dilation_w", c->dilation_w}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if ((st = check_positive(pos[i].n, pos[i].v))) return st;
    const struct { const char *n; int64_t v; } pads[] = {
        {"pad_top", c->pad_top}, {"pad_bottom", c->pad_bottom}, {"pad_left", c->pad_left}, {"pad_right", c->pad_right}};
    for (size_t i = 0; i < 4; i++)
        if (pads[i].v < 0) return ps_error(PS_ERR_INVALID_ARG, "conv: %s must be >= 0 (got %lld)", pads[i].n, (long long)pads[i].v);
    /* Keep every intermediate of the geometry far from overflow. */
    const int64_t lim = (int64_t)1 << 31;
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v >= lim && i < 7) return ps_error(PS_ERR_OVERFLOW, "conv: %s = %lld is too large (limit 2^31-1)", pos[i].n, (long long)pos[i].v);
    for (size_t i = 7; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v >= lim) return ps_error(PS_ERR_INVALID_ARG, "conv: %s = %lld is too large", pos[i].n, (long long)pos[i].v);
    for (size_t i = 0; i < 4; i++)
        if (pads[i].v >= lim) return ps_error(PS_ERR_INVALID_ARG, "conv: %s = %lld is too large", pads[i].n, (long long)pads[i].v);
    int64_t reff = c->dilation_h * (c->R - 1) + 1, seff = c->dilation_w * (c->S - 1) + 1;
    if (c->pad_top >= reff || c->pad_bottom >= reff)
        return ps_error(PS_ERR_INVALID_ARG, "conv: vertical padding (%lld, %lld) must be smaller than the dilated filter height %lld",
                        (long long)c->pad_top, (long long)c->pad_bottom, (long long)reff);
    if (c->pad_left >= seff || c->pad_right >= seff)
        return ps_error(PS_ERR_INVALID_ARG, "conv: horizontal padding (%lld, %lld) must be smaller than the dilated filter width %lld",
                        (long long)c->pad_left, (long long)c->pad_right, (long long)seff);
    if (c->H + c->pad_top + c->pad_bottom < reff || c->W + c->pad_left + c->pad_right < seff)
        return ps_error(PS_ERR_INVALID_ARG, "conv: empty output: padded input %lldx%lld is smaller than the dilated filter %lldx%lld",
                        (long long)(c->H + c->pad_top + c->pad_bottom), (long long)(c->W + c->pad_left + c->pad_right),
                        (long long)reff, (long long)seff);
    if (c->layout != PS_LAYOUT_NHWC && c->layout != PS_LAYOUT_NCHW)
        return ps_error(PS_ERR_INVALID_ARG, "conv: unknown activation layout %d", (int)c->layout);
    if (c->weight_layout != PS_WEIGHTS_KCRS && c->weight_layout != PS_WEIGHTS_KRSC && c->weight_layout != PS_WEIGHTS_RSCK)
        return ps_error(PS_ERR_INVALID_ARG, "conv: unknown weight layout %d", (int)c->weight_layout);
    if (c->post_ops & ~(PS_POST_BIAS | PS_POST_RELU | PS_POST_RELU6 | PS_POST_SUM))
        return ps_error(PS_ERR_INVALID_ARG, "conv: unknown post_ops bits 0x%x",
                        c->post_ops & ~(PS_POST_BIAS | PS_POST_RELU | PS_POST_RELU6 | PS_POST_SUM));
    if ((c->post_ops & PS_POST_SUM) && c->layout != PS_LAYOUT_NHWC)
        return ps_error(PS_ERR_UNSUPPORTED, "conv: PS_POST_SUM needs NHWC activations");
    if ((c->post_ops & PS_POST_RELU) && (c->post_ops & PS_POST_RELU6))
        return ps_error(PS_ERR_INVALID_ARG, "conv: post_ops has both PS_POST_RELU and PS_POST_RELU6");
    if (c->dst_pixel_stride < 0 || (c->dst_pixel_stride > 0 && c->dst_pixel_stride < c->K))
        return ps_error(PS_ERR_INVALID_ARG, "conv: dst_pixel_stride %lld is smaller than K = %lld (0: K, tight)",
                        (long long)c->dst_pixel_stride, (long long)c->K);
    if (c->dst_pixel_stride >= lim)
        return ps_error(PS_ERR_OVERFLOW, "conv: dst_pixel_stride = %lld is too large (limit 2^31-1)", (long long)c->dst_pixel_stride);
    if (c->dst_pixel_stride > c->K && c->layout != PS_LAYOUT_NHWC)
        return ps_error(PS_ERR_UNSUPPORTED, "conv: dst_pixel_stride needs NHWC activations");
    ps_conv_shape_of(c, s);
    const int64_t src[] = {s->N, s->C, s->H, s->W}, dst[] = {s->N, s->ldo, s->OH, s->OW}, wei[] = {s->K, s->C, s->R, s->S};
    if ((st = product_ok("conv src", src, 4)) || (st = product_ok("conv dst", dst, 4)) || (st = product_ok("conv weights", wei, 4)))
        return st;
    return PS_SUCCESS;
}

static ps_status validate_gemm(const ps_gemm_desc *g)
{
    if (g->M <= 0 || g->N <= 0 || g->K <= 0)
        return ps_error(PS_ERR_INVALID_ARG, "gemm: M, N, K must be >= 1 (got %lld, %lld, %lld)",
                        (long long)g->M, (long long)g->N, (long long)g->K);
    const int64_t lim = (int64_t)1 << 40;
    if (g->M >= lim || g->N >= lim || g->K >= lim)
        return ps_error(PS_ERR_OVERFLOW, "gemm: sizes too large");
    if (g->order != PS_COL_MAJOR && g->order != PS_ROW_MAJOR)
        return ps_error(PS_ERR_INVALID_ARG, "gemm: unknown matrix order %d", (int)g->order);
    if ((g->trans_a != 0 && g->trans_a != 1) || (g->trans_b != 0 && g->trans_b != 1))
        return ps_error(PS_ERR_INVALID_ARG, "gemm: trans_a/trans_b must be 0 or 1 (got %d, %d)", g->trans_a, g->trans_b);
    if (!isfinite(g->alpha) || !isfinite(g->beta))
        return ps_error(PS_ERR_INVALID_ARG, "gemm: alpha and beta must be finite");
    /* Stored shapes (rows x cols in the given order) and their minimum ld. */
    int col = g->order == PS_COL_MAJOR;
    int64_t a_rows = g->trans_a ? g->K : g->M, a_cols = g->trans_a ? g->M : g->K;
    int64_t b_rows = g->trans_b ? g->N : g->K, b_cols = g->trans_b ? g->K : g->N;
    const struct { const char *n; int64_t ld, rows, cols; } m[] = {
        {"lda", g->lda, a_rows, a_cols}, {"ldb", g->ldb, b_rows, b_cols}, {"ldc", g->ldc, g->M, g->N}};
    for (int i = 0; i < 3; i++) {
        int64_t min_ld = col ? m[i].rows : m[i].cols, other = col ? m[i].cols : m[i].rows;
        if (m[i].ld < 0 || (m[i].ld != 0 && m[i].ld < min_ld))
            return ps_error(PS_ERR_INVALID_ARG, "gemm: %s = %lld is smaller than the %s %lld",
                            m[i].n, (long long)m[i].ld, col ? "row count" : "column count", (long long)min_ld);
        int64_t ld = m[i].ld ? m[i].ld : min_ld, elems;
        if (ld >= lim || !ps_mul_ok(ld, other, &elems) || elems > PS_MAX_ELEMS)
            return ps_error(PS_ERR_OVERFLOW, "gemm: matrix with %s = %lld overflows", m[i].n, (long long)ld);
    }
    return PS_SUCCESS;
}

ps_status ps_problem_of(const ps_desc *desc, ps_problem *p)
{
    if (!desc) return ps_error(PS_ERR_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof *desc)
        return ps_error(PS_ERR_INVALID_ARG, "desc.struct_size is %zu, expected %zu: initialise with ps_desc_init_conv/ps_desc_init_gemm",
                        desc->struct_size, sizeof *desc);
    ps_problem q;
    memset(&q, 0, sizeof q);
    ps_status st;
    switch (desc->kind) {
    case PS_OP_CONV_FWD:
        if ((st = validate_conv(&desc->u.conv, &q.conv))) return st;
        break;
    case PS_OP_GEMM:
        if ((st = validate_gemm(&desc->u.gemm))) return st;
        ps_gemm_shape_of(&desc->u.gemm, &q.gemm);
        break;
    default: return ps_error(PS_ERR_INVALID_ARG, "desc.kind %d is not a known operation", (int)desc->kind);
    }
    q.desc = *desc;
    *p = q;
    return PS_SUCCESS;
}

ps_status ps_desc_validate(const ps_desc *desc)
{
    ps_problem p;
    return ps_problem_of(desc, &p);
}

void ps_conv_shape_of(const ps_conv_desc *d, ps_conv_shape *s)
{
    s->N = d->N; s->C = d->C; s->K = d->K; s->H = d->H; s->W = d->W; s->R = d->R; s->S = d->S;
    s->sh = d->stride_h; s->sw = d->stride_w; s->pt = d->pad_top; s->pl = d->pad_left;
    s->ldo = d->dst_pixel_stride > 0 ? d->dst_pixel_stride : d->K;
    s->dh = d->dilation_h; s->dw = d->dilation_w;
    ps_conv_output_dims(d, &s->OH, &s->OW);
    s->src_H = d->H; s->src_W = d->W;
    s->sub_h = s->sub_w = 1;
    s->padded_copy = 0;
    s->copy_pl = 0;
    const int unpadded_1x1 = d->R == 1 && d->S == 1 && d->pad_top == 0 && d->pad_bottom == 0 && d->pad_left == 0 &&
                             d->pad_right == 0;
    if (unpadded_1x1 && (d->stride_h > 1 || d->stride_w > 1) && s->OW < PS_SUBSAMPLE_MAX_OW && d->K >= PS_SUBSAMPLE_MIN_K) {
        /* Pixel (y, x) of the subsampled copy is input pixel (y * sh, x * sw):
         * a stride-1 1x1 conv over an OH x OW image (flattened below). */
        s->sub_h = d->stride_h; s->sub_w = d->stride_w;
        s->H = s->OH; s->W = s->OW;
        s->sh = s->sw = 1;
    }
    if (unpadded_1x1 && s->sh == 1 && s->sw == 1) {
        /* A 1x1, stride-1, unpadded conv maps output pixel p to input pixel p:
         * in NHWC the whole image is one row, so microkernels may span
         * several output rows (wider calls on small images). */
        s->W = s->OW = s->H * s->W;
        s->H = s->OH = 1;
    }
}

void ps_conv_output_dims(const ps_conv_desc *d, int64_t *OH, int64_t *OW)
{
    *OH = (d->H + d->pad_top + d->pad_bottom - d->dilation_h * (d->R - 1) - 1) / d->stride_h + 1;
    *OW = (d->W + d->pad_left + d->pad_right - d->dilation_w * (d->S - 1) - 1) / d->stride_w + 1;
}

void ps_gemm_shape_of(const ps_gemm_desc *d, ps_gemm_shape *s)
{
    int col = d->order == PS_COL_MAJOR;
    int64_t a_rows = d->trans_a ? d->K : d->M, a_cols = d->trans_a ? d->M : d->K;
    int64_t b_rows = d->trans_b ? d->N : d->K, b_cols = d->trans_b ? d->K : d->N;
    int64_t lda = d->lda ? d->lda : (col ? a_rows : a_cols);
    int64_t ldb = d->ldb ? d->ldb : (col ? b_rows : b_cols);
    int64_t ldc = d->ldc ? d->ldc : (col ? d->M : d->N);
    s->alpha = d->alpha; s->beta = d->beta; s->K = d->K; s->ldc = ldc;
    if (col) {
        s->M = d->M; s->N = d->N; s->lda = lda; s->ldb = ldb;
        s->trans_a = d->trans_a; s->trans_b = d->trans_b; s->swap = 0;
    } else {
        /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
         * the stored row-major op(B) read column-major is op(B)^T. */
        s->M = d->N; s->N = d->M; s->lda = ldb; s->ldb = lda;
        s->trans_a = d->trans_b; s->trans_b = d->trans_a; s->swap = 1;
    }
}

ps_status ps_conv_output_size(const ps_desc *desc, int64_t *OH, int64_t *OW)
{
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
    if (desc->kind != PS_OP_CONV_FWD) return ps_error(PS_ERR_INVALID_ARG, "ps_conv_output_size: not a conv descriptor");
    if (!OH || !OW) return ps_error(PS_ERR_NULL_POINTER, "ps_conv_output_size: OH/OW is NULL");
    ps_conv_output_dims(&desc->u.conv, OH, OW);
    return PS_SUCCESS;
}

double ps_desc_flops(const ps_desc *desc)
{
    if (!desc || desc->struct_size != sizeof *desc) return 0.0;
    if (desc->kind == PS_OP_GEMM) {
        const ps_gemm_desc *g = &desc->u.gemm;
        return 2.0 * (double)g->M * (double)g->N * (double)g->K;
    }
    if (desc->kind == PS_OP_CONV_FWD) {
        ps_conv_shape s;
        ps_conv_shape_of(&desc->u.conv, &s);
        return 2.0 * s.N * s.K * s.C * s.OH * s.OW * s.R * s.S;
    }
    return 0.0;
}

int64_t ps_conv_src_elems(const ps_conv_shape *s) { return s->N * s->C * s->src_H * s->src_W; }
int64_t ps_conv_dst_elems(const ps_conv_shape *s) { return s->N * s->K * s->OH * s->OW; }
int64_t ps_conv_weight_elems(const ps_conv_shape *s) { return s->K * s->C * s->R * s->S; }
