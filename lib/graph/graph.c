/* Building and inspecting stage graphs (include/polysci/graph.h). Every
 * stage is validated completely before it is appended, so a failed call
 * leaves the graph as it was. */
#include "graph/graph_impl.h"
#include "core/intmath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Largest extent of one dimension: sizes, coordinates and the products the
 * planner forms (rows x columns x channels x images) stay far from 2^63. */
#define PS_GRAPH_DIM_MAX ((int64_t)1 << 30)
#define PS_GRAPH_ELEMS_MAX ((int64_t)1 << 40)
/* Every domain lies inside [-2^40, 2^40) in both coordinates: offsets,
 * strides and repeated upsampling then stay far from int64's ends in every
 * computation the planner makes on them. */
#define PS_GRAPH_COORD_MAX ((int64_t)1 << 40)

static int64_t ceil_div(int64_t a, int64_t b) { return -ps_floor_div(-a, b); }

ps_status ps_graph_create(ps_graph **graph)
{
    if (!graph) return ps_error(PS_ERR_NULL_POINTER, "ps_graph_create: graph is NULL");
    *graph = calloc(1, sizeof **graph);
    if (!*graph) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_create: out of memory");
    (*graph)->hash[0] = 0xcbf29ce484222325ull;
    (*graph)->hash[1] = 0x243F6A8885A308D3ull;
    return PS_SUCCESS;
}

void ps_node_release(ps_node *nd)
{
    free(nd->dy);
    free(nd->dx);
    free(nd->w);
    free(nd->mix_w);
    free(nd->bias);
    ps_expr_free(nd->expr);
}


void ps_graph_destroy(ps_graph *graph)
{
    if (!graph) return;
    for (int i = 0; i < graph->n; i++) ps_node_release(&graph->nodes[i]);
    free(graph->nodes);
    free(graph);
}

void ps_stencil_init(ps_stencil *st)
{
    if (!st) return;
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
    st->input = -1;
    st->boundary = PS_BOUNDARY_CLAMP;
    st->reduce = PS_REDUCE_SUM;
    st->stride_h = st->stride_w = 1;
}

void ps_stencil_extent(const ps_node *s, int *dy_min, int *dy_max, int *dx_min, int *dx_max)
{
    *dy_min = *dy_max = s->dy[0];
    *dx_min = *dx_max = s->dx[0];
    for (int t = 1; t < s->n_taps; t++) {
        if (s->dy[t] < *dy_min) *dy_min = s->dy[t];
        if (s->dy[t] > *dy_max) *dy_max = s->dy[t];
        if (s->dx[t] < *dx_min) *dx_min = s->dx[t];
        if (s->dx[t] > *dx_max) *dx_max = s->dx[t];
    }
}

/* Checks the common arguments of an add call and prepares the new node
 * (not yet appended: append() does that once everything is valid). */
ps_status ps_node_begin(ps_graph *g, const char *who, const char *name, ps_tensor *out, ps_node *nd)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "%s: out is NULL", who);
    *out = -1;
    if (!g) return ps_error(PS_ERR_NULL_POINTER, "%s: graph is NULL", who);
    if (g->n >= PS_GRAPH_MAX_TENSORS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: the graph already has %d tensors (the most)", who, PS_GRAPH_MAX_TENSORS);
    memset(nd, 0, sizeof *nd);
    nd->output_index = -1;
    nd->boundary = PS_BOUNDARY_CLAMP;
    if (name) {
        size_t len = strlen(name);
        if (len == 0 || len > PS_GRAPH_NAME_MAX)
            return ps_error(PS_ERR_INVALID_ARG, "%s: name must have 1..%d bytes (got %zu)", who, PS_GRAPH_NAME_MAX, len);
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)name[i] < 0x20 || name[i] == ',' || name[i] == '"')
                return ps_error(PS_ERR_INVALID_ARG, "%s: name \"%s\" has a control character, comma or quote", who, name);
        for (int i = 0; i < g->n; i++)
            if (strcmp(g->nodes[i].name, name) == 0)
                return ps_error(PS_ERR_INVALID_ARG, "%s: a tensor named \"%s\" exists already (tensor %d)", who, name, i);
        memcpy(nd->name, name, len + 1);
    } else {
        snprintf(nd->name, sizeof nd->name, "t%d", g->n);
    }
    return PS_SUCCESS;
}

