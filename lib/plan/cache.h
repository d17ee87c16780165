/* Internal: the context's plan cache and the canonical text of plan keys. */
#ifndef PS_PLAN_CACHE_H
#define PS_PLAN_CACHE_H

#include <stddef.h>

#include "polysci/plan.h"
#include "plan/context_impl.h"

/* Canonical, parseable text of what determines the planner's choice:
 * the descriptor and the planning options (threads, ranker, top_k and,
 * where it limits timing, the budget). */
int ps_plan_key(const ps_desc *desc, int nthreads, ps_ranker ranker, int top_k, double budget_ms, char *buf,
                size_t len);
/* Parses a key back; PS_ERR_PARSE if it is not one ps_plan_key writes. */
ps_status ps_plan_key_parse(const char *key, ps_desc *desc, int *nthreads, ps_ranker *ranker, int *top_k,
                            double *budget_ms);

void ps_cache_init(ps_context *ctx);
void ps_cache_release(ps_context *ctx);
/* __give a copy of the cached schedule for key, or NULL. */
ps_schedule *ps_cache_lookup(ps_context *ctx, const char *key);
/* Remembers (a copy of) sched under key, replacing an older entry. */
ps_status ps_cache_insert(ps_context *ctx, const char *key, const ps_schedule *sched);
/* The same for n entries at once: either all are remembered or, on failure,
 * the cache is left exactly as it was. */
ps_status ps_cache_insert_all(ps_context *ctx, const char *const *keys, const ps_schedule *const *scheds, int n);

#endif
