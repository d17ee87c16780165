/* polysci-brgemm-ceiling: what one LIBXSMM batch-reduce kernel shape reaches
 * on its own, with no schedule around it. Every thread calls the kernel on
 * its own operands: one B chunk (batch blocks of k x n, leading dimension ldb)
 * that stays in cache, or --b-chunks of them back to back, taken in turn (B
 * streamed as a conv reads its input; --b-offset places the batch blocks
 * inside a chunk as a 1x1 conv's channel blocks lie inside its pixels), and
 * --a-chunks A chunks (batch blocks of m x k each) taken in turn, so the A working set per thread can be set from L1-resident
 * to streamed from memory. C blocks (ldc) are taken in turn too: by default
 * one per A chunk; --c-chunks sets how many (many: written like a large
 * output), --c-phases Q makes Q calls share a block, call p over its columns
 * p, p + Q, ... (ldc = Q x m), as a merged-tap conv writes its output.
 * --c-rows R walks C as a large GEMM's walk does: after each pass over the
 * C blocks, the next pass writes the next m rows of the same columns (ldc
 * >= R x m), so a C working set of R x c-chunks blocks comes from memory
 * with the leading dimension of the user's C.
 * Comparing a plan's GFLOP/s with this ceiling for its kernel shape separates
 * the kernel's limit from what the outer loops and the memory system cost. */
