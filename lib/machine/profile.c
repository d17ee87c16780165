/* Performance figures: the checks a measurement must pass before it is used
 * or cached, and the per-machine profile file that keeps them between runs.
 * Nothing here measures (calibrate.c does): the rules can be tested with
 * given numbers. */
#include "machine/machine.h"
#include "machine/machine_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cachedir.h"
#include "core/error.h"

#define PROFILE_VERSION 2

/* ---------------------------------------------------------------- checks */

/* Ranges a figure of a real core can take. Wide: they reject a broken run
 * (a timer or loop gone wrong), not a slow machine; noise is the business
 * of the agreement between runs. */
typedef struct range {
    double lo, hi;
} range;
static const range lat_cache = {0.2, 1000}, lat_mem = {10, 5000};       /* ns */
static const range bw_cache = {1, 20000}, bw_mem = {0.1, 5000};         /* GB/s per core */
static const range peak_range = {0.5, 50000}, clock_range = {0.2, 10}; /* GFLOP/s per core, GHz */

/* An outer level measured faster than the one inside it by at most this
 * fraction is noise and evened out; by more, the figures are inconsistent. */
#define INVERSION_TOL 0.10
/* A cache level's latency above this fraction of memory's: see the check. */
#define CACHE_MEM_LAT_MAX 0.6
/* A best figure is confirmed by a second run within this fraction of it:
 * latencies and bandwidths (memory and a shared L3 vary with the
 * neighbours' traffic)... */
#define CONFIRM_MEM_TOL 0.25
/* ... peak and clock (one core's own loops). */
#define CONFIRM_CORE_TOL 0.10

static int in_range(double v, range r) { return v >= r.lo && v <= r.hi; } /* false for NaN */

static void fmt_level(int l, int n_levels, char *buf, size_t len)
{
    if (l < n_levels) snprintf(buf, len, "L%d", l + 1);
    else snprintf(buf, len, "memory");
}

/* The figures as one list: latency and bandwidth of each level, then of
 * memory, then peak, clock and the row stencil's rates (their loads go to
 * L1 and L2: a cache figure's tolerance). */
enum { FIG_MAX = 2 * (PS_MAX_CACHE_LEVELS + 1) + 4 };
typedef struct fig_ref {
    double *v;
    int lower_is_better;
    double tol;
    char name[32];
} fig_ref;

static int fig_list(ps_machine_figures *f, fig_ref *r)
{
    int n = 0, nl = f->n_levels;
    for (int l = 0; l <= nl && l <= PS_MAX_CACHE_LEVELS; l++) {
        char lv[8];
        fmt_level(l, nl, lv, sizeof lv);
        r[n] = (fig_ref){l < nl ? &f->latency_ns[l] : &f->mem_latency_ns, 1, CONFIRM_MEM_TOL, ""};
        snprintf(r[n++].name, sizeof r[0].name, "%s latency", lv);
        r[n] = (fig_ref){l < nl ? &f->bandwidth_gbs[l] : &f->mem_bandwidth_gbs, 0, CONFIRM_MEM_TOL, ""};
        snprintf(r[n++].name, sizeof r[0].name, "%s bandwidth", lv);
    }
    r[n++] = (fig_ref){&f->peak_gflops_core, 0, CONFIRM_CORE_TOL, "peak"};
    r[n++] = (fig_ref){&f->freq_ghz, 0, CONFIRM_CORE_TOL, "clock"};
    r[n++] = (fig_ref){&f->stencil_gflops[0], 0, CONFIRM_MEM_TOL, "L1 stencil"};
    r[n++] = (fig_ref){&f->stencil_gflops[1], 0, CONFIRM_MEM_TOL, "L2 stencil"};
    return n;
}

