/* Internal: the context object. */
#ifndef PS_CONTEXT_IMPL_H
#define PS_CONTEXT_IMPL_H

#include "polysci/context.h"
#include "machine/machine.h"

struct ps_context {
    int num_threads;
    size_t memory_limit;
    ps_machine machine;
};

#endif
