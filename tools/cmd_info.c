/* polysci CLI — `polysci info`: the machine model the planner ranks with. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine/machine.h" /* internal: the CLI links polysci_internal */

static void info_usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci info [--json] [--calibrate]\n"
               "Prints the machine model the planner ranks schedules with: data caches (level,\n"
               "size, line, cores sharing one instance), cores, load latency and read bandwidth\n"
               "per level and for memory, the f32 peak per core and the clock, each with where\n"
               "it came from: sizes from hwloc, sysfs, cpuid, env (PS_CACHE_SIZES), api or\n"
               "default; latency/bandwidth/peak from the built-in table (a guess), the\n"
               "calibration profile, or measured (--calibrate); the clock from sysfs, cpuinfo,\n"
               "brand, default, the profile, or measured. Once a profile exists every polysci\n"
               "context uses it. --calibrate measures (2-5 runs of ~50 ms; kept only when a\n"
               "second run confirms each figure, else exit status 1) and saves the profile, or\n"
               "loads it when one exists. Environment:\n"
               "PS_CACHE_SIZES, PS_CALIBRATE (0 = table only, force = re-measure).\n\noptions:\n");
    cli_print_options(f, opts, n);
}

static void print_size(char *buf, size_t len, size_t bytes)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) snprintf(buf, len, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0) snprintf(buf, len, "%zu KiB", bytes >> 10);
    else snprintf(buf, len, "%zu B", bytes);
}

/* What a performance figure's source means, for the text output. */
static const char *source_text(const char *src)
{
    if (!src) return "unknown";
    if (!strcmp(src, "table")) return "built-in table, a guess";
    if (!strcmp(src, "profile")) return "measured earlier, read from the profile";
    if (!strcmp(src, "measured")) return "measured just now";
    if (!strcmp(src, "sysfs")) return "sysfs cpuinfo_max_freq";
    if (!strcmp(src, "cpuinfo")) return "/proc/cpuinfo; under a hypervisor usually the TSC rate, not the core clock";
    if (!strcmp(src, "brand")) return "the brand string";
    if (!strcmp(src, "default")) return "unknown, assumed";
    return src;
}

static int print_json(const ps_machine *m)
{
    int need = ps_machine_to_json(m, NULL, 0);
    if (need < 0) {
        fprintf(stderr, "polysci info: ps_machine_to_json failed\n");
        return CLI_FAIL;
    }
    char *buf = malloc((size_t)need + 1);
    if (!buf) {
        fprintf(stderr, "polysci info: out of memory\n");
        return CLI_FAIL;
    }
    ps_machine_to_json(m, buf, (size_t)need + 1);
    printf("%s\n", buf);
    free(buf);
    return CLI_OK;
}

