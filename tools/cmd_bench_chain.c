/* polysci bench chain — deep-learning chains (graph_dl.h) planned as one
 * fused polysci graph, beside oneDNN 2.6 run as a framework runs it (one
 * primitive per layer, NHWC, ReLU/ReLU6 and the residual add as post-ops,
 * and in a second form oneDNN's fused 1x1 + depthwise convolution) and
 * beside polysci layer at a time (no fusion), all in one process, the
 * implementations taking turns within each round in an order that rotates
 * from round to round.
 *
 * Sets: the 17 MobileNet-v2 inverted-residual blocks (224 x 224 input), the
 * 16 ResNet-50 bottlenecks, the 8 ResNet-18 basic blocks, the 5 VGG-16
 * conv-conv(-conv)-pool groups, and the whole MobileNet-v2 and ResNet-50
 * bodies (conv parts). Batch normalization is folded into the
 * convolutions' weights and bias (what either library does at inference).
 * Weights are random (fan-in scaled); every implementation's output is
 * checked against oneDNN's before timing. */
#include "cli.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#ifdef POLYSCI_CLI_HAVE_ONEDNN
#include "onednn_chain.h"
#include "onednn_ref.h"
#endif

#define MAX_LAYERS 200
#define MAX_BLOCKS 24
#define MAX_ROUNDS 64

enum { L_CONV, L_MAXPOOL, L_ADD };
enum { ACT_NONE, ACT_RELU, ACT_RELU6 };

typedef struct layer {
    int kind;
    int src, src2;             /* 0 the block's input, i + 1 the output of layer i */
    int64_t K, R, S, stride, pad, groups;
    int act;
} layer;

typedef struct block {
    char name[40];
    int64_t H, W, C;
    int n;
    layer L[MAX_LAYERS];
} block;

static int push(block *b, int kind, int src, int src2, int64_t K, int64_t R, int64_t stride, int64_t pad, int64_t groups,
                int act)
{
    layer *l = &b->L[b->n];
    *l = (layer){kind, src, src2, K, R, R, stride, pad, groups, act};
    return ++b->n; /* the tensor it writes */
}

/* Channels and size of tensor t of a block (0: its input). */
static void shape_of(const block *b, int t, int64_t *h, int64_t *w, int64_t *c)
{
    int64_t H = b->H, W = b->W, C = b->C;
    int64_t hs[MAX_LAYERS + 1], ws[MAX_LAYERS + 1], cs[MAX_LAYERS + 1];
    hs[0] = H, ws[0] = W, cs[0] = C;
    for (int i = 0; i < t; i++) {
        const layer *l = &b->L[i];
        if (l->kind == L_ADD) {
            hs[i + 1] = hs[l->src], ws[i + 1] = ws[l->src], cs[i + 1] = cs[l->src];
            continue;
        }
        hs[i + 1] = (hs[l->src] + 2 * l->pad - l->R) / l->stride + 1;
        ws[i + 1] = (ws[l->src] + 2 * l->pad - l->S) / l->stride + 1;
        cs[i + 1] = l->kind == L_CONV ? l->K : cs[l->src];
    }
    *h = hs[t], *w = ws[t], *c = cs[t];
}

/* --------------------------------------------------------------- the nets */

/* One MobileNet-v2 inverted-residual block appended to b, reading tensor x
 * of c_in channels; returns its output tensor. */
static int mbv2_block(block *b, int x, int64_t c_in, int64_t t, int64_t c_out, int64_t stride)
{
    int h = x;
    int64_t hidden = c_in * t;
    if (t != 1) h = push(b, L_CONV, x, -1, hidden, 1, 1, 0, 1, ACT_RELU6);
    h = push(b, L_CONV, h, -1, hidden, 3, stride, 1, hidden, ACT_RELU6);
    h = push(b, L_CONV, h, -1, c_out, 1, 1, 0, 1, ACT_NONE);
    if (stride == 1 && c_in == c_out) h = push(b, L_ADD, x, h, 0, 0, 1, 0, 1, ACT_NONE);
    return h;
}

