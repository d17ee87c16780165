/* polysci — the context: created once per process (or per framework instance).
 *
 * A context owns the machine description (caches from hwloc, cross-checked),
 * the thread count used by plans, LIBXSMM's JIT state and the plan cache.
 * Contexts are independent of each other. A context may be used from many
 * threads at once; destroy it only after every plan created from it. */
#ifndef POLYSCI_CONTEXT_H
#define POLYSCI_CONTEXT_H

#include "polysci/export.h"

#include <stddef.h>
#include "polysci/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_context ps_context;

typedef struct ps_context_options {
    size_t struct_size;   /* sizeof(ps_context_options); set by ps_context_options_init */
    int num_threads;      /* threads a plan runs on; 0 = OpenMP's default (omp_get_max_threads) */
    size_t memory_limit;  /* largest buffer a plan may require, bytes; 0 = no limit */
    /* Cache capacities in bytes, L1 first, overriding detection (hwloc,
     * sysfs, CPUID) and PS_CACHE_SIZES; n_cache_sizes = 0 keeps detection.
     * Levels past the list are dropped, as with PS_CACHE_SIZES. */
    int n_cache_sizes;
    size_t cache_sizes[4];
} ps_context_options;

/* Fills *opts with defaults. Always call it before setting fields. */
PS_API void ps_context_options_init(ps_context_options *opts);

/* __give *ctx. opts may be NULL for defaults. */
PS_API ps_status ps_context_create(const ps_context_options *opts, ps_context **ctx);
/* __take ctx. NULL is a no-op. */
PS_API void ps_context_destroy(ps_context *ctx);

PS_API int ps_context_num_threads(const ps_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
