/* polysci bench stencil — the iterated-stencil benchmarks (stencils.h) with
 * polysci's tilings (the cost model's choice and each of the four forced)
 * side by side with Halide 14 running the T steps as T stages
 * (bench/stencil/halide_stencils.py: its hand schedule and its
 * autoschedulers), on the same grid, T, coefficients and boundaries.
 *
 * Every measurement is its own process (`polysci stencil --json`, or the
 * Halide script under `timeout`), the implementations taking turns in an
 * order that rotates from round to round, as in `bench pipeline`. Each
 * process plans or compiles once, warms up, times --reps executions and
 * reports their median; the report is the median over rounds. A Halide
 * process that runs past --halide-timeout (an autoscheduler facing T
 * stages can take very long) is a result, "did not finish in N s", and is
 * not started again in later rounds: its compilation is deterministic.
 *
 * Bounds. GFLOP/s count the flops per point as bench/stencil's Halide
 * versions write the update (stencils.h) for both sides. The compute bound
 * is those flops at the machine model's f32 peak of the threads' cores;
 * the memory bound of step-by-step execution is every step reading and
 * writing each array once at the model's memory bandwidth, the traffic a
 * time tiling exists to avoid (a time-tiled run may beat it).
 *
 * --sweep NAME times the overlapped and split tilings over forced tile
 * sizes (one band height), printing the redundant work of each from its
 * plan's statistics: split tiles do none, overlapped tiles a halo that
 * grows as the tiles shrink; where the halo passes ~20% split tiles should
 * win (seed 003). */
#include "cli.h"
#include "stencils.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine/machine.h"
#include "plan/context_impl.h"

#define MAX_IMPLS 48
#define MAX_ROUNDS 64
#define MAX_CASES 16
#define MAX_SIZES 24

enum run_status { RUN_OK, RUN_TIMEOUT, RUN_FAILED };

typedef struct impl {
    char name[48];      /* "polysci-auto", "halide-manual"; sweep: "overlap" */
    int is_halide;
    char arg[32];       /* tiling or Halide schedule */
    int64_t tile;       /* sweep: the forced tile size; 0 = the model's */
    double ms[MAX_ROUNDS];
    enum run_status status; /* TIMEOUT or FAILED ends its rounds */
    double setup_s;     /* planning, or Halide's schedule + compile, last run */
    double redundant;   /* polysci: the plan's redundant fraction */
    char plan[160];     /* what ran: tiling, band, tile (polysci); group, tile (Halide manual) */
} impl;

typedef struct bench_case {
    const cli_stencil_bench *b;
    int64_t n[PS_ITER_MAX_DIMS];
    int64_t steps;
    ps_iter_info info;
    char label[48];     /* "heat2d T=500" */
    char size[64];      /* "4000x4000", polysci's order (outermost first) */
    char shape[64];     /* "4000,4000", Halide's order (x first) */
} bench_case;

typedef struct bench_env {
    const char *cmd;
    char self[4096], script[4096];
    int64_t threads, rounds, reps, warmup, band;
    int64_t sweep_dims, rest_tile; /* --sweep: tiled dimensions, the others' tile (0: untiled) */
    double halide_timeout;
    size_t l2;
    double peak_gflops;     /* f32, all threads */
    const char *peak_source;
    double bw_gbs;
    const char *bw_source;
    FILE *csv;
} bench_env;

/* polysci's tilings by their --tiling names, and split in seed 003's
 * phased order (--split-order phases; "split" runs the default order) */
enum { N_TILING_NAMES = 6, SPLIT_PHASES = 5 };
static const char *const tiling_names[N_TILING_NAMES] = {"auto", "step", "overlap", "split", "hybrid", "split-phases"};
static const char *const sched_names[5] = {"naive", "manual", "mullapudi2016", "adams2019", "li2018"};

static void usage(FILE *f, const cli_opt *opts, size_t n)
{
    fprintf(f, "usage: polysci bench stencil [options]\n"
               "       polysci bench stencil --sweep NAME[:T] [--tile-sizes LIST] [--band B] [options]\n\n"
               "Times the iterated-stencil benchmarks (heat1d 160000 T=1000, heat2d 4000x4000 T=64 and\n"
               "T=500, heat3d 150^3 T=100, jacobi2d 4000x4000 T=64) with polysci's tilings and Halide 14's\n"
               "schedules, each measurement its own process, the implementations alternating in an order\n"
               "that rotates per round. Reports medians over rounds, GFLOP/s, the fraction of the compute\n"
               "bound and the memory bound of step-by-step execution. A stencil NAME:T overrides its T.\n"
               "--sweep times the overlapped and split tilings (split in both orders) over forced tile\n"
               "sizes along the first --sweep-dims dimensions (the others untiled, or --rest-tile) with\n"
               "the redundant work of each plan, and where split tiles overtake overlapped ones.\n\noptions:\n");
    cli_print_options(f, opts, n);
}

/* "NAME" or "NAME:T" into a case over the benchmark's grid, or size_n in
 * every dimension when > 0; steps_override >= 0 replaces the benchmark's
 * T where the name gives none. */
