/* Hand-written schedules: every legal schedule computes the reference result,
 * text forms round-trip, and illegal schedules are rejected.
 *
 * For each operation (padded, strided, dilated convs in both layouts and a
 * GEMM in both orders) a list of schedules in text form is run twice: once
 * parsed by ps_schedule_parse, once built by ps_schedule_create/add_loop from
 * this file's own reading of the text (an independent parser below), with
 * 1, 2 or 3 threads. The schedules cover different loop orders, tile loops
 * ("oh:4 ... oh"), tiles that do not divide the extent, kernel shapes with
 * remainders in m, n and k, chunked reductions (batch smaller than the
 * number of C blocks, including the reduction loop outermost so partial sums
 * and the bias/ReLU epilogue or beta must be handled across chunks), omitted
 * extent-1 dimensions, and parallel bands. */
#include "reference.h"
#include "test_util.h"

/* ------------------------------------------------------------ independent builder */

/* Builds a schedule from "MxNxK/B : loop loop ..." with create/add_loop. */
static ps_schedule *build(ps_op_kind kind, const char *text)
{
    int m, n, k, b, off = 0;
    if (sscanf(text, "%dx%dx%d/%d :%n", &m, &n, &k, &b, &off) != 4 || off == 0) {
        fprintf(stderr, "test bug: cannot read '%s'\n", text);
        abort();
    }
    ps_schedule *s = NULL;
    if (ps_schedule_create(m, n, k, b, &s) != PS_SUCCESS) return NULL;
    const char *p = text + off;
    char name[8];
    int used;
    while (sscanf(p, " %7[a-z]%n", name, &used) == 1) {
        p += used;
        long long tile = 1;
        int par = 0;
        if (*p == ':') {
            tile = strtoll(p + 1, (char **)&p, 10);
        }
        if (*p == '*') {
            par = 1;
            p++;
        }
        static const char *conv_names[] = {"n", "k", "oh", "ow", "c"};
        static const char *gemm_names[] = {"", "m", "", "n", "k"};
        int dim = -1;
        for (int d = 0; d < PS_DIM_COUNT; d++)
            if (!strcmp(name, kind == PS_OP_GEMM ? gemm_names[d] : conv_names[d])) dim = d;
        if (dim < 0) {
            fprintf(stderr, "test bug: loop '%s' in '%s'\n", name, text);
            abort();
        }
        if (ps_schedule_add_loop(s, (ps_dim)dim, tile, par) != PS_SUCCESS) {
            ps_schedule_destroy(s);
            return NULL;
        }
    }
    return s;
}

static int fmt_equals(const ps_schedule *s, ps_op_kind kind, const char *want, char *got, size_t len)
{
    if (ps_schedule_format(s, kind, got, len, NULL) != PS_SUCCESS) return 0;
    return strcmp(got, want) == 0;
}

/* ------------------------------------------------------------ cases */

typedef struct op_case {
    const char *name;
    ps_desc desc;
    const char *good[12];  /* legal schedules, canonical text form */
} op_case;

static ps_desc conv_desc(int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t R, int64_t S)
{
    ps_desc d;
    ps_desc_init_conv(&d);
    ps_conv_desc *c = &d.u.conv;
    c->N = N; c->C = C; c->K = K; c->H = H; c->W = W; c->R = R; c->S = S;
    return d;
}

/* 3x3 "same" convolution: padding 1 on every side, fused bias + ReLU. */
static void same_pad_bias_relu(ps_desc *d)
{
    ps_conv_desc *c = &d->u.conv;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 1;
    c->post_ops = PS_POST_BIAS | PS_POST_RELU;
}

static ps_desc gemm_desc(int64_t M, int64_t N, int64_t K)
{
    ps_desc d;
    ps_desc_init_gemm(&d);
    d.u.gemm.M = M; d.u.gemm.N = N; d.u.gemm.K = K;
    return d;
}

