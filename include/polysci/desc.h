/* polysci — operation descriptors, built in code (no parsing).
 *
 * A ps_desc names one operation: a forward f32 convolution or an f32 GEMM.
 * Initialise with ps_desc_init_conv()/ps_desc_init_gemm(), then set fields.
 * Descriptors are plain data owned by the caller; plans copy what they need. */
#ifndef POLYSCI_DESC_H
#define POLYSCI_DESC_H

#include "polysci/export.h"

#include <stddef.h>
#include <stdint.h>
#include "polysci/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ps_op_kind {
    PS_OP_CONV_FWD = 1,
    PS_OP_GEMM = 2
} ps_op_kind;

/* Activation (src/dst) layouts. NHWC is channels-last, what frameworks hand over. */
typedef enum ps_act_layout {
    PS_LAYOUT_NHWC = 0,
    PS_LAYOUT_NCHW = 1
} ps_act_layout;

/* Layout of the user's (unpacked) weights given to ps_plan_pack_weights. */
typedef enum ps_weight_layout {
    PS_WEIGHTS_KCRS = 0, /* oihw: PyTorch, oneDNN plain */
    PS_WEIGHTS_KRSC = 1, /* ohwi */
    PS_WEIGHTS_RSCK = 2  /* hwio: TensorFlow */
} ps_weight_layout;

/* Epilogue flags, applied while the output tile is in cache. */
#define PS_POST_BIAS 1u /* dst[k] += bias[k] */
#define PS_POST_RELU 2u /* dst = max(dst, 0), after bias */
#define PS_POST_RELU6 4u /* dst = min(max(dst, 0), 6), after bias (MobileNet's activation) */
#define PS_POST_SUM 8u   /* dst += sum (ps_exec_args.sum, a tensor of dst's shape), after bias and before
                            ReLU/ReLU6: a residual add; NHWC only */

typedef struct ps_conv_desc {
    int64_t N, C, K;            /* batch, input channels, output channels */
    int64_t H, W;               /* input height, width */
    int64_t R, S;               /* filter height, width */
    int64_t stride_h, stride_w; /* >= 1 */
    int64_t pad_top, pad_bottom, pad_left, pad_right; /* >= 0, each < dilated filter extent */
    int64_t dilation_h, dilation_w; /* 1 = dense filter */
    ps_act_layout layout;       /* of src and dst */
    ps_weight_layout weight_layout;
    unsigned post_ops;          /* PS_POST_* */
    int64_t dst_pixel_stride;   /* NHWC only: floats from one output pixel to the next; 0 (or K) = tight.
                                   Larger: dst is a channel slice of a wider NHWC tensor (its K channels
                                   start at dst), such as one input of a channel concatenation; the
                                   floats between slices are not written. PS_POST_SUM reads sum with the
                                   same stride. */
} ps_conv_desc;

typedef enum ps_matrix_order {
    PS_COL_MAJOR = 0,
    PS_ROW_MAJOR = 1
} ps_matrix_order;

/* C = alpha * op(A) * op(B) + beta * C, op(A) is M x K, op(B) is K x N.
 * As in BLAS, beta == 0 means C is not read (it may hold NaN or garbage). */
typedef struct ps_gemm_desc {
    int64_t M, N, K;
    ps_matrix_order order;
    int trans_a, trans_b;       /* 0 or 1 */
    int64_t lda, ldb, ldc;      /* 0 = tight (as stored, per order and transpose) */
    float alpha, beta;
} ps_gemm_desc;

typedef struct ps_desc {
    size_t struct_size;         /* sizeof(ps_desc); set by the init functions */
    ps_op_kind kind;
    union {
        ps_conv_desc conv;
        ps_gemm_desc gemm;
        unsigned char reserved_[512]; /* room to grow without breaking the ABI */
    } u;
} ps_desc;

/* Defaults: conv — stride 1, dilation 1, no padding, NHWC, KCRS weights, no
 * post-ops, sizes 0 (must be set); gemm — column-major, no transposes, tight
 * leading dimensions, alpha 1, beta 0, sizes 0. */
PS_API void ps_desc_init_conv(ps_desc *desc);
PS_API void ps_desc_init_gemm(ps_desc *desc);

/* Checks every field; PS_SUCCESS or the specific error with a message. */
PS_API ps_status ps_desc_validate(const ps_desc *desc);

/* Output spatial size of a conv descriptor (valid descriptors only). */
PS_API ps_status ps_conv_output_size(const ps_desc *desc, int64_t *OH, int64_t *OW);

/* Nominal floating-point operations: 2*N*K*C*OH*OW*R*S, or 2*M*N*K. */
PS_API double ps_desc_flops(const ps_desc *desc);

#ifdef __cplusplus
}
#endif
#endif
