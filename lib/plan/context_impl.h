/* Internal: the context object. */
#ifndef PS_CONTEXT_IMPL_H
#define PS_CONTEXT_IMPL_H

#include <pthread.h>

#include "polysci/context.h"
#include "polysci/schedule.h"
#include "machine/machine.h"

typedef struct ps_cache_entry {
    char *key;             /* ps_plan_key text */
    ps_schedule *schedule; /* the planner's choice for that key */
} ps_cache_entry;

struct ps_context {
    int num_threads;
    size_t memory_limit;
    int verbose;                   /* PS_VERBOSE at creation: 0 off, 1 plans+executions, 2 + ranked variants */
    int codegen;                   /* PS_CODEGEN at creation: 0 runs expression programs interpreted */
    char cc[256];                  /* PS_CC at creation: the C compiler of generated code ("cc") */
    int row_lanes_max;             /* PS_ROW_KERNELS at creation: graph and stencil plans use the row-kernel
                                    * table of at most this many f32 lanes (16: avx512, 8: avx2, 4: generic) */
    ps_machine machine;
    char machine_fingerprint[256]; /* what wisdom must match: CPU and cache sizes */

    pthread_mutex_t cache_lock;    /* guards the plan caches below */
    ps_cache_entry *cache;
    int cache_n, cache_cap;
    struct ps_graph_plan **graph_plans; /* graph plans, one reference each */
    int graph_n, graph_cap;
};

#endif
