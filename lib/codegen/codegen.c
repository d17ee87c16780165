#include "codegen/codegen.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cachedir.h"
#include "core/error.h"
#include "graph/graph_impl.h"
#include "plan/context_impl.h"

extern char **environ;

/* The instruction-set flags lib/CMakeLists.txt gives kernels/rows_isa.c for
 * each row-kernel table, so generated code runs where that table runs.
 * fma: the table's loops contract a * b + c into one rounding
 * (-ffp-contract=fast there); generated code is compiled without
 * contraction and writes those roundings out (fmaf), so it computes exactly
 * the interpreter's values. */
static const struct {
    const char *isa;
    int fma;
    int vw; /* floats per vector register */
    const char *flags[8];
} isa_flags[] = {
    {"avx512", 1, 16, {"-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mprefer-vector-width=512", NULL}},
    {"avx2", 1, 8, {"-mavx2", "-mfma", NULL}},
    {"generic", 0, 4, {NULL}},
};

/* No -fno-trapping-math: with it GCC 12 folds `(a == b) ? a : b` read by a
 * clamp into a wrong select (clamp(select(a == b, a, b), b, b) gave a). */
static const char *const base_flags[] = {"-O2", "-ftree-vectorize", "-fvect-cost-model=cheap", "--param=vect-epilogues-nomask=0", "-std=c11", "-ffp-contract=off", "-fno-math-errno",
                                         "-fPIC", "-shared", "-w"};

static int isa_fma(const char *isa)
{
    for (size_t t = 0; t < sizeof isa_flags / sizeof *isa_flags; t++)
        if (!strcmp(isa_flags[t].isa, isa)) return isa_flags[t].fma;
    return 0;
}

static int isa_vw(const char *isa)
{
    for (size_t t = 0; t < sizeof isa_flags / sizeof *isa_flags; t++)
        if (!strcmp(isa_flags[t].isa, isa)) return isa_flags[t].vw;
    return 4;
}

int ps_codegen_covers(const ps_vprog *prog)
{
    return prog && prog->n_ops >= 1;
}

/* The helpers every unit's programs call. exp and log of the row kernels
 * (kernels/rows_isa.c exp_poly, log_poly: Cephes' polynomials), written
 * with the contractions that table's compiler makes (F(a, b, c): fmaf
 * where the table contracts a * b + c, else the two roundings), so
 * compiled programs compute the interpreter's values; in log's
 * y = t * z * p; y += fe * c the product fe * c is the fused one. */
static void emit_prelude(FILE *f, int fma, int vw)
{
    fputs("#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n", f);
    /* the vectors of box sums (emit_box_columns) and their operations (emit_op with names.vec) */
    fprintf(f, "typedef float ps_vf __attribute__((vector_size(%d)));\n", 4 * vw);
    fprintf(f, "typedef float ps_vfu __attribute__((vector_size(%d), aligned(4), may_alias));\n", 4 * vw);
    fprintf(f, "typedef int32_t ps_vi __attribute__((vector_size(%d)));\n", 4 * vw);
    /* their negation as ps_neg's sign flip, and their one-rounding
     * multiply-add where the table contracts (emit_op's vector forms) */
    fputs("static inline ps_vf ps_vneg(ps_vf x) { return (ps_vf)((ps_vi)x ^ (int32_t)0x80000000u); }\n", f);
    fputs("static inline ps_vf ps_vsplat(float x) { return (ps_vf){", f);
    for (int l = 0; l < vw; l++) fputs(l ? ", x" : "x", f);
    fputs("}; }\n", f);
    if (fma && vw == 16)
        fputs("#include <immintrin.h>\nstatic inline ps_vf ps_vfma(ps_vf a, ps_vf b, ps_vf c) "
              "{ return (ps_vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }\n", f);
    else if (fma && vw == 8)
        fputs("#include <immintrin.h>\nstatic inline ps_vf ps_vfma(ps_vf a, ps_vf b, ps_vf c) "
              "{ return (ps_vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }\n", f);
    fputs(fma ? "#define F(a, b, c) fmaf((a), (b), (c))\n" : "#define F(a, b, c) ((a) * (b) + (c))\n", f);
    /* negation (the NEG operation, the negated operands of FMS, FNMA and
     * MSM) as the sign bit's flip: GCC folds -fmaf(a, b, c) into
     * -(a * b) - c, which gives +0 where the interpreter's separate
     * negation of the rounded sum gives -0 */
    fputs("static inline float ps_bits_f(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }\n"
          "static inline uint32_t ps_f_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }\n"
          "static inline float ps_neg(float x) { return ps_bits_f(ps_f_bits(x) ^ 0x80000000u); }\n"
          "static inline float ps_exp(float x)\n{\n"
          "    float xc = x > 88.3762626647949f ? 88.3762626647949f : x;\n"
          "    xc = xc < -87.3365478515625f ? -87.3365478515625f : xc;\n"
          "    const float fn = floorf(F(xc, 1.44269504088896341f, 0.5f));\n"
          "    float r = F(-fn, 0.693359375f, xc);\n"
          "    r = F(-fn, -2.12194440e-4f, r);\n"
          "    const float z = r * r;\n"
          "    float p = 1.9875691500E-4f;\n"
          "    p = F(p, r, 1.3981999507E-3f);\n"
          "    p = F(p, r, 8.3334519073E-3f);\n"
          "    p = F(p, r, 4.1665795894E-2f);\n"
          "    p = F(p, r, 1.6666665459E-1f);\n"
          "    p = F(p, r, 5.0000001201E-1f);\n"
          "    p = F(p, z, r) + 1.0f;\n"
          "    const int32_t e = (int32_t)fn + 127;\n"
          "    float y = p * ps_bits_f((uint32_t)e << 23);\n"
          "    y = x > 88.72283935546875f ? __builtin_inff() : y;\n"
          "    y = x < -87.3365478515625f ? 0.0f : y;\n"
          "    return x != x ? x : y;\n}\n"
          "static inline float ps_log(float x)\n{\n"
          "    const int denormal = x < 1.17549435e-38f;\n"
          "    const float xs = denormal ? x * 8388608.0f : x;\n"
          "    const uint32_t u = ps_f_bits(xs);\n"
          "    const int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - (denormal ? 23 : 0);\n"
          "    const float m = ps_bits_f((u & 0x007fffffu) | 0x3f000000u);\n"
          "    const int small = m < 0.707106781186547524f;\n"
          "    const float fe = (float)(e - small);\n"
          "    const float t = small ? m + m - 1.0f : m - 1.0f;\n"
          "    const float z = t * t;\n"
          "    float p = 7.0376836292E-2f;\n"
          "    p = F(p, t, -1.1514610310E-1f);\n"
          "    p = F(p, t, 1.1676998740E-1f);\n"
          "    p = F(p, t, -1.2420140846E-1f);\n"
          "    p = F(p, t, 1.4249322787E-1f);\n"
          "    p = F(p, t, -1.6668057665E-1f);\n"
          "    p = F(p, t, 2.0000714765E-1f);\n"
          "    p = F(p, t, -2.4999993993E-1f);\n"
          "    p = F(p, t, 3.3333331174E-1f);\n"
          "    float y = F(fe, -2.12194440e-4f, t * z * p);\n"
          "    y = F(-0.5f, z, y);\n"
          "    float r = t + y;\n"
          "    r = F(fe, 0.693359375f, r);\n"
          "    r = x == __builtin_inff() ? __builtin_inff() : r;\n"
          "    r = x == 0.0f ? -__builtin_inff() : r;\n"
          "    r = x < 0.0f ? __builtin_nanf(\"\") : r;\n"
          "    return x != x ? x : r;\n}\n\n",
          f);
}

