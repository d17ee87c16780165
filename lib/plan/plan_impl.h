/* Internal: the plan object. Immutable after ps_plan_create. */
#ifndef PS_PLAN_IMPL_H
#define PS_PLAN_IMPL_H

#include "polysci/plan.h"
#include "descriptors/shape.h"
#include "execution/engine.h"

struct ps_plan {
    ps_context *ctx;
    ps_problem problem;        /* the descriptor, validated, and its canonical shape */
    ps_schedule *schedule;
    ps_exec exec;
    uint64_t weight_signature; /* identifies the packed-weight layout */
    size_t packed_bytes;       /* header included */
    size_t workspace_bytes;
    double create_ms;          /* time ps_plan_create took */
    int from_cache;            /* the schedule came from the plan cache (or wisdom) */
};

/* Header in front of packed weights; the data starts PS_PACKED_HEADER bytes in. */
#define PS_PACKED_HEADER 64
#define PS_PACKED_MAGIC 0x5053574731ull /* "PSWG1" */

/* Validates plan options (NULL = defaults, written to *defaults and *opts
 * redirected to them); `who` names the API call in messages. */
ps_status ps_plan_options_check(const char *who, const ps_plan_options **opts, ps_plan_options *defaults);

#endif
