/* polysci CLI — the benchmark pipelines (pipelines.h). */
#include "pipelines.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const cli_pipeline_names[CLI_N_PIPELINES] = {"harris", "unsharp", "unsharp_pm", "blur3x3", "laplacian"};

#define TRY(call)                                  \
    do {                                           \
        ps_status st_ = (call);                    \
        if (st_) return st_;                       \
    } while (0)

static ps_status stencil(ps_graph *g, const char *name, ps_tensor in, ps_boundary bd, int sy, int sx, int n,
                         const int *dy, const int *dx, const float *w, ps_tensor *out)
{
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.boundary = bd;
    st.stride_h = sy;
    st.stride_w = sx;
    st.n_taps = n;
    st.dy = dy;
    st.dx = dx;
    st.weights = w;
    return ps_graph_add_stencil(g, name, &st, out);
}

/* A 1-D stencil of n taps centred on 0, along y (vertical) or x. */
static ps_status line(ps_graph *g, const char *name, ps_tensor in, int vertical, int stride, int n, const float *w,
                      ps_tensor *out)
{
    int off[16], zero[16] = {0};
    for (int i = 0; i < n; i++) off[i] = i - n / 2;
    return stencil(g, name, in, PS_BOUNDARY_CLAMP, vertical ? stride : 1, vertical ? 1 : stride, n, vertical ? off : zero,
                   vertical ? zero : off, w, out);
}

static ps_expr *in_(int i) { return ps_expr_input(i); }
static ps_expr *k_(float v) { return ps_expr_const(v); }
static ps_expr *bin(ps_expr_op op, ps_expr *a, ps_expr *b) { return ps_expr_binary(op, a, b); }

static ps_status pointwise(ps_graph *g, const char *name, ps_expr *e, int n, const ps_tensor *in, ps_tensor *out)
{
    ps_status st = ps_graph_add_pointwise(g, name, e, n, in, out);
    ps_expr_free(e);
    return st;
}

static const float gray_w[3] = {0.299f, 0.587f, 0.114f};

static ps_status harris(ps_graph *g, ps_tensor in, ps_tensor *out)
{
    ps_tensor gray, ix, iy, ixx, iyy, ixy, sxx, syy, sxy;
    TRY(ps_graph_add_channel_mix(g, "gray", in, 1, gray_w, NULL, &gray));
    const float a = -1.0f / 12, b = 1.0f / 12, c = -2.0f / 12, d = 2.0f / 12;
    const int ydy[6] = {-1, 1, -1, 1, -1, 1}, ydx[6] = {-1, -1, 0, 0, 1, 1};
    const float yw[6] = {a, b, c, d, a, b};
    TRY(stencil(g, "Iy", gray, PS_BOUNDARY_VALID, 1, 1, 6, ydy, ydx, yw, &iy));
    const int xdy[6] = {-1, -1, 0, 0, 1, 1}, xdx[6] = {-1, 1, -1, 1, -1, 1};
    const float xw[6] = {a, b, c, d, a, b};
    TRY(stencil(g, "Ix", gray, PS_BOUNDARY_VALID, 1, 1, 6, xdy, xdx, xw, &ix));
    ps_tensor p2[2];
    p2[0] = ix;
    TRY(pointwise(g, "Ixx", bin(PS_EXPR_MUL, in_(0), in_(0)), 1, p2, &ixx));
    p2[0] = iy;
    TRY(pointwise(g, "Iyy", bin(PS_EXPR_MUL, in_(0), in_(0)), 1, p2, &iyy));
    p2[0] = ix;
    p2[1] = iy;
    TRY(pointwise(g, "Ixy", bin(PS_EXPR_MUL, in_(0), in_(1)), 2, p2, &ixy));
    int bdy[9], bdx[9];
    for (int i = 0; i < 9; i++) {
        bdx[i] = i / 3 - 1;
        bdy[i] = i % 3 - 1;
    }
    TRY(stencil(g, "Sxx", ixx, PS_BOUNDARY_VALID, 1, 1, 9, bdy, bdx, NULL, &sxx));
    TRY(stencil(g, "Syy", iyy, PS_BOUNDARY_VALID, 1, 1, 9, bdy, bdx, NULL, &syy));
    TRY(stencil(g, "Sxy", ixy, PS_BOUNDARY_VALID, 1, 1, 9, bdy, bdx, NULL, &sxy));
    ps_tensor s3[3] = {sxx, syy, sxy}, det, trace;
    TRY(pointwise(g, "det", bin(PS_EXPR_SUB, bin(PS_EXPR_MUL, in_(0), in_(1)), bin(PS_EXPR_MUL, in_(2), in_(2))), 3, s3,
                  &det));
    TRY(pointwise(g, "trace", bin(PS_EXPR_ADD, in_(0), in_(1)), 2, s3, &trace));
    ps_tensor dt[2] = {det, trace};
    TRY(pointwise(g, "output",
                  bin(PS_EXPR_SUB, in_(0), bin(PS_EXPR_MUL, bin(PS_EXPR_MUL, k_(0.04f), in_(1)), in_(1))), 2, dt, out));
    TRY(ps_graph_mark_output(g, *out, PS_LAYOUT_NCHW));
    ps_tensor_info info = {.struct_size = sizeof info};
    TRY(ps_graph_tensor_info(g, ps_graph_input(g, 0), &info));
    return ps_graph_set_output_region(g, *out, 3, 3, info.h - 6, info.w - 6);
}

