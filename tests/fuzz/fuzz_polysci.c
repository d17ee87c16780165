/* libFuzzer harness for polysci (tests/fuzz/run.sh builds and runs it).
 *
 * The first byte picks a mode; the rest is decoded by that mode:
 *   0  conv   every ps_conv_desc field, the plan options and a schedule
 *   1  gemm   every ps_gemm_desc field, the plan options and a schedule
 *   2  wisdom the bytes as they are, to ps_wisdom_import_buffer
 *   3  wisdom the bytes as the body of a wisdom file for this machine and
 *            version, with a correct checksum (so the parser gets past it);
 *            every imported plan is then created (cache hit), executed and
 *            the cache exported and re-imported
 *   4  schedule text: parse, format, parse again (round trip), check
 *   5  graph  stage-graph builder calls (every stage kind, outputs, regions,
 *            expressions), plan options, and for small graphs planning and
 *            execution compared with the double reference of tests/graph
 *   6  iter   an iterated stencil (grid, boundary, steps, arrays, taps) and
 *            plan options; for small ones every forced tiling and the model's
 *            choice executed and compared with step by step, bit for bit
 * Fields are decoded so that most inputs are small valid shapes (planned,
 * packed, executed and compared with the double reference of tests/) and
 * some carry out-of-range or extreme values (which must be rejected with an
 * error status and a fresh, non-empty message). Valid shapes above a small
 * work budget are only validated, so one input stays in the millisecond range.
 *
 * Anything that is not a sanitizer finding but still a bug (a wrong result, a
 * failure without a message, a schedule that does not round-trip) aborts with
 * a "FUZZ BUG:" line, so libFuzzer saves the input as a crash. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "polysci/polysci.h"
#include "reference.h"
#include "graph/graph_engine.h"
#include "graph/graph_ref.h"
/* White box: the context's cache and fingerprint, the plan-key parser; the
 * graph's nodes (domains of output tensors). */
#include "graph/graph_impl.h"
#include "plan/cache.h"
#include "plan/context_impl.h"

#define FUZZ_MAX_MACS (1 << 20)   /* multiply-adds of one execution */
#define FUZZ_MAX_ELEMS (1 << 17)  /* elements of any one buffer */

static ps_context *g_ctx, *g_ctx2;
static int g_verbose; /* FUZZ_VERBOSE=1: print what each input decodes to (for reproducers) */
static char g_wisdom_path[128];

/* ------------------------------------------------------------ helpers */

#define BUG(...)                                                                \
    do {                                                                        \
        fprintf(stderr, "FUZZ BUG (%s:%d): ", __FILE__, __LINE__);              \
        fprintf(stderr, __VA_ARGS__);                                           \
        fprintf(stderr, "\n");                                                  \
        abort();                                                                \
    } while (0)

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint8_t u8(rd *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}
static uint64_t u64(rd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
    return v;
}
static uint32_t u32(rd *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)u8(r) << (8 * i);
    return v;
}

static const int64_t special_i64[] = {0, -1, -2, 3, 7, 64, 65, 1000, 4096, (int64_t)1 << 20, ((int64_t)1 << 31) - 1,
                                      (int64_t)1 << 31, ((int64_t)1 << 40) - 1, (int64_t)1 << 40, INT64_MAX / 16,
                                      INT64_MAX, INT64_MIN, -((int64_t)1 << 31)};
#define N_SPECIAL (int)(sizeof special_i64 / sizeof special_i64[0])

/* A planning-time budget in milliseconds from the bits of an option byte
 * its own field leaves unused (b / 3: the fields take b % 3), so the seeds'
 * byte streams keep their meaning: mostly 0, sometimes a budget, sometimes
 * one ps_plan_options / ps_graph_options must reject. */
static double budget_from(uint8_t b)
{
    static const double ms[] = {0, 0, 0, 0, 0.5, 50, -1, NAN, INFINITY, 1e8};
    return b < 250 ? ms[(b / 3) % (sizeof ms / sizeof ms[0])] : 0;
}