/* A float literal that reads back as exactly v. */
static void literal(FILE *f, float v)
{
    if (isnan(v)) fputs("__builtin_nanf(\"\")", f);
    else if (isinf(v)) fputs(v > 0 ? "__builtin_inff()" : "(-__builtin_inff())", f);
    else fprintf(f, "(%af)", (double)v);
}

/* How a program's operands are written: its registers' prefix, the C
 * expression of each input, and its result's destination. */
typedef struct names {
    const char *reg;        /* registers computed in the loop */
    const char *kreg;       /* constant registers (bound before it), NULL: reg */
    const ps_vprog *prog;
    const char *const *in;
    const char *out;
    const char *type;       /* the registers' type, NULL: float */
    int vec;                /* operands are ps_vf vectors (vector_safe programs only) */
} names;

static int is_const_reg(const ps_vprog *prog, int r)
{
    for (int c = 0; c < prog->n_consts; c++)
        if (prog->const_reg[c] == r) return 1;
    return 0;
}

/* Operand j of op: a constant, an input's element or a register. */
static void operand(FILE *f, const ps_vop *op, int j, const names *nm)
{
    const int a = op->a[j];
    /* constants are floats: as vectors (ps_vsplat) where the operands are */
    const int konst = a == PS_VOP_CONST || (!PS_VOP_IS_INPUT(a) && is_const_reg(nm->prog, a));
    if (konst && nm->vec) fputs("ps_vsplat(", f);
    if (a == PS_VOP_CONST) literal(f, op->k[j]);
    else if (PS_VOP_IS_INPUT(a)) fputs(nm->in[PS_VOP_INPUT_INDEX(a)], f);
    else fprintf(f, "%s%d", nm->kreg && is_const_reg(nm->prog, a) ? nm->kreg : nm->reg, a);
    if (konst && nm->vec) fputs(")", f);
}

/* A comparison's C operator, NULL for any other operation. */
static const char *cmp_text(int op)
{
    return op >= PS_EXPR_LT && op <= PS_EXPR_NE ? ps_expr_op_text((ps_expr_op)op) : NULL;
}

/* One statement per operation, in the interpreter's order and forms
 * (rows_isa.c: unary, binary, fused); 0 for an operation it cannot write.
 * fma: the fused forms as the table's contraction computes them (one
 * product and the sum in one rounding; a * b + c * d contracts the first
 * product). */
static int emit_op(FILE *f, const ps_vop *op, int fma, const names *nm)
{
    const char *fmaf_ = nm->vec ? "ps_vfma(" : "fmaf(", *neg_ = nm->vec ? "ps_vneg(" : "ps_neg(";
    char dst[48];
    if (op->dst == PS_VOP_OUT) snprintf(dst, sizeof dst, "%s", nm->out);
    else snprintf(dst, sizeof dst, "%s%d", nm->reg, op->dst);
#define A(j) operand(f, op, j, nm)
    fprintf(f, "        %s = ", dst);
    const char *c = cmp_text(op->op);
    if (op->op >= PS_VOP_FMA) {
        switch (fma ? op->op : -op->op) {
        case PS_VOP_FMA: fputs(fmaf_, f), A(0), fputs(", ", f), A(1), fputs(", ", f), A(2), fputs(")", f); break;
        case PS_VOP_FMS: fputs(fmaf_, f), A(0), fputs(", ", f), A(1), fprintf(f, ", %s", neg_), A(2), fputs("))", f); break;
        case PS_VOP_FNMA: fputs(fmaf_, f), fputs(neg_, f), A(0), fputs("), ", f), A(1), fputs(", ", f), A(2), fputs(")", f); break;
        case PS_VOP_MAM:
            fputs(fmaf_, f), A(0), fputs(", ", f), A(1), fputs(", ", f), A(2), fputs(" * ", f), A(3), fputs(")", f);
            break;
        case PS_VOP_MSM:
            fputs(fmaf_, f), A(0), fputs(", ", f), A(1), fprintf(f, ", %s", neg_), A(2), fputs(" * ", f), A(3), fputs("))", f);
            break;
        case -PS_VOP_FMA: A(0), fputs(" * ", f), A(1), fputs(" + ", f), A(2); break;
        case -PS_VOP_FMS: A(0), fputs(" * ", f), A(1), fputs(" - ", f), A(2); break;
        case -PS_VOP_FNMA: A(2), fputs(" - ", f), A(0), fputs(" * ", f), A(1); break;
        case -PS_VOP_MAM: A(0), fputs(" * ", f), A(1), fputs(" + ", f), A(2), fputs(" * ", f), A(3); break;
        case -PS_VOP_MSM: A(0), fputs(" * ", f), A(1), fputs(" - ", f), A(2), fputs(" * ", f), A(3); break;
        case -PS_VOP_ABSDIFF:
        case PS_VOP_ABSDIFF: fputs("fabsf(", f), A(0), fputs(" - ", f), A(1), fputs(")", f); break;
        case -PS_VOP_SELCMP:
        case PS_VOP_SELCMP:
            if (!cmp_text(op->cmp)) return 0;
            fputs("(", f), A(0), fprintf(f, " %s ", cmp_text(op->cmp)), A(1), fputs(") ? ", f), A(2), fputs(" : ", f),
                A(3);
            break;
        default: return 0;
        }
    } else if (ps_expr_arity((ps_expr_op)op->op) == 0) {
        A(0);
    } else if (ps_expr_arity((ps_expr_op)op->op) == 1) {
        const char *fn = op->op == PS_EXPR_NEG ? (nm->vec ? "ps_vneg" : "ps_neg") : op->op == PS_EXPR_ABS ? "fabsf" : op->op == PS_EXPR_SQRT ? "sqrtf"
                         : op->op == PS_EXPR_FLOOR ? "floorf" : op->op == PS_EXPR_EXP ? "ps_exp"
                         : op->op == PS_EXPR_LOG ? "ps_log" : NULL;
        if (!fn) return 0;
        fprintf(f, "%s(", fn), A(0), fputs(")", f);
    } else if (c) {
        fputs("(", f), A(0), fprintf(f, " %s ", c), A(1), fputs(") ? 1.0f : 0.0f", f);
    } else if (ps_expr_arity((ps_expr_op)op->op) == 2) {
        switch (op->op) {
        case PS_EXPR_ADD: A(0), fputs(" + ", f), A(1); break;
        case PS_EXPR_SUB: A(0), fputs(" - ", f), A(1); break;
        case PS_EXPR_MUL: A(0), fputs(" * ", f), A(1); break;
        case PS_EXPR_DIV: A(0), fputs(" / ", f), A(1); break;
        case PS_EXPR_MIN: fputs("(", f), A(0), fputs(" < ", f), A(1), fputs(") ? ", f), A(0), fputs(" : ", f), A(1); break;
        case PS_EXPR_MAX: fputs("(", f), A(0), fputs(" > ", f), A(1), fputs(") ? ", f), A(0), fputs(" : ", f), A(1); break;
        default: return 0;
        }
    } else if (op->op == PS_EXPR_SELECT) {
        fputs("(", f), A(0), fputs(" != 0.0f) ? ", f), A(1), fputs(" : ", f), A(2);
    } else if (op->op == PS_EXPR_CLAMP) {
        /* clamp(v, lo, hi) as the interpreter: max first, then min */
        fputs("0.0f;\n        {\n            const float v_ = (", f), A(0), fputs(" > ", f), A(1), fputs(") ? ", f), A(0),
            fputs(" : ", f), A(1);
        fprintf(f, ";\n            %s = (v_ < ", dst), A(2), fputs(") ? v_ : ", f), A(2), fputs(";\n        }", f);
    } else {
        return 0;
    }
#undef A
    fputs(";\n", f);
    return 1;
}

