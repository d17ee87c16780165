#include "codegen/codegen.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cachedir.h"
#include "core/error.h"
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
    const char *flags[8];
} isa_flags[] = {
    {"avx512", 1, {"-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mprefer-vector-width=512", NULL}},
    {"avx2", 1, {"-mavx2", "-mfma", NULL}},
    {"generic", 0, {NULL}},
};

static const char *const base_flags[] = {"-O3", "-std=c11", "-ffp-contract=off", "-fno-math-errno",
                                         "-fno-trapping-math", "-fPIC", "-shared", "-w"};

static int isa_fma(const char *isa)
{
    for (size_t t = 0; t < sizeof isa_flags / sizeof *isa_flags; t++)
        if (!strcmp(isa_flags[t].isa, isa)) return isa_flags[t].fma;
    return 0;
}

static int arity(int op)
{
    return op == PS_EXPR_SELECT || op == PS_EXPR_CLAMP ? 3 : op >= PS_EXPR_ADD ? 2 : op >= PS_EXPR_NEG ? 1 : 0;
}

int ps_codegen_covers(const ps_vprog *prog)
{
    if (!prog || prog->n_ops < 1) return 0;
    for (int o = 0; o < prog->n_ops; o++) {
        const int op = prog->ops[o].op;
        if (op == PS_EXPR_EXP || op == PS_EXPR_LOG) return 0;
    }
    return 1;
}

/* A float literal that reads back as exactly v. */
static void literal(FILE *f, float v)
{
    if (isnan(v)) fputs("__builtin_nanf(\"\")", f);
    else if (isinf(v)) fputs(v > 0 ? "__builtin_inff()" : "(-__builtin_inff())", f);
    else fprintf(f, "(%af)", (double)v);
}

/* Operand j of op: a constant, an input's element or a register. */
static void operand(FILE *f, const ps_vop *op, int j)
{
    const int a = op->a[j];
    if (a == PS_VOP_CONST) literal(f, op->k[j]);
    else if (PS_VOP_IS_INPUT(a)) fprintf(f, "i%d[i]", PS_VOP_INPUT_INDEX(a));
    else fprintf(f, "r%d", a);
}

static const char *cmp_text(int cmp)
{
    switch (cmp) {
    case PS_EXPR_LT: return "<";
    case PS_EXPR_LE: return "<=";
    case PS_EXPR_GT: return ">";
    case PS_EXPR_GE: return ">=";
    case PS_EXPR_EQ: return "==";
    case PS_EXPR_NE: return "!=";
    default: return NULL;
    }
}

/* One statement per operation, in the interpreter's order and forms
 * (rows_isa.c: unary, binary, fused); 0 for an operation it cannot write.
 * fma: the fused forms as the table's contraction computes them (one
 * product and the sum in one rounding; a * b + c * d contracts the first
 * product). */
