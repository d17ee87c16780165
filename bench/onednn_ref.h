/* bench/onednn_ref — a small reference layer over oneDNN's C API (oneDNN 2.x).
 *
 * Used by the polysci benchmarks to time oneDNN on the same shapes, and by
 * tests to cross-check polysci's results. It does not depend on polysci
 * (see onednn_ref_polysci.h for the ps_desc adapter).
 *
 * Conventions: f32 only; 2-D forward convolution, inference propagation;
 * dilation 1 = dense filter (oneDNN's own convention is dilation - 1);
 * GEMM via dnnl_sgemm, which is row-major.
 *
 * Threads: the Debian build of oneDNN uses OpenMP. Call
 * onednn_set_num_threads() BEFORE creating a primitive: oneDNN picks its
 * blocking/partitioning from the thread count at creation time, and runs on
 * omp_get_max_threads() threads at execution time.
 *
 * All functions returning int give 0 on success, -1 on failure; the reason
 * is in onednn_last_error() (not thread-safe; the bench is single-threaded
 * outside of OpenMP regions). */
#ifndef POLYSCI_BENCH_ONEDNN_REF_H
#define POLYSCI_BENCH_ONEDNN_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum onednn_act_layout {
    ONEDNN_ACT_NHWC = 0,
    ONEDNN_ACT_NCHW = 1
} onednn_act_layout;

typedef enum onednn_weight_layout {
    ONEDNN_W_KCRS = 0, /* oihw */
    ONEDNN_W_KRSC = 1, /* ohwi */
    ONEDNN_W_RSCK = 2  /* hwio */
} onednn_weight_layout;

/* How the primitive's own src/dst memory is laid out. */
typedef enum onednn_conv_mode {
    ONEDNN_MODE_ANY = 0,  /* src/weights/dst format `any`: oneDNN's blocked layouts */
    ONEDNN_MODE_NHWC = 1  /* src/dst plain nhwc, weights `any` (framework-facing) */
} onednn_conv_mode;

typedef struct onednn_conv_params {
    int64_t N, C, K, H, W, R, S;
    int64_t stride_h, stride_w;
    int64_t pad_t, pad_b, pad_l, pad_r;
    int64_t dil_h, dil_w;      /* 1 = dense */
    int with_bias;             /* dst[k] += bias[k] */
    int with_relu;             /* dst = max(dst, 0) after bias (eltwise post-op) */
    onednn_act_layout act_layout;    /* of the USER src/dst given to set_src/get_dst */
    onednn_weight_layout w_layout;   /* of the USER weights given to set_weights */
} onednn_conv_params;

/* Defaults: stride 1, dilation 1, no pad, no bias/relu, NHWC user
 * activations, KCRS user weights, sizes 0. */
void onednn_conv_params_init(onednn_conv_params *p);

/* Output size; -1 if the shape is invalid. */
int onednn_conv_out_size(const onednn_conv_params *p, int64_t *OH, int64_t *OW);
/* 2*N*K*C*OH*OW*R*S. */
double onednn_conv_flops(const onednn_conv_params *p);

void onednn_set_num_threads(int n);
int onednn_get_num_threads(void);
/* Disables oneDNN's primitive cache so every creation is cold (for the
 * creation-time comparison). Call once at start-up. */
void onednn_disable_primitive_cache(void);
const char *onednn_last_error(void);
/* "2.6.3 (cpu omp) isa:avx512_core" etc. */
const char *onednn_version_string(void);

typedef struct onednn_conv onednn_conv;

/* Creates the primitive (primitive descriptor + primitive; JIT included),
 * and allocates its src/weights/dst (+bias) memories in the primitive's
 * layouts. The creation wall time is available from onednn_conv_create_ms. */
int onednn_conv_create(const onednn_conv_params *p, onednn_conv_mode mode, onednn_conv **out);
void onednn_conv_destroy(onednn_conv *c);

/* Milliseconds spent in dnnl_primitive_desc_create + dnnl_primitive_create. */
double onednn_conv_create_ms(const onednn_conv *c);
double onednn_conv_pd_ms(const onednn_conv *c);   /* primitive_desc_create part */
/* oneDNN's implementation name, e.g. "jit:avx512_core". */
const char *onednn_conv_impl(const onednn_conv *c);
/* Short description of the chosen src/weights/dst layouts, e.g. "src aBcd16b ...". */
const char *onednn_conv_layouts(const onednn_conv *c);

/* Untimed data movement: user data (p->act_layout / p->w_layout) reordered
 * into the primitive's memories, and its dst reordered back. */
int onednn_conv_set_src(onednn_conv *c, const float *src);
int onednn_conv_set_weights(onednn_conv *c, const float *weights);
int onednn_conv_set_bias(onednn_conv *c, const float *bias);   /* K floats */
int onednn_conv_get_dst(onednn_conv *c, float *dst);

/* Executes the primitive once and waits for it (what is timed). */
int onednn_conv_execute(onednn_conv *c);

/* One-shot reference: dst = conv(src, weights) (+bias, relu per p), with
 * user layouts per p (act_layout / w_layout). bias may be NULL when
 * !p->with_bias. Uses the plain-nhwc/any-weights primitive internally
 * (correctness only; nothing timed). */
int onednn_conv_run_once(const onednn_conv_params *p, const float *src,
                         const float *weights, const float *bias, float *dst);

/* Row-major C = alpha*op(A)*op(B) + beta*C via dnnl_sgemm. lda/ldb/ldc <= 0
 * mean tight. */
int onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc);

#ifdef __cplusplus
}
#endif
#endif
