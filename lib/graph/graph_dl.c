/* Building the deep-learning stages of a graph (include/polysci/graph_dl.h).
 * Each becomes a node the planner already knows the geometry of: a dense
 * convolution is a CONV node (taps, strides, a channel reduction), a
 * depthwise convolution, a pooling and a batch normalization are stencils
 * with per-channel (or shared) weights and a bias, and the output domain
 * is the framework's OH x OW from (0, 0), with the taps' offsets carrying
 * the padding. */
#include "graph/graph_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define PS_DL_CHANNELS_MAX 65536
#define PS_DL_DILATION_MAX 64
#define PS_DL_PAD_MAX 4096

void ps_conv_stage_init(ps_conv_stage *cv)
{
    if (!cv) return;
    memset(cv, 0, sizeof *cv);
    cv->struct_size = sizeof *cv;
    cv->input = -1;
    cv->groups = 1;
    cv->stride_h = cv->stride_w = 1;
    cv->dilation_h = cv->dilation_w = 1;
}

void ps_pool_stage_init(ps_pool_stage *pool)
{
    if (!pool) return;
    memset(pool, 0, sizeof *pool);
    pool->struct_size = sizeof *pool;
    pool->input = -1;
    pool->kind = PS_POOL_MAX;
    pool->stride_h = pool->stride_w = 1;
}

/* The taps of an r x s window read at input row in.y0 + sy*y - pad_top +
 * dh*r_ (columns likewise), as offsets from sy*y: tap t = r_ * s + s_. */
static ps_status window_taps(ps_node *nd, const ps_node *in, int r, int s, int dh, int dw, int pt, int pl)
{
    nd->n_taps = r * s;
    nd->dy = malloc((size_t)nd->n_taps * sizeof *nd->dy);
    nd->dx = malloc((size_t)nd->n_taps * sizeof *nd->dx);
    if (!nd->dy || !nd->dx) return PS_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < r; i++)
        for (int j = 0; j < s; j++) {
            nd->dy[i * s + j] = (int)(in->dom.y0 - pt + (int64_t)dh * i);
            nd->dx[i * s + j] = (int)(in->dom.x0 - pl + (int64_t)dw * j);
        }
    return PS_SUCCESS;
}

/* Output pixels along one dimension: floor((len + pads - extent) / stride) + 1,
 * with ceil_mode PyTorch's rounding up (a last window must start inside the
 * input or its leading padding). */
static int64_t out_extent(int64_t len, int pad0, int pad1, int64_t extent, int stride, int ceil_mode)
{
    int64_t span = len + pad0 + pad1 - extent;
    if (span < 0) return 0;
    int64_t o = span / stride + 1;
    if (ceil_mode && span % stride) {
        o++;
        if ((o - 1) * stride >= len + pad0) o--;
    }
    return o;
}

static ps_status finish(ps_graph *g, const char *who, ps_node *nd, ps_tensor *out)
{
    ps_status st = ps_node_check_size(who, nd);
    if (st) {
        ps_node_release(nd);
        return st;
    }
    return ps_node_append(g, nd, out);
}

static ps_status oom(ps_node *nd, const char *who)
{
    ps_node_release(nd);
    return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
}

