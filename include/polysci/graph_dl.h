/* polysci — deep-learning stages of a stage graph: dense and depthwise
 * convolution, max/avg pooling, batch normalization (inference), channel
 * concatenation and global average pooling. ReLU, ReLU6 and the residual
 * add are pointwise stages (ps_graph_add_pointwise with ps_expr_max /
 * ps_expr_min / ps_expr_add).
 *
 * The stages keep the framework's semantics (PyTorch's Conv2d, MaxPool2d,
 * AvgPool2d, BatchNorm2d in eval mode, torch.cat along channels,
 * AdaptiveAvgPool2d(1)): an output of OH x OW pixels starts at (0, 0) and
 * output pixel (y, x) reads input rows  y0 + stride_h * y - pad_top +
 * dilation_h * r  (likewise for columns), y0 the input domain's first row;
 * reads outside the input are zeros (max pooling: they take no part).
 *
 * Planning treats them like every other stage: the fusion model decides
 * which chains run tile by tile in cache (1 x 1 producers need no halo, a
 * 3 x 3 producer's recompute depends on the tile); batch normalization that
 * follows a convolution read by nothing else is folded into its weights and
 * bias at plan time. A graph holding any of these stages keeps its
 * intermediate tensors channels-last (NHWC rows), so convolutions run as
 * LIBXSMM batch-reduce GEMMs over whole pixels and depthwise stages are
 * vectorized over channels.
 *
 * Every call validates its stage completely; on error it returns the status
 * with a message (ps_last_error_message), sets *out to -1 and leaves the
 * graph unchanged. */
#ifndef POLYSCI_GRAPH_DL_H
#define POLYSCI_GRAPH_DL_H

#include "polysci/export.h"

#include <stddef.h>
#include <stdint.h>
#include "polysci/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PS_CONV_MAX_TAPS 1024 /* r * s */

/* out(n, y, x, k) = bias[k] + sum over c, r, s of
 *     weights[((k * Cg + c) * r + r_) * s + s_] * in(n, y_in, x_in, g(k) * Cg + c)
 * with Cg = C / groups. groups is 1 (dense) or C with k == C (depthwise). */
typedef struct ps_conv_stage {
    size_t struct_size;       /* sizeof(ps_conv_stage); set by ps_conv_stage_init */
    ps_tensor input;
    int64_t k;                /* output channels, 1..65536 */
    int64_t groups;           /* 1 or C (depthwise, k == C); default 1 */
    int r, s;                 /* filter height and width, r * s <= PS_CONV_MAX_TAPS */
    int stride_h, stride_w;   /* 1..PS_STENCIL_MAX_STRIDE; default 1 */
    int dilation_h, dilation_w; /* >= 1; default 1 */
    int pad_top, pad_bottom, pad_left, pad_right; /* >= 0; default 0 */
    const float *weights;     /* k x C/groups x r x s (PyTorch's order), copied */
    const float *bias;        /* k values or NULL, copied */
} ps_conv_stage;

PS_API void ps_conv_stage_init(ps_conv_stage *cv);
PS_API ps_status ps_graph_add_conv(ps_graph *graph, const char *name, const ps_conv_stage *cv, ps_tensor *out);

typedef enum ps_pool_kind {
    PS_POOL_MAX = 0,
    PS_POOL_AVG = 1  /* the mean over the r x s window, padding counted (count_include_pad) */
} ps_pool_kind;

typedef struct ps_pool_stage {
    size_t struct_size;       /* sizeof(ps_pool_stage); set by ps_pool_stage_init */
    ps_tensor input;
    ps_pool_kind kind;
    int r, s;                 /* window, r * s <= PS_CONV_MAX_TAPS */
    int stride_h, stride_w;   /* default 1 */
    int pad_top, pad_bottom, pad_left, pad_right; /* default 0; each below the window */
    int ceil_mode;            /* PyTorch's ceil_mode: a last partial window where it starts inside
                                 the input or its top/left padding (PS_POOL_MAX only) */
} ps_pool_stage;

PS_API void ps_pool_stage_init(ps_pool_stage *pool);
PS_API ps_status ps_graph_add_pool(ps_graph *graph, const char *name, const ps_pool_stage *pool, ps_tensor *out);

/* out(n, y, x, c) = (in(n, y, x, c) - mean[c]) * gamma[c] / sqrt(var[c] + eps) + beta[c].
 * gamma and beta may be NULL (1 and 0). The arrays are copied. */
PS_API ps_status ps_graph_add_batchnorm(ps_graph *graph, const char *name, ps_tensor input, const float *mean,
                                        const float *var, const float *gamma, const float *beta, float eps,
                                        ps_tensor *out);

/* The channels of inputs[0], then inputs[1], ...: every input has the same
 * images and domain. 2 <= n_inputs <= 16. */
PS_API ps_status ps_graph_add_concat(ps_graph *graph, const char *name, int n_inputs, const ps_tensor *inputs,
                                     ps_tensor *out);

/* out(n, 0, 0, c) = the mean of in(n, ., ., c) over its domain: one pixel. */
PS_API ps_status ps_graph_add_global_avg_pool(ps_graph *graph, const char *name, ps_tensor input, ps_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
