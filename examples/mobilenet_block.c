/* A MobileNet-v2 inverted-residual block (expand 1x1 + BN + ReLU6, depthwise
 * 3x3 + BN + ReLU6, project 1x1 + BN, residual add) built as one stage graph
 * (graph_dl.h), planned once with DP fusion, executed, and checked against a
 * plain double-precision loop nest of the same block. Prints the plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polysci/polysci.h>

#define H 28
#define W 28
#define C 32
#define T 6 /* expansion */
#define E (C * T)

#define CHECK(call)                                                                       \
    do {                                                                                  \
        ps_status st_ = (call);                                                           \
        if (st_ != PS_SUCCESS) {                                                          \
            fprintf(stderr, "%s failed: %s\n", #call, ps_last_error_message());           \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

static unsigned long long seed = 42;
static float rnd(void) /* uniform in [-1, 1) */
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

typedef struct bn {
    float mean[E], var[E], gamma[E], beta[E];
} bn;

static void make_bn(bn *b, int n)
{
    for (int c = 0; c < n; c++) {
        b->mean[c] = 0.2f * rnd();
        b->var[c] = 1.0f + 0.5f * rnd();
        b->gamma[c] = 1.0f + 0.3f * rnd();
        b->beta[c] = 0.2f * rnd();
    }
}

static double apply_bn(const bn *b, int c, double v)
{
    return (v - b->mean[c]) * b->gamma[c] / sqrt((double)b->var[c] + 1e-5) + b->beta[c];
}

static double relu6(double v) { return v < 0 ? 0 : v > 6 ? 6 : v; }

int main(void)
{
    static float x[H * W * C], w1[E * C], wd[E * 9], w2[C * E], y[H * W * C];
    static bn b1, bd, b2;
    for (int i = 0; i < H * W * C; i++) x[i] = rnd();
    for (int i = 0; i < E * C; i++) w1[i] = rnd() / sqrtf(C);
    for (int i = 0; i < E * 9; i++) wd[i] = rnd() / 3.0f;
    for (int i = 0; i < C * E; i++) w2[i] = rnd() / sqrtf(E);
    make_bn(&b1, E);
    make_bn(&bd, E);
    make_bn(&b2, C);

    ps_context *ctx;
    CHECK(ps_context_create(NULL, &ctx));
    ps_graph *g;
    CHECK(ps_graph_create(&g));
    ps_tensor in, e, e_bn, e6, d, d_bn, d6, p, p_bn, out;
    CHECK(ps_graph_add_input(g, "x", 1, H, W, C, PS_LAYOUT_NHWC, &in));
    ps_expr *clamp6 = ps_expr_clamp(ps_expr_input(0), ps_expr_const(0.0f), ps_expr_const(6.0f));

    ps_conv_stage cv;
    ps_conv_stage_init(&cv);
    cv.input = in, cv.k = E, cv.r = cv.s = 1, cv.weights = w1;
    CHECK(ps_graph_add_conv(g, "expand", &cv, &e));
    CHECK(ps_graph_add_batchnorm(g, "expand_bn", e, b1.mean, b1.var, b1.gamma, b1.beta, 1e-5f, &e_bn));
    CHECK(ps_graph_add_pointwise(g, "expand_relu6", clamp6, 1, &e_bn, &e6));

    ps_conv_stage_init(&cv);
    cv.input = e6, cv.k = E, cv.groups = E, cv.r = cv.s = 3, cv.weights = wd;
    cv.pad_top = cv.pad_bottom = cv.pad_left = cv.pad_right = 1;
    CHECK(ps_graph_add_conv(g, "dw", &cv, &d));
    CHECK(ps_graph_add_batchnorm(g, "dw_bn", d, bd.mean, bd.var, bd.gamma, bd.beta, 1e-5f, &d_bn));
    CHECK(ps_graph_add_pointwise(g, "dw_relu6", clamp6, 1, &d_bn, &d6));

    ps_conv_stage_init(&cv);
    cv.input = d6, cv.k = C, cv.r = cv.s = 1, cv.weights = w2;
    CHECK(ps_graph_add_conv(g, "project", &cv, &p));
    CHECK(ps_graph_add_batchnorm(g, "project_bn", p, b2.mean, b2.var, b2.gamma, b2.beta, 1e-5f, &p_bn));
    ps_expr *add = ps_expr_binary(PS_EXPR_ADD, ps_expr_input(0), ps_expr_input(1));
    ps_tensor xp[2] = {in, p_bn};
    CHECK(ps_graph_add_pointwise(g, "residual", add, 2, xp, &out));
    CHECK(ps_graph_mark_output(g, out, PS_LAYOUT_NHWC));
    ps_expr_free(clamp6);
    ps_expr_free(add);

    ps_graph_plan *plan;
    CHECK(ps_graph_plan_create(ctx, g, NULL, &plan));
    ps_graph_destroy(g); /* the plan keeps what it needs */
    const float *inputs[1] = {x};
    float *outputs[1] = {y};
    CHECK(ps_graph_execute(plan, inputs, outputs, NULL));
    char text[8192];
    ps_status st = ps_graph_plan_describe(plan, text, sizeof text, NULL);
    if (st == PS_SUCCESS || st == PS_ERR_BUFFER_TOO_SMALL) {
        /* the summary lines: groups, tiles, what each stage became */
        for (char *line = text; line && *line;) {
            char *next = strchr(line, '\n');
            if (next) *next = '\0';
            if (!strstr(line, "schedule") && !strstr(line, "domain") && !strstr(line, "child") &&
                !strstr(line, "contraction") && !strstr(line, "expansion") && !strstr(line, "filter") &&
                !strstr(line, "sequence") && !strstr(line, "- \""))
                printf("%s\n", line);
            line = next ? next + 1 : NULL;
        }
    }

    /* the reference, in double */
    static double ex[H * W * E], dw[H * W * E];
    for (int i = 0; i < H * W; i++)
        for (int k = 0; k < E; k++) {
            double a = 0;
            for (int c = 0; c < C; c++) a += (double)w1[k * C + c] * x[i * C + c];
            ex[i * E + k] = relu6(apply_bn(&b1, k, a));
        }
    for (int yy = 0; yy < H; yy++)
        for (int xx = 0; xx < W; xx++)
            for (int k = 0; k < E; k++) {
                double a = 0;
                for (int r = 0; r < 3; r++)
                    for (int s = 0; s < 3; s++) {
                        int iy = yy - 1 + r, ix = xx - 1 + s;
                        if (iy >= 0 && iy < H && ix >= 0 && ix < W) a += (double)wd[k * 9 + r * 3 + s] * ex[(iy * W + ix) * E + k];
                    }
                dw[(yy * W + xx) * E + k] = relu6(apply_bn(&bd, k, a));
            }
    double err = 0, mag = 0;
    for (int i = 0; i < H * W; i++)
        for (int k = 0; k < C; k++) {
            double a = 0;
            for (int c = 0; c < E; c++) a += (double)w2[k * E + c] * dw[i * E + c];
            double want = apply_bn(&b2, k, a) + x[i * C + k];
            err = fmax(err, fabs(want - y[i * C + k]));
            mag = fmax(mag, fabs(want));
        }
    printf("mobilenet_block: %dx%dx%d -> %d -> %d, max error %.3g of max |y| %.3g\n", H, W, C, E, C, err, mag);
    ps_graph_plan_destroy(plan);
    ps_context_destroy(ctx);
    if (!(err <= 1e-4 * mag)) {
        fprintf(stderr, "mobilenet_block: wrong result\n");
        return 1;
    }
    return 0;
}