static void print_text(const ps_machine *m)
{
    const char *perf = m->perf_source ? m->perf_source : "?";
    printf("polysci %s machine model\n", ps_version());
    printf("cpu        %s%s%s%s\n", m->cpu_name[0] ? m->cpu_name : "(unknown)", m->cpu_key[0] ? " [" : "",
           m->cpu_key, m->cpu_key[0] ? "]" : "");
    printf("cores      %d physical, %d hardware threads available to this process\n", m->n_cores, m->n_pus);
    printf("peak       %.1f GFLOP/s f32 per core", m->peak_gflops_core);
    if (m->fma_units > 0 && m->simd_f32_lanes > 0 && m->freq_ghz > 0)
        printf(" = %d x %d-lane FMA per cycle x 2 x %.3f GHz", m->fma_units, m->simd_f32_lanes, m->freq_ghz);
    printf(" [%s: %s]\n", m->peak_source ? m->peak_source : "?", source_text(m->peak_source));
    printf("stencil    %.1f GFLOP/s per core with its rows in L1, %.1f in L2 (a 5-point row stencil) [%s: %s]\n",
           m->stencil_gflops[0], m->stencil_gflops[1], m->peak_source ? m->peak_source : "?", source_text(m->peak_source));
    if (m->freq_ghz > 0)
        printf("clock      %.3f GHz [%s: %s]\n", m->freq_ghz, m->freq_source ? m->freq_source : "?",
               source_text(m->freq_source));
    else
        printf("clock      unknown\n");
    char path[4096];
    int n = ps_machine_profile_path(m, path, sizeof path);
    if (n > 0 && (size_t)n < sizeof path)
        printf("profile    %s (%s)\n", path, access(path, R_OK) == 0 ? "present" : "not present");
    else
        printf("profile    none (no cache directory: XDG_CACHE_HOME and HOME unset)\n");
    if (!strcmp(perf, "table"))
        printf("           latency/bandwidth/peak marked table are guesses; 'polysci info --calibrate' measures them\n");

    /* size_from: where the size came from; perf_from: latency and bandwidth. */
    printf("\n%-7s %10s %6s %10s %-9s %11s %15s  %s\n", "level", "size", "line", "shared_by", "size_from",
           "latency_ns", "bandwidth_GB/s", "perf_from");
    for (int i = 0; i < m->n_levels && i < PS_MAX_CACHE_LEVELS; i++) {
        const ps_cache_level *c = &m->levels[i];
        char size[32], lvl[8];
        print_size(size, sizeof size, c->size_bytes);
        snprintf(lvl, sizeof lvl, "L%d", c->level);
        printf("%-7s %10s %6d %10d %-9s %11.2f %15.1f  %s\n", lvl, size, c->line_bytes, c->shared_by,
               c->source ? c->source : "?", c->latency_ns, c->bandwidth_gbs, perf);
    }
    printf("%-7s %10s %6s %10s %-9s %11.2f %15.1f  %s\n", "memory", "-", "-", "-", "-", m->mem_latency_ns,
           m->mem_bandwidth_gbs, perf);

    if (m->notes[0]) {
        printf("\nnotes:\n");
        /* The notes are joined by "; "; one per line (not splitting inside parentheses). */
        const char *p = m->notes, *start = p;
        int depth = 0;
        for (;; p++) {
            if (*p == '(') depth++;
            else if (*p == ')' && depth > 0) depth--;
            if (!*p || (depth == 0 && p[0] == ';' && p[1] == ' ')) {
                printf("  - %.*s\n", (int)(p - start), start);
                if (!*p) break;
                start = ++p + 1;
            }
        }
    }
}

int cmd_info(int argc, char **argv)
{
    const char *cmd = "info";
    int json = 0, calibrate = 0;
    cli_opt opts[] = {
        {"json", CLI_OPT_FLAG, &json, 0, 0, "print the model as one JSON object", 0},
        {"calibrate", CLI_OPT_FLAG, &calibrate, 0, 0,
         "load the calibration profile, or measure (~0.1-0.2 s) and save it", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        info_usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;

    ps_machine m;
    ps_status st = ps_machine_detect(&m);
    if (st != PS_SUCCESS) {
        /* m is still filled (only PS_CACHE_SIZES can be wrong): report, go on. */
        cli_report_status("ps_machine_detect", st);
        fprintf(stderr, "polysci info: showing the detected hierarchy without the override\n");
    }
    /* ps_machine_detect already loaded a valid profile: calibrating would only
     * load it again (PS_CALIBRATE=force re-measures). */
    const char *env = getenv("PS_CALIBRATE");
    int have_profile = m.perf_source && !strcmp(m.perf_source, "profile") && !(env && !strcmp(env, "force"));
    int measure = calibrate && !have_profile && !(env && !strcmp(env, "0"));
    if (measure && isatty(STDERR_FILENO))
        fprintf(stderr, "polysci info: calibrating (pointer chase, streaming reads, FMA peak, row stencil; 2-3 runs of ~50 ms)...\n");
    if (calibrate && !have_profile && (st = ps_machine_calibrate(&m, 1)) != PS_SUCCESS) {
        cli_report_status("ps_machine_calibrate", st);
        fprintf(stderr, "polysci info: calibration failed; the numbers are table values\n");
        rc = CLI_FAIL;
    } else if (measure && m.perf_source && strcmp(m.perf_source, "measured") != 0) {
        /* The runs disagreed or ran out of time: nothing was cached. */
        fprintf(stderr, "polysci info: calibration not kept (see the notes); run it again on a quiet machine\n");
        rc = CLI_FAIL;
    }
    int prc = json ? print_json(&m) : (print_text(&m), CLI_OK);
    return rc ? rc : prc;
}