ps_status ps_graph_add_conv(ps_graph *g, const char *name, const ps_conv_stage *cv, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_conv";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (!cv) return ps_error(PS_ERR_NULL_POINTER, "%s: conv is NULL", who);
    if (cv->struct_size != sizeof *cv)
        return ps_error(PS_ERR_INVALID_ARG, "%s: struct_size is %zu, expected %zu (use ps_conv_stage_init)", who,
                        cv->struct_size, sizeof *cv);
    if ((st = ps_node_check_tensor(g, who, "input", cv->input))) return st;
    const ps_node *in = &g->nodes[cv->input];
    const int64_t C = in->c;
    if (cv->k < 1 || cv->k > PS_DL_CHANNELS_MAX || C > PS_DL_CHANNELS_MAX)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": %lld input and %lld output channels (each 1..%d)", who, nd.name,
                        (long long)C, (long long)cv->k, PS_DL_CHANNELS_MAX);
    int depthwise = cv->groups != 1;
    if (depthwise && (cv->groups != C || cv->k != C))
        return ps_error(PS_ERR_UNSUPPORTED,
                        "%s: \"%s\": groups %lld with %lld input and %lld output channels: only groups 1 (dense) or "
                        "groups = input channels = output channels (depthwise)",
                        who, nd.name, (long long)cv->groups, (long long)C, (long long)cv->k);
    if (cv->r < 1 || cv->s < 1 || cv->r > PS_CONV_MAX_TAPS || cv->s > PS_CONV_MAX_TAPS ||
        cv->r * cv->s > PS_CONV_MAX_TAPS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": filter %d x %d (r, s >= 1, r * s <= %d)", who, nd.name, cv->r,
                        cv->s, PS_CONV_MAX_TAPS);
    if (cv->stride_h < 1 || cv->stride_w < 1 || cv->stride_h > PS_STENCIL_MAX_STRIDE || cv->stride_w > PS_STENCIL_MAX_STRIDE)
        return ps_error(PS_ERR_UNSUPPORTED, "%s: \"%s\": strides %d x %d unsupported (1..%d)", who, nd.name, cv->stride_h,
                        cv->stride_w, PS_STENCIL_MAX_STRIDE);
    if (cv->dilation_h < 1 || cv->dilation_w < 1 || cv->dilation_h > PS_DL_DILATION_MAX ||
        cv->dilation_w > PS_DL_DILATION_MAX)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": dilation %d x %d (1..%d)", who, nd.name, cv->dilation_h,
                        cv->dilation_w, PS_DL_DILATION_MAX);
    const int64_t eh = (int64_t)cv->dilation_h * (cv->r - 1) + 1, ew = (int64_t)cv->dilation_w * (cv->s - 1) + 1;
    if (cv->pad_top < 0 || cv->pad_bottom < 0 || cv->pad_left < 0 || cv->pad_right < 0 || cv->pad_top >= eh ||
        cv->pad_bottom >= eh || cv->pad_left >= ew || cv->pad_right >= ew)
        return ps_error(PS_ERR_INVALID_ARG,
                        "%s: \"%s\": padding %d/%d/%d/%d (top/bottom/left/right): each >= 0 and below the dilated "
                        "filter (%lld x %lld)",
                        who, nd.name, cv->pad_top, cv->pad_bottom, cv->pad_left, cv->pad_right, (long long)eh, (long long)ew);
    if (!cv->weights) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": weights is NULL", who, nd.name);
    int64_t oh = out_extent(in->dom.h, cv->pad_top, cv->pad_bottom, eh, cv->stride_h, 0);
    int64_t ow = out_extent(in->dom.w, cv->pad_left, cv->pad_right, ew, cv->stride_w, 0);
    if (oh < 1 || ow < 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": a %lld x %lld filter (dilated) does not fit the padded input of %lld x %lld",
                        who, nd.name, (long long)eh, (long long)ew, (long long)(in->dom.h + cv->pad_top + cv->pad_bottom),
                        (long long)(in->dom.w + cv->pad_left + cv->pad_right));
    nd.n = in->n;
    nd.c = cv->k;
    nd.dom = (ps_box){0, 0, oh, ow};
    nd.n_in = 1;
    nd.in[0] = cv->input;
    nd.boundary = PS_BOUNDARY_ZERO;
    nd.reduce = PS_REDUCE_SUM;
    nd.sy = cv->stride_h;
    nd.sx = cv->stride_w;
    nd.dl = 1;
    if (window_taps(&nd, in, cv->r, cv->s, cv->dilation_h, cv->dilation_w, cv->pad_top, cv->pad_left)) return oom(&nd, who);
    const size_t taps = (size_t)nd.n_taps;
    if (cv->bias) {
        nd.bias = malloc((size_t)cv->k * sizeof *nd.bias);
        if (!nd.bias) return oom(&nd, who);
        memcpy(nd.bias, cv->bias, (size_t)cv->k * sizeof *nd.bias);
    }
    if (depthwise) {
        /* a stencil with per-channel weights, [t * C + c] */
        nd.kind = PS_NODE_STENCIL;
        nd.per_channel = 1;
        nd.w = malloc(taps * (size_t)C * sizeof *nd.w);
        if (!nd.w) return oom(&nd, who);
        for (int64_t c = 0; c < C; c++)
            for (size_t t = 0; t < taps; t++) nd.w[t * (size_t)C + (size_t)c] = cv->weights[(size_t)c * taps + t];
    } else {
        nd.kind = PS_NODE_CONV;
        nd.in_c = C;
        nd.conv_r = cv->r, nd.conv_s = cv->s, nd.dil_h = cv->dilation_h, nd.dil_w = cv->dilation_w;
        nd.pad_t = cv->pad_top, nd.pad_b = cv->pad_bottom, nd.pad_l = cv->pad_left, nd.pad_r = cv->pad_right;
        size_t nw = (size_t)cv->k * (size_t)C * taps;
        nd.w = malloc(nw * sizeof *nd.w);
        if (!nd.w) return oom(&nd, who);
        memcpy(nd.w, cv->weights, nw * sizeof *nd.w);
    }
    return finish(g, who, &nd, out);
}