static const int64_t mbv2_cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

static int mbv2_blocks(block *out, int whole)
{
    int nb = 0;
    int64_t c = 32, hw = 112;
    block *b = &out[0];
    if (whole) {
        memset(b, 0, sizeof *b);
        snprintf(b->name, sizeof b->name, "mobilenet_v2_body");
        b->H = b->W = 224, b->C = 3;
        int x = push(b, L_CONV, 0, -1, 32, 3, 2, 1, 1, ACT_RELU6);
        for (int s = 0; s < 7; s++)
            for (int i = 0; i < mbv2_cfg[s][2]; i++) {
                x = mbv2_block(b, x, c, mbv2_cfg[s][0], mbv2_cfg[s][1], i ? 1 : mbv2_cfg[s][3]);
                c = mbv2_cfg[s][1];
            }
        push(b, L_CONV, x, -1, 1280, 1, 1, 0, 1, ACT_RELU6);
        return 1;
    }
    for (int s = 0; s < 7; s++)
        for (int i = 0; i < mbv2_cfg[s][2]; i++) {
            b = &out[nb];
            memset(b, 0, sizeof *b);
            snprintf(b->name, sizeof b->name, "mbv2_b%02d", nb + 1);
            b->H = b->W = hw, b->C = c;
            int64_t stride = i ? 1 : mbv2_cfg[s][3];
            mbv2_block(b, 0, c, mbv2_cfg[s][0], mbv2_cfg[s][1], stride);
            c = mbv2_cfg[s][1];
            hw = (hw + stride - 1) / stride;
            nb++;
        }
    return nb;
}

/* ResNet bottleneck (torchvision v1.5: the stride on the 3 x 3) or basic block. */
static int resnet_block(block *b, int x, int64_t c_in, int64_t width, int64_t stride, int bottleneck)
{
    int64_t c_out = bottleneck ? 4 * width : width;
    int down = stride != 1 || c_in != c_out, sc = x, h;
    if (bottleneck) {
        h = push(b, L_CONV, x, -1, width, 1, 1, 0, 1, ACT_RELU);
        h = push(b, L_CONV, h, -1, width, 3, stride, 1, 1, ACT_RELU);
        if (down) sc = push(b, L_CONV, x, -1, c_out, 1, stride, 0, 1, ACT_NONE);
        h = push(b, L_CONV, h, -1, c_out, 1, 1, 0, 1, ACT_NONE);
    } else {
        h = push(b, L_CONV, x, -1, width, 3, stride, 1, 1, ACT_RELU);
        if (down) sc = push(b, L_CONV, x, -1, c_out, 1, stride, 0, 1, ACT_NONE);
        h = push(b, L_CONV, h, -1, c_out, 3, 1, 1, 1, ACT_NONE);
    }
    /* the add directly after the convolution it sums into (oneDNN's sum post-op) */
    return push(b, L_ADD, sc, h, 0, 0, 1, 0, 1, ACT_RELU);
}

static int resnet_blocks(block *out, int bottleneck, int whole)
{
    static const int64_t r50[4] = {3, 4, 6, 3}, r18[4] = {2, 2, 2, 2}, widths[4] = {64, 128, 256, 512};
    const int64_t *reps = bottleneck ? r50 : r18;
    int nb = 0;
    int64_t c = 64, hw = 56;
    block *b = &out[0];
    int x = 0;
    if (whole) {
        memset(b, 0, sizeof *b);
        snprintf(b->name, sizeof b->name, "%s_body", bottleneck ? "resnet50" : "resnet18");
        b->H = b->W = 224, b->C = 3;
        x = push(b, L_CONV, 0, -1, 64, 7, 2, 3, 1, ACT_RELU);
        x = push(b, L_MAXPOOL, x, -1, 0, 3, 2, 1, 1, ACT_NONE);
    }
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < reps[s]; i++) {
            int64_t stride = i == 0 && s > 0 ? 2 : 1;
            if (!whole) {
                b = &out[nb];
                memset(b, 0, sizeof *b);
                snprintf(b->name, sizeof b->name, "%s_b%02d", bottleneck ? "r50" : "r18", nb + 1);
                b->H = b->W = hw, b->C = c;
                x = 0;
            }
            x = resnet_block(b, x, c, widths[s], stride, bottleneck);
            c = bottleneck ? 4 * widths[s] : widths[s];
            hw = (hw + stride - 1) / stride;
            nb++;
        }
    return whole ? 1 : nb;
}

