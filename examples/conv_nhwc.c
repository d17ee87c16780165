/* polysci example: a framework-style NHWC convolution layer.
 *
 * The layer is set up once (plan + weights packed once, like a framework's
 * layer constructor) and then run on several batches, with the bias and ReLU
 * fused into the convolution. A few outputs of every batch are checked
 * against a direct computation. Weights are given in TensorFlow's HWIO
 * (PS_WEIGHTS_RSCK) layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <polysci/polysci.h>

enum { N = 4, H = 28, W = 28, C = 64, K = 96, R = 3, S = 3, STRIDE = 1, PAD = 1, BATCHES = 3 };
enum { OH = (H + 2 * PAD - R) / STRIDE + 1, OW = (W + 2 * PAD - S) / STRIDE + 1 };

typedef struct conv_layer {
    ps_plan *plan;
    void *packed_weights; /* packed once, reused by every forward call */
    const float *bias;
} conv_layer;

static void die(const char *what, ps_status st)
{
    fprintf(stderr, "conv_nhwc: %s failed: %s: %s\n", what, ps_status_str(st), ps_last_error_message());
    exit(1);
}

static float frand(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void layer_init(conv_layer *layer, ps_context *ctx, const float *weights_hwio, const float *bias)
{
    ps_desc desc;
    ps_desc_init_conv(&desc); /* NHWC, stride 1, dilation 1, no padding by default */
    ps_conv_desc *d = &desc.u.conv;
    d->N = N;
    d->H = H;
    d->W = W;
    d->C = C;
    d->K = K;
    d->R = R;
    d->S = S;
    d->stride_h = d->stride_w = STRIDE;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = PAD;
    d->layout = PS_LAYOUT_NHWC;
    d->weight_layout = PS_WEIGHTS_RSCK;
    d->post_ops = PS_POST_BIAS | PS_POST_RELU;

    ps_status st = ps_plan_create(ctx, &desc, NULL, &layer->plan); /* the planner picks the schedule */
    if (st != PS_SUCCESS) die("ps_plan_create", st);

    size_t bytes = 0;
    if ((st = ps_plan_packed_weights_size(layer->plan, &bytes)) != PS_SUCCESS)
        die("ps_plan_packed_weights_size", st);
    layer->packed_weights = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!layer->packed_weights) die("aligned_alloc", PS_ERR_OUT_OF_MEMORY);
    if ((st = ps_plan_pack_weights(layer->plan, weights_hwio, layer->packed_weights)) != PS_SUCCESS)
        die("ps_plan_pack_weights", st);
    layer->bias = bias;
}

static void layer_forward(const conv_layer *layer, const float *src_nhwc, float *dst_nhwc)
{
    ps_status st = ps_conv_execute(layer->plan, src_nhwc, layer->packed_weights, layer->bias, dst_nhwc);
    if (st != PS_SUCCESS) die("ps_conv_execute", st);
}

static void layer_destroy(conv_layer *layer)
{
    ps_plan_destroy(layer->plan);
    free(layer->packed_weights);
}

/* relu(bias[k] + sum over r, s, c of src[n][ih][iw][c] * w[r][s][c][k]) */
static double direct(const float *src, const float *w, const float *bias, int n, int oh, int ow, int k)
{
    double acc = bias[k];
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            int ih = oh * STRIDE - PAD + r, iw = ow * STRIDE - PAD + s;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            for (int c = 0; c < C; c++)
                acc += (double)src[((n * H + ih) * W + iw) * C + c] * w[((r * S + s) * C + c) * K + k];
        }
    return acc > 0.0 ? acc : 0.0;
}

int main(void)
{
    ps_context *ctx = NULL;
    ps_status st = ps_context_create(NULL, &ctx); /* default options: OpenMP's thread count */
    if (st != PS_SUCCESS) die("ps_context_create", st);

    unsigned seed = 42;
    float *weights = malloc(sizeof(float) * R * S * C * K);
    float *bias = malloc(sizeof(float) * K);
    float *src = malloc(sizeof(float) * N * H * W * C);
    float *dst = malloc(sizeof(float) * N * OH * OW * K);
    if (!weights || !bias || !src || !dst) die("malloc", PS_ERR_OUT_OF_MEMORY);
    for (int i = 0; i < R * S * C * K; i++) weights[i] = frand(&seed) * 0.1f;
    for (int i = 0; i < K; i++) bias[i] = frand(&seed);

    conv_layer layer;
    layer_init(&layer, ctx, weights, bias);

    int bad = 0;
    for (int batch = 0; batch < BATCHES; batch++) {
        for (int i = 0; i < N * H * W * C; i++) src[i] = frand(&seed);
        layer_forward(&layer, src, dst);
        for (int t = 0; t < 64; t++) {
            /* corners and edges (padding) first, then random points */
            int n = t % N, oh = t < 4 ? (t & 1) * (OH - 1) : (int)(seed % OH);
            int ow = t < 4 ? (t >> 1) * (OW - 1) : (int)((seed >> 8) % OW), k = (int)((seed >> 16) % K);
            frand(&seed);
            double want = direct(src, weights, bias, n, oh, ow, k);
            float got = dst[((n * OH + oh) * OW + ow) * K + k];
            if (!(fabs(got - want) <= 1e-4 * (1.0 + fabs(want)))) {
                fprintf(stderr, "conv_nhwc: batch %d dst[%d][%d][%d][%d] = %.7g, expected %.7g\n", batch,
                        n, oh, ow, k, got, want);
                bad++;
            }
        }
    }
    printf("conv_nhwc: %d batches of %dx%dx%dx%d -> %dx%dx%dx%d (3x3, pad 1, bias+relu): %s\n", BATCHES, N,
           H, W, C, N, OH, OW, K, bad ? "MISMATCH" : "OK");

    layer_destroy(&layer);
    ps_context_destroy(ctx);
    free(weights);
    free(bias);
    free(src);
    free(dst);
    return bad ? 1 : 0;
}
