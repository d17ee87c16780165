/* Internal to lib/fusion: the planner state shared by cost.c and fuse.c. */
#ifndef PS_FUSION_IMPL_H
#define PS_FUSION_IMPL_H

#include "fusion/fusion.h"

typedef struct ps_cost_entry {
    uint64_t *key;       /* member bitset over stages */
    ps_group_eval ev;
} ps_cost_entry;

struct ps_fusion_state {
    isl_ctx *isl;
    ps_region_cache *regions; /* isl images of tile regions, cached */
    const ps_pipeline *p;
    ps_cost_model cm;
    int words;               /* uint64 words of a stage bitset */
    ps_cost_entry *memo;     /* open addressing */
    size_t memo_cap, memo_n;
    long evaluations;
};

/* COST without the memo. */
ps_status ps_group_cost_uncached(ps_fusion_state *fs, const int *m, int n, ps_group_eval *ev);

/* The reference-space rectangle the group's live-outs cover. */
void ps_group_extent(const ps_pipeline *p, const ps_group_geom *g, double *y0, double *y1, double *x0, double *x1);

#endif