ps_status ps_node_check_tensor(const ps_graph *g, const char *who, const char *what, ps_tensor t)
{
    if (t < 0 || t >= g->n)
        return ps_error(PS_ERR_INVALID_ARG, "%s: %s %d is not a tensor of this graph (0..%d)", who, what, t, g->n - 1);
    return PS_SUCCESS;
}

ps_status ps_node_check_size(const char *who, const ps_node *nd)
{
    if (nd->dom.h < 1 || nd->dom.w < 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\" would have no pixel (%lld x %lld)", who, nd->name,
                        (long long)nd->dom.h, (long long)nd->dom.w);
    if (nd->dom.y0 < -PS_GRAPH_COORD_MAX || nd->dom.x0 < -PS_GRAPH_COORD_MAX ||
        nd->dom.y0 > PS_GRAPH_COORD_MAX - nd->dom.h || nd->dom.x0 > PS_GRAPH_COORD_MAX - nd->dom.w)
        return ps_error(PS_ERR_OVERFLOW, "%s: \"%s\": its domain [%lld, +%lld) x [%lld, +%lld) leaves [-2^40, 2^40)", who,
                        nd->name, (long long)nd->dom.y0, (long long)nd->dom.h, (long long)nd->dom.x0, (long long)nd->dom.w);
    /* each factor bounded before any product is formed */
    if (nd->dom.h > PS_GRAPH_DIM_MAX || nd->dom.w > PS_GRAPH_DIM_MAX || nd->n > PS_GRAPH_DIM_MAX ||
        nd->c > PS_GRAPH_DIM_MAX || nd->n * nd->c > PS_GRAPH_ELEMS_MAX / nd->dom.h ||
        nd->n * nd->c * nd->dom.h > PS_GRAPH_ELEMS_MAX / nd->dom.w)
        return ps_error(PS_ERR_OVERFLOW, "%s: tensor \"%s\" of %lld x %lld x %lld x %lld is too large (at most 2^40 elements)",
                        who, nd->name, (long long)nd->n, (long long)nd->dom.h, (long long)nd->dom.w, (long long)nd->c);
    return PS_SUCCESS;
}

void ps_hash_bytes(uint64_t h[2], const void *data, size_t n)
{
    /* FNV-1a over 64-bit words, and a multiply-rotate hash with other
     * constants: a collision needs both to collide */
    const unsigned char *p = data;
    uint64_t a = h[0], b = h[1];
    while (n) {
        uint64_t w = 0;
        size_t k = n < 8 ? n : 8;
        memcpy(&w, p, k);
        w ^= (uint64_t)k << 56;
        a = (a ^ w) * 0x100000001b3ull;
        b = b + w * 0x9E3779B97F4A7C15ull;
        b = ((b << 31) | (b >> 33)) * 0xBF58476D1CE4E5B9ull;
        p += k;
        n -= k;
    }
    h[0] = a;
    h[1] = b;
}

static void hash_expr(uint64_t h[2], const ps_expr *e)
{
    int32_t head[2] = {e ? (int32_t)e->op : -1, e ? e->index : 0};
    ps_hash_bytes(h, head, sizeof head);
    if (!e) return;
    ps_hash_bytes(h, &e->value, sizeof e->value);
    for (int i = 0; i < ps_expr_arity(e->op); i++) hash_expr(h, e->arg[i]);
}

/* Everything about a node that planning reads (its output marking comes
 * later and is hashed with the plan's key). */
