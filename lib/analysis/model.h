/* Internal: the loop nest an analysis looks at, as levels over element
 * coordinates.
 *
 * Every iteration ("instance") of the analysed nest is one element-level
 * multiply-add of the loop-equivalent code; it is identified by seven element
 * coordinates (n, k, oh, ow, c, r, s) — for GEMMs and the Figure-4 matmul
 * k = row i of C, ow = column j, c = reduction index, the others 0 — and
 * executed in the lexicographic order of its level indices.
 *
 * A level narrows the current range [lo, hi) of one coordinate: a uniform
 * level of step g iterates x = lo, lo+g, ... (< hi) and narrows to
 * [x, min(x+g, hi)); a "breaks" level splits [lo, hi) at the global
 * breakpoints that fall strictly inside it and iterates the pieces; the
 * "seg" level (conv) iterates the executor's segments of the current
 * ow-block: groups of consecutive filter columns s valid on the same run of
 * output columns, the group spanning the whole block first, then the others
 * in s order (its pieces are ranges of s, not in increasing order). The
 * index of a level is the iteration number within its parent range. Schedule
 * loops are uniform levels of step tile*unit (unit: elements per tile-space
 * step of the dimension); the microkernel adds its element loops. An
 * instance exists where every coordinate range is one element and the filter
 * tap is inside the image: 0 <= oh*sh - pt + r*dh < H and
 * 0 <= ow*sw - pl + s*dw < W (always true for GEMMs: H = 1, W = N).
 *
 * Accesses (element coordinates):
 *   array IN  (conv I / gemm B): (n, oh*sh-pt+r*dh, ow*sw-pl+s*dw, c)  read
 *   array WT  (conv Wt / gemm A): (k, c, r, s)                          read
 *   array OUT (conv O / gemm C): (n, oh, ow, k)                         read, then written
 */
#ifndef PS_ANALYSIS_MODEL_H
#define PS_ANALYSIS_MODEL_H

#include <stdint.h>

#include "polysci/desc.h"
#include "polysci/schedule.h"
#include "polysci/status.h"
#include "schedule/schedule_impl.h"

enum { PSA_CN, PSA_CK, PSA_COH, PSA_COW, PSA_CC, PSA_CR, PSA_CS, PSA_NCOORD };
enum { PSA_IN, PSA_WT, PSA_OUT, PSA_NARR };

#define PSA_MAX_LEVELS (PS_SCHEDULE_MAX_LOOPS + 8)
#define PSA_INF INT64_MAX /* "to the end" as a level index bound */

typedef enum psa_op { PSA_OP_CONV = 0, PSA_OP_GEMM = 1, PSA_OP_MATMUL = 2 } psa_op;

typedef struct psa_level {
    int coord;      /* PSA_C* */
    int64_t g;      /* uniform step in elements; 0 for a breaks level */
    int brk;        /* breaks list index (model.brk), -1 otherwise */
    int segs;       /* the conv segment level (coordinate s) */
    int tile_dim;   /* ps_dim of a schedule loop, -1 for a microkernel level */
    int64_t tile;   /* schedule tile (tile-space steps); 0 for microkernel levels */
    int parallel;   /* member of the parallel band */
    char name[32];  /* "n", "k:4", "seg", "r", ... */
} psa_level;

typedef struct psa_breaks {
    int n;
    int64_t *v;     /* sorted, strictly increasing; owned by the model */
} psa_breaks;

typedef struct psa_model {
    psa_op op;
    int64_t ext[PSA_NCOORD];          /* element extents of the coordinates */
    int64_t H, W, sh, sw, pt, pl, dh, dw;
    int64_t arr_ext[PSA_NARR][4];     /* extents of the arrays' dimensions */
    const char *arr_name[PSA_NARR];
    int order[PSA_NARR];              /* arrays in report order */
    int nlev;
    psa_level lev[PSA_MAX_LEVELS];
    int nband;                        /* levels 0 .. nband-1 form the parallel band */
    int64_t band_trip[PS_SCHEDULE_MAX_LOOPS]; /* fixed trip counts, as the executor collapses them */
    int64_t T;                        /* collapsed band iterations (1 without a band) */
    int nthreads;                     /* >= 1 */
    psa_breaks brk[2];                /* 1: C parts (0 unused) */
    /* Conv segments: per ow-block b (columns [b*seg_n, (b+1)*seg_n)), pieces
     * seg_off[b] .. seg_off[b+1]-1 in execution order, each the filter
     * columns [seg_slo, seg_shi). Owned by the model. */
    int64_t seg_n, seg_nblocks, seg_maxp;
    int64_t *seg_off, *seg_slo, *seg_shi;
    /* Conv with few input channels (build.c `merge_taps`): a call reduces
     * over (s, c) per filter row: microkernel order r, ow, s, c, k (the
     * executor's q column phases per call are not modelled). */
    int merge_taps;
} psa_model;

/* __give *m: the model of a conv or gemm descriptor run by `sched` with
 * `nthreads` threads. Checks the descriptor and the schedule. */
ps_status psa_model_from_schedule(const ps_desc *desc, const ps_schedule *sched, int nthreads, psa_model *m);
/* __give *m: Figure 4 matmul with loops in `order` (a permutation of "ijk"). */
ps_status psa_model_matmul(int64_t M, int64_t N, int64_t K, const char *order, psa_model *m);
/* __take the breakpoint lists. */
void psa_model_release(psa_model *m);

/* Thread t's share [*b, *e) of the collapsed band. */
void psa_thread_chunk(const psa_model *m, int t, int64_t *b, int64_t *e);
/* The thread analysed per thread: the first with a nonempty share (it owns
 * band iteration 0). */
int psa_rep_thread(const psa_model *m);
/* Band level indices of collapsed band iteration g (row-major, fixed trips). */
void psa_band_decode(const psa_model *m, int64_t g, int64_t *idx);

/* Element of array `arr` accessed by the instance with coordinates x. */
void psa_access(const psa_model *m, int arr, const int64_t x[PSA_NCOORD], int64_t e[4]);

/* Whether array arr depends on tile dimension d (conv: I on N, OH, OW, C;
 * Wt on K, C; O on N, K, OH, OW). */
int psa_array_uses_dim(int arr, int d);

#endif