/* A size field: usually 1..typ, sometimes 0..2, a special value or raw bits. */
static int64_t size_field(rd *r, int64_t typ)
{
    const uint8_t sel = u8(r);
    if (sel < 200) return 1 + (int64_t)(u8(r) % typ);
    if (sel < 220) return (int64_t)(u8(r) % 3);
    if (sel < 245) return special_i64[u8(r) % N_SPECIAL];
    return (int64_t)u64(r);
}
/* An enum/int field: usually 0..n-1, sometimes raw. */
/* A padding: usually 0..3 (size_field - 1, without overflow). */
static int64_t pad_field(rd *r)
{
    const int64_t v = size_field(r, 4);
    return v == INT64_MIN ? v : v - 1;
}
static int enum_field(rd *r, int n)
{
    const uint8_t sel = u8(r);
    if (sel < 250) return (int)(u8(r) % n);
    return (int)u32(r);
}
static float float_field(rd *r)
{
    static const float table[] = {1.0f, 0.0f, -1.0f, 0.5f, 2.0f, 1.5f, -0.25f, 3.0f, -0.0f, 1e-40f, 1e30f};
    const uint8_t sel = u8(r);
    if (sel < 200) return table[u8(r) % (sizeof table / sizeof table[0])];
    if (sel < 230) return (float)((int)u8(r) - 128) / 16.0f;
    if (sel < 240) {
        const float bad[] = {NAN, INFINITY, -INFINITY};
        return bad[u8(r) % 3];
    }
    uint32_t bits = u32(r);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* splitmix64 for operand data. */
static uint64_t g_rng;
static float rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Exact-size buffer (so ASan sees any overrun), `shift` floats into a
 * 64-byte aligned block: shift != 0 tests unaligned operands. */
typedef struct fbuf {
    void *base;
    float *p;
} fbuf;
static int falloc(fbuf *b, int64_t n, int shift)
{
    b->base = NULL;
    b->p = NULL;
    if (posix_memalign(&b->base, 64, (size_t)(n + shift) * sizeof(float) + 1) != 0) return 0;
    b->p = (float *)b->base + shift;
    return 1;
}
static void ffree(fbuf *b) { free(b->base); }

static float sentinel(void)
{
    uint32_t u = 0x7fa5a5a5u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static int is_sentinel(float f)
{
    const float s = sentinel();
    return memcmp(&f, &s, sizeof f) == 0;
}

/* Sets a known message, so a failing call that sets none is caught. The
 * primer (a NULL descriptor) is a failure no decoded input can produce. */
static char g_primer_msg[1100];
static void prime(void)
{
    if (ps_desc_validate(NULL) == PS_SUCCESS) BUG("ps_desc_validate(NULL) succeeded");
    snprintf(g_primer_msg, sizeof g_primer_msg, "%s", ps_last_error_message());
}
static void expect_message(ps_status st, const char *call)
{
    const char *m = ps_last_error_message();
    if (st == PS_SUCCESS) return;
    if (!m || !m[0]) BUG("%s -> %s with an empty message", call, ps_status_str(st));
    if (strcmp(m, g_primer_msg) == 0)
        BUG("%s -> %s but left no message of its own (still \"%s\")", call, ps_status_str(st), m);
    if (strcmp(ps_status_str(st), "PS_ERR_UNKNOWN") == 0) BUG("%s returned unknown status %d", call, (int)st);
}

/* ------------------------------------------------------------ descriptors */

static void decode_header(rd *r, ps_desc *d)
{
    const uint8_t sel = u8(r);
    if (sel == 255) d->struct_size = (size_t)u8(r);
    if (sel == 254) d->kind = (ps_op_kind)(int8_t)u8(r);
}

static void decode_conv(rd *r, ps_desc *d)
{
    ps_desc_init_conv(d);
    ps_conv_desc *c = &d->u.conv;
    c->N = size_field(r, 2);
    c->C = size_field(r, 48);
    c->K = size_field(r, 48);
    c->H = size_field(r, 12);
    c->W = size_field(r, 20);
    c->R = size_field(r, 5);
    c->S = size_field(r, 5);
    c->stride_h = size_field(r, 3);
    c->stride_w = size_field(r, 3);
    c->pad_top = pad_field(r);
    c->pad_bottom = pad_field(r);
    c->pad_left = pad_field(r);
    c->pad_right = pad_field(r);
    c->dilation_h = size_field(r, 3);
    c->dilation_w = size_field(r, 3);
    c->layout = (ps_act_layout)enum_field(r, 2);
    c->weight_layout = (ps_weight_layout)enum_field(r, 3);
    c->post_ops = (unsigned)enum_field(r, 4);
    decode_header(r, d);
}

static int64_t ld_field(rd *r, const ps_gemm_desc *g, char which)
{
    const uint8_t sel = u8(r);
    if (sel < 128) return 0;
    if (sel < 240) {
        const int64_t min_ld = ref_gemm_min_ld(g, which);
        if (min_ld > ((int64_t)1 << 40) || min_ld < 0) return min_ld;
        return min_ld + (int64_t)(u8(r) % 9) - (sel < 150 ? 1 : 0);
    }
    return size_field(r, 200);
}

static void decode_gemm(rd *r, ps_desc *d)
{
    ps_desc_init_gemm(d);
    ps_gemm_desc *g = &d->u.gemm;
    g->M = size_field(r, 80);
    g->N = size_field(r, 80);
    g->K = size_field(r, 120);
    g->order = (ps_matrix_order)enum_field(r, 2);
    g->trans_a = enum_field(r, 2);
    g->trans_b = enum_field(r, 2);
    g->lda = ld_field(r, g, 'a');
    g->ldb = ld_field(r, g, 'b');
    g->ldc = ld_field(r, g, 'c');
    g->alpha = float_field(r);
    g->beta = float_field(r);
    decode_header(r, d);
}

/* Work and buffer sizes of a valid descriptor, in double (no overflow). */
static int small_enough(const ps_desc *d)
{
    if (d->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &d->u.conv;
        int64_t OH, OW;
        if (!ref_conv_out_size(c, &OH, &OW)) return 0;
        const double src = (double)c->N * c->C * c->H * c->W, dst = (double)c->N * c->K * OH * OW,
                     wei = (double)c->K * c->C * c->R * c->S;
        return src <= FUZZ_MAX_ELEMS && dst <= FUZZ_MAX_ELEMS && wei <= FUZZ_MAX_ELEMS &&
               dst * c->C * c->R * c->S <= FUZZ_MAX_MACS && (double)OH * OW * c->N <= 4096;
    }
    const ps_gemm_desc *g = &d->u.gemm;
    const double a = (double)ref_gemm_ld(g, 'a') * (double)(g->M > g->K ? g->M : g->K),
                 b = (double)ref_gemm_ld(g, 'b') * (double)(g->N > g->K ? g->N : g->K),
                 c = (double)ref_gemm_ld(g, 'c') * (double)(g->M > g->N ? g->M : g->N);
    return a <= FUZZ_MAX_ELEMS && b <= FUZZ_MAX_ELEMS && c <= FUZZ_MAX_ELEMS &&
           (double)g->M * g->N * g->K <= FUZZ_MAX_MACS;
}

/* ------------------------------------------------------------ execution */

static void check_result(const ps_desc *d, const char *what, const float *got, const double *ref, const double *mag,
                         int64_t n, int64_t L, const ps_plan *p)
{
    ref_cmp cmp;
    ref_compare(got, ref, mag, n, L, &cmp);
    if (cmp.n_bad) {
        char text[2048];
        ps_plan_describe(p, text, sizeof text, NULL);
        BUG("%s: %lld of %lld outputs wrong (first %lld: got %.9g want %.9g, max normalized error %.3g)\n%s",
            what, (long long)cmp.n_bad, (long long)n, (long long)cmp.first_bad, cmp.first_got, cmp.first_ref,
            cmp.max_norm_err, text);
    }
    (void)d;
}

/* Runs a conv plan: pack, execute (own or a caller's misaligned workspace),
 * compare every output with the reference. */
static void run_conv(const ps_plan *p, const ps_desc *d, uint8_t how)
{
    const ps_conv_desc *c = &d->u.conv;
    int64_t OH, OW;
    ps_status st = ps_conv_output_size(d, &OH, &OW);
    if (st) BUG("ps_conv_output_size failed on a planned descriptor: %s", ps_last_error_message());
    const int64_t ns = c->N * c->C * c->H * c->W, nw = c->K * c->C * c->R * c->S, nd = c->N * c->K * OH * OW;
    const int shift = how & 1;
    size_t packed_bytes = 0, ws_bytes = 0;
    if ((st = ps_plan_packed_weights_size(p, &packed_bytes))) BUG("packed_weights_size: %s", ps_last_error_message());
    if ((st = ps_plan_workspace_size(p, &ws_bytes))) BUG("workspace_size: %s", ps_last_error_message());
    if (packed_bytes < 64 + (size_t)nw * sizeof(float)) BUG("packed size %zu too small for %lld weights", packed_bytes, (long long)nw);
    fbuf src, wei, bias, dst;
    void *packed = NULL, *ws = NULL;
    double *ref = malloc((size_t)nd * sizeof *ref), *mag = malloc((size_t)nd * sizeof *mag);
    if (!falloc(&src, ns, shift) || !falloc(&wei, nw, 0) || !falloc(&bias, c->K, shift) || !falloc(&dst, nd, shift) ||
        posix_memalign(&packed, 64, packed_bytes) || !ref || !mag)
        abort();
    for (int64_t i = 0; i < ns; i++) src.p[i] = rnd();
    for (int64_t i = 0; i < nw; i++) wei.p[i] = rnd();
    for (int64_t i = 0; i < c->K; i++) bias.p[i] = rnd();
    for (int64_t i = 0; i < nd; i++) dst.p[i] = sentinel();
    if ((st = ps_plan_pack_weights(p, wei.p, packed))) BUG("pack_weights: %s", ps_last_error_message());

    /* Weights packed for another plan are refused, and nothing is written. */
    unsigned char bogus[64] = {0};
    prime();
    st = ps_conv_execute(p, src.p, bogus, bias.p, dst.p);
    if (st != PS_ERR_BAD_WEIGHTS) BUG("execute with unpacked weights -> %s, want PS_ERR_BAD_WEIGHTS", ps_status_str(st));
    expect_message(st, "execute(bogus weights)");
    for (int64_t i = 0; i < nd; i++)
        if (!is_sentinel(dst.p[i])) BUG("a refused execute wrote dst[%lld]", (long long)i);

    ps_exec_args a;
    ps_exec_args_init(&a);
    a.src = src.p;
    a.weights = packed;
    a.bias = (c->post_ops & PS_POST_BIAS) ? bias.p : NULL;
    a.dst = dst.p;
    unsigned char *wsb = NULL;
    if (how & 2) {
        /* The caller's workspace may have any alignment: end it exactly at
         * the buffer's end, starting `off` bytes into an aligned block. */
        const size_t off = (size_t)((how >> 2) & 63);
        if (posix_memalign(&ws, 64, ws_bytes + off + 1)) abort();
        wsb = (unsigned char *)ws + off;
        a.workspace = wsb;
    }
    if ((st = ps_plan_execute(p, &a))) BUG("conv execute: %s: %s", ps_status_str(st), ps_last_error_message());
    int64_t L = 0;
    ref_conv_fwd(c, src.p, wei.p, bias.p, ref, mag, &L);
    check_result(d, "conv", dst.p, ref, mag, nd, L, p);
    /* A second run over the same dst (and workspace) gives the same result. */
    if (how & 0x80) {
        if ((st = ps_plan_execute(p, &a))) BUG("conv execute (2): %s", ps_last_error_message());
        check_result(d, "conv (second run)", dst.p, ref, mag, nd, L, p);
    }
    free(ws);
    free(packed);
    free(ref);
    free(mag);
    ffree(&src);
    ffree(&wei);
    ffree(&bias);
    ffree(&dst);
}

static void run_gemm(const ps_plan *p, const ps_desc *d, uint8_t how)
{
    const ps_gemm_desc *g = &d->u.gemm;
    const int64_t na = ref_gemm_buffer_elems(g, 'a', ref_gemm_ld(g, 'a')),
                  nb = ref_gemm_buffer_elems(g, 'b', ref_gemm_ld(g, 'b')),
                  nc = ref_gemm_buffer_elems(g, 'c', ref_gemm_ld(g, 'c')), nmn = g->M * g->N;
    const int shift = how & 1;
    size_t ws_bytes = 0, packed = 0;
    ps_status st;
    if ((st = ps_plan_workspace_size(p, &ws_bytes))) BUG("workspace_size: %s", ps_last_error_message());
    prime();
    st = ps_plan_packed_weights_size(p, &packed);
    if (st == PS_SUCCESS) BUG("a gemm plan has packed weights");
    expect_message(st, "packed_weights_size(gemm)");
    fbuf A, B, C, C0;
    double *ref = malloc((size_t)nmn * sizeof *ref), *mag = malloc((size_t)nmn * sizeof *mag);
    if (!falloc(&A, na, shift) || !falloc(&B, nb, 0) || !falloc(&C, nc, shift) || !falloc(&C0, nc, 0) || !ref || !mag)
        abort();
    for (int64_t i = 0; i < na; i++) A.p[i] = rnd();
    for (int64_t i = 0; i < nb; i++) B.p[i] = rnd();
    /* C: the gaps between columns (ld > rows) hold the sentinel and must stay
     * untouched; with beta == 0 C is not read, so it holds NaN too. */
    for (int64_t i = 0; i < nc; i++) C.p[i] = sentinel();
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) C.p[ref_gemm_index(g, 'c', i, j)] = g->beta == 0.0f ? NAN : rnd();
    memcpy(C0.p, C.p, (size_t)nc * sizeof(float));
    ps_exec_args a;
    ps_exec_args_init(&a);
    a.a = A.p;
    a.b = B.p;
    a.c = C.p;
    void *ws = NULL;
    if (how & 2) {
        const size_t off = (size_t)((how >> 2) & 63);
        if (posix_memalign(&ws, 64, ws_bytes + off + 1)) abort();
        a.workspace = (unsigned char *)ws + off;
    }
    if ((st = ps_plan_execute(p, &a))) BUG("gemm execute: %s: %s", ps_status_str(st), ps_last_error_message());
    int64_t L = 0;
    ref_gemm(g, A.p, B.p, C0.p, ref, mag, &L);
    /* |operands| <= 1: results stay far from FLT_MAX unless alpha/beta are huge. */
    const int comparable = fabs((double)g->alpha) * (double)g->K < 1e36 && fabs((double)g->beta) < 1e36;
    float *got = malloc((size_t)nmn * sizeof *got);
    if (!got) abort();
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) got[i + j * g->M] = C.p[ref_gemm_index(g, 'c', i, j)];
    if (comparable) check_result(d, "gemm", got, ref, mag, nmn, L, p);
    /* Mark the logical elements, then everything left must be the sentinel. */
    for (int64_t j = 0; j < g->N; j++)
        for (int64_t i = 0; i < g->M; i++) C.p[ref_gemm_index(g, 'c', i, j)] = sentinel();
    for (int64_t i = 0; i < nc; i++)
        if (!is_sentinel(C.p[i])) BUG("gemm wrote C[%lld], outside the M x N matrix (ldc gap)", (long long)i);
    free(got);
    free(ws);
    free(ref);
    free(mag);
    ffree(&A);
    ffree(&B);
    ffree(&C);
    ffree(&C0);
}