static int make_cases(op_case *cs)
{
    int n = 0;
    /* A: 3x3 same padding, bias + relu, NHWC/KCRS. OH = OW = 10.
     * Under 16x5x8/2: ext n 2, k 2, oh 10, ow 2, c 2. */
    cs[n] = (op_case){"conv A 3x3 pad 1, bias+relu", conv_desc(2, 32, 32, 10, 10, 3, 3), {
        "16x5x8/2 : n* k oh ow c",
        "16x5x8/2 : k* n* oh:4 ow c oh",
        "16x5x8/2 : c n k:2 oh:3 ow k oh",          /* reduction outermost: epilogue after the last chunk */
        "16x5x8/2 : oh:16* n k ow c oh",            /* tile larger than the extent */
        "32x10x32/1 : n* oh*",                      /* k, ow, c have extent 1: left out */
        "8x3x4/3 : oh:4* n k ow c oh",              /* remainders: ow 10 = 3+3+3+1, c 8 blocks in chunks of 3 */
        "32x5x5/4 : n* k* oh* ow c",                /* k = 5 does not divide C = 32 */
        "16x10x32/1 : n oh k",
        "7x4x8/1 : n:2* k:3* n k oh ow:2 ow c:2 c", /* m = 7: 5 blocks, last of 4 */
        NULL}};
    same_pad_bias_relu(&cs[n].desc);
    n++;
    /* B: strided, asymmetric padding, NCHW/KRSC, bias. OH = OW = 7. */
    cs[n] = (op_case){"conv B stride 2 asym pad NCHW", conv_desc(1, 24, 40, 15, 13, 3, 3), {
        "8x7x8/3 : k* oh",
        "40x7x24/1 : oh*",
        "16x4x8/1 : k:2* oh* k ow c",
        "8x2x6/2 : n c oh:2 oh k ow",
        "40x1x24/1 : ow* oh",
        NULL}};
    {
        ps_conv_desc *c = &cs[n].desc.u.conv;
        c->stride_h = c->stride_w = 2;
        c->pad_top = 1; c->pad_bottom = 0; c->pad_left = 1; c->pad_right = 1;
        c->layout = PS_LAYOUT_NCHW;
        c->weight_layout = PS_WEIGHTS_KRSC;
        c->post_ops = PS_POST_BIAS;
    }
    n++;
    /* C: 1x7 dilated by 2, C = 3, K = 5, RSCK, relu. OH = 6, OW = 19. */
    cs[n] = (op_case){"conv C 1x7 dil 2 C=3 K=5", conv_desc(3, 3, 5, 6, 20, 1, 7), {
        "5x19x3/1 : n* oh*",
        "5x8x3/1 : oh:2* n ow oh",
        "5x1x1/3 : n k oh ow c",
        "5x4x2/1 : ow:3 n oh c ow",
        "2x19x3/1 : k* n oh",
        NULL}};
    {
        ps_conv_desc *c = &cs[n].desc.u.conv;
        c->dilation_w = 2;
        c->pad_left = 6; c->pad_right = 5;
        c->weight_layout = PS_WEIGHTS_RSCK;
        c->post_ops = PS_POST_RELU;
    }
    n++;
    /* D: 7x1, stride 4 / 1, dilation 3 rows, K = 425-like odd count. OH = 6, OW = 9. */
    cs[n] = (op_case){"conv D 7x1 stride 4x1 dil 3", conv_desc(1, 5, 45, 30, 9, 7, 1), {
        "45x9x5/1 : oh*",
        "16x3x2/2 : k* oh ow c",
        "9x9x1/5 : oh:2* k oh",
        NULL}};
    {
        ps_conv_desc *c = &cs[n].desc.u.conv;
        c->stride_h = 4;
        c->dilation_h = 3;
        c->pad_top = 2; c->pad_bottom = 7;
        c->weight_layout = PS_WEIGHTS_KRSC;
    }
    n++;
    /* G1: column-major GEMM, padded lda, alpha 1.5, beta 0.5.
     * Under 32x16x32/2: ext m 3, n 5, k 2. */
    cs[n] = (op_case){"gemm G1 col-major 96x80x128", gemm_desc(96, 80, 128), {
        "32x16x32/2 : m:2* n:2* m n k",
        "96x80x128/1 :",
        "16x8x16/4 : k m n",                        /* reduction outermost: beta applied once */
        "32x20x16/3 : n:2* m n k",
        "24x7x24/2 : m* n k",                       /* remainders in n (80 = 11*7+3) and k (128 = 5*24+8) */
        "96x16x128/1 : n*",
        NULL}};
    cs[n].desc.u.gemm.lda = 101;
    cs[n].desc.u.gemm.alpha = 1.5f;
    cs[n].desc.u.gemm.beta = 0.5f;
    n++;
    /* G2: row-major, A transposed, B not; M = 40 rows of C, N = 24 columns.
     * m is the row block of C and n the column block, whatever the order. */
    cs[n] = (op_case){"gemm G2 row-major trans_a 40x24x33", gemm_desc(40, 24, 33), {
        "40x24x33/1 :",
        "8x24x11/1 : m* k",
        "40x8x16/1 : n* k",
        "8x8x4/3 : m* n* k",
        NULL}};
    cs[n].desc.u.gemm.order = PS_ROW_MAJOR;
    cs[n].desc.u.gemm.trans_a = 1;
    cs[n].desc.u.gemm.ldc = 29;
    cs[n].desc.u.gemm.alpha = -1.0f;
    cs[n].desc.u.gemm.beta = 1.0f;
    n++;
    /* G3: column-major, B transposed, odd primes. */
    cs[n] = (op_case){"gemm G3 col-major trans_b 37x41x43", gemm_desc(37, 41, 43), {
        "37x41x43/1 :",
        "8x8x8/2 : m:2* m n k",
        "16x3x5/3 : k n m",
        NULL}};
    cs[n].desc.u.gemm.trans_b = 1;
    cs[n].desc.u.gemm.beta = -2.0f;
    n++;
    /* N: 3x3, C = K = 128, bias + relu: the expert's calls (64 channels x
     * 2 C blocks x 9 taps) hold 288 KiB of weights, a quarter of the
     * context's 1 MiB L2 or more, so it runs 32-channel blocks (test_default). */
    cs[n] = (op_case){"conv N 3x3 C=128 K=128 narrow expert blocks", conv_desc(1, 128, 128, 6, 6, 3, 3), {
        "32x6x64/2 : n* k* oh* ow* c",
        "64x6x64/2 : k* oh ow c",
        NULL}};
    same_pad_bias_relu(&cs[n].desc);
    n++;
    /* O: 7x7 stride 2, C = 3: merged taps in q = 4 column phases; the
     * expert's blocks grow to ~75 columns per phase call, 200 of the 400
     * (test_default), the last phases of a 50-column block one narrower. */
    cs[n] = (op_case){"conv O 7x7/2 C=3 wide merged blocks", conv_desc(2, 3, 64, 9, 805, 7, 7), {
        "64x100x3/1 : n* k* c ow oh",
        "64x50x3/1 : n* k oh ow c",
        "64x30x3/1 : oh* n ow k c",
        NULL}};
    cs[n].desc.u.conv.stride_h = cs[n].desc.u.conv.stride_w = 2;
    n++;
    /* P: 3x3 stride 2, C = 3, K = 32, padding 1 (mobilenet_01's kind): the
     * taps do not merge (R*K/sh = 48), each batch entry reduces over C = 3
     * floats, so the expert's blocks grow to 112 of the 224 columns
     * (test_default). */
    cs[n] = (op_case){"conv P 3x3/2 C=3 wide per-tap blocks", conv_desc(1, 3, 32, 7, 448, 3, 3), {
        "32x112x3/1 : n* oh* ow* c k",
        "32x56x3/1 : oh* n ow k c",
        NULL}};
    cs[n].desc.u.conv.stride_h = cs[n].desc.u.conv.stride_w = 2;
    cs[n].desc.u.conv.pad_top = cs[n].desc.u.conv.pad_bottom = 1;
    cs[n].desc.u.conv.pad_left = cs[n].desc.u.conv.pad_right = 1;
    n++;
    /* Q: 3x3, C = 32, 150 output columns: the expert's width is the widest
     * divisor up to 30, 30 (not 25: LIBXSMM's 6-column register blocks). */
    cs[n] = (op_case){"conv Q 3x3 C=32 150 columns", conv_desc(1, 32, 64, 3, 150, 3, 3), {
        "64x30x32/1 : n* oh* ow* c k",
        "64x25x32/1 : oh* n ow k c",
        NULL}};
    same_pad_bias_relu(&cs[n].desc);
    n++;
    /* R: 1x1, C = 160, 2 x 19 pixels (one flattened row of 38): 19-column
     * blocks end in a 1-column register block, so the expert runs 24 and a
     * 14-column remainder (pick_width64). */
    cs[n] = (op_case){"conv R 1x1 38 pixels register blocks", conv_desc(2, 160, 64, 2, 19, 1, 1), {
        "64x24x32/5 : n* oh* ow* c k",
        "64x19x32/5 : n* k* ow c",
        NULL}};
    n++;
    /* S: 1x1, one image of 9 x 7 pixels, K = 200 (three 64-channel blocks
     * and one of 8), bias + ReLU: three 21-column tiles do not split over 2
     * threads, so the expert shares the output-channel blocks between them
     * too (n* oh* ow* k* c); test_default runs that plan on 2 threads. */
    cs[n] = (op_case){"conv S 1x1 shared channels", conv_desc(1, 160, 200, 9, 7, 1, 1), {
        "64x21x32/5 : n* oh* ow* k* c",
        "64x21x32/2 : n* oh* ow* k* c",
        "64x21x32/5 : n* oh* ow* c k",
        NULL}};
    cs[n].desc.u.conv.post_ops = PS_POST_BIAS | PS_POST_RELU;
    n++;
    /* T: 3x3, K = 13 (one block LIBXSMM would run in passes of 8, 4 and 1
     * rows): the kernels run 16 rows into a scratch block the executor adds
     * into the output (ps_exec_kernel_rows). Blocks of 6 (padded to 8) and a
     * last one of 1 (not padded); 5, 5, 3 (8 and 4) with 16 + 4 channels, so
     * a padded block accumulates over two reduction chunks and a tail. */
    cs[n] = (op_case){"conv T 3x3 K=13 padded rows", conv_desc(2, 20, 13, 9, 7, 3, 3), {
        "13x7x20/1 : n* oh* ow* c k",
        "13x7x8/2 : n* k* oh* ow* c",
        "6x7x8/2 : n* oh* ow* c k",
        "5x4x16/1 : n* k* oh* ow* c",
        NULL}};
    same_pad_bias_relu(&cs[n].desc);
    n++;
    /* U: a few-channel first layer (merged taps, 2 tap phases) with K = 6
     * output channels: padded to 8 rows, each phase through the scratch. */
    cs[n] = (op_case){"conv U 7x7/2 C=3 K=6 padded rows", conv_desc(2, 3, 6, 23, 23, 7, 7), {
        "6x12x3/1 : n* oh* ow* c k",
        "5x6x3/1 : n* k* ow* oh* c",
        NULL}};
    cs[n].desc.u.conv.stride_h = cs[n].desc.u.conv.stride_w = 2;
    cs[n].desc.u.conv.pad_top = cs[n].desc.u.conv.pad_bottom = 3;
    cs[n].desc.u.conv.pad_left = cs[n].desc.u.conv.pad_right = 3;
    n++;
    return n;
}

