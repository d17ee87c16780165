/* Internal: the executor. A ps_exec is everything execution needs, computed
 * at plan time: the loop nest, the tile-space extents, JIT-dispatched LIBXSMM
 * batch-reduce kernels for every tile shape that occurs (full, remainder,
 * padding-edge segments), and the padding geometry. Running it walks the
 * schedule and calls kernel pointers; nothing is dispatched or derived then. */
#ifndef PS_EXECUTION_ENGINE_H
#define PS_EXECUTION_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <libxsmm.h>

#include "descriptors/shape.h"
#include "machine/machine.h"
#include "schedule/schedule_impl.h"

typedef libxsmm_smmfunction_reducebatch_addr ps_brgemm;

/* Kernels of one tile shape, by [m is remainder][k is remainder][beta];
 * stream[m][k]: beta 0 with non-temporal stores of C, set only where these
 * calls are their blocks' only writes and the plan streams its output
 * (ps_exec.stream_out), and the block's rows are a multiple of 16 (LIBXSMM
 * 1.17 has no masked streaming store). */
typedef struct ps_kernel_set {
    ps_brgemm fn[2][2][2];
    ps_brgemm stream[2][2];
} ps_kernel_set;

/* A group of filter columns [s_lo, s_hi) of one ow-block that are valid
 * (outside the zero padding) for the same run of output columns
 * [ow0, ow0 + width). Grouping by taps rather than by columns keeps every
 * call as wide as the valid range allows (no width-1 edge kernels). With
 * merge_taps, one segment per block: all its columns, all S taps. */
typedef struct ps_conv_segment {
    int64_t ow0, width;
    int64_t s_lo, s_hi;
    ps_kernel_set kernels;
    ps_kernel_set kernels_narrow; /* merge_taps: phases one column narrower (width % q) */
    int64_t wide_phases;          /* merge_taps: phases p < wide_phases use kernels, the rest kernels_narrow */
} ps_conv_segment;

typedef struct ps_exec {
    ps_op_kind kind;
    ps_kernel_shape ks;
    int n_loops, n_parallel;   /* loops[0 .. n_parallel) form the parallel band */
    ps_loop loops[PS_SCHEDULE_MAX_LOOPS];
    int64_t ext[PS_DIM_COUNT];
    int64_t band_trips[PS_SCHEDULE_MAX_LOOPS]; /* iterations of each parallel loop (ps_loop_trips) */
    int64_t band_total;        /* their product: the band's iterations, split over the threads */
    int nthreads;
    int team;                  /* the band's parts: threads an execution starts (ps_exec_band_box);
                                  fewer than nthreads where the band has fewer iterations */
    int64_t batch_cap;         /* most batch entries one kernel call can have */
    int64_t m_tail;            /* size of the last output-channel block (may equal m) */
    int64_t m_rows[2];         /* rows the kernels of a full / the last output-channel block
                                  compute: m / m_tail, or (conv) that padded up to a size
                                  LIBXSMM runs in one pass (ps_exec_kernel_rows); padded
                                  blocks' weights carry zero rows and their calls write a
                                  per-thread scratch block the executor adds into the output */
    int64_t k_tail;            /* size of the remainder reduction block, 0 if none */
    int64_t k_full_blocks;     /* reduction blocks of full size k */
    int64_t k_blocks;          /* all reduction blocks (full + remainder) */
    int stream_out;            /* every output block is written by one beta-0 call (one
                                  reduction chunk, one part, no epilogue) and the output
                                  is at least ps_machine_stream_bytes: those calls store
                                  non-temporally when the output is 64-byte aligned (no
                                  read for ownership of lines nobody reads back here) */
    int clear_upper;           /* the CPU has AVX: every kernel call is followed by a
                                  vzeroupper (see run_kernel in run.c) */
    size_t thread_bytes;       /* each thread's workspace region (pages): its batch address
                                  lists at 0, the padded kernels' scratch block at cpad_offset,
                                  (panels) the A panel at panel_offset, panel_a_floats long,
                                  the B panel after it, (conv) its input copy at copy_offset */
    size_t cpad_offset, panel_offset, panel_a_floats, copy_offset;

    /* conv */
    ps_conv_shape conv;
    unsigned post_ops;
    const struct ps_row_kernels *rows; /* the epilogue's kernel (bias, ReLU, ReLU6) */
    int64_t *r_lo, *r_hi;      /* per output row: valid filter rows */
    int64_t *seg_begin;        /* per ow-block b: segments [seg_begin[b], seg_begin[b+1]) */
    unsigned char *block_zero; /* per ow-block: no segment spans the whole block, so the
                                  first chunk zeroes the tile and every call accumulates */
    int64_t copy_rows;         /* the calls read a copy of the input (conv's geometry):
                                  conv.padded_copy (merged taps with horizontal padding: zero
                                  columns around each input row, so edge columns reduce over all
                                  S taps) or conv.sub_h/sub_w (strided 1x1: every sub-th pixel);
                                  the whole copy has this many rows (input rows, or subsampled
                                  output rows) of copy_row_floats; 0: the input is read in place */
    int64_t copy_row_floats;
    int64_t *copy_lo, *copy_hi; /* per band part (team of them): the copy rows its calls read.
                                  The part's thread copies them into its own region first (no
                                  barrier, no reads of lines another core wrote); see build.c */
    int64_t copy_cap;          /* the most rows of any part: a region's copy */
    ps_conv_segment *segs;
    int64_t n_segs;
    int nchw;                  /* activations arrive/leave as NCHW: convert via workspace */
    int small_1x1;             /* a 1x1, stride-1, unpadded conv over C <= PS_SMALL_GEMM_MAX_C channels
                                  in one reduction block, with post-ops: blocks of 16-64 rows run
                                  ps_row_kernels.px_small_gemm (the epilogue in registers) instead
                                  of a LIBXSMM call and an epilogue pass */
    int merge_taps;            /* few input channels: one call reduces over a filter row's
                                  valid taps x C, read in place or from the copy (adjacent taps are adjacent
                                  pixels), and batches over filter rows only */
    int64_t tap_phases;        /* merge_taps: q = ceil(S / sw). A column's S*C floats overlap
                                  the next column's, which LIBXSMM does not accept (ldb < k),
                                  so a call covers every q-th column of a segment (ldb =
                                  q*sw*C >= S*C, ldc = q*K) and q calls cover them all */

    /* gemm */
    ps_gemm_shape gemm;
    int64_t n_tail;            /* width of the last column block (may equal n) */
    int pack_a, pack_b;        /* operand is transposed/scaled into the workspace first */
    int panels;                /* instead of the pass, each thread packs the A and B panels of
                                  its band tile and one reduction chunk into its own buffers
                                  when the walk enters that (tile, chunk); needs the chunk
                                  loop outside every block loop of the tile (see build_gemm) */
    int64_t panel_m, panel_n;  /* a band tile's most blocks along m and n (panel sizes) */
    int64_t lda, ldb;          /* leading dimensions the kernels were built for */
    ps_kernel_set gemm_kernels[2]; /* [n is remainder] */
} ps_exec;

