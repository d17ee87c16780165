/* polysci-bench-layers — polysci vs oneDNN on a list of conv layers or GEMMs.
 *
 * For every shape of the file: plan with default options, pack weights
 * (untimed), create the oneDNN primitive(s) with user data reordered into
 * their layouts (untimed), verify polysci's output against oneDNN's, then
 * alternate timed trials in one process (rotating order), each trial looping
 * the execution enough times to last >= --min-trial-ms, and report medians.
 *
 * Conv file lines:  name H W C K R S stride pad_h pad_w
 * GEMM file lines:  name M N K        (row-major C[MxN] = A[MxK] * B[KxN])
 * Lines starting with # and blank lines are skipped. The mode follows the
 * number of fields unless --conv/--gemm is given. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <polysci/polysci.h>

#include "onednn_ref.h"
#include "onednn_ref_polysci.h"

/* ---- options ---------------------------------------------------------------- */

typedef struct options {
    const char *file;
    int batch;
    int threads;
    int trials;
    double min_trial_ms;
    double warmup_ms;
    int mode; /* 0 auto, 1 conv, 2 gemm */
    const char *csv;
    int markdown;
    const char *only;
    int nhwc;
    int describe;
    int check_only;
    int onednn_cache;
    double tol;
    int quiet;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: polysci-bench-layers [options] LAYERS_FILE\n"
            "  -n, --batch N          batch size for conv layers (default 2)\n"
            "  -t, --threads T        threads for both libraries (default 2)\n"
            "  -r, --trials R         timed trials per implementation (default 15)\n"
            "  -m, --min-trial-ms MS  each trial loops until it lasts >= MS (default 20)\n"
            "  -w, --warmup-ms MS     warm-up per implementation (default 100)\n"
            "      --conv | --gemm    force the file's kind (default: by field count)\n"
            "      --csv PATH         write a CSV (\"-\" = stdout, after the table)\n"
            "      --markdown         print a markdown table at the end\n"
            "      --only SUBSTR      only shapes whose name contains SUBSTR\n"
            "      --no-nhwc          skip the oneDNN plain-NHWC variant\n"
            "      --describe         print polysci's plan description per shape\n"
            "      --check-only       verify correctness only, no timing\n"
            "      --onednn-cache     keep oneDNN's primitive cache (default: off, so\n"
            "                         oneDNN creation times are cold)\n"
            "      --quiet            per-shape rows to stderr (stdout: summary, markdown, CSV)\n"
            "      --tol X            max error relative to max|ref| (default 1e-3)\n"
            "Exit status: 0 ok, 1 a verification or library call failed, 2 usage.\n");
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 2;
    o->threads = 2;
    o->trials = 15;
    o->min_trial_ms = 20.0;
    o->warmup_ms = 100.0;
    o->nhwc = 1;
    o->tol = 1e-3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (fprintf(stderr, "missing value for %s\n", a), exit(2), ""))
        if (!strcmp(a, "-n") || !strcmp(a, "--batch"))
            o->batch = atoi(NEXT());
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads"))
            o->threads = atoi(NEXT());
        else if (!strcmp(a, "-r") || !strcmp(a, "--trials"))
            o->trials = atoi(NEXT());
        else if (!strcmp(a, "-m") || !strcmp(a, "--min-trial-ms"))
            o->min_trial_ms = atof(NEXT());
        else if (!strcmp(a, "-w") || !strcmp(a, "--warmup-ms"))
            o->warmup_ms = atof(NEXT());
        else if (!strcmp(a, "--conv"))
            o->mode = 1;
        else if (!strcmp(a, "--gemm"))
            o->mode = 2;
        else if (!strcmp(a, "--csv"))
            o->csv = NEXT();
        else if (!strcmp(a, "--markdown"))
            o->markdown = 1;
        else if (!strcmp(a, "--only"))
            o->only = NEXT();
        else if (!strcmp(a, "--no-nhwc"))
            o->nhwc = 0;
        else if (!strcmp(a, "--describe"))
            o->describe = 1;
        else if (!strcmp(a, "--check-only"))
            o->check_only = 1;
        else if (!strcmp(a, "--onednn-cache"))
            o->onednn_cache = 1;
        else if (!strcmp(a, "--quiet"))
            o->quiet = 1;
        else if (!strcmp(a, "--tol"))
            o->tol = atof(NEXT());
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "unknown option %s\n", a);
            usage(stderr);
            return -1;
        } else if (!o->file)
            o->file = a;
        else {
            fprintf(stderr, "extra argument %s\n", a);
            return -1;
        }