/* The largest input index prog reads, plus one. */
static int prog_inputs(const ps_vprog *prog)
{
    int n_in = 0;
    for (int o = 0; o < prog->n_ops; o++)
        for (int j = 0; j < 4; j++)
            if (PS_VOP_IS_INPUT(prog->ops[o].a[j]) && PS_VOP_INPUT_INDEX(prog->ops[o].a[j]) + 1 > n_in)
                n_in = PS_VOP_INPUT_INDEX(prog->ops[o].a[j]) + 1;
    return n_in;
}

/* prog's constant registers, bound once before the loop. */
static void emit_consts(FILE *f, const ps_vprog *prog, const char *reg)
{
    for (int c = 0; c < prog->n_consts; c++) {
        fprintf(f, "    const float %s%d = ", reg, prog->const_reg[c]);
        literal(f, prog->const_val[c]);
        fputs(";\n", f);
    }
}

/* prog's other registers as locals and its operations: 0 for an
 * operation the generator cannot write. */
static int emit_body(FILE *f, const ps_vprog *prog, int fma, const names *nm)
{
    for (int r = 0; r < prog->n_regs; r++) {
        int is_const = 0;
        for (int c = 0; c < prog->n_consts; c++) is_const |= prog->const_reg[c] == r;
        if (!is_const) fprintf(f, "        %s %s%d;\n", nm->type ? nm->type : "float", nm->reg, r);
    }
    for (int o = 0; o < prog->n_ops; o++)
        if (!emit_op(f, &prog->ops[o], fma, nm)) return 0;
    return 1;
}

/* Function ps_vp_<index> computing prog: inputs and constant registers
 * bound once, the operations on locals inside one loop the compiler
 * vectorizes. */
static int emit_prog(FILE *f, const ps_vprog *prog, int index, int fma)
{
    const int n_in = prog_inputs(prog);
    char in_text[PS_POINTWISE_MAX_INPUTS][16];
    const char *in[PS_POINTWISE_MAX_INPUTS];
    if (n_in > PS_POINTWISE_MAX_INPUTS) return 0;
    fprintf(f, "void ps_vp_%d(float *restrict out, const float *const *in, int64_t n)\n{\n", index);
    for (int j = 0; j < n_in; j++) {
        fprintf(f, "    const float *restrict i%d = in[%d];\n", j, j);
        snprintf(in_text[j], sizeof in_text[j], "i%d[i]", j);
        in[j] = in_text[j];
    }
    const names nm = {"r", NULL, prog, in, "out[i]", NULL, 0};
    emit_consts(f, prog, "r");
    fputs("    for (int64_t i = 0; i < n; i++) {\n", f);
    if (!emit_body(f, prog, fma, &nm)) return 0;
    fputs("    }\n}\n\n", f);
    return 1;
}

int ps_codegen_covers_taps(const ps_tprog *tp)
{
    if (!tp || tp->n_terms > PS_POINTWISE_MAX_INPUTS || tp->n_rows < 1) return 0;
    if (tp->n_out ? tp->n_out != tp->n_terms || tp->n_out * (tp->rows_per_call > 1 ? tp->rows_per_call : 1) > PS_TAPM_MAX_OUT
                  : !ps_codegen_covers(tp->prog))
        return 0;
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        if (T->inl && (!ps_codegen_covers(T->inl) || prog_inputs(T->inl) > PS_POINTWISE_MAX_INPUTS)) return 0;
    }
    return 1;
}

/* Tap t of term j (output row b's rows and offsets row/off, ld inputs a
 * tap) into local p: the inlined producer's operations on its inputs'
 * elements, or the one row's element; at = NULL: at column i, else the
 * vector of columns from the C expression at (emit_box_columns). */
static int emit_tap_at(FILE *f, const ps_tap_term *T, int j, int t, const int *row, const int *off, int ld, int fma,
                       const char *sfx, const char *p, const char *at)
{
    char in_text[PS_POINTWISE_MAX_INPUTS][96];
    const char *in[PS_POINTWISE_MAX_INPUTS];
    const int n_in = T->inl ? prog_inputs(T->inl) : 1;
    for (int k = 0; k < n_in; k++) {
        if (at) snprintf(in_text[k], sizeof in_text[k], "(*(const ps_vfu *)(q%d + %s + %d))", row[t * ld + k], at, off[t * ld + k]);
        else snprintf(in_text[k], sizeof in_text[k], "q%d[i + %d]", row[t * ld + k], off[t * ld + k]);
        in[k] = in_text[k];
    }
    const char *type = at ? "ps_vf" : "float";
    if (!T->inl) {
        fprintf(f, "        const %s %s = %s;\n", type, p, in[0]);
        return 1;
    }
    char reg[48], kreg[16];
    snprintf(reg, sizeof reg, "t%d%s_", j, sfx);
    snprintf(kreg, sizeof kreg, "t%d_", j);
    fprintf(f, "        %s %s;\n", type, p);
    const names nm = {reg, kreg, T->inl, in, p, type, at != NULL};
    return emit_body(f, T->inl, fma, &nm);
}

/* Whether emit_op writes prog's operations for vectors of GCC's vector
 * extension (names.vec) with the scalar forms' values element by element:
 * copies, + - * /, negation and the multiply-adds (ps_vneg, ps_vfma), not
 * the comparisons, selections and functions. */
static int vector_safe(const ps_vprog *prog)
{
    for (int o = 0; o < prog->n_ops; o++) {
        const ps_vop *op = &prog->ops[o];
        if (op->op >= PS_VOP_FMA) {
            if (op->op == PS_VOP_FMA || op->op == PS_VOP_FMS || op->op == PS_VOP_FNMA || op->op == PS_VOP_MAM ||
                op->op == PS_VOP_MSM)
                continue;
            return 0;
        }
        const int ar = ps_expr_arity((ps_expr_op)op->op);
        if (ar == 0 || op->op == PS_EXPR_NEG) continue;
        if (ar != 2 || !(op->op == PS_EXPR_ADD || op->op == PS_EXPR_SUB || op->op == PS_EXPR_MUL || op->op == PS_EXPR_DIV))
            return 0;
    }
    return 1;
}

/* The tap of box term T in row r, column s. */
static int box_tap(const ps_tap_term *T, int r, int s)
{
    for (int t = 0; t < T->n_taps; t++)
        if (T->box_row[t] == r && T->box_dx[t] - T->box_dx0 == s) return t;
    return -1;
}

/* Box term j's sum at column i added to local a<j><sfx> (holding the
 * bias): box_sum's order. */
static int emit_box_sum(FILE *f, const ps_tap_term *T, int j, const int *row, const int *off, int ld, int fma,
                        const char *sfx, const char *p)
{
    fprintf(f, "        float c%d%s;\n", j, sfx);
    for (int s = 0; s < T->box_s; s++)
        for (int r = 0; r < T->box_r; r++) {
            const int t = box_tap(T, r, s);
            fputs("        {\n", f);
            if (t < 0 || !emit_tap_at(f, T, j, t, row, off, ld, fma, sfx, p, NULL)) return 0;
            if (r == 0) fprintf(f, "        c%d%s = %s;\n", j, sfx, p);
            else fprintf(f, "        c%d%s = c%d%s + %s;\n", j, sfx, j, sfx, p);
            if (r == T->box_r - 1) fprintf(f, "        a%d%s = a%d%s + c%d%s;\n", j, sfx, j, sfx, j, sfx);
            fputs("        }\n", f);
        }
    return 1;
}