static int vgg16_blocks(block *out)
{
    static const int64_t convs[5] = {2, 2, 3, 3, 3}, ch[5] = {64, 128, 256, 512, 512};
    int64_t c = 3, hw = 224;
    for (int g = 0; g < 5; g++) {
        block *b = &out[g];
        memset(b, 0, sizeof *b);
        snprintf(b->name, sizeof b->name, "vgg16_g%d", g + 1);
        b->H = b->W = hw, b->C = c;
        int x = 0;
        for (int i = 0; i < convs[g]; i++) x = push(b, L_CONV, x, -1, ch[g], 3, 1, 1, 1, ACT_RELU);
        push(b, L_MAXPOOL, x, -1, 0, 2, 2, 0, 1, ACT_NONE);
        c = ch[g];
        hw /= 2;
    }
    return 5;
}

/* The convolution and pooling layers of b, each as a one-layer block
 * reading a tensor of its input's shape (residual adds are left out: a
 * one-layer chain has no second input), appended to out from index n;
 * returns the new count (at most cap). */
static int split_layers(const block *b, block *out, int n, int cap)
{
    for (int i = 0; i < b->n && n < cap; i++) {
        const layer *l = &b->L[i];
        if (l->kind == L_ADD) continue;
        block *o = &out[n++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%.24s.l%d", b->name, i);
        shape_of(b, l->src, &o->H, &o->W, &o->C);
        o->L[0] = *l;
        o->L[0].src = 0;
        o->n = 1;
    }
    return n;
}

static const char *const set_names[] = {"mobilenet_v2", "resnet50", "resnet18", "vgg16", "mobilenet_v2_body",
                                        "resnet50_body"};

static int make_set(int set, block *out)
{
    switch (set) {
    case 0: return mbv2_blocks(out, 0);
    case 1: return resnet_blocks(out, 1, 0);
    case 2: return resnet_blocks(out, 0, 0);
    case 3: return vgg16_blocks(out);
    case 4: return mbv2_blocks(out, 1);
    default: return resnet_blocks(out, 1, 1);
    }
}

/* ------------------------------------------------------------ the weights */

typedef struct params {
    float *w[MAX_LAYERS], *bias[MAX_LAYERS];
} params;

static void make_params(const block *b, uint64_t seed, params *p)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < b->n; i++) {
        const layer *l = &b->L[i];
        if (l->kind != L_CONV) continue;
        int64_t h, w, c;
        shape_of(b, l->src, &h, &w, &c);
        int64_t cg = c / l->groups, nw = l->K * cg * l->R * l->S;
        p->w[i] = malloc((size_t)nw * sizeof(float));
        p->bias[i] = malloc((size_t)l->K * sizeof(float));
        cli_fill_random(p->w[i], (size_t)nw, seed + 2 * (uint64_t)i);
        cli_fill_random(p->bias[i], (size_t)l->K, seed + 2 * (uint64_t)i + 1);
        /* fan-in scaled, so activations stay near 1 through a whole body */
        float sc = 1.7f / sqrtf((float)(cg * l->R * l->S));
        for (int64_t j = 0; j < nw; j++) p->w[i][j] *= sc;
        for (int64_t j = 0; j < l->K; j++) p->bias[i][j] *= 0.1f;
    }
}

