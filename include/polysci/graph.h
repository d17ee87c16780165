/* polysci — stage graphs: fused pipelines of stencils, pointwise
 * expressions, channel mixes and resampling over f32 tensors.
 *
 * Build a graph in code (no parsing), plan it once, execute it many times:
 *
 *     ps_graph *g;  ps_graph_create(&g);
 *     ps_tensor in, bx, out;
 *     ps_graph_add_input(g, "in", 1, 2832, 4256, 1, PS_LAYOUT_NCHW, &in);
 *     int dx[3] = {-1, 0, 1}, dy[3] = {0, 0, 0};  float w[3] = {1/3.f, 1/3.f, 1/3.f};
 *     ps_stencil st;  ps_stencil_init(&st);
 *     st.input = in; st.boundary = PS_BOUNDARY_CLAMP; st.n_taps = 3;
 *     st.dy = dy; st.dx = dx; st.weights = w;
 *     ps_graph_add_stencil(g, "bx", &st, &bx);
 *     ... (the vertical pass reads bx the same way) ...
 *     ps_graph_mark_output(g, out, PS_LAYOUT_NCHW);
 *     ps_graph_plan *p;  ps_graph_plan_create(ctx, g, NULL, &p);
 *     ps_graph_execute(p, inputs, outputs, NULL);     (as often as needed)
 *
 * Tensors. Every tensor is N images of H x W pixels with C channels. Graph
 * inputs and outputs live in user memory in NHWC (channels last) or NCHW
 * (planar) layout; the tensors between stages never appear in user memory.
 * A tensor's domain is the rectangle of pixel coordinates where it is
 * defined: [y0, y0 + H) x [x0, x0 + W). Inputs start at (0, 0); a stage that
 * reads only the valid region of its input (PS_BOUNDARY_VALID) has a smaller
 * domain that need not start at 0 (a 3 x 3 valid stencil on a 0-based input
 * starts at 1). Outputs are stored from the corner of their domain (or of
 * the region chosen with ps_graph_set_output_region).
 *
 * The graph is append-only and every stage names tensors that already exist,
 * so a graph is acyclic by construction. Each ps_graph_add_* call validates
 * its stage completely; on error it returns the status with a message
 * (ps_last_error_message), sets *out to -1 (when out is not NULL) and leaves
 * the graph unchanged.
 *
 * Thread safety: a graph may be read (planned) from several threads at once
 * while no thread modifies it. A graph plan is immutable after creation and
 * may be executed from several threads at once with distinct outputs (and
 * workspaces). */
#ifndef POLYSCI_GRAPH_H
#define POLYSCI_GRAPH_H

#include "polysci/export.h"

#include <stddef.h>
#include <stdint.h>
#include "polysci/status.h"
#include "polysci/context.h"
#include "polysci/desc.h"
#include "polysci/expr.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_graph ps_graph;
typedef struct ps_graph_plan ps_graph_plan;

/* A tensor of a graph: its number in creation order (inputs and stages
 * count alike), from 0. */
typedef int ps_tensor;

#define PS_GRAPH_MAX_TENSORS 4096
#define PS_STENCIL_MAX_TAPS 1024
#define PS_STENCIL_MAX_STRIDE 8
#define PS_GRAPH_NAME_MAX 63

/* How a stage answers a read outside its input's domain. */
typedef enum ps_boundary {
    PS_BOUNDARY_ZERO = 0,  /* the value 0 */
    PS_BOUNDARY_CLAMP = 1, /* the nearest pixel of the domain (repeat edge) */
    PS_BOUNDARY_VALID = 2, /* none: the stage is defined only where every read is inside */
    PS_BOUNDARY_IGNORE = 3 /* the read takes no part: 0 in a sum, -inf in a max, +inf in a min
                              (max pooling's padding; a max or min needs positive weights); the
                              domain is that of ZERO */
} ps_boundary;