/* Floats of a box term's sums a tap program keeps per chunk of columns
 * (emit_box_chunk): its chunk, in L1 beside the rows. */
#define PS_BOX_CHUNK 256

/* Whether tap program tp can compute its box sums from column sums
 * (emit_box_columns; by vectors or by columns, tap_form): a reader's
 * program with at least one box term, every box term's inlined producer
 * vector_safe and its columns within one vector and one column. */
static int box_columns_fit(const ps_tprog *tp, int vw)
{
    int n_box = 0;
    if (tp->n_out) return 0;
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        if (!T->box_s) continue;
        if (T->box_s - 1 > vw || (T->inl && !vector_safe(T->inl))) return 0;
        n_box++;
    }
    return n_box > 0;
}

/* Term T's rows and offsets for output row b, and its inputs per tap. */
static void term_taps(const ps_tap_term *T, int b, const int **row, const int **off, int *ld)
{
    *ld = T->n_inl_in > 0 ? T->n_inl_in : 1;
    const size_t cnt = (size_t)(T->n_taps > 0 ? T->n_taps : 1) * (size_t)*ld;
    *row = T->tap_row + (size_t)b * cnt;
    *off = T->tap_off + (size_t)b * cnt;
}

/* Column sum of box term j at the vector of columns `at` into vector local
 * var: each row's tap (column 0 of the box) added in row order. */
static int emit_column(FILE *f, const ps_tap_term *T, int j, const int *row, const int *off, int ld, int fma,
                       const char *sfx, const char *var, const char *at)
{
    fprintf(f, "        ps_vf %s;\n", var);
    for (int r = 0; r < T->box_r; r++) {
        const int t = box_tap(T, r, 0);
        fputs("        {\n", f);
        if (t < 0 || !emit_tap_at(f, T, j, t, row, off, ld, fma, sfx, "pv", at)) return 0;
        if (r == 0) fprintf(f, "        %s = pv;\n", var);
        else fprintf(f, "        %s = %s + pv;\n", var, var);
        fputs("        }\n", f);
    }
    return 1;
}

/* The narrowest box of tp's terms (INT_MAX: none). */
static int box_s_min(const ps_tprog *tp)
{
    int s_min = INT_MAX;
    for (int j = 0; j < tp->n_terms; j++)
        if (tp->term[j].box_s && tp->term[j].box_s < s_min) s_min = tp->term[j].box_s;
    return s_min;
}

/* The column sums of tp's box terms for the R output rows at the vector of
 * columns `at` into vector locals <c><j>_<b>. */
static int emit_box_columns(FILE *f, const ps_tprog *tp, int R, int fma, char c, const char *at)
{
    char var[32], sfx[16];
    for (int b = 0; b < R; b++)
        for (int j = 0; j < tp->n_terms; j++) {
            const ps_tap_term *T = &tp->term[j];
            if (!T->box_s) continue;
            const int *row, *off;
            int ld;
            term_taps(T, b, &row, &off, &ld);
            snprintf(sfx, sizeof sfx, "_%d", b);
            snprintf(var, sizeof var, "%c%d_%d", c, j, b);
            if (!emit_column(f, T, j, row, off, ld, fma, sfx, var, at)) return 0;
        }
    return 1;
}

/* The C expression of vectors u and v (the next columns) shifted by s
 * lanes: lanes s .. s + vw - 1 of u followed by v, GCC's two-source
 * shuffle (with AVX-512 a vpermt2ps, as fast here as valignd). */
static void shift_text(char *buf, size_t len, const char *u, const char *v, int s, int vw)
{
    if (s == vw) {
        snprintf(buf, len, "%s", v);
        return;
    }
    int n = snprintf(buf, len, "__builtin_shuffle(%s, %s, (ps_vi){", u, v);
    for (int l = 0; l < vw && n > 0 && (size_t)n < len; l++) n += snprintf(buf + n, len - (size_t)n, "%s%d", l ? "," : "", s + l);
    if (n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "})");
}

/* Box term j's box for output row b from its column sums u<j>_<b> (at the
 * vector's columns) and v<j>_<b> (the next vector's) into `dst`: the bias,
 * then column 0, 1, ... (box_sum's order), column s as the lanes shifted in
 * by s. */
static void emit_box_from_columns(FILE *f, const ps_tap_term *T, int j, int b, int vw, const char *dst)
{
    char u[32], v[32], sh[160];
    snprintf(u, sizeof u, "u%d_%d", j, b);
    snprintf(v, sizeof v, "v%d_%d", j, b);
    fprintf(f, "        %s = b%d + %s;\n", dst, j, u);
    for (int s = 1; s < T->box_s; s++) {
        shift_text(sh, sizeof sh, u, v, s, vw);
        fprintf(f, "        %s = %s + %s;\n", dst, dst, sh);
    }
}

/* Taps of a sum in tap order that the vector loop takes: at most this many. */
#define PS_VEC_MAX_TAPS 64

/* The taps of a sum in tap order (output row b's rows and offsets row/off,
 * ld inputs a tap) grouped by the rows their values read: taps reading the
 * same rows at the same offsets relative to each other differ by a column
 * shift only. grp[t]: tap t's group; base[g]: the group's tap of least
 * offset; shift[t]: t's columns beyond it; span[g]: the group's largest
 * shift. Returns the group count, -1 where a shift passes max_shift. */
static int tap_groups(const ps_tap_term *T, const int *row, const int *off, int ld, int max_shift, int *grp, int *base,
                      int *shift, int *span)
{
    int ng = 0;
    for (int t = 0; t < T->n_taps; t++) {
        int g = 0;
        for (; g < ng; g++) {
            const int u = base[g];
            int same = 1;
            for (int k = 0; k < ld && same; k++)
                same = row[t * ld + k] == row[u * ld + k] && off[t * ld + k] - off[t * ld] == off[u * ld + k] - off[u * ld];
            if (same) break;
        }
        if (g == ng) base[ng++] = t;
        else if (off[t * ld] < off[base[g] * ld]) base[g] = t;
        grp[t] = g;
    }
    for (int g = 0; g < ng; g++) span[g] = 0;
    for (int t = 0; t < T->n_taps; t++) {
        shift[t] = off[t * ld] - off[base[grp[t]] * ld];
        if (shift[t] > max_shift) return -1;
        if (shift[t] > span[grp[t]]) span[grp[t]] = shift[t];
    }
    return ng;
}

/* Whether tap program tp runs as one loop of vectors of vw floats (a
 * reader's program, every expression vector_safe, no clamped sum, every
 * box within one vector and one column, every other sum's taps grouped by
 * rows within one vector and one column of their group's first). */
static int vector_rows_fit(const ps_tprog *tp, int vw)
{
    if (tp->n_out || !tp->prog || !vector_safe(tp->prog)) return 0;
    const int R = tp->rows_per_call > 1 ? tp->rows_per_call : 1;
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        if (!T->n_taps) continue;
        if (T->act || (T->inl && !vector_safe(T->inl))) return 0;
        if (T->box_s) {
            if (T->box_s - 1 > vw) return 0;
            continue;
        }
        if (T->n_taps > PS_VEC_MAX_TAPS) return 0;
        int grp[PS_VEC_MAX_TAPS], base[PS_VEC_MAX_TAPS], shift[PS_VEC_MAX_TAPS], span[PS_VEC_MAX_TAPS];
        for (int b = 0; b < R; b++) {
            const int *row, *off;
            int ld;
            term_taps(T, b, &row, &off, &ld);
            if (tap_groups(T, row, off, ld, vw, grp, base, shift, span) < 0) return 0;
        }
    }
    return 1;
}