/* Checks on a created plan: describe (snprintf semantics), schedule round
 * trip, then execution. */
static void exercise_plan(const ps_plan *p, const ps_desc *d, uint8_t how, size_t describe_len)
{
    if (!ps_plan_get_schedule(p) || !ps_plan_get_desc(p)) BUG("plan without schedule/desc");
    if (ps_plan_get_desc(p)->kind != d->kind) BUG("plan desc kind differs");
    char *text = malloc(describe_len ? describe_len : 1);
    size_t needed = 0;
    ps_status st = ps_plan_describe(p, describe_len ? text : NULL, describe_len, &needed);
    if (needed < describe_len) {
        if (st) BUG("describe: %s although %zu bytes fit in %zu", ps_last_error_message(), needed, describe_len);
        if (strlen(text) != needed) BUG("describe: strlen %zu != needed %zu", strlen(text), needed);
    } else {
        if (st != PS_ERR_BUFFER_TOO_SMALL) BUG("describe: %s for %zu bytes in %zu", ps_status_str(st), needed, describe_len);
        if (describe_len && strlen(text) != describe_len - 1) BUG("describe: truncated text not NUL-terminated at len-1");
    }
    free(text);
    char s1[1024], s2[1024];
    if ((st = ps_schedule_format(ps_plan_get_schedule(p), d->kind, s1, sizeof s1, NULL)))
        BUG("format of a plan's schedule: %s", ps_last_error_message());
    ps_schedule *back = NULL;
    if ((st = ps_schedule_parse(d->kind, s1, &back))) BUG("plan schedule \"%s\" does not parse: %s", s1, ps_last_error_message());
    if ((st = ps_schedule_check(back, d))) BUG("plan schedule \"%s\" fails its check: %s", s1, ps_last_error_message());
    ps_schedule_format(back, d->kind, s2, sizeof s2, NULL);
    if (strcmp(s1, s2)) BUG("schedule round trip \"%s\" -> \"%s\"", s1, s2);
    ps_schedule_destroy(back);
    if (d->kind == PS_OP_CONV_FWD) run_conv(p, d, how);
    else run_gemm(p, d, how);
}

/* Schedule from bytes: text (rest of the input), the default, or built with
 * ps_schedule_create/add_loop (which must reject bad loops itself). */
static ps_schedule *decode_schedule(rd *r, const ps_desc *d, int sel)
{
    ps_schedule *s = NULL;
    ps_status st;
    if (sel == 1) {
        char *text = malloc(r->n + 1);
        memcpy(text, r->p, r->n);
        text[r->n] = 0;
        r->p += r->n;
        r->n = 0;
        prime();
        st = ps_schedule_parse(d->kind == PS_OP_GEMM ? PS_OP_GEMM : PS_OP_CONV_FWD, text, &s);
        expect_message(st, "ps_schedule_parse");
        if ((st != PS_SUCCESS) != (s == NULL)) BUG("schedule_parse status/out mismatch");
        free(text);
    } else if (sel == 2) {
        prime();
        st = ps_schedule_default(d, &s);
        expect_message(st, "ps_schedule_default");
        if (st == PS_SUCCESS && (st = ps_schedule_check(s, d)))
            BUG("default schedule fails its check: %s", ps_last_error_message());
    } else {
        const int m = (int)size_field(r, 70), n = (int)size_field(r, 30), k = (int)size_field(r, 70),
                  b = (int)size_field(r, 8);
        prime();
        st = ps_schedule_create(m, n, k, b, &s);
        expect_message(st, "ps_schedule_create");
        const int nl = u8(r) % 20;
        for (int i = 0; i < nl && s; i++) {
            const int dim = (int)(u8(r) % 7) - 1; /* -1 and 5 are invalid */
            const int64_t tile = size_field(r, 8);
            prime();
            st = ps_schedule_add_loop(s, (ps_dim)dim, tile, u8(r) & 1);
            expect_message(st, "ps_schedule_add_loop");
        }
    }
    return s;
}

/* The planner's cost model on the same descriptor and options. */
static void fuzz_cost_query(const ps_desc *d, const ps_plan_options *o, size_t json_len)
{
    ps_cost_report *rep = (ps_cost_report *)d;
    prime();
    ps_status st = ps_cost_query(g_ctx, d, o, &rep);
    expect_message(st, "ps_cost_query");
    if ((st == PS_SUCCESS) != (rep != NULL)) BUG("cost_query status/report mismatch");
    if (st) return;
    const int n = ps_cost_report_size(rep);
    double last = -INFINITY;
    for (int i = 0; i < n; i++) {
        ps_variant_cost v;
        if ((st = ps_cost_report_get(rep, i, &v))) BUG("cost_report_get(%d of %d): %s", i, n, ps_last_error_message());
        if (v.rank != i + 1 || !v.schedule) BUG("variant %d: rank %d schedule %p", i, v.rank, (const void *)v.schedule);
        if (o->ranker != PS_RANKER_DNN && v.cost < last) BUG("variant %d: cost %g after %g (ranks must ascend)", i, v.cost, last);
        last = v.cost;
        ps_schedule *s = NULL;
        if (ps_schedule_parse(d->kind, v.schedule, &s) || ps_schedule_check(s, d))
            BUG("ranked variant \"%s\" does not parse/check: %s", v.schedule, ps_last_error_message());
        ps_schedule_destroy(s);
    }
    prime();
    st = ps_cost_report_get(rep, n, &(ps_variant_cost){0});
    if (st == PS_SUCCESS) BUG("cost_report_get past the end succeeded");
    expect_message(st, "cost_report_get(out of range)");
    char *buf = malloc(json_len ? json_len : 1);
    size_t needed = 0;
    st = ps_cost_report_to_json(rep, (int)(json_len % 5), json_len ? buf : NULL, json_len, &needed);
    if ((needed < json_len) != (st == PS_SUCCESS)) BUG("to_json: %zu needed in %zu -> %s", needed, json_len, ps_status_str(st));
    if (json_len && strlen(buf) != (needed < json_len ? needed : json_len - 1)) BUG("to_json: bad truncation");
    free(buf);
    ps_cost_report_destroy(rep);
}

