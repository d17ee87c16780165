/* Internal: the closed-form working-set engine and the isl reference.
 *
 * Both compute, per array, the dependence of Algorithm 1 in the model of
 * model.h and docs/analysis.md: the lexicographically first source
 * iteration (the first iteration of the analysed stream whose element of
 * that array is accessed again later in the stream), its first and last
 * target (the next and the last later access of that element), and the
 * number of distinct elements of all arrays accessed from the source to each
 * target, both included. */
#ifndef PS_ANALYSIS_ENGINE_H
#define PS_ANALYSIS_ENGINE_H

#include <stdint.h>

#include "analysis/model.h"

typedef struct psa_dep {
    int exists;        /* the array's elements are reused at all */
    int shared_only;   /* only between different threads (see docs/analysis.md) */
    int64_t src[PSA_MAX_LEVELS], tmin[PSA_MAX_LEVELS], tmax[PSA_MAX_LEVELS]; /* level indices */
    int64_t ws_min, ws_max;                        /* per thread, all arrays */
    int64_t ws_min_arr[PSA_NARR], ws_max_arr[PSA_NARR];
    int64_t mult[PSA_NARR];                        /* threads with distinct slices of each array */
    int64_t ws_min_shared, ws_max_shared;          /* sum over arrays of mult * per-thread count */
} psa_dep;

/* Closed form: dep[arr] for every array (indexed PSA_IN, PSA_WT, PSA_OUT). */
ps_status psa_analyze_fast(const psa_model *m, psa_dep dep[PSA_NARR]);

/* Algorithm 1 on an element-level isl model of the stream of the
 * representative thread; dep[kind][arr] (kinds PS_DEP_RAR..WAW; entries that
 * do not exist have exists = 0). Cross-thread-only reuse is not searched
 * for. Small problems only. */
ps_status psa_analyze_isl(const psa_model *m, psa_dep dep[4][PSA_NARR]);

/* Fills dep->mult and the shared working sets from the per-array counts
 * (shared by both methods). */
void psa_fill_shared(const psa_model *m, psa_dep *dep);

/* Coordinates of the instance with level indices idx; 0 if there is none. */
int psa_coords_of(const psa_model *m, const int64_t *idx, int64_t x[PSA_NCOORD]);
/* Level indices of the instance with coordinates x (x must be one). */
void psa_index_of(const psa_model *m, const int64_t x[PSA_NCOORD], int64_t *idx);

#endif
