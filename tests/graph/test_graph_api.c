/* The stage-graph API contract (include/polysci/graph.h, expr.h): bad graphs
 * and arguments are rejected with the right status and a message that names
 * the problem, a failed call leaves the graph as it was (a later valid call
 * still works and gets the next tensor number), and the expression helpers
 * propagate NULL, copy, free and print as documented. The planning and
 * execution checks run when the library has the engine (graph_engine.h). */
#include <math.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph_engine.h"
#include "graph_ref.h"
#include "test_util.h"

/* A call that must fail with `want`, leave a fresh message and name the
 * problem: the message contains `needle`. */
#define API_ERR(want, needle, call)                                                                        \
    do {                                                                                                   \
        char prime_[1100];                                                                                 \
        tu_checks++;                                                                                       \
        tu_prime(0, prime_, sizeof prime_);                                                                \
        const ps_status st_ = (call);                                                                      \
        const char *m_ = ps_last_error_message();                                                          \
        if (st_ != (want)) {                                                                               \
            tu_failures++;                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s -> %s (want %s): %s\n", __FILE__, __LINE__, #call,             \
                    ps_status_str(st_), ps_status_str(want), st_ ? m_ : "");                               \
        } else if (!m_ || !m_[0] || strcmp(m_, prime_) == 0) {                                             \
            tu_failures++;                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s -> %s with no message of its own\n", __FILE__, __LINE__, #call, \
                    ps_status_str(st_));                                                                   \
        } else if (!strstr(m_, needle)) {                                                                  \
            tu_failures++;                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: message \"%s\" does not mention \"%s\"\n", __FILE__, __LINE__, \
                    #call, m_, needle);                                                                    \
        }                                                                                                  \
    } while (0)

/* The graph's shape, to check that a failed call changed nothing. */
typedef struct snap {
    int tensors, inputs, outputs;
} snap;
static snap take(const ps_graph *g)
{
    return (snap){ps_graph_num_tensors(g), ps_graph_num_inputs(g), ps_graph_num_outputs(g)};
}
#define UNCHANGED(g, s)                                                                                        \
    TU_CHECK(ps_graph_num_tensors(g) == (s).tensors && ps_graph_num_inputs(g) == (s).inputs &&                 \
                 ps_graph_num_outputs(g) == (s).outputs,                                                       \
             "graph changed by a failed call: %d/%d/%d tensors/inputs/outputs, was %d/%d/%d",                   \
             ps_graph_num_tensors(g), ps_graph_num_inputs(g), ps_graph_num_outputs(g), (s).tensors, (s).inputs, \
             (s).outputs)

static ps_graph *new_graph(void)
{
    ps_graph *g = NULL;
    TU_OK(ps_graph_create(&g));
    if (!g) exit(1);
    return g;
}

static ps_tensor info_of(const ps_graph *g, ps_tensor t, ps_tensor_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    TU_OK(ps_graph_tensor_info(g, t, info));
    return t;
}

static const int DY3[3] = {-1, 0, 1}, DX3[3] = {0, 0, 0}, D0[3] = {0, 0, 0};

/* The vertical 3-tap sum (DY3, DX3, unit weights) of `in`, named `name`. */
static ps_status add_col3(ps_graph *g, const char *name, ps_tensor in, ps_tensor *out)
{
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.n_taps = 3;
    st.dy = DY3;
    st.dx = DX3;
    return ps_graph_add_stencil(g, name, &st, out);
}