/* Builds *e for problem p and a schedule checked for it; the machine's
 * last-level cache and ps_machine_panel_bytes decide how GEMM operands are
 * packed (ps_gemm_panels_pay), and ps_machine_stream_bytes which outputs are
 * streamed. On failure e holds nothing to free. */
ps_status ps_exec_build(ps_exec *e, const ps_problem *p, const ps_schedule *sched, int nthreads, const ps_machine *m);
void ps_exec_release(ps_exec *e);

/* Rows a kernel for an m-row block computes. LIBXSMM 1.17 builds a block
 * of fewer than 16 rows (f32) from passes of 8, 4 and 1 rows, each over
 * the whole reduction, so 5 rows take two passes and 15 take five; one
 * column reduced over 1024 (polysci-brgemm-ceiling --m M --n 1 --k 64
 * --batch 16, Xeon VM): 1.0 us at m = 4, 8 or 16, 2.0 at 5, 9 or 12, 4.0
 * at 7, 5.0 at 15. Such blocks run padded to the one-pass size above. */
int64_t ps_exec_kernel_rows(int64_t m);

/* Whether the kernels of the full (mt 0) or last (mt 1) output-channel block
 * are padded: they write the per-thread scratch block, never streamed. */
static inline int ps_exec_padded(const ps_exec *e, int mt)
{
    return e->m_rows[mt] != (mt ? e->m_tail : e->ks.m);
}

/* The box of tile indices [lo, hi) of iteration `it` of the parallel band
 * (its loops collapsed row-major); 0 where the iteration is empty (a
 * partial parent tile). */
int ps_exec_band_box(const ps_exec *e, int64_t it, int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT]);

/* The band iterations [*begin, *end) of part p of the e->team parts: contiguous,
 * equal shares (one per thread). */
static inline void ps_exec_part_range(const ps_exec *e, int p, int64_t *begin, int64_t *end)
{
    ps_band_part(e->band_total, e->team, p, begin, end);
}

/* Workspace bytes an execution needs (scratch address lists included). */
size_t ps_exec_workspace_bytes(const ps_exec *e);

/* Packed-weight layout (conv): per output-channel block of size mk, for r, s,
 * c, the mk consecutive output channels, then zeros up to the block's
 * m_rows (where its kernels are padded). */
int64_t ps_exec_packed_weight_elems(const ps_exec *e);
void ps_exec_pack_weights(const ps_exec *e, ps_weight_layout layout, const float *w, float *packed);

/* Operands of one execution; pointers already checked non-NULL. */
typedef struct ps_exec_operands {
    const float *src;
    const float *weights;  /* packed data (past the header) */
    const float *bias;
    const float *sum;      /* PS_POST_SUM: added before the activation, dst's layout */
    float *dst;
    const float *a, *b;
    float *c;
    void *workspace;       /* ps_exec_workspace_bytes, any alignment */
} ps_exec_operands;

/* Wall time of an execution's phases (PS_VERBOSE): `prepare` is the NCHW -> NHWC
 * copy of a conv's input or the packing of a GEMM's operands, `kernels` the
 * threads' walk of the schedule, `finish` the NHWC -> NCHW copy of the output.
 * A phase the plan does not have stays 0. */
typedef struct ps_exec_profile {
    double prepare_ms, kernels_ms, finish_ms;
} ps_exec_profile;

/* Runs the plan; prof, when not NULL, receives the phase times. */
void ps_exec_run(const ps_exec *e, const ps_exec_operands *ops, ps_exec_profile *prof);

#endif
