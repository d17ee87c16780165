/* polysci bench pipeline — the benchmark pipelines (pipelines.h) with
 * polysci's plans (DP, greedy and no fusion) side by side with Halide 14's
 * schedules (bench/pipeline/halide_pipelines.py: Halide's hand-written app
 * schedules and its autoschedulers) on the same algorithm and image size.
 *
 * Every measurement is its own process (`polysci pipeline --json`, or the
 * Halide script), the implementations taking turns in an order that rotates
 * from round to round, so neither side always runs after the other; each
 * process plans or compiles once, warms up, then times --reps executions
 * and reports their median. The report: per pipeline the median over rounds
 * of each implementation, the ratios against the best Halide schedule and
 * against polysci's own unfused and greedy plans, and the fraction of the
 * memory-bandwidth floor (the input read once and the output written once
 * at the machine model's memory bandwidth) the DP plan reaches. */
#include "cli.h"
#include "pipelines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine/machine.h"
#include "plan/context_impl.h"

#define MAX_IMPLS 8
#define MAX_ROUNDS 64

typedef struct impl {
    char name[32];     /* "polysci-dp", "halide-manual", ... */
    int is_halide;
    char arg[32];      /* fusion mode or Halide schedule */
    double ms[MAX_ROUNDS];
    double setup_s;    /* planning (polysci) or schedule + compile (Halide), last round */
    int ok;
} impl;


/* A ratio as the table writes it: "1.23x", or "-" where an implementation
 * did not run (a mode or schedule left out, or one that failed). */
static void ratio_text(char *buf, size_t len, double r)
{
    if (isfinite(r)) snprintf(buf, len, "%.2fx", r);
    else snprintf(buf, len, "-");
}
static void usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci bench pipeline [options]\n\n"
               "Times the benchmark pipelines with polysci's plans and Halide 14's schedules,\n"
               "alternating processes, and reports medians, ratios and the bandwidth floor.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