static void hash_node(uint64_t h[2], const ps_node *nd, const ps_graph *g)
{
    int64_t head[] = {nd->kind, nd->n, nd->c, nd->dom.y0, nd->dom.x0, nd->dom.h, nd->dom.w, nd->n_in, nd->boundary,
                      nd->reduce, nd->sy, nd->sx, nd->n_taps, nd->per_channel, nd->affine, nd->dl, nd->in_c,
                      nd->resample, nd->layout, nd->conv_r, nd->conv_s, nd->dil_h, nd->dil_w, nd->pad_t, nd->pad_b,
                      nd->pad_l, nd->pad_r, nd->bias != NULL};
    ps_hash_bytes(h, head, sizeof head);
    ps_hash_bytes(h, nd->name, strlen(nd->name));
    ps_hash_bytes(h, nd->in, (size_t)nd->n_in * sizeof *nd->in);
    if (nd->n_taps > 0) {
        ps_hash_bytes(h, nd->dy, (size_t)nd->n_taps * sizeof *nd->dy);
        ps_hash_bytes(h, nd->dx, (size_t)nd->n_taps * sizeof *nd->dx);
    }
    size_t nw = 0;
    if (nd->kind == PS_NODE_STENCIL) nw = (size_t)nd->n_taps * (nd->per_channel ? (size_t)nd->c : 1);
    if (nd->kind == PS_NODE_CONV) nw = (size_t)nd->c * (size_t)nd->in_c * (size_t)nd->n_taps;
    if (nw) ps_hash_bytes(h, nd->w, nw * sizeof *nd->w);
    if (nd->mix_w) ps_hash_bytes(h, nd->mix_w, (size_t)nd->c * (size_t)g->nodes[nd->in[0]].c * sizeof *nd->mix_w);
    if (nd->bias) ps_hash_bytes(h, nd->bias, (size_t)nd->c * sizeof *nd->bias);
    if (nd->expr) hash_expr(h, nd->expr);
}

ps_status ps_node_append(ps_graph *g, ps_node *nd, ps_tensor *out)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        ps_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            ps_node_release(nd);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "graph: out of memory");
        }
        g->nodes = nodes;
        g->cap = cap;
    }
    g->nodes[g->n] = *nd;
    hash_node(g->hash, &g->nodes[g->n], g);
    *out = g->n++;
    return PS_SUCCESS;
}

ps_status ps_graph_add_input(ps_graph *g, const char *name, int64_t n, int64_t h, int64_t w, int64_t c,
                             ps_act_layout layout, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_input";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (n < 1 || h < 1 || w < 1 || c < 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": n, h, w, c must be >= 1 (got %lld, %lld, %lld, %lld)", who,
                        nd.name, (long long)n, (long long)h, (long long)w, (long long)c);
    if (layout != PS_LAYOUT_NHWC && layout != PS_LAYOUT_NCHW)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown layout %d", who, nd.name, (int)layout);
    nd.kind = PS_NODE_INPUT;
    nd.n = n;
    nd.c = c;
    nd.dom = (ps_box){0, 0, h, w};
    nd.layout = layout;
    if ((st = ps_node_check_size(who, &nd))) return st;
    if ((st = ps_node_append(g, &nd, out))) return st;
    g->inputs[g->n_inputs++] = *out;
    return PS_SUCCESS;
}

/* Rows (or columns) y whose reads stay inside [lo, lo + len) of the input:
 * stride*y + dmin >= lo and stride*y + dmax <= lo + len - 1. */
static void valid_range(int64_t lo, int64_t len, int stride, int dmin, int dmax, int64_t *y0, int64_t *n)
{
    int64_t a = ceil_div(lo - dmin, stride), b = ps_floor_div(lo + len - 1 - dmax, stride);
    *y0 = a;
    *n = b >= a ? b - a + 1 : 0;
}

