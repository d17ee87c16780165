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
 *   by 64 without rejecting the size. Example: a Zen 5 KVM guest reports a
 *   508 MiB L3 through hwloc and CPUID (no sysfs cache directory), so its
 *   L3 falls back to the default.
 * Defaults: L1 32 KiB, L2 1 MiB, L3 32 MiB (shared by all PUs), L4 128 MiB,
 *   raised to twice the level below where needed; line 64 bytes.
 * Overrides: PS_CACHE_SIZES="48K,1M,32M" (K/M/G = 1024^n, optional B/iB,
 *   plain bytes) replaces the whole hierarchy: entry i is level i+1, levels
 *   past the list are dropped. ps_machine_override_caches does the same from
 *   code.
 *
 * Latency/bandwidth/peak/clock ("performance figures"): the built-in table
 * (detect without a profile, or PS_CALIBRATE=0), or a per-machine profile
 * written by ps_machine_calibrate under $XDG_CACHE_HOME/polysci (else
 * ~/.cache/polysci), keyed by CPU + cache sizes. Once a profile exists every
 * context loads it, so the planner's inputs (ps_machine_llc_slow, the
 * ranking's latencies and bandwidths) are pinned by it; without one they are
 * the table's, never a fresh measurement: a context does not measure.
 * PS_CALIBRATE: "0" = table only (no profile read, nothing measured),
 * "force" = ps_machine_calibrate re-measures even when a profile exists,
 * unset/"1" = normal.
 *
 * Calibration repeats a short measurement (ps_machine_measure: best of
 * several repetitions of each loop) and keeps a result only when a second
 * run confirms each best figure and the whole is plausible
 * (ps_machine_figures_agree/_check): a measurement disturbed by other
 * processes is reported, not cached.
 *
 * Peak (f32, one core) = FMA pipes x f32 lanes x 2 x GHz. Without a profile
 * it comes from a small ISA/vendor table and the clock (sysfs
 * cpuinfo_max_freq, else /proc/cpuinfo, else the brand string, else 3 GHz);
 * calibration measures it with an FMA loop and the clock with a chain of
 * dependent adds, and infers the pipe count. Under a hypervisor /proc/cpuinfo
 * usually reports the TSC rate, not the core clock: an AMD EPYC Zen 4 VM says
 * 2.596 GHz while its dependent adds run at 3.69 GHz, so the table's peak
 * there (83 GFLOP/s per core) is 0.7x the measured 118; m->notes says so.
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
    double latency_ns;     /* load-to-use latency (source: ps_machine.perf_source) */
    double bandwidth_gbs;  /* sustained read bandwidth per core, GB/s (same source) */
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
    int fma_units;            /* FMAs of simd_f32_lanes lanes issued per cycle (table or inferred) */
    int simd_f32_lanes;       /* f32 lanes of one FMA instruction (16 = AVX-512) */
    /* Where each performance figure came from: "table", "measured" (by
     * ps_machine_calibrate in this process) or "profile". The latencies and
     * bandwidths of every level and of memory are always set together. */
    const char *perf_source;  /* latency/bandwidth, all levels and memory */
    const char *peak_source;  /* peak: "table" (pipes x lanes x 2 x clock), "measured", "profile" */
    char cpu_key[48];         /* vendor-family-model-stepping; part of the profile key */
    /* clock: "sysfs" (cpuinfo_max_freq), "cpuinfo" (/proc/cpuinfo cpu MHz;
     * under a hypervisor usually the TSC rate), "brand" (the brand string's
     * "@ x GHz"), "default" (3 GHz assumed), "measured", "profile" */
    const char *freq_source;
    /* A five-point row stencil (the row kernels' inner loop: one load per
     * multiply-add, two taps unaligned) on one core, f32 GFLOP/s at 2 flops
     * per tap: [0] its rows in L1, [1] its rows streaming through L2. Where
     * the loads, not the FMAs, bound it, residence in L1 is worth what the
     * core's load ports make of it, which no ratio of peak and bandwidth
     * predicts: measured with the other figures (source: peak_source); the
     * table's are fractions of the table's peak. */
    double stencil_gflops[2];
} ps_machine;

/* The table's row-stencil rates (ps_machine.stencil_gflops) from m's peak:
 * 0.8 of it with the rows in L1, 0.55 through L2 (two loads per cycle, the
 * split loads of the unaligned taps; a Xeon-like core). */
void ps_machine_stencil_table(ps_machine *m);

/* ps_machine.stencil_gflops[in_l1 ? 0 : 1], or the table's fraction of the
 * peak where m has none. */
double ps_machine_stencil_rate(const ps_machine *m, int in_l1);

/* Capacity of one instance of cache `level` (1, 2, ...), 0 if there is none. */
size_t ps_machine_cache_bytes(const ps_machine *m, int level);

/* The L3's bandwidth is under twice memory's: writing a line through it
 * (read for ownership, write-back) costs more than streaming it to memory,
 * and a copy made in one pass and read back in another costs about two
 * trips to memory. The table's default row (60 vs 20 GB/s; Zen 4 and Zen 5
 * cores measure ~100 vs ~35-40) is fast, its Xeon row (30 vs 22, what a
 * Xeon with a mesh L3 measures) slow. 0 without an L3. */
int ps_machine_llc_slow(const ps_machine *m);

