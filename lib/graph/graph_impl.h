/* Internal: the stage graph as the user built it (include/polysci/graph.h),
 * validated stage by stage when it is added. Planning copies it into its own
 * stage list (lib/fusion), so a graph can change or die after planning. */
#ifndef PS_GRAPH_IMPL_H
#define PS_GRAPH_IMPL_H

#include <stdint.h>

#include "polysci/graph.h"
#include "polysci/graph_dl.h"

#define PS_POINTWISE_MAX_INPUTS 16

struct ps_expr {
    ps_expr_op op;
    float value;         /* PS_EXPR_CONST */
    int index;           /* PS_EXPR_INPUT */
    struct ps_expr *arg[3];
};

/* Operands an operator takes (0 for leaves), -1 for an unknown op. */
int ps_expr_arity(ps_expr_op op);
/* The operator as ps_expr_to_str prints it: the C operator of arithmetic and
 * comparisons ("+", "<=", ...), else the function's name ("sqrt", "select"). */
const char *ps_expr_op_text(ps_expr_op op);
/* Largest input index the tree uses, -1 if none. */
int ps_expr_max_input(const ps_expr *e);
/* Nodes in the tree. */
int ps_expr_size(const ps_expr *e);
/* __give. A copy of e in which input i becomes a copy of replace[i] when
 * replace && replace[i], else input input_map[i] (input i when !input_map). */
ps_expr *ps_expr_substitute(const ps_expr *e, const int *input_map, ps_expr *const *replace);

/* A rectangle of pixel coordinates: rows [y0, y0 + h), columns [x0, x0 + w). */
typedef struct ps_box {
    int64_t y0, x0, h, w;
} ps_box;

typedef enum ps_node_kind {
    PS_NODE_INPUT = 0,
    PS_NODE_STENCIL,
    PS_NODE_POINTWISE,
    PS_NODE_MIX,
    PS_NODE_RESAMPLE,
    PS_NODE_CONV,      /* dense convolution (graph_dl.h); depthwise ones are stencils */
    PS_NODE_CONCAT,    /* the channels of its inputs, in order */
    PS_NODE_GAP        /* global average pooling: one pixel */
} ps_node_kind;

typedef struct ps_node {
    ps_node_kind kind;
    char name[PS_GRAPH_NAME_MAX + 1];
    int64_t n, c;          /* images, channels */
    ps_box dom;            /* where the tensor is defined */
    int n_in;
    int in[PS_POINTWISE_MAX_INPUTS]; /* producers */
    ps_boundary boundary;  /* stencil, resample: reads outside in[0]'s domain */
    /* stencil */
    ps_reduce reduce;
    int sy, sx;
    int n_taps;
    int *dy, *dx;
    float *w;              /* n_taps, or n_taps * c with per_channel; conv: c x in_c x n_taps (KCRS) */
    int per_channel;
    float *bias;           /* per output channel (c values) or NULL: stencil, mix, conv */
    int affine;            /* a one-tap per-channel stencil from ps_graph_add_batchnorm: foldable
                              into its producer's weights */
    int dl;                /* made by a graph_dl.h call: the graph keeps its tensors channels-last */
    int64_t in_c;          /* conv: input channels */
    int conv_r, conv_s, dil_h, dil_w, pad_t, pad_b, pad_l, pad_r; /* conv: the filter as given */
    /* pointwise */
    ps_expr *expr;
    /* channel mix: c outputs from in[0]'s channels */
    float *mix_w;          /* c * in_c */

    /* resample */
    ps_resample resample;
    /* user memory: inputs and outputs */
    ps_act_layout layout;
    int output_index;      /* -1: not an output */
    ps_box out_region;     /* stored part of an output (its domain unless set) */
} ps_node;

struct ps_graph {
    int n, cap;
    ps_node *nodes;
    int n_inputs, n_outputs;
    int inputs[PS_GRAPH_MAX_TENSORS];
    int outputs[PS_GRAPH_MAX_TENSORS];
    /* Two independent 64-bit hashes of every node as appended (kind, shape,
     * inputs, taps, weights, expressions): with the outputs and the
     * options, the key of the context's graph plan cache. Kept as nodes are
     * added, so a lookup does not re-read megabytes of weights. */
    uint64_t hash[2];
};

/* Folds n bytes into the two hashes. */
void ps_hash_bytes(uint64_t h[2], const void *data, size_t n);

/* Shared by the builders (graph.c, graph_dl.c). ps_node_begin checks the
 * common arguments of an add call and prepares *nd (not yet in the graph);
 * ps_node_append moves it in (and releases it when that fails). */
ps_status ps_node_begin(ps_graph *g, const char *who, const char *name, ps_tensor *out, ps_node *nd);
ps_status ps_node_check_tensor(const ps_graph *g, const char *who, const char *what, ps_tensor t);
/* Domain and element count within the planner's bounds. */
ps_status ps_node_check_size(const char *who, const ps_node *nd);
ps_status ps_node_append(ps_graph *g, ps_node *nd, ps_tensor *out);
void ps_node_release(ps_node *nd);

/* The box hull of the taps' offsets. */
void ps_stencil_extent(const ps_node *s, int *dy_min, int *dy_max, int *dx_min, int *dx_max);

#endif