ps_status ps_graph_add_stencil(ps_graph *g, const char *name, const ps_stencil *sd, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_stencil";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (!sd) return ps_error(PS_ERR_NULL_POINTER, "%s: stencil is NULL", who);
    if (sd->struct_size != sizeof *sd)
        return ps_error(PS_ERR_INVALID_ARG, "%s: struct_size is %zu, expected %zu (use ps_stencil_init)", who,
                        sd->struct_size, sizeof *sd);
    if ((st = ps_node_check_tensor(g, who, "input", sd->input))) return st;
    const ps_node *in = &g->nodes[sd->input];
    if (sd->boundary < PS_BOUNDARY_ZERO || sd->boundary > PS_BOUNDARY_IGNORE)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown boundary %d", who, nd.name, (int)sd->boundary);
    if (sd->reduce < PS_REDUCE_SUM || sd->reduce > PS_REDUCE_MIN)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown reduction %d", who, nd.name, (int)sd->reduce);
    if (sd->stride_h < 1 || sd->stride_w < 1 || sd->stride_h > PS_STENCIL_MAX_STRIDE || sd->stride_w > PS_STENCIL_MAX_STRIDE)
        return ps_error(PS_ERR_UNSUPPORTED, "%s: \"%s\": strides %d x %d unsupported (1..%d)", who, nd.name, sd->stride_h,
                        sd->stride_w, PS_STENCIL_MAX_STRIDE);
    if (sd->n_taps < 1 || sd->n_taps > PS_STENCIL_MAX_TAPS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": n_taps %d out of range (1..%d)", who, nd.name, sd->n_taps,
                        PS_STENCIL_MAX_TAPS);
    if (!sd->dy || !sd->dx) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": dy or dx is NULL", who, nd.name);
    for (int t = 0; t < sd->n_taps; t++)
        if (sd->dy[t] < -PS_GRAPH_DIM_MAX / 4 || sd->dy[t] > PS_GRAPH_DIM_MAX / 4 || sd->dx[t] < -PS_GRAPH_DIM_MAX / 4 ||
            sd->dx[t] > PS_GRAPH_DIM_MAX / 4)
            return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": tap %d offset (%d, %d) out of range", who, nd.name, t,
                            sd->dy[t], sd->dx[t]);
    if (sd->per_channel_weights && !sd->weights)
        return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": per-channel weights need weights", who, nd.name);
    nd.kind = PS_NODE_STENCIL;
    nd.n = in->n;
    nd.c = in->c;
    nd.n_in = 1;
    nd.in[0] = sd->input;
    nd.boundary = sd->boundary;
    nd.reduce = sd->reduce;
    nd.sy = sd->stride_h;
    nd.sx = sd->stride_w;
    nd.n_taps = sd->n_taps;
    nd.per_channel = sd->per_channel_weights ? 1 : 0;
    size_t nw = (size_t)sd->n_taps * (nd.per_channel ? (size_t)in->c : 1);
    if (nd.per_channel && in->c > PS_STENCIL_MAX_TAPS * 64)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": too many per-channel weights", who, nd.name);
    nd.dy = malloc((size_t)sd->n_taps * sizeof *nd.dy);
    nd.dx = malloc((size_t)sd->n_taps * sizeof *nd.dx);
    nd.w = malloc(nw * sizeof *nd.w);
    if (!nd.dy || !nd.dx || !nd.w) {
        ps_node_release(&nd);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
    memcpy(nd.dy, sd->dy, (size_t)sd->n_taps * sizeof *nd.dy);
    memcpy(nd.dx, sd->dx, (size_t)sd->n_taps * sizeof *nd.dx);
    for (size_t i = 0; i < nw; i++) nd.w[i] = sd->weights ? sd->weights[i] : 1.0f;
    /* IGNORE in a max (min) reads -inf (+inf) outside: a weight must keep its sign */
    for (size_t i = 0; nd.boundary == PS_BOUNDARY_IGNORE && nd.reduce != PS_REDUCE_SUM && i < nw; i++)
        if (!(nd.w[i] > 0.0f)) {
            ps_node_release(&nd);
            return ps_error(PS_ERR_UNSUPPORTED,
                            "%s: \"%s\": boundary IGNORE with a max or min reduction needs positive weights (weight %zu "
                            "is %g)",
                            who, nd.name, i, (double)(sd->weights ? sd->weights[i] : 1.0f));
        }
    int dy0, dy1, dx0, dx1;
    ps_stencil_extent(&nd, &dy0, &dy1, &dx0, &dx1);
    if (nd.boundary == PS_BOUNDARY_VALID) {
        valid_range(in->dom.y0, in->dom.h, nd.sy, dy0, dy1, &nd.dom.y0, &nd.dom.h);
        valid_range(in->dom.x0, in->dom.w, nd.sx, dx0, dx1, &nd.dom.x0, &nd.dom.w);
    } else {
        valid_range(in->dom.y0, in->dom.h, nd.sy, 0, 0, &nd.dom.y0, &nd.dom.h);
        valid_range(in->dom.x0, in->dom.w, nd.sx, 0, 0, &nd.dom.x0, &nd.dom.w);
    }
    if (nd.dom.h < 1 || nd.dom.w < 1) {
        ps_node_release(&nd);
        return ps_error(PS_ERR_INVALID_ARG,
                        "%s: \"%s\": no %s: an input of %lld x %lld at (%lld, %lld) read by taps spanning %d x %d at "
                        "strides %d x %d leaves none",
                        who, nd.name, nd.boundary == PS_BOUNDARY_VALID ? "valid pixel (every tap inside)" : "pixel",
                        (long long)in->dom.h, (long long)in->dom.w, (long long)in->dom.y0, (long long)in->dom.x0,
                        dy1 - dy0 + 1, dx1 - dx0 + 1, nd.sy, nd.sx);
    }
    if ((st = ps_node_check_size(who, &nd))) {
        ps_node_release(&nd);
        return st;
    }
    return ps_node_append(g, &nd, out);
}