ps_status ps_graph_add_pool(ps_graph *g, const char *name, const ps_pool_stage *pool, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_pool";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (!pool) return ps_error(PS_ERR_NULL_POINTER, "%s: pool is NULL", who);
    if (pool->struct_size != sizeof *pool)
        return ps_error(PS_ERR_INVALID_ARG, "%s: struct_size is %zu, expected %zu (use ps_pool_stage_init)", who,
                        pool->struct_size, sizeof *pool);
    if ((st = ps_node_check_tensor(g, who, "input", pool->input))) return st;
    const ps_node *in = &g->nodes[pool->input];
    if (pool->kind != PS_POOL_MAX && pool->kind != PS_POOL_AVG)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown pooling %d", who, nd.name, (int)pool->kind);
    if (pool->r < 1 || pool->s < 1 || pool->r > PS_CONV_MAX_TAPS || pool->s > PS_CONV_MAX_TAPS ||
        pool->r * pool->s > PS_CONV_MAX_TAPS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": window %d x %d (r, s >= 1, r * s <= %d)", who, nd.name, pool->r,
                        pool->s, PS_CONV_MAX_TAPS);
    if (pool->stride_h < 1 || pool->stride_w < 1 || pool->stride_h > PS_STENCIL_MAX_STRIDE ||
        pool->stride_w > PS_STENCIL_MAX_STRIDE)
        return ps_error(PS_ERR_UNSUPPORTED, "%s: \"%s\": strides %d x %d unsupported (1..%d)", who, nd.name,
                        pool->stride_h, pool->stride_w, PS_STENCIL_MAX_STRIDE);
    if (pool->pad_top < 0 || pool->pad_bottom < 0 || pool->pad_left < 0 || pool->pad_right < 0 ||
        pool->pad_top >= pool->r || pool->pad_bottom >= pool->r || pool->pad_left >= pool->s || pool->pad_right >= pool->s)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": padding %d/%d/%d/%d: each >= 0 and below the window", who, nd.name,
                        pool->pad_top, pool->pad_bottom, pool->pad_left, pool->pad_right);
    int64_t oh = out_extent(in->dom.h, pool->pad_top, pool->pad_bottom, pool->r, pool->stride_h, pool->ceil_mode);
    int64_t ow = out_extent(in->dom.w, pool->pad_left, pool->pad_right, pool->s, pool->stride_w, pool->ceil_mode);
    if (oh < 1 || ow < 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": a %d x %d window does not fit the padded input", who, nd.name,
                        pool->r, pool->s);
    if (pool->kind == PS_POOL_AVG && pool->ceil_mode &&
        (oh != out_extent(in->dom.h, pool->pad_top, pool->pad_bottom, pool->r, pool->stride_h, 0) ||
         ow != out_extent(in->dom.w, pool->pad_left, pool->pad_right, pool->s, pool->stride_w, 0)))
        return ps_error(PS_ERR_UNSUPPORTED,
                        "%s: \"%s\": average pooling with ceil_mode adds partial windows (divided by their own size in "
                        "PyTorch): unsupported",
                        who, nd.name);
    nd.kind = PS_NODE_STENCIL;
    nd.n = in->n;
    nd.c = in->c;
    nd.dom = (ps_box){0, 0, oh, ow};
    nd.n_in = 1;
    nd.in[0] = pool->input;
    nd.sy = pool->stride_h;
    nd.sx = pool->stride_w;
    nd.dl = 1;
    nd.reduce = pool->kind == PS_POOL_MAX ? PS_REDUCE_MAX : PS_REDUCE_SUM;
    nd.boundary = pool->kind == PS_POOL_MAX ? PS_BOUNDARY_IGNORE : PS_BOUNDARY_ZERO;
    if (window_taps(&nd, in, pool->r, pool->s, 1, 1, pool->pad_top, pool->pad_left)) return oom(&nd, who);
    nd.w = malloc((size_t)nd.n_taps * sizeof *nd.w);
    if (!nd.w) return oom(&nd, who);
    for (int t = 0; t < nd.n_taps; t++) nd.w[t] = pool->kind == PS_POOL_MAX ? 1.0f : 1.0f / (float)nd.n_taps;
    return finish(g, who, &nd, out);
}