typedef enum ps_reduce {
    PS_REDUCE_SUM = 0,
    PS_REDUCE_MAX = 1,
    PS_REDUCE_MIN = 2
} ps_reduce;

/* out(n, y, x, c) = reduce over t of  w_t(c) * in(n, sy*y + dy_t, sx*x + dx_t, c).
 * Covers blurs, Sobel, box sums, depthwise convolution (per-channel weights),
 * max/avg pooling and strided downsampling. The domain of out: with ZERO or
 * CLAMP, the pixels y with sy*y inside the input's rows (ceil(H/sy) rows for
 * a 0-based input), and likewise for x; with VALID, the pixels whose every
 * tap is inside. */
typedef struct ps_stencil {
    size_t struct_size;     /* sizeof(ps_stencil); set by ps_stencil_init */
    ps_tensor input;
    ps_boundary boundary;   /* default PS_BOUNDARY_CLAMP */
    ps_reduce reduce;       /* default PS_REDUCE_SUM */
    int stride_h, stride_w; /* 1..PS_STENCIL_MAX_STRIDE; default 1 */
    int n_taps;             /* 1..PS_STENCIL_MAX_TAPS */
    const int *dy, *dx;     /* n_taps offsets each (copied) */
    const float *weights;   /* NULL: every weight 1; else n_taps values shared by all channels,
                               or with per_channel_weights n_taps * C values, weights[t * C + c]
                               (copied) */
    int per_channel_weights;
} ps_stencil;

PS_API void ps_stencil_init(ps_stencil *st);

typedef enum ps_resample {
    PS_RESAMPLE_UP2_NEAREST = 0,  /* out(y, x) = in(floor(y/2), floor(x/2)) */
    PS_RESAMPLE_UP2_BILINEAR = 1, /* out(y, x) samples in at ((y - 0.5)/2, (x - 0.5)/2):
                                     weights 3/4 and 1/4 of the two nearest rows (and columns),
                                     reads outside the domain answered by the boundary */
    PS_RESAMPLE_DOWN2_AVERAGE = 2 /* out(y, x) = mean of in(2y + {0,1}, 2x + {0,1}); the domain is
                                     that of a stride-2 stencil (ceil(H/2) rows for a 0-based
                                     input), so at an odd edge the second row or column is read
                                     through the boundary */
} ps_resample;

/* --- building --- */

/* __give *graph: an empty graph. */
PS_API ps_status ps_graph_create(ps_graph **graph);
/* __take. NULL is a no-op. */
PS_API void ps_graph_destroy(ps_graph *graph);

/* A graph input of n x h x w x c floats held by the user in `layout`.
 * name may be NULL (then "t<number>"); at most PS_GRAPH_NAME_MAX bytes. */
PS_API ps_status ps_graph_add_input(ps_graph *graph, const char *name, int64_t n, int64_t h, int64_t w,
                                    int64_t c, ps_act_layout layout, ps_tensor *out);

PS_API ps_status ps_graph_add_stencil(ps_graph *graph, const char *name, const ps_stencil *st,
                                      ps_tensor *out);

/* out(n, y, x, c) = expr(in_0, ..., in_{n_inputs-1}) at the same point.
 * Every input has the same N; each has C channels or 1 (broadcast over the
 * channels); out has the largest C, and the intersection of the inputs'
 * domains. The expression is copied (__keep expr); it may use only inputs
 * 0 .. n_inputs - 1. 1 <= n_inputs <= 16. */
PS_API ps_status ps_graph_add_pointwise(ps_graph *graph, const char *name, const ps_expr *expr,
                                        int n_inputs, const ps_tensor *inputs, ps_tensor *out);

/* out(n, y, x, k) = bias[k] + sum over c of weights[k * C + c] * in(n, y, x, c),
 * k < K. bias may be NULL (0). Grayscale conversion, colour transforms, the
 * 1 x 1 convolution. Both arrays are copied. */