static int make_case(const char *cmd, const char *text, int64_t size_n, int64_t steps_override, bench_case *c)
{
    memset(c, 0, sizeof *c);
    char name[32];
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), text);
    if (cli_choice(cmd, "stencils", name, cli_stencil_names, CLI_N_STENCILS) < 0) return CLI_USAGE;
    c->b = cli_stencil_find(name);
    c->steps = steps_override >= 0 ? steps_override : c->b->steps;
    if (colon && cli_parse_int(cmd, "stencils", colon + 1, 0, 1 << 30, &c->steps)) return CLI_USAGE;
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) c->n[d] = d < c->b->ndim ? (size_n > 0 ? size_n : c->b->n[d]) : 1;
    ps_iter *it = NULL;
    ps_status st = cli_stencil_build(c->b, c->n, c->steps, PS_ITER_FIXED, &it);
    c->info.struct_size = sizeof c->info;
    if (!st) st = ps_iter_get_info(it, &c->info);
    ps_iter_destroy(it);
    if (st) {
        cli_report_status("bench stencil: building the descriptor", st);
        return CLI_USAGE;
    }
    snprintf(c->label, sizeof c->label, "%s T=%lld", name, (long long)c->steps); /* the x labels of the chart */
    int o1 = 0, o2 = 0;
    for (int d = 0; d < c->b->ndim; d++) {
        o1 += snprintf(c->size + o1, sizeof c->size - (size_t)o1, "%s%lld", d ? "x" : "", (long long)c->n[d]);
        o2 += snprintf(c->shape + o2, sizeof c->shape - (size_t)o2, "%s%lld", d ? "," : "",
                       (long long)c->n[c->b->ndim - 1 - d]);
    }
    return CLI_OK;
}

/* The integers of the JSON array after "key": joined with 'x' ("256x398"),
 * in reverse order when `reverse` (Halide's x-first order into polysci's
 * outermost-first one). */
static void json_dims(const char *line, const char *key, int reverse, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(line, pat);
    out[0] = '\0';
    if (!p) return;
    long long v[PS_ITER_MAX_DIMS];
    int n = 0;
    for (p += strlen(pat); n < PS_ITER_MAX_DIMS && *p && *p != ']';) {
        char *end;
        v[n] = strtoll(p, &end, 10);
        if (end == p) break;
        n++;
        p = end + strspn(end, ", ");
    }
    int o = 0;
    for (int i = 0; i < n && o < (int)len; i++)
        o += snprintf(out + o, len - (size_t)o, "%s%lld", i ? "x" : "", v[reverse ? n - 1 - i : i]);
}

/* ",v" with the given decimals, or "," when v is not finite. */
static void csv_num(FILE *f, double v, int decimals)
{
    if (isfinite(v)) fprintf(f, ",%.*f", decimals, v);
    else fputc(',', f);
}

/* The median of the rounds that ran, NAN when none did. */
static double impl_median(const impl *I, int64_t rounds)
{
    double v[MAX_ROUNDS];
    int n = 0;
    for (int64_t r = 0; r < rounds; r++)
        if (isfinite(I->ms[r])) v[n++] = I->ms[r];
    return n ? cli_median(v, n) : NAN;
}

/* The sweep's tile along dimension d: the swept size along the first
 * E->sweep_dims dimensions, E->rest_tile or the extent (untiled) along
 * the others. */
static int64_t sweep_tile(const bench_env *E, const bench_case *c, int64_t size, int d)
{
    return d < E->sweep_dims ? size : E->rest_tile > 0 ? E->rest_tile : c->n[d];
}

/* One process of implementation I on case c in round r: its median into
 * I->ms[r] (NAN when it did not run), a CSV row. */
