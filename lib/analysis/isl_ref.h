/* Internal: the element-level isl model of an analysed loop nest and
 * exact counting of isl sets (used by the PS_ANALYSIS_ISL method and by the
 * tests that check the closed form against isl). */
#ifndef PS_ANALYSIS_ISL_REF_H
#define PS_ANALYSIS_ISL_REF_H

#include <isl/ctx.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "analysis/model.h"

/* The isl model of the stream of thread `thread` (-1: all threads):
 *   domain:   { S[l_0 .. l_{L-1}, n, k, oh, ow, c, r, s] } — the level keys
 *             (uniform levels: index in the parent range or, below a breaks
 *             level, the global block number; breaks levels: global piece
 *             number) followed by the element coordinates;
 *   reads:    S -> I/Wt/O (or B/A/C) elements, writes: S -> O (C);
 *   schedule: S -> [l_0 .. l_{L-1}] (lexicographic order of the keys).
 * Every object is __give to the caller. */
typedef struct psa_isl_model {
    isl_union_set *domain;
    isl_union_map *reads, *writes, *schedule;
} psa_isl_model;

ps_status psa_isl_build(isl_ctx *ctx, const psa_model *m, int thread, psa_isl_model *out);
void psa_isl_model_free(psa_isl_model *im);

/* Number of points of a bounded set: a product of the per-dimension ranges
 * when the set is a box, else isl_set_count_val. -1 on error. __keep set. */
int64_t psa_isl_count(__isl_keep isl_set *set);

#endif