static void fuzz_op(rd *r, int gemm)
{
    ps_desc d;
    if (gemm) decode_gemm(r, &d);
    else decode_conv(r, &d);
    ps_plan_options o;
    ps_plan_options_init(&o);
    const uint8_t t = u8(r);
    o.num_threads = t < 250 ? t % 3 : (int)special_i64[t % N_SPECIAL];
    o.ranker = (ps_ranker)enum_field(r, 5);
    const uint8_t k = u8(r);
    o.top_k = k < 250 ? k % 3 : (int)special_i64[k % N_SPECIAL];
    o.time_budget_ms = budget_from(k);
    o.flags = (unsigned)enum_field(r, 2);
    if (u8(r) == 255) o.struct_size = u8(r);
    const uint8_t how = u8(r);
    const size_t describe_len = u8(r) < 200 ? 4096 : u8(r);
    const int sched_sel = u8(r) % 4;

    prime();
    const ps_status vst = ps_desc_validate(&d);
    expect_message(vst, "ps_desc_validate");
    if (g_verbose) {
        char key[1024];
        ps_plan_key(&d, o.num_threads, o.ranker, o.top_k, o.time_budget_ms, key, sizeof key);
        fprintf(stderr, "fuzz: %s (struct_size %zu kind %d) -> validate %s%s%s\n"
                "fuzz: opts struct_size %zu threads %d ranker %d top_k %d budget %g flags 0x%x schedule source %d how 0x%x "
                "describe_len %zu\n",
                key, d.struct_size, (int)d.kind, ps_status_str(vst), vst ? ": " : "", vst ? ps_last_error_message() : "",
                o.struct_size, o.num_threads, (int)o.ranker, o.top_k, o.time_budget_ms, o.flags, sched_sel, how,
                describe_len);
    }
    if (vst == PS_SUCCESS) {
        int64_t OH, OW;
        if (d.kind == PS_OP_CONV_FWD && ps_conv_output_size(&d, &OH, &OW)) BUG("output size of a valid conv failed");
        if (!(ps_desc_flops(&d) > 0)) BUG("flops of a valid descriptor %g", ps_desc_flops(&d));
    }
    ps_schedule *sched = sched_sel ? decode_schedule(r, &d, sched_sel) : NULL;
    if (sched && vst == PS_SUCCESS) {
        prime();
        expect_message(ps_schedule_check(sched, &d), "ps_schedule_check");
    }
    if (vst != PS_SUCCESS || !small_enough(&d)) {
        /* Invalid (or too big to run here): plan creation must fail the same way. */
        if (vst != PS_SUCCESS) {
            ps_plan *p = (ps_plan *)&d;
            prime();
            const ps_status st = ps_plan_create(g_ctx, &d, sched_sel == 0 ? NULL : &o, &p);
            expect_message(st, "ps_plan_create(invalid desc)");
            if (st != vst) BUG("plan_create -> %s but validate -> %s", ps_status_str(st), ps_status_str(vst));
            if (p) BUG("failed plan_create left *plan non-NULL");
        }
        ps_schedule_destroy(sched);
        return;
    }
    if (how & 0x40) fuzz_cost_query(&d, &o, describe_len);
    o.schedule = sched;
    const int n_before = ps_context_cached_plans(g_ctx);
    ps_plan *p = NULL;
    prime();
    ps_status st = ps_plan_create(g_ctx, &d, &o, &p);
    expect_message(st, "ps_plan_create");
    if (g_verbose) {
        char text[2048] = "";
        if (p) ps_plan_describe(p, text, sizeof text, NULL);
        fprintf(stderr, "fuzz: plan_create -> %s: %s\n", ps_status_str(st), st ? ps_last_error_message() : text);
    }
    if ((st == PS_SUCCESS) != (p != NULL)) BUG("plan_create status/plan mismatch");
    if (st == PS_SUCCESS) {
        exercise_plan(p, &d, how, describe_len);
        /* The same request again: from the plan cache (unless bypassed),
         * with the same schedule. */
        ps_plan *q = NULL;
        if ((st = ps_plan_create(g_ctx, &d, &o, &q))) BUG("second plan_create failed: %s", ps_last_error_message());
        char s1[1024], s2[1024];
        ps_schedule_format(ps_plan_get_schedule(p), d.kind, s1, sizeof s1, NULL);
        ps_schedule_format(ps_plan_get_schedule(q), d.kind, s2, sizeof s2, NULL);
        if (strcmp(s1, s2) && (o.top_k <= 1 || (o.flags & PS_PLAN_NO_CACHE) == 0))
            BUG("same request, different schedules: \"%s\" vs \"%s\"", s1, s2);
        ps_plan_destroy(q);
        ps_plan_destroy(p);
        if (!sched && !(o.flags & PS_PLAN_NO_CACHE) && ps_context_cached_plans(g_ctx) != n_before + 1)
            BUG("planned with the cache, but the cache went from %d to %d plans", n_before, ps_context_cached_plans(g_ctx));
    } else if (ps_context_cached_plans(g_ctx) != n_before) {
        BUG("a failed plan_create changed the plan cache");
    }
    ps_schedule_destroy(sched);
}

/* ------------------------------------------------------------ wisdom */

static void import_checked(ps_context *ctx, const char *data, size_t len, const char *what)
{
    const int before = ps_context_cached_plans(ctx);
    int n = -1;
    prime();
    const ps_status st = ps_wisdom_import_buffer(ctx, data, len, &n);
    expect_message(st, what);
    if (g_verbose)
        fprintf(stderr, "fuzz: %s (%zu bytes) -> %s, %d plans: %s\n", what, len, ps_status_str(st), n,
                st ? ps_last_error_message() : "");
    if (st != PS_SUCCESS && st != PS_ERR_PARSE && st != PS_ERR_STALE && st != PS_ERR_OUT_OF_MEMORY)
        BUG("%s -> %s: %s", what, ps_status_str(st), ps_last_error_message());
    if (st != PS_SUCCESS) {
        if (n != 0) BUG("%s failed but n_imported = %d", what, n);
        if (ps_context_cached_plans(ctx) != before) BUG("%s failed but changed the cache", what);
    } else if (n < 0 || ps_context_cached_plans(ctx) < before || ps_context_cached_plans(ctx) > before + n) {
        BUG("%s: n_imported %d, cache %d -> %d", what, n, before, ps_context_cached_plans(ctx));
    }
}

/* Creates (from the cache) and runs every imported plan that is small. */
static void run_imported(uint8_t how)
{
    const int n = g_ctx->cache_n;
    for (int i = 0; i < n && i < 8; i++) {
        ps_desc d;
        int nthreads = 0, top_k = 0;
        ps_ranker ranker;
        char key[1100];
        snprintf(key, sizeof key, "%s", g_ctx->cache[i].key);
        if (ps_plan_key_parse(key, &d, &nthreads, &ranker, &top_k, NULL)) BUG("imported key \"%s\" does not parse", key);
        if (ps_desc_validate(&d)) BUG("imported key \"%s\" is not a valid descriptor", key);
        if (nthreads < 1 || nthreads > 3 || top_k < 1 || top_k > 2 || (int)ranker < 0 || ranker > PS_RANKER_VOLUME ||
            !small_enough(&d))
            continue;
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.num_threads = nthreads;
        o.ranker = ranker;
        o.top_k = top_k;
        ps_plan *p = NULL;
        const int before = g_ctx->cache_n;
        const ps_status st = ps_plan_create(g_ctx, &d, &o, &p);
        if (st) {
            expect_message(st, "plan_create(imported)");
            continue;
        }
        exercise_plan(p, &d, how, 4096);
        ps_plan_destroy(p);
        (void)before;
    }
}

static void fuzz_wisdom_framed(rd *r)
{
    const uint8_t how = u8(r);
    const char *body = (const char *)r->p;
    size_t blen = r->n;
    char head[512];
    const int hl = snprintf(head, sizeof head, "polysci-wisdom 1 %s\nmachine %s\n", ps_version(), g_ctx->machine_fingerprint);
    const size_t cap = (size_t)hl + blen + 64;
    char *text = malloc(cap);
    memcpy(text, head, (size_t)hl);
    memcpy(text + hl, body, blen);
    size_t len = (size_t)hl + blen;
    if (blen && text[len - 1] != '\n') text[len++] = '\n';
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    len += (size_t)snprintf(text + len, cap - len, "checksum %016llx\n", (unsigned long long)h);
    /* Exact-size copy, so reading past the end is caught. */
    char *exact = malloc(len);
    memcpy(exact, text, len);
    free(text);
    import_checked(g_ctx, exact, len, "import(framed)");
    free(exact);
    if (ps_context_cached_plans(g_ctx) == 0) return;
    run_imported(how);
    /* Export, re-import into a second context: same number of plans. */
    if (how & 0x80) {
        prime();
        ps_status st = ps_wisdom_export(g_ctx, g_wisdom_path);
        expect_message(st, "wisdom_export");
        if (st) BUG("export to %s failed: %s", g_wisdom_path, ps_last_error_message());
        ps_context_forget_plans(g_ctx2);
        int n = 0;
        if ((st = ps_wisdom_import(g_ctx2, g_wisdom_path, &n)))
            BUG("re-import of exported wisdom: %s: %s", ps_status_str(st), ps_last_error_message());
        if (n != ps_context_cached_plans(g_ctx) || ps_context_cached_plans(g_ctx2) != n)
            BUG("export/import round trip: %d plans exported, %d imported", ps_context_cached_plans(g_ctx), n);
    }
}

/* ------------------------------------------------------------ schedules */