#include <libxsmm.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opts {
    long m, n, k, batch, lda, ldb, ldc, a_chunks, b_chunks, b_offset, c_chunks, c_phases, c_rows;
    int beta, stream, threads, trials;
    double min_ms;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: polysci-brgemm-ceiling --m M --n N --k K [options]\n"
            "Times C(m x n) += sum over the batch of A_i(m x k) * B_i(k x n) (LIBXSMM batch-reduce\n"
            "kernel, f32) on every thread at once; prints the best trial's GFLOP/s over all threads.\n\n"
            "  --batch B       blocks per call (default 1)\n"
            "  --lda/--ldb/--ldc LD  leading dimensions (default m, k, m x c-phases x c-rows)\n"
            "  --beta 0|1      overwrite or accumulate C (default 1)\n"
            "  --stream 0|1    1: overwrite C with non-temporal stores (beta 0, LIBXSMM's\n"
            "                  NTS hint, as the executor's streamed outputs; C 64-byte aligned)\n"
            "  --a-chunks N    distinct A chunks per thread, used in turn (default 1: in L1/L2)\n"
            "  --b-chunks N    distinct B chunks per thread, back to back, used in turn (default 1)\n"
            "  --b-offset F    floats between the batch blocks of one call's B (default: one block's\n"
            "                  footprint; a 1x1 conv over C channels in blocks of k: --ldb C --b-offset k)\n"
            "  --c-chunks N    distinct C blocks per thread, used in turn, contiguous (default: as\n"
            "                  many as A chunks; many: C streamed like a large output)\n"
            "  --c-phases Q    Q calls per C block, call p over columns p, p + Q, ... (ldc = Q * m:\n"
            "                  how a merged-tap conv writes its output; default 1)\n"
            "  --c-rows R      passes over the C blocks, pass p at rows p x m (ldc >= R * m: C walked\n"
            "                  as a GEMM's band of R row blocks; default 1)\n"
            "  --threads T     threads (default: OpenMP's)\n"
            "  --trials T      trials, the best is reported (default 7)\n"
            "  --min-ms MS     each trial lasts at least this long (default 50)\n");
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.batch = 1, .a_chunks = 1, .b_chunks = 1, .c_phases = 1, .c_rows = 1, .beta = 1, .threads = omp_get_max_threads(), .trials = 7, .min_ms = 50};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "polysci-brgemm-ceiling: %s needs a value\n", argv[i]);
            return -1;
        }
        char *end;
        const char *name = argv[i], *val = argv[++i];
        double v = strtod(val, &end);
        if (*end || v < 0) {
            fprintf(stderr, "polysci-brgemm-ceiling: bad value '%s' for %s\n", val, name);
            return -1;
        }
        if (!strcmp(name, "--m")) o->m = (long)v;
        else if (!strcmp(name, "--n")) o->n = (long)v;
        else if (!strcmp(name, "--k")) o->k = (long)v;
        else if (!strcmp(name, "--batch")) o->batch = (long)v;
        else if (!strcmp(name, "--lda")) o->lda = (long)v;
        else if (!strcmp(name, "--ldb")) o->ldb = (long)v;
        else if (!strcmp(name, "--ldc")) o->ldc = (long)v;
        else if (!strcmp(name, "--beta")) o->beta = (int)v;
        else if (!strcmp(name, "--stream")) o->stream = (int)v;
        else if (!strcmp(name, "--a-chunks")) o->a_chunks = (long)v;
        else if (!strcmp(name, "--c-chunks")) o->c_chunks = (long)v;
        else if (!strcmp(name, "--c-rows")) o->c_rows = (long)v;
        else if (!strcmp(name, "--b-chunks")) o->b_chunks = (long)v;
        else if (!strcmp(name, "--b-offset")) o->b_offset = (long)v;
        else if (!strcmp(name, "--c-phases")) o->c_phases = (long)v;
        else if (!strcmp(name, "--threads")) o->threads = (int)v;
        else if (!strcmp(name, "--trials")) o->trials = (int)v;
        else if (!strcmp(name, "--min-ms")) o->min_ms = v;
        else {
            fprintf(stderr, "polysci-brgemm-ceiling: unknown option %s\n", name);
            return -1;
        }
    }
    if (!o->lda) o->lda = o->m;
    if (!o->ldb) o->ldb = o->k;
    if (!o->ldc) o->ldc = o->m * o->c_phases * o->c_rows;
    if (!o->c_chunks) o->c_chunks = o->a_chunks;
    if (o->m < 1 || o->n < 1 || o->k < 1 || o->batch < 1 || o->batch > 4096 || o->a_chunks < 1 || o->b_chunks < 1 || o->c_chunks < 0 || o->c_phases < 1 || o->c_rows < 1 || o->threads < 1 ||
        o->trials < 1 || o->beta > 1 || o->stream > 1 || o->lda < o->m || o->ldb < o->k || o->ldc < o->m * o->c_phases * o->c_rows || (o->c_rows > 1 && o->c_phases > 1)) {
        fprintf(stderr, "polysci-brgemm-ceiling: need m, n, k >= 1, 1 <= batch <= 4096, lda >= m, ldb >= k, "
                        "ldc >= m * c-phases * c-rows, c-rows only with one phase, beta and stream 0 or 1\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    libxsmm_init();
    const libxsmm_blasint m = o.m, n = o.n, k = o.k, lda = o.lda, ldb = o.ldb, ldc = o.ldc;
    if (o.stream) o.beta = 0;
    const float alpha = 1.0f, beta = (float)o.beta;
    const int flags = LIBXSMM_GEMM_FLAGS('N', 'N') | (o.stream ? LIBXSMM_GEMM_FLAG_ALIGN_C_NTS_HINT : 0), prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    libxsmm_smmfunction_reducebatch_addr kernel =
        libxsmm_smmdispatch_reducebatch_addr(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
    if (!kernel) {
        fprintf(stderr, "polysci-brgemm-ceiling: LIBXSMM has no kernel for this shape\n");
        return 1;
    }
    /* Footprints of one block, in floats. */
    const size_t a_blk = (size_t)(o.lda * (o.k - 1) + o.m), b_blk = (size_t)(o.ldb * (o.n - 1) + o.k),
                 c_blk = (size_t)(o.ldc * o.n); /* a C block: all phases' columns */
    /* One call's B: the batch blocks o.b_offset floats apart (default: one after the other);
     * chunks lie back to back, so b-chunks > 1 streams B like a conv's input. */
    const size_t b_off = o.b_offset ? (size_t)o.b_offset : b_blk, b_chunk = b_off * (size_t)(o.batch - 1) + b_blk;
    const double flops_per_call = 2.0 * o.m * o.n * o.k * o.batch;
    double rate_sum = 0;
    int failed = 0; /* any thread's allocation: all threads must then skip the trials and their barriers */
#pragma omp parallel num_threads(o.threads) reduction(+ : rate_sum)
    {
        const size_t a_floats = a_blk * o.batch * o.a_chunks, b_floats = b_chunk * o.b_chunks, c_floats = c_blk * o.c_chunks;
        float *a = aligned_alloc(64, (a_floats * sizeof(float) + 63) / 64 * 64);
        float *b = aligned_alloc(64, (b_floats * sizeof(float) + 63) / 64 * 64);
        float *c = aligned_alloc(64, (c_floats * sizeof(float) + 63) / 64 * 64);
        const float **ap = malloc(o.batch * sizeof *ap), **bp = malloc(o.batch * sizeof *bp);
        if (!a || !b || !c || !ap || !bp) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp barrier
        double best = 0;
        int any_failed;
#pragma omp atomic read
        any_failed = failed;
        if (!any_failed) {
            for (size_t i = 0; i < a_floats; i++) a[i] = (float)(i % 97) * 1e-3f;
            for (size_t i = 0; i < b_floats; i++) b[i] = (float)(i % 89) * 1e-3f;
            memset(c, 0, c_floats * sizeof(float));
            long calls = 1;
            for (int t = 0; t < o.trials + 1; t++) { /* trial 0 warms up and sizes the trials */
#pragma omp barrier
                double t0 = omp_get_wtime();
                for (long r = 0; r < calls; r++) {
                    const long ch = r % o.a_chunks;
                    for (long i = 0; i < o.batch; i++) {
                        ap[i] = a + ((size_t)ch * o.batch + (size_t)i) * a_blk;
                        bp[i] = b + (size_t)(r % o.b_chunks) * b_chunk + (size_t)i * b_off;
                    }
                    unsigned long long cnt = (unsigned long long)o.batch;
                    const size_t row = (size_t)(r / o.c_chunks % o.c_rows) * o.m; /* 0 unless --c-rows */
                    kernel(ap, bp, c + (size_t)(r / o.c_phases % o.c_chunks) * c_blk + (size_t)(r % o.c_phases) * o.m + row, &cnt);
                }
                double ms = (omp_get_wtime() - t0) * 1e3;
                if (t == 0) {
                    /* one thread sizes the trials (it ran one call); every thread gets its count */
#pragma omp single copyprivate(calls)
                    calls = ms > 0 ? (long)(o.min_ms / ms) + 1 : 1000;
                } else if (calls * flops_per_call / (ms * 1e6) > best) {
                    best = calls * flops_per_call / (ms * 1e6);
                }
            }
        }
        rate_sum = best;
        free(a);
        free(b);
        free(c);
        free(ap);
        free(bp);
    }
    if (failed) {
        fprintf(stderr, "polysci-brgemm-ceiling: out of memory\n");
        return 1;
    }
    printf("brgemm %ldx%ldx%ld batch %ld lda %ld ldb %ld ldc %ld beta %d%s, %d threads, A %.0f KiB, B %.0f KiB per thread: "
           "%.1f GFLOP/s\n",
           o.m, o.n, o.k, o.batch, o.lda, o.ldb, o.ldc, o.beta, o.stream ? " (streaming stores)" : "", o.threads,
           (double)(a_blk * o.batch * o.a_chunks) * sizeof(float) / 1024, (double)(b_chunk * o.b_chunks) * sizeof(float) / 1024,
           rate_sum);
    return 0;
}