/* ------------------------------------------------------------ data + reference */

typedef struct op_data {
    float *src, *w, *bias, *a, *b, *c0;  /* inputs */
    double *ref, *mag;
    int64_t n_out, n_out_buf, L;
} op_data;

static void make_data(const ps_desc *d, tu_rng *r, op_data *o)
{
    memset(o, 0, sizeof *o);
    if (d->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &d->u.conv;
        int64_t OH, OW;
        ref_conv_out_size(c, &OH, &OW);
        const int64_t ns = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S;
        o->n_out = o->n_out_buf = c->N * c->K * OH * OW;
        o->src = tu_alloc_f(ns);
        o->w = tu_alloc_f(nw);
        o->bias = tu_alloc_f(c->K);
        tu_fill_random(r, o->src, ns);
        tu_fill_random(r, o->w, nw);
        tu_fill_random(r, o->bias, c->K);
        o->ref = tu_alloc_d(o->n_out);
        o->mag = tu_alloc_d(o->n_out);
        ref_conv_fwd(c, o->src, o->w, o->bias, o->ref, o->mag, &o->L);
    } else {
        const ps_gemm_desc *g = &d->u.gemm;
        const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a'));
        const int64_t nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b'));
        o->n_out_buf = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c'));
        o->n_out = g->M * g->N;
        o->a = tu_alloc_f(na);
        o->b = tu_alloc_f(nb);
        o->c0 = tu_alloc_f(o->n_out_buf);
        tu_fill_random(r, o->a, na);
        tu_fill_random(r, o->b, nb);
        tu_fill_random(r, o->c0, o->n_out_buf);
        o->ref = tu_alloc_d(o->n_out);
        o->mag = tu_alloc_d(o->n_out);
        ref_gemm(g, o->a, o->b, o->c0, o->ref, o->mag, &o->L);
    }
}

static void free_data(op_data *o)
{
    free(o->src); free(o->w); free(o->bias); free(o->a); free(o->b); free(o->c0);
    free(o->ref); free(o->mag);
}

static double max_norm_err = 0;