static void fuzz_schedule_text(rd *r)
{
    const ps_op_kind kind = (u8(r) & 1) ? PS_OP_GEMM : PS_OP_CONV_FWD;
    char *text = malloc(r->n + 1);
    memcpy(text, r->p, r->n);
    text[r->n] = 0;
    ps_schedule *s = NULL;
    prime();
    ps_status st = ps_schedule_parse(kind, text, &s);
    expect_message(st, "ps_schedule_parse");
    if (g_verbose) fprintf(stderr, "fuzz: parse \"%s\" -> %s %s\n", text, ps_status_str(st), st ? ps_last_error_message() : "");
    if (st == PS_SUCCESS) {
        char f1[1024], f2[1024];
        size_t need = 0;
        if ((st = ps_schedule_format(s, kind, f1, sizeof f1, &need))) BUG("format: %s", ps_last_error_message());
        if (need != strlen(f1)) BUG("format: needed %zu != strlen %zu", need, strlen(f1));
        /* Truncation contract: any len gets a NUL-terminated prefix. */
        for (size_t len = 0; len <= need + 1; len += 1 + need / 4) {
            char small[1024];
            memset(small, 'x', sizeof small);
            st = ps_schedule_format(s, kind, len ? small : NULL, len, NULL);
            if ((len > need) != (st == PS_SUCCESS)) BUG("format into %zu bytes (needs %zu) -> %s", len, need, ps_status_str(st));
            if (len && (strlen(small) != (len > need ? need : len - 1) || strncmp(small, f1, strlen(small))))
                BUG("format into %zu bytes gave \"%s\"", len, small);
        }
        ps_schedule *t = NULL;
        if ((st = ps_schedule_parse(kind, f1, &t))) BUG("formatted \"%s\" does not parse: %s", f1, ps_last_error_message());
        ps_schedule_format(t, kind, f2, sizeof f2, NULL);
        if (strcmp(f1, f2)) BUG("round trip \"%s\" -> \"%s\"", f1, f2);
        ps_schedule *c = ps_schedule_copy(t);
        if (!c) BUG("copy failed");
        ps_schedule_destroy(c);
        ps_schedule_destroy(t);
    } else if (s) {
        BUG("failed parse left *out non-NULL");
    }
    ps_schedule_destroy(s);
    free(text);
}

/* ------------------------------------------------------------ stage graphs */

/* Random byte streams drive the graph builder: a sequence of calls (inputs,
 * the four stage kinds, outputs, regions, tensor info, expression helpers)
 * with mostly valid and sometimes out-of-range arguments, then plan options,
 * and for small graphs planning and execution on random inputs compared with
 * the double reference (tests/graph/graph_ref.c). Every call that fails must
 * leave a message of its own and the graph as it was; every stage the
 * builder accepts must have the domain its definition gives. */

#define FUZZ_GRAPH_MAX_CALLS 32
#define FUZZ_GRAPH_MAX_TAPS 64
#define FUZZ_GRAPH_PLAN_STAGES 8       /* DP planning time grows fast with the stage count */
#define FUZZ_GRAPH_EVAL_ELEMS (1 << 15) /* elements of all tensors together, to evaluate and execute */

static int g_tame; /* every weight, bias and constant decoded so far is finite, 0 or 1e-3..1e3 */

static float graph_float(rd *r)
{
    const float f = float_field(r);
    if (!(isfinite(f) && (f == 0 || (fabsf(f) >= 1e-3f && fabsf(f) <= 1e3f)))) g_tame = 0;
    return f;
}

/* A tensor reference: mostly a recent tensor, sometimes -1, one past the end or raw bits. */
static ps_tensor tensor_ref(rd *r, const ps_graph *g)
{
    const int n = ps_graph_num_tensors(g);
    const uint8_t sel = u8(r);
    if (sel < 240 && n > 0) return (n - 1) - (int)(u8(r) % (unsigned)n);
    if (sel < 250) return (int)(sel % 3) - 1 + (sel & 4 ? n : 0);
    return (int)u32(r);
}

static int64_t tensor_channels(const ps_graph *g, ps_tensor t)
{
    ps_tensor_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    return ps_graph_tensor_info(g, t, &i) == PS_SUCCESS ? i.c : 1;
}

static const char *graph_name(rd *r, char *buf)
{
    const uint8_t sel = u8(r);
    if (sel < 200) return NULL;
    if (sel < 230) {
        snprintf(buf, 80, "n%u", (unsigned)(u8(r) % 8)); /* duplicates likely */
        return buf;
    }
    const size_t len = u8(r) % 70; /* 0 and > 63 are refused */
    for (size_t i = 0; i < len; i++) buf[i] = (char)(u8(r) % 4 == 0 ? ',' : 'a' + i % 26);
    buf[len] = 0;
    return buf;
}

static ps_expr *decode_expr(rd *r, int depth, int *budget)
{
    const uint8_t sel = u8(r);
    --*budget;
    if (depth <= 0 || *budget <= 0 || sel < 70) {
        if (sel & 1) return ps_expr_const(graph_float(r));
        const uint8_t k = u8(r);
        return ps_expr_input(k < 250 ? k % 5 : (int)(int8_t)u8(r)); /* 4 and negative indices are out of range */
    }
    static const ps_expr_op ops[] = {PS_EXPR_NEG, PS_EXPR_ABS, PS_EXPR_SQRT, PS_EXPR_EXP, PS_EXPR_LOG, PS_EXPR_FLOOR,
                                     PS_EXPR_ADD, PS_EXPR_SUB, PS_EXPR_MUL, PS_EXPR_DIV, PS_EXPR_MIN, PS_EXPR_MAX,
                                     PS_EXPR_LT, PS_EXPR_LE, PS_EXPR_GT, PS_EXPR_GE, PS_EXPR_EQ, PS_EXPR_NE,
                                     PS_EXPR_SELECT, PS_EXPR_CLAMP};
    const uint8_t o = u8(r);
    const ps_expr_op op = o < 250 ? ops[o % 20] : (ps_expr_op)(int8_t)u8(r); /* unknown ops too */
    const int shape = u8(r) % 16; /* mostly the op's arity; sometimes the wrong constructor */
    ps_expr *a = decode_expr(r, depth - 1, budget);
    if (shape == 0 || (shape < 14 && op < PS_EXPR_ADD)) return ps_expr_unary(op, a);
    ps_expr *b = decode_expr(r, depth - 1, budget);
    if (shape == 1 || (shape < 14 && op < PS_EXPR_SELECT)) return ps_expr_binary(op, a, b);
    ps_expr *c = decode_expr(r, depth - 1, budget);
    return shape == 15 || op == PS_EXPR_CLAMP ? ps_expr_clamp(a, b, c) : ps_expr_select(a, b, c);
}

/* The expression helpers on a decoded tree: to_str's snprintf contract, copy. */
static void exercise_expr(const ps_expr *e, int len)
{
    const int need = ps_expr_to_str(e, NULL, 0);
    if (need < 0) BUG("ps_expr_to_str returned %d", need);
    char *full = malloc((size_t)need + 1), *part = malloc((size_t)len + 1);
    if (ps_expr_to_str(e, full, need + 1) != need || strlen(full) != (size_t)need) BUG("ps_expr_to_str length");
    memset(part, 'x', (size_t)len + 1);
    if (ps_expr_to_str(e, part, len) != need) BUG("ps_expr_to_str(len %d) length", len);
    if (len > 0 && (strlen(part) != (size_t)(need < len ? need : len - 1) || strncmp(part, full, strlen(part))))
        BUG("ps_expr_to_str(len %d) gave \"%s\" for \"%s\"", len, part, full);
    ps_expr *c = ps_expr_copy(e);
    if (e && !c) BUG("ps_expr_copy failed");
    if (c) {
        char *again = malloc((size_t)need + 1);
        ps_expr_to_str(c, again, need + 1);
        if (strcmp(again, full)) BUG("copy prints \"%s\", the original \"%s\"", again, full);
        free(again);
    }
    ps_expr_free(c);
    free(full);
    free(part);
}

/* A failed call: a message of its own, the graph's counts unchanged, and
 * (for add calls) no tensor number in *out. */
static void expect_unchanged(ps_status st, const char *call, const ps_graph *g, int n0, int i0, int o0, ps_tensor out,
                             int is_add)
{
    if (st == PS_SUCCESS) return;
    expect_message(st, call);
    if (ps_graph_num_tensors(g) != n0 || ps_graph_num_inputs(g) != i0 || ps_graph_num_outputs(g) != o0)
        BUG("failed %s changed the graph: %d/%d/%d tensors/inputs/outputs, was %d/%d/%d", call, ps_graph_num_tensors(g),
            ps_graph_num_inputs(g), ps_graph_num_outputs(g), n0, i0, o0);
    /* *out: -1, or untouched when the graph itself was NULL */
    if (is_add && out != -1 && out != 12345) BUG("failed %s left *out = %d", call, out);
}