/* The vector of columns `at` of group g's value (its first tap's) of term
 * j for output row b into vector local `var`. */
static int emit_group_value(FILE *f, const ps_tap_term *T, int j, int b, int t, int fma, const char *var, const char *at)
{
    const int *row, *off;
    int ld;
    char sfx[16];
    term_taps(T, b, &row, &off, &ld);
    snprintf(sfx, sizeof sfx, "_%d", b);
    fprintf(f, "        ps_vf %s;\n        {\n", var);
    if (!emit_tap_at(f, T, j, t, row, off, ld, fma, sfx, "pv", at)) return 0;
    fprintf(f, "        %s = pv;\n        }\n", var);
    return 1;
}

/* The group values of tp's sums in tap order for the R output rows at the
 * vector of columns `at`: which 0, the groups that shift into g<j>_<b>_<g>
 * (before the loop); 1, the same groups into h<j>_<b>_<g> (the next
 * vector); 2, the groups that do not shift into g<j>_<b>_<g> (the vector). */
static int emit_group_values(FILE *f, const ps_tprog *tp, int R, int fma, int vw, int which, const char *at)
{
    int grp[PS_VEC_MAX_TAPS], base[PS_VEC_MAX_TAPS], shift[PS_VEC_MAX_TAPS], span[PS_VEC_MAX_TAPS];
    char var[48];
    for (int b = 0; b < R; b++)
        for (int j = 0; j < tp->n_terms; j++) {
            const ps_tap_term *T = &tp->term[j];
            if (!T->n_taps || T->box_s) continue;
            const int *row, *off;
            int ld;
            term_taps(T, b, &row, &off, &ld);
            const int ng = tap_groups(T, row, off, ld, vw, grp, base, shift, span);
            for (int g = 0; g < ng; g++) {
                if ((which == 2) != !span[g]) continue;
                snprintf(var, sizeof var, "%c%d_%d_%d", which == 1 ? 'h' : 'g', j, b, g);
                if (!emit_group_value(f, T, j, b, base[g], fma, var, at)) return 0;
            }
        }
    return 1;
}

/* The least number of columns the vectors' next loads may pass their
 * first: over the boxes (box_s - 1) and the groups that shift (their
 * span); INT_MAX where nothing loads a next vector. */
static int next_vector_slack(const ps_tprog *tp, int R, int vw)
{
    int grp[PS_VEC_MAX_TAPS], base[PS_VEC_MAX_TAPS], shift[PS_VEC_MAX_TAPS], span[PS_VEC_MAX_TAPS];
    int slack = INT_MAX;
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        if (!T->n_taps) continue;
        if (T->box_s) {
            if (T->box_s - 1 < slack) slack = T->box_s - 1;
            continue;
        }
        for (int b = 0; b < R; b++) {
            const int *row, *off;
            int ld;
            term_taps(T, b, &row, &off, &ld);
            const int ng = tap_groups(T, row, off, ld, vw, grp, base, shift, span);
            for (int g = 0; g < ng; g++)
                if (span[g] && span[g] < slack) slack = span[g];
        }
    }
    return slack;
}

/* Sum j (tap order) for output row b from its group values into vector
 * `dst`: the scalar form's operations (emit_tap_body) on vectors, each tap
 * its group's value shifted by its columns. */
static void emit_sum_from_groups(FILE *f, const ps_tap_term *T, int j, int b, int fma, int vw, const char *dst)
{
    int grp[PS_VEC_MAX_TAPS], base[PS_VEC_MAX_TAPS], shift[PS_VEC_MAX_TAPS], span[PS_VEC_MAX_TAPS];
    const int *row, *off;
    int ld;
    term_taps(T, b, &row, &off, &ld);
    tap_groups(T, row, off, ld, vw, grp, base, shift, span);
    fprintf(f, "        ps_vf %s = ps_vsplat(b%d);\n", dst, j);
    for (int t = 0; t < T->n_taps; t++) {
        char p[160], g[32], h[32];
        snprintf(g, sizeof g, "g%d_%d_%d", j, b, grp[t]);
        snprintf(h, sizeof h, "h%d_%d_%d", j, b, grp[t]);
        if (!shift[t]) snprintf(p, sizeof p, "%s", g);
        else shift_text(p, sizeof p, g, h, shift[t], vw);
        if (T->w && (T->w[t] == 1.0f || T->w[t] == -1.0f)) fprintf(f, "        %s = %s %c %s;\n", dst, dst, T->w[t] > 0 ? '+' : '-', p);
        else if (fma) fprintf(f, "        %s = ps_vfma(ps_vsplat(w%d_%d), %s, %s);\n", dst, j, t, p, dst);
        else fprintf(f, "        %s = %s + ps_vsplat(w%d_%d) * %s;\n", dst, dst, j, t, p);
    }
}

/* Tap program tp's R output rows by vectors, one loop: every box's column
 * sums once (u<j>_<b> at the vector's columns, v at the next vector's),
 * each box from them (emit_box_from_columns); each other sum's group values
 * once (g, and h the next vector's where the group shifts) and its taps as
 * them shifted, in tap order; a term that is a row's element loaded; the
 * reader's expression on the vectors, stored. Vectors while the next
 * vectors' loads stay within the columns the taps read; the loop that
 * follows computes the rest one column at a time, the same values (the
 * same operations element by element, boxes in box_sum's order). */
static int emit_vector_rows(FILE *f, const ps_tprog *tp, int R, int fma, int vw)
{
    const int slack = next_vector_slack(tp, R, vw);
    char at[32], out[48], reg[24], cond[96], x_text[PS_POINTWISE_MAX_INPUTS][32];
    const char *x[PS_POINTWISE_MAX_INPUTS];
    if (slack == INT_MAX) snprintf(cond, sizeof cond, "i + %d <= n", vw);
    else snprintf(cond, sizeof cond, "i + %d <= n && i + %d <= n + %d", vw, 2 * vw, slack);
    fprintf(f, "    int64_t i = 0;\n    if (%s) {\n", cond);
    if (!emit_box_columns(f, tp, R, fma, 'u', "i") || !emit_group_values(f, tp, R, fma, vw, 0, "i")) return 0;
    fprintf(f, "    for (; %s; i += %d) {\n", cond, vw);
    snprintf(at, sizeof at, "i + %d", vw);
    if (!emit_box_columns(f, tp, R, fma, 'v', at) || !emit_group_values(f, tp, R, fma, vw, 1, at) ||
        !emit_group_values(f, tp, R, fma, vw, 2, "i"))
        return 0;
    for (int b = 0; b < R; b++) {
        for (int j = 0; j < tp->n_terms; j++) {
            const ps_tap_term *T = &tp->term[j];
            snprintf(x_text[j], sizeof x_text[j], "x%d_%d", j, b);
            x[j] = x_text[j];
            if (T->box_s) {
                fprintf(f, "        ps_vf %s;\n", x[j]);
                emit_box_from_columns(f, T, j, b, vw, x[j]);
            } else if (T->n_taps) {
                emit_sum_from_groups(f, T, j, b, fma, vw, x[j]);
            } else {
                const int *row, *off;
                int ld;
                term_taps(T, b, &row, &off, &ld);
                fprintf(f, "        const ps_vf %s = *(const ps_vfu *)(q%d + i + %d);\n", x[j], row[0], off[0]);
            }
        }
        snprintf(out, sizeof out, "*(ps_vfu *)(out%d + i)", b);
        snprintf(reg, sizeof reg, "r_%d_", b);
        const names nm = {reg, "r", tp->prog, x, out, "ps_vf", 1};
        if (!emit_body(f, tp->prog, fma, &nm)) return 0;
    }
    int grp[PS_VEC_MAX_TAPS], base[PS_VEC_MAX_TAPS], shift[PS_VEC_MAX_TAPS], span[PS_VEC_MAX_TAPS];
    for (int b = 0; b < R; b++)
        for (int j = 0; j < tp->n_terms; j++) {
            const ps_tap_term *T = &tp->term[j];
            if (T->box_s) {
                fprintf(f, "        u%d_%d = v%d_%d;\n", j, b, j, b);
            } else if (T->n_taps) {
                const int *row, *off;
                int ld;
                term_taps(T, b, &row, &off, &ld);
                const int ng = tap_groups(T, row, off, ld, vw, grp, base, shift, span);
                for (int g = 0; g < ng; g++)
                    if (span[g]) fprintf(f, "        g%d_%d_%d = h%d_%d_%d;\n", j, b, g, j, b, g);
            }
        }
    fputs("    }\n    }\n", f);
    return 1;
}