static void free_params(params *p)
{
    for (int i = 0; i < MAX_LAYERS; i++) free(p->w[i]), free(p->bias[i]);
}

/* ---------------------------------------------------------------- polysci */

static ps_expr *act_expr(ps_expr *x, int act)
{
    if (act == ACT_NONE) return x;
    x = ps_expr_binary(PS_EXPR_MAX, x, ps_expr_const(0.0f));
    return act == ACT_RELU6 ? ps_expr_binary(PS_EXPR_MIN, x, ps_expr_const(6.0f)) : x;
}

static ps_status build_graph(const block *b, int64_t N, const params *p, ps_graph **out)
{
    ps_graph *g = NULL;
    ps_status st = ps_graph_create(&g);
    ps_tensor t[MAX_LAYERS + 1];
    if (!st) st = ps_graph_add_input(g, "x", N, b->H, b->W, b->C, PS_LAYOUT_NHWC, &t[0]);
    for (int i = 0; i < b->n && !st; i++) {
        const layer *l = &b->L[i];
        char name[32];
        snprintf(name, sizeof name, "l%d", i);
        if (l->kind == L_CONV) {
            ps_conv_stage cv;
            ps_conv_stage_init(&cv);
            cv.input = t[l->src];
            cv.k = l->K;
            cv.groups = l->groups;
            cv.r = (int)l->R, cv.s = (int)l->S;
            cv.stride_h = cv.stride_w = (int)l->stride;
            cv.pad_top = cv.pad_bottom = cv.pad_left = cv.pad_right = (int)l->pad;
            cv.weights = p->w[i];
            cv.bias = p->bias[i];
            st = ps_graph_add_conv(g, l->act ? NULL : name, &cv, &t[i + 1]);
            if (!st && l->act) {
                ps_expr *e = act_expr(ps_expr_input(0), l->act);
                ps_tensor pre = t[i + 1];
                st = ps_graph_add_pointwise(g, name, e, 1, &pre, &t[i + 1]);
                ps_expr_free(e);
            }
        } else if (l->kind == L_MAXPOOL) {
            ps_pool_stage pp;
            ps_pool_stage_init(&pp);
            pp.input = t[l->src];
            pp.kind = PS_POOL_MAX;
            pp.r = (int)l->R, pp.s = (int)l->S;
            pp.stride_h = pp.stride_w = (int)l->stride;
            pp.pad_top = pp.pad_bottom = pp.pad_left = pp.pad_right = (int)l->pad;
            st = ps_graph_add_pool(g, name, &pp, &t[i + 1]);
        } else {
            ps_tensor ab[2] = {t[l->src], t[l->src2]};
            ps_expr *e = act_expr(ps_expr_binary(PS_EXPR_ADD, ps_expr_input(0), ps_expr_input(1)), l->act);
            st = ps_graph_add_pointwise(g, name, e, 2, ab, &t[i + 1]);
            ps_expr_free(e);
        }
    }
    if (!st) st = ps_graph_mark_output(g, t[b->n], PS_LAYOUT_NHWC);
    if (st) {
        ps_graph_destroy(g);
        g = NULL;
    }
    *out = g;
    return st;
}

static double block_flops(const block *b, int64_t N)
{
    double f = 0;
    for (int i = 0; i < b->n; i++) {
        const layer *l = &b->L[i];
        if (l->kind != L_CONV) continue;
        int64_t h, w, c, hi, wi, ci;
        shape_of(b, i + 1, &h, &w, &c);
        shape_of(b, l->src, &hi, &wi, &ci);
        f += 2.0 * (double)N * (double)(h * w * l->K) * (double)(ci / l->groups) * (double)(l->R * l->S);
    }
    return f;
}

/* ----------------------------------------------------------------- driver */

static void usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci bench chain [options]\n\n"
               "Times deep-learning blocks as one fused polysci graph beside oneDNN run layer by layer\n"
               "(post-ops; and its fused 1x1 + depthwise form) and polysci without fusion; reports medians\n"
               "over rounds and the ratios.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