/* Size from which an output that one kernel call per block writes is
 * stored with streaming stores (ps_exec.stream_out); 0 = never (no L3).
 * Such an output costs a read for ownership and a write-back through the
 * last-level cache, or one write to memory when streamed. The L3's size
 * where it is fast (part of a larger output stays in such an L3: on a Zen 5
 * outputs that fit it ran slower streamed); a quarter of it where it is slow
 * (on a Xeon VM outputs from 8 MB ran faster streamed, 4 MB slower; old vs
 * new binary with bench/ab.sh). */
size_t ps_machine_stream_bytes(const ps_machine *m);

/* Size of a GEMM's larger operand from which the executor packs per-thread
 * panels even though the other operand fits the last-level cache
 * (ps_gemm_panels_pay); 0 = only where both exceed it. Half the L3 where
 * it is slow: the packing pass's copy cannot stay there beside its source,
 * and an operand read in place (columns lda apart, each run in its own
 * page) waits on memory at every run; on a Xeon VM panels ran 1.3x faster
 * from 16 MB, 0.97x at 12 MB (bench/ab.sh). 0 where the L3 is fast: on a
 * Zen 5 such panels were no better than the pass. */
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

/* Fills latency/bandwidth (per level and memory), the peak and the clock:
 * with use_profile_file, from the profile if a valid one exists, else
 * measured and saved; without, always measured and no file is touched.
 * Measuring runs ps_machine_measure up to PS_CALIBRATE_RUNS times (~50 ms
 * each on an idle core) until the runs confirm every figure
 * (ps_machine_figures_agree) and the result passes ps_machine_figures_check;
 * it is applied (sources "measured") and saved. When the runs never get
 * there (a busy machine: runs out of their time budget, best figures no
 * other run confirms), m keeps its previous figures, nothing is saved, the
 * reason is noted and PS_SUCCESS is returned: perf_source tells the
 * outcome. PS_CALIBRATE=0 turns it into a table lookup. A profile that
 * cannot be written is only noted. If measuring fails (no memory), table
 * values are filled in and the error is returned. */
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

/* The performance figures of one calibration run, or of a profile. A 0
 * figure was not measured (the run's time budget ran out first); freq_ghz 0
 * = clock unknown. */
typedef struct ps_machine_figures {
    int n_levels;
    double latency_ns[PS_MAX_CACHE_LEVELS], bandwidth_gbs[PS_MAX_CACHE_LEVELS];
    double mem_latency_ns, mem_bandwidth_gbs;
    double peak_gflops_core;  /* best FMA-loop rate of one core */
    double freq_ghz;          /* dependent-add clock */
    int simd_f32_lanes;       /* lanes of the FMA loop's instructions */
    double stencil_gflops[2]; /* ps_machine.stencil_gflops: rows in L1, in L2 */
    double ms;                /* wall time of the run (information only) */
} ps_machine_figures;

/* Most runs of the measurement ps_machine_calibrate makes to confirm every
 * figure (it also starts none past 1.5 s). */
#define PS_CALIBRATE_RUNS 5

/* One measuring run for m's cache sizes (pointer chase, streaming reads, FMA
 * loop, dependent-add clock), each figure the best of short repetitions,
 * the whole run bounded in time. Touches neither m's figures nor any file.
 * PS_ERR_OUT_OF_MEMORY when its buffers cannot be allocated. */
ps_status ps_machine_measure(const ps_machine *m, ps_machine_figures *out);

/* A measuring function, for ps_machine_calibrate_with. */
typedef ps_status (*ps_machine_measure_fn)(const ps_machine *m, ps_machine_figures *out, void *arg);

/* ps_machine_calibrate with `measure` (called with `arg`) in place of
 * ps_machine_measure: tests give it fixed figures. */
ps_status ps_machine_calibrate_with(ps_machine *m, int use_profile_file, ps_machine_measure_fn measure, void *arg);

/* 1 when every figure of f is measured and plausible for m's levels: each
 * figure in its range, outer levels no faster than inner ones beyond noise
 * (inversions within 10% are evened out in f), and every cache's latency
 * under 0.6x memory's (a chased set evicted by another process reads at
 * memory's latency). A clock at which the peak would be under 0.4 or over
 * 4.6 FMAs per cycle is dropped from f as unknown (a core whose adds do not
 * take one cycle), without rejecting f. Else 0 with the reason in why. */
int ps_machine_figures_check(const ps_machine *m, ps_machine_figures *f, char *why, size_t why_len);

/* Combines n runs: each figure is the best any usable run (measured and in
 * range, see ps_machine_figures_check) got - noise only slows a run down -
 * and must be confirmed by another run within 25% (latencies and
 * bandwidths) or 10% (peak, clock) of it. 1 with the result in *best; 0
 * with the first unconfirmed figure in why (fewer than two usable runs, or
 * a best value no other run came near: a disturbed machine). */
int ps_machine_figures_agree(const ps_machine_figures *runs, int n, ps_machine_figures *best, char *why,
                             size_t why_len);

/* Sets m's performance figures from f (checked), with `source` ("measured",
 * "profile"; static storage) for each; the FMA pipe count is inferred from
 * the peak and clock where the clock is known. */
void ps_machine_apply_figures(ps_machine *m, const ps_machine_figures *f, const char *source);

/* Writes m's figures to its profile file (atomically). 1 when written; 0
 * with a note when not. */
int ps_machine_save_profile(ps_machine *m);

#endif