/* How tap program tp is written for vectors of vw floats (codegen.h). */
static ps_tap_form tap_form(const ps_tprog *tp, int vw)
{
    if (vector_rows_fit(tp, vw)) return PS_TAP_BY_VECTORS;
    return box_columns_fit(tp, vw) ? PS_TAP_BOX_COLUMNS : PS_TAP_BY_ELEMENTS;
}

ps_tap_form ps_codegen_tap_form(const ps_tprog *tp, const char *isa)
{
    return tp ? tap_form(tp, isa_vw(isa)) : PS_TAP_BY_ELEMENTS;
}

/* The box terms' sums for the R output rows over the chunk's m columns
 * from i0, term j's for row b into sb<j>_<b>: by vectors, in one loop so
 * the compiler loads each row and computes each product once for every
 * term and row that reads it, each column sum computed once (a vector u
 * of them, the next vector v) and the box's columns as u and v's lanes
 * shifted in (box_sum's order: the bias, then column 0, 1, ...); vectors
 * only where the next vector's loads stay within the columns every box's
 * taps read (i + 2 vw <= n + box_s - 1), the rest one column at a time. */
static int emit_box_chunk(FILE *f, const ps_tprog *tp, int R, int fma, int vw)
{
    const int s_min = box_s_min(tp);
    char at[48], sfx[16];
    fprintf(f, "    {\n        int64_t k = 0;\n        if (i0 + %d <= n + %d) {\n", 2 * vw, s_min - 1);
    if (!emit_box_columns(f, tp, R, fma, 'u', "i0")) return 0;
    fprintf(f, "        for (; k + %d <= m && i0 + k + %d <= n + %d; k += %d) {\n", vw, 2 * vw, s_min - 1, vw);
    snprintf(at, sizeof at, "i0 + k + %d", vw);
    if (!emit_box_columns(f, tp, R, fma, 'v', at)) return 0;
    for (int b = 0; b < R; b++)
        for (int j = 0; j < tp->n_terms; j++) {
            if (!tp->term[j].box_s) continue;
            fputs("        {\n        ps_vf a;\n", f);
            emit_box_from_columns(f, &tp->term[j], j, b, vw, "a");
            fprintf(f, "        *(ps_vf *)(sb%d_%d + k) = a;\n        u%d_%d = v%d_%d;\n        }\n", j, b, j, b, j, b);
        }
    fputs("        }\n", f);
    fputs("        }\n        for (; k < m; k++) {\n        const int64_t i = i0 + k;\n", f);
    for (int b = 0; b < R; b++)
        for (int j = 0; j < tp->n_terms; j++) {
            const ps_tap_term *T = &tp->term[j];
            if (!T->box_s) continue;
            const int *row, *off;
            int ld;
            term_taps(T, b, &row, &off, &ld);
            snprintf(sfx, sizeof sfx, "_%d", b);
            fprintf(f, "        {\n        float a%d%s = b%d;\n", j, sfx, j);
            if (!emit_box_sum(f, T, j, row, off, ld, fma, sfx, "p")) return 0;
            fprintf(f, "        sb%d%s[k] = a%d%s;\n        }\n", j, sfx, j, sfx);
        }
    fputs("        }\n    }\n", f);
    return 1;
}

/* The loop body of tap program tp for output row b's element (`out`), its
 * locals suffixed `sfx` so the bodies of several rows share one scope: each term's value in a local (a
 * row's element, or the sum over its taps with the inlined producer's
 * operations written once per tap), then the reader's operations on them
 * (sibling sums: each term stored to its output o<b * n_terms + j>).
 * The sum runs as the row kernels' (kernels/rows_isa.c sum): from the
 * bias, one multiply-add per tap in tap order, contracted where the table
 * contracts; a box stage's as box_sum: each column summed over the rows,
 * the columns added to the bias in order; the clamp as its clamp: max
 * first, then min. */
static int emit_tap_body(FILE *f, const ps_tprog *tp, int fma, const char *out, int b, const char *sfx, int from_buf)
{
    char x_text[PS_POINTWISE_MAX_INPUTS][32], p[24];
    const char *x[PS_POINTWISE_MAX_INPUTS];
    snprintf(p, sizeof p, "p%s", sfx);
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        const int *row, *off;
        int ld;
        term_taps(T, b, &row, &off, &ld);
        snprintf(x_text[j], sizeof x_text[j], "x%d%s", j, sfx);
        x[j] = x_text[j];
        if (T->n_taps == 0) {
            fprintf(f, "        const float x%d%s = q%d[i + %d];\n", j, sfx, row[0], off[0]);
            continue;
        }
        if (T->box_s && from_buf) {
            fprintf(f, "        float a%d%s = sb%d%s[k];\n", j, sfx, j, sfx);
        } else if (T->box_s) {
            fprintf(f, "        float a%d%s = b%d;\n", j, sfx, j);
            if (!emit_box_sum(f, T, j, row, off, ld, fma, sfx, p)) return 0;
        } else {
            fprintf(f, "        float a%d%s = b%d;\n", j, sfx, j);
            for (int t = 0; t < T->n_taps; t++) {
                fputs("        {\n", f);
                if (!emit_tap_at(f, T, j, t, row, off, ld, fma, sfx, p, NULL)) return 0;
                /* a weight of +-1 (a box sum): the multiply-add rounds as the
                 * plain sum, which runs on the adders, beside the products */
                if (T->w && (T->w[t] == 1.0f || T->w[t] == -1.0f))
                    fprintf(f, "        a%d%s = a%d%s %c %s;\n", j, sfx, j, sfx, T->w[t] > 0 ? '+' : '-', p);
                else if (fma) fprintf(f, "        a%d%s = fmaf(w%d_%d, %s, a%d%s);\n", j, sfx, j, t, p, j, sfx);
                else fprintf(f, "        a%d%s = a%d%s + w%d_%d * %s;\n", j, sfx, j, sfx, j, t, p);
                fputs("        }\n", f);
            }
        }
        if (T->act) {
            fprintf(f, "        {\n        const float v%s = (a%d%s > ", sfx, j, sfx);
            literal(f, T->lo);
            fprintf(f, ") ? a%d%s : ", j, sfx);
            literal(f, T->lo);
            fprintf(f, ";\n        a%d%s = (v%s < ", j, sfx, sfx);
            literal(f, T->hi);
            fprintf(f, ") ? v%s : ", sfx);
            literal(f, T->hi);
            fputs(";\n        }\n", f);
        }
        fprintf(f, "        const float x%d%s = a%d%s;\n", j, sfx, j, sfx);
    }
    if (tp->n_out) {
        for (int j = 0; j < tp->n_terms; j++) fprintf(f, "        o%d[i] = x%d%s;\n", b * tp->n_terms + j, j, sfx);
        return 1;
    }
    char reg[24];
    snprintf(reg, sizeof reg, "r%s_", sfx);
    const names nm = {reg, "r", tp->prog, x, out, NULL, 0};
    return emit_body(f, tp->prog, fma, &nm);
}