#undef NEXT
    }
    if (!o->file) {
        usage(stderr);
        return -1;
    }
    if (o->batch < 1 || o->threads < 1 || o->trials < 1 || o->min_trial_ms < 0 ||
        o->warmup_ms < 0 || !(o->tol > 0)) {
        fprintf(stderr, "invalid option value\n");
        return -1;
    }
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *xalloc(size_t bytes)
{
    size_t sz = (bytes + 63) / 64 * 64;
    if (sz == 0)
        sz = 64;
    void *p = aligned_alloc(64, sz);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static void fill_random(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g_rng ^= g_rng << 13;
        g_rng ^= g_rng >> 7;
        g_rng ^= g_rng << 17;
        x[i] = (float)((double)(g_rng >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    }
}

static void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

/* max |out - ref| / max |ref|; NaN/Inf in out counts as infinite error.
 * *worst gets the index of the largest error. */
static double rel_error(const float *out, const float *ref, size_t n, size_t *worst)
{
    double maxref = 0.0, maxerr = 0.0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)ref[i]);
        if (r > maxref)
            maxref = r;
        double e = isfinite(out[i]) ? fabs((double)out[i] - (double)ref[i]) : INFINITY;
        if (e > maxerr) {
            maxerr = e;
            wi = i;
        }
    }
    if (worst)
        *worst = wi;
    return maxerr / (maxref > 0 ? maxref : 1e-30);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