static void test_create_and_inputs(void)
{
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_create(NULL));
    ps_graph_destroy(NULL);
    ps_graph *g = new_graph();
    ps_tensor t = 123;
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_add_input(NULL, "a", 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_NULL_POINTER, "out", ps_graph_add_input(g, "a", 1, 2, 2, 1, PS_LAYOUT_NHWC, NULL));
    snap s = take(g);
    const int64_t bad_dims[][4] = {{0, 2, 2, 1}, {1, 0, 2, 1}, {1, 2, 0, 1}, {1, 2, 2, 0}, {-1, 2, 2, 1}, {1, 2, 2, INT64_MIN}};
    for (int i = 0; i < 6; i++) {
        t = 123;
        API_ERR(PS_ERR_INVALID_ARG, ">= 1",
                ps_graph_add_input(g, "a", bad_dims[i][0], bad_dims[i][1], bad_dims[i][2], bad_dims[i][3], PS_LAYOUT_NHWC, &t));
        TU_CHECK(t == -1, "failed add_input left *out = %d", t);
    }
    API_ERR(PS_ERR_INVALID_ARG, "layout", ps_graph_add_input(g, "a", 1, 2, 2, 1, (ps_act_layout)7, &t));
    API_ERR(PS_ERR_INVALID_ARG, "layout", ps_graph_add_input(g, "a", 1, 2, 2, 1, (ps_act_layout)-1, &t));
    API_ERR(PS_ERR_OVERFLOW, "too large", ps_graph_add_input(g, "a", 1, (int64_t)1 << 31, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_OVERFLOW, "too large", ps_graph_add_input(g, "a", 1024, 1024, 1024, 1025, PS_LAYOUT_NHWC, &t));
    /* names: 1..63 bytes, no control characters, commas or quotes, unique */
    char name[80];
    memset(name, 'n', sizeof name);
    name[64] = 0;
    API_ERR(PS_ERR_INVALID_ARG, "name", ps_graph_add_input(g, name, 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_INVALID_ARG, "name", ps_graph_add_input(g, "", 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_INVALID_ARG, "name", ps_graph_add_input(g, "a,b", 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_INVALID_ARG, "name", ps_graph_add_input(g, "a\"b", 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_INVALID_ARG, "name", ps_graph_add_input(g, "a\nb", 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    UNCHANGED(g, s);
    name[63] = 0;
    TU_OK(ps_graph_add_input(g, name, 1, 2, 2, 1, PS_LAYOUT_NHWC, &t));
    TU_CHECK(t == 0, "first tensor is %d", t);
    s = take(g);
    API_ERR(PS_ERR_INVALID_ARG, "exists already", ps_graph_add_input(g, name, 1, 3, 3, 1, PS_LAYOUT_NHWC, &t));
    UNCHANGED(g, s);
    TU_OK(ps_graph_add_input(g, NULL, 2, 3, 5, 4, PS_LAYOUT_NCHW, &t));
    TU_CHECK(t == 1, "second tensor is %d", t);
    ps_tensor_info info;
    info_of(g, 1, &info);
    TU_CHECK(strcmp(info.name, "t1") == 0 && info.n == 2 && info.h == 3 && info.w == 5 && info.c == 4 && info.y0 == 0 &&
                 info.x0 == 0 && info.is_input && info.output_index == -1 && info.layout == PS_LAYOUT_NCHW,
             "info of an unnamed input: \"%s\" %lld %lld %lld %lld", info.name, (long long)info.n, (long long)info.h,
             (long long)info.w, (long long)info.c);
    /* a tensor named like an automatic name is a duplicate too */
    API_ERR(PS_ERR_INVALID_ARG, "exists already", ps_graph_add_input(g, "t1", 1, 3, 3, 1, PS_LAYOUT_NHWC, &t));
    TU_CHECK(ps_graph_num_inputs(g) == 2 && ps_graph_input(g, 0) == 0 && ps_graph_input(g, 1) == 1 &&
                 ps_graph_input(g, 2) == -1 && ps_graph_input(g, -1) == -1,
             "input list");
    TU_CHECK(ps_graph_num_tensors(NULL) == 0 && ps_graph_num_inputs(NULL) == 0 && ps_graph_num_outputs(NULL) == 0 &&
                 ps_graph_input(NULL, 0) == -1 && ps_graph_output(NULL, 0) == -1,
             "counts of a NULL graph");
    /* tensor_info */
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_tensor_info(g, 0, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_tensor_info(NULL, 0, &info));
    info.struct_size = 3;
    API_ERR(PS_ERR_INVALID_ARG, "struct_size", ps_graph_tensor_info(g, 0, &info));
    info.struct_size = sizeof info;
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_tensor_info(g, 2, &info));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_tensor_info(g, -1, &info));
    ps_graph_destroy(g);
}

static ps_status add_st(ps_graph *g, ps_stencil st, ps_tensor *t) { return ps_graph_add_stencil(g, NULL, &st, t); }

static void test_stencil(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, t;
    TU_OK(ps_graph_add_input(g, "in", 1, 10, 12, 3, PS_LAYOUT_NHWC, &in));
    ps_stencil st;
    ps_stencil_init(&st);
    TU_CHECK(st.struct_size == sizeof st && st.input == -1 && st.boundary == PS_BOUNDARY_CLAMP &&
                 st.reduce == PS_REDUCE_SUM && st.stride_h == 1 && st.stride_w == 1 && st.n_taps == 0 && !st.weights &&
                 !st.per_channel_weights,
             "ps_stencil_init defaults");
    ps_stencil_init(NULL);
    st.input = in;
    st.n_taps = 3;
    st.dy = DY3;
    st.dx = DX3;
    const snap s = take(g);
    ps_stencil b = st;
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_add_stencil(NULL, NULL, &st, &t));
    API_ERR(PS_ERR_NULL_POINTER, "stencil", ps_graph_add_stencil(g, NULL, NULL, &t));
    API_ERR(PS_ERR_NULL_POINTER, "out", ps_graph_add_stencil(g, NULL, &st, NULL));
    b.struct_size = sizeof b - 8;
    API_ERR(PS_ERR_INVALID_ARG, "struct_size", add_st(g, b, &t));
    b = st;
    b.struct_size = 0;
    API_ERR(PS_ERR_INVALID_ARG, "struct_size", add_st(g, b, &t));
    b = st;
    b.input = -1;
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", add_st(g, b, &t));
    b.input = 1; /* the stage itself would be tensor 1: not yet a tensor */
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", add_st(g, b, &t));
    b = st;
    b.boundary = (ps_boundary)4;
    API_ERR(PS_ERR_INVALID_ARG, "boundary", add_st(g, b, &t));
    b.boundary = (ps_boundary)-1;
    API_ERR(PS_ERR_INVALID_ARG, "boundary", add_st(g, b, &t));
    b = st;
    b.reduce = (ps_reduce)3;
    API_ERR(PS_ERR_INVALID_ARG, "reduction", add_st(g, b, &t));
    const int bad_strides[][2] = {{0, 1}, {1, 0}, {9, 1}, {1, 9}, {-1, 1}, {1, INT32_MIN}};
    for (int i = 0; i < 6; i++) {
        b = st;
        b.stride_h = bad_strides[i][0];
        b.stride_w = bad_strides[i][1];
        API_ERR(PS_ERR_UNSUPPORTED, "strides", add_st(g, b, &t));
    }
    b = st;
    b.n_taps = 0;
    API_ERR(PS_ERR_INVALID_ARG, "n_taps", add_st(g, b, &t));
    b.n_taps = PS_STENCIL_MAX_TAPS + 1;
    API_ERR(PS_ERR_INVALID_ARG, "n_taps", add_st(g, b, &t));
    b.n_taps = -5;
    API_ERR(PS_ERR_INVALID_ARG, "n_taps", add_st(g, b, &t));
    b = st;
    b.dy = NULL;
    API_ERR(PS_ERR_NULL_POINTER, "dy", add_st(g, b, &t));
    b = st;
    b.dx = NULL;
    API_ERR(PS_ERR_NULL_POINTER, "dx", add_st(g, b, &t));
    const int far[1] = {1 << 29}, zero[1] = {0}, nfar[1] = {-(1 << 29)};
    b = st;
    b.n_taps = 1;
    b.dy = far;
    b.dx = zero;
    API_ERR(PS_ERR_INVALID_ARG, "out of range", add_st(g, b, &t));
    b.dy = zero;
    b.dx = nfar;
    API_ERR(PS_ERR_INVALID_ARG, "out of range", add_st(g, b, &t));
    b = st;
    b.per_channel_weights = 1;
    API_ERR(PS_ERR_NULL_POINTER, "weights", add_st(g, b, &t));
    /* VALID taps spanning 11 rows over 10: no pixel */
    const int span[2] = {-5, 5}, z2[2] = {0, 0};
    b = st;
    b.boundary = PS_BOUNDARY_VALID;
    b.n_taps = 2;
    b.dy = span;
    b.dx = z2;
    API_ERR(PS_ERR_INVALID_ARG, "no valid pixel", add_st(g, b, &t));
    /* 13 columns over 12, with a stride */
    const int span13[2] = {-6, 6};
    b.dy = z2;
    b.dx = span13;
    b.stride_w = 3;
    API_ERR(PS_ERR_INVALID_ARG, "no valid pixel", add_st(g, b, &t));
    UNCHANGED(g, s);
    TU_CHECK(t == -1, "failed add_stencil left *out = %d", t);

    /* limits that are valid: stride 8, 1024 taps, a 1 x 1 valid domain, far offsets with ZERO */
    b = st;
    b.stride_h = b.stride_w = PS_STENCIL_MAX_STRIDE;
    TU_OK(add_st(g, b, &t));
    TU_CHECK(t == 1, "after the failures the stage is tensor %d", t);
    ps_tensor_info info;
    info_of(g, t, &info);
    TU_CHECK(info.h == 2 && info.w == 2 && info.c == 3 && !info.is_input, "stride 8 over 10 x 12: %lld x %lld",
             (long long)info.h, (long long)info.w);
    static int dy1k[PS_STENCIL_MAX_TAPS], dx1k[PS_STENCIL_MAX_TAPS];
    for (int i = 0; i < PS_STENCIL_MAX_TAPS; i++) {
        dy1k[i] = i % 10;
        dx1k[i] = i / 100;
    }
    b = st;
    b.n_taps = PS_STENCIL_MAX_TAPS;
    b.dy = dy1k;
    b.dx = dx1k;
    b.boundary = PS_BOUNDARY_VALID;
    TU_OK(add_st(g, b, &t));
    info_of(g, t, &info);
    TU_CHECK(info.h == 1 && info.w == 2 && info.y0 == 0 && info.x0 == 0, "1024 valid taps over 10 x 12: %lld x %lld at (%lld, %lld)",
             (long long)info.h, (long long)info.w, (long long)info.y0, (long long)info.x0);
    b = st;
    b.n_taps = 1;
    b.dy = far;
    b.dx = zero;
    b.dy = (const int[]){(1 << 28)};
    b.boundary = PS_BOUNDARY_VALID;
    TU_OK(add_st(g, b, &t)); /* a domain far from the input's: rows [-2^28, -2^28 + 10) */
    info_of(g, t, &info);
    TU_CHECK(info.y0 == -(1 << 28) && info.h == 10, "far valid tap: rows from %lld, %lld", (long long)info.y0,
             (long long)info.h);
    const float wpc[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    b = st;
    b.weights = wpc;
    b.per_channel_weights = 1;
    TU_OK(add_st(g, b, &t));
    ps_graph_destroy(g);
}

static void test_pointwise(void)
{
    ps_graph *g = new_graph();
    ps_tensor a, a1, b2, n2, t, far;
    TU_OK(ps_graph_add_input(g, "a", 1, 6, 6, 3, PS_LAYOUT_NHWC, &a));
    TU_OK(ps_graph_add_input(g, "a1", 1, 6, 6, 1, PS_LAYOUT_NHWC, &a1));
    TU_OK(ps_graph_add_input(g, "b2", 1, 6, 6, 2, PS_LAYOUT_NHWC, &b2));
    TU_OK(ps_graph_add_input(g, "n2", 2, 6, 6, 3, PS_LAYOUT_NHWC, &n2));
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = a;
    st.boundary = PS_BOUNDARY_VALID;
    st.n_taps = 1;
    st.dy = (const int[]){-20};
    st.dx = D0;
    TU_OK(ps_graph_add_stencil(g, "far", &st, &far)); /* rows [20, 26) */
    ps_expr *e2 = ps_expr_binary(PS_EXPR_ADD, ps_expr_input(0), ps_expr_input(1));
    const ps_tensor aa1[2] = {a, a1}, a1a[2] = {a1, a}, ab2[2] = {a, b2}, an2[2] = {a, n2}, afar[2] = {a, far},
                    bad[2] = {a, 99};
    const snap s = take(g);
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_add_pointwise(NULL, "p", e2, 2, aa1, &t));
    API_ERR(PS_ERR_NULL_POINTER, "out", ps_graph_add_pointwise(g, "p", e2, 2, aa1, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "expr", ps_graph_add_pointwise(g, "p", NULL, 2, aa1, &t));
    API_ERR(PS_ERR_NULL_POINTER, "inputs", ps_graph_add_pointwise(g, "p", e2, 2, NULL, &t));
    API_ERR(PS_ERR_INVALID_ARG, "n_inputs", ps_graph_add_pointwise(g, "p", e2, 0, aa1, &t));
    API_ERR(PS_ERR_INVALID_ARG, "n_inputs", ps_graph_add_pointwise(g, "p", e2, 17, aa1, &t));
    API_ERR(PS_ERR_INVALID_ARG, "reads input 1", ps_graph_add_pointwise(g, "p", e2, 1, aa1, &t));
    API_ERR(PS_ERR_INVALID_ARG, "images", ps_graph_add_pointwise(g, "p", e2, 2, an2, &t));
    API_ERR(PS_ERR_INVALID_ARG, "channels", ps_graph_add_pointwise(g, "p", e2, 2, ab2, &t));
    API_ERR(PS_ERR_INVALID_ARG, "intersect", ps_graph_add_pointwise(g, "p", e2, 2, afar, &t));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_add_pointwise(g, "p", e2, 2, bad, &t));
    API_ERR(PS_ERR_INVALID_ARG, "exists already", ps_graph_add_pointwise(g, "a", e2, 2, aa1, &t));
    /* 3 channels with 1, 1 with 2: channel counts are compared with the
     * largest seen so far, so (a1, b2, a) fails on a too */
    const ps_tensor three[3] = {a1, b2, a};
    ps_expr *e3 = ps_expr_binary(PS_EXPR_ADD, ps_expr_input(2), ps_expr_input(1));
    API_ERR(PS_ERR_INVALID_ARG, "channels", ps_graph_add_pointwise(g, "p", e3, 3, three, &t));
    UNCHANGED(g, s);
    TU_OK(ps_graph_add_pointwise(g, "p", e2, 2, aa1, &t));
    TU_CHECK(t == s.tensors, "after the failures the stage is tensor %d (want %d)", t, s.tensors);
    ps_tensor_info info;
    info_of(g, t, &info);
    TU_CHECK(info.c == 3 && info.h == 6 && info.w == 6 && info.n == 1, "broadcast a + a1: c %lld", (long long)info.c);
    TU_OK(ps_graph_add_pointwise(g, "q", e2, 2, a1a, &t));
    info_of(g, t, &info);
    TU_CHECK(info.c == 3, "broadcast a1 + a: c %lld", (long long)info.c);
    /* an expression that reads no input: the constant over the inputs' domain */
    ps_expr *k = ps_expr_const(2.5f);
    TU_OK(ps_graph_add_pointwise(g, "k", k, 1, &b2, &t));
    info_of(g, t, &info);
    TU_CHECK(info.c == 2 && info.h == 6, "constant stage over b2: c %lld", (long long)info.c);
    /* 16 inputs, the most */
    ps_tensor sixteen[16];
    for (int i = 0; i < 16; i++) sixteen[i] = i % 2 ? a : a1;
    ps_expr *e16 = ps_expr_input(15);
    TU_OK(ps_graph_add_pointwise(g, "sixteen", e16, 16, sixteen, &t));
    ps_expr_free(e16);
    ps_expr_free(k);
    ps_expr_free(e3);
    /* the graph copied the expression: freeing ours does not touch it (ASan) */
    ps_expr_free(e2);
    info_of(g, ps_graph_num_tensors(g) - 1, &info);
    TU_CHECK(strcmp(info.name, "sixteen") == 0, "last tensor \"%s\"", info.name);
    ps_graph_destroy(g);
}

static void test_mix_resample(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, t;
    TU_OK(ps_graph_add_input(g, "in", 1, 5, 7, 3, PS_LAYOUT_NHWC, &in));
    const float w[6] = {1, 2, 3, 4, 5, 6};
    const snap s = take(g);
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_add_channel_mix(NULL, NULL, in, 2, w, NULL, &t));
    API_ERR(PS_ERR_NULL_POINTER, "weights", ps_graph_add_channel_mix(g, NULL, in, 2, NULL, NULL, &t));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_add_channel_mix(g, NULL, 5, 2, w, NULL, &t));
    API_ERR(PS_ERR_INVALID_ARG, "k", ps_graph_add_channel_mix(g, NULL, in, 0, w, NULL, &t));
    API_ERR(PS_ERR_INVALID_ARG, "k", ps_graph_add_channel_mix(g, NULL, in, 65537, w, NULL, &t));
    API_ERR(PS_ERR_INVALID_ARG, "k", ps_graph_add_channel_mix(g, NULL, in, INT64_MIN, w, NULL, &t));
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_add_resample(NULL, NULL, in, PS_RESAMPLE_UP2_NEAREST, PS_BOUNDARY_ZERO, &t));
    API_ERR(PS_ERR_INVALID_ARG, "resampling", ps_graph_add_resample(g, NULL, in, (ps_resample)3, PS_BOUNDARY_ZERO, &t));
    API_ERR(PS_ERR_INVALID_ARG, "resampling", ps_graph_add_resample(g, NULL, in, (ps_resample)-1, PS_BOUNDARY_ZERO, &t));
    API_ERR(PS_ERR_UNSUPPORTED, "boundary", ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_VALID, &t));
    API_ERR(PS_ERR_UNSUPPORTED, "boundary", ps_graph_add_resample(g, NULL, in, PS_RESAMPLE_UP2_BILINEAR, (ps_boundary)9, &t));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_add_resample(g, NULL, -3, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_ZERO, &t));
    UNCHANGED(g, s);
    TU_OK(ps_graph_add_channel_mix(g, "gray", in, 2, w, NULL, &t));
    TU_CHECK(t == 1, "mix is tensor %d", t);
    ps_tensor_info info;
    info_of(g, t, &info);
    TU_CHECK(info.c == 2 && info.h == 5 && info.w == 7, "mix: c %lld", (long long)info.c);
    TU_OK(ps_graph_add_resample(g, "down", in, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_CLAMP, &t));
    info_of(g, t, &info);
    TU_CHECK(info.h == 3 && info.w == 4, "down2 of 5 x 7: %lld x %lld", (long long)info.h, (long long)info.w);
    TU_OK(ps_graph_add_resample(g, "up", t, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_ZERO, &t));
    info_of(g, t, &info);
    TU_CHECK(info.h == 6 && info.w == 8, "up2 of 3 x 4: %lld x %lld", (long long)info.h, (long long)info.w);
    /* upsampling until the tensor is too large: refused with OVERFLOW, not wrapped */
    ps_status st = PS_SUCCESS;
    int steps = 0;
    while (steps < 40 && (st = ps_graph_add_resample(g, NULL, t, PS_RESAMPLE_UP2_NEAREST, PS_BOUNDARY_ZERO, &t)) == PS_SUCCESS)
        steps++;
    TU_CHECK(st == PS_ERR_OVERFLOW && strstr(ps_last_error_message(), "too large"),
             "upsampling %d times: %s: %s", steps, ps_status_str(st), ps_last_error_message());
    ps_graph_destroy(g);
}