int cli_bench_pipeline(int argc, char **argv)
{
    static const char cmd[] = "bench pipeline";
    const char *pipelines_arg = "harris,unsharp,unsharp_pm,blur3x3,laplacian", *modes_arg = "dp,greedy,none";
    const char *halide_arg = "manual,mullapudi2016,adams2019", *csv = NULL, *png = NULL, *md = NULL;
    int64_t width = 4256, height = 2832, threads = 2, rounds = 3, reps = 10;
    cli_opt opts[] = {
        {"pipelines", CLI_OPT_STRING, &pipelines_arg, 0, 0, "LIST  comma-separated (default all five)", 0},
        {"modes", CLI_OPT_STRING, &modes_arg, 0, 0, "LIST  polysci fusion modes (default dp,greedy,none)", 0},
        {"halide", CLI_OPT_STRING, &halide_arg, 0, 0,
         "LIST  Halide schedules: naive, manual, mullapudi2016, adams2019, li2018, or 'none'", 0},
        {"width", CLI_OPT_INT, &width, 1, 1 << 20, "W  image columns (default 4256)", 0},
        {"height", CLI_OPT_INT, &height, 1, 1 << 20, "H  image rows (default 2832)", 0},
        {"threads", CLI_OPT_INT, &threads, 1, 4096, "T  threads of every implementation (default 2)", 0},
        {"rounds", CLI_OPT_INT, &rounds, 1, MAX_ROUNDS, "R  rounds, each implementation once per round (default 3)", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  timed executions per process (default 10)", 0},
        {"csv", CLI_OPT_STRING, &csv, 0, 0, "FILE  every process's median, one row each", 0},
        {"markdown", CLI_OPT_STRING, &md, 0, 0, "FILE  the summary table", 0},
        {"png", CLI_OPT_STRING, &png, 0, 0, "FILE  bar chart of the speedups over the best Halide schedule (gnuplot)", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    char pbuf[512], mbuf[256], hbuf[256];
    snprintf(pbuf, sizeof pbuf, "%s", pipelines_arg);
    snprintf(mbuf, sizeof mbuf, "%s", modes_arg);
    snprintf(hbuf, sizeof hbuf, "%s", halide_arg);
    char *names[CLI_N_PIPELINES], *modes[4], *scheds[6];
    int n_names = cli_split_list(pbuf, names, CLI_N_PIPELINES), n_modes = cli_split_list(mbuf, modes, 4);
    int n_scheds = strcmp(halide_arg, "none") ? cli_split_list(hbuf, scheds, 6) : 0;
    static const char *const mode_names[3] = {"dp", "greedy", "none"};
    static const char *const sched_names[5] = {"naive", "manual", "mullapudi2016", "adams2019", "li2018"};
    for (int i = 0; i < n_names; i++)
        if (cli_choice(cmd, "--pipelines", names[i], cli_pipeline_names, CLI_N_PIPELINES) < 0) return CLI_USAGE;
    for (int i = 0; i < n_modes; i++)
        if (cli_choice(cmd, "--modes", modes[i], mode_names, 3) < 0) return CLI_USAGE;
    for (int i = 0; i < n_scheds; i++)
        if (cli_choice(cmd, "--halide", scheds[i], sched_names, 5) < 0) return CLI_USAGE;
    if (n_modes + n_scheds > MAX_IMPLS || n_modes + n_scheds == 0) {
        fprintf(stderr, "polysci %s: 1 to %d implementations\n", cmd, MAX_IMPLS);
        return CLI_USAGE;
    }
    char script[4096];
    if (cli_source_file("bench/pipeline/halide_pipelines.py", script, sizeof script) && n_scheds) {
        fprintf(stderr, "polysci %s: the Halide side needs %s (a source tree); pass --halide none\n", cmd, script);
        return CLI_FAIL;
    }
    char self[4096];
    if (cli_self_exe(cmd, self, sizeof self)) return CLI_FAIL;

    /* The machine model: threads, the L2 the autoschedulers are told of,
     * the memory bandwidth of the floor. */
    ps_context *ctx = NULL;
    if (cli_context_create((int)threads, &ctx)) return CLI_FAIL;
    const ps_machine *m = &ctx->machine;
    size_t l2 = ps_machine_cache_bytes(m, 2);
    double bw = m->mem_bandwidth_gbs;
    const char *bw_source = m->perf_source ? m->perf_source : "table";
    ps_context_destroy(ctx);

    FILE *fcsv = csv ? fopen(csv, "w") : NULL;
    if (csv && !fcsv) {
        fprintf(stderr, "polysci %s: cannot write %s\n", cmd, csv);
        return CLI_FAIL;
    }
    if (fcsv) fprintf(fcsv, "pipeline,implementation,round,median_ms,setup_s,width,height,threads\n");
    FILE *fmd = md ? fopen(md, "w") : stdout;
    if (!fmd) {
        fprintf(stderr, "polysci %s: cannot write %s\n", cmd, md);
        if (fcsv) fclose(fcsv);
        return CLI_FAIL;
    }
    char dat_path[] = "/tmp/polysci-bench-pipeline-XXXXXX";
    int dat_fd = png ? mkstemp(dat_path) : -1;
    FILE *fdat = dat_fd >= 0 ? fdopen(dat_fd, "w") : NULL;

    fprintf(fmd, "| pipeline | polysci DP ms | best Halide ms (schedule) | DP vs best Halide | DP vs unfused | DP vs greedy | "
                 "bandwidth floor ms | floor / DP |\n|---|---|---|---|---|---|---|---|\n");
    double log_sum_h = 0, log_sum_u = 0;
    int n_h = 0, n_u = 0;
    rc = CLI_OK;
    for (int pi = 0; pi < n_names; pi++) {
        impl im[MAX_IMPLS];
        int ni = 0;
        memset(im, 0, sizeof im);
        for (int i = 0; i < n_modes; i++, ni++) {
            snprintf(im[ni].name, sizeof im[ni].name, "polysci-%s", modes[i]);
            snprintf(im[ni].arg, sizeof im[ni].arg, "%s", modes[i]);
        }
        for (int i = 0; i < n_scheds; i++, ni++) {
            snprintf(im[ni].name, sizeof im[ni].name, "halide-%s", scheds[i]);
            snprintf(im[ni].arg, sizeof im[ni].arg, "%s", scheds[i]);
            im[ni].is_halide = 1;
        }
        for (int i = 0; i < ni; i++) im[i].ok = 1;
        for (int64_t r = 0; r < rounds; r++)
            for (int t = 0; t < ni; t++) {
                impl *I = &im[(t + r) % ni];
                char command[8192], line[65536];
                if (I->is_halide)
                    snprintf(command, sizeof command,
                             "HL_NUM_THREADS=%lld /usr/bin/python3 '%s' time --bench %s --sched %s --size %lldx%lld "
                             "--reps %lld --warmup 2 --machine %lld,%zu,40%s 2>/dev/null",
                             (long long)threads, script, names[pi], I->arg, (long long)width, (long long)height,
                             (long long)reps, (long long)threads, l2,
                             /* harris reads its input unclamped; an autoscheduler's tiles may read past the
                              * image (bench/pipeline/README.md), so its buffer gets a margin that the
                              * output never depends on */
                             strcmp(names[pi], "harris") ? "" : " --pad 16");
                else
                    snprintf(command, sizeof command,
                             "'%s' pipeline %s --fusion %s --threads %lld --width %lld --height %lld --reps %lld --json", self,
                             names[pi], I->arg, (long long)threads, (long long)width, (long long)height, (long long)reps);
                double ms = NAN;
                if (cli_run_json(command, line, sizeof line, NULL) == 0) ms = cli_json_number(line, "median_ms");
                if (!isfinite(ms)) {
                    fprintf(stderr, "polysci %s: %s on %s failed\n", cmd, I->name, names[pi]);
                    I->ok = 0;
                    rc = CLI_FAIL;
                }
                I->ms[r] = ms;
                I->setup_s = I->is_halide ? cli_json_number(line, "schedule_s") + cli_json_number(line, "compile_s")
                                          : cli_json_number(line, "plan_ms") / 1e3;
                if (fcsv)
                    fprintf(fcsv, "%s,%s,%lld,%.4f,%.4f,%lld,%lld,%lld\n", names[pi], I->name, (long long)r, ms, I->setup_s,
                            (long long)width, (long long)height, (long long)threads);
                if (cli_progress_enabled())
                    fprintf(stderr, "\r%s %s round %lld: %.3f ms        ", names[pi], I->name, (long long)r, ms);
            }
        if (cli_progress_enabled()) fprintf(stderr, "\n");
        double med[MAX_IMPLS];
        for (int i = 0; i < ni; i++) med[i] = im[i].ok ? cli_median(im[i].ms, (int)rounds) : NAN;
        int dp = -1, gr = -1, un = -1, bh = -1;
        for (int i = 0; i < ni; i++) {
            if (!im[i].is_halide && !strcmp(im[i].arg, "dp")) dp = i;
            if (!im[i].is_halide && !strcmp(im[i].arg, "greedy")) gr = i;
            if (!im[i].is_halide && !strcmp(im[i].arg, "none")) un = i;
            if (im[i].is_halide && isfinite(med[i]) && (bh < 0 || med[i] < med[bh])) bh = i;
        }
        /* The floor: 3 input channels read, the output written once. */
        ps_graph *g = NULL;
        double floor_ms = NAN;
        if (cli_pipeline_build(names[pi], 1, height, width, &g) == PS_SUCCESS) {
            ps_tensor_info ii = {.struct_size = sizeof ii}, oi = {.struct_size = sizeof oi};
            ps_graph_tensor_info(g, ps_graph_input(g, 0), &ii);
            ps_graph_tensor_info(g, ps_graph_output(g, 0), &oi);
            double bytes = 4.0 * (double)(ii.n * ii.c * ii.h * ii.w + oi.n * oi.c * oi.h * oi.w);
            floor_ms = bw > 0 ? bytes / (bw * 1e9) * 1e3 : NAN;
            ps_graph_destroy(g);
        }
        double d = dp >= 0 ? med[dp] : NAN;
        char best[64] = "-", vs_h[24], vs_u[24], vs_g[24];
        if (bh >= 0) snprintf(best, sizeof best, "%.2f (%s)", med[bh], im[bh].arg);
        ratio_text(vs_h, sizeof vs_h, bh >= 0 ? med[bh] / d : NAN);
        ratio_text(vs_u, sizeof vs_u, un >= 0 ? med[un] / d : NAN);
        ratio_text(vs_g, sizeof vs_g, gr >= 0 ? med[gr] / d : NAN);
        fprintf(fmd, "| %s | %.2f | %s | %s | %s | %s | %.2f | %.2f |\n", names[pi], d, best, vs_h, vs_u, vs_g, floor_ms,
                floor_ms / d);
        if (bh >= 0 && isfinite(med[bh] / d)) {
            log_sum_h += log(med[bh] / d);
            n_h++;
        }
        if (un >= 0 && isfinite(med[un] / d)) {
            log_sum_u += log(med[un] / d);
            n_u++;
        }
        if (fdat) {
            fprintf(fdat, "%s", names[pi]);
            /* speedups over the best Halide schedule, or over polysci unfused without Halide */
            int base = bh >= 0 ? bh : un;
            for (int i = 0; i < ni; i++) fprintf(fdat, " %.4f", base >= 0 ? med[base] / med[i] : NAN);
            fprintf(fdat, "\n");
        }
        if (pi == n_names - 1 && fdat) {
            fclose(fdat);
            fdat = NULL;
            char gp[16384];
            int off = snprintf(gp, sizeof gp,
                               "gnuplot -e \"set terminal pngcairo size 1000,520 noenhanced; set output '%s'; set style data histograms; "
                               "set style histogram clustered gap 1; set style fill solid 0.8 border -1; set ylabel "
                               "'speedup over %s'; set key top left; set grid ytics; set yrange [0:*]; "
                               "set title 'Pipelines %lldx%lld, %lld threads (medians of %lld rounds)'; plot ",
                               png, n_scheds ? "the best Halide schedule" : "polysci unfused", (long long)width,
                               (long long)height, (long long)threads, (long long)rounds);
            for (int i = 0; i < ni && off < (int)sizeof gp; i++)
                off += snprintf(gp + off, sizeof gp - (size_t)off, "%s'%s' using %d:xtic(1) title '%s'", i ? ", " : "",
                                dat_path, i + 2, im[i].name);
            snprintf(gp + off, sizeof gp - (size_t)off, "\"");
            if (system(gp) != 0) {
                fprintf(stderr, "polysci %s: gnuplot failed (Debian: gnuplot-nox)\n", cmd);
                rc = CLI_FAIL;
            }
        }
    }
    char g_h[24], g_u[24];
    ratio_text(g_h, sizeof g_h, n_h ? exp(log_sum_h / n_h) : NAN);
    ratio_text(g_u, sizeof g_u, n_u ? exp(log_sum_u / n_u) : NAN);
    fprintf(fmd, "\ngeomean: %s against the best Halide schedule, %s against polysci unfused. "
                 "Floor: input + output once at %.1f GB/s (memory bandwidth, %s).\n",
            g_h, g_u, bw, bw_source);
    if (fcsv) fclose(fcsv);
    if (md) fclose(fmd);
    if (fdat) fclose(fdat);
    if (dat_fd >= 0) unlink(dat_path);
    return rc;
}