static void run_one(const bench_env *E, const bench_case *c, impl *I, int64_t r)
{
    char command[16384], line[65536], extra[128] = "";
    double flops = (double)c->b->flops_per_point * (double)c->info.updated_points * (double)c->steps;
    I->ms[r] = NAN;
    if (I->status != RUN_OK) return;
    if (I->is_halide) {
        snprintf(command, sizeof command,
                 "HL_NUM_THREADS=%lld timeout -k 10 %g /usr/bin/python3 '%s' time --bench %s --shape %s --T %lld "
                 "--sched %s --reps %lld --warmup %lld --machine %lld,%zu,40 2>/dev/null",
                 (long long)E->threads, E->halide_timeout, E->script, c->b->name, c->shape, (long long)c->steps, I->arg,
                 (long long)E->reps, (long long)E->warmup, (long long)E->threads, E->l2);
    } else {
        int o = 0;
        for (int d = 0; I->tile > 0 && d < c->b->ndim; d++)
            o += snprintf(extra + o, sizeof extra - (size_t)o, "%s%lld", d ? "x" : " --tile ",
                          (long long)sweep_tile(E, c, I->tile, d));
        /* step by step has no bands to set */
        if (E->band > 0 && strcmp(I->arg, "step"))
            snprintf(extra + o, sizeof extra - (size_t)o, " --band %lld", (long long)E->band);
        const int phases = !strcmp(I->arg, tiling_names[SPLIT_PHASES]);
        snprintf(command, sizeof command,
                 "'%s' stencil %s --size %s --T %lld --tiling %s%s --threads %lld --reps %lld --warmup %lld%s --json", E->self,
                 c->b->name, c->size, (long long)c->steps, phases ? "split" : I->arg, phases ? " --split-order phases" : "",
                 (long long)E->threads, (long long)E->reps, (long long)E->warmup, extra);
    }
    int code = -1;
    int ran = cli_run_json(command, line, sizeof line, &code) == 0;
    char status[32] = "";
    if (I->is_halide) cli_json_text(line, "status", status, sizeof status);
    double ms = ran ? cli_json_number(line, "median_ms") : NAN;
    /* timeout's status when it stopped the command (124), or killed it after -k (137) */
    if (I->is_halide && (code == 124 || code == 137)) {
        I->status = RUN_TIMEOUT;
        /* A compilation near the limit can finish in one round and not in the
         * next: the rounds that finished still count, and the text says so. */
        int finished = 0;
        for (int k = 0; k < r; k++) finished += isfinite(I->ms[k]);
        if (finished)
            snprintf(I->plan, sizeof I->plan, "schedule + compile %.1f s; %d of %d rounds past the %g s limit",
                     I->setup_s, (int)(r + 1 - finished), (int)(r + 1), E->halide_timeout);
        else snprintf(I->plan, sizeof I->plan, "did not finish in %g s", E->halide_timeout);
    } else if (!ran || !isfinite(ms) || (I->is_halide && (strcmp(status, "ok") || cli_json_number(line, "nan") > 0))) {
        I->status = RUN_FAILED;
        snprintf(I->plan, sizeof I->plan, "failed (exit status %d%s)", code,
                 I->is_halide && line[0] && strcmp(status, "ok") ? ", Halide: FAILED" : "");
        fprintf(stderr, "polysci %s: %s on %s failed\n", E->cmd, I->name, c->label);
        ms = NAN;
    } else if (I->is_halide) {
        I->setup_s = cli_json_number(line, "schedule_s") + cli_json_number(line, "compile_s");
        char tile[32];
        json_dims(line, "tile", 1, tile, sizeof tile);
        if (tile[0]) snprintf(I->plan, sizeof I->plan, "group %.0f, tile %s", cli_json_number(line, "group"), tile);
        else snprintf(I->plan, sizeof I->plan, "schedule + compile %.1f s", I->setup_s);
    } else {
        char tiling[16], tile[32];
        cli_json_text(line, "tiling", tiling, sizeof tiling);
        json_dims(line, "tile", 0, tile, sizeof tile);
        I->setup_s = cli_json_number(line, "plan_ms") / 1e3;
        I->redundant = cli_json_number(line, "redundant");
        snprintf(I->plan, sizeof I->plan, "%s, band %.0f, tile %s, redundant %.1f%%", tiling,
                 cli_json_number(line, "band"), tile, 100 * I->redundant);
    }
    I->ms[r] = ms;
    if (E->csv) {
        char tiling[16] = "", tile[32] = "";
        int planned = !I->is_halide && isfinite(ms);
        if (planned) {
            cli_json_text(line, "tiling", tiling, sizeof tiling);
            json_dims(line, "tile", 0, tile, sizeof tile);
        }
        fprintf(E->csv, "%s,%lld,%s,%s,%lld,%lld,%s", c->b->name, (long long)c->steps, c->size, I->name, (long long)I->tile,
                (long long)r, I->status == RUN_OK ? "ok" : I->status == RUN_TIMEOUT ? "timeout" : "failed");
        csv_num(E->csv, ms, 4);
        csv_num(E->csv, flops / (ms * 1e6), 3);
        csv_num(E->csv, I->status == RUN_OK ? I->setup_s : NAN, 4);
        fprintf(E->csv, ",%s", tiling);
        csv_num(E->csv, planned ? cli_json_number(line, "band") : NAN, 0);
        fprintf(E->csv, ",%s", tile);
        csv_num(E->csv, planned ? I->redundant : NAN, 6);
        fprintf(E->csv, ",%lld\n", (long long)E->threads);
        fflush(E->csv);
    }
    if (cli_progress_enabled() && I->tile)
        fprintf(stderr, "\r%s %s tile %lld round %lld: %.3f ms        ", c->label, I->name, (long long)I->tile, (long long)r, ms);
    else if (cli_progress_enabled())
        fprintf(stderr, "\r%s %s round %lld: %.3f ms        ", c->label, I->name, (long long)r, ms);
}

/* Every implementation once per round, the order rotating. */
static void run_rounds(const bench_env *E, const bench_case *c, impl *im, int ni)
{
    for (int64_t r = 0; r < E->rounds; r++)
        for (int t = 0; t < ni; t++) run_one(E, c, &im[(t + r) % ni], r);
    if (cli_progress_enabled()) fprintf(stderr, "\n");
}

/* v with two decimals and suffix into out, "-" when it is not finite. */
static void fmt_value(char *out, size_t len, double v, const char *suffix)
{
    if (isfinite(v)) snprintf(out, len, "%.2f%s", v, suffix);
    else snprintf(out, len, "-");
}

/* A temporary file: its path into path (a "/tmp/...XXXXXX" template), the stream open for writing. */
static FILE *temp_file(char *path)
{
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) {
        close(fd);
        unlink(path);
    }
    return f;
}

/* A gnuplot script in a temporary file (path into gp_path) that draws a
 * width x 560 PNG into png; the caller adds the plot, gnuplot_end runs it. */
static FILE *gnuplot_begin(char *gp_path, const char *png, int width)
{
    FILE *gp = temp_file(gp_path);
    if (gp) fprintf(gp, "set terminal pngcairo size %d,560 noenhanced\nset output '%s'\nset datafile missing 'nan'\n", width, png);
    return gp;
}

