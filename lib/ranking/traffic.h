/* Internal: data-movement estimate of a schedule, per cache level.
 *
 * Eq. 1 of the paper weighs working-set *sizes*; measured on ResNet-50 its
 * ranking did not correlate with run time (docs/performance.md). This model
 * weighs *volumes*: for a cache of capacity Z, walk the loop nest from the
 * innermost loop outwards to the first loop whose whole footprint exceeds Z;
 * data its body touches is refetched on every iteration of that loop (and of
 * the loops around it) unless it does not depend on that loop's dimension.
 * Output tiles revisited across reduction chunks count twice (read + write). */
#ifndef PS_RANKING_TRAFFIC_H
#define PS_RANKING_TRAFFIC_H

#include "machine/machine.h"
#include "polysci/cost.h"
#include "schedule/schedule_impl.h"

/* Bytes moved into each level from the one below (L1, L2, L3 from the next
 * level; memory = bytes read from DRAM), per thread. */
void ps_traffic_estimate(const ps_machine *m, const ps_problem *p, const ps_schedule *s, int nthreads,
                         double bytes[PS_COST_LEVELS]);

/* Eq. 1 with volumes: sum over levels of bytes * lat / bw. */
double ps_traffic_cost(const ps_machine *m, const double bytes[PS_COST_LEVELS]);

#endif