#define N_IMPLS 4
static const char *const impl_names[N_IMPLS] = {"polysci-dp", "polysci-none", "onednn", "onednn-dwfused"};

int cli_bench_chain(int argc, char **argv)
{
    static const char cmd[] = "bench chain";
    const char *sets_arg = "mobilenet_v2,resnet50,resnet18,vgg16", *blocks_arg = NULL, *csv = NULL, *md = NULL;
    const char *impls_arg = "polysci-dp,polysci-none,onednn,onednn-dwfused";
    int64_t N = 1, threads = 2, rounds = 3, reps = 10, seed = 1, layer_top_k = 0;
    double layer_budget_ms = 0.0;
    int describe = 0, per_layer = 0;
    cli_opt opts[] = {
        {"sets", CLI_OPT_STRING, &sets_arg, 0, 0,
         "LIST  mobilenet_v2, resnet50, resnet18, vgg16, mobilenet_v2_body, resnet50_body (default the four block sets)", 0},
        {"blocks", CLI_OPT_STRING, &blocks_arg, 0, 0, "LIST  only these blocks (names as printed)", 0},
        {"impls", CLI_OPT_STRING, &impls_arg, 0, 0,
         "LIST  implementations timed (default all: polysci-dp, polysci-none, onednn, onednn-dwfused)", 0},
        {"N", CLI_OPT_INT, &N, 1, 64, "N  images (default 1)", 0},
        {"threads", CLI_OPT_INT, &threads, 1, 4096, "T  threads of every implementation (default 2)", 0},
        {"rounds", CLI_OPT_INT, &rounds, 1, MAX_ROUNDS, "R  rounds, each implementation once per round (default 3)", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  timed executions per implementation and round (default 10)", 0},
        {"seed", CLI_OPT_INT, &seed, 0, INT64_MAX, "S  seed of the weights and the input (default 1)", 0},
        {"layer-top-k", CLI_OPT_INT, &layer_top_k, 0, 100000,
         "K  polysci's convolutions planned as layers: time K candidates at plan time (the measured mode; default 0)", 0},
        {"layer-budget-ms", CLI_OPT_FLOAT, &layer_budget_ms, 0, 0,
         "MS  with --layer-top-k: the planning-time budget per convolution (0: none)", 0},
        {"describe", CLI_OPT_FLAG, &describe, 0, 0, "print each block's DP plan (groups, tiles, costs) to stderr", 0},
        {"per-layer", CLI_OPT_FLAG, &per_layer, 0, 0,
         "time each convolution and pooling layer of the blocks alone (named BLOCK.lI; residual adds left out)", 0},
        {"csv", CLI_OPT_STRING, &csv, 0, 0, "FILE  one row per block, implementation and round", 0},
        {"markdown", CLI_OPT_STRING, &md, 0, 0, "FILE  the summary table", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
#ifndef POLYSCI_CLI_HAVE_ONEDNN
    fprintf(stderr, "polysci %s: this build has no oneDNN (libdnnl-dev), the reference of the benchmark\n", cmd);
    return CLI_FAIL;
#else
    char sbuf[256], bbuf[1024];
    snprintf(sbuf, sizeof sbuf, "%s", sets_arg);
    snprintf(bbuf, sizeof bbuf, "%s", blocks_arg ? blocks_arg : "");
    char *sets[6], *only[64];
    int n_sets = cli_split_list(sbuf, sets, 6), n_only = blocks_arg ? cli_split_list(bbuf, only, 64) : 0;
    for (int i = 0; i < n_sets; i++)
        if (cli_choice(cmd, "--sets", sets[i], set_names, 6) < 0) return CLI_USAGE;
    char ibuf[256];
    snprintf(ibuf, sizeof ibuf, "%s", impls_arg);
    char *impl_list[N_IMPLS];
    int n_impl_list = cli_split_list(ibuf, impl_list, N_IMPLS), timed[N_IMPLS] = {0};
    for (int i = 0; i < n_impl_list; i++) {
        int k = cli_choice(cmd, "--impls", impl_list[i], impl_names, N_IMPLS);
        if (k < 0) return CLI_USAGE;
        timed[k] = 1;
    }
    omp_set_num_threads((int)threads);
    ps_context *ctx = NULL;
    if (cli_context_create((int)threads, &ctx)) return CLI_FAIL;
    FILE *fcsv = csv ? fopen(csv, "w") : NULL;
    FILE *fmd = md ? fopen(md, "w") : stdout;
    if ((csv && !fcsv) || !fmd) {
        fprintf(stderr, "polysci %s: cannot write %s\n", cmd, csv && !fcsv ? csv : md);
        if (fcsv) fclose(fcsv);
        ps_context_destroy(ctx);
        return CLI_FAIL;
    }
    if (fcsv) fprintf(fcsv, "set,block,implementation,round,median_ms,gflop,N,threads,groups,plan_ms,max_rel_err,note\n");
    fprintf(fmd, "| block | input | GFLOP | oneDNN ms | oneDNN dw-fused ms | polysci no fusion ms | polysci ms | "
                 "groups | vs best oneDNN | vs no fusion |\n|---|---|---|---|---|---|---|---|---|---|\n");
    /* a body splits into up to MAX_LAYERS one-layer blocks */
    const int cap = per_layer ? MAX_LAYERS : MAX_BLOCKS;
    block *blocks = malloc((size_t)(MAX_BLOCKS + cap) * sizeof *blocks);
    int status = blocks ? CLI_OK : CLI_FAIL;
    for (int si = 0; si < n_sets && status == CLI_OK; si++) {
        int set = cli_choice(cmd, "--sets", sets[si], set_names, 6);
        int nb = make_set(set, blocks);
        if (per_layer) {
            int n = 0;
            for (int bi = 0; bi < nb; bi++) {
                int wanted = !n_only;
                for (int k = 0; k < n_only; k++) wanted |= !strcmp(only[k], blocks[bi].name);
                if (wanted) n = split_layers(&blocks[bi], blocks + MAX_BLOCKS, n, cap);
            }
            memmove(blocks, blocks + MAX_BLOCKS, (size_t)n * sizeof *blocks);
            nb = n;
        }
        double logsum[3] = {0, 0, 0};
        int counted = 0;
        for (int bi = 0; bi < nb && status == CLI_OK; bi++) {
            block *b = &blocks[bi];
            int wanted = !n_only || per_layer;
            for (int k = 0; k < n_only; k++) wanted |= !strcmp(only[k], b->name);
            if (!wanted) continue;
            params p;
            make_params(b, (uint64_t)seed * 1000003u + (uint64_t)bi, &p);
            int64_t oh, ow, oc;
            shape_of(b, b->n, &oh, &ow, &oc);
            size_t in_n = (size_t)(N * b->H * b->W * b->C), out_n = (size_t)(N * oh * ow * oc);
            float *x = cli_alloc(in_n * sizeof(float)), *ref = cli_alloc(out_n * sizeof(float)),
                  *y[2] = {cli_alloc(out_n * sizeof(float)), cli_alloc(out_n * sizeof(float))};
            cli_fill_random(x, in_n, (uint64_t)seed + 77);
            /* oneDNN, both forms */
            onednn_chain *oc_[2] = {NULL, NULL};
            onednn_chain_layer ol[MAX_LAYERS];
            for (int i = 0; i < b->n; i++) {
                const layer *l = &b->L[i];
                ol[i] = (onednn_chain_layer){l->kind == L_CONV ? ONEDNN_CL_CONV : l->kind == L_MAXPOOL ? ONEDNN_CL_MAXPOOL : ONEDNN_CL_ADD,
                                             l->src, l->src2, l->K, l->R, l->S, l->stride, l->pad, l->groups,
                                             (onednn_chain_act)l->act, p.w[i], p.bias[i]};
            }
            int fused_dw = 0;
            for (int f = 0; f < 2; f++)
                if (onednn_chain_create(N, b->H, b->W, b->C, ol, b->n, f, &oc_[f])) status = CLI_FAIL;
            if (!status) onednn_chain_primitives(oc_[1], &fused_dw);
            /* polysci, DP and no fusion */
            ps_graph *g = NULL;
            ps_graph_plan *gp[2] = {NULL, NULL};
            double plan_ms[2] = {0, 0};
            int groups[2] = {0, 0};
            ps_status st = status ? PS_SUCCESS : build_graph(b, N, &p, &g);
            for (int f = 0; f < 2 && !st && !status; f++) {
                ps_graph_options go;
                ps_graph_options_init(&go);
                go.fusion = f ? PS_FUSION_NONE : PS_FUSION_DP;
                go.num_threads = (int)threads;
                go.layer_top_k = (int)layer_top_k;
                go.layer_time_budget_ms = layer_budget_ms;
                double t0 = cli_now_ms();
                st = ps_graph_plan_create(ctx, g, &go, &gp[f]);
                plan_ms[f] = cli_now_ms() - t0;
                if (!st) {
                    ps_graph_plan_stats s;
                    memset(&s, 0, sizeof s);
                    s.struct_size = sizeof s;
                    ps_graph_plan_get_stats(gp[f], &s);
                    groups[f] = s.n_groups;
                }
            }
            if (st) status = cli_report_status("ps_graph_plan_create", st);
            if (!status && describe) {
                size_t need = 0;
                ps_graph_plan_describe(gp[0], NULL, 0, &need);
                char *text = malloc(need + 1);
                if (text && ps_graph_plan_describe(gp[0], text, need + 1, NULL) == PS_SUCCESS)
                    fprintf(stderr, "%s: %s\n", b->name, text);
                free(text);
            }
            size_t ws_bytes = 0;
            void *ws = NULL;
            for (int f = 0; f < 2 && !status; f++) {
                size_t wsb = 0;
                ps_graph_plan_workspace_size(gp[f], &wsb);
                if (wsb > ws_bytes) ws_bytes = wsb;
            }
            if (!status) ws = cli_alloc(ws_bytes);
            /* check: everything against oneDNN's layer-by-layer result */
            double err = 0;
            int dwfused_wrong = 0;
            if (!status) {
                onednn_chain_set_input(oc_[0], x);
                onednn_chain_run(oc_[0]);
                onednn_chain_get_output(oc_[0], ref);
                double scale = 0;
                for (size_t i = 0; i < out_n; i++) scale = fmax(scale, fabs(ref[i]));
                for (int f = 0; f < 3; f++) {
                    const float *in[1] = {x};
                    float *outs[1] = {y[f % 2]};
                    if (f < 2) ps_graph_execute(gp[f], in, outs, ws);
                    else {
                        onednn_chain_set_input(oc_[1], x);
                        onednn_chain_run(oc_[1]);
                        onednn_chain_get_output(oc_[1], y[0]);
                    }
                    double e = 0;
                    for (size_t i = 0; i < out_n; i++) e = fmax(e, fabs(y[f % 2][i] - ref[i]) / (scale > 0 ? scale : 1));
                    if (!(e <= 1e-3)) {
                        fprintf(stderr, "polysci %s: %s: %s's output differs from oneDNN's by %.3g of max |y|%s\n", cmd,
                                b->name, impl_names[f == 2 ? 3 : f], e, f == 2 ? ": not timed" : "");
                        /* a wrong peer is left out, not counted; a wrong polysci stops the run */
                        if (f == 2) dwfused_wrong = 1;
                        else status = CLI_FAIL;
                    }
                    if (f < 2) err = fmax(err, e);
                }
            }
            /* timing: rounds, the order rotating */
            double med[N_IMPLS][MAX_ROUNDS];
            double *t = malloc((size_t)reps * sizeof *t);
            for (int r = 0; r < rounds && !status; r++)
                for (int k = 0; k < N_IMPLS; k++) {
                    int im = (k + r) % N_IMPLS;
                    med[im][r] = NAN;
                    if (im == 3 && timed[im] && (dwfused_wrong || !fused_dw) && fcsv)
                        fprintf(fcsv, "%s,%s,%s,%d,nan,%.5f,%lld,%lld,0,0,0,%s\n", set_names[set], b->name, impl_names[im], r,
                                block_flops(b, N) * 1e-9, (long long)N, (long long)threads,
                                dwfused_wrong ? "wrong output" : "none fused");
                    if (!timed[im] || (im == 3 && (dwfused_wrong || !fused_dw))) continue;
                    for (int rep = -2; rep < reps; rep++) {
                        double t0 = 0;
                        if (im >= 2) {
                            onednn_chain_set_input(oc_[im - 2], x); /* in-place sums overwrite it */
                            t0 = cli_now_ms();
                            onednn_chain_run(oc_[im - 2]);
                        } else {
                            const float *in[1] = {x};
                            float *outs[1] = {y[0]};
                            t0 = cli_now_ms();
                            ps_graph_execute(gp[im], in, outs, ws);
                        }
                        if (rep >= 0) t[rep] = cli_now_ms() - t0;
                    }
                    med[im][r] = cli_median(t, (int)reps);
                    if (fcsv)
                        fprintf(fcsv, "%s,%s,%s,%d,%.5f,%.5f,%lld,%lld,%d,%.3f,%.3g,\n", set_names[set], b->name,
                                impl_names[im], r, med[im][r], block_flops(b, N) * 1e-9, (long long)N, (long long)threads,
                                im < 2 ? groups[im] : onednn_chain_primitives(oc_[im - 2], NULL), im < 2 ? plan_ms[im] : 0.0, err);
                }
            free(t);
            if (!status) {
                double m[N_IMPLS];
                for (int k = 0; k < N_IMPLS; k++) m[k] = cli_median(med[k], (int)rounds);
                double best_dnn = isnan(m[3]) ? m[2] : isnan(m[2]) ? m[3] : fmin(m[2], m[3]);
                /* polysci's time: the DP plan's, else (not timed) the unfused one's */
                const double ps = isnan(m[0]) ? m[1] : m[0];
                fprintf(fmd, "| %s | %lldx%lldx%lld | %.3f | %.3f | %.3f%s | %.3f | %.3f | %d | %.2f | %.2f |\n", b->name,
                        (long long)b->H, (long long)b->W, (long long)b->C, block_flops(b, N) * 1e-9, m[2], m[3],
                        dwfused_wrong ? " (wrong output)" : fused_dw ? "" : " (none fused)", m[1], m[0], groups[0],
                        best_dnn / ps, m[1] / m[0]);
                fflush(fmd);
                logsum[0] += log(best_dnn / ps);
                logsum[1] += log(m[1] / m[0]);
                logsum[2] += log(m[2] / m[0]);
                counted++;
            }
            ps_graph_plan_destroy(gp[0]);
            ps_graph_plan_destroy(gp[1]);
            ps_graph_destroy(g);
            onednn_chain_destroy(oc_[0]);
            onednn_chain_destroy(oc_[1]);
            free(ws), free(x), free(ref), free(y[0]), free(y[1]);
            free_params(&p);
        }
        if (counted && status == CLI_OK)
            fprintf(fmd, "| **%s geomean** (N = %lld, %lld threads) | | | | | | | | **%.3f** | **%.3f** |\n", set_names[set],
                    (long long)N, (long long)threads, exp(logsum[0] / counted), exp(logsum[1] / counted));
    }
    free(blocks);
    if (fcsv) fclose(fcsv);
    if (md) fclose(fmd);
    ps_context_destroy(ctx);
    return status;
#endif
}
