/* Internal: the planner — chooses a schedule for a descriptor. */
#ifndef PS_RANKING_PLANNER_H
#define PS_RANKING_PLANNER_H

#include "polysci/plan.h"
#include "plan/context_impl.h"
#include "schedule/schedule_impl.h"

/* __give *out: the schedule the ranker puts first (for top_k > 1: the
 * fastest of the k best when timed on this machine). */
ps_status ps_planner_choose(ps_context *ctx, const ps_desc *desc, int nthreads, ps_ranker ranker, int top_k,
                            ps_schedule **out);

/* The ranker PS_RANKER_DEFAULT stands for, per operation (and batch size),
 * machine (how fast its last-level cache is), with top_k timing or without. */
ps_ranker ps_planner_default_ranker(const ps_machine *m, const ps_desc *desc, int top_k);

/* The facts of machine m that the expert schedule reads (its L2 per core,
 * last-level size, panel threshold, whether the last level is slow). */
ps_expert_facts ps_planner_expert_facts(const ps_machine *m);

#endif