/* Domains whose origin moves far from 0: a VALID tap at -2^28 shifts the
 * origin by 2^28, upsampling doubles it, a two-tap VALID stencil brings the
 * height back to 1. Every stage must either get the domain the definitions
 * give, or be refused (OVERFLOW); the origin may not wrap around. */
static void test_far_origin(void)
{
    ps_graph *g = new_graph();
    ps_tensor t;
    TU_OK(ps_graph_add_input(g, "in", 1, 1, 1, 1, PS_LAYOUT_NHWC, &t));
    const int shift[1] = {-(1 << 28)}, pair[2] = {0, 1};
    ps_stencil st;
    ps_stencil_init(&st);
    st.boundary = PS_BOUNDARY_VALID;
    int refused = 0;
    for (int round = 0; round < 80 && !refused; round++) {
        ps_tensor_info a, b;
        info_of(g, t, &a);
        st.input = t;
        st.n_taps = 1;
        st.dy = st.dx = shift;
        ps_status s1 = ps_graph_add_stencil(g, NULL, &st, &t);
        if (s1 != PS_SUCCESS) {
            TU_CHECK(s1 == PS_ERR_OVERFLOW, "shift refused with %s: %s", ps_status_str(s1), ps_last_error_message());
            refused = 1;
            break;
        }
        info_of(g, t, &b);
        TU_CHECK(b.y0 - (1 << 28) == a.y0 && b.h == 1, "round %d: shift of %lld gave %lld", round, (long long)a.y0,
                 (long long)b.y0);
        int64_t want;
        const int ovf = __builtin_mul_overflow(b.y0, (int64_t)2, &want);
        const ps_status s2 = ps_graph_add_resample(g, NULL, t, PS_RESAMPLE_UP2_NEAREST, PS_BOUNDARY_ZERO, &t);
        if (s2 != PS_SUCCESS) {
            TU_CHECK(s2 == PS_ERR_OVERFLOW, "up2 refused with %s: %s", ps_status_str(s2), ps_last_error_message());
            refused = 1;
            break;
        }
        info_of(g, t, &a);
        TU_CHECK(!ovf && a.y0 == want && a.h == 2, "round %d: up2 of rows from %lld gave rows from %lld (%lld rows)",
                 round, (long long)b.y0, (long long)a.y0, (long long)a.h);
        if (ovf) break;
        st.input = t;
        st.n_taps = 2;
        st.dy = st.dx = pair;
        TU_OK(ps_graph_add_stencil(g, NULL, &st, &t));
    }
    TU_CHECK(refused, "an origin beyond 2^63 was never refused");
    ps_graph_destroy(g);
}