/* Every figure measured and in its range. */
static int figures_usable(const ps_machine_figures *f, char *why, size_t why_len)
{
    char a[24], b[24], name[16];
    const int nl = f->n_levels;
    if (nl < 0 || nl > PS_MAX_CACHE_LEVELS) {
        snprintf(why, why_len, "%d cache levels", nl);
        return 0;
    }
    for (int l = 0; l <= nl; l++) {
        const double lat = l < nl ? f->latency_ns[l] : f->mem_latency_ns;
        const double bw = l < nl ? f->bandwidth_gbs[l] : f->mem_bandwidth_gbs;
        fmt_level(l, nl, name, sizeof name);
        if (lat == 0 || bw == 0) {
            snprintf(why, why_len, "%s not measured (the run ran out of its time budget: a busy machine)", name);
            return 0;
        }
        if (!in_range(lat, l < nl ? lat_cache : lat_mem) || !in_range(bw, l < nl ? bw_cache : bw_mem)) {
            ps_machine_fmt_fixed(lat, 2, a, sizeof a);
            ps_machine_fmt_fixed(bw, 1, b, sizeof b);
            snprintf(why, why_len, "%s latency %s ns / bandwidth %s GB/s out of range", name, a, b);
            return 0;
        }
    }
    if (f->peak_gflops_core == 0) {
        snprintf(why, why_len, "peak not measured");
        return 0;
    }
    if (!in_range(f->peak_gflops_core, peak_range) || f->simd_f32_lanes < 1 || f->simd_f32_lanes > 64) {
        ps_machine_fmt_fixed(f->peak_gflops_core, 1, a, sizeof a);
        snprintf(why, why_len, "peak %s GFLOP/s (%d lanes) out of range", a, f->simd_f32_lanes);
        return 0;
    }
    for (int l = 0; l < 2; l++) {
        /* a loop of loads and FMAs: above the FMA peak is a broken timer */
        if (f->stencil_gflops[l] == 0) {
            snprintf(why, why_len, "L%d stencil not measured", l + 1);
            return 0;
        }
        if (!(f->stencil_gflops[l] >= 0.002 * f->peak_gflops_core && f->stencil_gflops[l] <= 1.2 * f->peak_gflops_core)) {
            ps_machine_fmt_fixed(f->stencil_gflops[l], 1, a, sizeof a);
            ps_machine_fmt_fixed(f->peak_gflops_core, 1, b, sizeof b);
            snprintf(why, why_len, "L%d stencil %s GFLOP/s out of range for a peak of %s", l + 1, a, b);
            return 0;
        }
    }
    if (f->freq_ghz != 0 && !(f->freq_ghz > 0)) {
        snprintf(why, why_len, "negative clock");
        return 0;
    }
    return 1;
}

