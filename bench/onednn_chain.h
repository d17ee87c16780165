/* bench/onednn_chain — a chain of layers run by oneDNN 2.x the way a
 * framework runs it: one primitive per layer, plain NHWC activations handed
 * from primitive to primitive, weights reordered once into the primitive's
 * preferred layout, ReLU/ReLU6 and the residual add as post-ops (the add as
 * a sum post-op writing in place into the shortcut's buffer), and
 * optionally oneDNN's fused 1x1 + depthwise 3x3 convolution (a depthwise
 * post-op). The polysci chain benchmark (`polysci bench chain`) times it
 * beside the fused polysci graph of the same layers. Does not depend on
 * polysci.
 *
 * All int-returning functions give 0 on success and -1 on failure, with the
 * reason printed to stderr. */
#ifndef POLYSCI_BENCH_ONEDNN_CHAIN_H
#define POLYSCI_BENCH_ONEDNN_CHAIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum onednn_chain_kind {
    ONEDNN_CL_CONV = 0,    /* groups 1 (dense) or groups = C = K (depthwise) */
    ONEDNN_CL_MAXPOOL = 1, /* R x S window, stride, symmetric padding */
    ONEDNN_CL_ADD = 2      /* act(src + src2): fused into the convolution producing src2 as a sum post-op */
} onednn_chain_kind;

typedef enum onednn_chain_act { ONEDNN_ACT_NONE = 0, ONEDNN_ACT_RELU = 1, ONEDNN_ACT_RELU6 = 2 } onednn_chain_act;

typedef struct onednn_chain_layer {
    onednn_chain_kind kind;
    int src, src2;            /* tensors read: 0 the chain's input, i + 1 the output of layer i */
    int64_t K, R, S, stride, pad, groups;
    onednn_chain_act act;
    const float *weights;     /* KCRS (depthwise: K x 1 x R x S) */
    const float *bias;        /* K values or NULL */
} onednn_chain_layer;

typedef struct onednn_chain onednn_chain;

/* fuse_dw: a 1 x 1 convolution whose only reader is a depthwise 3 x 3
 * convolution of stride 1 and padding 1 becomes one primitive with the
 * depthwise convolution as a post-op (oneDNN 2.6.3's stride-2 form,
 * dw_k3s2p1, returned wrong values with NHWC activations on the AVX-512
 * machines here: 5 times the output's magnitude off on MobileNet-v2's
 * block 2, so it is not used; the stride-1 form is wrong at N = 2 on some
 * blocks, which `polysci bench chain` checks and leaves out). The output is the last layer's. An
 * ADD must directly follow the convolution producing its src2, which
 * nothing else reads, and its src must not be read after it (the sum is
 * in place). */
int onednn_chain_create(int64_t N, int64_t H, int64_t W, int64_t C, const onednn_chain_layer *layers, int n,
                        int fuse_dw, onednn_chain **out);
void onednn_chain_destroy(onednn_chain *c);
/* The output's shape (NHWC). */
void onednn_chain_output_shape(const onednn_chain *c, int64_t *N, int64_t *H, int64_t *W, int64_t *C);
/* Primitives the chain runs, and how many of them fuse a depthwise convolution. */
int onednn_chain_primitives(const onednn_chain *c, int *fused_dw);
/* Copies the input (NHWC) in: before every run, since in-place sums overwrite it. */
int onednn_chain_set_input(onednn_chain *c, const float *nhwc);
/* Runs the primitives in order and waits for them (what is timed). */
int onednn_chain_run(onednn_chain *c);
int onednn_chain_get_output(const onednn_chain *c, float *nhwc);

#ifdef __cplusplus
}
#endif
#endif