/* Runs fn in a child process, so that a crash is reported as a failure of
 * this check instead of ending the test. Only before this process has run
 * an OpenMP parallel region: libgomp's threads do not survive fork. */
static void in_child(void (*fn)(void), const char *what)
{
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        tu_failures = 0; /* the child's own */
        fn();
        fflush(stderr);
        _exit(tu_failures ? 1 : 0);
    }
    int status = 0;
    tu_checks++;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        tu_failures++;
        fprintf(stderr, "FAIL: %s: could not run in a child process\n", what);
    } else if (WIFSIGNALED(status)) {
        tu_failures++;
        fprintf(stderr, "FAIL: %s: crashed with signal %d\n", what, WTERMSIG(status));
    } else if (WEXITSTATUS(status) != 0) {
        tu_failures++;
        fprintf(stderr, "FAIL: %s: failed (above)\n", what);
    }
}

/* Downsampling a single row or column at an odd coordinate: no y has 2y
 * inside, so the domain as the builder derives it (like a stride-2 stencil)
 * is empty. It must be refused like an empty stencil domain, or get a
 * non-empty domain; never crash. */
static void down2_of_odd_pixel(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, one, t = 5;
    TU_OK(ps_graph_add_input(g, "in", 1, 3, 3, 1, PS_LAYOUT_NHWC, &in));
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.boundary = PS_BOUNDARY_VALID;
    st.n_taps = 3;
    st.dy = DY3;
    st.dx = DY3; /* the diagonal: the single pixel (1, 1) */
    TU_OK(ps_graph_add_stencil(g, "one", &st, &one));
    const snap s = take(g);
    char prime[1100];
    tu_prime(0, prime, sizeof prime);
    const ps_status r = ps_graph_add_resample(g, NULL, one, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_ZERO, &t);
    if (r == PS_SUCCESS) {
        ps_tensor_info info;
        info_of(g, t, &info);
        TU_CHECK(info.h >= 1 && info.w >= 1, "down2 of the pixel (1, 1): %lld x %lld", (long long)info.h, (long long)info.w);
    } else {
        TU_CHECK(r == PS_ERR_INVALID_ARG && strcmp(ps_last_error_message(), prime) != 0 && t == -1,
                 "down2 of the pixel (1, 1) -> %s: %s", ps_status_str(r), ps_last_error_message());
        UNCHANGED(g, s);
    }
    ps_graph_destroy(g);
}

/* Input sizes whose products leave int64: refused as too large, without
 * overflowing on the way (in a child: UBSan ends the process on overflow). */
static void sizes_near_int64(void)
{
    ps_graph *g = new_graph();
    ps_tensor t;
    const int64_t big = (int64_t)1 << 40;
    API_ERR(PS_ERR_OVERFLOW, "too large", ps_graph_add_input(g, "a", big, 1, 1, big, PS_LAYOUT_NHWC, &t));
    API_ERR(PS_ERR_OVERFLOW, "too large", ps_graph_add_input(g, "a", INT64_MAX, 1, 1, INT64_MAX, PS_LAYOUT_NHWC, &t));
    TU_CHECK(ps_graph_num_tensors(g) == 0, "refused inputs were added");
    ps_graph_destroy(g);
}

/* Output regions of a domain far below 0 (rows [-2^28, -2^28 + 5)) and
 * regions at the ends of int64: the containment test and its message must
 * not overflow (in a child: UBSan ends the process on overflow). */
static void region_far_from_origin(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, v, far;
    TU_OK(ps_graph_add_input(g, "in", 1, 5, 6, 2, PS_LAYOUT_NHWC, &in));
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.boundary = PS_BOUNDARY_VALID;
    st.n_taps = 3;
    st.dy = DY3;
    st.dx = DY3; /* domain [1, 4) x [1, 5) */
    TU_OK(ps_graph_add_stencil(g, "v", &st, &v));
    TU_OK(ps_graph_mark_output(g, v, PS_LAYOUT_NHWC));
    const int64_t bad_regions[][4] = {{INT64_MAX, 1, 1, 1}, {1, 1, INT64_MAX, 1}, {1, INT64_MAX, 1, 1}, {1, 1, 1, INT64_MAX}};
    for (int i = 0; i < 4; i++)
        API_ERR(PS_ERR_INVALID_ARG, "not inside",
                ps_graph_set_output_region(g, v, bad_regions[i][0], bad_regions[i][1], bad_regions[i][2], bad_regions[i][3]));
    /* a domain far below 0 (rows [-2^28, -2^28 + 5)): the containment test
     * must not overflow either */
    st.n_taps = 1;
    st.dy = (const int[]){1 << 28};
    st.dx = D0;
    TU_OK(ps_graph_add_stencil(g, "far", &st, &far));
    TU_OK(ps_graph_mark_output(g, far, PS_LAYOUT_NHWC));
    API_ERR(PS_ERR_INVALID_ARG, "not inside", ps_graph_set_output_region(g, far, -(1 << 28), 0, INT64_MAX, 1));
    API_ERR(PS_ERR_INVALID_ARG, "not inside", ps_graph_set_output_region(g, far, -(1 << 28), 0, 1, INT64_MAX));
    TU_OK(ps_graph_set_output_region(g, far, -(1 << 28) + 4, 5, 1, 1));
    ps_graph_destroy(g);
}