int ps_machine_figures_check(const ps_machine *m, ps_machine_figures *f, char *why, size_t why_len)
{
    char a[24], b[24], name[16], inner[16];
    if (why_len) why[0] = '\0';
    if (f->n_levels != m->n_levels) {
        snprintf(why, why_len, "figures for %d cache levels, the machine has %d", f->n_levels, m->n_levels);
        return 0;
    }
    if (!figures_usable(f, why, why_len)) return 0;
    const int nl = f->n_levels;
    /* index nl = memory */
    double lat[PS_MAX_CACHE_LEVELS + 1], bw[PS_MAX_CACHE_LEVELS + 1];
    for (int l = 0; l < nl; l++) { lat[l] = f->latency_ns[l]; bw[l] = f->bandwidth_gbs[l]; }
    lat[nl] = f->mem_latency_ns;
    bw[nl] = f->mem_bandwidth_gbs;
    for (int l = 1; l <= nl; l++) {
        fmt_level(l, nl, name, sizeof name);
        fmt_level(l - 1, nl, inner, sizeof inner);
        if (lat[l] < (1 - INVERSION_TOL) * lat[l - 1] || bw[l] > (1 + INVERSION_TOL) * bw[l - 1]) {
            ps_machine_fmt_fixed(bw[l], 1, a, sizeof a);
            ps_machine_fmt_fixed(bw[l - 1], 1, b, sizeof b);
            snprintf(why, why_len, "%s measured faster than %s (%s vs %s GB/s, latency %.1f vs %.1f ns)", name, inner,
                     a, b, lat[l], lat[l - 1]);
            return 0;
        }
        if (lat[l] < lat[l - 1]) lat[l] = lat[l - 1];
        if (bw[l] > bw[l - 1]) bw[l] = bw[l - 1];
    }
    /* Every cache answers well before memory (L3/memory: ~0.35 on a mesh
     * Xeon, ~0.15 on Zen); a cache at memory's latency lost the chased set
     * to another process (or is smaller than its reported size). */
    for (int l = 0; l < nl; l++) {
        if (lat[l] > CACHE_MEM_LAT_MAX * lat[nl]) {
            fmt_level(l, nl, name, sizeof name);
            snprintf(why, why_len, "%s latency %.1f ns is close to memory's %.1f ns: its set was evicted by another "
                     "process (or the cache is smaller than assumed)", name, lat[l], lat[nl]);
            return 0;
        }
    }
    for (int l = 0; l < nl; l++) { f->latency_ns[l] = lat[l]; f->bandwidth_gbs[l] = bw[l]; }
    f->mem_latency_ns = lat[nl];
    f->mem_bandwidth_gbs = bw[nl];
    if (f->freq_ghz != 0) {
        const double fmas = f->peak_gflops_core / (2.0 * f->simd_f32_lanes * f->freq_ghz);
        if (!in_range(f->freq_ghz, clock_range) || fmas < 0.4 || fmas > 4.6) f->freq_ghz = 0;
    }
    return 1;
}

int ps_machine_figures_agree(const ps_machine_figures *runs, int n, ps_machine_figures *best, char *why,
                             size_t why_len)
{
    if (why_len) why[0] = '\0';
    ps_machine_figures use[PS_CALIBRATE_RUNS];
    int k = 0;
    for (int i = 0; i < n && k < PS_CALIBRATE_RUNS; i++) {
        char skip[160];
        if (runs[i].n_levels == runs[0].n_levels && runs[i].simd_f32_lanes == runs[0].simd_f32_lanes &&
            figures_usable(&runs[i], skip, sizeof skip))
            use[k++] = runs[i];
    }
    if (k < 2) {
        snprintf(why, why_len, "%d usable run%s, two needed", k, k == 1 ? "" : "s");
        return 0;
    }
    fig_ref r[PS_CALIBRATE_RUNS][FIG_MAX];
    int nf = 0;
    for (int i = 0; i < k; i++) nf = fig_list(&use[i], r[i]);
    ps_machine_figures out = use[0];
    fig_ref ro[FIG_MAX];
    fig_list(&out, ro);
    out.ms = 0;
    for (int i = 0; i < k; i++) out.ms += use[i].ms;
    for (int j = 0; j < nf; j++) {
        /* The best value (noise only slows a run down) and the closest other. */
        int bi = -1;
        for (int i = 0; i < k; i++) {
            const double v = *r[i][j].v;
            if (v <= 0) continue; /* a clock not measured */
            if (bi < 0 || (r[i][j].lower_is_better ? v < *r[bi][j].v : v > *r[bi][j].v)) bi = i;
        }
        if (bi < 0) { *ro[j].v = 0; continue; } /* the clock: unknown in every run */
        const double b = *r[bi][j].v;
        double closest = 1e300;
        for (int i = 0; i < k; i++) {
            const double v = *r[i][j].v;
            if (i == bi || v <= 0) continue;
            const double d = (r[i][j].lower_is_better ? v - b : b - v) / b;
            if (d < closest) closest = d;
        }
        if (closest > r[0][j].tol) {
            if (closest > 1e299)
                snprintf(why, why_len, "%s measured by one run only", r[0][j].name);
            else
                snprintf(why, why_len, "%s: the best run's %.2f confirmed by no other within %.0f%% (closest %.0f%% off)",
                         r[0][j].name, b, 100 * r[0][j].tol, 100 * closest);
            return 0;
        }
        *ro[j].v = b;
    }
    *best = out;
    return 1;
}