static ps_status unsharp(ps_graph *g, ps_tensor in, ps_tensor *out)
{
    /* Halide's apps/unsharp: kernel(x) = exp(-x^2 / (2 sigma^2)) / (sqrt(2 pi) sigma) in f32. */
    const float sigma = 1.5f;
    float k[4], w[7];
    for (int i = 0; i < 4; i++)
        k[i] = expf(-(float)(i * i) / (2.0f * sigma * sigma)) / (float)(sqrt(2.0 * 3.14159265358979310000) * sigma);
    for (int i = 0; i < 7; i++) w[i] = k[i < 3 ? 3 - i : i - 3];
    ps_tensor gray, by, bx;
    TRY(ps_graph_add_channel_mix(g, "gray", in, 1, gray_w, NULL, &gray));
    TRY(line(g, "blur_y", gray, 1, 1, 7, w, &by));
    TRY(line(g, "blur_x", by, 0, 1, 7, w, &bx));
    ps_tensor t2[2] = {gray, bx}, sharpen, ratio;
    TRY(pointwise(g, "sharpen", bin(PS_EXPR_SUB, bin(PS_EXPR_MUL, k_(2.0f), in_(0)), in_(1)), 2, t2, &sharpen));
    ps_tensor t3[2] = {sharpen, gray};
    TRY(pointwise(g, "ratio", bin(PS_EXPR_DIV, in_(0), in_(1)), 2, t3, &ratio));
    ps_tensor t4[2] = {ratio, in};
    TRY(pointwise(g, "output", bin(PS_EXPR_MUL, in_(0), in_(1)), 2, t4, out));
    return ps_graph_mark_output(g, *out, PS_LAYOUT_NCHW);
}

static const float binomial5[5] = {1.0f / 16, 4.0f / 16, 6.0f / 16, 4.0f / 16, 1.0f / 16};

