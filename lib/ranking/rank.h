/* Internal: poly-ranking (PolyScientist §5.2): Alg. 2 and the Eq. 1 cost. */
#ifndef PS_RANKING_RANK_H
#define PS_RANKING_RANK_H

#include "polysci/analysis.h"
#include "polysci/cost.h"
#include "machine/machine.h"
#include "descriptors/shape.h"
#include "variants/variants.h"

/* How a variant shapes the work, beside its working sets: what the DNN
 * ranker sees in addition to the paper's inputs (docs/cost-model.md, "DNN
 * ranker"), and what ps_cost_query reports. */
enum {
    PS_SHAPE_KERNEL_M,   /* microkernel m (conv: output-channel block) */
    PS_SHAPE_KERNEL_N,   /* microkernel n (conv: output-column block) */
    PS_SHAPE_KERNEL_KB,  /* microkernel k * batch: reduction per call (conv: per filter tap) */
    PS_SHAPE_PAR_ITERS,  /* iterations of the parallel band (its loops' trips multiplied; 1: none) */
    PS_SHAPE_PAR_EFF,    /* par_iters / (threads * ceil(par_iters / threads)): balance of the split */
    PS_SHAPE_RED_STEPS,  /* reduction steps: the tile-space extent of the reduction dimension */
    PS_SHAPE_COUNT
};

typedef struct ps_ranked {
    ps_schedule *schedule;           /* owned */
    double cost;
    double ws[PS_COST_LEVELS];       /* Alg. 2 sums: L1, L2, L3, memory (bytes) */
    double shape[PS_SHAPE_COUNT];    /* ps_rank_shape */
    int index;                       /* position in generation order (stable tie-break) */
    int wins, losses;                /* PS_RANKER_DNN: tournament games won and lost (else 0) */
} ps_ranked;

typedef struct ps_ranking {
    int n;
    ps_ranked *v;                    /* ascending cost after ps_rank_variants */
    int exact;                       /* leading places that are final (n unless a
                                        tournament was cut short: ps_dnn_tournament_top) */
} ps_ranking;

/* Alg. 2: every working set (WSmin and WSmax of every dependence) goes to the
 * fastest level that holds it — a private cache must hold one thread's set
 * (cross-thread reuse cannot happen there), a shared one the set of all the
 * threads sharing it — else to memory. */
void ps_rank_alg2(const ps_machine *m, int nthreads, const ps_analysis *a, double ws[PS_COST_LEVELS]);
/* The PS_SHAPE_* statistics of a (valid) single-stage schedule for problem p
 * on nthreads threads (<= 1: one). The executor splits the collapsed
 * parallel band into nthreads contiguous equal parts (lib/execution/run.c). */
void ps_rank_shape(const ps_problem *p, const ps_schedule *sched, int nthreads, double shape[PS_SHAPE_COUNT]);
/* How evenly the executor's split of the parallel band shares the work
 * among nthreads threads: the points all threads compute over nthreads
 * times what the busiest one computes (1: even; a band of fewer iterations
 * than threads leaves threads idle and reads below 1). Unlike PS_SHAPE_PAR_EFF
 * it weighs each band iteration by its points, so partial tiles at the
 * ends of K and OW count for what they hold. Bands of more than
 * PS_BALANCE_MAX_ITERS iterations are taken as even (their remainders are
 * a small part of any share). */
#define PS_BALANCE_MAX_ITERS 4096
double ps_rank_balance(const ps_problem *p, const ps_schedule *sched, int nthreads);
/* Eq. 1. */
double ps_rank_eq1(const ps_machine *m, const double ws[PS_COST_LEVELS]);

/* Generates and costs every variant, then sorts by cost. ranker:
 * PS_RANKER_COST (isl working sets, Alg. 2, Eq. 1), PS_RANKER_VOLUME
 * (data volumes per level, Eq. 1 weights) or PS_RANKER_DNN (the Eq. 1
 * ranking reordered by the shipped model's tournament, ps_dnn_tournament). */
ps_status ps_rank_variants(const ps_machine *m, const ps_problem *p, int nthreads, ps_ranker ranker, ps_ranking *out);
/* The same where only the first `top` places must be final (> 0; the DNN's
 * tournament then plays only what can decide them: out->exact >= top). */
ps_status ps_rank_variants_top(const ps_machine *m, const ps_problem *p, int nthreads, ps_ranker ranker, int top,
                               ps_ranking *out);
/* Makes every place of a ranking from ps_rank_variants_top final (the full
 * tournament from Eq. 1's order); nothing to do where out->exact == n. */
ps_status ps_ranking_complete(ps_ranking *r, int nthreads);
void ps_ranking_release(ps_ranking *r);

#endif
