/* Internal: the variant space — candidate schedules for a descriptor.
 * Every generated schedule passes ps_schedule_check for the descriptor. */
#ifndef PS_VARIANTS_H
#define PS_VARIANTS_H

#include "polysci/schedule.h"

typedef struct ps_variant_set {
    int n;
    ps_schedule **items; /* owned */
} ps_variant_set;

/* Enumerates, in a deterministic order, the outer loops around the expert
 * microkernel (ps_schedule_expert_kernel): reduction chunking (batch) x loop
 * orders x tilings; the parallel band is the longest prefix of loops before
 * the reduction loop. */
ps_status ps_variants_generate(const ps_desc *desc, ps_variant_set *out);
void ps_variant_set_release(ps_variant_set *set);

#endif
