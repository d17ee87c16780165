/* Every error path of the public API: exact status, a fresh non-empty
 * message (see TU_ERR in test_util.h), and outputs left untouched. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "reference.h"
#include "test_util.h"

#define BAD ((void *)(uintptr_t)0x1) /* a non-NULL out-pointer value that must be reset */

/* ------------------------------------------------------------ fixtures */

static ps_desc good_conv(void)
{
    ps_desc d;
    ps_desc_init_conv(&d);
    ps_conv_desc *c = &d.u.conv;
    c->N = 2; c->C = 16; c->K = 24; c->H = 9; c->W = 11; c->R = 3; c->S = 3;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 1;
    c->post_ops = PS_POST_BIAS | PS_POST_RELU;
    return d;
}

static ps_desc good_gemm(void)
{
    ps_desc d;
    ps_desc_init_gemm(&d);
    d.u.gemm.M = 20; d.u.gemm.N = 12; d.u.gemm.K = 17;
    return d;
}

/* A conv desc that must fail: validate, output size, schedule default, plan create. */
static void expect_desc_error(ps_context *ctx, const ps_desc *d, ps_status want, const char *what)
{
    const int before = tu_failures;
    TU_ERR(want, ps_desc_validate(d));
    ps_plan *plan = BAD;
    TU_ERR(want, ps_plan_create(ctx, d, NULL, &plan));
    TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
    ps_schedule *s = BAD;
    TU_ERR(want, ps_schedule_default(d, &s));
    TU_CHECK(s == NULL, "schedule_default failed but *out not NULL");
    /* a schedule valid for the good descriptor of the same kind */
    ps_schedule *ok = NULL;
    ps_desc g = d->kind == PS_OP_GEMM ? good_gemm() : good_conv();
    if (ps_schedule_default(&g, &ok) == PS_SUCCESS) {
        TU_ERR(want, ps_schedule_check(ok, d));
        ps_schedule_destroy(ok);
    }
    if (d->kind != PS_OP_GEMM) { /* for a gemm desc the error would be "not a conv" */
        int64_t OH = -777, OW = -777;
        TU_ERR(want, ps_conv_output_size(d, &OH, &OW));
        TU_CHECK(OH == -777 && OW == -777, "ps_conv_output_size wrote outputs on error");
    }
    if (tu_failures != before) fprintf(stderr, "    (case: %s)\n", what);
}

/* ------------------------------------------------------------ status, version, messages */

static void *thread_msg(void *arg)
{
    const char **out = arg;
    *out = ps_last_error_message();
    return (void *)(uintptr_t)(ps_last_error_message()[0] == 0);
}

static void test_status_version(void)
{
    static const struct { ps_status s; const char *n; } names[] = {
        {PS_SUCCESS, "PS_SUCCESS"}, {PS_ERR_NULL_POINTER, "PS_ERR_NULL_POINTER"},
        {PS_ERR_INVALID_ARG, "PS_ERR_INVALID_ARG"}, {PS_ERR_UNSUPPORTED, "PS_ERR_UNSUPPORTED"},
        {PS_ERR_OVERFLOW, "PS_ERR_OVERFLOW"}, {PS_ERR_OUT_OF_MEMORY, "PS_ERR_OUT_OF_MEMORY"},
        {PS_ERR_INVALID_SCHEDULE, "PS_ERR_INVALID_SCHEDULE"}, {PS_ERR_BACKEND, "PS_ERR_BACKEND"},
        {PS_ERR_BAD_WEIGHTS, "PS_ERR_BAD_WEIGHTS"}, {PS_ERR_BUFFER_TOO_SMALL, "PS_ERR_BUFFER_TOO_SMALL"},
        {PS_ERR_IO, "PS_ERR_IO"}, {PS_ERR_PARSE, "PS_ERR_PARSE"}, {PS_ERR_STALE, "PS_ERR_STALE"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *s = ps_status_str(names[i].s);
        TU_CHECK(s && !strcmp(s, names[i].n), "ps_status_str(%d) = '%s', want '%s'", (int)names[i].s,
                 s ? s : "(null)", names[i].n);
    }
    static const int unknown[] = {-1, 13, 14, 100, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = ps_status_str((ps_status)unknown[i]);
        TU_CHECK(s && s[0], "ps_status_str(%d) is NULL or empty", unknown[i]);
        for (size_t j = 0; s && j < sizeof names / sizeof names[0]; j++)
            TU_CHECK(strcmp(s, names[j].n), "ps_status_str(%d) names a real status '%s'", unknown[i], s);
    }
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", PS_VERSION_MAJOR, PS_VERSION_MINOR, PS_VERSION_PATCH);
    TU_CHECK(ps_version() && !strcmp(ps_version(), v), "ps_version() = '%s', header says '%s'",
             ps_version() ? ps_version() : "(null)", v);
    TU_CHECK(ps_api_version() == PS_API_VERSION, "ps_api_version() = %d, header %d", ps_api_version(), PS_API_VERSION);

    /* messages are per thread: a fresh thread sees "" */
    TU_ERR(PS_ERR_NULL_POINTER, ps_desc_validate(NULL));
    const char *other = NULL;
    pthread_t th;
    void *empty = NULL;
    TU_CHECK(pthread_create(&th, NULL, thread_msg, &other) == 0, "pthread_create");
    pthread_join(th, &empty);
    TU_CHECK(other != NULL && empty == (void *)(uintptr_t)1,
             "a new thread's ps_last_error_message() is not \"\" (it must not see other threads' errors)");
    TU_CHECK(ps_last_error_message()[0] != 0, "this thread's message vanished");
}

/* ------------------------------------------------------------ context */

static void test_context(void)
{
    ps_context_options_init(NULL); /* no-op, must not crash */
    ps_context_destroy(NULL);
    TU_CHECK(ps_context_num_threads(NULL) <= 0, "ps_context_num_threads(NULL) = %d", ps_context_num_threads(NULL));

    TU_ERR(PS_ERR_NULL_POINTER, ps_context_create(NULL, NULL));
    ps_context_options o;
    ps_context_options_init(&o);
    TU_CHECK(o.struct_size == sizeof o && o.num_threads == 0 && o.memory_limit == 0,
             "ps_context_options_init defaults: struct_size %zu, num_threads %d, memory_limit %zu", o.struct_size,
             o.num_threads, o.memory_limit);
    TU_ERR(PS_ERR_NULL_POINTER, ps_context_create(&o, NULL));
    static const size_t bad_sizes[] = {0, 1, sizeof(ps_context_options) - 1, sizeof(ps_context_options) + 8};
    for (size_t i = 0; i < 4; i++) {
        ps_context_options b = o;
        b.struct_size = bad_sizes[i];
        ps_context *c = BAD;
        TU_ERR(PS_ERR_INVALID_ARG, ps_context_create(&b, &c));
        TU_CHECK(c == NULL, "ps_context_create failed but *ctx not NULL");
    }
    ps_context_options b = o;
    b.num_threads = -1;
    ps_context *c = BAD;
    TU_ERR(PS_ERR_INVALID_ARG, ps_context_create(&b, &c));
    TU_CHECK(c == NULL, "ps_context_create failed but *ctx not NULL");

    /* num_threads: explicit, and 0 = OpenMP's default (OMP_NUM_THREADS when set) */
    b = o;
    b.num_threads = 3;
    c = NULL;
    TU_OK(ps_context_create(&b, &c));
    TU_CHECK(ps_context_num_threads(c) == 3, "num_threads 3 -> %d", ps_context_num_threads(c));
    ps_context_destroy(c);
    c = NULL;
    TU_OK(ps_context_create(NULL, &c));
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp && atoi(omp) > 0)
        TU_CHECK(ps_context_num_threads(c) == atoi(omp), "default threads %d, OMP_NUM_THREADS=%s",
                 ps_context_num_threads(c), omp);
    else
        TU_CHECK(ps_context_num_threads(c) >= 1, "default threads %d", ps_context_num_threads(c));
    ps_context_destroy(c);
}