/* Closes and runs the script, removes it and the data file; 0, or -1 with a message. */
static int gnuplot_end(const char *cmd, FILE *gp, const char *gp_path, const char *dat_path)
{
    int rc = -1;
    if (gp) {
        fclose(gp);
        char command[4200];
        snprintf(command, sizeof command, "gnuplot '%s'", gp_path);
        rc = system(command) == 0 ? 0 : -1;
        unlink(gp_path);
    }
    if (rc) fprintf(stderr, "polysci %s: gnuplot failed (Debian: gnuplot-nox)\n", cmd);
    unlink(dat_path);
    return rc;
}

static void case_header(FILE *f, const bench_env *E, const bench_case *c, double flops, double compute_ms, double memory_ms)
{
    fprintf(f, "\n### %s %s, T = %lld\n\n%d flops/point x %lld interior points x T = %.3g flops; compute bound %.2f ms "
               "at %.1f GFLOP/s; step-by-step memory bound %.2f ms (%lld x %d array%s x 2 x 4 bytes per step at %.1f GB/s)\n\n",
            c->b->name, c->size, (long long)c->steps, c->b->flops_per_point, (long long)c->info.updated_points, flops, compute_ms,
            E->peak_gflops, memory_ms, (long long)(c->info.n[0] * c->info.n[1] * c->info.n[2]), c->info.n_arrays,
            c->info.n_arrays == 1 ? "" : "s", E->bw_gbs);
}

/* The bounds of case c: flops, compute-bound ms, step-by-step memory-bound ms. */
static void case_bounds(const bench_env *E, const bench_case *c, double *flops, double *compute_ms, double *memory_ms)
{
    double points = (double)(c->info.n[0] * c->info.n[1] * c->info.n[2]);
    *flops = (double)c->b->flops_per_point * (double)c->info.updated_points * (double)c->steps;
    *compute_ms = E->peak_gflops > 0 ? *flops / (E->peak_gflops * 1e6) : NAN;
    *memory_ms = E->bw_gbs > 0 ? (double)c->steps * c->info.n_arrays * points * 8.0 / (E->bw_gbs * 1e6) : NAN;
}

/* Plans I's forced tiling and tile size here first: a size the tiling
 * cannot take (split uprights narrower than 2 x slope x band) is a result
 * of the sweep, "no plan", not a failed process. */
static void sweep_check_plan(ps_context *ctx, const bench_env *E, const bench_case *c, impl *I)
{
    ps_iter *it = NULL;
    ps_iter_plan *plan = NULL;
    ps_iter_options o;
    ps_iter_options_init(&o);
    int k = cli_choice("", "", I->arg, tiling_names, N_TILING_NAMES);
    o.tiling = k == SPLIT_PHASES ? PS_ITER_TILING_SPLIT : (ps_iter_tiling)k;
    o.split_order = k == SPLIT_PHASES ? PS_ITER_SPLIT_PHASES : PS_ITER_SPLIT_AUTO;
    o.band = o.tiling == PS_ITER_TILING_STEP ? 0 : E->band;
    for (int d = 0; d < c->b->ndim; d++) o.tile[d] = sweep_tile(E, c, I->tile, d);
    ps_status st = cli_stencil_build(c->b, c->n, c->steps, PS_ITER_FIXED, &it);
    if (!st) st = ps_iter_plan_create(ctx, it, &o, &plan);
    if (st) {
        const char *msg = ps_last_error_message();
        const char *why = msg ? strstr(msg, ": ") : NULL;
        I->status = RUN_FAILED;
        snprintf(I->plan, sizeof I->plan, "no plan%s", why ? why : "");
    }
    ps_iter_plan_destroy(plan);
    ps_iter_destroy(it);
}