/* Creates a plan with `sched` and checks its result; returns 1 if correct. */
static int run_and_check(ps_context *ctx, const op_case *oc, const op_data *o, const ps_schedule *sched,
                         int nthreads, const char *label)
{
    const ps_desc *d = &oc->desc;
    ps_plan_options opts;
    ps_plan_options_init(&opts);
    opts.schedule = sched;
    opts.num_threads = nthreads;
    ps_plan *plan = NULL;
    ps_status s = ps_plan_create(ctx, d, &opts, &plan);
    if (s != PS_SUCCESS) {
        TU_CHECK(0, "%s: '%s': ps_plan_create -> %s: %s", oc->name, label, ps_status_str(s), ps_last_error_message());
        return 0;
    }
    /* the plan runs exactly this schedule */
    char want[512], got[512];
    const ps_op_kind kind = d->kind;
    TU_OK(ps_schedule_format(sched, kind, want, sizeof want, NULL));
    TU_CHECK(fmt_equals(ps_plan_get_schedule(plan), kind, want, got, sizeof got),
             "%s: plan's schedule '%s' differs from the requested '%s'", oc->name, got, want);

    float *out = tu_alloc_f(o->n_out_buf), *got_v = tu_alloc_f(o->n_out);
    void *packed = NULL;
    if (kind == PS_OP_CONV_FWD) {
        size_t bytes = 0;
        TU_OK(ps_plan_packed_weights_size(plan, &bytes));
        packed = tu_alloc(bytes);
        TU_OK(ps_plan_pack_weights(plan, o->w, packed));
        tu_fill(out, o->n_out_buf, NAN);
        s = ps_conv_execute(plan, o->src, packed, o->bias, out);
        memcpy(got_v, out, (size_t)o->n_out * sizeof(float));
    } else {
        memcpy(out, o->c0, (size_t)o->n_out_buf * sizeof(float));
        s = ps_gemm_execute(plan, o->a, o->b, out);
        const ps_gemm_desc *g = &d->u.gemm;
        for (int64_t j = 0; j < g->N; j++)
            for (int64_t i = 0; i < g->M; i++) got_v[i + j * g->M] = out[ref_gemm_index(g, 'c', i, j)];
    }
    int ok = s == PS_SUCCESS;
    TU_CHECK(ok, "%s: '%s': execute -> %s: %s", oc->name, label, ps_status_str(s), ps_last_error_message());
    if (ok) {
        ref_cmp cmp;
        ref_compare(got_v, o->ref, o->mag, o->n_out, o->L, &cmp);
        ok = cmp.n_bad == 0;
        TU_CHECK(ok, "%s: '%s' (%d threads): %" PRId64 " of %" PRId64 " wrong, first at %" PRId64
                 ": got %.9g want %.9g", oc->name, label, nthreads, cmp.n_bad, o->n_out, cmp.first_bad,
                 cmp.first_got, cmp.first_ref);
        if (ok && cmp.max_norm_err > max_norm_err) max_norm_err = cmp.max_norm_err;
    }
    free(out); free(got_v); free(packed);
    ps_plan_destroy(plan);
    return ok;
}

/* ------------------------------------------------------------ legal schedules */

static void test_good(ps_context *ctx, const op_case *oc, const op_data *o)
{
    const ps_op_kind kind = oc->desc.kind;
    char got[512];
    for (int i = 0; oc->good[i]; i++) {
        const char *text = oc->good[i];
        ps_schedule *parsed = NULL, *built = build(kind, text);
        TU_OK(ps_schedule_parse(kind, text, &parsed));
        TU_CHECK(built != NULL, "%s: create/add_loop failed for '%s': %s", oc->name, text, ps_last_error_message());
        if (!parsed || !built) {
            ps_schedule_destroy(parsed);
            ps_schedule_destroy(built);
            continue;
        }
        /* text form round-trips exactly, and both constructions agree */
        TU_CHECK(fmt_equals(parsed, kind, text, got, sizeof got), "format(parse('%s')) = '%s'", text, got);
        TU_CHECK(fmt_equals(built, kind, text, got, sizeof got), "format(built '%s') = '%s'", text, got);
        ps_status s = ps_schedule_check(parsed, &oc->desc);
        TU_CHECK(s == PS_SUCCESS, "%s: ps_schedule_check('%s') -> %s: %s", oc->name, text, ps_status_str(s),
                 ps_last_error_message());
        /* a copy is independent of the original */
        ps_schedule *copy = ps_schedule_copy(parsed);
        TU_CHECK(copy != NULL, "ps_schedule_copy returned NULL");
        ps_schedule_destroy(parsed);
        parsed = NULL;
        if (copy) {
            TU_CHECK(fmt_equals(copy, kind, text, got, sizeof got), "format(copy of '%s') = '%s'", text, got);
            run_and_check(ctx, oc, o, copy, 1 + i % 3, text);
            ps_schedule_destroy(copy);
        }
        run_and_check(ctx, oc, o, built, 1 + (i + 1) % 3, text);
        ps_schedule_destroy(built);
    }
}

