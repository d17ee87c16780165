/* White-box: expression programs compiled at plan time (lib/codegen) give
 * bit for bit the interpreter's values, under every row-kernel table the
 * CPU runs. Random expression trees over 1-3 inputs use every operator the
 * generator writes and the shapes lowering fuses (a * b + c, a * b - c,
 * c - a * b, a * b + c * d, a * b - c * d, |a - b|, comparisons read by a
 * select), with constants in every operand position; inputs hold ordinary
 * values, zeros, negatives (sqrt of them: NaN), infinities, denormals and
 * magnitudes up to 2^100, and ties for the comparisons. A quarter of the trees have exp or log (the row kernels'
 * polynomials, which the generated code repeats with the table's
 * contractions). Rows of 1-300 points (vector bodies and every tail).
 * Objects go to a cache directory of the test's own: compiled the first
 * time, loaded the second; PS_CODEGEN=0 compiles nothing. */
#define _GNU_SOURCE /* mkdtemp, setenv */
#include "row_tables.h"
#include "test_util.h"
#include "tu_jit_cache.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static tu_rng rng = {11};

static ps_expr *leaf(int n_in)
{
    if (tu_range(&rng, 0, 2) == 0) {
        static const float ks[] = {0.0f, 1.0f, -2.5f, 0.125f, 3.0f, 1e-3f};
        return ps_expr_const(ks[tu_range(&rng, 0, 5)]);
    }
    return ps_expr_input((int)tu_range(&rng, 0, n_in - 1));
}

static ps_expr *tree(int depth, int n_in, int with_exp)
{
    if (depth == 0) return leaf(n_in);
    static const ps_expr_op unary[] = {PS_EXPR_NEG, PS_EXPR_ABS, PS_EXPR_SQRT, PS_EXPR_FLOOR};
    static const ps_expr_op binary[] = {PS_EXPR_ADD, PS_EXPR_SUB, PS_EXPR_MUL, PS_EXPR_DIV, PS_EXPR_MIN, PS_EXPR_MAX,
                                        PS_EXPR_LT,  PS_EXPR_LE,  PS_EXPR_GT,  PS_EXPR_GE,  PS_EXPR_EQ,  PS_EXPR_NE};
    switch (tu_range(&rng, 0, 9)) {
    case 0:
        if (with_exp) return ps_expr_unary(tu_range(&rng, 0, 1) ? PS_EXPR_EXP : PS_EXPR_LOG, tree(depth - 1, n_in, 0));
        return ps_expr_unary(unary[tu_range(&rng, 0, 3)], tree(depth - 1, n_in, 0));
    case 1: /* a product read by a sum or difference: FMA, FMS, FNMA, MAM, MSM */
    case 2: {
        ps_expr *p = ps_expr_binary(PS_EXPR_MUL, tree(depth - 1, n_in, 0), tree(depth - 1, n_in, 0));
        ps_expr *q = tu_range(&rng, 0, 1) ? ps_expr_binary(PS_EXPR_MUL, tree(depth - 1, n_in, 0), leaf(n_in))
                                           : tree(depth - 1, n_in, 0);
        const ps_expr_op op = tu_range(&rng, 0, 1) ? PS_EXPR_ADD : PS_EXPR_SUB;
        return tu_range(&rng, 0, 1) ? ps_expr_binary(op, p, q) : ps_expr_binary(op, q, p);
    }
    case 3: /* |a - b| */
        return ps_expr_unary(PS_EXPR_ABS, ps_expr_binary(PS_EXPR_SUB, tree(depth - 1, n_in, 0), tree(depth - 1, n_in, 0)));
    case 4: /* a comparison read by a select */
        return ps_expr_select(ps_expr_binary(binary[tu_range(&rng, 6, 11)], tree(depth - 1, n_in, 0), leaf(n_in)),
                              tree(depth - 1, n_in, 0), tree(depth - 1, n_in, 0));
    case 5: return ps_expr_select(tree(depth - 1, n_in, 0), tree(depth - 1, n_in, 0), leaf(n_in));
    case 6: return ps_expr_clamp(tree(depth - 1, n_in, 0), leaf(n_in), leaf(n_in));
    default: return ps_expr_binary(binary[tu_range(&rng, 0, 11)], tree(depth - 1, n_in, 0), tree(depth - 1, n_in, 0));
    }
}

