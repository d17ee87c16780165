/* Randomized forward convolutions against the double-precision reference.
 *
 * >= 300 shapes from a seeded generator (PS_TEST_SEED overrides the seed,
 * PS_TEST_COUNT the number of random shapes) plus a fixed list of edge cases.
 * Every combination of activation layout x weight layout x post-ops recurs
 * every 24 shapes; stride, dilation, filter shape, padding, sizes are drawn.
 * The planner chooses the schedule (default options). Per shape we check:
 * validate/output size/flops, the plan's schedule passes ps_schedule_check and
 * round-trips through format/parse, pack + execute match the reference within
 * ref_tolerance, dst is fully written (pre-filled with NaN), inputs are not
 * modified, and (every few shapes) a second execute is bitwise identical.
 * The same in a context with a 64 KiB L3 (streamed outputs), and in ones
 * with a 128 KiB L2 and a slow or a fast L3, where the expert's cache rules
 * apply to these small shapes. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "plan/context_impl.h"
#include "reference.h"
#include "test_util.h"

typedef struct shape {
    ps_conv_desc d;
    const char *why; /* fixed edge cases: what they cover */
} shape;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *layout_name(ps_act_layout l) { return l == PS_LAYOUT_NCHW ? "NCHW" : "NHWC"; }
static const char *wlayout_name(ps_weight_layout l)
{
    return l == PS_WEIGHTS_KRSC ? "KRSC" : l == PS_WEIGHTS_RSCK ? "RSCK" : "KCRS";
}

static void print_shape(FILE *f, const ps_conv_desc *d)
{
    fprintf(f,
            "N=%" PRId64 " C=%" PRId64 " K=%" PRId64 " H=%" PRId64 " W=%" PRId64 " R=%" PRId64
            " S=%" PRId64 " stride=%" PRId64 "x%" PRId64 " pad(t,b,l,r)=%" PRId64 ",%" PRId64
            ",%" PRId64 ",%" PRId64 " dil=%" PRId64 "x%" PRId64 " %s %s post=%s%s",
            d->N, d->C, d->K, d->H, d->W, d->R, d->S, d->stride_h, d->stride_w, d->pad_top,
            d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h, d->dilation_w,
            layout_name(d->layout), wlayout_name(d->weight_layout),
            (d->post_ops & PS_POST_BIAS) ? "bias" : "-",
            (d->post_ops & PS_POST_RELU) ? "+relu" : (d->post_ops & PS_POST_RELU6) ? "+relu6" : "");
    if (d->dst_pixel_stride) fprintf(f, " dst_pixel_stride=%" PRId64, d->dst_pixel_stride);
}

static double conv_cost(const ps_conv_desc *d)
{
    int64_t OH, OW;
    if (!ref_conv_out_size(d, &OH, &OW)) return 0;
    return (double)d->N * (double)d->K * (double)d->C * (double)OH * (double)OW * (double)d->R *
           (double)d->S;
}

static ps_conv_desc base_desc(void)
{
    ps_desc d;
    ps_desc_init_conv(&d);
    return d.u.conv;
}