/* The default schedule: legal, the documented fixed order, correct. */
static void test_default(ps_context *ctx, ps_context *small_l2, const op_case *oc, const op_data *o)
{
    const ps_op_kind kind = oc->desc.kind;
    ps_schedule *s = NULL;
    TU_OK(ps_schedule_default(&oc->desc, &s));
    if (!s) return;
    TU_OK(ps_schedule_check(s, &oc->desc));
    char text[512];
    TU_OK(ps_schedule_format(s, kind, text, sizeof text, NULL));
    /* loops appear in the order n k oh ow c (few-channel convs of N >= 2 images, C <= 16 with
     * S > 1, undilated, R*K >= 128*stride_h: n k ow oh c; gemm m n k), parallel ones only among the first four
     * (gemm m n) and only as the outer band */
    static const char *conv_order[] = {"n", "k", "oh", "ow", "c"}, *strip_order[] = {"n", "k", "ow", "oh", "c"},
                      *gemm_order[] = {"m", "n", "k"};
    const ps_conv_desc *cd = &oc->desc.u.conv;
    const int strips = kind != PS_OP_GEMM && cd->N >= 2 && cd->C <= 16 && cd->S > 1 && cd->dilation_w == 1 &&
                       cd->R * cd->K >= 128 * cd->stride_h;
    const char **order = kind == PS_OP_GEMM ? gemm_order : strips ? strip_order : conv_order;
    const int n_order = kind == PS_OP_GEMM ? 3 : 5, n_par = kind == PS_OP_GEMM ? 2 : 4;
    const char *q = strchr(text, ':');
    int pos = 0, band = 1, ok = q != NULL;
    char name[16];
    int used;
    if (q) q++;
    while (ok && sscanf(q, " %15[a-z0-9:*]%n", name, &used) == 1) {
        q += used;
        const int par = strchr(name, '*') != NULL;
        name[strcspn(name, ":*")] = 0;
        while (pos < n_order && strcmp(order[pos], name)) pos++;
        if (pos == n_order) ok = 0;
        else if (par && (pos >= n_par || !band)) ok = 0;
        if (!par) band = 0;
        pos++;
    }
    TU_CHECK(ok, "%s: default schedule '%s' is not the documented fixed order", oc->name, text);
    run_and_check(ctx, oc, o, s, 2, text);
    ps_schedule_destroy(s);

    /* The expert schedule (no search) on one thread, where nothing needs
     * balancing: these GEMMs' B fits in half of the 1 MiB L2, so they keep
     * the fixed order; with a 2 KiB L2 (small_l2) they get band tiles of
     * 8 x 2 blocks around the reduction loop, larger than these small tile
     * spaces (partial tiles), or where A is read in place tiles of whole
     * rows of blocks. These convs' weights are small, so they run the
     * input-stationary order (output-channel blocks innermost, after the
     * reduction loop). */
    ps_plan_options po;
    ps_plan_options_init(&po);
    po.ranker = PS_RANKER_NONE;
    po.num_threads = 1;
    po.flags = PS_PLAN_NO_CACHE;
    ps_plan *p = NULL;
    if (kind == PS_OP_GEMM) {
        TU_OK(ps_plan_create(small_l2, &oc->desc, &po, &p));
        if (!p) return;
        TU_OK(ps_schedule_format(ps_plan_get_schedule(p), kind, text, sizeof text, NULL));
        /* G3 reads A in place (alpha 1, no transpose): its tiles are whole
         * rows and columns of blocks (gemm_in_place_tiles), here one block
         * each way: the fixed order's walk. */
        const ps_gemm_desc *g = &oc->desc.u.gemm;
        if (g->alpha == 1.0f && !(g->order == PS_ROW_MAJOR ? g->trans_b : g->trans_a))
            TU_CHECK(strchr(text, ':') && !strcmp(strchr(text, ':'), ": m* n* k"),
                     "%s: expert schedule on one thread, 2 KiB L2, A in place: '%s', want one tile of 1 x 1 blocks",
                     oc->name, text);
        else
            TU_CHECK(strstr(text, ": m:8* n:2* k m n") != NULL,
                     "%s: expert schedule on one thread, 2 KiB L2, '%s' has no band tiles", oc->name, text);
        run_and_check(small_l2, oc, o, ps_plan_get_schedule(p), 1, text);
        ps_plan_destroy(p);
        p = NULL;
    }
    TU_OK(ps_plan_create(ctx, &oc->desc, &po, &p));
    if (!p) return;
    TU_OK(ps_schedule_format(ps_plan_get_schedule(p), kind, text, sizeof text, NULL));
    if (kind == PS_OP_GEMM)
        TU_CHECK(strchr(text, ':') && !strcmp(strchr(text, ':'), ": m* n* k"),
                 "%s: expert schedule on one thread '%s' is not the fixed order (B fits in half of L2)", oc->name, text);
    if (strstr(oc->name, "narrow"))
        TU_CHECK(!strncmp(text, "32x", 3), "%s: expert schedule '%s' has no 32-channel blocks", oc->name, text);
    if (strstr(oc->name, "wide merged"))
        TU_CHECK(!strncmp(text, "64x200x", 7), "%s: expert schedule '%s' has no 200-column blocks", oc->name, text);
    if (strstr(oc->name, "150 columns"))
        TU_CHECK(!strncmp(text, "64x30x", 6), "%s: expert schedule '%s' has no 30-column blocks", oc->name, text);
    if (strstr(oc->name, "register blocks"))
        TU_CHECK(!strncmp(text, "64x24x", 6), "%s: expert schedule '%s' has no 24-column blocks", oc->name, text);
    if (strstr(oc->name, "wide per-tap"))
        TU_CHECK(!strncmp(text, "32x112x", 7), "%s: expert schedule '%s' has no 112-column blocks", oc->name, text);
    run_and_check(ctx, oc, o, ps_plan_get_schedule(p), 1, text);
    if (strstr(oc->name, "padded rows")) {
        /* The expert's one block of K < 16 channels packs as many weights
         * as a block of the padded size (K = 13, 6 -> 16, 8 rows). */
        ps_desc padded = oc->desc;
        padded.u.conv.K = oc->desc.u.conv.K > 8 ? 16 : 8;
        ps_plan *q = NULL;
        size_t got_bytes = 0, want_bytes = 0;
        TU_OK(ps_plan_create(ctx, &padded, &po, &q));
        TU_OK(ps_plan_packed_weights_size(p, &got_bytes));
        if (q) TU_OK(ps_plan_packed_weights_size(q, &want_bytes));
        TU_CHECK(got_bytes == want_bytes && want_bytes > 0,
                 "%s: packed weights %zu bytes, want %zu (the block padded to %lld rows)", oc->name, got_bytes,
                 want_bytes, (long long)padded.u.conv.K);
        ps_plan_destroy(q);
    }
    ps_plan_destroy(p);
    if (strstr(oc->name, "shared channels")) {
        /* on 2 threads the tiles are uneven: channel blocks shared too */
        p = NULL;
        po.num_threads = 2;
        TU_OK(ps_plan_create(ctx, &oc->desc, &po, &p));
        if (!p) return;
        TU_OK(ps_schedule_format(ps_plan_get_schedule(p), kind, text, sizeof text, NULL));
        TU_CHECK(!strcmp(text, "64x21x32/5 : n* oh* ow* k* c"), "%s: expert schedule on 2 threads '%s'", oc->name,
                 text);
        run_and_check(ctx, oc, o, ps_plan_get_schedule(p), 2, text);
        ps_plan_destroy(p);
    }
}

/* Few-channel convs whose taps merge walk column strips (ow outside oh) in
 * the default schedule, but not for one image, where the threads would split
 * each row's strips; other convs walk rows. */