ps_status ps_graph_add_pointwise(ps_graph *g, const char *name, const ps_expr *expr, int n_inputs,
                                 const ps_tensor *inputs, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_pointwise";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if (!expr) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": expr is NULL (an operand was NULL or out of memory)", who, nd.name);
    if (n_inputs < 1 || n_inputs > PS_POINTWISE_MAX_INPUTS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": n_inputs %d out of range (1..%d)", who, nd.name, n_inputs,
                        PS_POINTWISE_MAX_INPUTS);
    if (!inputs) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": inputs is NULL", who, nd.name);
    int used = ps_expr_max_input(expr);
    if (used >= n_inputs)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": the expression reads input %d of %d", who, nd.name, used, n_inputs);
    int64_t y1 = INT64_MAX, x1 = INT64_MAX;
    nd.dom.y0 = nd.dom.x0 = INT64_MIN;
    nd.c = 1;
    for (int i = 0; i < n_inputs; i++) {
        if ((st = ps_node_check_tensor(g, who, "input", inputs[i]))) return st;
        const ps_node *in = &g->nodes[inputs[i]];
        if (i == 0) nd.n = in->n;
        if (in->n != nd.n)
            return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": input %d (\"%s\") has %lld images, input 0 %lld", who, nd.name,
                            i, in->name, (long long)in->n, (long long)nd.n);
        if (in->c != 1 && nd.c != 1 && in->c != nd.c)
            return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": input %d (\"%s\") has %lld channels, another input %lld (each must have the same or 1)",
                            who, nd.name, i, in->name, (long long)in->c, (long long)nd.c);
        if (in->c > nd.c) nd.c = in->c;
        if (in->dom.y0 > nd.dom.y0) nd.dom.y0 = in->dom.y0;
        if (in->dom.x0 > nd.dom.x0) nd.dom.x0 = in->dom.x0;
        if (in->dom.y0 + in->dom.h < y1) y1 = in->dom.y0 + in->dom.h;
        if (in->dom.x0 + in->dom.w < x1) x1 = in->dom.x0 + in->dom.w;
        nd.in[i] = inputs[i];
    }
    nd.dom.h = y1 - nd.dom.y0;
    nd.dom.w = x1 - nd.dom.x0;
    if (nd.dom.h < 1 || nd.dom.w < 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": the inputs' domains do not intersect", who, nd.name);
    nd.kind = PS_NODE_POINTWISE;
    nd.n_in = n_inputs;
    nd.expr = ps_expr_copy(expr);
    if (!nd.expr) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    return ps_node_append(g, &nd, out);
}