PS_API ps_status ps_graph_add_channel_mix(ps_graph *graph, const char *name, ps_tensor input, int64_t k,
                                          const float *weights, const float *bias, ps_tensor *out);

/* Upsampling or downsampling by two in y and x (see ps_resample). boundary
 * is ZERO or CLAMP (bilinear reads one pixel past the edge). */
PS_API ps_status ps_graph_add_resample(ps_graph *graph, const char *name, ps_tensor input,
                                       ps_resample kind, ps_boundary boundary, ps_tensor *out);

/* Makes `tensor` a graph output, stored by execute in `layout`. Outputs are
 * numbered in the order of these calls. A tensor is marked at most once;
 * inputs cannot be outputs. */
PS_API ps_status ps_graph_mark_output(ps_graph *graph, ps_tensor tensor, ps_act_layout layout);

/* Stores only the rectangle [y0, y0 + h) x [x0, x0 + w) of an output (in the
 * tensor's coordinates; inside its domain). The output buffer then holds
 * n x h x w x c floats. */
PS_API ps_status ps_graph_set_output_region(ps_graph *graph, ps_tensor tensor, int64_t y0, int64_t x0,
                                            int64_t h, int64_t w);

/* --- introspection --- */

typedef struct ps_tensor_info {
    size_t struct_size;   /* sizeof(ps_tensor_info); the caller sets it */
    const char *name;     /* owned by the graph */
    int64_t n, h, w, c;   /* shape of the domain (or, for an output, of its stored region) */
    int64_t y0, x0;       /* corner of that rectangle in the tensor's coordinates */
    int is_input;
    int output_index;     /* position among the outputs, -1 if not an output */
    ps_act_layout layout; /* user layout (inputs and outputs) */
} ps_tensor_info;

PS_API int ps_graph_num_tensors(const ps_graph *graph);
PS_API int ps_graph_num_inputs(const ps_graph *graph);
PS_API int ps_graph_num_outputs(const ps_graph *graph);
/* info->struct_size must be set. For outputs, the stored region. */
PS_API ps_status ps_graph_tensor_info(const ps_graph *graph, ps_tensor tensor, ps_tensor_info *info);
/* The tensor of input number i / output number i, or -1. */
PS_API ps_tensor ps_graph_input(const ps_graph *graph, int i);
PS_API ps_tensor ps_graph_output(const ps_graph *graph, int i);

/* --- planning --- */

typedef enum ps_fusion {
    PS_FUSION_DP = 0,     /* dynamic-programming grouping with the cost and tile-size model
                             (PolyMage, Jangda & Bondhugula, TOPLAS 2020, Alg. 1, 2, 5) */
    PS_FUSION_GREEDY = 1, /* merge every group into its single consumer group while legal
                             (maximal fusion) */
    PS_FUSION_NONE = 2,   /* every stage alone, breadth first (parallel, vectorized) */
    PS_FUSION_FIXED = 3   /* the grouping given in ps_graph_options.group_of */
} ps_fusion;

/* ps_graph_options.flags */
#define PS_GRAPH_NO_INLINE 1u   /* keep pointwise stages as stages of their own */
#define PS_GRAPH_NO_CACHE 4u    /* neither look in nor fill the context's graph plan cache */
#define PS_GRAPH_NO_EPILOGUE 2u /* no producer epilogues: a stage read only by one pointwise stage is
                                   still stored in its own rows before that stage reads them */
#define PS_GRAPH_NO_CODEGEN 8u  /* run expressions in the row kernels' interpreter instead of code
                                   compiled at plan time (docs/graph.md, "Expression code") */

