/* Internal: a planned stage graph (ps_graph_plan) and its executor.
 *
 * The plan is plain data fixed by ps_graph_plan_create: the stage list, the
 * groups in execution order, each group's tile grid and its members' regions
 * (affine in the tile indices for interior tiles, a table for the few
 * boundary tiles), the scratch layout of a thread, and where every tensor
 * that crosses a group boundary lives in the workspace. Execution walks the
 * tiles of each group in parallel and calls row kernels; it never calls isl
 * and allocates nothing but the workspace when the caller passes none. */
#ifndef PS_GRAPH_EXEC_H
#define PS_GRAPH_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <libxsmm.h>

#include "codegen/codegen.h"
#include "fusion/fusion.h"
#include "kernels/kernels.h"
#include "polysci/graph.h"
#include "polysci/plan.h"
#include "tiling/tiling.h"

typedef struct ps_gx_member {
    int stage;
    int live_out;          /* stored for use outside the group */
    int inner_cons;        /* read by another member */
    int direct;            /* computed straight into its only destination */
    int stream;            /* direct, with streaming stores (destination far larger than the LLC) */
    int64_t own_h, own_w;  /* its share of a tile, in its own pixels */
    int64_t own_y0, own_x0;/* where tile (0, 0)'s share starts: the group's anchor at its scale */
    ps_region_form form;   /* its region in an interior tile */
    int64_t max_w;         /* widest region over all tiles */
    int in_member[PS_POINTWISE_MAX_INPUTS]; /* member computing input j, -1: read from memory */
    int n_reads;           /* (consumer member, its input) pairs reading this member */
    int *read_by, *read_as;
    /* Producer epilogues: a stencil, mix or resampling member whose only
     * reader is one pointwise member (not a live-out, as many channels) is
     * computed in its reader's pass, a chunk of a row at a time in L1, and
     * never stored; the reader's fused[j] = 1 for such input j. */
    int fused_into;        /* the reader computing this member, -1: none */
#define PS_FUSED_CHUNK 1024    /* columns of a producer epilogue's chunk: 4 KiB per input, in L1 */
    int n_fused;           /* inputs computed in this member's own pass */
    char fused[PS_POINTWISE_MAX_INPUTS];
    /* Tap programs (codegen.h): a member with producer epilogues that are
     * all sums of unit column stride runs as one compiled loop computing
     * the sums in registers; a pointwise member read only by those sums
     * (not a live-out) is computed at their taps and never stored. Its
     * inputs' rings hold the rows the sums read through it. */
    int inlined_into;      /* the member whose tap program computes this one, -1: none */
    ps_tprog *tap;         /* NULL: none (or its compilation failed) */
    struct ps_gx_taprow *rows; /* tap->n_rows */
    int tap_span;          /* columns a piece reads beyond its outputs: the widest row or sum */
    ps_box tap_valid;      /* outputs whose inlined taps read inside their producers' domains */
    ps_tprog *tap2;        /* its form for several rows per call, NULL: none */
    struct ps_gx_taprow *rows2; /* tap2->n_rows */
    int tap2_span;
    /* Sibling sums (graph_taps.c): stencils of unit column stride reading
     * one tensor, whose steps coincide and follow each other, run as
     * one compiled loop at the first one's steps (the lead), so the input
     * elements their taps share are loaded once (Harris's Ix and Iy: 8
     * loads a point instead of 12, 12 for two rows). */
    int sib_lead;          /* the member computing this one with its own, -1: none */
    int n_sib;             /* the lead: members computed with it, sib[0 .. n_sib - 1] */
    int sib[PS_TAPM_MAX_OUT - 1];
    int sib_dy0, sib_dy1;  /* the lead: rows sy * y + dy0 .. sy * y + dy1 hold every sibling's taps */
    ps_tprog *stap, *stap2;/* the lead's program of one row per call and of two (NULL: none) */
    size_t scr_off;        /* floats from the thread area's start */
    int64_t scr_h, scr_rs; /* rows per channel (a ring: row y at slot (y - region start) mod scr_h)
                              and row stride of its scratch */
} ps_gx_member;

