/* Internal: grouping the pipeline's stages into fused groups (seed 002).
 *
 * COST(H) follows PolyMage's Alg. 2: tile sizes from the footprint per core
 * within L1 (else L2, when the overlap outgrows the tile), then its four
 * terms over the isl regions of the candidate group (tiling.h):
 *   t1 live-in + live-out bytes per point computed,
 *   t2 load balance: the share of the cores' rounds of tiles that are busy
 *      (the paper counts the tiles of a last, partial round),
 *   t3 relative overlap: redundant points per point of the tile's own share,
 *   t4 spread of the members' extents.
 * The weights come from the machine model rather than the paper's
 * hand-fitted Table 2: t1 is weighted by the time a byte takes from memory,
 * t3 by the time a point's arithmetic takes, t2 scales the whole by the
 * cores a partial round leaves idle, and the group's points make the cost
 * extensive, so the sum the DP minimises over groups estimates the
 * pipeline's time (seconds):
 *   cost = points x [t1 / bandwidth + (1 + t3) x flops per point / peak]
 *          x (1 + w4 t4) / balance(t2).
 * ps_fuse forms the groups with the dynamic programme of Alg. 1 (bounded
 * and repeated as Alg. 5 on large graphs), greedily, one stage per group,
 * or as the caller fixed them. */
#ifndef PS_FUSION_H
#define PS_FUSION_H

#include <isl/ctx.h>

#include "fusion/pipeline.h"
#include "machine/machine.h"
#include "tiling/tiling.h"

typedef struct ps_cost_model {
    double bandwidth;     /* bytes/s from memory, all threads */
    double flops;         /* floating-point operations/s the row kernels sustain, all threads */
    /* Convolutions (graph_dl.h): what their two executors sustain, all
     * threads: a convolution alone in its group runs as a layer plan (K and
     * C blocked, weights in cache, near the FMA peak); one fused with
     * others runs a batch-reduce GEMM per PS_CONV_NB pixels of a row, which
     * streams all its weights per call, from L2 when they fit half of it,
     * else from the last-level cache. */
    double conv_layer_flops, conv_row_flops;
    double l2_bandwidth, llc_bandwidth; /* bytes/s, all threads */
    /* Last-level cache bytes (all cores'; 0: none known): a tensor of at
     * most half of it, written by one group and read by a later one, is
     * still there when it is read, and moves at llc_bandwidth */
    size_t llc_bytes;
    double w4;            /* weight of the extent spread */
    int64_t innermost;    /* innermost tile size (PolyMage's 256) */
    size_t cache[2];      /* L1, L2 bytes per core */
    int cores;
    int64_t force_ty, force_tx; /* > 0: tile sizes fixed by the caller */
} ps_cost_model;

/* The model for machine m and `threads` threads. */
void ps_cost_model_init(ps_cost_model *cm, const ps_machine *m, int threads);

/* Whether stage S's stored tensor lives in memory rather than the
 * last-level cache: it takes more than half of that cache (the other half
 * for the weights and the other tensors in flight). */
int ps_tensor_in_memory(const ps_cost_model *cm, const ps_pstage *S);

typedef struct ps_group_eval {
    int legal;
    char why[192];
    double cost;
    int64_t ty, tx;       /* reference tile */
    int64_t chunk;        /* reference columns per chunk of a band (tx: whole rows) */
    int level;            /* cache level the tile sizes were chosen for (1, 2; 0 = forced) */
    double terms[4];      /* t1 bytes/point, t2 cores busy (0..1), t3 relative overlap, t4 extent spread */
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