static int emit_op(FILE *f, const ps_vop *op, int fma)
{
    char dst[32];
    if (op->dst == PS_VOP_OUT) snprintf(dst, sizeof dst, "out[i]");
    else snprintf(dst, sizeof dst, "r%d", op->dst);
#define A(j) operand(f, op, j)
    fprintf(f, "        %s = ", dst);
    const char *c = cmp_text(op->op);
    if (op->op >= PS_VOP_FMA) {
        switch (fma ? op->op : -op->op) {
        case PS_VOP_FMA: fputs("fmaf(", f), A(0), fputs(", ", f), A(1), fputs(", ", f), A(2), fputs(")", f); break;
        case PS_VOP_FMS: fputs("fmaf(", f), A(0), fputs(", ", f), A(1), fputs(", -", f), A(2), fputs(")", f); break;
        case PS_VOP_FNMA: fputs("fmaf(-", f), A(0), fputs(", ", f), A(1), fputs(", ", f), A(2), fputs(")", f); break;
        case PS_VOP_MAM:
            fputs("fmaf(", f), A(0), fputs(", ", f), A(1), fputs(", ", f), A(2), fputs(" * ", f), A(3), fputs(")", f);
            break;
        case PS_VOP_MSM:
            fputs("fmaf(", f), A(0), fputs(", ", f), A(1), fputs(", -(", f), A(2), fputs(" * ", f), A(3), fputs("))", f);
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
    } else if (arity(op->op) == 0) {
        A(0);
    } else if (arity(op->op) == 1) {
        const char *fn = op->op == PS_EXPR_NEG ? "-" : op->op == PS_EXPR_ABS ? "fabsf" : op->op == PS_EXPR_SQRT ? "sqrtf"
                         : op->op == PS_EXPR_FLOOR ? "floorf" : NULL;
        if (!fn) return 0;
        fprintf(f, "%s(", fn), A(0), fputs(")", f);
    } else if (c) {
        fputs("(", f), A(0), fprintf(f, " %s ", c), A(1), fputs(") ? 1.0f : 0.0f", f);
    } else if (arity(op->op) == 2) {
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

/* Function `name` computing prog: inputs and constant registers bound
 * once, the operations on locals inside one loop the compiler vectorizes. */
static int emit_prog(FILE *f, const ps_vprog *prog, int index, int fma)
{
    int n_in = 0;
    for (int o = 0; o < prog->n_ops; o++)
        for (int j = 0; j < 4; j++)
            if (PS_VOP_IS_INPUT(prog->ops[o].a[j]) && PS_VOP_INPUT_INDEX(prog->ops[o].a[j]) + 1 > n_in)
                n_in = PS_VOP_INPUT_INDEX(prog->ops[o].a[j]) + 1;
    fprintf(f, "void ps_vp_%d(float *restrict out, const float *const *in, int64_t n)\n{\n", index);
    for (int j = 0; j < n_in; j++) fprintf(f, "    const float *restrict i%d = in[%d];\n", j, j);
    for (int c = 0; c < prog->n_consts; c++) {
        fprintf(f, "    const float r%d = ", prog->const_reg[c]);
        literal(f, prog->const_val[c]);
        fputs(";\n", f);
    }
    fputs("    for (int64_t i = 0; i < n; i++) {\n", f);
    for (int r = 0; r < prog->n_regs; r++) {
        int is_const = 0;
        for (int c = 0; c < prog->n_consts; c++) is_const |= prog->const_reg[c] == r;
        if (!is_const) fprintf(f, "        float r%d;\n", r);
    }
    for (int o = 0; o < prog->n_ops; o++)
        if (!emit_op(f, &prog->ops[o], fma)) return 0;
    fputs("    }\n}\n\n", f);
    return 1;
}

/* Runs argv (no shell), its output discarded; its exit status, -1 where
 * it could not start. */
static int run_quiet(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa)) return -1;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int compile(const char *cc, const char *isa, const char *src, size_t len, const char *dir, const char *path,
                   char *why, size_t why_len)
{
    if (ps_mkdir_p(dir) != 0) {
        snprintf(why, why_len, "cannot create %s (%s)", dir, strerror(errno));
        return 0;
    }
    char csrc[640], tmp[660];
    snprintf(csrc, sizeof csrc, "%s.XXXXXX.c", path);
    int fd = mkstemps(csrc, 2);
    if (fd < 0) {
        snprintf(why, why_len, "cannot write in %s (%s)", dir, strerror(errno));
        return 0;
    }
    int ok = write(fd, src, len) == (ssize_t)len;
    close(fd);
    /* the object under a name of its own until it is complete: a plan
     * loading the final name never sees half a file */
    snprintf(tmp, sizeof tmp, "%.*s.tmp", (int)(strlen(csrc) - 2), csrc);
    char *argv[32];
    int k = 0;
    argv[k++] = (char *)cc;
    for (size_t i = 0; i < sizeof base_flags / sizeof *base_flags; i++) argv[k++] = (char *)base_flags[i];
    for (size_t t = 0; t < sizeof isa_flags / sizeof *isa_flags; t++)
        if (!strcmp(isa_flags[t].isa, isa))
            for (int j = 0; isa_flags[t].flags[j]; j++) argv[k++] = (char *)isa_flags[t].flags[j];
    argv[k++] = "-o";
    argv[k++] = tmp;
    argv[k++] = csrc;
    argv[k++] = "-lm";
    argv[k] = NULL;
    const int rc = ok ? run_quiet(argv) : -2;
    unlink(csrc);
    if (rc != 0) {
        unlink(tmp);
        if (rc == -2) snprintf(why, why_len, "cannot write %s", csrc);
        else if (rc < 0) snprintf(why, why_len, "cannot run the C compiler '%s' (PS_CC)", cc);
        else snprintf(why, why_len, "'%s' failed (exit %d)", cc, rc);
        return 0;
    }
    if (rename(tmp, path) != 0) {
        snprintf(why, why_len, "cannot rename into %s (%s)", path, strerror(errno));
        unlink(tmp);
        return 0;
    }
    return 1;
}

ps_status ps_codegen_compile(const ps_context *ctx, const char *isa, ps_vprog *const *progs, int n, void **handle,
                             int *n_compiled, int *cached, char *why, size_t why_len)
{
    *handle = NULL;
    *n_compiled = 0;
    *cached = 0;
    if (why_len) why[0] = '\0';
    if (!ctx->codegen) {
        snprintf(why, why_len, "PS_CODEGEN=0");
        return PS_SUCCESS;
    }
    char *src = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&src, &len);
    if (!f) return ps_error(PS_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    fputs("#include <math.h>\n#include <stdint.h>\n\n", f);
    int any = 0, oom = 0;
    unsigned char *written = calloc((size_t)(n > 0 ? n : 1), 1);
    for (int i = 0; i < n && written && !oom; i++) {
        if (!ps_codegen_covers(progs[i])) continue;
        /* each program apart first: one with an operation the generator
         * cannot write stays interpreted */
        char *one = NULL;
        size_t one_len = 0;
        FILE *g = open_memstream(&one, &one_len);
        if (!g) {
            oom = 1;
            break;
        }
        const int ok = emit_prog(g, progs[i], i, isa_fma(isa));
        if (fclose(g) != 0 || !one) oom = 1;
        else if (ok) {
            fputs(one, f);
            written[i] = 1;
            any = 1;
        }
        free(one);
    }
    if (fclose(f) != 0 || !src || !written || oom) {
        free(written);
        free(src);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    }
    len = strlen(src);
    if (!any) {
        free(written);
        free(src);
        snprintf(why, why_len, "no program the generator writes");
        return PS_SUCCESS;
    }
    /* The object's name: the source and everything that shapes the code. */
    uint64_t h = ps_fnv1a(PS_FNV_OFFSET, src, len);
    h = ps_fnv1a(h, ctx->cc, strlen(ctx->cc));
    h = ps_fnv1a(h, isa, strlen(isa));
    for (size_t i = 0; i < sizeof base_flags / sizeof *base_flags; i++) h = ps_fnv1a(h, base_flags[i], strlen(base_flags[i]));
    char dir[512], path[600];
    if (!ps_cache_dir("/jit", dir, sizeof dir)) {
        free(written);
        free(src);
        snprintf(why, why_len, "no cache directory (XDG_CACHE_HOME/HOME unset)");
        return PS_SUCCESS;
    }
    snprintf(path, sizeof path, "%s/vprog-%s-%016llx.so", dir, isa, (unsigned long long)h);
    void *lib = access(path, R_OK) == 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (lib) *cached = 1;
    else if (compile(ctx->cc, isa, src, len, dir, path, why, why_len)) lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    else {
        free(written);
        free(src);
        return PS_SUCCESS;
    }
    free(src);
    if (!lib) {
        free(written);
        const char *e = dlerror();
        snprintf(why, why_len, "cannot load %s (%s)", path, e ? e : "?");
        return PS_SUCCESS;
    }
    for (int i = 0; i < n; i++) {
        if (!written[i]) continue;
        char name[32];
        snprintf(name, sizeof name, "ps_vp_%d", i);
        ps_vprog_fn fn;
        void *sym = dlsym(lib, name);
        memcpy(&fn, &sym, sizeof fn); /* object to function pointer: POSIX dlsym */
        progs[i]->fn = fn;
        *n_compiled += fn != NULL;
    }
    free(written);
    *handle = lib;
    return PS_SUCCESS;
}

void ps_codegen_release(void *handle)
{
    if (handle) dlclose(handle);
}