/* ------------------------------------------------------------ descriptors */

static void test_desc(ps_context *ctx)
{
    ps_desc_init_conv(NULL);
    ps_desc_init_gemm(NULL);
    TU_ERR(PS_ERR_NULL_POINTER, ps_desc_validate(NULL));
    TU_CHECK(ps_desc_flops(NULL) == 0.0, "ps_desc_flops(NULL) = %g", ps_desc_flops(NULL));

    /* documented defaults */
    ps_desc d;
    ps_desc_init_conv(&d);
    const ps_conv_desc *c = &d.u.conv;
    TU_CHECK(d.struct_size == sizeof d && d.kind == PS_OP_CONV_FWD && c->stride_h == 1 && c->stride_w == 1 &&
             c->dilation_h == 1 && c->dilation_w == 1 && c->pad_top == 0 && c->pad_bottom == 0 &&
             c->pad_left == 0 && c->pad_right == 0 && c->layout == PS_LAYOUT_NHWC &&
             c->weight_layout == PS_WEIGHTS_KCRS && c->post_ops == 0 && c->N == 0 && c->C == 0 && c->K == 0 &&
             c->H == 0 && c->W == 0 && c->R == 0 && c->S == 0,
             "ps_desc_init_conv defaults");
    TU_ERR(PS_ERR_INVALID_ARG, ps_desc_validate(&d)); /* sizes 0 must be set */
    ps_desc_init_gemm(&d);
    const ps_gemm_desc *g = &d.u.gemm;
    TU_CHECK(d.struct_size == sizeof d && d.kind == PS_OP_GEMM && g->order == PS_COL_MAJOR && g->trans_a == 0 &&
             g->trans_b == 0 && g->lda == 0 && g->ldb == 0 && g->ldc == 0 && g->alpha == 1.0f && g->beta == 0.0f &&
             g->M == 0 && g->N == 0 && g->K == 0,
             "ps_desc_init_gemm defaults");
    TU_ERR(PS_ERR_INVALID_ARG, ps_desc_validate(&d));

    /* output size */
    d = good_conv();
    int64_t OH = -777, OW = -777;
    TU_ERR(PS_ERR_NULL_POINTER, ps_conv_output_size(NULL, &OH, &OW));
    TU_ERR(PS_ERR_NULL_POINTER, ps_conv_output_size(&d, NULL, &OW));
    TU_ERR(PS_ERR_NULL_POINTER, ps_conv_output_size(&d, &OH, NULL));
    TU_CHECK(OH == -777 && OW == -777, "ps_conv_output_size wrote outputs on error");
    ps_desc gd = good_gemm();
    TU_ERR(PS_ERR_INVALID_ARG, ps_conv_output_size(&gd, &OH, &OW));
    TU_CHECK(OH == -777 && OW == -777, "ps_conv_output_size wrote outputs on error");
    TU_OK(ps_conv_output_size(&d, &OH, &OW));
    TU_CHECK(OH == 9 && OW == 11, "output size %" PRId64 "x%" PRId64, OH, OW);

    /* struct_size and kind */
    static const size_t bad_sizes[] = {0, 1, sizeof(ps_desc) - 1, sizeof(ps_desc) + 8};
    for (size_t i = 0; i < 4; i++) {
        d = good_conv();
        d.struct_size = bad_sizes[i];
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "desc struct_size");
        d = good_gemm();
        d.struct_size = bad_sizes[i];
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "gemm desc struct_size");
    }
    static const int bad_kinds[] = {0, 3, -1, 100};
    for (size_t i = 0; i < 4; i++) {
        d = good_conv();
        d.kind = (ps_op_kind)bad_kinds[i];
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "desc kind");
    }

    /* conv fields: sizes, strides, dilations must be >= 1 */
