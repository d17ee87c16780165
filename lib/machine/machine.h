/* Internal: the machine model (caches, cores, latency/bandwidth, peak).
 * Filled once per context by ps_machine_detect(); read-only afterwards.
 *
 * Cache sizes: each level is taken from the first *plausible* report among
 * hwloc, sysfs (/sys/devices/system/cpu/cpuN/cache) and CPUID (leaf 4 on
 * Intel, 0x8000001D or the legacy 0x80000005/6 on AMD), else from a default.
 * Plausibility rules (per instance of a data/unified cache):
 *   L1 in [8 KiB, 256 KiB], L2 in [64 KiB, 32 MiB], L3 in [256 KiB, 128 MiB]
 *   (the largest real L3 instance is a 96 MB 3D V-Cache CCD), L4 in
 *   [16 MiB, 1 GiB]; and every level strictly larger than the level chosen
 *   below it. A bad line size (not a power of two in [16, 256]) is replaced
 *   by 64 without rejecting the size. Example: this project's VM reports a
 *   508 MiB L3 through hwloc and CPUID (no sysfs cache directory), so L3
 *   falls back to the default.
 * Defaults: L1 32 KiB, L2 1 MiB, L3 32 MiB (shared by all PUs), L4 128 MiB,
 *   raised to twice the level below where needed; line 64 bytes.
 * Overrides: PS_CACHE_SIZES="48K,1M,32M" (K/M/G = 1024^n, optional B/iB,
 *   plain bytes) replaces the whole hierarchy: entry i is level i+1, levels
 *   past the list are dropped. ps_machine_override_caches does the same from
 *   code.
 *
 * Latency/bandwidth/peak: a built-in table (detect, or PS_CALIBRATE=0), or a
 * per-machine profile written by ps_machine_calibrate under
 * $XDG_CACHE_HOME/polysci (else ~/.cache/polysci), keyed by CPU + cache sizes.
 * PS_CALIBRATE: "0" = table only (no profile read, nothing measured),
 * "force" = ps_machine_calibrate re-measures even when a profile exists,
 * unset/"1" = normal.
 *
 * Peak (f32, one core) = FMA pipes x f32 lanes x 2 x GHz. Detect estimates it
 * from a small ISA/vendor table and the clock (sysfs cpuinfo_max_freq, else
 * /proc/cpuinfo, else the brand string, else 3 GHz); calibration measures it
 * with an FMA loop and the clock with a chain of dependent adds, and infers
 * the pipe count. The project VM (AMD Zen 5 "Turin-like", 2 vCPUs) measures
 * 225-237 GFLOP/s per core: 2 x 512-bit FMA pipes x 16 lanes x 2 x 3.5-3.7
 * GHz. Its /proc/cpuinfo says 2.096 GHz (the TSC rate under a hypervisor), so
 * the estimate without a profile is only 134 GFLOP/s; m->notes says so.
 *
 * notes is a log, in order: detection, then override/calibration events. */
#ifndef PS_MACHINE_H
#define PS_MACHINE_H

#include <stddef.h>
#include "polysci/status.h"

#define PS_MAX_CACHE_LEVELS 4
#define PS_MACHINE_NOTES_LEN 1024

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
    char notes[PS_MACHINE_NOTES_LEN]; /* human-readable: which sources were rejected and why */
    /* --- added after the first interface --- */
    int n_pus;                /* hardware threads available to this process */
    double freq_ghz;          /* core clock behind peak_gflops_core; 0 = unknown */
    int fma_units;            /* vector FMA pipes per core assumed/inferred */
    int simd_f32_lanes;       /* f32 lanes per FMA pipe (16 = AVX-512) */
    const char *perf_source;  /* latency/bandwidth: "table", "profile", "calibrated" */
    const char *peak_source;  /* peak: "estimate" (lanes x pipes x clock), "profile", "measured" */
    char cpu_key[48];         /* vendor-family-model-stepping; part of the profile key */
} ps_machine;

/* Capacity of one instance of cache `level` (1, 2, ...), 0 if there is none. */
size_t ps_machine_cache_bytes(const ps_machine *m, int level);

/* The L3's bandwidth is under twice memory's: writing a line through it
 * (read for ownership, write-back) costs more than streaming it to memory,
 * and a copy made in one pass and read back in another costs about two
 * trips to memory. The table's default row (a Zen 5: ~105 vs ~40 GB/s) is
 * fast, its Xeon row (30 vs 22) and the Xeon VM's calibration slow. 0
 * without an L3. */
int ps_machine_llc_slow(const ps_machine *m);

