/* polysci — cache data-reuse analysis of a schedule (PolyScientist §5.1,
 * Algorithm 1): for every data dependence (reuse) of the loop nest a schedule
 * runs, the working sets WSmin and WSmax — the number of distinct array
 * elements touched between the dependence's first source iteration and its
 * first / last target iteration. The planner ranks schedules with them;
 * `polysci analyze` prints them. See docs/analysis.md for the exact model.
 *
 *   ps_analysis *a;
 *   ps_analysis_create(&desc, sched, NULL, &a);      (or ps_analysis_create_matmul)
 *   for (int i = 0; i < ps_analysis_num_dependences(a); i++)
 *       ... ps_analysis_dep_array(a, i), ps_analysis_dep_kind(a, i),
 *           ps_analysis_dep_ws_min(a, i), ps_analysis_dep_ws_max(a, i) ...
 *   ps_analysis_destroy(a);
 *
 * What is analysed is the loop-equivalent code of what the executor runs:
 * the schedule's loops around the microkernel, whose BRGEMM calls are
 * replaced by their element loops (conv: per padding-edge segment of the
 * ow-block, per C part, batch r, s, c-block, then ow, c, k — with few input
 * channels per filter row ow, s, c, k; gemm:
 * per C part, then j, kk, i).
 * Arrays: conv "I" (input, NHWC), "Wt" (weights, one element per k,c,r,s), "O" (output); gemm and
 * matmul "A", "B", "C" (C[M][N] += A[M][K] B[K][N]). Inputs only give read-after-read reuse; every
 * output element is read and written by each iteration touching it, so its
 * RAR, RAW, WAR and WAW dependences coincide and are all listed.
 *
 * Parallel schedules: with num_threads > 1 the parallel band is split as the
 * executor does; working sets are those of one thread (the one owning the
 * band's first iteration); the *_shared values estimate what a cache shared
 * by all threads must hold over the same interval. A reuse that only exists
 * between different threads is listed with shared_only = 1.
 *
 * An analysis is immutable after creation and may be read from several
 * threads at once. */
#ifndef POLYSCI_ANALYSIS_H
#define POLYSCI_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "polysci/export.h"
#include "polysci/status.h"
#include "polysci/desc.h"
#include "polysci/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_analysis ps_analysis;

typedef enum ps_dep_kind {
    PS_DEP_RAR = 0, /* read after read */
    PS_DEP_RAW = 1, /* read after write (flow) */
    PS_DEP_WAR = 2, /* write after read (anti) */
    PS_DEP_WAW = 3  /* write after write (output) */
} ps_dep_kind;

typedef enum ps_analysis_method {
    PS_ANALYSIS_FAST = 0, /* closed form over boxes of the loop nest: microseconds, any size (default) */
    PS_ANALYSIS_ISL = 1   /* Algorithm 1 literally on an element-level isl model: reference, small problems only */
} ps_analysis_method;

typedef struct ps_analysis_options {
    size_t struct_size;        /* sizeof(ps_analysis_options); set by ps_analysis_options_init */
    int num_threads;           /* threads the parallel band is split over; 0 or 1: one thread */
    ps_analysis_method method;
} ps_analysis_options;

/* Fills *opts with defaults (1 thread, PS_ANALYSIS_FAST). */
PS_API void ps_analysis_options_init(ps_analysis_options *opts);

/* __give *out: the analysis of `sched` running `desc` (conv or gemm; the
 * schedule must be valid for the descriptor). opts may be NULL. On error *out
 * is set to NULL. */
PS_API ps_status ps_analysis_create(const ps_desc *desc, const ps_schedule *sched, const ps_analysis_options *opts,
                             ps_analysis **out);

/* __give *out: the analysis of the paper's Figure 4 matrix multiplication
 *     for (i < M) for (j < N) for (k < K) C[i][j] += A[i][k] * B[k][j];
 * with its three loops in `order`, a permutation of "ijk" ("ijk", "ikj",
 * "jik", ...). Row-major element indices as in the figure; element counts
 * do not depend on the layout. opts may be NULL (num_threads is ignored:
 * the figure has no parallel loop). */
PS_API ps_status ps_analysis_create_matmul(int64_t M, int64_t N, int64_t K, const char *order,
                                    const ps_analysis_options *opts, ps_analysis **out);

/* __take. NULL is a no-op. */
PS_API void ps_analysis_destroy(ps_analysis *a);

/* Number of dependences found (0 when no element is ever reused). */
PS_API int ps_analysis_num_dependences(const ps_analysis *a);

typedef struct ps_dependence_info {
    const char *array;         /* "I", "Wt", "O" / "A", "B", "C"; owned by the analysis */
    ps_dep_kind kind;
    const char *kind_name;     /* "RAR", "RAW", "WAR", "WAW" */
    int64_t ws_min, ws_max;    /* distinct elements, all arrays, per thread */
    int64_t ws_min_bytes, ws_max_bytes;
    int64_t ws_min_shared, ws_max_shared;             /* all threads together (== per thread with 1 thread) */
    int64_t ws_min_shared_bytes, ws_max_shared_bytes;
    int shared_only;           /* 1: the reuse only exists between different threads */
} ps_dependence_info;

/* Fills *info for dependence i (0 <= i < ps_analysis_num_dependences). */
PS_API ps_status ps_analysis_get_dependence(const ps_analysis *a, int i, ps_dependence_info *info);

/* Single fields of dependence i; NULL / -1 when a or i is invalid. */
PS_API const char *ps_analysis_dep_array(const ps_analysis *a, int i);
PS_API const char *ps_analysis_dep_kind(const ps_analysis *a, int i);
PS_API int64_t ps_analysis_dep_ws_min(const ps_analysis *a, int i);
PS_API int64_t ps_analysis_dep_ws_max(const ps_analysis *a, int i);
PS_API int64_t ps_analysis_dep_ws_min_bytes(const ps_analysis *a, int i);
PS_API int64_t ps_analysis_dep_ws_max_bytes(const ps_analysis *a, int i);

/* Bytes of one array element (4: f32). */
PS_API int ps_analysis_element_bytes(const ps_analysis *a);

/* The analysis as JSON, snprintf-like: always NUL-terminated when len > 0;
 * *needed (optional) gets the length without NUL; PS_ERR_BUFFER_TOO_SMALL if
 * it did not fit. Format (one line):
 *   {"op": "conv", "num_threads": 1, "element_bytes": 4, "loops": ["n", ...],
 *    "dependences": [{"array": "A", "kind": "RAR", "ws_min": 131, "ws_max": 3121,
 *      "ws_min_bytes": 524, "ws_max_bytes": 12484, "ws_min_shared": ...,
 *      "ws_max_shared": ..., "ws_min_shared_bytes": ..., "ws_max_shared_bytes": ...,
 *      "shared_only": false, "source": [...], "min_target": [...], "max_target": [...]}, ...]}
 * "loops" names the loop levels of the analysed nest, outermost first
 * (schedule loops, then the microkernel's loop-equivalent loops: conv "seg",
 * "part", "r", "s", "cb", "ow_e", "c_e", "k_e"; gemm "part", "j", "kk", "i";
 * levels with a single iteration are left out); source and targets are
 * iterations given as one index per level (index within the parent range). */
PS_API ps_status ps_analysis_to_json(const ps_analysis *a, char *buf, size_t len, size_t *needed);

/* The same JSON followed by a newline, written to f. */
PS_API ps_status ps_analysis_write_json(const ps_analysis *a, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