static ps_status unsharp_pm(ps_graph *g, ps_tensor in, ps_tensor *out)
{
    const float weight = 3.0f, threshold = 0.001f;
    ps_tensor by, bx, sharpen;
    TRY(line(g, "blur_y", in, 1, 1, 5, binomial5, &by));
    TRY(line(g, "blur_x", by, 0, 1, 5, binomial5, &bx));
    ps_tensor t[2] = {in, bx};
    TRY(pointwise(g, "sharpen",
                  bin(PS_EXPR_SUB, bin(PS_EXPR_MUL, in_(0), k_(1.0f + weight)), bin(PS_EXPR_MUL, in_(1), k_(weight))), 2,
                  t, &sharpen));
    ps_tensor t3[3] = {in, bx, sharpen};
    ps_expr *cond = bin(PS_EXPR_LT, ps_expr_unary(PS_EXPR_ABS, bin(PS_EXPR_SUB, in_(0), in_(1))), k_(threshold));
    TRY(pointwise(g, "mask", ps_expr_select(cond, in_(0), in_(2)), 3, t3, out));
    return ps_graph_mark_output(g, *out, PS_LAYOUT_NCHW);
}

static ps_status blur3x3(ps_graph *g, ps_tensor in, ps_tensor *out)
{
    const float w[3] = {1.0f / 3, 1.0f / 3, 1.0f / 3};
    ps_tensor bx;
    TRY(line(g, "blur_x", in, 0, 1, 3, w, &bx));
    TRY(line(g, "blur_y", bx, 1, 1, 3, w, out));
    return ps_graph_mark_output(g, *out, PS_LAYOUT_NCHW);
}

static ps_status laplacian(ps_graph *g, ps_tensor in, ps_tensor *out)
{
    enum { LEVELS = 4 };
    const float gain[LEVELS - 1] = {1.8f, 1.4f, 1.2f};
    ps_tensor gl[LEVELS], r;
    char name[32];
    gl[0] = in;
    for (int i = 0; i + 1 < LEVELS; i++) {
        ps_tensor dx;
        snprintf(name, sizeof name, "down_x%d", i + 1);
        TRY(line(g, name, gl[i], 0, 2, 5, binomial5, &dx));
        snprintf(name, sizeof name, "g%d", i + 1);
        TRY(line(g, name, dx, 1, 2, 5, binomial5, &gl[i + 1]));
    }
    r = gl[LEVELS - 1];
    for (int i = LEVELS - 2; i >= 0; i--) {
        ps_tensor ug, ur;
        snprintf(name, sizeof name, "up_g%d", i + 1);
        TRY(ps_graph_add_resample(g, name, gl[i + 1], PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_CLAMP, &ug));
        snprintf(name, sizeof name, "up_r%d", i + 1);
        TRY(ps_graph_add_resample(g, name, r, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_CLAMP, &ur));
        ps_tensor t[3] = {gl[i], ug, ur};
        snprintf(name, sizeof name, "r%d", i);
        /* r(i) = gain (g(i) - up2(g(i+1))) + up2(r(i+1)) */
        TRY(pointwise(g, name, bin(PS_EXPR_ADD, bin(PS_EXPR_MUL, k_(gain[i]), bin(PS_EXPR_SUB, in_(0), in_(1))), in_(2)), 3,
                      t, &r));
    }
    *out = r;
    return ps_graph_mark_output(g, *out, PS_LAYOUT_NCHW);
}

ps_status cli_pipeline_build(const char *name, int64_t n, int64_t h, int64_t w, ps_graph **graph)
{
    *graph = NULL;
    ps_status (*build)(ps_graph *, ps_tensor, ps_tensor *) = NULL;
    if (!strcmp(name, "harris")) build = harris;
    else if (!strcmp(name, "unsharp")) build = unsharp;
    else if (!strcmp(name, "unsharp_pm")) build = unsharp_pm;
    else if (!strcmp(name, "blur3x3")) build = blur3x3;
    else if (!strcmp(name, "laplacian")) build = laplacian;
    else return PS_ERR_INVALID_ARG;
    ps_graph *g;
    ps_status st = ps_graph_create(&g);
    if (st) return st;
    ps_tensor in, out;
    st = ps_graph_add_input(g, "input", n, h, w, 3, PS_LAYOUT_NCHW, &in);
    if (!st) st = build(g, in, &out);
    if (st) {
        ps_graph_destroy(g);
        return st;
    }
    *graph = g;
    return PS_SUCCESS;
}