ps_status ps_graph_add_channel_mix(ps_graph *g, const char *name, ps_tensor input, int64_t k, const float *weights,
                                   const float *bias, ps_tensor *out)
{
    static const char who[] = "ps_graph_add_channel_mix";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if ((st = ps_node_check_tensor(g, who, "input", input))) return st;
    if (!weights) return ps_error(PS_ERR_NULL_POINTER, "%s: \"%s\": weights is NULL", who, nd.name);
    const ps_node *in = &g->nodes[input];
    if (k < 1 || k > 65536)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": k %lld out of range (1..65536)", who, nd.name, (long long)k);
    if (in->c > 65536)
        return ps_error(PS_ERR_UNSUPPORTED, "%s: \"%s\": input has %lld channels (at most 65536)", who, nd.name, (long long)in->c);
    nd.kind = PS_NODE_MIX;
    nd.n = in->n;
    nd.c = k;
    nd.dom = in->dom;
    nd.n_in = 1;
    nd.in[0] = input;
    if ((st = ps_node_check_size(who, &nd))) return st;
    size_t nw = (size_t)k * (size_t)in->c;
    nd.mix_w = malloc(nw * sizeof *nd.mix_w);
    nd.bias = bias ? malloc((size_t)k * sizeof *nd.bias) : NULL;
    if (!nd.mix_w || (bias && !nd.bias)) {
        ps_node_release(&nd);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
    memcpy(nd.mix_w, weights, nw * sizeof *nd.mix_w);
    if (bias) memcpy(nd.bias, bias, (size_t)k * sizeof *nd.bias);
    return ps_node_append(g, &nd, out);
}

ps_status ps_graph_add_resample(ps_graph *g, const char *name, ps_tensor input, ps_resample kind, ps_boundary boundary,
                                ps_tensor *out)
{
    static const char who[] = "ps_graph_add_resample";
    ps_node nd;
    ps_status st = ps_node_begin(g, who, name, out, &nd);
    if (st) return st;
    if ((st = ps_node_check_tensor(g, who, "input", input))) return st;
    const ps_node *in = &g->nodes[input];
    if (kind < PS_RESAMPLE_UP2_NEAREST || kind > PS_RESAMPLE_DOWN2_AVERAGE)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown resampling %d", who, nd.name, (int)kind);
    if (boundary != PS_BOUNDARY_ZERO && boundary != PS_BOUNDARY_CLAMP)
        return ps_error(PS_ERR_UNSUPPORTED, "%s: \"%s\": boundary must be ZERO or CLAMP (got %d)", who, nd.name, (int)boundary);
    nd.kind = PS_NODE_RESAMPLE;
    nd.resample = kind;
    nd.boundary = boundary;
    nd.n = in->n;
    nd.c = in->c;
    nd.n_in = 1;
    nd.in[0] = input;
    if (kind == PS_RESAMPLE_DOWN2_AVERAGE) {
        valid_range(in->dom.y0, in->dom.h, 2, 0, 0, &nd.dom.y0, &nd.dom.h);
        valid_range(in->dom.x0, in->dom.w, 2, 0, 0, &nd.dom.x0, &nd.dom.w);
    } else {
        /* inputs lie within +-2^40 (check_size): doubling fits */
        nd.dom = (ps_box){2 * in->dom.y0, 2 * in->dom.x0, 2 * in->dom.h, 2 * in->dom.w};
    }
    if ((st = ps_node_check_size(who, &nd))) return st;
    return ps_node_append(g, &nd, out);
}