ps_status ps_graph_add_batchnorm(ps_graph *g, const char *name, ps_tensor input, const float *mean, const float *var,
                                 const float *gamma, const float *beta, float eps, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_batchnorm";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if ((st = ps_node_check_tensor(g, who, "input", input))) return st;
    if (!mean || !var) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": mean or var is NULL", who, nd.name);
    const ps_node *in = &g->nodes[input];
    if (!(eps >= 0.0f) || !isfinite(eps))
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": eps %g (must be finite, >= 0)", who, nd.name, (double)eps);
    for (int64_t c = 0; c < in->c; c++)
        if (!(var[c] + eps > 0.0f) || !isfinite(var[c]) || !isfinite(mean[c]))
            return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": channel %lld: mean %g, var %g with eps %g (var + eps must be > 0)",
                            who, nd.name, (long long)c, (double)mean[c], (double)var[c], (double)eps);
    nd.kind = PS_NODE_STENCIL;
    nd.n = in->n;
    nd.c = in->c;
    nd.dom = in->dom;
    nd.n_in = 1;
    nd.in[0] = input;
    nd.sy = nd.sx = 1;
    nd.reduce = PS_REDUCE_SUM;
    nd.boundary = PS_BOUNDARY_ZERO;
    nd.per_channel = 1;
    nd.affine = 1;
    nd.dl = 1;
    nd.n_taps = 1;
    nd.dy = calloc(1, sizeof *nd.dy);
    nd.dx = calloc(1, sizeof *nd.dx);
    nd.w = malloc((size_t)in->c * sizeof *nd.w);
    nd.bias = malloc((size_t)in->c * sizeof *nd.bias);
    if (!nd.dy || !nd.dx || !nd.w || !nd.bias) return oom(&nd, who);
    for (int64_t c = 0; c < in->c; c++) {
        /* in double: the scale of a channel with a tiny variance */
        double scale = (gamma ? gamma[c] : 1.0) / sqrt((double)var[c] + (double)eps);
        nd.w[c] = (float)scale;
        nd.bias[c] = (float)((beta ? beta[c] : 0.0) - (double)mean[c] * scale);
    }
    return finish(g, who, &nd, out);
}

ps_status ps_graph_add_concat(ps_graph *g, const char *name, int n_inputs, const ps_tensor *inputs, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_concat";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (n_inputs < 2 || n_inputs > PS_POINTWISE_MAX_INPUTS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": n_inputs %d out of range (2..%d)", who, nd.name, n_inputs,
                        PS_POINTWISE_MAX_INPUTS);
    if (!inputs) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": inputs is NULL", who, nd.name);
    for (int i = 0; i < n_inputs; i++) {
        if ((st = ps_node_check_tensor(g, who, "input", inputs[i]))) return st;
        const ps_node *in = &g->nodes[inputs[i]], *first = &g->nodes[inputs[0]];
        if (in->n != first->n || memcmp(&in->dom, &first->dom, sizeof in->dom))
            return ps_error(PS_ERR_INVALID_ARG,
                            "%s: \"%s\": input %d (\"%s\") has %lld images of %lld x %lld at (%lld, %lld), input 0 %lld of "
                            "%lld x %lld at (%lld, %lld)",
                            who, nd.name, i, in->name, (long long)in->n, (long long)in->dom.h, (long long)in->dom.w,
                            (long long)in->dom.y0, (long long)in->dom.x0, (long long)first->n, (long long)first->dom.h,
                            (long long)first->dom.w, (long long)first->dom.y0, (long long)first->dom.x0);
        nd.c += in->c;
        nd.in[i] = inputs[i];
    }
    if (nd.c > PS_DL_CHANNELS_MAX)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": %lld channels in all (at most %d)", who, nd.name, (long long)nd.c,
                        PS_DL_CHANNELS_MAX);
    nd.kind = PS_NODE_CONCAT;
    nd.n = g->nodes[inputs[0]].n;
    nd.dom = g->nodes[inputs[0]].dom;
    nd.n_in = n_inputs;
    nd.dl = 1;
    return finish(g, who, &nd, out);
}

ps_status ps_graph_add_global_avg_pool(ps_graph *g, const char *name, ps_tensor input, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_global_avg_pool";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if ((st = ps_node_check_tensor(g, who, "input", input))) return st;
    const ps_node *in = &g->nodes[input];
    nd.kind = PS_NODE_GAP;
    nd.n = in->n;
    nd.c = in->c;
    nd.dom = (ps_box){0, 0, 1, 1};
    nd.n_in = 1;
    nd.in[0] = input;
    nd.dl = 1;
    return finish(g, who, &nd, out);
}