typedef struct ps_gx_group {
    int n;
    ps_gx_member *mem;
    int nothing_left;      /* a concatenation alone whose inputs all wrote their slices: nothing to run */
    /* A convolution alone in its group, reading and writing whole NHWC
     * tensors, runs as a layer plan (plan.h: PolyScientist's outer loops
     * around LIBXSMM kernels, K and C blocked for the caches) instead of
     * row by row; NULL otherwise. */
    struct ps_plan *layer;
    void *layer_weights;   /* packed for it */
    int layer_clamp;       /* clamp its output afterwards (an activation other than ReLU) */
    int64_t ty, tx;        /* reference tile */
    int64_t band;          /* reference rows per band: tiles run as bands of rows (multi-level tiling) */
    int64_t ti0, tj0, gy, gx; /* tile grid: indices ti0 .. ti0 + gy - 1, tj0 .. tj0 + gx - 1 */
    int64_t images;
    int *btile;            /* gy x gx: -1 interior tile, else row of bbox */
    int n_btiles;
    ps_box *bbox;          /* n_btiles x n regions of boundary tiles */
    size_t scratch_floats; /* per thread */
    ps_group_eval ev;
    double computed_pts, needed_pts;
    char *why;             /* why it was formed and kept apart from its consumers' groups */
    /* The tile programs. Tiles whose regions are the same up to a shift
     * (one kind for the interior, a few at the edges) run the same
     * sequence of steps: bands of rows, each band in chunks of columns
     * skewed member by member (seed 002's multi-level tiling: overlapped
     * tiles across cores, parallelogram tiles inside). Fixed at plan time. */
    int64_t chunk;         /* reference columns per chunk of a band */
    int n_kinds;
    int *kind_of;          /* gy x gx: the tile's kind */
    size_t *kind_first;    /* its first step */
    size_t *kind_len;      /* and their number */
    struct ps_gx_step *steps;
    size_t n_steps;
} ps_gx_group;

#define PS_TAP_ROWS_MAX 48     /* rows of one tap program */
/* Output rows per call of a tap program's several-row form: with a 3x3
 * sum, two rows read four of each input row instead of six and share the
 * producer's values at a third of their taps. (The C compiler leaves the
 * loop of four rows' bodies unvectorized.) */
#define PS_TAP_ROWS_PER_CALL 2

/* A row a tap program reads: for output row y and columns [x, x + n),
 * row sy * y + dy of the tensor of `stage` (its member's ring, or memory
 * where member < 0), channel 0 or the output's, columns [x + dx0, x + dx0
 * + n + span), the boundary bd applied outside its domain. */
typedef struct ps_gx_taprow {
    int stage, member;
    int chan0;
    int sy, dy;
    int dx0, span;
    ps_boundary bd;
    int ahead;             /* no other row of the program reads its next row: that one is requested ahead */
} ps_gx_taprow;

/* One step of a tile program: member k computes the rows and columns of
 * this box, offset from the member's region in the tile (whose corner
 * shifts with the tile; the box's shape does not). */
typedef struct ps_gx_step {
    int32_t k;
    int32_t y0, h, x0, w;
} ps_gx_step;

/* Per-stage executor facts. */
/* Taps of a box stage (ps_gx_stage.box_s): at most this many. */
#define PS_BOX_MAX_TAPS 64

typedef struct ps_gx_stage {
    int group;
    size_t ws_off;         /* workspace tensor offset in floats; SIZE_MAX: none */
    /* >= 0: the concatenation this stage is an input of stores it: the stage
     * is written straight into its channels [slice_c0, slice_c0 + c) of that
     * stage's tensor (pixel stride: its channel count), and ws_off is that
     * tensor's; -1: stored on its own */
    int slice_of;
    int64_t slice_c0;
    int sliced_inputs;     /* a concatenation: how many of its inputs write their slices themselves */
    /* its stored tensor lives in memory (ps_tensor_in_memory): readers
     * request its rows ahead of their first read */
    int prefetch;
    /* stencil rows: the distinct dy of the taps, and each tap's row */
    int n_rows;
    int *row_dy;
    int *tap_row;
    int dx_min, dx_max;
    /* > 0: a stencil of column stride 1 or 2 whose taps are a full grid of
     * n_rows x grid_s unit-spaced columns in row-major order (tap t in row
     * t / grid_s, column dx_min + t % grid_s), grid_s 3 or 5: as a sum on
     * pixel rows, the px_grid kernel, whose neighbouring pixels share their
     * loads */
    int grid_s;
    /* a planar sum whose taps are consecutive rows of one column in order
     * (dy[t] = dy[0] + t, dx 0, unit strides: blur_y): pairs of output rows
     * run as one sum_pair call, each input row loaded once for both */
    int vline;
    /* > 0: a planar sum of column stride 1 whose taps are every (row, column)
     * of its n_rows distinct rows and box_s consecutive columns from dx_min,
     * once each, all of weight 1 (a box filter): its value is defined as the
     * separable sum kernels.h box_sum computes (each column summed over the
     * rows in row_dy's order, the columns added to the bias in order), which
     * a compiled tap program computes once per column for the outputs that
     * share it; 0 otherwise (the sum in tap order) */
    int box_s;
    /* convolution on pixel rows: batch-reduce GEMMs over the taps of n
     * output pixels (m = K, k = C, ldb = stride * C, ldc = K, beta 1 over a
     * bias-filled block), conv_k[n] for n = 1 .. PS_CONV_NB */
    libxsmm_smmfunction_reducebatch_addr conv_k[PS_CONV_NB + 1];
} ps_gx_stage;