ps_status ps_graph_mark_output(ps_graph *g, ps_tensor t, ps_act_layout layout)
{
    static const char who[] = "ps_graph_mark_output";
    if (!g) return ps_error(PS_ERR_NULL_POINTER, "%s: graph is NULL", who);
    ps_status st = ps_node_check_tensor(g, who, "tensor", t);
    if (st) return st;
    ps_node *nd = &g->nodes[t];
    if (nd->kind == PS_NODE_INPUT)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\" is a graph input; an input cannot be an output", who, nd->name);
    if (nd->output_index >= 0)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\" is output %d already", who, nd->name, nd->output_index);
    if (layout != PS_LAYOUT_NHWC && layout != PS_LAYOUT_NCHW)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\": unknown layout %d", who, nd->name, (int)layout);
    nd->layout = layout;
    nd->output_index = g->n_outputs;
    nd->out_region = nd->dom;
    g->outputs[g->n_outputs++] = t;
    return PS_SUCCESS;
}

ps_status ps_graph_set_output_region(ps_graph *g, ps_tensor t, int64_t y0, int64_t x0, int64_t h, int64_t w)
{
    static const char who[] = "ps_graph_set_output_region";
    if (!g) return ps_error(PS_ERR_NULL_POINTER, "%s: graph is NULL", who);
    ps_status st = ps_node_check_tensor(g, who, "tensor", t);
    if (st) return st;
    ps_node *nd = &g->nodes[t];
    if (nd->output_index < 0)
        return ps_error(PS_ERR_INVALID_ARG, "%s: \"%s\" is not an output (ps_graph_mark_output first)", who, nd->name);
    const ps_box *d = &nd->dom;
    if (h < 1 || w < 1 || h > d->h || w > d->w || y0 < d->y0 || x0 < d->x0 || y0 - d->y0 > d->h - h ||
        x0 - d->x0 > d->w - w)
        return ps_error(PS_ERR_INVALID_ARG,
                        "%s: \"%s\": region of %lld x %lld at (%lld, %lld) is not inside the domain of %lld x %lld at (%lld, %lld)",
                        who, nd->name, (long long)h, (long long)w, (long long)y0, (long long)x0, (long long)d->h,
                        (long long)d->w, (long long)d->y0, (long long)d->x0);
    nd->out_region = (ps_box){y0, x0, h, w};
    return PS_SUCCESS;
}

int ps_graph_num_tensors(const ps_graph *g) { return g ? g->n : 0; }
int ps_graph_num_inputs(const ps_graph *g) { return g ? g->n_inputs : 0; }
int ps_graph_num_outputs(const ps_graph *g) { return g ? g->n_outputs : 0; }
ps_tensor ps_graph_input(const ps_graph *g, int i) { return g && i >= 0 && i < g->n_inputs ? g->inputs[i] : -1; }
ps_tensor ps_graph_output(const ps_graph *g, int i) { return g && i >= 0 && i < g->n_outputs ? g->outputs[i] : -1; }

ps_status ps_graph_tensor_info(const ps_graph *g, ps_tensor t, ps_tensor_info *info)
{
    static const char who[] = "ps_graph_tensor_info";
    if (!g || !info) return ps_error(PS_ERR_NULL_POINTER, "%s: graph or info is NULL", who);
    if (info->struct_size != sizeof *info)
        return ps_error(PS_ERR_INVALID_ARG, "%s: info.struct_size is %zu, expected %zu", who, info->struct_size, sizeof *info);
    ps_status st = ps_node_check_tensor(g, who, "tensor", t);
    if (st) return st;
    const ps_node *nd = &g->nodes[t];
    const ps_box *b = nd->output_index >= 0 ? &nd->out_region : &nd->dom;
    info->name = nd->name;
    info->n = nd->n;
    info->h = b->h;
    info->w = b->w;
    info->c = nd->c;
    info->y0 = b->y0;
    info->x0 = b->x0;
    info->is_input = nd->kind == PS_NODE_INPUT;
    info->output_index = nd->output_index;
    info->layout = nd->layout;
    return PS_SUCCESS;
}