static void graph_call(rd *r, ps_graph *g)
{
    const int n0 = ps_graph_num_tensors(g), i0 = ps_graph_num_inputs(g), o0 = ps_graph_num_outputs(g);
    char name_buf[80];
    ps_tensor out = 12345;
    ps_status st = PS_SUCCESS;
    const char *call = "?";
    int is_add = 1;
    const uint8_t sel = u8(r) % 9;
    prime();
    switch (sel) {
    case 0: {
        call = "ps_graph_add_input";
        const char *name = graph_name(r, name_buf);
        const int64_t n = size_field(r, 2), h = size_field(r, 9), w = size_field(r, 11), c = size_field(r, 4);
        st = ps_graph_add_input(u8(r) == 255 ? NULL : g, name, n, h, w, c, (ps_act_layout)enum_field(r, 2), &out);
        break;
    }
    case 1: {
        call = "ps_graph_add_stencil";
        ps_stencil s;
        ps_stencil_init(&s);
        const char *name = graph_name(r, name_buf);
        s.input = tensor_ref(r, g);
        s.boundary = (ps_boundary)enum_field(r, 3);
        s.reduce = (ps_reduce)enum_field(r, 3);
        s.stride_h = (int)size_field(r, 3);
        s.stride_w = (int)size_field(r, 3);
        /* the builder reads n_taps entries once the count is in range: keep the arrays that long */
        s.n_taps = (int)size_field(r, 6);
        if (s.n_taps > FUZZ_GRAPH_MAX_TAPS && s.n_taps <= PS_STENCIL_MAX_TAPS) s.n_taps = FUZZ_GRAPH_MAX_TAPS;
        int dy[FUZZ_GRAPH_MAX_TAPS], dx[FUZZ_GRAPH_MAX_TAPS];
        static const int far[] = {1 << 28, -(1 << 28), (1 << 28) + 1, INT32_MIN, INT32_MAX};
        for (int t = 0; t < FUZZ_GRAPH_MAX_TAPS; t++) {
            const uint8_t a = t < s.n_taps ? u8(r) : 0, b = t < s.n_taps ? u8(r) : 0;
            dy[t] = a < 250 ? (int)(a % 9) - 4 : far[a % 5];
            dx[t] = b < 250 ? (int)(b % 9) - 4 : far[b % 5];
        }
        s.dy = dy;
        s.dx = dx;
        const uint8_t how = u8(r);
        if (how == 255) s.dy = NULL;
        if (how == 254) s.dx = NULL;
        if (how == 253) s.struct_size = 8;
        s.per_channel_weights = (how & 3) == 1;
        const int64_t c = tensor_channels(g, s.input);
        float *w = NULL;
        if ((how & 3) != 0 && s.n_taps >= 1 && s.n_taps <= FUZZ_GRAPH_MAX_TAPS && c <= 64) {
            const int64_t nw = s.n_taps * (s.per_channel_weights ? c : 1);
            w = malloc((size_t)nw * sizeof *w); /* exact size: ASan sees a read past it */
            for (int64_t i = 0; i < nw; i++) w[i] = graph_float(r);
            s.weights = w;
        } else if (s.per_channel_weights && c > 64) {
            s.per_channel_weights = 0;
        }
        st = ps_graph_add_stencil(g, name, u8(r) == 255 ? NULL : &s, &out);
        free(w);
        break;
    }
    case 2: {
        call = "ps_graph_add_pointwise";
        const char *name = graph_name(r, name_buf);
        const uint8_t k = u8(r);
        const int n_in = k < 250 ? 1 + k % 4 : (int)(int8_t)u8(r); /* 0, negative, > 16 refused */
        ps_tensor in[PS_POINTWISE_MAX_INPUTS + 2];
        for (int i = 0; i < PS_POINTWISE_MAX_INPUTS + 2; i++) in[i] = i < n_in ? tensor_ref(r, g) : 0;
        int budget = 24;
        ps_expr *e = decode_expr(r, 5, &budget);
        exercise_expr(e, u8(r) % 40);
        st = ps_graph_add_pointwise(g, name, e, n_in, u8(r) == 255 ? NULL : in, &out);
        ps_expr_free(e);
        break;
    }
    case 3: {
        call = "ps_graph_add_channel_mix";
        const char *name = graph_name(r, name_buf);
        const ps_tensor in = tensor_ref(r, g);
        const int64_t k = size_field(r, 4), c = tensor_channels(g, in);
        const uint8_t how = u8(r);
        float *w = NULL, *b = NULL;
        /* the builder reads k * C weights once k is in range */
        if (k >= 1 && k <= 65536 && k * c > 4096) return;
        if (k >= 1 && k <= 65536) {
            w = malloc((size_t)(k * c) * sizeof *w);
            for (int64_t i = 0; i < k * c; i++) w[i] = graph_float(r);
            if (how & 1) {
                b = malloc((size_t)k * sizeof *b);
                for (int64_t i = 0; i < k; i++) b[i] = graph_float(r);
            }
        } else if (!(how & 2)) {
            w = malloc(sizeof *w);
            w[0] = 1;
        }
        st = ps_graph_add_channel_mix(g, name, in, k, w, b, &out);
        free(w);
        free(b);
        break;
    }
    case 4: {
        call = "ps_graph_add_resample";
        const char *name = graph_name(r, name_buf);
        const ps_tensor in = tensor_ref(r, g);
        const ps_resample kind = (ps_resample)enum_field(r, 3);
        const ps_boundary b = (ps_boundary)enum_field(r, 3);
        st = ps_graph_add_resample(g, name, in, kind, b, &out);
        break;
    }
    case 5:
        call = "ps_graph_mark_output";
        is_add = 0;
        st = ps_graph_mark_output(g, tensor_ref(r, g), (ps_act_layout)enum_field(r, 2));
        break;
    case 6: {
        call = "ps_graph_set_output_region";
        is_add = 0;
        const ps_tensor t = tensor_ref(r, g);
        ps_tensor_info d, after;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        after = d;
        const int known = ps_graph_tensor_info(g, t, &d) == PS_SUCCESS;
        if (known && d.output_index >= 0) {
            /* the stored region is the info's rectangle; the domain is the node's */
            d.y0 = g->nodes[t].dom.y0;
            d.x0 = g->nodes[t].dom.x0;
            d.h = g->nodes[t].dom.h;
            d.w = g->nodes[t].dom.w;
        }
        int64_t v[4];
        const int64_t base[4] = {d.y0, d.x0, d.h, d.w};
        for (int i = 0; i < 4; i++) {
            const uint8_t s = u8(r);
            v[i] = s < 200 ? (i < 2 ? base[i] + (int64_t)(u8(r) % 5) - 1 : 1 + (int64_t)u8(r) % (base[i] > 0 ? base[i] + 1 : 2))
                           : special_i64[u8(r) % N_SPECIAL];
        }
        ps_tensor_info before = d;
        if (known) {
            ps_graph_tensor_info(g, t, &before);
            prime();
        }
        st = ps_graph_set_output_region(g, t, v[0], v[1], v[2], v[3]);
        if (st && known && ps_graph_tensor_info(g, t, &after) == PS_SUCCESS &&
            (after.y0 != before.y0 || after.x0 != before.x0 || after.h != before.h || after.w != before.w))
            BUG("a refused set_output_region changed the stored region");
        break;
    }
    case 7: {
        call = "ps_graph_tensor_info";
        is_add = 0;
        ps_tensor_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = u8(r) == 255 ? 7 : sizeof info;
        const ps_tensor t = tensor_ref(r, g);
        st = ps_graph_tensor_info(g, t, &info);
        if (st == PS_SUCCESS && (!info.name || info.h < 1 || info.w < 1 || info.n < 1 || info.c < 1))
            BUG("tensor_info(%d): \"%s\" %lld x %lld x %lld x %lld", t, info.name ? info.name : "(null)", (long long)info.n,
                (long long)info.h, (long long)info.w, (long long)info.c);
        (void)ps_graph_input(g, (int)(int8_t)u8(r));
        (void)ps_graph_output(g, (int)(int8_t)u8(r));
        break;
    }
    default: {
        call = "expression helpers";
        is_add = 0;
        int budget = 40;
        ps_expr *e = decode_expr(r, 7, &budget);
        exercise_expr(e, u8(r) % 64);
        ps_expr_free(e);
        return;
    }
    }
    if (g_verbose)
        fprintf(stderr, "fuzz: graph %s -> %s%s%s (tensor %d)\n", call, ps_status_str(st), st ? ": " : "",
                st ? ps_last_error_message() : "", out);
    expect_unchanged(st, call, g, n0, i0, o0, out, is_add);
    if (st == PS_SUCCESS && is_add && (out != n0 || ps_graph_num_tensors(g) != n0 + 1))
        BUG("%s returned tensor %d, the graph had %d", call, out, n0);
}