typedef struct ps_graph_options {
    size_t struct_size;   /* sizeof(ps_graph_options); set by init */
    int num_threads;      /* 0: the context's */
    ps_fusion fusion;
    /* > 0: every group's tiles are tile_h x tile_w pixels of its output
     * (rounded up to what its scaled stages need), each at most 2^24; 0:
     * the tile-size model. Both are set, or neither. */
    int64_t tile_h, tile_w;
    /* > 0: inside a tile, bands of rows run in chunks of this many columns
     * (of the group's output); 0: the model's. */
    int64_t chunk_w;
    /* PS_FUSION_FIXED: group_of[t] is the group of tensor t (any int; stages
     * with the same value form one group; entries of inputs are ignored);
     * n_group_of = ps_graph_num_tensors. */
    const int *group_of;
    int n_group_of;
    /* Largest group the first pass of the bounded incremental grouping forms
     * (Alg. 5); 0: unbounded for small graphs, 8 past 24 stages. */
    int group_limit;
    unsigned flags;       /* PS_GRAPH_* */
    /* Convolutions that run alone as layer plans (describe: "layer plan")
     * are planned with these ps_plan_options: top_k > 1 times their
     * candidates at plan time (the measured mode), within time_budget_ms
     * per convolution (0: no limit). 0, 0: the static default. */
    int layer_top_k;
    double layer_time_budget_ms;
} ps_graph_options;

PS_API void ps_graph_options_init(ps_graph_options *opts);

/* __give *plan. Analysis, grouping, tiling and kernel preparation; the plan
 * copies what it needs (the graph may be destroyed afterwards). opts may be
 * NULL. On error *plan is NULL.
 *
 * Plan cache: the context keeps every graph plan it makes (unless
 * PS_GRAPH_NO_CACHE) under a 128-bit hash of the graph's content (stages,
 * shapes, weights, expressions, outputs) and the options; planning the same
 * graph again, or an identical one built anew, returns that plan at once
 * (a reference to it: each ps_graph_plan_create is matched by one
 * ps_graph_plan_destroy). The context keeps the 64 newest;
 * ps_context_forget_plans and ps_context_destroy drop its references; plans
 * the caller still holds stay valid. */
PS_API ps_status ps_graph_plan_create(ps_context *ctx, const ps_graph *graph,
                                      const ps_graph_options *opts, ps_graph_plan **plan);
/* __take. NULL is a no-op. */
PS_API void ps_graph_plan_destroy(ps_graph_plan *plan);

/* Bytes of the workspace: the tensors passed between groups and, per
 * thread, the rings of rows, staging rows and expression registers of a
 * tile (so never 0). Pass a buffer this large (64-byte aligned) to
 * execute, or NULL and execute allocates it per call. */
PS_API ps_status ps_graph_plan_workspace_size(const ps_graph_plan *plan, size_t *bytes);

/* inputs[i]: graph input number i, outputs[i]: graph output number i, each
 * in its tensor's layout and shape. Every output element is written. Checks
 * the arguments first; on error nothing is written. */
PS_API ps_status ps_graph_execute(const ps_graph_plan *plan, const float *const *inputs,
                                  float *const *outputs, void *workspace);

/* Readable account of the plan: groups and why they were formed, tile sizes,
 * redundant computation, scratch bytes per thread, each group's cost and its
 * isl schedule tree. *needed (may be NULL) gets the length without the NUL;
 * as much as fits is written, NUL-terminated, and PS_ERR_BUFFER_TOO_SMALL is
 * returned when it does not all fit (len 0 with buf NULL asks the length). */
PS_API ps_status ps_graph_plan_describe(const ps_graph_plan *plan, char *buf, size_t len, size_t *needed);

typedef struct ps_graph_plan_stats {
    size_t struct_size;         /* the caller sets it */
    int n_stages;               /* stages executed (after inlining) */
    int n_groups;
    double plan_ms;             /* time ps_graph_plan_create took */
    double redundant_fraction;  /* points computed / points needed - 1, over all stages */
    size_t scratch_bytes;       /* per thread */
    size_t workspace_bytes;
    double cost;                /* sum of the groups' model costs */
} ps_graph_plan_stats;

PS_API ps_status ps_graph_plan_get_stats(const ps_graph_plan *plan, ps_graph_plan_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