/* Function ps_tp_<index> computing tp (codegen.h), or ps_tq_<index> for
 * two rows per call: both rows' bodies in one iteration, where the
 * compiler loads the rows they share and computes the inlined producer at
 * their common taps once. */
static int emit_tprog(FILE *f, const ps_tprog *tp, int index, int fma, int vw)
{
    const int R = tp->rows_per_call > 1 ? tp->rows_per_call : 1;
    if (R > 2) return 0;
    if (tp->n_out) {
        fprintf(f, "void ps_ts_%d(float *restrict o0, float *restrict o1, float *restrict o2, float *restrict o3, "
                   "const float *const *rows, const float *const *wv, const float *bv, int64_t n)\n{\n", index);
    } else if (R == 2) {
        fprintf(f, "void ps_tq_%d(float *restrict out0, float *restrict out1, const float *const *rows, "
                   "const float *const *wv, const float *bv, int64_t n)\n{\n", index);
    } else {
        fprintf(f, "void ps_tp_%d(float *restrict out0, const float *const *rows, const float *const *wv, const float *bv, "
                   "int64_t n)\n{\n", index);
    }
    for (int r = 0; r < tp->n_rows; r++) fprintf(f, "    const float *restrict q%d = rows[%d];\n", r, r);
    if (tp->prog) emit_consts(f, tp->prog, "r");
    for (int j = 0; j < tp->n_terms; j++) {
        const ps_tap_term *T = &tp->term[j];
        if (T->n_taps == 0) continue;
        fprintf(f, "    const float b%d = bv[%d];\n", j, j);
        for (int t = 0; t < T->n_taps; t++) {
            fprintf(f, "    const float w%d_%d = ", j, t);
            if (T->w) literal(f, T->w[t]);
            else fprintf(f, "wv[%d][%d]", j, t);
            fputs(";\n", f);
        }
        if (T->inl) {
            char reg[16];
            snprintf(reg, sizeof reg, "t%d_", j);
            emit_consts(f, T->inl, reg);
        }
    }
    const int by_vectors = tap_form(tp, vw) == PS_TAP_BY_VECTORS, by_columns = tap_form(tp, vw) == PS_TAP_BOX_COLUMNS;
    if (by_vectors) {
        if (!emit_vector_rows(f, tp, R, fma, vw)) return 0;
        fputs("#pragma GCC unroll 2\n    for (; i < n; i++) {\n", f);
    } else if (by_columns) {
        for (int j = 0; j < tp->n_terms; j++)
            for (int b = 0; b < R && tp->term[j].box_s; b++)
                fprintf(f, "    float sb%d_%d[%d] __attribute__((aligned(64)));\n", j, b, PS_BOX_CHUNK);
        fprintf(f, "    for (int64_t i0 = 0; i0 < n; i0 += %d) {\n    const int64_t m = n - i0 < %d ? n - i0 : %d;\n",
                PS_BOX_CHUNK, PS_BOX_CHUNK, PS_BOX_CHUNK);
        if (!emit_box_chunk(f, tp, R, fma, vw)) return 0;
        fputs("#pragma GCC unroll 2\n    for (int64_t k = 0; k < m; k++) {\n        const int64_t i = i0 + k;\n", f);
    } else {
        fputs("#pragma GCC unroll 2\n    for (int64_t i = 0; i < n; i++) {\n", f);
    }
    for (int b = 0; b < R; b++) {
        char out[24], sfx[16];
        snprintf(out, sizeof out, "out%d[i]", b);
        snprintf(sfx, sizeof sfx, "_%d", b);
        if (!emit_tap_body(f, tp, fma, out, b, sfx, by_columns)) return 0;
    }
    fputs(by_columns ? "    }\n    }\n}\n\n" : "    }\n}\n\n", f);
    return 1;
}

/* At most this many translation units per plan, compiled at once. */
#define PS_CODEGEN_MAX_UNITS 8

/* One translation unit: a share of the programs in its own object. */
typedef struct unit {
    char *src;              /* C source (owned) */
    size_t len;
    char path[600];         /* the object in the cache */
    char csrc[640], tmp[660];
    pid_t pid;              /* its compiler while it runs, else 0 */
    int state;              /* 0 to build, 1 compiling, 2 loaded, -1 failed */
    void *lib;
} unit;

/* What ps_codegen_compile hands out: the loaded objects. */
typedef struct ps_code {
    int n;
    void *lib[PS_CODEGEN_MAX_UNITS];
} ps_code;

/* Starts the compiler on u's source (no shell, output discarded): 1, or 0
 * with *why set. */