void ps_machine_apply_figures(ps_machine *m, const ps_machine_figures *f, const char *source)
{
    for (int l = 0; l < m->n_levels && l < f->n_levels; l++) {
        m->levels[l].latency_ns = f->latency_ns[l];
        m->levels[l].bandwidth_gbs = f->bandwidth_gbs[l];
    }
    m->mem_latency_ns = f->mem_latency_ns;
    m->mem_bandwidth_gbs = f->mem_bandwidth_gbs;
    m->perf_source = source;
    m->peak_gflops_core = f->peak_gflops_core;
    m->peak_source = source;
    m->simd_f32_lanes = f->simd_f32_lanes;
    m->stencil_gflops[0] = f->stencil_gflops[0];
    m->stencil_gflops[1] = f->stencil_gflops[1];
    if (f->freq_ghz > 0) {
        /* Under AVX-512 Zen 4 issues one 512-bit FMA per cycle (two 256-bit
         * pipes), most Xeons two: the count is in FMAs of the loop's width. */
        const int pipes = (int)(f->peak_gflops_core / (2.0 * f->simd_f32_lanes * f->freq_ghz) + 0.5);
        m->fma_units = pipes < 1 ? 1 : pipes;
        m->freq_ghz = f->freq_ghz;
        m->freq_source = source;
    }
}

/* m's current figures, for the profile writer. */
static void figures_of(const ps_machine *m, ps_machine_figures *f)
{
    memset(f, 0, sizeof *f);
    f->n_levels = m->n_levels;
    for (int l = 0; l < m->n_levels; l++) {
        f->latency_ns[l] = m->levels[l].latency_ns;
        f->bandwidth_gbs[l] = m->levels[l].bandwidth_gbs;
    }
    f->mem_latency_ns = m->mem_latency_ns;
    f->mem_bandwidth_gbs = m->mem_bandwidth_gbs;
    f->peak_gflops_core = m->peak_gflops_core;
    /* Only a measured clock: a table clock would come back as measured. */
    const int clock_measured = m->freq_source && (!strcmp(m->freq_source, "measured") || !strcmp(m->freq_source, "profile"));
    f->freq_ghz = clock_measured ? m->freq_ghz : 0;
    f->simd_f32_lanes = m->simd_f32_lanes;
    f->stencil_gflops[0] = m->stencil_gflops[0];
    f->stencil_gflops[1] = m->stencil_gflops[1];
}

/* --------------------------------------------------------------- profile */

static void sizes_text(const ps_machine *m, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < m->n_levels; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%zu", i ? " " : "", m->levels[i].size_bytes);
    }
}

/* Directory for profiles: the cache directory itself. */
static int profile_dir(char *buf, size_t len) { return ps_cache_dir("", buf, len); }

int ps_machine_profile_path(const ps_machine *m, char *buf, size_t len)
{
    char dir[512], sizes[160];
    if (!m || !profile_dir(dir, sizeof dir)) { if (buf && len) buf[0] = '\0'; return 0; }
    sizes_text(m, sizes, sizeof sizes);
    uint64_t h = PS_FNV_OFFSET;
    h = ps_fnv1a(h, m->cpu_name, strlen(m->cpu_name)); h = ps_fnv1a(h, "\n", 1);
    h = ps_fnv1a(h, m->cpu_key, strlen(m->cpu_key)); h = ps_fnv1a(h, "\n", 1);
    h = ps_fnv1a(h, sizes, strlen(sizes));
    return snprintf(buf, len, "%s/machine-%016llx.profile", dir, (unsigned long long)h);
}

/* Parses "<lat> <bw>" (and nothing else) from s. */
static int parse_pair(const char *s, double *a, double *b)
{
    if (!ps_machine_parse_decimal(&s, a) || *s++ != ' ' || !ps_machine_parse_decimal(&s, b)) return 0;
    return *s == '\0';
}

