/* Internal: the planner — chooses a schedule for a problem. */
#ifndef PS_RANKING_PLANNER_H
#define PS_RANKING_PLANNER_H

#include "descriptors/shape.h"
#include "expert/expert.h"
#include "plan/context_impl.h"
#include "polysci/plan.h"
#include "schedule/schedule_impl.h"

/* __give *out: the schedule for problem p on nthreads threads. Candidates,
 * each checked (ps_schedule_check) before it is used: the ranker's order
 * (for top_k > 1 the fastest of its k best and the expert schedule, timed
 * on this machine), the expert schedule (ps_expert_schedule), and last the
 * default loop order (ps_expert_default), valid by construction. A refused
 * candidate, or a ranking that fails, is noted on stderr under PS_VERBOSE
 * and the next one is tried, so a valid problem always plans; errors are
 * PS_ERR_OUT_OF_MEMORY, and PS_ERR_UNSUPPORTED for a ranker this build
 * lacks. *refused (optional): how many candidates were refused.
 * budget_ms > 0 (with top_k > 1): timing starts only where the expert
 * schedule's and the ranker's first choice's timings are predicted to end
 * within it (else the static default's choice: the expert schedule where
 * ranker is PS_RANKER_DEFAULT and the static default ranks none, else the
 * ranker's first, untimed); once planning has taken that long, the
 * candidates not yet timed are skipped. */
ps_status ps_planner_choose(ps_context *ctx, const ps_problem *p, int nthreads, ps_ranker ranker, int top_k,
                            double budget_ms, ps_schedule **out, int *refused);

/* The ranker PS_RANKER_DEFAULT stands for, per operation (and batch size),
 * machine (how fast its last-level cache is), with top_k timing or without. */
ps_ranker ps_planner_default_ranker(const ps_machine *m, const ps_problem *p, int top_k);

/* The facts of machine m that the expert schedule reads (its L1 and L2 per
 * core, last-level size, panel threshold, whether the last level is slow). */
ps_expert_facts ps_planner_expert_facts(const ps_machine *m);

#endif
