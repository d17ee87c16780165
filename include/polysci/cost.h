/* polysci — cost queries: ask the planner's model about a layer shape
 * without executing anything.
 *
 * For a descriptor the planner generates its candidate schedules, analyses
 * each one's cache working sets (see analysis.h), assigns every working set
 * to the fastest cache level it fits in (PolyScientist Alg. 2; per-thread for
 * private caches, all threads together for shared ones) and scores
 *     cost = sum_i WS_Li * lat_Li / bw_Li + WS_mem * lat_mem / bw_mem   (Eq. 1)
 * The report lists the variants in rank order (lowest cost first).
 *
 * PS_RANKER_DNN (PolyScientist-DNN, paper §5.2.2) ranks the same variants
 * with a pairwise neural model over their Alg. 2 working sets and the shape
 * statistics below (kernel, parallel band, reduction steps): every
 * variant plays every other twice (once as each side of the pair); the
 * report lists them by most games won, then fewest lost, then Eq. 1 order
 * (docs/cost-model.md, "DNN ranker"). */
#ifndef POLYSCI_COST_H
#define POLYSCI_COST_H

#include <stddef.h>
#include "polysci/export.h"
#include "polysci/status.h"
#include "polysci/context.h"
#include "polysci/desc.h"
#include "polysci/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_cost_report ps_cost_report;

/* Working-set buckets of Alg. 2. */
#define PS_COST_L1 0
#define PS_COST_L2 1
#define PS_COST_L3 2
#define PS_COST_MEM 3
#define PS_COST_LEVELS 4

typedef struct ps_variant_cost {
    int rank;                 /* 1 = the planner's first choice */
    const char *schedule;     /* text form; owned by the report */
    double cost;              /* Eq. 1 (lower is better); for PS_RANKER_DNN the
                                 tournament's losses (games lost, of 2 per other
                                 variant), for comparison only: not sorted */
    double ws_bytes[PS_COST_LEVELS]; /* bytes of working sets served by L1, L2, L3, memory */
    /* How the variant shapes the work (the DNN ranker's inputs beside the
     * working sets): the microkernel, the parallel band's iterations and how
     * evenly the plan's threads split them (iterations / (threads *
     * ceil(iterations / threads))), and the reduction steps (microkernel
     * calls along the reduction dimension, each covering kernel_k *
     * kernel_batch of it). */
    int kernel_m, kernel_n, kernel_k, kernel_batch;
    long long parallel_iterations;
    double parallel_efficiency;
    long long reduction_steps;
} ps_variant_cost;

/* __give *out: the ranked variants for desc. opts may be NULL; its
 * num_threads and ranker (PS_RANKER_COST — also for PS_RANKER_DEFAULT —,
 * PS_RANKER_VOLUME or PS_RANKER_DNN; PS_RANKER_NONE: PS_ERR_UNSUPPORTED) are
 * used; schedule, top_k and flags are ignored. */
PS_API ps_status ps_cost_query(ps_context *ctx, const ps_desc *desc, const ps_plan_options *opts,
                               ps_cost_report **out);
PS_API int ps_cost_report_size(const ps_cost_report *report);
/* Variant at rank index i (0-based; ranks ascend). */
PS_API ps_status ps_cost_report_get(const ps_cost_report *report, int i, ps_variant_cost *out);
/* {"n_variants": N, "variants": [{"rank": 1, "schedule": "...", "cost": c,
 *   "ws_bytes": {"L1": .., "L2": .., "L3": .., "mem": ..},
 *   "kernel": [m, n, k, batch], "parallel_iterations": .., "parallel_efficiency": ..,
 *   "reduction_steps": ..}, ...]} with the
 * first `top` variants (all when top <= 0). snprintf-like. */
PS_API ps_status ps_cost_report_to_json(const ps_cost_report *report, int top, char *buf, size_t len,
                                        size_t *needed);
/* __take. NULL is a no-op. */
PS_API void ps_cost_report_destroy(ps_cost_report *report);

#ifdef __cplusplus
}
#endif
#endif