/* Size from which an output that one kernel call per block writes is
 * stored with streaming stores (ps_exec.stream_out); 0 = never (no L3).
 * Such an output costs a read for ownership and a write-back through the
 * last-level cache, or one write to memory when streamed. The L3's size
 * where it is fast (Zen 5: outputs that partly stay in the L3 lost with
 * streaming, session 9); a quarter of it where it is slow (Xeon VM: outputs
 * from 8 MB ran faster streamed, 4 MB slower; docs/performance.md, session
 * 14). */
size_t ps_machine_stream_bytes(const ps_machine *m);

/* Size of a GEMM's larger operand from which the executor packs per-thread
 * panels even though the other operand fits the last-level cache
 * (ps_gemm_panels_pay); 0 = only where both exceed it. Half the L3 where
 * it is slow: the packing pass's copy cannot stay there beside its source,
 * and an operand read in place (columns lda apart, each run in its own
 * page) waits on memory at every run; on the Xeon VM panels ran 1.3x faster
 * from 16 MB, 0.97x at 12 MB (session 15). 0 where the L3 is fast: on the
 * Zen 5 such panels were no better than the pass (session 9). */
size_t ps_machine_panel_bytes(const ps_machine *m);

/* Detects caches (hwloc, cross-checked with sysfs/CPUID, PS_CACHE_SIZES
 * override), cores and performance characteristics. Never fails on odd
 * hardware: implausible values fall back to documented defaults, noted in
 * m->notes. Returns an error only for an unparsable PS_CACHE_SIZES (m is
 * still fully filled with the detected values then). Does not measure
 * anything; loads the calibration profile when one exists. */
ps_status ps_machine_detect(ps_machine *m);

/* Same, with a topology the caller already loaded (hwloc_topology_t; not
 * destroyed). hwloc_topology_init loads hwloc's plugins each time no other
 * topology is alive, which costs ~3 ms; a caller holding one avoids that. */
struct hwloc_topology;
ps_status ps_machine_detect_from(ps_machine *m, struct hwloc_topology *topology);

/* Replaces the cache hierarchy by `n` sizes (level 1..n, bytes, strictly
 * increasing); levels past n are dropped. `source` ("api", "env") must be a
 * string with static storage. Line sizes/sharing of existing levels are
 * kept; latency/bandwidth are re-read from the profile for the new sizes, or
 * the table. PS_ERR_INVALID_ARG for bad sizes, m unchanged then. */
ps_status ps_machine_override_caches(ps_machine *m, const size_t *sizes, int n,
                                     const char *source);

/* Parses a PS_CACHE_SIZES-style list into sizes[PS_MAX_CACHE_LEVELS];
 * PS_ERR_PARSE with a message naming the bad entry. */
ps_status ps_machine_parse_cache_sizes(const char *text, size_t *sizes, int *n);

/* Fills latency/bandwidth (per level and memory) and the peak: with
 * use_profile_file, from the profile if a valid one exists, else measured
 * (~0.2 s) and saved; without, always measured and no file is touched.
 * PS_CALIBRATE=0 turns it into a table lookup. A profile that cannot be
 * written is only noted. If measuring fails, table values are filled in and
 * the error is returned. */
ps_status ps_machine_calibrate(ps_machine *m, int use_profile_file);

/* Path of m's profile file; snprintf semantics. 0 and "" when there is no
 * cache directory (neither XDG_CACHE_HOME nor HOME set). */
int ps_machine_profile_path(const ps_machine *m, char *buf, size_t len);

/* JSON description for `polysci info --json`; snprintf semantics (returns
 * the length it needs, writes at most len bytes, always NUL-terminated when
 * len > 0). Locale-independent number formatting. */
int ps_machine_to_json(const ps_machine *m, char *buf, size_t len);

/* --- white-box pieces, for tests --- */

/* One source's view of the cache hierarchy (index = level - 1). */
typedef struct ps_cache_report {
    const char *source;                 /* "hwloc", "sysfs", "cpuid" */
    size_t size[PS_MAX_CACHE_LEVELS];   /* 0 = level not reported */
    int line_bytes[PS_MAX_CACHE_LEVELS];/* 0 = unknown */
    int shared_by[PS_MAX_CACHE_LEVELS]; /* 0 = unknown */
} ps_cache_report;

/* Chooses each level from the reports (first plausible wins, in array
 * order), fills m->levels/n_levels and appends notes. Needs m->n_pus. */
void ps_machine_resolve_caches(ps_machine *m, const ps_cache_report *reports, int n_reports);

/* 1 if `size` is plausible for `level` above a level of `below` bytes (0 =
 * none); else 0 with the reason in why. */
int ps_machine_cache_plausible(int level, size_t size, size_t below, char *why, size_t why_len);

#endif
