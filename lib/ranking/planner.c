/* The planner: candidate generation, ranking, optional timing of the top k. */
#include "ranking/planner.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "execution/engine.h"
#include "variants/variants.h"

ps_ranker ps_planner_default_ranker(void) { return PS_RANKER_NONE; }

ps_status ps_planner_choose(ps_context *ctx, const ps_desc *desc, int nthreads, ps_ranker ranker, int top_k,
                            ps_schedule **out)
{
    (void)ctx;
    (void)nthreads;
    (void)top_k;
    if (ranker == PS_RANKER_DEFAULT) ranker = ps_planner_default_ranker();
    switch (ranker) {
    case PS_RANKER_NONE:
        return ps_schedule_default(desc, out);
    default:
        return ps_error(PS_ERR_UNSUPPORTED, "planner: ranker %d is not available in this build", (int)ranker);
    }
}
