/* Internal: plan-time code for the graph executor's expression programs.
 *
 * The row kernels run a lowered expression (ps_vprog) as a loop of
 * operations over chunks of PS_VCHUNK floats, each operation reading and
 * writing whole chunks in L1: two loads and a store per operation and
 * vector, which bounds a program of a few operations to several times the
 * cycles of the same arithmetic held in registers. ps_codegen_compile writes
 * each program as one C loop (every operation a statement on locals), builds
 * them with the system C compiler into one shared object for the row-kernel
 * table's instruction set, loads it and sets each program's fn; the
 * interpreter stays where no compiler runs.
 *
 * Compiled objects are kept in the cache directory (core/cachedir.h,
 * "/jit") under a hash of their source and the compiler command, so a
 * program is compiled once per machine and user; later plans only load it. */
#ifndef PS_CODEGEN_H
#define PS_CODEGEN_H

#include "kernels/kernels.h"
#include "polysci/context.h"
#include "polysci/status.h"

/* Whether the generator writes prog (every program of at least one
 * operation: exp and log as the row kernels' polynomials). */
int ps_codegen_covers(const ps_vprog *prog);

/* A tap program: a pointwise reader's expression over terms, each term a
 * row's element at the output column or a stencil sum (unit column stride)
 * whose taps read rows, directly or through a pointwise producer inlined
 * at every tap. Everything stays in registers: no row of the stencil or of
 * the producer is stored. rows[r] points at the first column row r is
 * read from for the call's first output; tap_off is the column offset
 * from there. */
typedef void (*ps_tap_fn)(float *restrict out, const float *const *rows, const float *const *w, const float *bias,
                          int64_t n);
/* A program of two output rows per call (row y into out0, y + 1 into
 * out1) over one set of rows, so the rows both read, and the inlined
 * producer's values at the taps they share, are loaded and computed once.
 * (Restrict-qualified parameters: the compiler vectorizes the loop without
 * checks that the outputs do not overlap.) */
typedef void (*ps_tapn_fn)(float *restrict out0, float *restrict out1, const float *const *rows, const float *const *w,
                           const float *bias, int64_t n);

/* Sibling sums (n_out > 0): stencil sums of one input computed in one
 * loop, so the input elements their taps share are loaded once; term j of
 * output row b is stored to out[b * n_terms + j] (at most four outputs,
 * the unused NULL); no reader expression. */
typedef void (*ps_tapm_fn)(float *restrict out0, float *restrict out1, float *restrict out2, float *restrict out3,
                           const float *const *rows, const float *const *w, const float *bias, int64_t n);
#define PS_TAPM_MAX_OUT 4

typedef struct ps_tap_term {
    int n_taps;            /* 0: row tap_row[0] at offset tap_off[0]; else bias + sum of w[t] * tap t */
    const float *w;        /* n_taps weights written as constants, NULL: the call's w[term] */
    int act;               /* the sum clamped to [lo, hi] */
    float lo, hi;
    const ps_vprog *inl;   /* a tap's value: this program of n_inl_in rows, NULL: one row's element */
    int n_inl_in;
    /* rows_per_call x max(1, n_taps) x max(1, n_inl_in): the row and offset
     * of output row b's tap t, input k */
    int *tap_row, *tap_off;
    /* box_s > 0: the sum is a box stage's (graph_exec.h ps_gx_stage.box_s),
     * box_r rows of box_s columns, summed in its order; tap t is in row
     * box_row[t] and column box_dx[t] - box_dx0 (both the stage's arrays,
     * not owned) */
    int box_r, box_s, box_dx0;
    const int *box_row, *box_dx;
} ps_tap_term;

typedef struct ps_tprog {
    ps_tap_fn fn;          /* set by ps_codegen_compile, or NULL */
    ps_tapn_fn fnn;        /* the same for rows_per_call 2 */
    ps_tapm_fn fns;        /* sibling sums (n_out > 0), any rows_per_call */
    int rows_per_call;     /* output rows per call: 1 (fn) or 2 (fnn) */
    int n_out;             /* 0: a reader's program; > 0: sibling sums, n_out == n_terms */
    const ps_vprog *prog;  /* the reader's expression: input j is term j (NULL for sibling sums) */
    int n_terms, n_rows;
    ps_tap_term *term;
} ps_tprog;

/* How a compiled tap program is written: element by element (the loop
 * the compiler vectorizes; box sums from their taps in box_sum's order);
 * box sums by columns (each column sum once, into a buffer the reader's
 * expression, element by element, reads); by vectors (one loop of GCC
 * vectors: box column sums once, each other sum's taps as shifted vectors
 * of the values its rows give, the reader's expression on the vectors). */
typedef enum ps_tap_form { PS_TAP_BY_ELEMENTS = 0, PS_TAP_BOX_COLUMNS = 1, PS_TAP_BY_VECTORS = 2 } ps_tap_form;

/* tp's form for the row-kernel table `isa` (ps_codegen_compile's). */
ps_tap_form ps_codegen_tap_form(const ps_tprog *tp, const char *isa);

/* Whether the generator writes tp (its programs are covered). */
int ps_codegen_covers_taps(const ps_tprog *tp);

/* __give *handle (NULL where nothing was loaded; release with
 * ps_codegen_release after the programs' last use). Compiles the programs
 * and tap programs it covers for the row-kernel table `isa` ("avx512",
 * "avx2", "generic") and sets their fn; *n_compiled counts both. A missing compiler, a failed compilation or an
 * unusable cache directory is not an error: those programs keep fn = NULL
 * (the interpreter), *why says why (why_len > 0). Returns
 * PS_ERR_OUT_OF_MEMORY only. */
ps_status ps_codegen_compile(const ps_context *ctx, const char *isa, ps_vprog *const *progs, int n_progs,
                             ps_tprog *const *taps, int n_taps, void **handle, int *n_compiled, int *cached, char *why,
                             size_t why_len);

void ps_codegen_release(void *handle);

#endif