#define CONV_FIELD_ERR(field, value, want)                                     \
    do {                                                                       \
        d = good_conv();                                                       \
        d.u.conv.field = (value);                                              \
        expect_desc_error(ctx, &d, want, "conv." #field " = " #value);         \
    } while (0)
    static const int64_t nonpos[] = {0, -1, INT64_MIN};
    for (int i = 0; i < 3; i++) {
        CONV_FIELD_ERR(N, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(C, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(K, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(H, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(W, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(R, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(S, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(stride_h, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(stride_w, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(dilation_h, nonpos[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(dilation_w, nonpos[i], PS_ERR_INVALID_ARG);
    }
    /* padding: >= 0 and < dilated filter extent (R = S = 3 here: extent 3) */
    CONV_FIELD_ERR(pad_top, -1, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_bottom, -1, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_left, -1, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_right, -1, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_top, 3, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_bottom, 3, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_left, 3, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_right, 3, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(pad_top, 1000, PS_ERR_INVALID_ARG);
    {
        /* with dilation 2 the extent is 5: pad 4 is legal, pad 5 is not */
        d = good_conv();
        d.u.conv.dilation_h = d.u.conv.dilation_w = 2;
        d.u.conv.pad_top = d.u.conv.pad_left = 4;
        TU_OK(ps_desc_validate(&d));
        d.u.conv.pad_top = 5;
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "pad_top = dilated extent");
        d.u.conv.pad_top = 4;
        d.u.conv.pad_right = 5;
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "pad_right = dilated extent");
        /* 1x1 filter: any padding is >= the extent */
        d = good_conv();
        d.u.conv.R = d.u.conv.S = 1;
        d.u.conv.pad_top = d.u.conv.pad_bottom = d.u.conv.pad_left = d.u.conv.pad_right = 0;
        TU_OK(ps_desc_validate(&d));
        d.u.conv.pad_bottom = 1;
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "1x1 filter with padding");
    }
    /* empty output: filter larger than the padded input */
    {
        d = good_conv();
        d.u.conv.R = 5;
        d.u.conv.H = 2;
        d.u.conv.pad_top = d.u.conv.pad_bottom = 1; /* 2 + 2 = 4 < 5 */
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "empty output (height)");
        d.u.conv.H = 3; /* 5 = 5: one output row */
        TU_OK(ps_desc_validate(&d));
        d = good_conv();
        d.u.conv.S = 3;
        d.u.conv.dilation_w = 4; /* extent 9 */
        d.u.conv.W = 4;
        d.u.conv.pad_left = d.u.conv.pad_right = 2; /* 8 < 9 */
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "empty output (dilated width)");
    }
    /* enums and flags */
    static const int bad_layouts[] = {2, -1, 100};
    for (int i = 0; i < 3; i++) {
        CONV_FIELD_ERR(layout, (ps_act_layout)bad_layouts[i], PS_ERR_INVALID_ARG);
        CONV_FIELD_ERR(weight_layout, (ps_weight_layout)(bad_layouts[i] == 2 ? 3 : bad_layouts[i]),
                       PS_ERR_INVALID_ARG);
    }
    CONV_FIELD_ERR(post_ops, 16u, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(post_ops, PS_POST_RELU | PS_POST_RELU6, PS_ERR_INVALID_ARG);
    CONV_FIELD_ERR(post_ops, PS_POST_BIAS | 32u, PS_ERR_INVALID_ARG);
    {
        /* the residual add reads NHWC only */
        d = good_conv();
        d.u.conv.layout = PS_LAYOUT_NCHW;
        d.u.conv.post_ops = PS_POST_SUM;
        expect_desc_error(ctx, &d, PS_ERR_UNSUPPORTED, "PS_POST_SUM with NCHW");
    }
    CONV_FIELD_ERR(post_ops, 0x80000000u, PS_ERR_INVALID_ARG);
    {
        /* a channel slice of a wider NHWC tensor: the stride at least K, NHWC only */
        d = good_conv();
        d.u.conv.dst_pixel_stride = d.u.conv.K - 1;
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "dst_pixel_stride < K");
        d.u.conv.dst_pixel_stride = -1;
        expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, "dst_pixel_stride < 0");
        d.u.conv.dst_pixel_stride = (int64_t)1 << 40;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "dst_pixel_stride too large");
        d = good_conv();
        d.u.conv.layout = PS_LAYOUT_NCHW;
        d.u.conv.dst_pixel_stride = d.u.conv.K + 3;
        expect_desc_error(ctx, &d, PS_ERR_UNSUPPORTED, "dst_pixel_stride with NCHW");
        d.u.conv.dst_pixel_stride = d.u.conv.K; /* tight: the same as 0 */
        TU_OK(ps_desc_validate(&d));
    }
    /* buffers whose element or byte counts overflow int64/size_t */
    {
        const int64_t big = (int64_t)1 << 30;
        d = good_conv();
        d.u.conv.N = big; d.u.conv.C = big; d.u.conv.H = 1024; d.u.conv.W = 1024; /* src 2^80 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "src elements overflow");
        d = good_conv();
        d.u.conv.N = big; d.u.conv.C = big; d.u.conv.H = 4; d.u.conv.W = 4; /* src 2^64 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "src elements = 2^64");
        d = good_conv();
        d.u.conv.N = big; d.u.conv.C = big; d.u.conv.H = 2; d.u.conv.W = 2; /* 2^62 elements: bytes 2^64 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "src bytes overflow size_t");
        d = good_conv();
        d.u.conv.N = big; d.u.conv.C = big; d.u.conv.H = 1; d.u.conv.W = 2; /* 2^61 elements: bytes 2^63 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "src bytes overflow int64");
        d = good_conv();
        d.u.conv.K = big; d.u.conv.C = big; d.u.conv.H = d.u.conv.W = 1024;
        d.u.conv.R = d.u.conv.S = 1024; d.u.conv.N = 1; /* weights 2^80 */
        d.u.conv.pad_top = d.u.conv.pad_bottom = d.u.conv.pad_left = d.u.conv.pad_right = 0;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "weight elements overflow");
        d = good_conv();
        d.u.conv.K = big; d.u.conv.N = big; d.u.conv.C = 1; d.u.conv.H = d.u.conv.W = 256; /* dst 2^76 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "dst elements overflow");
        d = good_conv();
        d.u.conv.N = INT64_MAX;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "N = INT64_MAX");
        d = good_conv();
        d.u.conv.H = INT64_MAX;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "H = INT64_MAX");
    }
#undef CONV_FIELD_ERR

    /* gemm fields */
#define GEMM_FIELD_ERR(field, value, want)                                     \
    do {                                                                       \
        d = good_gemm();                                                       \
        d.u.gemm.field = (value);                                              \
        expect_desc_error(ctx, &d, want, "gemm." #field " = " #value);         \
    } while (0)
    for (int i = 0; i < 3; i++) {
        GEMM_FIELD_ERR(M, nonpos[i], PS_ERR_INVALID_ARG);
        GEMM_FIELD_ERR(N, nonpos[i], PS_ERR_INVALID_ARG);
        GEMM_FIELD_ERR(K, nonpos[i], PS_ERR_INVALID_ARG);
    }
    GEMM_FIELD_ERR(order, (ps_matrix_order)2, PS_ERR_INVALID_ARG);
    GEMM_FIELD_ERR(order, (ps_matrix_order)-1, PS_ERR_INVALID_ARG);
    GEMM_FIELD_ERR(trans_a, 2, PS_ERR_INVALID_ARG);
    GEMM_FIELD_ERR(trans_a, -1, PS_ERR_INVALID_ARG);
    GEMM_FIELD_ERR(trans_b, 2, PS_ERR_INVALID_ARG);
    GEMM_FIELD_ERR(trans_b, 'T', PS_ERR_INVALID_ARG);
    /* leading dimensions: negative, or positive but smaller than the stored rows
     * (column-major) / columns (row-major) */
    for (int order = 0; order < 2; order++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                ps_desc base = good_gemm();
                base.u.gemm.order = (ps_matrix_order)order;
                base.u.gemm.trans_a = ta;
                base.u.gemm.trans_b = tb;
                const ps_gemm_desc *bg = &base.u.gemm;
                const int64_t la = ref_gemm_min_ld(bg, 'a'), lb = ref_gemm_min_ld(bg, 'b'), lc = ref_gemm_min_ld(bg, 'c');
                char what[96];
                snprintf(what, sizeof what, "ld too small, order %d trans %d/%d", order, ta, tb);
                d = base; d.u.gemm.lda = la - 1; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.ldb = lb - 1; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.ldc = lc - 1; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.lda = -1; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.ldb = -5; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.ldc = INT64_MIN; expect_desc_error(ctx, &d, PS_ERR_INVALID_ARG, what);
                d = base; d.u.gemm.lda = la; d.u.gemm.ldb = lb; d.u.gemm.ldc = lc;
                TU_OK(ps_desc_validate(&d)); /* the minimum itself is legal */
            }
    {
        const int64_t big = (int64_t)1 << 35;
        d = good_gemm(); d.u.gemm.M = big; d.u.gemm.N = big; /* C 2^70 */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "gemm C overflows");
        d = good_gemm(); d.u.gemm.lda = INT64_MAX / 2; /* A = lda * K elements */
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "gemm lda overflows");
        d = good_gemm(); d.u.gemm.ldc = (int64_t)1 << 62;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "gemm ldc overflows");
        d = good_gemm(); d.u.gemm.K = INT64_MAX;
        expect_desc_error(ctx, &d, PS_ERR_OVERFLOW, "gemm K = INT64_MAX");
    }
#undef GEMM_FIELD_ERR
}

/* ------------------------------------------------------------ schedules */

static void test_schedule_api(void)
{
    ps_desc d = good_conv();
    ps_schedule *s = NULL;
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_create(16, 8, 16, 1, NULL));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_add_loop(NULL, PS_DIM_K, 1, 0));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_parse(PS_OP_CONV_FWD, NULL, &s));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_parse(PS_OP_CONV_FWD, "8x8x8/1 : n", NULL));
    s = BAD;
    TU_ERR(PS_ERR_INVALID_ARG, ps_schedule_parse((ps_op_kind)0, "8x8x8/1 : n", &s));
    TU_CHECK(s == NULL, "parse failed but *out not NULL");
    TU_ERR(PS_ERR_INVALID_ARG, ps_schedule_parse((ps_op_kind)7, "8x8x8/1 : n", &s));
    TU_CHECK(ps_schedule_copy(NULL) == NULL, "ps_schedule_copy(NULL) != NULL");
    ps_schedule_destroy(NULL);
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_default(NULL, &s));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_default(&d, NULL));

    s = NULL;
    TU_OK(ps_schedule_default(&d, &s));
    if (!s) return;
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_check(NULL, &d));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_check(s, NULL));

    /* format: NULLs, unknown kind, buffer too small (snprintf-like) */
    char buf[256];
    size_t needed = 0;
    memset(buf, 'x', sizeof buf);
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_format(NULL, PS_OP_CONV_FWD, buf, sizeof buf, &needed));
    TU_ERR(PS_ERR_NULL_POINTER, ps_schedule_format(s, PS_OP_CONV_FWD, NULL, 10, &needed));
    TU_ERR(PS_ERR_INVALID_ARG, ps_schedule_format(s, (ps_op_kind)0, buf, sizeof buf, &needed));
    TU_ERR(PS_ERR_INVALID_ARG, ps_schedule_format(s, (ps_op_kind)9, buf, sizeof buf, &needed));
    TU_CHECK(buf[0] == 'x', "format wrote into buf on an argument error");
    ps_schedule_destroy(s);
}