static float value(void)
{
    switch (tu_range(&rng, 0, 10)) {
    case 10: return ldexpf(tu_uniform(&rng), (int)tu_range(&rng, -140, 100)); /* denormals to beyond exp's range */
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return tu_range(&rng, 0, 1) ? INFINITY : -INFINITY;
    case 3: return 1.0f; /* ties with the constants */
    case 4: return 3.0f;
    default: return 8.0f * (tu_uniform(&rng) - 0.5f);
    }
}

/* Bit patterns equal (NaNs included). */
static int same_bits(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t x, y;
        memcpy(&x, &a[i], 4);
        memcpy(&y, &b[i], 4);
        if (x != y && !(isnan(a[i]) && isnan(b[i]))) {
            *at = i;
            return 0;
        }
    }
    return 1;
}

static void check_table(ps_context *ctx, const ps_row_kernels *k)
{
    enum { N_PROGS = 40, MAXN = 300, N_IN = 3 };
    ps_expr *e[N_PROGS];
    ps_vprog prog[N_PROGS];
    ps_vprog *progs[N_PROGS];
    for (int i = 0; i < N_PROGS; i++) {
        const int n_in = (int)tu_range(&rng, 1, N_IN);
        e[i] = tree((int)tu_range(&rng, 1, 4), n_in, i % 4 == 3);
        TU_CHECK(e[i] && ps_vprog_lower(e[i], &prog[i]) == PS_SUCCESS, "lowering: %s", ps_last_error_message());
        progs[i] = &prog[i];
    }
    void *handle = NULL;
    int compiled = 0, cached = 0;
    char why[200];
    TU_CHECK(ps_codegen_compile(ctx, k->isa, progs, N_PROGS, NULL, 0, &handle, &compiled, &cached, why, sizeof why) ==
                 PS_SUCCESS,
             "%s: compile: %s", k->isa, ps_last_error_message());
    int covered = 0;
    for (int i = 0; i < N_PROGS; i++) covered += ps_codegen_covers(&prog[i]);
    TU_CHECK(compiled == covered && covered == N_PROGS, "%s: %d of %d covered programs compiled (%s)", k->isa, compiled,
             covered, why);
    float *in[N_IN], *got = tu_alloc_f(MAXN + 1), *want = tu_alloc_f(MAXN + 1);
    float *regs = tu_alloc_f((size_t)64 * PS_VCHUNK);
    for (int j = 0; j < N_IN; j++) in[j] = tu_alloc_f(MAXN);
    for (int i = 0; i < N_PROGS; i++) {
        TU_CHECK(prog[i].fn != NULL, "%s: program %d: fn missing", k->isa, i);
        if (!prog[i].fn) continue;
        TU_CHECK(prog[i].n_regs <= 64, "program %d: %d registers", i, prog[i].n_regs);
        for (int trial = 0; trial < 6 && prog[i].n_regs <= 64; trial++) {
            const int64_t n = trial == 0 ? 1 : tu_range(&rng, 1, MAXN);
            for (int j = 0; j < N_IN; j++)
                for (int64_t x = 0; x < n; x++) in[j][x] = value();
            got[n] = want[n] = 12345.0f; /* must stay */
            k->vprog(&prog[i], got, (const float *const *)in, n, regs);
            const ps_vprog_fn fn = prog[i].fn;
            prog[i].fn = NULL;
            k->vprog(&prog[i], want, (const float *const *)in, n, regs);
            prog[i].fn = fn;
            int64_t at = 0;
            char text[512];
            ps_expr_to_str(e[i], text, sizeof text);
            TU_CHECK(same_bits(got, want, n, &at), "%s: %s, n %lld: point %lld compiled %a, interpreted %a", k->isa, text,
                     (long long)n, (long long)at, (double)got[at], (double)want[at]);
            TU_CHECK(got[n] == 12345.0f, "%s: %s: wrote past n = %lld", k->isa, text, (long long)n);
        }
    }
    for (int j = 0; j < N_IN; j++) free(in[j]);
    free(got);
    free(want);
    free(regs);
    for (int i = 0; i < N_PROGS; i++) {
        ps_vprog_release(&prog[i]);
        ps_expr_free(e[i]);
    }
    ps_codegen_release(handle);
    TU_CHECK(!cached, "%s: a fresh cache directory held the objects already", k->isa);
    printf("%s: %d programs compiled\n", k->isa, compiled);
}