static double median(const double *v, int n)
{
    double *t = malloc((size_t)n * sizeof *t);
    if (!t)
        exit(1);
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

#define PS_TRY(call, what)                                                            \
    do {                                                                              \
        ps_status st_ = (call);                                                       \
        if (st_ != PS_SUCCESS) {                                                      \
            fprintf(stderr, "ERROR %s: %s: %s (%s)\n", name, what, ps_status_str(st_), \
                    ps_last_error_message());                                         \
            goto fail;                                                                \
        }                                                                             \
    } while (0)

#define DNNL_TRY(call, what)                                                           \
    do {                                                                               \
        if ((call) != 0) {                                                             \
            fprintf(stderr, "ERROR %s: %s: %s\n", name, what, onednn_last_error());     \
            goto fail;                                                                 \
        }                                                                              \
    } while (0)

/* ---- timing ----------------------------------------------------------------- */

typedef int (*run_fn)(void *arg);

typedef struct impl {
    const char *label;
    run_fn run;
    void *arg;
    int threads; /* set omp threads before running (oneDNN), 0 = leave */
    long reps;
    double *samples; /* ms per execution, one per trial */
} impl;

/* Warm-up and calibration: runs until warmup_ms elapsed (>= 3 runs), sets reps. */
static int calibrate(impl *im, const options *o)
{
    if (im->threads)
        onednn_set_num_threads(im->threads);
    long n = 0;
    double t0 = now_ms(), el = 0;
    do {
        if (im->run(im->arg))
            return -1;
        n++;
        el = now_ms() - t0;
    } while (n < 3 || el < o->warmup_ms);
    double per = el / (double)n;
    long reps = per > 0 ? (long)ceil(o->min_trial_ms / per) : 1;
    im->reps = reps < 1 ? 1 : reps;
    return 0;
}

/* Alternating trials, rotating which implementation goes first. */
static int time_alternating(impl *ims, int nimpl, const options *o)
{
    for (int i = 0; i < nimpl; i++)
        if (calibrate(&ims[i], o))
            return -1;
    for (int t = 0; t < o->trials; t++) {
        for (int j = 0; j < nimpl; j++) {
            impl *im = &ims[(t + j) % nimpl];
            if (im->threads)
                onednn_set_num_threads(im->threads);
            double t0 = now_ms();
            for (long r = 0; r < im->reps; r++)
                if (im->run(im->arg))
                    return -1;
            im->samples[t] = (now_ms() - t0) / (double)im->reps;
        }
    }
    return 0;
}

/* ---- results ------------------------------------------------------------------ */

typedef struct result {
    char name[64];
    int64_t N, M, Ng, Kg; /* conv batch / gemm sizes */
    int threads;
    double ps_ms, dn_ms, dn_nhwc_ms; /* medians; 0 = not measured */
    double ps_min, dn_min, dn_nhwc_min; /* fastest trial */
    double flops;
    double plan_ms, dn_create_ms, dn_nhwc_create_ms;
    double err;
    int ok;
    char sched[160];
    char impl[64];
} result;

static void print_row_header(FILE *f, int gemm, int nhwc)
{
    if (gemm)
        fprintf(f, "%-22s %6s %6s %6s %3s %10s %10s %7s %8s %8s %9s %9s\n", "name", "M", "N", "K",
               "t", "polysci_ms", "onednn_ms", "ratio", "ps_GF/s", "dn_GF/s", "plan_ms",
               "max_err");
    else {
        fprintf(f, "%-12s %3s %3s %10s %10s %7s %8s %8s %9s %9s", "name", "N", "t", "polysci_ms",
               "onednn_ms", "ratio", "ps_GF/s", "dn_GF/s", "plan_ms", "dn_cr_ms");
        if (nhwc)
            fprintf(f, " %10s %7s", "dnnhwc_ms", "r_nhwc");
        fprintf(f, " %9s  %s\n", "max_err", "schedule");
    }
}

static double gf(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0.0; }
static double ratio(double a, double b) { return (a > 0 && b > 0) ? a / b : 0.0; }

static void print_row(FILE *f, const result *r, int gemm, int nhwc)
{
    if (gemm) {
        fprintf(f, "%-22s %6lld %6lld %6lld %3d %10.3f %10.3f %7.3f %8.1f %8.1f %9.2f %9.2e%s\n",
               r->name, (long long)r->M, (long long)r->Ng, (long long)r->Kg, r->threads,
               r->ps_ms, r->dn_ms, ratio(r->dn_ms, r->ps_ms), gf(r->flops, r->ps_ms),
               gf(r->flops, r->dn_ms), r->plan_ms, r->err, r->ok ? "" : "  FAIL");
    } else {
        fprintf(f, "%-12s %3lld %3d %10.3f %10.3f %7.3f %8.1f %8.1f %9.2f %9.2f", r->name,
               (long long)r->N, r->threads, r->ps_ms, r->dn_ms, ratio(r->dn_ms, r->ps_ms),
               gf(r->flops, r->ps_ms), gf(r->flops, r->dn_ms), r->plan_ms, r->dn_create_ms);
        if (nhwc)
            fprintf(f, " %10.3f %7.3f", r->dn_nhwc_ms, ratio(r->dn_nhwc_ms, r->ps_ms));
        fprintf(f, " %9.2e  %s%s\n", r->err, r->sched, r->ok ? "" : "  FAIL");
    }
    fflush(f);
}

static void write_csv(FILE *f, const result *rs, int n, int gemm)
{
    if (gemm)
        fprintf(f, "name,M,N,K,threads,polysci_ms,onednn_ms,ratio,polysci_gflops,onednn_gflops,"
                   "plan_ms,max_rel_err,ok,polysci_schedule,polysci_min_ms,onednn_min_ms\n");
    else
        fprintf(f, "name,N,threads,polysci_ms,onednn_ms,ratio,polysci_gflops,onednn_gflops,"
                   "plan_ms,onednn_create_ms,onednn_nhwc_ms,ratio_nhwc,onednn_nhwc_create_ms,"
                   "max_rel_err,ok,onednn_impl,polysci_schedule,polysci_min_ms,onednn_min_ms,"
                   "onednn_nhwc_min_ms\n");
    for (int i = 0; i < n; i++) {
        const result *r = &rs[i];
        if (gemm)
            fprintf(f, "%s,%lld,%lld,%lld,%d,%.4f,%.4f,%.4f,%.2f,%.2f,%.3f,%.3e,%d,\"%s\",%.4f,%.4f\n",
                    r->name, (long long)r->M, (long long)r->Ng, (long long)r->Kg, r->threads,
                    r->ps_ms, r->dn_ms, ratio(r->dn_ms, r->ps_ms), gf(r->flops, r->ps_ms),
                    gf(r->flops, r->dn_ms), r->plan_ms, r->err, r->ok, r->sched, r->ps_min,
                    r->dn_min);
        else
            fprintf(f,
                    "%s,%lld,%d,%.4f,%.4f,%.4f,%.2f,%.2f,%.3f,%.3f,%.4f,%.4f,%.3f,%.3e,%d,%s,"
                    "\"%s\",%.4f,%.4f,%.4f\n",
                    r->name, (long long)r->N, r->threads, r->ps_ms, r->dn_ms,
                    ratio(r->dn_ms, r->ps_ms), gf(r->flops, r->ps_ms), gf(r->flops, r->dn_ms),
                    r->plan_ms, r->dn_create_ms, r->dn_nhwc_ms, ratio(r->dn_nhwc_ms, r->ps_ms),
                    r->dn_nhwc_create_ms, r->err, r->ok, r->impl, r->sched, r->ps_min, r->dn_min,
                    r->dn_nhwc_min);
    }
}

/* Geometric mean of a/b over rows where both are > 0. */
static double geomean_ratio(const result *rs, int n, int which /* 0 dn, 1 nhwc, 2 ps_gf, 3 dn_gf */,
                            int *count)
{
    double s = 0;
    int c = 0;
    for (int i = 0; i < n; i++) {
        double v = 0;
        switch (which) {
        case 0: v = ratio(rs[i].dn_ms, rs[i].ps_ms); break;
        case 1: v = ratio(rs[i].dn_nhwc_ms, rs[i].ps_ms); break;
        case 2: v = gf(rs[i].flops, rs[i].ps_ms); break;
        default: v = gf(rs[i].flops, rs[i].dn_ms); break;
        }
        if (v > 0) {
            s += log(v);
            c++;
        }
    }
    if (count)
        *count = c;
    return c ? exp(s / c) : 0.0;
}

static void print_markdown(const result *rs, int n, int gemm, int nhwc)
{
    printf("\n");
    if (gemm) {
        printf("| GEMM | M | N | K | threads | polysci ms | oneDNN sgemm ms | ratio (oneDNN/polysci) "
               "| polysci GFLOP/s | oneDNN GFLOP/s | plan ms |\n");
        printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (int i = 0; i < n; i++) {
            const result *r = &rs[i];
            printf("| %s | %lld | %lld | %lld | %d | %.3f | %.3f | %.2f | %.1f | %.1f | %.2f |\n",
                   r->name, (long long)r->M, (long long)r->Ng, (long long)r->Kg, r->threads,
                   r->ps_ms, r->dn_ms, ratio(r->dn_ms, r->ps_ms), gf(r->flops, r->ps_ms),
                   gf(r->flops, r->dn_ms), r->plan_ms);
        }
        printf("| **geomean** | | | | | | | **%.2f** | %.1f | %.1f | |\n",
               geomean_ratio(rs, n, 0, NULL), geomean_ratio(rs, n, 2, NULL),
               geomean_ratio(rs, n, 3, NULL));
        return;
    }
    printf("| layer | N | threads | polysci ms | oneDNN ms | ratio (oneDNN/polysci) | polysci GFLOP/s "
           "| oneDNN GFLOP/s | plan ms | oneDNN create ms |%s\n",
           nhwc ? " oneDNN NHWC ms | ratio NHWC |" : "");
    printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|%s\n", nhwc ? "--:|--:|" : "");
    for (int i = 0; i < n; i++) {
        const result *r = &rs[i];
        printf("| %s | %lld | %d | %.3f | %.3f | %.2f | %.1f | %.1f | %.2f | %.2f |", r->name,
               (long long)r->N, r->threads, r->ps_ms, r->dn_ms, ratio(r->dn_ms, r->ps_ms),
               gf(r->flops, r->ps_ms), gf(r->flops, r->dn_ms), r->plan_ms, r->dn_create_ms);
        if (nhwc)
            printf(" %.3f | %.2f |", r->dn_nhwc_ms, ratio(r->dn_nhwc_ms, r->ps_ms));
        printf("\n");
    }
    printf("| **geomean** | | | | | **%.2f** | %.1f | %.1f | | |", geomean_ratio(rs, n, 0, NULL),
           geomean_ratio(rs, n, 2, NULL), geomean_ratio(rs, n, 3, NULL));
    if (nhwc)
        printf(" | **%.2f** |", geomean_ratio(rs, n, 1, NULL));
    printf("\n");
}

/* ---- conv --------------------------------------------------------------------- */

typedef struct ps_run_arg {
    const ps_plan *plan;
    ps_exec_args args;
} ps_run_arg;

static int run_polysci(void *p)
{
    ps_run_arg *a = p;
    ps_status st = ps_plan_execute(a->plan, &a->args);
    if (st != PS_SUCCESS) {
        fprintf(stderr, "ERROR: ps_plan_execute: %s (%s)\n", ps_status_str(st),
                ps_last_error_message());
        return -1;
    }
    return 0;
}

static int run_onednn_conv(void *p)
{
    if (onednn_conv_execute(p)) {
        fprintf(stderr, "ERROR: oneDNN execute: %s\n", onednn_last_error());
        return -1;
    }
    return 0;
}

static void plan_schedule_text(const ps_plan *plan, ps_op_kind kind, char *buf, size_t len)
{
    const ps_schedule *s = ps_plan_get_schedule(plan);
    if (!s || ps_schedule_format(s, kind, buf, len, NULL) != PS_SUCCESS)
        snprintf(buf, len, "?");
}

static void describe_plan(const ps_plan *plan)
{
    size_t need = 0;
    char small[1];
    ps_plan_describe(plan, small, sizeof small, &need);
    char *buf = malloc(need + 1);
    if (buf && ps_plan_describe(plan, buf, need + 1, NULL) == PS_SUCCESS)
        printf("%s\n", buf);
    free(buf);
}

static int bench_conv_layer(ps_context *ctx, const options *o, const char *name,
                            const int64_t v[9], result *r)
{
    ps_plan *plan = NULL;
    onednn_conv *dn = NULL, *dnh = NULL;
    float *src = NULL, *wei = NULL, *dst_ps = NULL, *dst_ref = NULL, *dst_tmp = NULL;
    void *packed = NULL, *ws = NULL;
    double *samples = NULL;
    int rc = -1;

    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->threads = o->threads;
    r->N = o->batch;

    ps_desc desc;
    ps_desc_init_conv(&desc);
    ps_conv_desc *c = &desc.u.conv;
    c->N = o->batch;
    c->H = v[0];
    c->W = v[1];
    c->C = v[2];
    c->K = v[3];
    c->R = v[4];
    c->S = v[5];
    c->stride_h = c->stride_w = v[6];
    c->pad_top = c->pad_bottom = v[7];
    c->pad_left = c->pad_right = v[8];
    c->layout = PS_LAYOUT_NHWC;
    c->weight_layout = PS_WEIGHTS_KCRS;

    int64_t OH = 0, OW = 0;
    PS_TRY(ps_conv_output_size(&desc, &OH, &OW), "ps_conv_output_size");
    onednn_conv_params p;
    onednn_params_from_ps(&desc, &p);
    int64_t OH2 = 0, OW2 = 0;
    DNNL_TRY(onednn_conv_out_size(&p, &OH2, &OW2), "onednn_conv_out_size");
    if (OH != OH2 || OW != OW2) {
        fprintf(stderr, "ERROR %s: output size polysci %lldx%lld vs oneDNN %lldx%lld\n", name,
                (long long)OH, (long long)OW, (long long)OH2, (long long)OW2);
        goto fail;
    }
    r->flops = onednn_conv_flops(&p);
    {
        double f2 = ps_desc_flops(&desc);
        if (fabs(f2 - r->flops) > 1e-6 * r->flops)
            fprintf(stderr, "WARNING %s: ps_desc_flops %.0f != nominal %.0f\n", name, f2,
                    r->flops);
    }

    size_t n_src = (size_t)(c->N * c->H * c->W * c->C);
    size_t n_wei = (size_t)(c->K * c->C * c->R * c->S);
    size_t n_dst = (size_t)(c->N * OH * OW * c->K);
    src = xalloc(n_src * sizeof(float));
    wei = xalloc(n_wei * sizeof(float));
    dst_ps = xalloc(n_dst * sizeof(float));
    dst_ref = xalloc(n_dst * sizeof(float));
    fill_random(src, n_src);
    fill_random(wei, n_wei);

    /* polysci: plan (timed: creation cost), pack (untimed) */
    double t0 = now_ms();
    PS_TRY(ps_plan_create(ctx, &desc, NULL, &plan), "ps_plan_create");
    r->plan_ms = now_ms() - t0;
    plan_schedule_text(plan, PS_OP_CONV_FWD, r->sched, sizeof r->sched);
    if (o->describe)
        describe_plan(plan);
    size_t pbytes = 0, wbytes = 0;
    PS_TRY(ps_plan_packed_weights_size(plan, &pbytes), "ps_plan_packed_weights_size");
    packed = xalloc(pbytes);
    PS_TRY(ps_plan_pack_weights(plan, wei, packed), "ps_plan_pack_weights");
    PS_TRY(ps_plan_workspace_size(plan, &wbytes), "ps_plan_workspace_size");
    if (wbytes)
        ws = xalloc(wbytes);

    ps_run_arg pa;
    pa.plan = plan;
    ps_exec_args_init(&pa.args);
    pa.args.src = src;
    pa.args.weights = packed;
    pa.args.dst = dst_ps;
    pa.args.workspace = ws;

    /* oneDNN: blocked (`any`) primitive and optional plain-NHWC one */
    onednn_set_num_threads(o->threads);
    DNNL_TRY(onednn_conv_create(&p, ONEDNN_MODE_ANY, &dn), "oneDNN create (any)");
    r->dn_create_ms = onednn_conv_create_ms(dn);
    snprintf(r->impl, sizeof r->impl, "%s", onednn_conv_impl(dn));
    DNNL_TRY(onednn_conv_set_src(dn, src), "oneDNN src reorder");
    DNNL_TRY(onednn_conv_set_weights(dn, wei), "oneDNN weights reorder");
    if (o->nhwc) {
        DNNL_TRY(onednn_conv_create(&p, ONEDNN_MODE_NHWC, &dnh), "oneDNN create (nhwc)");
        r->dn_nhwc_create_ms = onednn_conv_create_ms(dnh);
        DNNL_TRY(onednn_conv_set_src(dnh, src), "oneDNN nhwc src");
        DNNL_TRY(onednn_conv_set_weights(dnh, wei), "oneDNN nhwc weights");
    }
    if (o->describe) {
        printf("  oneDNN any : %s  %s  create %.2f ms\n", onednn_conv_impl(dn),
               onednn_conv_layouts(dn), r->dn_create_ms);
        if (dnh)
            printf("  oneDNN nhwc: %s  %s  create %.2f ms\n", onednn_conv_impl(dnh),
                   onednn_conv_layouts(dnh), r->dn_nhwc_create_ms);
    }

    /* verification: polysci must write all of dst (NaN sentinel) and match */
    fill_nan(dst_ps, n_dst);
    if (run_polysci(&pa))
        goto fail;
    DNNL_TRY(onednn_conv_execute(dn), "oneDNN execute");
    DNNL_TRY(onednn_conv_get_dst(dn, dst_ref), "oneDNN dst reorder");
    size_t wi = 0;
    r->err = rel_error(dst_ps, dst_ref, n_dst, &wi);
    r->ok = r->err <= o->tol;
    if (!r->ok) {
        size_t k = wi % (size_t)c->K, ow = wi / (size_t)c->K % (size_t)OW;
        size_t oh = wi / (size_t)(c->K * OW) % (size_t)OH, n = wi / (size_t)(c->K * OW * OH);
        fprintf(stderr,
                "FAIL %s: polysci vs oneDNN max error %.3e of max|ref| (tol %.1e); worst at "
                "n=%zu oh=%zu ow=%zu k=%zu: polysci %g oneDNN %g\n",
                name, r->err, o->tol, n, oh, ow, k, (double)dst_ps[wi], (double)dst_ref[wi]);
    }
    if (dnh) {
        dst_tmp = xalloc(n_dst * sizeof(float));
        DNNL_TRY(onednn_conv_execute(dnh), "oneDNN nhwc execute");
        DNNL_TRY(onednn_conv_get_dst(dnh, dst_tmp), "oneDNN nhwc dst");
        double e2 = rel_error(dst_tmp, dst_ref, n_dst, NULL);
        if (e2 > o->tol)
            fprintf(stderr, "WARNING %s: oneDNN nhwc vs any disagree: %.3e\n", name, e2);
    }

    if (!o->check_only) {
        samples = calloc((size_t)o->trials * 3, sizeof *samples);
        if (!samples)
            goto fail;
        impl ims[3] = {
            {"polysci", run_polysci, &pa, 0, 0, samples},
            {"onednn", run_onednn_conv, dn, o->threads, 0, samples + o->trials},
            {"onednn_nhwc", run_onednn_conv, dnh, o->threads, 0, samples + 2 * o->trials},
        };
        if (time_alternating(ims, dnh ? 3 : 2, o))
            goto fail;
        r->ps_ms = median(ims[0].samples, o->trials);
        r->dn_ms = median(ims[1].samples, o->trials);
        r->ps_min = minimum(ims[0].samples, o->trials);
        r->dn_min = minimum(ims[1].samples, o->trials);
        if (dnh) {
            r->dn_nhwc_ms = median(ims[2].samples, o->trials);
            r->dn_nhwc_min = minimum(ims[2].samples, o->trials);
        }
    }
    rc = 0;
fail:
    free(samples);
    onednn_conv_destroy(dn);
    onednn_conv_destroy(dnh);
    ps_plan_destroy(plan);
    free(src);
    free(wei);
    free(dst_ps);
    free(dst_ref);
    free(dst_tmp);
    free(packed);
    free(ws);
    return rc;
}

/* ---- gemm --------------------------------------------------------------------- */

typedef struct dn_gemm_arg {
    int64_t M, N, K;
    const float *a, *b;
    float *c;
} dn_gemm_arg;

static int run_onednn_gemm(void *p)
{
    dn_gemm_arg *g = p;
    if (onednn_sgemm(0, 0, g->M, g->N, g->K, 1.0f, g->a, 0, g->b, 0, 0.0f, g->c, 0)) {
        fprintf(stderr, "ERROR: dnnl_sgemm: %s\n", onednn_last_error());
        return -1;
    }
    return 0;
}

static int bench_gemm_shape(ps_context *ctx, const options *o, const char *name,
                            const int64_t v[3], result *r)
{
    ps_plan *plan = NULL;
    float *A = NULL, *B = NULL, *C_ps = NULL, *C_ref = NULL;
    void *ws = NULL;
    double *samples = NULL;
    int rc = -1;

    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->threads = o->threads;
    r->M = v[0];
    r->Ng = v[1];
    r->Kg = v[2];
    r->flops = 2.0 * (double)v[0] * (double)v[1] * (double)v[2];

    ps_desc desc;
    ps_desc_init_gemm(&desc);
    desc.u.gemm.M = v[0];
    desc.u.gemm.N = v[1];
    desc.u.gemm.K = v[2];
    desc.u.gemm.order = PS_ROW_MAJOR; /* dnnl_sgemm is row-major */

    size_t nA = (size_t)(v[0] * v[2]), nB = (size_t)(v[2] * v[1]), nC = (size_t)(v[0] * v[1]);
    A = xalloc(nA * sizeof(float));
    B = xalloc(nB * sizeof(float));
    C_ps = xalloc(nC * sizeof(float));
    C_ref = xalloc(nC * sizeof(float));
    fill_random(A, nA);
    fill_random(B, nB);

    double t0 = now_ms();
    PS_TRY(ps_plan_create(ctx, &desc, NULL, &plan), "ps_plan_create");
    r->plan_ms = now_ms() - t0;
    plan_schedule_text(plan, PS_OP_GEMM, r->sched, sizeof r->sched);
    if (o->describe)
        describe_plan(plan);
    size_t wbytes = 0;
    PS_TRY(ps_plan_workspace_size(plan, &wbytes), "ps_plan_workspace_size");
    if (wbytes)
        ws = xalloc(wbytes);

    ps_run_arg pa;
    pa.plan = plan;
    ps_exec_args_init(&pa.args);
    pa.args.a = A;
    pa.args.b = B;
    pa.args.c = C_ps;
    pa.args.workspace = ws;
    dn_gemm_arg ga = {v[0], v[1], v[2], A, B, C_ref};

    onednn_set_num_threads(o->threads);
    /* beta = 0: C must be fully written and not read (BLAS convention) */
    fill_nan(C_ps, nC);
    if (run_polysci(&pa) || run_onednn_gemm(&ga))
        goto fail;
    size_t wi = 0;
    r->err = rel_error(C_ps, C_ref, nC, &wi);
    r->ok = r->err <= o->tol;
    if (!r->ok)
        fprintf(stderr,
                "FAIL %s: polysci vs dnnl_sgemm max error %.3e of max|ref| (tol %.1e); worst at "
                "row %zu col %zu: polysci %g oneDNN %g%s\n",
                name, r->err, o->tol, wi / (size_t)v[1], wi % (size_t)v[1], (double)C_ps[wi],
                (double)C_ref[wi],
                isfinite(C_ps[wi]) ? "" : " (NaN: C not written, or read although beta = 0)");

    if (!o->check_only) {
        samples = calloc((size_t)o->trials * 2, sizeof *samples);
        if (!samples)
            goto fail;
        impl ims[2] = {
            {"polysci", run_polysci, &pa, 0, 0, samples},
            {"onednn", run_onednn_gemm, &ga, o->threads, 0, samples + o->trials},
        };
        if (time_alternating(ims, 2, o))
            goto fail;
        r->ps_ms = median(ims[0].samples, o->trials);
        r->dn_ms = median(ims[1].samples, o->trials);
        r->ps_min = minimum(ims[0].samples, o->trials);
        r->dn_min = minimum(ims[1].samples, o->trials);
    }
    rc = 0;
fail:
    free(samples);
    ps_plan_destroy(plan);
    free(A);
    free(B);
    free(C_ps);
    free(C_ref);
    free(ws);
    return rc;
}

/* ---- main --------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o))
        return 2;
    FILE *f = fopen(o.file, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", o.file, strerror(errno));
        return 2;
    }

    if (!o.onednn_cache)
        onednn_disable_primitive_cache();
    onednn_set_num_threads(o.threads);

    ps_context_options co;
    ps_context_options_init(&co);
    co.num_threads = o.threads;
    ps_context *ctx = NULL;
    ps_status st = ps_context_create(&co, &ctx);
    if (st != PS_SUCCESS) {
        fprintf(stderr, "ps_context_create: %s (%s)\n", ps_status_str(st), ps_last_error_message());
        fclose(f);
        return 1;
    }

    int cap = 16, n = 0, failures = 0, gemm = -1;
    result *rs = malloc((size_t)cap * sizeof *rs);
    if (!rs)
        return 1;
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0')
            continue;
        char name[64];
        long long x[9];
        int got = sscanf(s, "%63s %lld %lld %lld %lld %lld %lld %lld %lld %lld", name, &x[0],
                         &x[1], &x[2], &x[3], &x[4], &x[5], &x[6], &x[7], &x[8]);
        int is_gemm;
        if (got == 10 && o.mode != 2)
            is_gemm = 0;
        else if (got == 4 && o.mode != 1)
            is_gemm = 1;
        else {
            fprintf(stderr, "%s:%d: expected %s, got %d fields\n", o.file, lineno,
                    o.mode == 2   ? "name M N K"
                    : o.mode == 1 ? "name H W C K R S stride pad_h pad_w"
                                  : "a conv (10 fields) or gemm (4 fields) line",
                    got);
            failures++;
            continue;
        }
        if (gemm < 0) {
            gemm = is_gemm;
            printf("# polysci %s (API %d) vs oneDNN %s\n", ps_version(), ps_api_version(),
                   onednn_version_string());
            printf("# %s, threads %d (polysci context: %d), %s%d trials x >= %.0f ms each, "
                   "medians; oneDNN primitive cache %s\n",
                   gemm ? "gemm (row-major, dnnl_sgemm)" : "conv fwd f32 NHWC/KCRS",
                   o.threads, ps_context_num_threads(ctx), "", o.trials, o.min_trial_ms,
                   o.onednn_cache ? "on" : "off");
            if (!gemm)
                printf("# batch N = %d; oneDNN: direct conv, forward_inference, `any` layouts "
                       "(reorders untimed)%s\n",
                       o.batch, o.nhwc ? "; dnnhwc = oneDNN with plain nhwc src/dst" : "");
            printf("# ratio = onednn_ms / polysci_ms (> 1: polysci faster)\n");
            print_row_header(o.quiet ? stderr : stdout, gemm, o.nhwc);
        } else if (gemm != is_gemm) {
            fprintf(stderr, "%s:%d: mixed conv and gemm lines\n", o.file, lineno);
            failures++;
            continue;
        }
        if (o.only && !strstr(name, o.only))
            continue;
        if (n == cap) {
            cap *= 2;
            result *t = realloc(rs, (size_t)cap * sizeof *rs);
            if (!t)
                return 1;
            rs = t;
        }
        int64_t v[9];
        for (int i = 0; i < 9; i++)
            v[i] = i < got - 1 ? (int64_t)x[i] : 0;
        int rc = is_gemm ? bench_gemm_shape(ctx, &o, name, v, &rs[n])
                         : bench_conv_layer(ctx, &o, name, v, &rs[n]);
        if (rc) {
            failures++;
            fprintf(o.quiet ? stderr : stdout, "%-12s  ERROR (see stderr)\n", name);
            continue;
        }
        if (!rs[n].ok)
            failures++;
        print_row(o.quiet ? stderr : stdout, &rs[n], gemm, o.nhwc);
        n++;
    }
    fclose(f);

    if (n > 0 && !o.check_only) {
        int c0 = 0;
        double g0 = geomean_ratio(rs, n, 0, &c0);
        printf("# geomean ratio (onednn/polysci) over %d shapes: %.3f", c0, g0);
        if (!gemm && o.nhwc)
            printf("; vs oneDNN nhwc: %.3f", geomean_ratio(rs, n, 1, NULL));
        printf("; geomean GFLOP/s polysci %.1f, oneDNN %.1f\n", geomean_ratio(rs, n, 2, NULL),
               geomean_ratio(rs, n, 3, NULL));
        if (o.markdown)
            print_markdown(rs, n, gemm, o.nhwc);
    }
    if (o.csv && n > 0) {
        if (!strcmp(o.csv, "-")) {
            printf("\n");
            write_csv(stdout, rs, n, gemm);
        } else {
            FILE *cf = fopen(o.csv, "w");
            if (!cf) {
                fprintf(stderr, "cannot write %s: %s\n", o.csv, strerror(errno));
                failures++;
            } else {
                write_csv(cf, rs, n, gemm);
                fclose(cf);
            }
        }
    }
    if (failures)
        fprintf(stderr, "%d shape(s) FAILED (verification or errors)\n", failures);
    free(rs);
    ps_context_destroy(ctx);
    return failures ? 1 : 0;
}