/* Buffer-size behaviour shared by ps_schedule_format and ps_plan_describe. */
typedef ps_status (*text_fn)(const void *obj, char *buf, size_t len, size_t *needed);

static ps_status fmt_conv(const void *s, char *b, size_t l, size_t *n)
{
    return ps_schedule_format((const ps_schedule *)s, PS_OP_CONV_FWD, b, l, n);
}
static ps_status describe(const void *p, char *b, size_t l, size_t *n)
{
    return ps_plan_describe((const ps_plan *)p, b, l, n);
}

static void test_text_buffer(const char *name, text_fn fn, const void *obj)
{
    size_t needed = 0, needed2 = 12345;
    /* size query: no buffer */
    TU_ERR(PS_ERR_BUFFER_TOO_SMALL, fn(obj, NULL, 0, &needed));
    TU_CHECK(needed > 0 && needed < 100000, "%s: needed = %zu", name, needed);
    char *full = malloc(needed + 1 + 16);
    memset(full, 'x', needed + 17);
    TU_OK(fn(obj, full, needed + 1, &needed2));
    TU_CHECK(needed2 == needed, "%s: needed %zu then %zu", name, needed, needed2);
    TU_CHECK(strlen(full) == needed, "%s: strlen %zu, needed %zu", name, strlen(full), needed);
    TU_CHECK(full[needed + 1] == 'x', "%s: wrote past len", name);
    TU_OK(fn(obj, full, needed + 1, NULL)); /* needed is optional */
    /* one byte short: truncated, NUL-terminated, nothing past len */
    char *part = malloc(needed + 16);
    const size_t lens[] = {needed, needed / 2 + 1, 1};
    for (int i = 0; i < 3; i++) {
        const size_t len = lens[i];
        memset(part, 'x', needed + 16);
        needed2 = 0;
        TU_ERR(PS_ERR_BUFFER_TOO_SMALL, fn(obj, part, len, &needed2));
        TU_CHECK(needed2 == needed, "%s: len %zu: needed %zu, want %zu", name, len, needed2, needed);
        TU_CHECK(part[len - 1] == 0 && strncmp(part, full, len - 1) == 0,
                 "%s: len %zu: not the NUL-terminated prefix", name, len);
        TU_CHECK(part[len] == 'x', "%s: len %zu: wrote past len", name, len);
    }
    free(part);
    free(full);
}

/* ------------------------------------------------------------ plans and execution */

static int64_t count_not_sentinel(const float *p, int64_t n)
{
    int64_t bad = 0;
    const float s = tu_sentinel();
    for (int64_t i = 0; i < n; i++) bad += memcmp(&p[i], &s, sizeof s) != 0;
    return bad;
}