static void run_graph_plan(const ps_graph *g, const ps_graph_plan *p, uint8_t how, size_t describe_len)
{
    const int nin = ps_graph_num_inputs(g), nout = ps_graph_num_outputs(g);
    size_t ws_bytes = 0, need = 0;
    ps_status st;
    if ((st = ps_graph_plan_workspace_size(p, &ws_bytes))) BUG("graph workspace_size: %s", ps_last_error_message());
    char *text = malloc(describe_len ? describe_len : 1);
    /* as ps_plan_describe: all of it and success, or as much as fits and
     * PS_ERR_BUFFER_TOO_SMALL */
    st = ps_graph_plan_describe(p, describe_len ? text : NULL, describe_len, &need);
    if (need < describe_len ? st != PS_SUCCESS : describe_len && st != PS_ERR_BUFFER_TOO_SMALL)
        BUG("graph describe into %zu bytes (%zu needed): %s", describe_len, need, ps_status_str(st));
    if (describe_len && strlen(text) != (need < describe_len ? need : describe_len - 1))
        BUG("graph describe: %zu bytes written of %zu needed into %zu", strlen(text), need, describe_len);
    free(text);
    ps_graph_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if ((st = ps_graph_plan_get_stats(p, &stats))) BUG("graph get_stats: %s", ps_last_error_message());
    if (stats.workspace_bytes != ws_bytes || stats.n_groups < 1 || stats.n_groups > stats.n_stages)
        BUG("graph stats: %d groups of %d stages, workspace %zu (size %zu)", stats.n_groups, stats.n_stages,
            stats.workspace_bytes, ws_bytes);
    /* Workspaces sized by a forced tile far larger than the image are not
     * allocated here (test_graph_api reports them). */
    if (ws_bytes > ((size_t)64 << 20)) return;
    fbuf in[64], out[64];
    const float *ins[64];
    float *outs[64];
    int64_t olen[64];
    for (int i = 0; i < nin; i++) {
        const int64_t n = gr_input_elems(g, i);
        if (!falloc(&in[i], n, how & 1)) abort();
        for (int64_t k = 0; k < n; k++) in[i].p[k] = rnd();
        ins[i] = in[i].p;
    }
    for (int i = 0; i < nout; i++) {
        olen[i] = gr_output_elems(g, i);
        if (!falloc(&out[i], olen[i], (how >> 1) & 1)) abort();
        for (int64_t k = 0; k < olen[i]; k++) out[i].p[k] = sentinel();
        outs[i] = out[i].p;
    }
    void *ws = NULL;
    if ((how & 4) && ws_bytes && posix_memalign(&ws, 64, ws_bytes)) abort();
    st = ps_graph_execute(p, ins, outs, ws);
    if (st) BUG("graph execute: %s: %s", ps_status_str(st), ps_last_error_message());
    for (int i = 0; i < nout; i++)
        for (int64_t k = 0; k < olen[i]; k++)
            if (is_sentinel(out[i].p[k])) BUG("graph execute left output %d element %lld unwritten", i, (long long)k);
    /* Values: only for graphs whose numbers stay far inside f32 (tame
     * constants and weights; every reference value below 1e30). */
    gr_eval ev;
    if (gr_eval_graph(g, ins, &ev)) BUG("graph reference: %s", ev.msg);
    int comparable = g_tame;
    for (int t = 0; t < ev.n && comparable; t++) {
        const gr_tensor *x = &ev.t[t];
        const int64_t n = x->n * x->h * x->w * x->c;
        for (int64_t k = 0; k < n && comparable; k++)
            comparable = isfinite(x->v[k]) && fabs(x->v[k]) + x->e[k] < 1e30;
    }
    for (int i = 0; i < nout && comparable; i++) {
        gr_cmp cmp;
        if (gr_compare(g, &ev, i, out[i].p, &cmp)) {
            gr_print_graph(g, stderr);
            BUG("graph output %d: %lld of %lld wrong; first at image %lld channel %lld (y %lld, x %lld): got %.9g want "
                "%.9g (bound %.3g)",
                i, (long long)cmp.n_bad, (long long)olen[i], (long long)cmp.bad_img, (long long)cmp.bad_ch,
                (long long)cmp.bad_y, (long long)cmp.bad_x, cmp.bad_got, cmp.bad_want, cmp.bad_bound);
        }
    }
    gr_eval_free(&ev);
    free(ws);
    for (int i = 0; i < nin; i++) ffree(&in[i]);
    for (int i = 0; i < nout; i++) ffree(&out[i]);
}

static void fuzz_graph(rd *r)
{
    ps_graph *g = NULL;
    prime();
    if (ps_graph_create(&g)) BUG("ps_graph_create: %s", ps_last_error_message());
    g_tame = 1;
    const int calls = u8(r) % (FUZZ_GRAPH_MAX_CALLS + 1);
    for (int i = 0; i < calls && r->n; i++) graph_call(r, g);
    if (g_verbose) gr_print_graph(g, stderr);
    char msg[600];
    if (gr_check_domains(g, msg, sizeof msg)) {
        gr_print_graph(g, stderr);
        BUG("graph domains: %s", msg);
    }
    if (!ge_engine_present()) {
        ps_graph_destroy(g);
        return;
    }
    /* plan options */
    ps_graph_options o;
    ps_graph_options_init(&o);
    const int nt = ps_graph_num_tensors(g);
    o.fusion = (ps_fusion)enum_field(r, 4);
    const uint8_t t = u8(r);
    o.num_threads = t < 250 ? t % 3 : (int)special_i64[t % N_SPECIAL];
    /* the measured mode for layer-plan convolutions, from t's other bits */
    o.layer_top_k = t >= 250 ? (int)special_i64[(t + 3) % N_SPECIAL] : (t / 30) % 4 == 3 ? 2 : 0;
    o.layer_time_budget_ms = budget_from((uint8_t)(t / 2));
    const uint8_t ts = u8(r);
    if (ts >= 128) {
        o.tile_h = ts < 250 ? 1 + u8(r) % 9 : special_i64[u8(r) % N_SPECIAL];
        o.tile_w = ts < 250 ? 1 + u8(r) % 9 : special_i64[u8(r) % N_SPECIAL];
    }
    int *group_of = malloc((size_t)(nt + 1) * sizeof *group_of);
    for (int i = 0; i <= nt; i++) group_of[i] = (int)(int8_t)u8(r) % 4;
    const uint8_t gs = u8(r);
    o.group_of = gs == 255 ? NULL : group_of;
    o.n_group_of = gs < 240 ? nt : nt + (int)(gs % 3) - 1;
    o.group_limit = u8(r) < 230 ? 0 : (int)(int8_t)u8(r);
    o.flags = (unsigned)enum_field(r, 2);
    if (u8(r) == 255) o.struct_size = 16;
    const uint8_t how = u8(r);
    const size_t describe_len = u8(r) < 200 ? 8192 : u8(r);
    int stages = 0;
    int64_t elems = 0;
    for (int i = 0; i < nt; i++) {
        ps_tensor_info d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        ps_graph_tensor_info(g, i, &d);
        stages += !d.is_input;
        elems += g->nodes[i].n * g->nodes[i].dom.h * g->nodes[i].dom.w * g->nodes[i].c;
        if (elems > FUZZ_GRAPH_EVAL_ELEMS) break;
    }
    if (stages <= FUZZ_GRAPH_PLAN_STAGES && elems <= FUZZ_GRAPH_EVAL_ELEMS) {
        ps_graph_plan *p = (ps_graph_plan *)g;
        prime();
        const ps_status st = ps_graph_plan_create(g_ctx, g, &o, &p);
        expect_message(st, "ps_graph_plan_create");
        if (g_verbose)
            fprintf(stderr,
                    "fuzz: graph of %d stages, fusion %d threads %d tile %lld x %lld layer top_k %d budget %g -> plan "
                    "%s%s%s\n",
                    stages, (int)o.fusion, o.num_threads, (long long)o.tile_h, (long long)o.tile_w, o.layer_top_k,
                    o.layer_time_budget_ms, ps_status_str(st), st ? ": " : "", st ? ps_last_error_message() : "");
        if ((st == PS_SUCCESS) != (p != NULL)) BUG("graph plan_create status/plan mismatch (%s)", ps_status_str(st));
        if (st != PS_SUCCESS && st != PS_ERR_INVALID_ARG && st != PS_ERR_NULL_POINTER && st != PS_ERR_UNSUPPORTED &&
            st != PS_ERR_OUT_OF_MEMORY && st != PS_ERR_OVERFLOW)
            BUG("graph plan_create -> %s: %s", ps_status_str(st), ps_last_error_message());
        if (p) run_graph_plan(g, p, how, describe_len);
        ps_graph_plan_destroy(p);
    }
    free(group_of);
    ps_graph_destroy(g);
}

/* ---------------------------------------------------- iterated stencils */

#define FUZZ_ITER_MAX_UPDATES (1 << 19) /* point updates of one execution */

static void fuzz_iter_options(rd *r, ps_iter_options *o)
{
    ps_iter_options_init(o);
    o->num_threads = (int)(u8(r) % 4);
    o->tiling = (ps_iter_tiling)enum_field(r, 5);
    o->band = u8(r) < 160 ? 0 : size_field(r, 20);
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) o->tile[d] = u8(r) < 160 ? 0 : size_field(r, 40);
    o->skew_width = u8(r) < 200 ? 0 : size_field(r, 40);
}

/* Executes plan p on a copy of init (n floats per array) into out: with
 * execute's own workspace or the caller's (how bit 0); bit 1 first passes a
 * misaligned one, which must be refused with nothing written. */
static ps_status iter_run(const ps_iter_plan *p, int na, size_t n, float *const *init, float **out, uint8_t how)
{
    size_t ws_bytes = 0;
    ps_status st = ps_iter_plan_workspace_size(p, &ws_bytes);
    if (st) BUG("iter workspace_size: %s", ps_last_error_message());
    for (int a = 0; a < na; a++) memcpy(out[a], init[a], n * sizeof(float));
    char *ws = how & 3 ? aligned_alloc(64, (ws_bytes + 64 + 63) / 64 * 64) : NULL;
    if (how & 2) {
        prime();
        st = ps_iter_execute(p, out, ws + 4);
        if (st != PS_ERR_INVALID_ARG) BUG("iter execute with a misaligned workspace -> %s", ps_status_str(st));
        expect_message(st, "ps_iter_execute");
        for (int a = 0; a < na; a++)
            if (memcmp(out[a], init[a], n * sizeof(float))) BUG("iter execute refused a workspace but wrote array %d", a);
    }
    prime();
    st = ps_iter_execute(p, out, how & 1 ? ws : NULL);
    expect_message(st, "ps_iter_execute");
    free(ws);
    return st;
}

