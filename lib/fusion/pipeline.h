/* Internal: the planner's view of a stage graph.
 *
 * ps_pipeline_build copies a validated ps_graph into a list of stages in
 * topological order, drops stages no output needs, inlines pointwise stages
 * into pointwise consumers (PolyMage's expression inlining, seed 002 Alg. 3,
 * restricted to consumers that read each point once: a stencil consumer
 * would recompute the producer once per tap), and computes each stage's
 * needed region: the part of its domain that outputs and consumers read.
 * Grouping (fusion), tiling and execution all work on this list. */
#ifndef PS_FUSION_PIPELINE_H
#define PS_FUSION_PIPELINE_H

#include <stdint.h>

#include "graph/graph_impl.h"
#include "kernels/kernels.h"

typedef struct ps_pstage {
    ps_node_kind kind;
    char name[PS_GRAPH_NAME_MAX + 1];
    int64_t n, c;
    ps_box dom;              /* where the tensor is defined */
    ps_box need;             /* the part any output or consumer reads (inside dom) */
    int n_in;
    int in[PS_POINTWISE_MAX_INPUTS];   /* producer stages (indices into the pipeline) */
    int bcast[PS_POINTWISE_MAX_INPUTS];/* input j has one channel, broadcast over c */
    int n_cons;
    int *cons;               /* consumer stages */
    ps_boundary boundary;
    /* stencil */
    ps_reduce reduce;
    int sy, sx, n_taps;
    int *dy, *dx;
    float *w;                /* weights per channel: w[ch * n_taps + t] (c == 1 row when shared);
                                conv: per tap a K x C column-major block, w[(t * C + c) * K + k] */
    int per_channel;
    float *pxw;              /* stencil on pixel rows: w[t * c + ch], every channel's (even when shared) */
    float *bias;             /* per output channel, or NULL: stencil, conv, channel mix */
    int affine;              /* a batch normalization (one-tap per-channel stencil) */
    int sum_in;              /* conv: input 1 (same pixels and channels) is added to the output
                                before the clamp: a residual add folded in */
    int act;                 /* conv, stencil: the output clamped to [act_lo, act_hi] as it is
                                computed (a ReLU or ReLU6 stage folded in) */
    float act_lo, act_hi;
    /* conv: the filter as given (the layer planner runs a convolution alone) */
    int conv_r, conv_s, dil_h, dil_w, pad_t, pad_b, pad_l, pad_r;
    /* channel mix */
    int64_t in_c;
    float *mix_w;            /* c x in_c */
    /* resample */
    ps_resample resample;
    /* pointwise */
    ps_expr *expr;
    ps_vprog prog;
    int n_inlined;           /* pointwise stages merged into this one */
    char inlined[192];       /* their names, for describe */
    /* graph inputs and outputs */
    int input_index, output_index;
    ps_act_layout layout;
    ps_box out_region;
    int graph_tensor;        /* the tensor of the user's graph */
    int px;                  /* stored and computed as pixel rows (channels last): the tensors of a
                                graph with deep-learning stages (graph_dl.h) */
    int needless;            /* a stage whose consumers read only outside its domain (boundary
                                ZERO): never computed, read as zeros */
} ps_pstage;

/* Whether the planner computes stage s (not a graph input, not needless). */
static inline int ps_pstage_computed(const ps_pstage *s) { return s->kind != PS_NODE_INPUT && !s->needless; }

typedef struct ps_pipeline {
    int n;
    ps_pstage *st;
    int n_inputs, n_outputs;
    int *input_stage;        /* stage of graph input i */
    int *output_stage;       /* stage of graph output i */
} ps_pipeline;

/* Builds the pipeline of g (validated by the builder). inline_pointwise: 0
 * keeps every stage. On error *out is zeroed and nothing is leaked. */
ps_status ps_pipeline_build(const ps_graph *g, int inline_pointwise, ps_pipeline *out);
void ps_pipeline_release(ps_pipeline *p);

/* A convolution on pixel rows that runs ps_row_kernels.px_small_gemm
 * (bias, residual and clamp in registers) instead of batch-reduce calls
 * per PS_CONV_NB pixels: 1 x 1, column stride 1, few input channels, whole
 * vectors of output channels. */
static inline int ps_pstage_small_gemm(const ps_pstage *s)
{
    return s->kind == PS_NODE_CONV && s->px && s->n_taps == 1 && s->sx == 1 && s->in_c <= PS_SMALL_GEMM_MAX_C &&
           s->c % 16 == 0;
}

/* Stages whose reads are taps at strides: stencils and convolutions. */
static inline int ps_pstage_has_taps(const ps_pstage *s)
{
    return s->kind == PS_NODE_STENCIL || s->kind == PS_NODE_CONV;
}

/* The rows and columns of input j that stage s reads to compute `box`
 * (before any boundary handling: the box may reach outside the input's
 * domain). */
ps_box ps_read_box(const ps_pipeline *p, int s, int j, const ps_box *box);

/* `b` clamped into `dom`: each edge moved to the nearest row/column inside,
 * so a non-empty box stays non-empty (the pixels clamped reads touch). */
ps_box ps_box_clamp(const ps_box *b, const ps_box *dom);
ps_box ps_box_intersect(const ps_box *a, const ps_box *b);
ps_box ps_box_hull(const ps_box *a, const ps_box *b);
static inline int ps_box_empty(const ps_box *b) { return b->h <= 0 || b->w <= 0; }

/* The region of input j that stage s needs for `box`: the read box clamped
 * into the input's domain (CLAMP, VALID) or cut to it (ZERO). */
ps_box ps_input_region(const ps_pipeline *p, int s, int j, const ps_box *box);

/* Floating-point operations one output point of stage s costs (per channel). */
double ps_stage_flops(const ps_pstage *s);

#endif