/* An execute call that must fail with `want` and leave dst untouched. */
#define EXEC_ERR(want, call, out, n)                                                       \
    do {                                                                                   \
        tu_fill((out), (n), tu_sentinel());                                                \
        TU_ERR(want, call);                                                                \
        const int64_t touched_ = count_not_sentinel((out), (n));                           \
        TU_CHECK(touched_ == 0, "%s: %" PRId64 " output elements written on error", #call, \
                 touched_);                                                                \
    } while (0)

static void test_plan(ps_context *ctx)
{
    tu_rng r = {99};
    ps_desc cd = good_conv(), gd = good_gemm();
    ps_plan *plan = BAD;
    ps_plan_options opts;
    ps_plan_options_init(NULL);
    ps_exec_args_init(NULL);
    ps_plan_options_init(&opts);
    TU_CHECK(opts.struct_size == sizeof opts && opts.schedule == NULL && opts.num_threads == 0,
             "ps_plan_options_init defaults");

    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_create(NULL, &cd, NULL, &plan));
    TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
    plan = BAD;
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_create(ctx, NULL, NULL, &plan));
    TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_create(ctx, &cd, NULL, NULL));
    static const size_t bad_sizes[] = {0, 1, sizeof(ps_plan_options) - 1, sizeof(ps_plan_options) + 8};
    for (int i = 0; i < 4; i++) {
        ps_plan_options o = opts;
        o.struct_size = bad_sizes[i];
        plan = BAD;
        TU_ERR(PS_ERR_INVALID_ARG, ps_plan_create(ctx, &cd, &o, &plan));
        TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
    }
    {
        ps_plan_options o = opts;
        o.num_threads = -1;
        plan = BAD;
        TU_ERR(PS_ERR_INVALID_ARG, ps_plan_create(ctx, &gd, &o, &plan));
        TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
    }
    {
        /* ranker, top_k, flags */
        static const struct { int ranker, top_k; unsigned flags; } bad[] = {
            {PS_RANKER_VOLUME + 1, 0, 0}, {-1, 0, 0}, {100, 0, 0}, {0, -1, 0}, {0, INT32_MIN, 0},
            {0, 0, PS_PLAN_NO_CACHE << 1}, {0, 0, 0x80000000u}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            ps_plan_options o = opts;
            o.ranker = (ps_ranker)bad[i].ranker;
            o.top_k = bad[i].top_k;
            o.flags = bad[i].flags;
            plan = BAD;
            TU_ERR(PS_ERR_INVALID_ARG, ps_plan_create(ctx, &cd, &o, &plan));
            TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL (ranker %d top_k %d flags 0x%x)",
                     bad[i].ranker, bad[i].top_k, bad[i].flags);
        }
    }
    {
        /* the measured mode's budget: negative, NaN, infinite, absurdly long */
        const double bad[] = {-1.0, -1e-9, NAN, INFINITY, -INFINITY, 1e8};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            ps_plan_options o = opts;
            o.top_k = 4;
            o.time_budget_ms = bad[i];
            plan = BAD;
            TU_ERR(PS_ERR_INVALID_ARG, ps_plan_create(ctx, &cd, &o, &plan));
            TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL (time_budget_ms %g)", bad[i]);
            TU_CHECK(strstr(ps_last_error_message(), "time_budget_ms") != NULL, "message: %s", ps_last_error_message());
        }
    }
    ps_plan_destroy(NULL);
    TU_CHECK(ps_plan_get_desc(NULL) == NULL, "ps_plan_get_desc(NULL)");
    TU_CHECK(ps_plan_get_schedule(NULL) == NULL, "ps_plan_get_schedule(NULL)");

    size_t bytes = 777;
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_describe(NULL, NULL, 0, &bytes));
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_packed_weights_size(NULL, &bytes));
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_workspace_size(NULL, &bytes));
    TU_CHECK(bytes == 777, "size written on error");

    /* conv plan */
    ps_plan *cp = NULL, *gp = NULL;
    TU_OK(ps_plan_create(ctx, &cd, NULL, &cp));
    TU_OK(ps_plan_create(ctx, &gd, NULL, &gp));
    if (!cp || !gp) {
        ps_plan_destroy(cp);
        ps_plan_destroy(gp);
        return;
    }
    TU_CHECK(ps_plan_get_desc(cp) && !memcmp(&ps_plan_get_desc(cp)->u.conv, &cd.u.conv, sizeof cd.u.conv),
             "ps_plan_get_desc does not return the descriptor");
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_packed_weights_size(cp, NULL));
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_workspace_size(cp, NULL));
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_describe(cp, NULL, 10, &bytes));
    test_text_buffer("ps_plan_describe(conv)", describe, cp);
    test_text_buffer("ps_plan_describe(gemm)", describe, gp);
    test_text_buffer("ps_schedule_format", fmt_conv, ps_plan_get_schedule(cp));
    {
        char sched[256], text[4096];
        TU_OK(ps_schedule_format(ps_plan_get_schedule(cp), PS_OP_CONV_FWD, sched, sizeof sched, NULL));
        TU_OK(ps_plan_describe(cp, text, sizeof text, NULL));
        TU_CHECK(strstr(text, sched) != NULL, "the description does not mention the schedule '%s'", sched);
    }

    /* wrong plan kind for weights */
    bytes = 777;
    TU_ERR(PS_ERR_INVALID_ARG, ps_plan_packed_weights_size(gp, &bytes));
    TU_CHECK(bytes == 777, "size written on error");

    const ps_conv_desc *c = &cd.u.conv;
    const int64_t nsrc = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S, ndst = c->N * c->K * c->H * c->W;
    size_t pbytes = 0;
    TU_OK(ps_plan_packed_weights_size(cp, &pbytes));
    float *src = tu_alloc_f(nsrc), *w = tu_alloc_f(nw), *bias = tu_alloc_f(c->K), *dst = tu_alloc_f(ndst);
    float *packed = tu_alloc(pbytes + 64), *packed2 = tu_alloc(pbytes + 64);
    const int64_t npk = (int64_t)(pbytes / sizeof(float));
    tu_fill_random(&r, src, nsrc);
    tu_fill_random(&r, w, nw);
    tu_fill_random(&r, bias, c->K);

    EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_pack_weights(NULL, w, packed), packed, npk);
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_pack_weights(cp, NULL, packed), packed, npk);
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_pack_weights(cp, w, NULL));
    EXEC_ERR(PS_ERR_INVALID_ARG, ps_plan_pack_weights(gp, w, packed), packed, npk);
    TU_OK(ps_plan_pack_weights(cp, w, packed));

    /* a correct run first, so the error paths below are known to be errors */
    tu_fill(dst, ndst, NAN);
    TU_OK(ps_conv_execute(cp, src, packed, bias, dst));
    {
        double *ref = tu_alloc_d(ndst), *mag = tu_alloc_d(ndst);
        int64_t L;
        ref_conv_fwd(c, src, w, bias, ref, mag, &L);
        ref_cmp cmp;
        ref_compare(dst, ref, mag, ndst, L, &cmp);
        TU_CHECK(cmp.n_bad == 0, "fixture conv wrong: %" PRId64 " bad", cmp.n_bad);
        free(ref);
        free(mag);
    }

    ps_exec_args a;
    ps_exec_args_init(&a);
    TU_CHECK(a.struct_size == sizeof a && !a.src && !a.weights && !a.bias && !a.dst && !a.a && !a.b && !a.c &&
             !a.workspace && !a.sum, "ps_exec_args_init defaults");
    a.src = src; a.weights = packed; a.bias = bias; a.dst = dst;
    TU_OK(ps_plan_execute(cp, &a));
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(NULL, &a), dst, ndst);
    TU_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, NULL));
    static const size_t bad_exec_sizes[] = {0, 1, sizeof(ps_exec_args) - 1, sizeof(ps_exec_args) + 8};
    for (int i = 0; i < 4; i++) {
        ps_exec_args b = a;
        b.struct_size = bad_exec_sizes[i];
        EXEC_ERR(PS_ERR_INVALID_ARG, ps_plan_execute(cp, &b), dst, ndst);
    }
    {
        ps_exec_args b = a; b.src = NULL;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, &b), dst, ndst);
        b = a; b.weights = NULL;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, &b), dst, ndst);
        b = a; b.bias = NULL; /* PS_POST_BIAS is set */
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, &b), dst, ndst);
        b = a; b.dst = NULL;
        TU_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, &b));
        /* gemm operands on a conv plan: conv operands missing */
        ps_exec_args x;
        ps_exec_args_init(&x);
        x.a = src; x.b = w; x.c = dst;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(cp, &x), dst, ndst);
    }
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_conv_execute(NULL, src, packed, bias, dst), dst, ndst);
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_conv_execute(cp, NULL, packed, bias, dst), dst, ndst);
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_conv_execute(cp, src, NULL, bias, dst), dst, ndst);
    EXEC_ERR(PS_ERR_NULL_POINTER, ps_conv_execute(cp, src, packed, NULL, dst), dst, ndst);
    TU_ERR(PS_ERR_NULL_POINTER, ps_conv_execute(cp, src, packed, bias, NULL));
    EXEC_ERR(PS_ERR_INVALID_ARG, ps_conv_execute(gp, src, packed, bias, dst), dst, ndst);
    EXEC_ERR(PS_ERR_INVALID_ARG, ps_gemm_execute(cp, src, w, dst), dst, ndst);

    /* bias is optional without PS_POST_BIAS */
    {
        ps_desc nb = cd;
        nb.u.conv.post_ops = PS_POST_RELU;
        ps_plan *p = NULL;
        TU_OK(ps_plan_create(ctx, &nb, NULL, &p));
        if (p) {
            size_t sz = 0;
            TU_OK(ps_plan_packed_weights_size(p, &sz));
            float *pk = tu_alloc(sz);
            TU_OK(ps_plan_pack_weights(p, w, pk));
            TU_OK(ps_conv_execute(p, src, pk, NULL, dst));
            free(pk);
        }
        ps_plan_destroy(p);
    }

    /* a residual add (PS_POST_SUM): needs args.sum; dst = relu(conv + bias + sum) */
    if (cd.u.conv.layout == PS_LAYOUT_NHWC) {
        ps_desc sd = cd;
        sd.u.conv.post_ops = PS_POST_BIAS | PS_POST_SUM | PS_POST_RELU;
        ps_plan *p = NULL;
        TU_OK(ps_plan_create(ctx, &sd, NULL, &p));
        if (p) {
            size_t sz = 0;
            TU_OK(ps_plan_packed_weights_size(p, &sz));
            float *pk = tu_alloc(sz), *sum = tu_alloc_f(ndst);
            TU_OK(ps_plan_pack_weights(p, w, pk));
            for (int64_t i = 0; i < ndst; i++) sum[i] = (float)((i * 7) % 13) * 0.25f - 1.5f;
            ps_exec_args b;
            ps_exec_args_init(&b);
            b.src = src; b.weights = pk; b.bias = bias; b.dst = dst;
            EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(p, &b), dst, ndst); /* no sum */
            b.sum = sum;
            TU_OK(ps_plan_execute(p, &b));
            ps_desc plain = cd;
            plain.u.conv.post_ops = PS_POST_BIAS;
            double *ref = tu_alloc_d(ndst), *mag = tu_alloc_d(ndst);
            int64_t L;
            ref_conv_fwd(&plain.u.conv, src, w, bias, ref, mag, &L);
            for (int64_t i = 0; i < ndst; i++) {
                ref[i] += sum[i];
                mag[i] += fabs(sum[i]);
                if (ref[i] < 0) ref[i] = 0;
            }
            ref_cmp cmp;
            ref_compare(dst, ref, mag, ndst, L + 1, &cmp);
            TU_CHECK(cmp.n_bad == 0, "conv + sum + relu wrong: %" PRId64 " bad", cmp.n_bad);
            free(ref), free(mag), free(pk), free(sum);
        }
        ps_plan_destroy(p);
    }

    /* weights not packed for this plan */
    {
        /* the user's unpacked weights, padded to the packed size */
        float *raw = tu_alloc(pbytes + 64);
        memset(raw, 0, pbytes + 64);
        memcpy(raw, w, (size_t)nw * sizeof(float));
        EXEC_ERR(PS_ERR_BAD_WEIGHTS, ps_conv_execute(cp, src, raw, bias, dst), dst, ndst);
        memset(raw, 0, pbytes + 64);
        EXEC_ERR(PS_ERR_BAD_WEIGHTS, ps_conv_execute(cp, src, raw, bias, dst), dst, ndst);
        free(raw);
        /* packed, then the header corrupted */
        memcpy(packed2, packed, pbytes);
        ((unsigned char *)packed2)[0] ^= 0x5a;
        EXEC_ERR(PS_ERR_BAD_WEIGHTS, ps_conv_execute(cp, src, packed2, bias, dst), dst, ndst);
        /* packed for a plan of another shape (more output channels) */
        ps_desc other = cd;
        other.u.conv.K = 40;
        ps_plan *op = NULL;
        TU_OK(ps_plan_create(ctx, &other, NULL, &op));
        if (op) {
            size_t ob = 0;
            TU_OK(ps_plan_packed_weights_size(op, &ob));
            float *ow = tu_alloc_f(40 * c->C * c->R * c->S);
            tu_fill_random(&r, ow, 40 * c->C * c->R * c->S);
            void *opk = tu_alloc(ob);
            TU_OK(ps_plan_pack_weights(op, ow, opk));
            EXEC_ERR(PS_ERR_BAD_WEIGHTS, ps_conv_execute(cp, src, opk, bias, dst), dst, ndst);
            free(ow);
            free(opk);
        }
        ps_plan_destroy(op);
        /* packed for the same shape under a different blocking (m = 8 vs the plan's) */
        ps_schedule *s8 = NULL;
        TU_OK(ps_schedule_parse(PS_OP_CONV_FWD, "8x11x16/1 : n* k* oh", &s8));
        ps_plan_options o8 = opts;
        o8.schedule = s8;
        TU_OK(ps_plan_create(ctx, &cd, &o8, &op));
        ps_schedule_destroy(s8);
        char text[128] = "";
        ps_schedule_format(ps_plan_get_schedule(cp), PS_OP_CONV_FWD, text, sizeof text, NULL);
        if (op && strncmp(text, "8x", 2) != 0) {
            size_t ob = 0;
            TU_OK(ps_plan_packed_weights_size(op, &ob));
            void *opk = tu_alloc(ob);
            TU_OK(ps_plan_pack_weights(op, w, opk));
            EXEC_ERR(PS_ERR_BAD_WEIGHTS, ps_conv_execute(cp, src, opk, bias, dst), dst, ndst);
            free(opk);
        }
        ps_plan_destroy(op);
        /* packed by another plan of the same shape and blocking: accepted */
        TU_OK(ps_plan_create(ctx, &cd, NULL, &op));
        if (op) {
            TU_OK(ps_plan_pack_weights(op, w, packed2));
            TU_OK(ps_conv_execute(cp, src, packed2, bias, dst));
        }
        ps_plan_destroy(op);
    }

    /* gemm plan */
    {
        const ps_gemm_desc *g = &gd.u.gemm;
        float *A = tu_alloc_f(g->M * g->K), *B = tu_alloc_f(g->K * g->N), *C = tu_alloc_f(g->M * g->N);
        const int64_t nc = g->M * g->N;
        tu_fill_random(&r, A, g->M * g->K);
        tu_fill_random(&r, B, g->K * g->N);
        tu_fill_random(&r, C, nc);
        TU_OK(ps_gemm_execute(gp, A, B, C));
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_gemm_execute(NULL, A, B, C), C, nc);
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_gemm_execute(gp, NULL, B, C), C, nc);
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_gemm_execute(gp, A, NULL, C), C, nc);
        TU_ERR(PS_ERR_NULL_POINTER, ps_gemm_execute(gp, A, B, NULL));
        ps_exec_args x;
        ps_exec_args_init(&x);
        x.a = A; x.b = B; x.c = C;
        TU_OK(ps_plan_execute(gp, &x));
        ps_exec_args y = x; y.a = NULL;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(gp, &y), C, nc);
        y = x; y.b = NULL;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(gp, &y), C, nc);
        y = x; y.c = NULL;
        TU_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(gp, &y));
        y = x; y.struct_size = 0;
        EXEC_ERR(PS_ERR_INVALID_ARG, ps_plan_execute(gp, &y), C, nc);
        /* conv operands on a gemm plan: gemm operands missing */
        ps_exec_args z;
        ps_exec_args_init(&z);
        z.src = A; z.weights = packed; z.dst = C;
        EXEC_ERR(PS_ERR_NULL_POINTER, ps_plan_execute(gp, &z), C, nc);
        free(A); free(B); free(C);
    }

    /* a schedule that does not fit: INVALID_SCHEDULE from plan_create */
    {
        ps_schedule *s = NULL;
        TU_OK(ps_schedule_parse(PS_OP_GEMM, "8x8x8/1 : m n", &s));
        ps_plan_options o = opts;
        o.schedule = s;
        plan = BAD;
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_plan_create(ctx, &gd, &o, &plan));
        TU_CHECK(plan == NULL, "plan_create failed but *plan not NULL");
        ps_schedule_destroy(s);
    }

    free(src); free(w); free(bias); free(dst); free(packed); free(packed2);
    ps_plan_destroy(cp);
    ps_plan_destroy(gp);
}