/* The expert's column block for one-vector kernels (K <= 16) whose columns'
 * input pixels lie a multiple of 4 KiB apart (C x stride floats): at most
 * PS_ALIASED_MAX_N (10) columns, the widest divisor of OW from 10 down to 8
 * if there is one; the same shapes a channel more apart keep their width. */
static void test_aliased_columns(void)
{
    static const struct {
        int64_t C, K, HW, R, stride, want_n;
    } cases[] = {
        {1536, 9, 62, 3, 2, 10},  /* 3072 floats apart: OW 30 -> 10 */
        {1537, 9, 62, 3, 2, 30},  /* not aliased */
        {1024, 16, 19, 1, 1, 10}, /* 1x1: 361 pixels in one row, 1024 floats apart: 10 and a remainder */
        {1024, 32, 15, 3, 1, 13}, /* two vectors per column: unaffected (OW 13) */
        {512, 7, 39, 3, 2, 10},   /* 1024 floats: OW 19, no divisor in 8..10 -> 10 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ps_desc d = conv_desc(1, cases[i].C, cases[i].K, cases[i].HW, cases[i].HW, cases[i].R, cases[i].R);
        d.u.conv.stride_h = d.u.conv.stride_w = cases[i].stride;
        ps_schedule *s = NULL;
        TU_OK(ps_schedule_default(&d, &s));
        if (!s) continue;
        char text[256];
        TU_OK(ps_schedule_format(s, PS_OP_CONV_FWD, text, sizeof text, NULL));
        int m = 0, n = 0;
        TU_CHECK(sscanf(text, "%dx%d", &m, &n) == 2, "schedule text '%s'", text);
        const int64_t want = cases[i].want_n;
        TU_CHECK(n == want, "C %lld K %lld %lldx%lld/%lld: default '%s', want %lld columns per call", (long long)cases[i].C,
                 (long long)cases[i].K, (long long)cases[i].R, (long long)cases[i].R, (long long)cases[i].stride, text,
                 (long long)want);
        ps_schedule_destroy(s);
    }
}

static void test_strip_rule(void)
{
    static const struct {
        int64_t N, C, K, R, S;
        const char *loops;
    } cases[] = {
        {2, 3, 64, 3, 3, ": n* k* ow* oh* c"}, /* merged taps, two images: strips */
        {1, 3, 64, 3, 3, ": n* k* oh* ow* c"}, /* one image: rows */
        {2, 3, 32, 3, 3, ": n* k* oh* ow* c"}, /* R*K = 96 < 128: taps not merged */
        {2, 32, 64, 3, 3, ": n* k* oh* ow* c"}, /* C > 16 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_desc d = conv_desc(cases[i].N, cases[i].C, cases[i].K, 16, 16, cases[i].R, cases[i].S);
        d.u.conv.pad_top = d.u.conv.pad_bottom = d.u.conv.pad_left = d.u.conv.pad_right = 1;
        ps_schedule *s = NULL;
        char text[512] = "";
        TU_OK(ps_schedule_default(&d, &s));
        if (s) TU_OK(ps_schedule_format(s, PS_OP_CONV_FWD, text, sizeof text, NULL));
        const char *loops = strchr(text, ':');
        TU_CHECK(loops && !strcmp(loops, cases[i].loops), "N=%lld C=%lld K=%lld: default schedule '%s', want '... %s'",
                 (long long)cases[i].N, (long long)cases[i].C, (long long)cases[i].K, text, cases[i].loops);
        ps_schedule_destroy(s);
    }
}

/* Workspace bytes of a plan of d with this schedule on `threads` threads. */
static size_t workspace_of(ps_context *ctx, const ps_desc *d, const char *text, int threads)
{
    ps_schedule *s = NULL;
    size_t bytes = 0;
    TU_OK(ps_schedule_parse(d->kind, text, &s));
    ps_plan_options po;
    ps_plan_options_init(&po);
    po.schedule = s;
    po.num_threads = threads;
    po.flags = PS_PLAN_NO_CACHE;
    ps_plan *p = NULL;
    TU_OK(ps_plan_create(ctx, d, &po, &p));
    if (p) TU_OK(ps_plan_workspace_size(p, &bytes));
    ps_plan_destroy(p);
    ps_schedule_destroy(s);
    return bytes;
}

/* A conv that reads a copy of its input: each thread copies only the rows
 * its own part of the band reads, into its own region (lib/execution). A
 * 7x7/2 first layer (merged taps, zero-padded copy), the band split by
 * images (one image each) and by output rows (half an image and the halo
 * each); and a strided 1x1 over its subsampled copy, the band split by
 * output channels (the whole image each). One thread's workspace holds
 * the copy of every image of its plan. */
static void test_copy_parts(ps_context *ctx)
{
    ps_desc first = conv_desc(2, 3, 64, 112, 112, 7, 7);
    ps_conv_desc *c = &first.u.conv;
    c->stride_h = c->stride_w = 2;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 3;
    const char *rows = "32x28x3/1 : n* oh* ow* c k";
    const size_t two_images = workspace_of(ctx, &first, rows, 1);
    const size_t image_each = workspace_of(ctx, &first, rows, 2);
    TU_CHECK(two_images > 0 && image_each > 0 && image_each <= two_images + 64 * 1024,
             "7x7/2, two images on two threads: workspace %zu bytes, one thread's for both images %zu (each thread "
             "should copy one image)", image_each, two_images);
    c->N = 1;
    const size_t one_image = workspace_of(ctx, &first, rows, 1);
    const size_t half_each = workspace_of(ctx, &first, rows, 2);
    TU_CHECK(one_image > 0 && half_each <= one_image * 5 / 4,
             "7x7/2, one image on two threads: workspace %zu bytes, one thread's %zu (each thread should copy the "
             "rows of its half: 61 of 112)", half_each, one_image);

    ps_desc sub = conv_desc(1, 64, 512, 14, 14, 1, 1);
    sub.u.conv.stride_h = sub.u.conv.stride_w = 2;
    const char *channels = "32x49x64/1 : n* k* oh* ow* c";
    const size_t one = workspace_of(ctx, &sub, channels, 1), two = workspace_of(ctx, &sub, channels, 2);
    const size_t copy_bytes = 7 * 7 * 64 * sizeof(float);
    TU_CHECK(one >= copy_bytes && two >= 2 * copy_bytes,
             "1x1/2 over its subsampled copy, output channels split: workspace %zu (1 thread), %zu (2 threads), "
             "want a whole copy (%zu bytes) per thread", one, two, copy_bytes);
}

/* ------------------------------------------------------------ illegal schedules */

/* A syntactically valid schedule that does not fit the descriptor: parse may
 * accept it (the check and plan creation must then reject it) or reject it
 * itself as PS_ERR_INVALID_SCHEDULE. */
static void expect_invalid(ps_context *ctx, const ps_desc *d, const char *text, const char *why)
{
    ps_schedule *s = NULL;
    const ps_status ps = ps_schedule_parse(d->kind, text, &s);
    if (ps != PS_SUCCESS) {
        TU_CHECK(ps == PS_ERR_INVALID_SCHEDULE, "parse('%s') [%s] -> %s, want success or PS_ERR_INVALID_SCHEDULE",
                 text, why, ps_status_str(ps));
        TU_CHECK(s == NULL, "parse failed but set *out");
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_parse(d->kind, text, &s));
        return;
    }
    TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_check(s, d));
    ps_plan_options opts;
    ps_plan_options_init(&opts);
    opts.schedule = s;
    ps_plan *plan = (ps_plan *)(uintptr_t)0x1; /* must be reset to NULL */
    TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_plan_create(ctx, d, &opts, &plan));
    TU_CHECK(plan == NULL, "ps_plan_create failed for '%s' [%s] but *plan is not NULL", text, why);
    if (plan && plan != (ps_plan *)(uintptr_t)0x1) ps_plan_destroy(plan);
    ps_schedule_destroy(s);
}