int ps_machine_load_profile(ps_machine *m)
{
    char path[640];
    int n = ps_machine_profile_path(m, path, sizeof path);
    if (n <= 0 || (size_t)n >= sizeof path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* no profile yet: the usual case, not worth a note */
    char line[256], sizes[160];
    sizes_text(m, sizes, sizeof sizes);
    ps_machine_figures fig;
    memset(&fig, 0, sizeof fig);
    fig.n_levels = m->n_levels;
    double pipes = 0, lanes = 0;
    int have_level[PS_MAX_CACHE_LEVELS] = {0};
    int lineno = 0, have_mem = 0, have_peak = 0, have_stencil = 0, stale = 0, bad = 0, have_header = 0, have_ident = 0;
    while (!bad && !stale && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        else if (!feof(f)) { bad = lineno; break; } /* over-long line */
        if (line[0] == '#' || line[0] == '\0') continue;
        if (!have_header) {
            char want[48];
            snprintf(want, sizeof want, "polysci-machine-profile %d", PROFILE_VERSION);
            if (strncmp(line, "polysci-machine-profile ", 24) != 0) bad = lineno;
            else if (strcmp(line, want) != 0) stale = lineno;
            have_header = 1;
        } else if (strncmp(line, "cpu ", 4) == 0) {
            if (strcmp(line + 4, m->cpu_name) != 0) stale = lineno;
            have_ident |= 1;
        } else if (strncmp(line, "key ", 4) == 0) {
            if (strcmp(line + 4, m->cpu_key) != 0) stale = lineno;
            have_ident |= 2;
        } else if (strncmp(line, "caches ", 7) == 0) {
            if (strcmp(line + 7, sizes) != 0) stale = lineno;
            have_ident |= 4;
        } else if (strncmp(line, "level ", 6) == 0) {
            int l = line[6] - '0';
            if (l < 1 || l > m->n_levels || line[7] != ' ' ||
                !parse_pair(line + 8, &fig.latency_ns[l - 1], &fig.bandwidth_gbs[l - 1]))
                bad = lineno;
            else have_level[l - 1] = 1;
        } else if (strncmp(line, "memory ", 7) == 0) {
            if (!parse_pair(line + 7, &fig.mem_latency_ns, &fig.mem_bandwidth_gbs)) bad = lineno;
            else have_mem = 1;
        } else if (strncmp(line, "peak ", 5) == 0) {
            /* peak GFLOP/s, clock GHz (0 = unknown), FMA pipes, lanes */
            const char *p = line + 5;
            if (!ps_machine_parse_decimal(&p, &fig.peak_gflops_core) || *p++ != ' ' ||
                !ps_machine_parse_decimal(&p, &fig.freq_ghz) || *p++ != ' ' || !ps_machine_parse_decimal(&p, &pipes) ||
                *p++ != ' ' || !ps_machine_parse_decimal(&p, &lanes) || *p != '\0' || pipes < 1 || pipes > 8 ||
                lanes < 1 || lanes > 64)
                bad = lineno;
            else have_peak = 1;
        } else if (strncmp(line, "stencil ", 8) == 0) {
            /* the row stencil's GFLOP/s with its rows in L1, in L2 */
            if (!parse_pair(line + 8, &fig.stencil_gflops[0], &fig.stencil_gflops[1])) bad = lineno;
            else have_stencil = 1;
        } else {
            bad = lineno;
        }
    }
    fclose(f);
    for (int i = 0; !bad && !stale && i < m->n_levels; i++)
        if (!have_level[i]) bad = -1;
    if (!bad && !stale && (!have_mem || !have_peak || !have_stencil || !have_header || have_ident != 7)) bad = -1;
    if (stale) {
        ps_machine_note(m, "profile %s ignored: stale (line %d does not match this machine)", path, stale);
        return 0;
    }
    if (bad) {
        if (bad > 0) ps_machine_note(m, "profile %s ignored: corrupt at line %d", path, bad);
        else ps_machine_note(m, "profile %s ignored: incomplete", path);
        return 0;
    }
    fig.simd_f32_lanes = (int)lanes;
    char why[200];
    if (!ps_machine_figures_check(m, &fig, why, sizeof why)) {
        ps_machine_note(m, "profile %s ignored: %s", path, why);
        return 0;
    }
    ps_machine_apply_figures(m, &fig, "profile");
    if (fig.freq_ghz == 0) m->fma_units = (int)pipes; /* the file's, where its clock is unknown */
    ps_machine_note(m, "latency/bandwidth/peak from profile %s", path);
    return 1;
}

/* Writes the profile atomically (temp file + rename), so a concurrent
 * reader never sees half a file. */
int ps_machine_save_profile(ps_machine *m)
{
    char path[640], dir[512], tmp[660], sizes[160], a[32], b[32], c[32];
    int n = ps_machine_profile_path(m, path, sizeof path);
    if (n <= 0 || (size_t)n >= sizeof path || !profile_dir(dir, sizeof dir)) {
        ps_machine_note(m, "profile not saved: no cache directory (XDG_CACHE_HOME/HOME unset)");
        return 0;
    }
    /* Only what a reader would accept: the writer and loader share the check. */
    ps_machine_figures fig;
    figures_of(m, &fig);
    char why[200];
    if (!ps_machine_figures_check(m, &fig, why, sizeof why)) {
        ps_machine_note(m, "profile not saved: %s", why);
        return 0;
    }
    if (ps_mkdir_p(dir) != 0) {
        ps_machine_note(m, "profile not saved: cannot create %s (%s)", dir, strerror(errno));
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        ps_machine_note(m, "profile not saved: cannot write in %s (%s)", dir, strerror(errno));
        if (fd >= 0) { close(fd); unlink(tmp); }
        return 0;
    }
    sizes_text(m, sizes, sizeof sizes);
    fprintf(f, "polysci-machine-profile %d\n", PROFILE_VERSION);
    fprintf(f, "# written by ps_machine_calibrate; delete this file to measure again\n");
    fprintf(f, "cpu %s\nkey %s\ncaches %s\n", m->cpu_name, m->cpu_key, sizes);
    for (int i = 0; i < m->n_levels; i++) {
        ps_machine_fmt_fixed(fig.latency_ns[i], 3, a, sizeof a);
        ps_machine_fmt_fixed(fig.bandwidth_gbs[i], 3, b, sizeof b);
        fprintf(f, "level %d %s %s\n", i + 1, a, b);
    }
    ps_machine_fmt_fixed(fig.mem_latency_ns, 3, a, sizeof a);
    ps_machine_fmt_fixed(fig.mem_bandwidth_gbs, 3, b, sizeof b);
    fprintf(f, "memory %s %s\n", a, b);
    ps_machine_fmt_fixed(fig.peak_gflops_core, 3, a, sizeof a);
    ps_machine_fmt_fixed(fig.freq_ghz, 4, c, sizeof c);
    fprintf(f, "peak %s %s %d %d\n", a, c, m->fma_units > 0 ? m->fma_units : 1, fig.simd_f32_lanes);
    ps_machine_fmt_fixed(fig.stencil_gflops[0], 3, a, sizeof a);
    ps_machine_fmt_fixed(fig.stencil_gflops[1], 3, b, sizeof b);
    fprintf(f, "stencil %s %s\n", a, b);
    int err = ferror(f);
    if (fclose(f) != 0 || err || rename(tmp, path) != 0) {
        ps_machine_note(m, "profile not saved: writing %s failed (%s)", path, strerror(errno));
        unlink(tmp);
        return 0;
    }
    ps_machine_note(m, "profile saved to %s", path);
    return 1;
}
