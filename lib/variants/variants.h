/* Internal: the variant space — candidate schedules for a problem.
 * Every generated schedule passes ps_schedule_check for the problem. */
#ifndef PS_VARIANTS_H
#define PS_VARIANTS_H

#include "descriptors/shape.h"
#include "polysci/schedule.h"

typedef struct ps_variant_set {
    int n;
    ps_schedule **items; /* owned */
} ps_variant_set;

/* Enumerates, in a deterministic order, the outer loops around the expert
 * microkernel (ps_expert_kernel) and a few narrower kernels:
 * reduction chunking (batch) x tilings x loop orders x parallel-band limits,
 * in tiers from the most to the least promising, at most PS_VARIANTS_MAX
 * (480) schedules. Schedules that differ only in loops of trip count 1 are
 * the same schedule: only the first is kept. */
ps_status ps_variants_generate(const ps_problem *p, ps_variant_set *out);
void ps_variant_set_release(ps_variant_set *set);

#endif