static void expect_parse_error(ps_op_kind kind, const char *text)
{
    ps_schedule *s = (ps_schedule *)(uintptr_t)0x1;
    TU_ERR(PS_ERR_PARSE, ps_schedule_parse(kind, text, &s));
    TU_CHECK(s == NULL, "parse('%s') failed but *out was not set to NULL", text);
}

static void test_invalid(ps_context *ctx, const op_case *cases)
{
    const ps_desc *A = &cases[0].desc; /* under 16x5x8/2: ext n 2, k 2, oh 10, ow 2, c 2 */
    const ps_desc *G = &cases[4].desc; /* under 32x16x32/2: ext m 3, n 5, k 2 */
    expect_invalid(ctx, A, "16x5x8/2 : n k oh ow", "missing reduction loop c (extent 2)");
    expect_invalid(ctx, A, "16x5x8/2 : k oh ow c", "missing n (N = 2)");
    expect_invalid(ctx, A, "16x5x8/2 :", "no loops at all");
    expect_invalid(ctx, A, "16x5x8/2 : n k oh oh:4 ow c", "tile loops increasing");
    expect_invalid(ctx, A, "16x5x8/2 : n k oh oh ow c", "tile loops not strictly decreasing");
    expect_invalid(ctx, A, "16x5x8/2 : n k oh:4 ow c", "tile loops not ending at 1");
    expect_invalid(ctx, A, "16x5x8/2 : n k:4 k:2 oh ow c", "tile loops ending at 2");
    expect_invalid(ctx, A, "16x5x8/2 : c* n k oh ow", "parallel reduction");
    expect_invalid(ctx, A, "16x5x8/2 : n* c* k oh ow", "parallel reduction inside the band");
    expect_invalid(ctx, A, "16x5x8/2 : n k* oh ow c", "parallel loop not in the outer band");
    expect_invalid(ctx, A, "16x5x8/2 : n* k oh* ow c", "parallel band interrupted");
    expect_invalid(ctx, G, "32x16x32/2 : m n", "gemm: missing k");
    expect_invalid(ctx, G, "32x16x32/2 : m k", "gemm: missing n");
    expect_invalid(ctx, G, "32x16x32/2 : m n k*", "gemm: parallel reduction");
    expect_invalid(ctx, G, "32x16x32/2 : m n:2 k", "gemm: tile loop not ending at 1");
    expect_invalid(ctx, G, "32x16x32/2 : k m* n", "gemm: parallel loop after a sequential one");

    /* kernel shape: m, n, k, batch must be >= 1 */
    static const int bad_shapes[][4] = {{0, 5, 8, 2}, {16, 0, 8, 2}, {16, 5, 0, 2}, {16, 5, 8, 0},
                                        {-1, 5, 8, 2}, {16, -5, 8, 2}, {16, 5, -8, 2}, {16, 5, 8, -2}};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
        const int *b = bad_shapes[i];
        ps_schedule *s = (ps_schedule *)(uintptr_t)0x1;
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_create(b[0], b[1], b[2], b[3], &s));
        TU_CHECK(s == NULL, "ps_schedule_create(%d,%d,%d,%d) failed but *out not NULL", b[0], b[1], b[2], b[3]);
        if (b[0] >= 0 && b[1] >= 0 && b[2] >= 0 && b[3] >= 0) {
            char text[64];
            snprintf(text, sizeof text, "%dx%dx%d/%d : n k oh ow c", b[0], b[1], b[2], b[3]);
            s = NULL;
            TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_parse(PS_OP_CONV_FWD, text, &s));
            TU_CHECK(s == NULL, "parse('%s') failed but *out not NULL", text);
        }
    }

    /* add_loop: unknown dimension, tile < 1, too many loops */
    ps_schedule *s = NULL;
    TU_OK(ps_schedule_create(16, 5, 8, 2, &s));
    if (s) {
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_add_loop(s, PS_DIM_COUNT, 1, 0));
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_add_loop(s, (ps_dim)-1, 1, 0));
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_add_loop(s, PS_DIM_K, 0, 0));
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_add_loop(s, PS_DIM_K, -3, 0));
        char text[64];
        TU_OK(ps_schedule_format(s, PS_OP_CONV_FWD, text, sizeof text, NULL));
        TU_CHECK(strcmp(text, "16x5x8/2 :") == 0, "rejected loops were added: '%s'", text);
        for (int i = 0; i < PS_SCHEDULE_MAX_LOOPS; i++) {
            TU_OK(ps_schedule_add_loop(s, PS_DIM_OH, PS_SCHEDULE_MAX_LOOPS - i, 0));
        }
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_add_loop(s, PS_DIM_OH, 1, 0));
        ps_schedule_destroy(s);
    }
    {
        char text[512] = "16x5x8/2 :";
        for (int i = 0; i <= PS_SCHEDULE_MAX_LOOPS; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text), " oh:%d", PS_SCHEDULE_MAX_LOOPS + 1 - i);
        s = NULL;
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_parse(PS_OP_CONV_FWD, text, &s));
        ps_schedule_destroy(s);
    }
    /* conv-only dimensions in a schedule checked against a GEMM */
    s = NULL;
    TU_OK(ps_schedule_create(32, 16, 32, 2, &s));
    if (s) {
        TU_OK(ps_schedule_add_loop(s, PS_DIM_K, 1, 1));
        TU_OK(ps_schedule_add_loop(s, PS_DIM_OW, 1, 0));
        TU_OK(ps_schedule_add_loop(s, PS_DIM_C, 1, 0));
        TU_OK(ps_schedule_check(s, G));
        TU_OK(ps_schedule_add_loop(s, PS_DIM_OH, 1, 0));
        TU_ERR(PS_ERR_INVALID_SCHEDULE, ps_schedule_check(s, G));
        ps_schedule_destroy(s);
    }

    /* garbage text */
    static const char *garbage_conv[] = {
        "", "   ", "hello", "16x5x8 : n k", "16x5x8/2 n k", "16x5x8/2", "16x5/2 : n", "16x5x8x4/2 : n",
        "16x5x8/2 : n k oh ow c q", "16x5x8/2 : n:0 k", "16x5x8/2 : n:-1 k", "16x5x8/2 : n:x k",
        "16x5x8/2 : m n k", "16x5x8/2 : n** k", "16x5x8/2 : n*k", "-16x5x8/2 : n", "16x5x8/2/3 : n",
        "16x5x8/2 : n k,", "16x5x8/2 : n:99999999999999999999999 k", "x16x5x8/2 : n", "16 x 5x8/2 : n",
        "16x5x8/2 : n: k", "16x5x8/2 : ohh", "16x5x8/2 : o h", "16x5x8/2 : : n"};
    for (size_t i = 0; i < sizeof garbage_conv / sizeof garbage_conv[0]; i++)
        expect_parse_error(PS_OP_CONV_FWD, garbage_conv[i]);
    static const char *garbage_gemm[] = {"32x16x32/2 : oh m n k", "32x16x32/2 : m n k c",
                                         "32x16x32/2 : m n ow k", "32x16x32/2 : M N K"};
    for (size_t i = 0; i < sizeof garbage_gemm / sizeof garbage_gemm[0]; i++)
        expect_parse_error(PS_OP_GEMM, garbage_gemm[i]);
}