static int run_sweep(bench_env *E, ps_context *ctx, const bench_case *c, char **tilings, int n_tilings, const int64_t *sizes,
                     int n_sizes, FILE *fmd, const char *png)
{
    impl *im = calloc((size_t)n_tilings * (size_t)n_sizes, sizeof *im);
    if (!im) return CLI_FAIL;
    int ni = 0;
    for (int s = 0; s < n_sizes; s++)
        for (int k = 0; k < n_tilings; k++, ni++) {
            snprintf(im[ni].name, sizeof im[ni].name, "polysci-%s", tilings[k]);
            snprintf(im[ni].arg, sizeof im[ni].arg, "%s", tilings[k]);
            im[ni].tile = sizes[s];
            sweep_check_plan(ctx, E, c, &im[ni]);
        }
    int planned[MAX_IMPLS];
    for (int i = 0; i < ni; i++) planned[i] = im[i].status == RUN_OK;
    run_rounds(E, c, im, ni);
    int rc = CLI_OK;
    for (int i = 0; i < ni; i++)
        if (planned[i] && im[i].status != RUN_OK) rc = CLI_FAIL;
    double flops, compute_ms, memory_ms;
    case_bounds(E, c, &flops, &compute_ms, &memory_ms);
    case_header(fmd, E, c, flops, compute_ms, memory_ms);
    char rest[48] = "untiled";
    if (E->rest_tile > 0) snprintf(rest, sizeof rest, "tiled by %lld", (long long)E->rest_tile);
    fprintf(fmd, "Tile sizes along the first %lld dimension%s (the others %s), band %lld; median ms of %lld rounds, "
                 "redundant work from each plan's statistics (point updates computed / needed - 1).\n\n| tile |",
            (long long)E->sweep_dims, E->sweep_dims == 1 ? "" : "s", rest, (long long)E->band, (long long)E->rounds);
    for (int k = 0; k < n_tilings; k++) fprintf(fmd, " %s ms | %s redundant |", tilings[k], tilings[k]);
    fprintf(fmd, " fastest |\n|---|");
    for (int k = 0; k < 2 * n_tilings + 1; k++) fprintf(fmd, "---|");
    fprintf(fmd, "\n");
    char dat_path[] = "/tmp/polysci-bench-stencil-XXXXXX";
    FILE *fdat = png ? temp_file(dat_path) : NULL;
    for (int s = 0; s < n_sizes; s++) {
        impl *row = &im[s * n_tilings];
        int best = -1;
        double med[MAX_IMPLS];
        for (int k = 0; k < n_tilings; k++) {
            med[k] = impl_median(&row[k], E->rounds);
            if (isfinite(med[k]) && (best < 0 || med[k] < med[best])) best = k;
        }
        fprintf(fmd, "| %lld |", (long long)sizes[s]);
        for (int k = 0; k < n_tilings; k++) {
            if (isfinite(med[k])) fprintf(fmd, " %.2f | %.1f%% |", med[k], 100 * row[k].redundant);
            else fprintf(fmd, " %s | - |", row[k].plan);
        }
        fprintf(fmd, " %s |\n", best >= 0 ? tilings[best] : "-");
        if (fdat) {
            fprintf(fdat, "%lld", (long long)sizes[s]);
            for (int k = 0; k < n_tilings; k++) fprintf(fdat, " %.4f", med[k]);
            for (int k = 0; k < n_tilings; k++) fprintf(fdat, " %.4f", isfinite(med[k]) ? 100 * row[k].redundant : NAN);
            fprintf(fdat, "\n");
        }
    }
    /* The crossover: split against overlap at each size, by the overlapped tiles' halo. */
    int io = -1, is = -1;
    for (int k = 0; k < n_tilings; k++) {
        if (!strcmp(tilings[k], "overlap")) io = k;
        if (!strcmp(tilings[k], "split")) is = k;
    }
    if (io >= 0 && is >= 0) {
        double min_win = INFINITY, max_loss = -INFINITY, split_red = 0;
        for (int s = 0; s < n_sizes; s++) {
            double o = impl_median(&im[s * n_tilings + io], E->rounds), sp = impl_median(&im[s * n_tilings + is], E->rounds);
            double halo = im[s * n_tilings + io].redundant;
            if (isfinite(sp)) split_red = fmax(split_red, im[s * n_tilings + is].redundant);
            if (!isfinite(o) || !isfinite(sp)) continue;
            if (sp < o) min_win = fmin(min_win, halo);
            else max_loss = fmax(max_loss, halo);
        }
        fprintf(fmd, "\nSplit tiles: redundant work %.2f%% at most. ", 100 * split_red);
        if (isfinite(min_win))
            fprintf(fmd, "Split faster than overlap from an overlapped halo of %.1f%% (smallest halo where it wins)", 100 * min_win);
        else fprintf(fmd, "Split never faster than overlap here");
        if (isfinite(max_loss)) fprintf(fmd, "; overlap faster up to a halo of %.1f%%.\n", 100 * max_loss);
        else fprintf(fmd, "; overlap never faster.\n");
    }
    if (fdat) {
        fclose(fdat);
        char gp_path[] = "/tmp/polysci-bench-stencil-gp-XXXXXX";
        FILE *gp = gnuplot_begin(gp_path, png, 1000);
        if (gp) {
            fprintf(gp, "set logscale x 2\nset xlabel 'tile size along dimension%s %s (points; the others %s)'\n"
                        "set ylabel 'time, ms (median of %lld rounds)'\nset y2label 'redundant work, %% of the needed updates'\n"
                        "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\nset grid xtics ytics\n"
                        "set key below\nset title '%s %s, T = %lld, band %lld, %lld threads: split vs overlapped tiles'\nplot ",
                    E->sweep_dims == 1 ? "" : "s", E->sweep_dims == 1 ? "0" : E->sweep_dims == 2 ? "0 and 1" : "0, 1 and 2", rest,
                    (long long)E->rounds, c->b->name, c->size, (long long)c->steps, (long long)E->band, (long long)E->threads);
            for (int k = 0; k < n_tilings; k++)
                fprintf(gp, "%s'%s' using 1:%d with linespoints lw 2 pt 7 lc %d title '%s time'", k ? ", " : "", dat_path,
                        k + 2, k + 1, tilings[k]);
            for (int k = 0; k < n_tilings; k++)
                fprintf(gp, ", '%s' using 1:%d axes x1y2 with linespoints dt 2 pt 6 lc %d title '%s redundant work (right axis)'",
                        dat_path, n_tilings + 2 + k, k + 1, tilings[k]);
            fprintf(gp, ", 20 axes x1y2 with lines dt 3 lc rgb 'gray40' title '20%% halo'\n");
        }
        if (gnuplot_end(E->cmd, gp, gp_path, dat_path)) rc = CLI_FAIL;
    }
    free(im);
    return rc;
}

