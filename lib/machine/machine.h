/* Internal: the machine model (caches, cores, latency/bandwidth, peak).
 * Filled once per context by ps_machine_detect(); read-only afterwards. */
#ifndef PS_MACHINE_H
#define PS_MACHINE_H

#include <stddef.h>
#include "polysci/status.h"

#define PS_MAX_CACHE_LEVELS 4

typedef struct ps_cache_level {
    int level;             /* 1, 2, 3 (data/unified caches only) */
    size_t size_bytes;     /* capacity of one instance */
    int line_bytes;        /* cache line size */
    int shared_by;         /* cores (PUs) sharing one instance */
    const char *source;    /* where size came from: "hwloc", "sysfs", "cpuid", "env", "api", "default" */
    double latency_ns;     /* load-to-use latency, calibrated or from the built-in table */
    double bandwidth_gbs;  /* sustained read bandwidth per core, GB/s */
} ps_cache_level;

typedef struct ps_machine {
    int n_levels;
    ps_cache_level levels[PS_MAX_CACHE_LEVELS];
    int n_cores;              /* physical cores available to this process */
    double mem_latency_ns;
    double mem_bandwidth_gbs;
    double peak_gflops_core;  /* f32 FMA peak of one core */
    char cpu_name[128];
    char notes[512];          /* human-readable: which sources were rejected and why */
} ps_machine;

/* Detects caches (hwloc, cross-checked with sysfs/CPUID, PS_CACHE_SIZES
 * override), cores and performance characteristics. Never fails on odd
 * hardware: implausible values fall back to documented defaults, noted in
 * m->notes. Returns an error only for an unparsable PS_CACHE_SIZES. */
ps_status ps_machine_detect(ps_machine *m);

#endif