static int start_compile(const char *cc, const char *isa, unit *u, char *why, size_t why_len)
{
    snprintf(u->csrc, sizeof u->csrc, "%s.XXXXXX.c", u->path);
    int fd = mkstemps(u->csrc, 2);
    if (fd < 0) {
        snprintf(why, why_len, "cannot write in the cache directory (%s)", strerror(errno));
        return 0;
    }
    const int ok = write(fd, u->src, u->len) == (ssize_t)u->len;
    close(fd);
    /* the object under a name of its own until it is complete: a plan
     * loading the final name never sees half a file */
    snprintf(u->tmp, sizeof u->tmp, "%.*s.tmp", (int)(strlen(u->csrc) - 2), u->csrc);
    if (!ok) {
        unlink(u->csrc);
        snprintf(why, why_len, "cannot write %s", u->csrc);
        return 0;
    }
    char *argv[40];
    int k = 0;
    argv[k++] = (char *)cc;
    for (size_t i = 0; i < sizeof base_flags / sizeof *base_flags; i++) argv[k++] = (char *)base_flags[i];
    for (size_t t = 0; t < sizeof isa_flags / sizeof *isa_flags; t++)
        if (!strcmp(isa_flags[t].isa, isa))
            for (int j = 0; isa_flags[t].flags[j]; j++) argv[k++] = (char *)isa_flags[t].flags[j];
    argv[k++] = "-o";
    argv[k++] = u->tmp;
    argv[k++] = u->csrc;
    argv[k++] = "-lm";
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (!rc) {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        rc = posix_spawnp(&u->pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (rc) {
        u->pid = 0;
        unlink(u->csrc);
        snprintf(why, why_len, "cannot run the C compiler '%s' (PS_CC)", cc);
        return 0;
    }
    return 1;
}

/* Waits for u's compiler and moves its object into place: 1, or 0 with
 * *why set. */
static int finish_compile(const char *cc, unit *u, char *why, size_t why_len)
{
    int status = 0, waited;
    while ((waited = (int)waitpid(u->pid, &status, 0)) < 0 && errno == EINTR) {
    }
    u->pid = 0;
    unlink(u->csrc);
    const int rc = waited < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != 0) {
        unlink(u->tmp);
        snprintf(why, why_len, "'%s' failed (exit %d)", cc, rc);
        return 0;
    }
    if (rename(u->tmp, u->path) != 0) {
        snprintf(why, why_len, "cannot rename into %s (%s)", u->path, strerror(errno));
        unlink(u->tmp);
        return 0;
    }
    return 1;
}

/* The name of unit source src's object in dir. */
static void unit_path(const ps_context *ctx, const char *isa, const char *dir, unit *u)
{
    uint64_t h = ps_fnv1a(PS_FNV_OFFSET, u->src, u->len);
    h = ps_fnv1a(h, ctx->cc, strlen(ctx->cc));
    h = ps_fnv1a(h, isa, strlen(isa));
    for (size_t i = 0; i < sizeof base_flags / sizeof *base_flags; i++) h = ps_fnv1a(h, base_flags[i], strlen(base_flags[i]));
    snprintf(u->path, sizeof u->path, "%s/vprog-%s-%016llx.so", dir, isa, (unsigned long long)h);
}

ps_status ps_codegen_compile(const ps_context *ctx, const char *isa, ps_vprog *const *progs, int n_progs,
                             ps_tprog *const *taps, int n_taps, void **handle, int *n_compiled, int *cached, char *why,
                             size_t why_len)
{
    const int n = n_progs + n_taps; /* items: the programs, then the tap programs */
    *handle = NULL;
    *n_compiled = 0;
    *cached = 0;
    if (why_len) why[0] = '\0';
    if (!ctx->codegen) {
        snprintf(why, why_len, "PS_CODEGEN=0");
        return PS_SUCCESS;
    }
    char dir[512];
    if (!ps_cache_dir("/jit", dir, sizeof dir)) {
        snprintf(why, why_len, "no cache directory (XDG_CACHE_HOME/HOME unset)");
        return PS_SUCCESS;
    }
    /* Each program's text apart first: one with an operation the generator
     * cannot write stays interpreted. */
    char **text = calloc((size_t)(n > 0 ? n : 1), sizeof *text);
    int *unit_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *unit_of);
    unit units[PS_CODEGEN_MAX_UNITS];
    memset(units, 0, sizeof units);
    ps_status st = text && unit_of ? PS_SUCCESS : PS_ERR_OUT_OF_MEMORY;
    int written = 0;
    for (int i = 0; i < n && !st; i++) {
        unit_of[i] = -1;
        if (i < n_progs ? !ps_codegen_covers(progs[i]) : !ps_codegen_covers_taps(taps[i - n_progs])) continue;
        size_t len = 0;
        FILE *g = open_memstream(&text[i], &len);
        if (!g) {
            st = PS_ERR_OUT_OF_MEMORY;
            break;
        }
        const int ok = i < n_progs ? emit_prog(g, progs[i], i, isa_fma(isa))
                                   : emit_tprog(g, taps[i - n_progs], i - n_progs, isa_fma(isa), isa_vw(isa));
        if (fclose(g) != 0 || !text[i]) st = PS_ERR_OUT_OF_MEMORY;
        else if (!ok) {
            free(text[i]);
            text[i] = NULL;
        } else {
            written++;
        }
    }
    /* One unit per thread, at least three programs each: every compiler
     * process pays ~20 ms to start, and the threads compile at once. */
    int n_units = ctx->num_threads < 1 ? 1 : ctx->num_threads;
    if (n_units > PS_CODEGEN_MAX_UNITS) n_units = PS_CODEGEN_MAX_UNITS;
    if (n_units > (written + 2) / 3) n_units = (written + 2) / 3;
    for (int u = 0; u < n_units && !st; u++) {
        FILE *f = open_memstream(&units[u].src, &units[u].len);
        if (!f) {
            st = PS_ERR_OUT_OF_MEMORY;
            break;
        }
        emit_prelude(f, isa_fma(isa), isa_vw(isa));
        for (int i = 0, k = 0; i < n; i++)
            if (text[i]) {
                if (k % n_units == u) {
                    fputs(text[i], f);
                    unit_of[i] = u;
                }
                k++;
            }
        if (fclose(f) != 0 || !units[u].src) st = PS_ERR_OUT_OF_MEMORY;
        else unit_path(ctx, isa, dir, &units[u]);
    }
    if (!st && written == 0) snprintf(why, why_len, "no program the generator writes");
    int started = 0, loaded_cached = 0;
    for (int u = 0; u < n_units && !st; u++) {
        unit *U = &units[u];
        U->lib = access(U->path, R_OK) == 0 ? dlopen(U->path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (U->lib) {
            U->state = 2;
            loaded_cached++;
        } else if (!started++ && ps_mkdir_p(dir) != 0) {
            snprintf(why, why_len, "cannot create %s (%s)", dir, strerror(errno));
            U->state = -1;
            break;
        } else {
            U->state = start_compile(ctx->cc, isa, U, why, why_len) ? 1 : -1;
        }
    }
    for (int u = 0; u < n_units; u++) {
        unit *U = &units[u];
        if (U->state != 1) continue;
        U->state = finish_compile(ctx->cc, U, why, why_len) ? 2 : -1;
        if (U->state == 2 && !(U->lib = dlopen(U->path, RTLD_NOW | RTLD_LOCAL))) {
            const char *e = dlerror();
            snprintf(why, why_len, "cannot load %s (%s)", U->path, e ? e : "?");
            U->state = -1;
        }
    }
    ps_code *code = NULL;
    if (!st) {
        code = calloc(1, sizeof *code);
        if (!code) st = PS_ERR_OUT_OF_MEMORY;
    }
    for (int u = 0; u < n_units; u++) {
        if (code && units[u].lib) code->lib[code->n++] = units[u].lib;
        else if (units[u].lib) dlclose(units[u].lib);
        free(units[u].src);
    }
    for (int i = 0; i < n && code; i++) {
        if (unit_of[i] < 0 || !units[unit_of[i]].lib) continue;
        char name[32];
        const int multi = i >= n_progs && taps[i - n_progs]->rows_per_call > 1;
        const int sibs = i >= n_progs && taps[i - n_progs]->n_out > 0;
        snprintf(name, sizeof name, i < n_progs ? "ps_vp_%d" : sibs ? "ps_ts_%d" : multi ? "ps_tq_%d" : "ps_tp_%d",
                 i < n_progs ? i : i - n_progs);
        void *sym = dlsym(units[unit_of[i]].lib, name);
        /* object to function pointer: POSIX dlsym */
        if (i < n_progs) memcpy(&progs[i]->fn, &sym, sizeof progs[i]->fn);
        else if (sibs) memcpy(&taps[i - n_progs]->fns, &sym, sizeof taps[i - n_progs]->fns);
        else if (multi) memcpy(&taps[i - n_progs]->fnn, &sym, sizeof taps[i - n_progs]->fnn);
        else memcpy(&taps[i - n_progs]->fn, &sym, sizeof taps[i - n_progs]->fn);
        *n_compiled += sym != NULL;
    }
    for (int i = 0; text && i < n; i++) free(text[i]);
    free(text);
    free(unit_of);
    if (st) {
        ps_codegen_release(code);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    }
    *cached = n_units > 0 && loaded_cached == n_units;
    if (code && code->n == 0) {
        free(code);
        code = NULL;
    }
    *handle = code;
    return PS_SUCCESS;
}

void ps_codegen_release(void *handle)
{
    ps_code *code = handle;
    if (!code) return;
    for (int u = 0; u < code->n; u++) dlclose(code->lib[u]);
    free(code);
}