/* The context's memory limit: a plan needing a larger buffer is refused. */
static void test_memory_limit(void)
{
    ps_desc d = good_conv();
    d.u.conv.layout = PS_LAYOUT_NCHW; /* needs a conversion workspace */
    d.u.conv.N = 4; d.u.conv.H = d.u.conv.W = 40; d.u.conv.C = 8; d.u.conv.K = 8;
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    ps_plan *p = NULL;
    size_t ws = 0, pk = 0;
    TU_OK(ps_plan_create(ctx, &d, NULL, &p));
    if (p) {
        TU_OK(ps_plan_workspace_size(p, &ws));
        TU_OK(ps_plan_packed_weights_size(p, &pk));
        /* NCHW activations of 4*8*40*40 floats in and out must be converted */
        TU_CHECK(ws >= (size_t)2 * 4 * 8 * 40 * 40 * sizeof(float), "NCHW workspace only %zu bytes", ws);
    }
    ps_plan_destroy(p);
    ps_context_destroy(ctx);
    if (ws <= pk || ws == 0) return;

    ps_context_options o;
    ps_context_options_init(&o);
    o.memory_limit = ws - 1;
    ctx = NULL;
    TU_OK(ps_context_create(&o, &ctx));
    p = BAD;
    TU_ERR(PS_ERR_OUT_OF_MEMORY, ps_plan_create(ctx, &d, NULL, &p));
    TU_CHECK(p == NULL, "plan_create failed but *plan not NULL");
    ps_context_destroy(ctx);

    o.memory_limit = 2 * (ws + pk) + (1u << 20);
    ctx = NULL;
    TU_OK(ps_context_create(&o, &ctx));
    p = NULL;
    TU_OK(ps_plan_create(ctx, &d, NULL, &p));
    ps_plan_destroy(p);
    ps_context_destroy(ctx);
}