/* Whitespace is not significant: non-canonical spellings parse to the same
 * schedule as the canonical form. */
static void test_spellings(void)
{
    static const char *pairs[][2] = {
        {"16x5x8/2:n* k oh ow c", "16x5x8/2 : n* k oh ow c"},
        {"  16x5x8/2   :   n*   k:4   oh ow c  ", "16x5x8/2 : n* k:4 oh ow c"},
        {"16x5x8/2 :\tn\tk\n", "16x5x8/2 : n k"},
        {"16x5x8/2 : n:1 k:1*", "16x5x8/2 : n k*"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        ps_schedule *s = NULL;
        char got[256];
        TU_OK(ps_schedule_parse(PS_OP_CONV_FWD, pairs[i][0], &s));
        if (s) TU_CHECK(fmt_equals(s, PS_OP_CONV_FWD, pairs[i][1], got, sizeof got),
                        "format(parse('%s')) = '%s', want '%s'", pairs[i][0], got, pairs[i][1]);
        ps_schedule_destroy(s);
    }
    /* the header's own examples */
    static const struct { ps_op_kind k; const char *t; } ex[] = {
        {PS_OP_CONV_FWD, "64x28x64/4 : n* k:4* oh k ow c"}, {PS_OP_GEMM, "64x24x64/8 : m:4* n m k"}};
    for (size_t i = 0; i < 2; i++) {
        ps_schedule *s = NULL;
        char got[256];
        TU_OK(ps_schedule_parse(ex[i].k, ex[i].t, &s));
        if (s) TU_CHECK(fmt_equals(s, ex[i].k, ex[i].t, got, sizeof got), "'%s' -> '%s'", ex[i].t, got);
        ps_schedule_destroy(s);
    }
}

int main(void)
{
    const uint64_t seed = tu_seed("test_schedules", 4242u);
    tu_rng rng = {seed};
    /* Fixed caches (the VM's), so the expert's cache rules pick the same
     * schedules on every machine. */
    ps_context *ctx = NULL;
    if (tu_context_with_caches(0, 48 << 10, 1 << 20, 32 << 20, &ctx) != PS_SUCCESS) return 1;
    ps_context *small_l2 = NULL; /* L2 too small for any B: GEMMs get band tiles */
    if (tu_context_with_caches(0, 1 << 10, 2 << 10, 32 << 20, &small_l2) != PS_SUCCESS) return 1;
    op_case cases[20];
    const int n = make_cases(cases);
    for (int i = 0; i < n; i++) {
        TU_OK(ps_desc_validate(&cases[i].desc));
        op_data o;
        make_data(&cases[i].desc, &rng, &o);
        test_good(ctx, &cases[i], &o);
        test_default(ctx, small_l2, &cases[i], &o);
        free_data(&o);
    }
    test_invalid(ctx, cases);
    test_strip_rule();
    test_aliased_columns();
    test_copy_parts(ctx);
    test_spellings();
    ps_context_destroy(small_l2);
    ps_context_destroy(ctx);
    printf("test_schedules: max normalized error %.3g (<= 1 passes)\n", max_norm_err);
    return tu_finish("test_schedules");
}