/* The same program planned twice: compiled once into the cache, loaded the
 * second time; with PS_CODEGEN=0 in the context, interpreted. */
static void cache_reuse(ps_context *ctx, const ps_row_kernels *k)
{
    ps_expr *e = ps_expr_binary(PS_EXPR_ADD, ps_expr_binary(PS_EXPR_MUL, ps_expr_input(0), ps_expr_input(1)),
                                ps_expr_const(0.5f));
    for (int round = 0; round < 2; round++) {
        ps_vprog prog;
        ps_vprog *progs[1] = {&prog};
        TU_CHECK(e && ps_vprog_lower(e, &prog) == PS_SUCCESS, "lowering: %s", ps_last_error_message());
        void *handle = NULL;
        int compiled = 0, cached = 0;
        char why[200];
        TU_CHECK(ps_codegen_compile(ctx, k->isa, progs, 1, NULL, 0, &handle, &compiled, &cached, why, sizeof why) == PS_SUCCESS &&
                     compiled == 1 && prog.fn && cached == round,
                 "%s, round %d: compiled %d, cached %d (%s)", k->isa, round, compiled, cached, why);
        ps_codegen_release(handle);
        ps_vprog_release(&prog);
    }
    ps_expr_free(e);
}

int main(void)
{
    /* A cache directory of its own: every object is compiled here (none left
     * from earlier runs), and the user's cache is not touched. */
    char dir[] = "/tmp/ps_test_codegen.XXXXXX";
    TU_CHECK(tu_jit_cache_create(dir), "mkdtemp: %s", strerror(errno));
    rng.s = tu_seed("test_codegen", 11);
    setenv("PS_CODEGEN", "1", 1);
    ps_context *ctx = NULL;
    TU_CHECK(ps_context_create(NULL, &ctx) == PS_SUCCESS, "context: %s", ps_last_error_message());
    if (!ctx) return tu_finish("test_codegen");
    const ps_row_kernels *tables[3];
    int lanes[3];
    const int n = tu_row_tables(tables, lanes);
    /* three sets of random programs per table: the compiler hazards the
     * generator avoids (the zero's sign of a negated fma, a select read by
     * a clamp) show in a few programs of a hundred */
    for (int i = 0; i < n; i++) {
        for (int set = 0; set < 3; set++) check_table(ctx, tables[i]);
        cache_reuse(ctx, tables[i]);
    }
    ps_context_destroy(ctx);
    /* PS_CODEGEN=0: nothing compiled, the reason given */
    setenv("PS_CODEGEN", "0", 1);
    TU_CHECK(ps_context_create(NULL, &ctx) == PS_SUCCESS, "context: %s", ps_last_error_message());
    if (ctx) {
        ps_expr *e = ps_expr_binary(PS_EXPR_SUB, ps_expr_input(0), ps_expr_const(1.0f));
        ps_vprog prog;
        ps_vprog *progs[1] = {&prog};
        void *handle = NULL;
        int compiled = 0, cached = 0;
        char why[200];
        TU_CHECK(e && ps_vprog_lower(e, &prog) == PS_SUCCESS &&
                     ps_codegen_compile(ctx, tables[0]->isa, progs, 1, NULL, 0, &handle, &compiled, &cached, why, sizeof why) ==
                         PS_SUCCESS &&
                     !handle && compiled == 0 && !prog.fn && strstr(why, "PS_CODEGEN=0"),
                 "PS_CODEGEN=0: compiled %d (%s)", compiled, why);
        ps_vprog_release(&prog);
        ps_expr_free(e);
        ps_context_destroy(ctx);
    }
    tu_jit_cache_remove(dir);
    return tu_finish("test_codegen");
}