/* Wisdom: argument errors, unreadable/unwritable files, corrupt data. */
static void test_wisdom(ps_context *ctx)
{
    int n = -5;
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_export(NULL, "/tmp/x.wisdom"));
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_export(ctx, NULL));
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_import(NULL, "/tmp/x.wisdom", &n));
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_import(ctx, NULL, &n));
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_import_buffer(NULL, "x\n", 2, &n));
    TU_ERR(PS_ERR_NULL_POINTER, ps_wisdom_import_buffer(ctx, NULL, 10, &n));
    TU_CHECK(ps_context_cached_plans(NULL) <= 0, "ps_context_cached_plans(NULL) = %d", ps_context_cached_plans(NULL));
    ps_context_forget_plans(NULL);

    TU_ERR(PS_ERR_IO, ps_wisdom_export(ctx, "/nonexistent-polysci-dir/sub/x.wisdom"));
    TU_ERR(PS_ERR_IO, ps_wisdom_import(ctx, "/nonexistent-polysci-dir/x.wisdom", &n));
    TU_ERR(PS_ERR_IO, ps_wisdom_import(ctx, "/", &n)); /* a directory */

    /* corrupt data is rejected as a whole and the cache is unchanged */
    const int before = ps_context_cached_plans(ctx);
    static const char *garbage[] = {"", "\n", "garbage\n", "polysci wisdom\n", "\x01\x02\x03"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
        TU_ERR(PS_ERR_PARSE, ps_wisdom_import_buffer(ctx, garbage[i], strlen(garbage[i]), &n));
    TU_ERR(PS_ERR_PARSE, ps_wisdom_import_buffer(ctx, NULL, 0, &n));
    TU_CHECK(ps_context_cached_plans(ctx) == before, "a rejected import changed the cache (%d -> %d)", before,
             ps_context_cached_plans(ctx));

    /* round trip: plans made in one context are known to a fresh one after
     * export/import; a corrupted copy of the file is rejected as a whole */
    char path[] = "/tmp/ps_test_wisdom_XXXXXX";
    const int fd = mkstemp(path);
    TU_CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    close(fd);
    ps_context *a = NULL, *b = NULL;
    TU_OK(ps_context_create(NULL, &a));
    TU_OK(ps_context_create(NULL, &b));
    if (a && b) {
        ps_desc dc = good_conv(), dg = good_gemm(), ds = good_conv();
        ds.u.conv.dst_pixel_stride = ds.u.conv.K + 5; /* its own key: a slice of a wider tensor */
        ps_plan *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
        /* a measured plan (timed candidates within a budget): its own key,
         * and its timed choice comes back from wisdom without timing again */
        ps_plan_options measured;
        ps_plan_options_init(&measured);
        measured.top_k = 3;
        measured.time_budget_ms = 25.0;
        TU_OK(ps_plan_create(a, &dc, NULL, &p1));
        TU_OK(ps_plan_create(a, &dg, NULL, &p2));
        TU_OK(ps_plan_create(a, &ds, NULL, &p3));
        TU_OK(ps_plan_create(a, &dc, &measured, &p4));
        TU_CHECK(ps_context_cached_plans(a) == 4, "cached plans %d, want 4", ps_context_cached_plans(a));
        TU_OK(ps_wisdom_export(a, path));
        n = -1;
        TU_OK(ps_wisdom_import(b, path, &n));
        TU_CHECK(n == 4 && ps_context_cached_plans(b) == 4, "imported %d, cached %d", n, ps_context_cached_plans(b));
        ps_plan *q1 = NULL, *q4 = NULL;
        TU_OK(ps_plan_create(b, &dc, NULL, &q1));
        TU_OK(ps_plan_create(b, &dc, &measured, &q4));
        TU_CHECK(ps_context_cached_plans(b) == 4, "wisdom's plans were planned again: cached %d",
                 ps_context_cached_plans(b));
        char s1[256] = "", s2[256] = "";
        if (p1 && q1) {
            ps_schedule_format(ps_plan_get_schedule(p1), PS_OP_CONV_FWD, s1, sizeof s1, NULL);
            ps_schedule_format(ps_plan_get_schedule(q1), PS_OP_CONV_FWD, s2, sizeof s2, NULL);
            TU_CHECK(!strcmp(s1, s2), "imported plan runs '%s', exported '%s'", s2, s1);
        }
        if (p4 && q4) {
            ps_schedule_format(ps_plan_get_schedule(p4), PS_OP_CONV_FWD, s1, sizeof s1, NULL);
            ps_schedule_format(ps_plan_get_schedule(q4), PS_OP_CONV_FWD, s2, sizeof s2, NULL);
            TU_CHECK(!strcmp(s1, s2), "imported measured plan runs '%s', exported '%s'", s2, s1);
        }
        ps_plan_destroy(p1);
        ps_plan_destroy(p2);
        ps_plan_destroy(p3);
        ps_plan_destroy(p4);
        ps_plan_destroy(q1);
        ps_plan_destroy(q4);
        ps_context_forget_plans(b);
        TU_CHECK(ps_context_cached_plans(b) == 0, "forget_plans left %d", ps_context_cached_plans(b));
        /* flip one byte in every position class: header, middle, end */
        FILE *f = fopen(path, "rb");
        char buf[1 << 16];
        const size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        TU_CHECK(len > 16 && len < sizeof buf, "wisdom file of %zu bytes", len);
        for (size_t pos = 0; len > 16 && len < sizeof buf && pos < len - 1; pos += len / 7 + 1) {
            buf[pos] ^= 0x20;
            TU_ERR(PS_ERR_PARSE, ps_wisdom_import_buffer(b, buf, len, &n));
            buf[pos] ^= 0x20;
        }
        TU_CHECK(ps_context_cached_plans(b) == 0, "a corrupted import added %d plans", ps_context_cached_plans(b));
        TU_ERR(PS_ERR_PARSE, ps_wisdom_import_buffer(b, buf, len - 1, &n)); /* truncated */
        TU_OK(ps_wisdom_import_buffer(b, buf, len, &n));
        TU_CHECK(n == 4, "intact buffer: imported %d", n);
    }
    ps_context_destroy(a);
    ps_context_destroy(b);
    remove(path);
}

int main(void)
{
    printf("test_api_errors\n");
    test_status_version();
    test_context();
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    if (!ctx) return tu_finish("test_api_errors");
    test_desc(ctx);
    test_schedule_api();
    test_plan(ctx);
    test_memory_limit();
    test_wisdom(ctx);
    ps_context_destroy(ctx);
    return tu_finish("test_api_errors");
}
