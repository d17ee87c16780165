/* Internal: grouping the pipeline's stages into fused groups (seed 002).
 *
 * COST(H) is PolyMage's Alg. 2: tile sizes from the footprint per core
 * within L1 (else L2, when the overlap outgrows the tile), then
 *   w1 (live-in + live-out bytes per tile) / points computed per tile
 * - w2 ((tiles + cores - 1) mod cores)
 * + w3 overlap bytes per tile / tile footprint
 * + w4 spread of the members' extents,
 * with the footprints and overlaps from the isl regions of the candidate
 * group (tiling.h). ps_fuse forms the groups with the dynamic programme of
 * Alg. 1 (bounded and repeated as Alg. 5 on large graphs), greedily, one
 * stage per group, or as the caller fixed them. */
#ifndef PS_FUSION_H
#define PS_FUSION_H

#include <isl/ctx.h>

#include "fusion/pipeline.h"
#include "machine/machine.h"
#include "tiling/tiling.h"

typedef struct ps_cost_model {
    double w[4];          /* w1..w4 */
    int64_t innermost;    /* innermost tile size (PolyMage's 256) */
    size_t cache[2];      /* L1, L2 bytes per core */
    int cores;
    int64_t force_ty, force_tx; /* > 0: tile sizes fixed by the caller */
} ps_cost_model;

/* The model for machine m and `threads` threads. */
void ps_cost_model_init(ps_cost_model *cm, const ps_machine *m, int threads);

typedef struct ps_group_eval {
    int legal;
    char why[192];
    double cost;
    int64_t ty, tx;       /* reference tile */
    int level;            /* cache level the tile sizes were chosen for (1, 2; 0 = forced) */
    double terms[4];      /* the four terms, unweighted */
    double overlap;       /* redundant points / needed points per interior tile */
    int64_t tiles;        /* tiles per image */
} ps_group_eval;

typedef struct ps_fusion_state ps_fusion_state;

/* __give: a planner over pipeline p (kept, not copied); isl ctx kept. */
ps_fusion_state *ps_fusion_state_create(isl_ctx *ctx, const ps_pipeline *p, const ps_cost_model *cm);
void ps_fusion_state_destroy(ps_fusion_state *fs);

/* COST of the group of the n stages in m (memoized). PS_SUCCESS with
 * ev->legal = 0 for a group that cannot be tiled. */
ps_status ps_group_evaluate(ps_fusion_state *fs, const int *m, int n, ps_group_eval *ev);

/* Groups the computing stages: group_of[s] (stage index -> group number
 * 0..*n_groups-1, -1 for graph inputs), groups numbered in an order in which
 * every group comes after the groups it reads. fixed: for PS_FUSION_FIXED,
 * the user's numbers per graph tensor mapped to stages by the caller
 * (group_in[s]). group_limit: Alg. 5's first bound (0: automatic). */
ps_status ps_fuse(ps_fusion_state *fs, ps_fusion mode, const int *group_in, int group_limit, int *group_of,
                  int *n_groups, double *search_ms, long *states);

#endif