int cli_bench_stencil(int argc, char **argv)
{
    static const char cmd[] = "bench stencil";
    const char *stencils_arg = "heat1d,heat2d,heat2d:500,heat3d,jacobi2d", *tilings_arg = NULL;
    const char *halide_arg = "manual,mullapudi2016,adams2019,li2018", *csv = NULL, *png = NULL, *md = NULL;
    const char *sweep = NULL, *sizes_arg = "16,32,64,128,256,512";
    int64_t threads = 2, rounds = 3, reps = 5, warmup = 1, size_n = 0, steps = -1, band = 0, sweep_dims = 1, rest_tile = 0;
    double halide_timeout = 600;
    cli_opt opts[] = {
        {"stencils", CLI_OPT_STRING, &stencils_arg, 0, 0,
         "LIST  NAME or NAME:T, comma-separated (default heat1d,heat2d,heat2d:500,heat3d,jacobi2d)", 0},
        {"tilings", CLI_OPT_STRING, &tilings_arg, 0, 0,
         "LIST  polysci tilings: auto, step, overlap, split, hybrid, split-phases (split in seed 003's order) "
         "(default the first five; --sweep: overlap,split,split-phases)", 0},
        {"halide", CLI_OPT_STRING, &halide_arg, 0, 0,
         "LIST  Halide schedules: naive, manual, mullapudi2016, adams2019, li2018, or 'none' "
         "(default manual and the three autoschedulers)", 0},
        {"halide-timeout", CLI_OPT_FLOAT, &halide_timeout, 0, 0,
         "S  time limit of a Halide process, compile included (default 600)", 0},
        {"threads", CLI_OPT_INT, &threads, 1, 4096, "T  threads of every implementation (default 2)", 0},
        {"rounds", CLI_OPT_INT, &rounds, 1, MAX_ROUNDS, "R  rounds, each implementation once per round (default 3)", 0},
        {"reps", CLI_OPT_INT, &reps, 1, 100000, "R  timed executions per process (default 5)", 0},
        {"warmup", CLI_OPT_INT, &warmup, 0, 100000, "W  untimed executions per process first (default 1)", 0},
        {"size", CLI_OPT_INT, &size_n, 3, 1 << 30, "N  every dimension of every grid (default: the benchmarks')", 0},
        {"T", CLI_OPT_INT, &steps, 0, 1 << 30, "T  time steps of every stencil without its own :T (default: the benchmarks')", 0},
        {"sweep", CLI_OPT_STRING, &sweep, 0, 0, "NAME[:T]  time forced tile sizes of one stencil instead", 0},
        {"tile-sizes", CLI_OPT_STRING, &sizes_arg, 0, 0, "LIST  --sweep: tile sizes (default 16,32,64,128,256,512)", 0},
        {"sweep-dims", CLI_OPT_INT, &sweep_dims, 1, PS_ITER_MAX_DIMS,
         "K  --sweep: tile the first K dimensions, the others untiled (default 1)", 0},
        {"rest-tile", CLI_OPT_INT, &rest_tile, 0, 1 << 30, "N  --sweep: tile of the other dimensions (default 0: untiled)", 0},
        {"band", CLI_OPT_INT, &band, 0, 1 << 20, "B  time steps per band of the tiled plans (default: the model's; --sweep 8)", 0},
        {"csv", CLI_OPT_STRING, &csv, 0, 0, "FILE  every process's median, one row each", 0},
        {"markdown", CLI_OPT_STRING, &md, 0, 0, "FILE  the tables (default: stdout)", 0},
        {"png", CLI_OPT_STRING, &png, 0, 0,
         "FILE  gnuplot chart: GFLOP/s per implementation; --sweep: time and halo over tile sizes", 0},
    };
    size_t n_opts = CLI_ARRAY_LEN(opts);
    int rc = cli_parse(cmd, argc, argv, opts, n_opts);
    if (rc < 0) {
        usage(stdout, opts, n_opts);
        return CLI_OK;
    }
    if (rc) return rc;
    if (!(halide_timeout > 0)) {
        fprintf(stderr, "polysci %s: --halide-timeout must be > 0\n", cmd);
        return CLI_USAGE;
    }
    if (!tilings_arg) tilings_arg = sweep ? "overlap,split,split-phases" : "auto,step,overlap,split,hybrid";
    if (sweep && !cli_opt_seen(opts, n_opts, "halide")) halide_arg = "none";
    if (sweep && band == 0) band = 8;
    char sbuf[512], tbuf[256], hbuf[256], zbuf[512];
    snprintf(sbuf, sizeof sbuf, "%s", sweep ? sweep : stencils_arg);
    snprintf(tbuf, sizeof tbuf, "%s", tilings_arg);
    snprintf(hbuf, sizeof hbuf, "%s", halide_arg);
    snprintf(zbuf, sizeof zbuf, "%s", sizes_arg);
    char *names[MAX_CASES], *tilings[8], *scheds[8], *size_items[MAX_SIZES];
    int n_cases = cli_split_list(sbuf, names, MAX_CASES), n_tilings = cli_split_list(tbuf, tilings, 8);
    int n_scheds = strcmp(halide_arg, "none") ? cli_split_list(hbuf, scheds, 8) : 0;
    int n_sizes = cli_split_list(zbuf, size_items, MAX_SIZES);
    for (int i = 0; i < n_tilings; i++)
        if (cli_choice(cmd, "tilings", tilings[i], tiling_names, N_TILING_NAMES) < 0) return CLI_USAGE;
    for (int i = 0; i < n_scheds; i++)
        if (cli_choice(cmd, "halide", scheds[i], sched_names, 5) < 0) return CLI_USAGE;
    int64_t sizes[MAX_SIZES];
    for (int i = 0; i < n_sizes; i++)
        if (cli_parse_int(cmd, "tile-sizes", size_items[i], 1, 1 << 30, &sizes[i])) return CLI_USAGE;
    if (n_cases == 0 || (sweep && n_cases != 1)) {
        fprintf(stderr, "polysci %s: %s\n", cmd, sweep ? "--sweep takes one stencil" : "no stencils");
        return CLI_USAGE;
    }
    if (sweep && (n_scheds || n_sizes == 0 || n_tilings == 0 || n_tilings * n_sizes > MAX_IMPLS)) {
        fprintf(stderr, "polysci %s: --sweep times polysci's tilings (no --halide) over 1 to %d tilings x tile sizes\n", cmd,
                MAX_IMPLS);
        return CLI_USAGE;
    }
    if (!sweep && (n_tilings + n_scheds == 0 || n_tilings + n_scheds > 16)) {
        fprintf(stderr, "polysci %s: 1 to 16 implementations\n", cmd);
        return CLI_USAGE;
    }
    bench_case cases[MAX_CASES];
    for (int i = 0; i < n_cases; i++)
        if ((rc = make_case(cmd, names[i], size_n, steps, &cases[i]))) return rc;
    if (sweep && sweep_dims > cases[0].b->ndim) {
        fprintf(stderr, "polysci %s: --sweep-dims %lld > the %d dimensions of %s\n", cmd, (long long)sweep_dims,
                cases[0].b->ndim, cases[0].b->name);
        return CLI_USAGE;
    }

    bench_env E = {.cmd = cmd, .threads = threads, .rounds = rounds, .reps = reps, .warmup = warmup, .band = band,
                   .sweep_dims = sweep_dims, .rest_tile = rest_tile, .halide_timeout = halide_timeout};
    if (cli_source_file("bench/stencil/halide_stencils.py", E.script, sizeof E.script) && n_scheds) {
        fprintf(stderr, "polysci %s: the Halide side needs %s (a source tree); pass --halide none\n", cmd, E.script);
        return CLI_FAIL;
    }
    if (cli_self_exe(cmd, E.self, sizeof E.self)) return CLI_FAIL;
    /* The machine model: the L2 the autoschedulers are told of, the peak
     * and the memory bandwidth of the bounds. */
    ps_context *ctx = NULL;
    if (cli_context_create((int)threads, &ctx)) return CLI_FAIL;
    const ps_machine *m = &ctx->machine;
    E.l2 = ps_machine_cache_bytes(m, 2);
    int cores = (int)threads < m->n_cores ? (int)threads : m->n_cores;
    E.peak_gflops = m->peak_gflops_core * (cores > 0 ? cores : 1);
    E.peak_source = m->peak_source && strcmp(m->peak_source, "estimate") ? "measured" : "a table estimate";
    E.bw_gbs = m->mem_bandwidth_gbs;
    E.bw_source = m->perf_source && strcmp(m->perf_source, "table") ? "measured" : "a table value";

    E.csv = csv ? fopen(csv, "w") : NULL;
    if (csv && !E.csv) {
        fprintf(stderr, "polysci %s: cannot write %s\n", cmd, csv);
        ps_context_destroy(ctx);
        return CLI_FAIL;
    }
    if (E.csv)
        fprintf(E.csv, "stencil,T,size,implementation,tile_size,round,status,median_ms,gflops,setup_s,tiling,band,tile,"
                       "redundant,threads\n");
    FILE *fmd = md ? fopen(md, "w") : stdout;
    if (!fmd) {
        fprintf(stderr, "polysci %s: cannot write %s\n", cmd, md);
        if (E.csv) fclose(E.csv);
        ps_context_destroy(ctx);
        return CLI_FAIL;
    }
    fprintf(fmd, "polysci bench stencil: %lld threads, %lld rounds of one process per implementation (%lld warm-up + %lld "
                 "timed executions each, their median; the table: the median over rounds). GFLOP/s: flops per point as "
                 "bench/stencil's Halide versions write the update (heat1d 5, heat2d 10, heat3d 15, jacobi2d 9), for both "
                 "sides. Compute bound: those flops at %.1f GFLOP/s (f32 peak of %d core%s, %s); memory bound of step-by-step "
                 "execution: every step reads and writes each array once at %.1f GB/s (%s).\n",
            (long long)threads, (long long)rounds, (long long)warmup, (long long)reps, E.peak_gflops, cores,
            cores == 1 ? "" : "s", E.peak_source, E.bw_gbs, E.bw_source);

    if (sweep) {
        rc = run_sweep(&E, ctx, &cases[0], tilings, n_tilings, sizes, n_sizes, fmd, png);
        if (E.csv) fclose(E.csv);
        if (md) fclose(fmd);
        ps_context_destroy(ctx);
        return rc;
    }

    char dat_path[] = "/tmp/polysci-bench-stencil-XXXXXX";
    FILE *fdat = png ? temp_file(dat_path) : NULL;
    char summary[MAX_CASES][512];
    int ni = n_tilings + n_scheds;
    impl im_names[16];
    rc = CLI_OK;
    for (int ci = 0; ci < n_cases; ci++) {
        const bench_case *c = &cases[ci];
        impl im[16];
        memset(im, 0, sizeof im);
        for (int i = 0; i < n_tilings; i++) {
            snprintf(im[i].name, sizeof im[i].name, "polysci-%s", tilings[i]);
            snprintf(im[i].arg, sizeof im[i].arg, "%s", tilings[i]);
        }
        for (int i = 0; i < n_scheds; i++) {
            impl *I = &im[n_tilings + i];
            snprintf(I->name, sizeof I->name, "halide-%s", scheds[i]);
            snprintf(I->arg, sizeof I->arg, "%s", scheds[i]);
            I->is_halide = 1;
        }
        if (ci == 0) memcpy(im_names, im, sizeof im);
        run_rounds(&E, c, im, ni);
        double flops, compute_ms, memory_ms, med[16];
        case_bounds(&E, c, &flops, &compute_ms, &memory_ms);
        case_header(fmd, &E, c, flops, compute_ms, memory_ms);
        fprintf(fmd, "| implementation | what ran | ms | GFLOP/s | of compute bound | step memory bound / time | setup s |\n"
                     "|---|---|---|---|---|---|---|\n");
        int iauto = -1, istep = -1, imanual = -1, best_tiling = -1, best_halide = -1;
        for (int i = 0; i < ni; i++) {
            med[i] = impl_median(&im[i], rounds);
            /* an autoscheduler that fails to build is a result, as one that does not finish */
            int autosched = im[i].is_halide && strcmp(im[i].arg, "manual") && strcmp(im[i].arg, "naive");
            if (im[i].status == RUN_FAILED && !autosched) rc = CLI_FAIL;
            if (isfinite(med[i]))
                fprintf(fmd, "| %s | %s | %.2f | %.2f | %.1f%% | %.2f | %.2f |\n", im[i].name, im[i].plan, med[i],
                        flops / (med[i] * 1e6), 100 * compute_ms / med[i], memory_ms / med[i], im[i].setup_s);
            else fprintf(fmd, "| %s | %s | - | - | - | - | - |\n", im[i].name, im[i].plan);
            if (!im[i].is_halide) {
                if (!strcmp(im[i].arg, "auto")) iauto = i;
                if (!strcmp(im[i].arg, "step")) istep = i;
                if (strcmp(im[i].arg, "auto") && isfinite(med[i]) && (best_tiling < 0 || med[i] < med[best_tiling]))
                    best_tiling = i;
            } else {
                if (!strcmp(im[i].arg, "manual")) imanual = i;
                if (isfinite(med[i]) && (best_halide < 0 || med[i] < med[best_halide])) best_halide = i;
            }
        }
        /* the stated goals (auto vs the best tiling, step, Halide; share of peak), for the summary row */
        double a = iauto >= 0 ? med[iauto] : NAN;
        char tiling[16] = "-", best[64] = "-", hbest[64] = "-", r[5][24];
        if (iauto >= 0 && isfinite(a)) sscanf(im[iauto].plan, "%15[a-z]", tiling);
        if (best_tiling >= 0) snprintf(best, sizeof best, "%s %.2f", im[best_tiling].arg, med[best_tiling]);
        if (best_halide >= 0) snprintf(hbest, sizeof hbest, "%s %.2f", im[best_halide].arg, med[best_halide]);
        fmt_value(r[0], sizeof r[0], best_tiling >= 0 ? med[best_tiling] / a : NAN, "");
        fmt_value(r[1], sizeof r[1], istep >= 0 ? med[istep] / a : NAN, "x");
        fmt_value(r[2], sizeof r[2], imanual >= 0 ? med[imanual] / a : NAN, "x");
        fmt_value(r[3], sizeof r[3], best_halide >= 0 ? med[best_halide] / a : NAN, "x");
        fmt_value(r[4], sizeof r[4], 100 * compute_ms / a, "%");
        snprintf(summary[ci], sizeof summary[ci], "| %s %s, T=%lld | %.2f (%s) | %s | %s | %s | %s | %s | %s | %s | %.2f |\n",
                 c->b->name, c->size, (long long)c->steps, a, tiling, best, r[0], r[1], r[2], hbest, r[3], r[4], memory_ms / a);
        if (fdat) {
            fprintf(fdat, "\"%s\"", c->label);
            for (int i = 0; i < ni; i++) fprintf(fdat, " %.4f", isfinite(med[i]) ? flops / (med[i] * 1e6) : NAN);
            fprintf(fdat, "\n");
        }
    }
    fprintf(fmd, "\n### Summary\n\nms: median over rounds; auto: the cost model's tiling. Ratios are times divided by "
                 "auto's (above 1: auto is faster).\n\n| stencil | auto ms (tiling) | fastest forced tiling, ms | "
                 "fastest / auto | step / auto | Halide manual / auto | fastest Halide, ms | fastest Halide / auto | "
                 "auto: of compute bound | auto: step memory bound / time |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int ci = 0; ci < n_cases; ci++) fputs(summary[ci], fmd);
    if (fdat) {
        fclose(fdat);
        char gp_path[] = "/tmp/polysci-bench-stencil-gp-XXXXXX";
        FILE *gp = gnuplot_begin(gp_path, png, 1100);
        if (gp) {
            fprintf(gp, "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                        "set ylabel 'GFLOP/s (Halide flops per point; median of %lld rounds)'\n"
                        "set key outside bottom center horizontal\nset grid ytics\nset yrange [0:*]\n"
                        "set title 'Iterated stencils, %lld threads (f32 peak %.0f GFLOP/s, %s)'\nplot ",
                    (long long)rounds, (long long)threads, E.peak_gflops, E.peak_source);
            for (int i = 0; i < ni; i++)
                fprintf(gp, "%s'%s' using %d:xtic(1) title '%s'", i ? ", " : "", dat_path, i + 2, im_names[i].name);
            fprintf(gp, "\n");
        }
        if (gnuplot_end(cmd, gp, gp_path, dat_path)) rc = CLI_FAIL;
    }
    if (E.csv) fclose(E.csv);
    if (md) fclose(fmd);
    ps_context_destroy(ctx);
    return rc;
}