/* Fixed edge cases, always run first. */
static int fixed_shapes(shape *out)
{
    int n = 0;
#define ADD(why_, ...)                                                  \
    do {                                                                \
        ps_conv_desc d_ = base_desc();                                  \
        __VA_ARGS__;                                                    \
        out[n].d = d_;                                                  \
        out[n].why = why_;                                              \
        n++;                                                            \
    } while (0)
    ADD("resnet first layer, small", d_.N = 1; d_.C = 3; d_.K = 64; d_.H = d_.W = 23; d_.R = d_.S = 7;
        d_.stride_h = d_.stride_w = 2; d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 3);
    ADD("few channels, dilated taps, asymmetric padding (dilated: not merged, tap by tap)", d_.N = 2; d_.C = 3; d_.K = 44;
        d_.H = 13; d_.W = 15; d_.R = 3; d_.S = 5; d_.stride_h = 1; d_.stride_w = 2; d_.dilation_h = 2; d_.dilation_w = 3;
        d_.pad_top = 2; d_.pad_bottom = 1; d_.pad_left = 4; d_.pad_right = 1);
    ADD("few channels, two output-channel blocks around the rows (merged taps, 3 column phases)", d_.N = 2; d_.C = 3;
        d_.K = 96; d_.H = d_.W = 19; d_.R = d_.S = 5; d_.stride_h = d_.stride_w = 2;
        d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 2);
    ADD("few channels, 3x3 merged taps read from the padded copy, uneven padding (1 left, 2 right)", d_.N = 2;
        d_.C = 3; d_.K = 64; d_.H = 9; d_.W = 61; d_.R = d_.S = 3; d_.pad_top = 1; d_.pad_bottom = 2;
        d_.pad_left = 1; d_.pad_right = 2; d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("few channels, 3x3/2 merged taps from the padded copy, two output-channel blocks", d_.N = 1; d_.C = 3;
        d_.K = 128; d_.H = 11; d_.W = 40; d_.R = d_.S = 3; d_.stride_h = d_.stride_w = 2;
        d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 1; d_.layout = PS_LAYOUT_NCHW);
    ADD("few channels, merged taps, right padding only (the copy's zeros on one side)", d_.N = 2; d_.C = 3;
        d_.K = 64; d_.H = 10; d_.W = 20; d_.R = d_.S = 3; d_.pad_top = 1; d_.pad_right = 2;
        d_.weight_layout = PS_WEIGHTS_RSCK);
    ADD("few channels, merged 7x7/2 taps on a 2-column image (the copy mostly zeros)", d_.N = 2; d_.C = 3;
        d_.K = 64; d_.H = 9; d_.W = 2; d_.R = d_.S = 7; d_.stride_h = d_.stride_w = 2;
        d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 3; d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("few channels, dilated taps skip a 2-column image: tap-less columns zeroed, then accumulated",
        d_.N = 2; d_.C = 3; d_.K = 64; d_.H = 8; d_.W = 2; d_.R = d_.S = 3; d_.dilation_w = 3; d_.pad_top = 1;
        d_.pad_bottom = 1; d_.pad_left = d_.pad_right = 4; d_.post_ops = PS_POST_BIAS);
    ADD("K=425 1x1 (yolo-like head)", d_.N = 1; d_.C = 24; d_.K = 425; d_.H = 5; d_.W = 7; d_.R = d_.S = 1);
    ADD("K=425 3x3 padded NCHW", d_.N = 1; d_.C = 8; d_.K = 425; d_.H = 4; d_.W = 5; d_.R = d_.S = 3;
        d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 1; d_.layout = PS_LAYOUT_NCHW;
        d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("1x7 with horizontal padding", d_.N = 2; d_.C = 16; d_.K = 24; d_.H = 9; d_.W = 17; d_.R = 1;
        d_.S = 7; d_.pad_left = d_.pad_right = 3);
    ADD("7x1 with vertical padding", d_.N = 2; d_.C = 16; d_.K = 24; d_.H = 17; d_.W = 9; d_.R = 7;
        d_.S = 1; d_.pad_top = d_.pad_bottom = 3; d_.weight_layout = PS_WEIGHTS_RSCK);
    ADD("C=1 K=1", d_.N = 1; d_.C = 1; d_.K = 1; d_.H = 5; d_.W = 5; d_.R = d_.S = 3);
    ADD("1x1 input, 1x1 filter", d_.N = 3; d_.C = 5; d_.K = 7; d_.H = 1; d_.W = 1; d_.R = d_.S = 1);
    ADD("1x1 input, 3x3 filter, pad 1: only the centre tap", d_.N = 1; d_.C = 4; d_.K = 4; d_.H = 1;
        d_.W = 1; d_.R = d_.S = 3; d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 1;
        d_.post_ops = PS_POST_BIAS);
    ADD("dilated taps skip a 1-row image: outputs from padding + bias only", d_.N = 1; d_.C = 6; d_.K = 9;
        d_.H = 1; d_.W = 6; d_.R = 3; d_.S = 3; d_.dilation_h = 3; d_.pad_top = 2; d_.pad_bottom = 4;
        d_.pad_left = 2; d_.pad_right = 0; d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("asymmetric padding up to extent-1", d_.N = 1; d_.C = 6; d_.K = 9; d_.H = 4; d_.W = 6; d_.R = d_.S = 3;
        d_.pad_top = 2; d_.pad_bottom = 0; d_.pad_left = 0; d_.pad_right = 2; d_.layout = PS_LAYOUT_NCHW);
    ADD("stride 4 with asymmetric pad", d_.N = 2; d_.C = 3; d_.K = 5; d_.H = 19; d_.W = 21; d_.R = 5;
        d_.S = 3; d_.stride_h = d_.stride_w = 4; d_.pad_top = 1; d_.pad_bottom = 3; d_.pad_left = 0;
        d_.pad_right = 2);
    ADD("strided 1x1 over the subsampled copy (K >= 512, rows < 28 wide): strides 3 x 2, last input row and column unread",
        d_.N = 2; d_.C = 24; d_.K = 520; d_.H = 13; d_.W = 12; d_.R = d_.S = 1; d_.stride_h = 3; d_.stride_w = 2;
        d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("strided 1x1 over the subsampled copy, NCHW activations, KRSC weights", d_.N = 1; d_.C = 40; d_.K = 512;
        d_.H = 9; d_.W = 9; d_.R = d_.S = 1; d_.stride_h = d_.stride_w = 2; d_.layout = PS_LAYOUT_NCHW;
        d_.weight_layout = PS_WEIGHTS_KRSC);
    ADD("stride larger than filter (skipped input)", d_.N = 1; d_.C = 8; d_.K = 8; d_.H = 13; d_.W = 13;
        d_.R = d_.S = 1; d_.stride_h = d_.stride_w = 4);
    ADD("dilation 3, 3x3", d_.N = 1; d_.C = 16; d_.K = 16; d_.H = 12; d_.W = 12; d_.R = d_.S = 3;
        d_.dilation_h = d_.dilation_w = 3; d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 3;
        d_.weight_layout = PS_WEIGHTS_KRSC);
    ADD("dilation 2 x stride 2, different per axis", d_.N = 1; d_.C = 5; d_.K = 11; d_.H = 15; d_.W = 10;
        d_.R = 3; d_.S = 2; d_.dilation_h = 2; d_.dilation_w = 3; d_.stride_h = 2; d_.stride_w = 1;
        d_.pad_top = 4; d_.pad_left = 1; d_.layout = PS_LAYOUT_NCHW; d_.weight_layout = PS_WEIGHTS_RSCK);
    ADD("filter as large as padded input (1x1 output)", d_.N = 2; d_.C = 7; d_.K = 6; d_.H = 3; d_.W = 4;
        d_.R = 5; d_.S = 5; d_.pad_top = 1; d_.pad_bottom = 1; d_.pad_left = 1; d_.pad_right = 0);
    ADD("wide row, many ow blocks", d_.N = 1; d_.C = 16; d_.K = 32; d_.H = 3; d_.W = 131; d_.R = d_.S = 3;
        d_.pad_left = d_.pad_right = 1);
    ADD("C=64 K=64 3x3 resnet-like block", d_.N = 1; d_.C = 64; d_.K = 64; d_.H = d_.W = 8; d_.R = d_.S = 3;
        d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 1; d_.post_ops = PS_POST_BIAS | PS_POST_RELU);
    ADD("C=128 K=32 1x1 stride 2 NCHW", d_.N = 2; d_.C = 128; d_.K = 32; d_.H = d_.W = 9; d_.R = d_.S = 1;
        d_.stride_h = d_.stride_w = 2; d_.layout = PS_LAYOUT_NCHW; d_.weight_layout = PS_WEIGHTS_KRSC);
    ADD("C=300: reduction block remainder (300 = 4*64+44)", d_.N = 1; d_.C = 300; d_.K = 70; d_.H = 5; d_.W = 6;
        d_.R = d_.S = 1; d_.post_ops = PS_POST_BIAS);
    ADD("C=130 K=130 3x3 NCHW: remainders in both channel blocks", d_.N = 1; d_.C = 130; d_.K = 130; d_.H = 5;
        d_.W = 5; d_.R = d_.S = 3; d_.pad_top = d_.pad_bottom = d_.pad_left = d_.pad_right = 1;
        d_.layout = PS_LAYOUT_NCHW; d_.weight_layout = PS_WEIGHTS_RSCK; d_.post_ops = PS_POST_RELU);
    ADD("W=1 column image with 1x7 filter: horizontal taps mostly in padding", d_.N = 2; d_.C = 4; d_.K = 6;
        d_.H = 5; d_.W = 1; d_.R = 1; d_.S = 7; d_.pad_left = 3; d_.pad_right = 3; d_.weight_layout = PS_WEIGHTS_KRSC);
    /* 1x1, stride 1, few channels, post-ops: the row kernels' small GEMM with the epilogue in registers */
    ADD("1x1 C=24 K=48 bias+relu6 (small GEMM, one 48-row block)", d_.N = 2; d_.C = 24; d_.K = 48; d_.H = 9; d_.W = 7;
        d_.R = d_.S = 1; d_.post_ops = PS_POST_BIAS | PS_POST_RELU6);
    ADD("1x1 C=64 K=192 relu into a channel slice (small GEMM, strided output)", d_.N = 1; d_.C = 64; d_.K = 192; d_.H = 6;
        d_.W = 11; d_.R = d_.S = 1; d_.post_ops = PS_POST_RELU; d_.dst_pixel_stride = 200; d_.weight_layout = PS_WEIGHTS_RSCK);
    ADD("1x1 C=16 K=40 bias (small GEMM blocks and a LIBXSMM tail block)", d_.N = 3; d_.C = 16; d_.K = 40; d_.H = 5;
        d_.W = 13; d_.R = d_.S = 1; d_.post_ops = PS_POST_BIAS);
#undef ADD
    return n;
}

/* One random shape; `i` forces the categorical combination. */
static ps_conv_desc random_shape(tu_rng *r, int i)
{
    static const int64_t Cs[] = {1, 2, 3, 3, 4, 5, 7, 8, 13, 16, 17, 24, 32, 37, 64};
    static const int64_t Ks[] = {1, 2, 5, 5, 7, 8, 9, 16, 17, 24, 31, 32, 33, 48, 64, 425};
    static const int64_t RSs[][2] = {{1, 1}, {1, 1}, {3, 3}, {3, 3}, {3, 3}, {5, 5}, {1, 7}, {7, 1},
                                     {1, 3}, {3, 1}, {2, 2}, {2, 3}, {7, 7}, {4, 1}};
    static const int64_t strides[] = {1, 1, 1, 2, 2, 4};
    static const int64_t dils[] = {1, 1, 1, 1, 2, 3};
    static const int64_t Ns[] = {1, 1, 1, 2, 3};
    for (int attempt = 0;; attempt++) {
        ps_conv_desc d = base_desc();
        d.layout = (ps_act_layout)(i % 2);
        d.weight_layout = (ps_weight_layout)((i / 2) % 3);
        /* none, bias, relu, bias + relu, relu6, bias + relu6 */
        static const unsigned posts[6] = {0u, PS_POST_BIAS, PS_POST_RELU, PS_POST_BIAS | PS_POST_RELU, PS_POST_RELU6,
                                          PS_POST_BIAS | PS_POST_RELU6};
        d.post_ops = posts[(i / 6) % 6];
        d.N = tu_pick(r, Ns, 5);
        d.C = tu_pick(r, Cs, (int)(sizeof Cs / sizeof Cs[0]));
        d.K = tu_pick(r, Ks, (int)(sizeof Ks / sizeof Ks[0]));
        const int f = (int)tu_range(r, 0, (int64_t)(sizeof RSs / sizeof RSs[0]) - 1);
        d.R = RSs[f][0];
        d.S = RSs[f][1];
        d.stride_h = tu_pick(r, strides, 6);
        d.stride_w = tu_range(r, 0, 3) == 0 ? tu_pick(r, strides, 6) : d.stride_h;
        d.dilation_h = tu_pick(r, dils, 6);
        d.dilation_w = tu_range(r, 0, 3) == 0 ? tu_pick(r, dils, 6) : d.dilation_h;
        const int64_t eh = (d.R - 1) * d.dilation_h + 1, ew = (d.S - 1) * d.dilation_w + 1;
        /* padding: none, symmetric "same"-like, or independent per side */
        switch (tu_range(r, 0, 2)) {
        case 0: break;
        case 1:
            d.pad_top = d.pad_bottom = (eh - 1) / 2;
            d.pad_left = d.pad_right = (ew - 1) / 2;
            break;
        default:
            d.pad_top = tu_range(r, 0, eh - 1);
            d.pad_bottom = tu_range(r, 0, eh - 1);
            d.pad_left = tu_range(r, 0, ew - 1);
            d.pad_right = tu_range(r, 0, ew - 1);
            break;
        }
        /* odd sizes are as likely as even ones; at least one output */
        const int64_t hmin = eh - d.pad_top - d.pad_bottom, wmin = ew - d.pad_left - d.pad_right;
        d.H = tu_range(r, hmin > 1 ? hmin : 1, (hmin > 1 ? hmin : 1) + 14);
        d.W = tu_range(r, wmin > 1 ? wmin : 1, (wmin > 1 ? wmin : 1) + 20);
        if (d.K == 425 && (d.H > 6 || d.W > 6 || d.C > 16)) continue; /* keep the reference cheap */
        if (conv_cost(&d) > 1.5e6 && attempt < 100) continue;
        if (conv_cost(&d) <= 0) continue;
        /* NHWC: a quarter write a channel slice of a wider tensor */
        if (d.layout == PS_LAYOUT_NHWC && tu_range(r, 0, 3) == 0) d.dst_pixel_stride = d.K + tu_range(r, 1, 20);
        return d;
    }
}

typedef struct stats {
    int shapes, failed;
    int streamed; /* plans whose output is written with streaming stores */
    double max_norm_err;
    double t_plan, t_exec, t_ref;
} stats;

static void fail_shape(stats *st, int idx, const ps_conv_desc *d, const char *what, const char *detail)
{
    st->failed++;
    fprintf(stderr, "FAIL shape #%d: %s: %s\n    ", idx, what, detail ? detail : "");
    print_shape(stderr, d);
    fprintf(stderr, "\n");
}

static ps_ranker g_rankers[4] = {PS_RANKER_DEFAULT};
static int g_n_rankers = 1;

/* dst starts dst_off floats past a 64-byte boundary. */
static void run_shape(ps_context *ctx, tu_rng *r, int idx, const ps_conv_desc *cd, stats *st, int64_t dst_off,
                      int timing)
{
    char msg[1024];
    ps_desc desc;
    ps_desc_init_conv(&desc);
    desc.u.conv = *cd;
    st->shapes++;

    ps_status s = ps_desc_validate(&desc);
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_shape(st, idx, cd, "ps_desc_validate", msg);
        return;
    }
    int64_t OH = 0, OW = 0, rOH = 0, rOW = 0;
    ref_conv_out_size(cd, &rOH, &rOW);
    s = ps_conv_output_size(&desc, &OH, &OW);
    if (s != PS_SUCCESS || OH != rOH || OW != rOW) {
        snprintf(msg, sizeof msg, "%s, got %" PRId64 "x%" PRId64 " want %" PRId64 "x%" PRId64,
                 ps_status_str(s), OH, OW, rOH, rOW);
        fail_shape(st, idx, cd, "ps_conv_output_size", msg);
        return;
    }
    const double flops = ps_desc_flops(&desc), want_flops = 2.0 * conv_cost(cd);
    if (fabs(flops - want_flops) > 1e-9 * want_flops) {
        snprintf(msg, sizeof msg, "got %.0f want %.0f", flops, want_flops);
        fail_shape(st, idx, cd, "ps_desc_flops", msg);
    }

    const int64_t n_src = cd->N * cd->C * cd->H * cd->W;
    const int64_t n_w = cd->K * cd->C * cd->R * cd->S;
    const int64_t n_dst = cd->N * cd->K * OH * OW;
    float *src = tu_alloc_f(n_src), *w = tu_alloc_f(n_w), *bias = tu_alloc_f(cd->K);
    float *src0 = tu_alloc_f(n_src), *w0 = tu_alloc_f(n_w), *bias0 = tu_alloc_f(cd->K);
    float *dst_buf = tu_alloc_f(n_dst + dst_off), *dst = dst_buf + dst_off, *dst2 = NULL;
    /* a strided output (dst_pixel_stride > K): written into its own buffer,
     * whose floats between the slices must keep their sentinel, and gathered
     * into dst for the comparison */
    const int64_t ldo = cd->dst_pixel_stride > cd->K ? cd->dst_pixel_stride : 0, n_pix = cd->N * OH * OW;
    float *slice_buf = ldo ? tu_alloc_f(n_pix * ldo + dst_off) : NULL, *out = ldo ? slice_buf + dst_off : dst;
    double *ref = tu_alloc_d(n_dst), *mag = tu_alloc_d(n_dst);
    void *packed = NULL, *ws = NULL;
    tu_fill_random(r, src, n_src);
    tu_fill_random(r, w, n_w);
    tu_fill_random(r, bias, cd->K);
    memcpy(src0, src, (size_t)n_src * sizeof(float));
    memcpy(w0, w, (size_t)n_w * sizeof(float));
    memcpy(bias0, bias, (size_t)cd->K * sizeof(float));

    /* planner settings cycle: default options (NULL), each available ranker,
     * timing of the top 3 variants (where `timing`), plan cache bypassed */
    ps_plan *plan = NULL;
    double t0 = now_s();
    ps_plan_options popts;
    ps_plan_options_init(&popts);
    popts.ranker = g_rankers[(idx / 3) % g_n_rankers]; /* not in step with the layout cycle */
    popts.top_k = timing && idx % 7 == 3 ? 3 : 0;
    popts.flags = idx % 5 == 2 ? PS_PLAN_NO_CACHE : 0;
    s = ps_plan_create(ctx, &desc, idx % 6 == 0 ? NULL : &popts, &plan);
    st->t_plan += now_s() - t0;
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_shape(st, idx, cd, "ps_plan_create", msg);
        goto out;
    }

    char about[2048] = "";
    ps_plan_describe(plan, about, sizeof about, NULL);
    if (strstr(about, "streaming stores")) st->streamed++;

    /* the chosen schedule is legal and its text form round-trips */
    const ps_schedule *sched = ps_plan_get_schedule(plan);
    char text[512] = "", text2[512] = "";
    if (!sched) {
        fail_shape(st, idx, cd, "ps_plan_get_schedule", "NULL");
        goto out;
    }
    s = ps_schedule_check(sched, &desc);
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_shape(st, idx, cd, "ps_schedule_check(plan's schedule)", msg);
    }
    s = ps_schedule_format(sched, PS_OP_CONV_FWD, text, sizeof text, NULL);
    if (s != PS_SUCCESS) {
        fail_shape(st, idx, cd, "ps_schedule_format", ps_status_str(s));
    } else {
        ps_schedule *back = NULL;
        s = ps_schedule_parse(PS_OP_CONV_FWD, text, &back);
        if (s == PS_SUCCESS) s = ps_schedule_format(back, PS_OP_CONV_FWD, text2, sizeof text2, NULL);
        if (s != PS_SUCCESS || strcmp(text, text2) != 0) {
            snprintf(msg, sizeof msg, "'%s' -> %s '%s'", text, ps_status_str(s), text2);
            fail_shape(st, idx, cd, "schedule format/parse round trip", msg);
        }
        ps_schedule_destroy(back);
    }

    size_t pbytes = 0, wsbytes = 0;
    s = ps_plan_packed_weights_size(plan, &pbytes);
    if (s != PS_SUCCESS || pbytes < (size_t)n_w * sizeof(float)) {
        snprintf(msg, sizeof msg, "%s, %zu bytes for %" PRId64 " weights", ps_status_str(s), pbytes, n_w);
        fail_shape(st, idx, cd, "ps_plan_packed_weights_size", msg);
        goto out;
    }
    packed = tu_alloc(pbytes);
    s = ps_plan_pack_weights(plan, w, packed);
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_shape(st, idx, cd, "ps_plan_pack_weights", msg);
        goto out;
    }
    s = ps_plan_workspace_size(plan, &wsbytes);
    if (s != PS_SUCCESS) {
        fail_shape(st, idx, cd, "ps_plan_workspace_size", ps_status_str(s));
        goto out;
    }
    if (wsbytes && (idx % 3) != 0) ws = tu_alloc(wsbytes); /* else the plan allocates */

    tu_fill(dst, n_dst, NAN);
    if (ldo) tu_fill(out, n_pix * ldo, tu_sentinel());
    ps_exec_args args;
    ps_exec_args_init(&args);
    args.src = src;
    args.weights = packed;
    args.bias = (cd->post_ops & PS_POST_BIAS) ? bias : NULL;
    args.dst = out;
    args.workspace = ws;
    t0 = now_s();
    if (idx % 4 == 1 && !ws)
        s = ps_conv_execute(plan, src, packed, args.bias, out);
    else
        s = ps_plan_execute(plan, &args);
    st->t_exec += now_s() - t0;
    if (s != PS_SUCCESS) {
        snprintf(msg, sizeof msg, "%s: %s", ps_status_str(s), ps_last_error_message());
        fail_shape(st, idx, cd, "ps_plan_execute", msg);
        goto out;
    }

    if (ldo) {
        const float sentinel = tu_sentinel();
        int64_t touched = 0;
        for (int64_t p = 0; p < n_pix; p++) {
            memcpy(dst + p * cd->K, out + p * ldo, (size_t)cd->K * sizeof(float));
            for (int64_t k = cd->K; k < ldo; k++) touched += memcmp(&out[p * ldo + k], &sentinel, sizeof sentinel) != 0;
        }
        if (touched) {
            snprintf(msg, sizeof msg, "%" PRId64 " floats between the slices written", touched);
            fail_shape(st, idx, cd, "dst_pixel_stride", msg);
        }
    }
    int64_t L = 0;
    t0 = now_s();
    ref_conv_fwd(cd, src, w, bias, ref, mag, &L);
    st->t_ref += now_s() - t0;
    ref_cmp cmp;
    ref_compare(dst, ref, mag, n_dst, L, &cmp);
    if (cmp.max_norm_err > st->max_norm_err && cmp.n_bad == 0) st->max_norm_err = cmp.max_norm_err;
    if (cmp.n_bad) {
        /* decode the first bad element's coordinates for the report */
        int64_t e = cmp.first_bad, n_, k_, oh_, ow_;
        if (cd->layout == PS_LAYOUT_NCHW) {
            ow_ = e % OW; e /= OW; oh_ = e % OH; e /= OH; k_ = e % cd->K; n_ = e / cd->K;
        } else {
            k_ = e % cd->K; e /= cd->K; ow_ = e % OW; e /= OW; oh_ = e % OH; n_ = e / OH;
        }
        snprintf(msg, sizeof msg,
                 "%" PRId64 " of %" PRId64 " outputs wrong; first at n=%" PRId64 " k=%" PRId64
                 " oh=%" PRId64 " ow=%" PRId64 ": got %.9g want %.9g (normalized err %.3g); schedule '%s'",
                 cmp.n_bad, n_dst, n_, k_, oh_, ow_, cmp.first_got, cmp.first_ref, cmp.max_norm_err, text);
        fail_shape(st, idx, cd, "wrong result", msg);
    }
    if (memcmp(src, src0, (size_t)n_src * sizeof(float)) || memcmp(w, w0, (size_t)n_w * sizeof(float)) ||
        memcmp(bias, bias0, (size_t)cd->K * sizeof(float)))
        fail_shape(st, idx, cd, "inputs modified", "src, user weights or bias changed");

    if (idx % 5 == 0 && !ldo) { /* re-execute: bitwise identical (fixed reduction order) */
        dst2 = tu_alloc_f(n_dst);
        tu_fill(dst2, n_dst, NAN);
        args.dst = dst2;
        args.workspace = wsbytes ? (ws ? NULL : tu_alloc(wsbytes)) : NULL;
        s = ps_plan_execute(plan, &args);
        free(args.workspace);
        if (s != PS_SUCCESS || memcmp(dst, dst2, (size_t)n_dst * sizeof(float)))
            fail_shape(st, idx, cd, "second execute differs", ps_status_str(s));
    }

out:
    ps_plan_destroy(plan);
    free(src); free(w); free(bias); free(src0); free(w0); free(bias0);
    free(dst_buf); free(dst2); free(slice_buf); free(ref); free(mag); free(packed); free(ws);
}

int main(void)
{
    const uint64_t seed = tu_seed("test_conv_random", 20240611u);
    const char *cnt = getenv("PS_TEST_COUNT");
    const int n_random = cnt && *cnt ? atoi(cnt) : 300;
    tu_rng rng = {seed};
    ps_context *ctx = NULL;
    ps_status s = ps_context_create(NULL, &ctx);
    if (s != PS_SUCCESS) {
        fprintf(stderr, "ps_context_create: %s: %s\n", ps_status_str(s), ps_last_error_message());
        return 1;
    }
    g_n_rankers = tu_available_rankers(ctx, g_rankers);
    if (g_n_rankers == 0) return 1;
    stats st = {0};
    const double t0 = now_s();
    shape fixed[64];
    const int n_fixed = fixed_shapes(fixed);
    for (int i = 0; i < n_fixed; i++) {
        const int before = st.failed;
        run_shape(ctx, &rng, i, &fixed[i].d, &st, 0, 1);
        if (st.failed != before) fprintf(stderr, "    (fixed case: %s)\n", fixed[i].why);
    }
    for (int i = 0; i < n_random; i++) {
        /* each shape gets its own stream: a failure reproduces with the seed alone */
        tu_rng shape_rng = {seed ^ (0x5DEECE66Dull * (uint64_t)(i + 1))};
        const ps_conv_desc d = random_shape(&shape_rng, i);
        run_shape(ctx, &shape_rng, n_fixed + i, &d, &st, 0, 1);
    }
    ps_context_destroy(ctx);
    /* Streaming stores: a context whose L3 is 64 KiB streams every output
     * from 64 KiB (16 KiB with a calibrated slow L3: ps_machine_stream_bytes)
     * that one call per block writes (one reduction chunk, no post-ops, NHWC). The fixed shapes, shapes made for it (1x1, 3x3 whose
     * edge blocks take several calls and so do not stream, merged taps,
     * output channels in a remainder block of 16 and of 8 rows: LIBXSMM has
     * no masked streaming store) and random ones, dst at a 64-byte boundary
     * and (every third shape) one float past it, where the plain kernels run. */
    if (tu_context_with_caches(2, 16 << 10, 32 << 10, 64 << 10, &ctx) != PS_SUCCESS) return 1;
    const int streamed_before = st.streamed, shapes_before = st.shapes;
    static const int64_t stream_shapes[][6] = {/* C, K, H=W, R=S, pad, N */
                                               {64, 64, 14, 1, 0, 2},  {32, 48, 16, 3, 1, 2},
                                               {3, 64, 40, 3, 1, 2},   {64, 80, 12, 1, 0, 2},
                                               {16, 72, 12, 1, 0, 2},  {3, 64, 29, 7, 3, 1}};
    const int n_made = (int)(sizeof stream_shapes / sizeof stream_shapes[0]);
    const int n_stream_random = 40;
    for (int i = 0; i < n_fixed + n_made + n_stream_random; i++) {
        const int idx = n_fixed + n_random + i;
        tu_rng shape_rng = {seed ^ (0x94D049BB133111EBull * (uint64_t)(i + 1))};
        ps_conv_desc d;
        if (i < n_fixed) {
            d = fixed[i].d;
        } else if (i < n_fixed + n_made) {
            const int64_t *m = stream_shapes[i - n_fixed];
            d = base_desc();
            d.C = m[0];
            d.K = m[1];
            d.H = d.W = m[2];
            d.R = d.S = m[3];
            d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = m[4];
            d.N = m[5];
        } else {
            d = random_shape(&shape_rng, i);
        }
        /* No timing: the count below must not depend on which of the top
         * variants ran fastest (whether a plan streams follows its schedule). */
        run_shape(ctx, &shape_rng, idx, &d, &st, i % 3 == 2, 0);
    }
    ps_context_destroy(ctx);
    const int n_streamed = st.streamed - streamed_before;
    if (n_streamed < n_made) {
        fprintf(stderr, "FAIL: only %d of %d shapes in the 64 KiB-L3 context stream their output (want >= %d)\n",
                n_streamed, st.shapes - shapes_before, n_made);
        st.failed++;
    }
    const int stream_shapes_run = st.shapes - shapes_before;
    /* The expert rules that follow a slow last level and the L2's size
     * (docs/expert-rules.md): a context whose L3 is as slow as memory, with
     * a 128 KiB L2 and a 16 KiB L1, so that the small shapes here have filter
     * banks and images beyond half of L2; then with a fast L3 (the
     * input-stationary rules). Each time the fixed shapes and a tenth as
     * many random ones as above, planned with the expert schedule
     * (PS_RANKER_NONE: what the default options run on a slow L3). */
    const int rules_before = st.shapes;
    for (int fast = 0; fast <= 1; fast++) {
        if (tu_context_with_caches(2, 16 << 10, 128 << 10, 1 << 20, &ctx) != PS_SUCCESS) return 1;
        tu_set_l3_speed(ctx, fast ? 3 : 1);
        g_rankers[0] = PS_RANKER_NONE;
        g_n_rankers = 1;
        for (int i = 0; i < n_fixed + n_random / 10; i++) {
            const int idx = n_fixed + n_random + stream_shapes_run + (st.shapes - rules_before);
            tu_rng shape_rng = {seed ^ (0xD6E8FEB86659FD93ull * (uint64_t)(i + 1 + 1000 * fast))};
            const ps_conv_desc d = i < n_fixed ? fixed[i].d : random_shape(&shape_rng, i);
            run_shape(ctx, &shape_rng, idx, &d, &st, 0, 0);
        }
        ps_context_destroy(ctx);
    }
    printf("test_conv_random: %d shapes (%d fixed + %d random, then %d in a 64 KiB-L3 context: %d with streaming "
           "stores, then %d with a 128 KiB L2 and a slow and a fast L3), %d failed; max normalized error %.3g (<= 1 "
           "passes, tol(L) = 8u*sqrt(L)+2u); time %.1fs (plan %.1fs, exec %.1fs, reference %.1fs)\n",
           st.shapes, n_fixed, n_random, stream_shapes_run, n_streamed, st.shapes - rules_before, st.failed,
           st.max_norm_err, now_s() - t0, st.t_plan, st.t_exec, st.t_ref);
    return st.failed || tu_failures ? 1 : 0;
}