static void test_outputs(void)
{
    ps_graph *g = new_graph();
    ps_tensor in, v, p;
    TU_OK(ps_graph_add_input(g, "in", 1, 5, 6, 2, PS_LAYOUT_NHWC, &in));
    ps_stencil st;
    ps_stencil_init(&st);
    st.input = in;
    st.boundary = PS_BOUNDARY_VALID;
    st.n_taps = 3;
    st.dy = DY3;
    st.dx = DY3; /* diagonal taps (-1,-1), (0,0), (1,1): domain [1, 4) x [1, 5) */
    TU_OK(ps_graph_add_stencil(g, "v", &st, &v));
    ps_expr *e = ps_expr_unary(PS_EXPR_ABS, ps_expr_input(0));
    TU_OK(ps_graph_add_pointwise(g, "p", e, 1, &v, &p));
    ps_expr_free(e);
    snap s = take(g);
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_mark_output(NULL, v, PS_LAYOUT_NHWC));
    API_ERR(PS_ERR_INVALID_ARG, "input cannot be an output", ps_graph_mark_output(g, in, PS_LAYOUT_NHWC));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_mark_output(g, 3, PS_LAYOUT_NHWC));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_mark_output(g, -1, PS_LAYOUT_NHWC));
    API_ERR(PS_ERR_INVALID_ARG, "layout", ps_graph_mark_output(g, v, (ps_act_layout)2));
    API_ERR(PS_ERR_INVALID_ARG, "not an output", ps_graph_set_output_region(g, v, 1, 1, 1, 1));
    UNCHANGED(g, s);
    TU_CHECK(ps_graph_output(g, 0) == -1, "no output yet");
    TU_OK(ps_graph_mark_output(g, p, PS_LAYOUT_NCHW));
    TU_OK(ps_graph_mark_output(g, v, PS_LAYOUT_NHWC));
    s = take(g);
    TU_CHECK(s.outputs == 2 && ps_graph_output(g, 0) == p && ps_graph_output(g, 1) == v && ps_graph_output(g, 2) == -1,
             "outputs in the order they were marked");
    API_ERR(PS_ERR_INVALID_ARG, "already", ps_graph_mark_output(g, p, PS_LAYOUT_NHWC));
    ps_tensor_info info;
    info_of(g, v, &info);
    TU_CHECK(info.y0 == 1 && info.x0 == 1 && info.h == 3 && info.w == 4 && info.output_index == 1 &&
                 info.layout == PS_LAYOUT_NHWC,
             "valid diagonal: [%lld,+%lld) x [%lld,+%lld) output %d", (long long)info.y0, (long long)info.h,
             (long long)info.x0, (long long)info.w, info.output_index);
    /* regions: inside the domain [1, 4) x [1, 5), which does not start at 0 */
    const int64_t bad_regions[][4] = {{0, 1, 1, 1},  {1, 0, 1, 1},         {1, 1, 4, 1},        {1, 1, 1, 5},
                                      {3, 1, 2, 1},  {1, 1, 0, 1},         {1, 1, 1, -1},       {4, 1, 1, 1},
                                      {1, 5, 1, 1},  {INT64_MIN, 1, 1, 1}, {2, 2, INT64_MIN, 1}};
    for (int i = 0; i < (int)(sizeof bad_regions / sizeof bad_regions[0]); i++)
        API_ERR(PS_ERR_INVALID_ARG, "not inside",
                ps_graph_set_output_region(g, v, bad_regions[i][0], bad_regions[i][1], bad_regions[i][2], bad_regions[i][3]));
    info_of(g, v, &info);
    TU_CHECK(info.y0 == 1 && info.x0 == 1 && info.h == 3 && info.w == 4, "refused regions left the stored region alone");
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_set_output_region(NULL, v, 1, 1, 1, 1));
    API_ERR(PS_ERR_INVALID_ARG, "not a tensor", ps_graph_set_output_region(g, 7, 1, 1, 1, 1));
    API_ERR(PS_ERR_INVALID_ARG, "not an output", ps_graph_set_output_region(g, in, 0, 0, 1, 1));
    TU_OK(ps_graph_set_output_region(g, v, 2, 3, 2, 2));
    info_of(g, v, &info);
    TU_CHECK(info.y0 == 2 && info.x0 == 3 && info.h == 2 && info.w == 2, "region set");
    TU_OK(ps_graph_set_output_region(g, v, 1, 1, 3, 4)); /* back to the whole domain */
    TU_OK(ps_graph_set_output_region(g, v, 3, 4, 1, 1));
    info_of(g, v, &info);
    TU_CHECK(info.y0 == 3 && info.x0 == 4 && info.h == 1 && info.w == 1, "1 x 1 region at the last pixel");
    TU_CHECK(gr_output_elems(g, 1) == 2, "1 x 1 x 1 x 2 stored elements: %lld", (long long)gr_output_elems(g, 1));
    ps_graph_destroy(g);
}

static void test_expr(void)
{
    char buf[256];
    /* the example of expr.h */
    ps_expr *e = ps_expr_binary(PS_EXPR_SUB, ps_expr_binary(PS_EXPR_MUL, ps_expr_const(2.0f), ps_expr_input(0)),
                                ps_expr_input(1));
    TU_CHECK(e != NULL, "build");
    int n = ps_expr_to_str(e, buf, sizeof buf);
    TU_CHECK(strcmp(buf, "((2 * in0) - in1)") == 0 && n == (int)strlen(buf), "to_str \"%s\" (%d)", buf, n);
    TU_CHECK(ps_expr_to_str(e, NULL, 0) == n, "to_str length without a buffer");
    memset(buf, 'x', sizeof buf);
    TU_CHECK(ps_expr_to_str(e, buf, 5) == n && strcmp(buf, "((2 ") == 0, "truncated to 5: \"%s\"", buf);
    memset(buf, 'x', sizeof buf);
    TU_CHECK(ps_expr_to_str(e, buf, 1) == n && buf[0] == 0, "truncated to 1");
    TU_CHECK(ps_expr_to_str(e, buf, -3) == n, "negative length");
    memset(buf, 'x', sizeof buf);
    TU_CHECK(ps_expr_to_str(e, buf, n) == n && strlen(buf) == (size_t)n - 1, "truncated by one");
    TU_CHECK(ps_expr_to_str(NULL, buf, sizeof buf) == 6 && strcmp(buf, "(null)") == 0, "NULL prints (null): \"%s\"", buf);
    ps_expr *c = ps_expr_copy(e);
    ps_expr_free(e);
    ps_expr_to_str(c, buf, sizeof buf);
    TU_CHECK(strcmp(buf, "((2 * in0) - in1)") == 0, "copy outlives the original: \"%s\"", buf);
    ps_expr_free(c);
    TU_CHECK(ps_expr_copy(NULL) == NULL, "copy of NULL");
    ps_expr_free(NULL);

    /* every operator prints */
    ps_expr *all = ps_expr_clamp(
        ps_expr_select(ps_expr_binary(PS_EXPR_LE, ps_expr_input(0), ps_expr_const(0.5f)),
                       ps_expr_binary(PS_EXPR_MIN, ps_expr_unary(PS_EXPR_SQRT, ps_expr_input(1)),
                                      ps_expr_unary(PS_EXPR_NEG, ps_expr_input(2))),
                       ps_expr_binary(PS_EXPR_MAX, ps_expr_unary(PS_EXPR_LOG, ps_expr_input(0)),
                                      ps_expr_unary(PS_EXPR_FLOOR, ps_expr_unary(PS_EXPR_EXP, ps_expr_input(1))))),
        ps_expr_unary(PS_EXPR_ABS, ps_expr_const(-1)), ps_expr_binary(PS_EXPR_DIV, ps_expr_const(3), ps_expr_const(4)));
    ps_expr_to_str(all, buf, sizeof buf);
    TU_CHECK(strcmp(buf, "clamp(select((in0 <= 0.5), min(sqrt(in1), (-in2)), max(log(in0), floor(exp(in1)))), abs(-1), (3 / 4))") == 0,
             "every operator: \"%s\"", buf);
    ps_expr_free(all);
    const ps_expr_op cmps[6] = {PS_EXPR_LT, PS_EXPR_LE, PS_EXPR_GT, PS_EXPR_GE, PS_EXPR_EQ, PS_EXPR_NE};
    const char *texts[6] = {"(in0 < in1)", "(in0 <= in1)", "(in0 > in1)", "(in0 >= in1)", "(in0 == in1)", "(in0 != in1)"};
    for (int i = 0; i < 6; i++) {
        e = ps_expr_binary(cmps[i], ps_expr_input(0), ps_expr_input(1));
        ps_expr_to_str(e, buf, sizeof buf);
        TU_CHECK(strcmp(buf, texts[i]) == 0, "comparison %d: \"%s\"", i, buf);
        ps_expr_free(e);
    }

    /* NULL propagation: operands are taken (freed) and NULL comes back; a
     * leak here shows under LeakSanitizer */
    TU_CHECK(ps_expr_input(-1) == NULL, "input(-1)");
    TU_CHECK(ps_expr_unary(PS_EXPR_NEG, NULL) == NULL, "unary of NULL");
    TU_CHECK(ps_expr_binary(PS_EXPR_ADD, ps_expr_const(1), NULL) == NULL, "binary with a NULL operand");
    TU_CHECK(ps_expr_binary(PS_EXPR_ADD, NULL, ps_expr_input(0)) == NULL, "binary with a NULL operand");
    TU_CHECK(ps_expr_select(ps_expr_const(1), NULL, ps_expr_const(2)) == NULL, "select with a NULL operand");
    TU_CHECK(ps_expr_clamp(ps_expr_input(0), ps_expr_const(0), NULL) == NULL, "clamp with a NULL operand");
    /* an operator of the wrong arity, or unknown */
    TU_CHECK(ps_expr_unary(PS_EXPR_ADD, ps_expr_input(0)) == NULL, "unary ADD");
    TU_CHECK(ps_expr_binary(PS_EXPR_SQRT, ps_expr_input(0), ps_expr_input(1)) == NULL, "binary SQRT");
    TU_CHECK(ps_expr_binary(PS_EXPR_SELECT, ps_expr_input(0), ps_expr_input(1)) == NULL, "binary SELECT");
    TU_CHECK(ps_expr_unary(PS_EXPR_CONST, ps_expr_input(0)) == NULL, "unary CONST");
    TU_CHECK(ps_expr_unary((ps_expr_op)99, ps_expr_input(0)) == NULL, "unknown op");
    TU_CHECK(ps_expr_binary((ps_expr_op)-1, ps_expr_input(0), ps_expr_const(1)) == NULL, "unknown op");
    /* a deep tree built from a NULL leaf surfaces as NULL at the top */
    e = ps_expr_input(0);
    for (int i = 0; i < 50; i++) e = ps_expr_binary(PS_EXPR_ADD, e, i == 25 ? ps_expr_input(-1) : ps_expr_const((float)i));
    TU_CHECK(e == NULL, "NULL deep in a tree");
    /* a deep valid tree: copy and print */
    e = ps_expr_input(0);
    for (int i = 0; i < 2000; i++) e = ps_expr_binary(PS_EXPR_ADD, e, ps_expr_const(1));
    c = ps_expr_copy(e);
    TU_CHECK(c && ps_expr_to_str(c, NULL, 0) == ps_expr_to_str(e, NULL, 0), "deep copy");
    ps_expr_free(c);
    ps_expr_free(e);
}