struct ps_graph_plan {
    int refs;              /* references: the caller's and the context cache's (atomic) */
    uint64_t key[2];       /* the cache key (graph content and options) */
    ps_context *ctx;
    int nthreads;
    ps_graph_options opts;
    ps_pipeline pipe;
    ps_gx_stage *xs;       /* pipe.n */
    int n_groups;
    ps_gx_group *groups;
    const ps_row_kernels *k;
    /* Columns per row-kernel call where the rows of a tensor in memory are
     * requested ahead (ps_gx_stage.prefetch): L1 / 64 (512 with 32 KiB), so
     * a piece's input rows of a 5-row stencil take a third of L1 and its
     * requests for the next rows, 32 lines, stay under the core's
     * outstanding misses and never stall the computation they overlap. */
    int64_t prefetch_piece;
    size_t ws_tensor_floats;  /* tensors between groups */
    size_t thread_floats;     /* per thread: scratch, staging, temporaries */
    size_t staging_floats, temp_floats, regs_floats, fused_floats, zero_floats, boxes_floats;
    int temp_rows;            /* temporary rows per thread: 2, or a tap program's rows per call */
    int max_members;
    size_t workspace_bytes;
    double plan_ms, fuse_ms;
    long dp_states, cost_evaluations;
    /* Expression programs compiled at plan time (lib/codegen): the loaded
     * object, programs in all and compiled, whether the object came from
     * the cache, the time it took, and why programs stayed interpreted. */
    void *code;
    int code_progs, code_compiled, code_cached;
    int code_taps, code_taps_compiled; /* tap programs (ps_gx_member.tap), in all and compiled */
    double code_ms;
    char code_why[200];
};

/* The rows each member of group g must have computed after band b of a
 * tile whose regions are B: hi[k], from the live-outs' own rows up to the
 * band's end back through what the members read (the band's right face).
 * done[k]: rows computed so far. The same function drives execution and the
 * plan-time sizing of the rings. Returns 0 after the tile's last band. */
/* Member m's own part of tile (ti, tj). */
static inline ps_box ps_member_own(const ps_gx_member *m, int64_t ti, int64_t tj)
{
    return (ps_box){m->own_y0 + m->own_h * ti, m->own_x0 + m->own_w * tj, m->own_h, m->own_w};
}

int ps_band_targets(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t ti, int64_t b,
                    const int64_t *done, int64_t *hi);
/* The columns each member must have computed, of its rows [done[k], hi[k])
 * of the band, after chunk c: hx[k], like ps_band_targets along x. xdone:
 * columns of those rows computed so far. Returns 0 after the band's last
 * chunk. */
int ps_chunk_targets(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t tj, int64_t c,
                     const int64_t *done, const int64_t *hi, const int64_t *xdone, int64_t *hx);
/* The lowest row of member k that the band's computation reads (its
 * consumers' new rows and its own copy-out), for ring sizing. */
int64_t ps_band_low(const ps_pipeline *p, const ps_gx_group *g, const ps_box *B, int64_t ti, int k, const int64_t *done,
                    const int64_t *hi);

/* Runs the plan (arguments already checked). workspace: workspace_bytes,
 * 64-byte aligned. group_ms: NULL, or n_groups slots that get each group's
 * wall time (PS_VERBOSE=2). */
void ps_graph_run(const ps_graph_plan *plan, const float *const *inputs, float *const *outputs, float *workspace,
                  double *group_ms);

#endif