static void fuzz_iter(rd *r)
{
    const int ndim = (int)(u8(r) % 5) - (u8(r) < 250 ? 0 : 1); /* 0 and 4: invalid */
    int64_t n[PS_ITER_MAX_DIMS] = {1, 1, 1};
    static const int64_t cap[3] = {300, 40, 14};
    for (int d = 0; d < PS_ITER_MAX_DIMS && d < (ndim > 0 ? ndim : 0); d++) n[d] = size_field(r, cap[ndim > 3 ? 2 : ndim - 1]);
    const ps_iter_boundary bd = (ps_iter_boundary)enum_field(r, 2);
    const int64_t steps = u8(r) < 240 ? (int64_t)(u8(r) % 12) : size_field(r, 100);
    ps_iter *it = (ps_iter *)r;
    prime();
    ps_status st = ps_iter_create(ndim, n, bd, steps, &it);
    expect_message(st, "ps_iter_create");
    if ((st == PS_SUCCESS) != (it != NULL)) BUG("iter_create status/out mismatch");
    if (st) return;
    const int na = 1 + (int)(u8(r) % 4); /* 4: one more than PS_ITER_MAX_ARRAYS allows? checked by the library */
    for (int a = 0; a < na; a++) {
        int id = -1;
        prime();
        st = ps_iter_add_array(it, u8(r) < 250 ? NULL : "", &id);
        expect_message(st, "ps_iter_add_array");
    }
    ps_iter_info info = {.struct_size = sizeof info};
    if (ps_iter_get_info(it, &info)) BUG("iter_get_info: %s", ps_last_error_message());
    const int n_updates = info.n_arrays + (u8(r) < 250 ? 0 : 1); /* one past the last array: refused */
    for (int a = 0; a < n_updates; a++) {
        ps_iter_tap taps[PS_ITER_MAX_TAPS + 1];
        const int nt = u8(r) < 250 ? 1 + (int)(u8(r) % 9) : (int)(u8(r) % (PS_ITER_MAX_TAPS + 2));
        double wsum = 0;
        for (int k = 0; k < nt; k++) {
            taps[k].array = u8(r) < 250 ? (int)(u8(r) % (unsigned)(info.n_arrays > 0 ? info.n_arrays : 1)) : (int)(int8_t)u8(r);
            for (int d = 0; d < PS_ITER_MAX_DIMS; d++)
                taps[k].offset[d] = d < ndim ? (u8(r) < 245 ? (int)(u8(r) % 5) - 2 : (int)(int8_t)u8(r)) : 0;
            taps[k].weight = graph_float(r);
            wsum += fabs((double)taps[k].weight);
        }
        /* keep values bounded over the steps where the weights allow it */
        if (wsum > 1 && isfinite(wsum))
            for (int k = 0; k < nt; k++) taps[k].weight = (float)(taps[k].weight / wsum);
        prime();
        st = ps_iter_set_update(it, a, nt, taps, u8(r) < 200 ? 0.0f : graph_float(r));
        expect_message(st, "ps_iter_set_update");
    }
    ps_iter_options o;
    fuzz_iter_options(r, &o);
    const uint8_t how = u8(r);
    if (ps_iter_get_info(it, &info)) BUG("iter_get_info: %s", ps_last_error_message());
    const double npts_d = (double)info.n[0] * (double)info.n[1] * (double)info.n[2];
    const size_t npts = npts_d <= FUZZ_MAX_ELEMS ? (size_t)npts_d : 0;
    const double work = (double)info.updated_points * (double)(info.steps > 0 ? info.steps : 0) * info.n_arrays;
    /* the options as decoded: planned (or refused with a message) and described */
    ps_iter_plan *p0 = (ps_iter_plan *)r;
    prime();
    st = ps_iter_plan_create(g_ctx, it, &o, &p0);
    expect_message(st, "ps_iter_plan_create");
    if ((st == PS_SUCCESS) != (p0 != NULL)) BUG("iter plan_create status/plan mismatch");
    if (p0) {
        char small[24];
        size_t need = 0;
        const ps_status ds = ps_iter_plan_describe(p0, small, sizeof small, &need);
        if (ds != PS_SUCCESS && ds != PS_ERR_BUFFER_TOO_SMALL) BUG("iter describe: %s", ps_last_error_message());
    }
    ps_iter_plan_destroy(p0);
    ps_iter_options so;
    ps_iter_options_init(&so);
    so.tiling = PS_ITER_TILING_STEP;
    ps_iter_plan *step = NULL;
    st = ps_iter_plan_create(g_ctx, it, &so, &step); /* fails where the descriptor does */
    if (g_verbose)
        fprintf(stderr, "fuzz: iter %dD %lld x %lld x %lld, boundary %d, T %lld, %d arrays, tiling %d band %lld: step plan %s%s\n",
                ndim, (long long)info.n[0], (long long)info.n[1], (long long)info.n[2], (int)bd, (long long)info.steps,
                info.n_arrays, (int)o.tiling, (long long)o.band, ps_status_str(st),
                st || npts == 0 || work > FUZZ_ITER_MAX_UPDATES ? "" : ", every tiling compared");
    if (st || npts == 0 || work > FUZZ_ITER_MAX_UPDATES || info.n_arrays < 1) {
        ps_iter_plan_destroy(step);
        ps_iter_destroy(it);
        return;
    }
    /* the reference: step by step; then the decoded options, and each tiling with the model's sizes */
    float *init[PS_ITER_MAX_ARRAYS], *ref[PS_ITER_MAX_ARRAYS], *got[PS_ITER_MAX_ARRAYS];
    for (int a = 0; a < info.n_arrays; a++) {
        init[a] = malloc(npts * sizeof(float));
        ref[a] = malloc(npts * sizeof(float));
        got[a] = malloc(npts * sizeof(float));
        for (size_t i = 0; i < npts; i++) init[a][i] = rnd();
    }
    if ((st = iter_run(step, info.n_arrays, npts, init, ref, how))) BUG("iter step execute: %s", ps_last_error_message());
    for (int t = -1; t <= (int)PS_ITER_TILING_HYBRID; t++) {
        ps_iter_options ot = o;
        if (t >= 0) {
            ps_iter_options_init(&ot);
            ot.tiling = (ps_iter_tiling)t;
            ot.num_threads = o.num_threads;
        }
        ps_iter_plan *p = NULL;
        prime();
        st = ps_iter_plan_create(g_ctx, it, &ot, &p);
        expect_message(st, "ps_iter_plan_create");
        if (st == PS_ERR_INVALID_ARG && t < 0) continue; /* forced sizes a layout cannot take */
        if (st) BUG("iter plan (tiling %d) of a plannable stencil: %s", t, ps_last_error_message());
        if ((st = iter_run(p, info.n_arrays, npts, init, got, (uint8_t)(how >> 2)))) BUG("iter execute: %s", ps_last_error_message());
        for (int a = 0; a < info.n_arrays; a++)
            if (memcmp(ref[a], got[a], npts * sizeof(float))) {
                size_t i = 0;
                while (i < npts && !memcmp(&ref[a][i], &got[a][i], sizeof(float))) i++;
                BUG("iter tiling %d (asked %d) differs from step by step: array %d element %zu: %.9g vs %.9g", (int)ot.tiling, t,
                    a, i, (double)got[a][i], (double)ref[a][i]);
            }
        ps_iter_plan_destroy(p);
    }
    for (int a = 0; a < info.n_arrays; a++) {
        free(init[a]);
        free(ref[a]);
        free(got[a]);
    }
    ps_iter_plan_destroy(step);
    ps_iter_destroy(it);
}

/* ------------------------------------------------------------ entry points */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_verbose = getenv("FUZZ_VERBOSE") && atoi(getenv("FUZZ_VERBOSE")) > 0;
    setenv("PS_CALIBRATE", "0", 1); /* built-in latency table: no measuring per process */
    ps_context_options co;
    ps_context_options_init(&co);
    co.num_threads = 1;
    if (ps_context_create(&co, &g_ctx) || ps_context_create(&co, &g_ctx2)) {
        fprintf(stderr, "fuzz: cannot create a context: %s\n", ps_last_error_message());
        abort();
    }
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_wisdom_path, sizeof g_wisdom_path, "%s/polysci-fuzz-%d.wisdom", dir, (int)getpid());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    /* Every input starts from the same state. */
    ps_context_forget_plans(g_ctx);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
    g_rng = h;
    rd r = {data + 1, size - 1};
    switch (data[0] % 7) {
    case 0: fuzz_op(&r, 0); break;
    case 1: fuzz_op(&r, 1); break;
    case 2: import_checked(g_ctx, (const char *)data + 1, size - 1, "import(raw)"); break;
    case 3: fuzz_wisdom_framed(&r); break;
    case 4: fuzz_schedule_text(&r); break;
    case 5: fuzz_graph(&r); break;
    case 6: fuzz_iter(&r); break;
    }
    return 0;
}