/* ---------------------------------------------------------------- engine */

static ps_graph *small_graph(ps_tensor *in, ps_tensor *out)
{
    ps_graph *g = new_graph();
    ps_tensor b;
    TU_OK(ps_graph_add_input(g, "in", 1, 9, 11, 2, PS_LAYOUT_NHWC, in));
    TU_OK(add_col3(g, "b", *in, &b));
    ps_expr *e = ps_expr_binary(PS_EXPR_MUL, ps_expr_input(0), ps_expr_const(0.5f));
    TU_OK(ps_graph_add_pointwise(g, "o", e, 1, &b, out));
    ps_expr_free(e);
    return g;
}

static void test_engine(ps_context *ctx)
{
    ps_tensor in, out;
    ps_graph *g = small_graph(&in, &out);
    ps_graph_plan *p = (ps_graph_plan *)&in;
    /* no output: nothing to compute */
    API_ERR(PS_ERR_INVALID_ARG, "output", ps_graph_plan_create(ctx, g, NULL, &p));
    TU_CHECK(p == NULL, "failed plan_create left *plan non-NULL");
    TU_OK(ps_graph_mark_output(g, out, PS_LAYOUT_NCHW));
    API_ERR(PS_ERR_NULL_POINTER, "ctx", ps_graph_plan_create(NULL, g, NULL, &p));
    API_ERR(PS_ERR_NULL_POINTER, "graph", ps_graph_plan_create(ctx, NULL, NULL, &p));
    API_ERR(PS_ERR_NULL_POINTER, "plan", ps_graph_plan_create(ctx, g, NULL, NULL));
    ps_graph_options o, b;
    ps_graph_options_init(&o);
    TU_CHECK(o.struct_size == sizeof o && o.fusion == PS_FUSION_DP && o.num_threads == 0 && o.tile_h == 0 &&
                 o.tile_w == 0 && !o.group_of && o.n_group_of == 0 && o.group_limit == 0 && o.flags == 0 &&
                 o.layer_top_k == 0 && o.layer_time_budget_ms == 0.0,
             "ps_graph_options_init defaults");
    ps_graph_options_init(NULL);
    b = o;
    b.struct_size = 8;
    API_ERR(PS_ERR_INVALID_ARG, "struct_size", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.fusion = (ps_fusion)4;
    API_ERR(PS_ERR_INVALID_ARG, "fusion", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.num_threads = -1;
    API_ERR(PS_ERR_INVALID_ARG, "num_threads", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.tile_h = -4;
    API_ERR(PS_ERR_INVALID_ARG, "tile", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.tile_w = INT64_MIN;
    API_ERR(PS_ERR_INVALID_ARG, "tile", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.group_limit = -1;
    API_ERR(PS_ERR_INVALID_ARG, "group_limit", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.layer_top_k = -2;
    API_ERR(PS_ERR_INVALID_ARG, "layer_top_k", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.layer_top_k = 4;
    b.layer_time_budget_ms = NAN;
    API_ERR(PS_ERR_INVALID_ARG, "layer_time_budget_ms", ps_graph_plan_create(ctx, g, &b, &p));
    b.layer_time_budget_ms = -1.0;
    API_ERR(PS_ERR_INVALID_ARG, "layer_time_budget_ms", ps_graph_plan_create(ctx, g, &b, &p));
    b = o;
    b.fusion = PS_FUSION_FIXED;
    API_ERR(PS_ERR_NULL_POINTER, "group_of", ps_graph_plan_create(ctx, g, &b, &p));
    const int groups[3] = {0, 0, 0};
    b.group_of = groups;
    b.n_group_of = 2;
    API_ERR(PS_ERR_INVALID_ARG, "n_group_of", ps_graph_plan_create(ctx, g, &b, &p));
    b.n_group_of = 4;
    API_ERR(PS_ERR_INVALID_ARG, "n_group_of", ps_graph_plan_create(ctx, g, &b, &p));
    TU_CHECK(p == NULL, "failed plan_create left *plan non-NULL");
    b.n_group_of = 3;
    TU_OK(ps_graph_plan_create(ctx, g, &b, &p));
    ps_graph_plan_destroy(p);
    p = NULL;

    /* a plan outlives its graph */
    TU_OK(ps_graph_plan_create(ctx, g, &o, &p));
    ps_graph_destroy(g);
    ps_graph_plan_destroy(NULL);
    if (!p) return;
    const int64_t nin = 9 * 11 * 2, nout = 9 * 11 * 2;
    float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
    for (int64_t i = 0; i < nin; i++) x[i] = (float)(i % 17) - 8;
    tu_fill(y, nout, tu_sentinel());
    const float *ins[1] = {x}, *nullin[1] = {NULL};
    float *outs[1] = {y}, *nullout[1] = {NULL};
    API_ERR(PS_ERR_NULL_POINTER, "plan", ps_graph_execute(NULL, ins, outs, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "inputs", ps_graph_execute(p, NULL, outs, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "outputs", ps_graph_execute(p, ins, NULL, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "input", ps_graph_execute(p, nullin, outs, NULL));
    API_ERR(PS_ERR_NULL_POINTER, "output", ps_graph_execute(p, ins, nullout, NULL));
    TU_CHECK(tu_find_not_sentinel(y, nout) < 0, "a refused execute wrote output element %lld",
             (long long)tu_find_not_sentinel(y, nout));
    TU_OK(ps_graph_execute(p, ins, outs, NULL));
    TU_CHECK(tu_find_not_sentinel(y, nout) >= 0, "execute wrote nothing");
    int all = 1;
    for (int64_t i = 0; i < nout; i++) all &= !isnan(y[i]);
    TU_CHECK(all, "execute left NaN (unwritten) elements");
    size_t ws = 1;
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_plan_workspace_size(NULL, &ws));
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_plan_workspace_size(p, NULL));
    TU_OK(ps_graph_plan_workspace_size(p, &ws));
    ps_graph_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_plan_get_stats(p, NULL));
    API_ERR(PS_ERR_INVALID_ARG, "struct_size", ps_graph_plan_get_stats(p, &stats));
    stats.struct_size = sizeof stats;
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_plan_get_stats(NULL, &stats));
    TU_OK(ps_graph_plan_get_stats(p, &stats));
    TU_CHECK(stats.n_groups >= 1 && stats.n_stages >= 1 && stats.n_groups <= stats.n_stages &&
                 stats.workspace_bytes == ws && stats.plan_ms >= 0 && stats.redundant_fraction >= 0,
             "stats: %d groups of %d stages, workspace %zu (size says %zu)", stats.n_groups, stats.n_stages,
             stats.workspace_bytes, ws);
    /* describe: snprintf-like */
    size_t need = 0;
    API_ERR(PS_ERR_NULL_POINTER, "NULL", ps_graph_plan_describe(NULL, NULL, 0, &need));
    ps_status st = ps_graph_plan_describe(p, NULL, 0, &need);
    TU_CHECK(need > 0, "describe needs %zu bytes (%s)", need, ps_status_str(st));
    char small[16];
    memset(small, 'x', sizeof small);
    st = ps_graph_plan_describe(p, small, sizeof small, NULL);
    TU_CHECK(memchr(small, 0, sizeof small) != NULL, "describe into 16 bytes is NUL-terminated (%s)", ps_status_str(st));
    char *text = malloc(need + 1);
    TU_OK(ps_graph_plan_describe(p, text, need + 1, NULL));
    TU_CHECK(strlen(text) == need, "describe wrote %zu of %zu", strlen(text), need);
    free(text);
    ps_graph_plan_destroy(p);
    free(x);
    free(y);
}

/* Graph g (one input) planned under ctx with no fusion, greedy and DP
 * fusion, executed on a fixed input into NaN-filled outputs, every output
 * against the double reference. */
static void check_modes(ps_context *ctx, const ps_graph *g, const char *what)
{
    static const ps_fusion modes[] = {PS_FUSION_NONE, PS_FUSION_GREEDY, PS_FUSION_DP};
    enum { MAX_OUT = 4 };
    const int n_out = ps_graph_num_outputs(g);
    TU_CHECK(ps_graph_num_inputs(g) == 1 && n_out >= 1 && n_out <= MAX_OUT, "%s: %d outputs", what, n_out);
    if (n_out < 1 || n_out > MAX_OUT) return;
    const int64_t nin = gr_input_elems(g, 0);
    float *x = malloc((size_t)nin * sizeof *x), *outs[MAX_OUT];
    int64_t len[MAX_OUT];
    for (int64_t i = 0; i < nin; i++) x[i] = (float)((i * 104729) % 201 - 100) / 100.0f;
    for (int i = 0; i < n_out; i++) outs[i] = malloc((size_t)(len[i] = gr_output_elems(g, i)) * sizeof(float));
    const float *ins[1] = {x};
    gr_eval ev;
    const int ref_failed = gr_eval_graph(g, ins, &ev);
    TU_CHECK(!ref_failed, "%s: reference: %s", what, ev.msg);
    for (size_t m = 0; m < sizeof modes / sizeof *modes && !ref_failed; m++) {
        ps_graph_options o;
        ps_graph_options_init(&o);
        o.fusion = modes[m];
        ps_graph_plan *p = NULL;
        TU_OK(ps_graph_plan_create(ctx, g, &o, &p));
        if (!p) continue;
        for (int i = 0; i < n_out; i++) tu_fill(outs[i], len[i], NAN);
        TU_OK(ps_graph_execute(p, ins, outs, NULL));
        for (int i = 0; i < n_out; i++) {
            gr_cmp cmp;
            gr_compare(g, &ev, i, outs[i], &cmp);
            TU_CHECK(cmp.n_bad == 0, "%s, fusion %d, output %d: %lld elements off, got %.9g want %.9g bound %.3g", what,
                     (int)modes[m], i, (long long)cmp.n_bad, cmp.bad_got, cmp.bad_want, cmp.bad_bound);
        }
        ps_graph_plan_destroy(p);
    }
    if (!ref_failed) gr_eval_free(&ev);
    free(x);
    for (int i = 0; i < n_out; i++) free(outs[i]);
}

/* Planar channel mixes with more input channels than a stencil has taps
 * (PS_STENCIL_MAX_TAPS): the executor sums them in blocks. Fed by an input
 * (rows read in place) and by a pointwise stage (rows in a ring or fused). */
static void test_wide_mix(ps_context *ctx)
{
    static const int64_t Cs[] = {PS_STENCIL_MAX_TAPS, PS_STENCIL_MAX_TAPS + 1, 3 * PS_STENCIL_MAX_TAPS + 50};
    for (size_t ci = 0; ci < sizeof Cs / sizeof *Cs; ci++)
        for (int via = 0; via < 2; via++) {
            const int64_t C = Cs[ci], H = 5, W = 19, K = 3;
            ps_graph *g = new_graph();
            ps_tensor in, t;
            TU_OK(ps_graph_add_input(g, "in", 1, H, W, C, PS_LAYOUT_NCHW, &in));
            t = in;
            if (via) {
                ps_expr *e = ps_expr_binary(PS_EXPR_MUL, ps_expr_input(0), ps_expr_const(0.5f));
                TU_OK(ps_graph_add_pointwise(g, "half", e, 1, &in, &t));
                ps_expr_free(e);
            }
            float *w = malloc((size_t)(K * C) * sizeof *w), bias[3] = {0.25f, -1.0f, 2.0f};
            for (int64_t i = 0; i < K * C; i++) w[i] = (float)((i * 7919) % 23 - 11) / 64.0f;
            TU_OK(ps_graph_add_channel_mix(g, "wide", t, K, w, bias, &t));
            free(w);
            TU_OK(add_col3(g, "b", t, &t));
            TU_OK(ps_graph_mark_output(g, t, PS_LAYOUT_NCHW));
            char what[64];
            snprintf(what, sizeof what, "wide mix C %lld %s", (long long)C, via ? "from a stage" : "from the input");
            check_modes(ctx, g, what);
            ps_graph_destroy(g);
        }
}

/* Rows of tensors in memory requested ahead, the row kernels called a piece
 * of columns at a time: under caches so small that every tensor counts as
 * in memory (pieces of 16 columns), stencils of column stride 1 and 2, a
 * channel mix and a downsampling read wide rows of an input and of a
 * tensor between groups. */
static void test_prefetched_rows(void)
{
    ps_context *small = NULL;
    if (tu_context_with_caches(0, 1 << 10, 2 << 10, 4 << 10, &small)) {
        TU_CHECK(0, "context with 1 KiB L1: %s", ps_last_error_message());
        return;
    }
    static const int dy9[9] = {-1, -1, -1, 0, 0, 0, 1, 1, 1}, dx9[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
    static const float w9[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, 0.25f, 0.125f, 0.0625f, 0.125f, 0.0625f};
    for (int stride = 1; stride <= 2; stride++) {
        ps_graph *g = new_graph();
        ps_tensor in, t, m;
        TU_OK(ps_graph_add_input(g, "in", 1, 11, 301, 3, PS_LAYOUT_NCHW, &in));
        ps_stencil st;
        ps_stencil_init(&st);
        st.input = in;
        st.n_taps = 9;
        st.dy = dy9;
        st.dx = dx9;
        st.weights = w9;
        st.stride_h = st.stride_w = stride;
        TU_OK(ps_graph_add_stencil(g, "s", &st, &t));
        const float mw[6] = {0.25f, 0.5f, 0.25f, -1.0f, 0.5f, 0.5f};
        TU_OK(ps_graph_add_channel_mix(g, "m", t, 2, mw, NULL, &m));
        TU_OK(ps_graph_add_resample(g, "d", m, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_CLAMP, &t));
        st.input = t;
        st.stride_h = st.stride_w = 1;
        TU_OK(ps_graph_add_stencil(g, "s2", &st, &t));
        TU_OK(ps_graph_mark_output(g, t, PS_LAYOUT_NCHW));
        TU_OK(ps_graph_mark_output(g, m, PS_LAYOUT_NCHW));
        char what[64];
        snprintf(what, sizeof what, "prefetched rows, stride %d", stride);
        check_modes(small, g, what);
        ps_graph_destroy(g);
    }
    ps_context_destroy(small);
}

/* Forced tile sizes: odd sides over an upsampling stage are rounded up to
 * what it needs (graph.h), a tile far larger than the image is clipped to it
 * (the workspace and scratch follow the image, not the tile), 2^24 is the
 * largest side taken. */
static void test_engine_tiles(ps_context *ctx)
{
    static const int64_t tiles[][2] = {{1, 1}, {3, 5}, {7, 2}, {100000, 100000}, {1 << 24, 1 << 24}};
    for (int kind = 0; kind < 2; kind++)
        for (int f = 0; f < 3; f++)
            for (int i = 0; i < 5; i++) {
                ps_graph *g = new_graph();
                ps_tensor in, a, b;
                TU_OK(ps_graph_add_input(g, "in", 1, 20, 20, 1, PS_LAYOUT_NHWC, &in));
                if (kind == 0) {
                    TU_OK(ps_graph_add_resample(g, "up", in, PS_RESAMPLE_UP2_NEAREST, PS_BOUNDARY_CLAMP, &a));
                } else {
                    TU_OK(add_col3(g, "a", in, &a));
                }
                ps_expr *e = ps_expr_unary(PS_EXPR_ABS, ps_expr_input(0));
                TU_OK(ps_graph_add_pointwise(g, "b", e, 1, &a, &b));
                ps_expr_free(e);
                TU_OK(ps_graph_mark_output(g, b, PS_LAYOUT_NHWC));
                ps_graph_options o;
                ps_graph_options_init(&o);
                o.fusion = (ps_fusion)f;
                o.flags = PS_GRAPH_NO_INLINE;
                o.tile_h = tiles[i][0];
                o.tile_w = tiles[i][1];
                ps_graph_plan *p = NULL;
                const ps_status st = ps_graph_plan_create(ctx, g, &o, &p);
                TU_CHECK(st == PS_SUCCESS, "%s, fusion %d, tile %lld x %lld: %s: %s", kind ? "3-tap stencil" : "up2 nearest", f,
                         (long long)tiles[i][0], (long long)tiles[i][1], ps_status_str(st), ps_last_error_message());
                ps_graph_plan_stats stats;
                memset(&stats, 0, sizeof stats);
                stats.struct_size = sizeof stats;
                if (p && ps_graph_plan_get_stats(p, &stats) == PS_SUCCESS) {
                    /* every tensor is at most 40 x 40 floats: 6400 bytes */
                    TU_CHECK(stats.workspace_bytes <= (1 << 20) && stats.scratch_bytes <= (1 << 20),
                             "%s, fusion %d, tile %lld x %lld: workspace %zu, scratch %zu bytes per thread for 40 x 40 "
                             "tensors", kind ? "3-tap stencil" : "up2 nearest", f, (long long)tiles[i][0],
                             (long long)tiles[i][1], stats.workspace_bytes, stats.scratch_bytes);
                    TU_CHECK(stats.redundant_fraction >= 0, "redundant fraction %g", stats.redundant_fraction);
                }
                ps_graph_plan_destroy(p);
                ps_graph_destroy(g);
            }
    ps_tensor in, out;
    ps_graph *g = small_graph(&in, &out);
    TU_OK(ps_graph_mark_output(g, out, PS_LAYOUT_NHWC));
    ps_graph_options o;
    ps_graph_options_init(&o);
    o.tile_h = o.tile_w = ((int64_t)1 << 24) + 1;
    ps_graph_plan *p = NULL;
    API_ERR(PS_ERR_INVALID_ARG, "tile", ps_graph_plan_create(ctx, g, &o, &p));
    ps_graph_destroy(g);
}

/* Graphs at the edges of what planning must take: a stage whose only
 * consumer reads outside its domain at every pixel (ZERO boundary: the stage
 * is needed nowhere), a stage nobody reads and that is no output, a 1 x 1
 * image through every stage kind. Each must plan in every mode (and with
 * pointwise stages inlined or not) and execute. */
static void test_engine_edges(void)
{
    ps_context *ctx = NULL;
    TU_OK(ps_context_create(NULL, &ctx));
    if (!ctx) return;
    for (int c = 0; c < 3; c++)
        for (int f = 0; f < 3; f++)
            for (int inl = 0; inl < 2; inl++) {
                ps_graph *g = new_graph();
                ps_tensor in, a, b, t;
                const int H = c == 2 ? 1 : 4, W = c == 2 ? 1 : c == 0 ? 1 : 4;
                TU_OK(ps_graph_add_input(g, "in", 1, H, W, 2, PS_LAYOUT_NHWC, &in));
                ps_expr *e = ps_expr_unary(PS_EXPR_ABS, ps_expr_input(0));
                TU_OK(ps_graph_add_pointwise(g, "a", e, 1, &in, &a));
                ps_expr_free(e);
                ps_stencil st;
                ps_stencil_init(&st);
                st.input = a;
                st.boundary = PS_BOUNDARY_ZERO;
                st.n_taps = 1;
                st.dy = (const int[]){c == 1 ? 5 : 0};
                st.dx = (const int[]){c == 1 ? 0 : -5};
                if (c == 2) { /* 1 x 1: every kind, one after the other; "dead" is read by nobody */
                    st.dx = D0;
                    st.dy = D0;
                    st.boundary = PS_BOUNDARY_CLAMP;
                }
                TU_OK(ps_graph_add_stencil(g, "b", &st, &b));
                t = b;
                if (c == 2) {
                    const float w2[4] = {1, 2, 3, 4};
                    ps_tensor dead;
                    TU_OK(ps_graph_add_channel_mix(g, "dead", a, 1, w2, NULL, &dead));
                    TU_OK(ps_graph_add_channel_mix(g, "m", t, 2, w2, w2, &t));
                    TU_OK(ps_graph_add_resample(g, "u", t, PS_RESAMPLE_UP2_BILINEAR, PS_BOUNDARY_CLAMP, &t));
                    TU_OK(ps_graph_add_resample(g, "d", t, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_ZERO, &t));
                    TU_OK(ps_graph_add_resample(g, "d2", t, PS_RESAMPLE_DOWN2_AVERAGE, PS_BOUNDARY_CLAMP, &t));
                }
                TU_OK(ps_graph_mark_output(g, t, PS_LAYOUT_NCHW));
                ps_graph_options o;
                ps_graph_options_init(&o);
                o.fusion = (ps_fusion)f;
                o.flags = inl ? 0 : PS_GRAPH_NO_INLINE;
                ps_graph_plan *p = NULL;
                const ps_status r = ps_graph_plan_create(ctx, g, &o, &p);
                static const char *cases[3] = {"a stencil reading only left of a 1-column input (ZERO)",
                                               "a stencil reading only below its input (ZERO)",
                                               "a 1 x 1 image through every kind, with a dead stage"};
                TU_CHECK(r == PS_SUCCESS, "%s, fusion %d%s: %s: %s", cases[c], f, inl ? "" : ", no inlining",
                         ps_status_str(r), ps_last_error_message());
                if (p) {
                    ps_tensor_info oi;
                    info_of(g, t, &oi);
                    const int64_t n = oi.n * oi.h * oi.w * oi.c;
                    float x[4 * 4 * 2], *y = malloc((size_t)n * sizeof *y); /* the largest input: 4 x 4 x 2 */
                    for (int i = 0; i < 32; i++) x[i] = (float)(i % 2 ? i : -i) / 8;
                    tu_fill(y, n, tu_sentinel());
                    const float *ins[1] = {x};
                    float *outs[1] = {y};
                    TU_OK(ps_graph_execute(p, ins, outs, NULL));
                    gr_eval ev;
                    if (gr_eval_graph(g, ins, &ev) == 0) {
                        gr_cmp cmp;
                        TU_CHECK(gr_compare(g, &ev, 0, y, &cmp) == 0, "%s, fusion %d: %lld wrong, got %g want %g", cases[c], f,
                                 (long long)cmp.n_bad, cmp.bad_got, cmp.bad_want);
                    }
                    gr_eval_free(&ev);
                    free(y);
                }
                ps_graph_plan_destroy(p);
                ps_graph_destroy(g);
            }
    ps_context_destroy(ctx);
}

int main(void)
{
    test_create_and_inputs();
    test_stencil();
    test_pointwise();
    test_mix_resample();
    in_child(test_far_origin, "domain origins far from 0");
    in_child(sizes_near_int64, "input sizes whose products leave int64");
    in_child(region_far_from_origin, "output regions far from 0 and at the ends of int64");
    in_child(down2_of_odd_pixel, "DOWN2_AVERAGE of a pixel at an odd coordinate");
    test_outputs();
    test_expr();
    int skipped = 0;
    if (ge_engine_present()) {
        ps_context *ctx = NULL;
        TU_OK(ps_context_create(NULL, &ctx));
        /* In a child (planning these has overflowed; UBSan ends the
         * process), and first: a child forked after OpenMP has started its
         * threads would wait on them forever. */
        in_child(test_engine_edges, "graphs at the edges of planning");
        if (ctx) {
            test_engine(ctx);
            test_engine_tiles(ctx);
            test_wide_mix(ctx);
            test_prefetched_rows();
        }
        ps_context_destroy(ctx);
    } else {
        printf("test_graph_api: SKIPPED the planning and execution checks: the library has no graph engine "
               "(ps_graph_plan_create)\n");
        skipped = 1;
    }
    const int rc = tu_finish("test_graph_api");
    return rc ? rc : skipped ? 77 : 0;
}
