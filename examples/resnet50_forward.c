/* polysci example: every convolution layer of ResNet-50, batch 1.
 *
 *   resnet50_forward LAYERS_FILE [REPS]
 *
 * LAYERS_FILE is bench/layers/resnet50.txt: one layer per line,
 * "name H W C K R S stride pad_h pad_w" ('#' starts a comment). For each
 * layer, the way a framework would run it: plan once (the planner picks the
 * schedule), pack random weights once, then execute on a random NHWC input
 * (the file lists the distinct layer shapes, which do not chain, so every
 * layer gets its own input). 64 outputs per layer (the four corners first,
 * then random points) are checked against a direct double-precision
 * computation. Prints per layer the planning time and the fastest and the
 * median of REPS (default 5) execution times, GFLOP/s of the fastest, and
 * the totals. (On a busy machine the two differ a lot: the median then
 * mostly measures waiting for the scheduler.)
 *
 * Exit status: 0 all layers right, 1 a wrong output or an error, 2 usage,
 * 77 the layers file does not exist (ctest reports the test as skipped). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <polysci/polysci.h>

enum { SPOT_CHECKS = 64, MAX_LAYERS = 256, MAX_REPS = 1000 };

typedef struct layer {
    char name[64];
    long H, W, C, K, R, S, stride, pad_h, pad_w;
} layer;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* Uniform in 0..n-1. */
static long pick(unsigned *s, long n)
{
    *s = *s * 1664525u + 1013904223u;
    return (long)((*s >> 8) % (unsigned long)n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* Reads the conv layers of `path`; -1 with a message on a malformed line. */
static int read_layers(FILE *f, const char *path, layer *out, int max)
{
    char line[512];
    int n = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char extra[2];
        layer l;
        int got = sscanf(line, "%63s %ld %ld %ld %ld %ld %ld %ld %ld %ld %1s", l.name, &l.H, &l.W, &l.C, &l.K,
                         &l.R, &l.S, &l.stride, &l.pad_h, &l.pad_w, extra);
        if (got <= 0) continue; /* blank or comment */
        if (got != 10 || l.H < 1 || l.W < 1 || l.C < 1 || l.K < 1 || l.R < 1 || l.S < 1 || l.stride < 1 ||
            l.pad_h < 0 || l.pad_w < 0) {
            fprintf(stderr, "resnet50_forward: %s:%d: expected \"name H W C K R S stride pad_h pad_w\"\n", path,
                    lineno);
            return -1;
        }
        if (n == max) {
            fprintf(stderr, "resnet50_forward: %s: more than %d layers\n", path, max);
            return -1;
        }
        out[n++] = l;
    }
    return n;
}

/* Plans, packs, runs and spot-checks one layer; 0 when right. */
static int run_layer(ps_context *ctx, const layer *l, int reps, unsigned *seed, double *plan_ms, double *min_ms,
                     double *median_ms, double *max_err)
{
    ps_desc desc;
    ps_desc_init_conv(&desc); /* NHWC activations, KCRS (oihw) weights */
    ps_conv_desc *d = &desc.u.conv;
    d->N = 1;
    d->H = l->H; d->W = l->W; d->C = l->C; d->K = l->K; d->R = l->R; d->S = l->S;
    d->stride_h = d->stride_w = l->stride;
    d->pad_top = d->pad_bottom = l->pad_h;
    d->pad_left = d->pad_right = l->pad_w;

    ps_status st;
    ps_plan *plan = NULL;
    double t0 = now_ms();
    if ((st = ps_plan_create(ctx, &desc, NULL, &plan)) != PS_SUCCESS) {
        fprintf(stderr, "resnet50_forward: %s: ps_plan_create: %s: %s\n", l->name, ps_status_str(st),
                ps_last_error_message());
        return 1;
    }
    *plan_ms = now_ms() - t0;

    int64_t OH = 0, OW = 0;
    ps_conv_output_size(&desc, &OH, &OW);
    const size_t n_src = (size_t)(l->H * l->W * l->C), n_wt = (size_t)(l->K * l->C * l->R * l->S);
    const size_t n_dst = (size_t)(OH * OW * l->K);
    size_t packed_bytes = 0;
    ps_plan_packed_weights_size(plan, &packed_bytes);
    float *src = alloc64(n_src * sizeof *src), *wt = alloc64(n_wt * sizeof *wt), *dst = alloc64(n_dst * sizeof *dst);
    void *packed = alloc64(packed_bytes);
    int bad = 0;
    if (!src || !wt || !dst || !packed) {
        fprintf(stderr, "resnet50_forward: %s: out of memory\n", l->name);
        bad = 1;
        goto out;
    }
    const float wscale = 1.0f / sqrtf((float)(l->C * l->R * l->S)); /* outputs of order 1 */
    for (size_t i = 0; i < n_src; i++) src[i] = frand(seed);
    for (size_t i = 0; i < n_wt; i++) wt[i] = frand(seed) * wscale;
    for (size_t i = 0; i < n_dst; i++) dst[i] = NAN; /* an output the plan does not write fails the check */

    if ((st = ps_plan_pack_weights(plan, wt, packed)) != PS_SUCCESS ||
        (st = ps_conv_execute(plan, src, packed, NULL, dst)) != PS_SUCCESS) {
        fprintf(stderr, "resnet50_forward: %s: %s: %s\n", l->name, ps_status_str(st), ps_last_error_message());
        bad = 1;
        goto out;
    }

    /* Spot checks, before the timed runs overwrite dst with the same values. */
    *max_err = 0.0;
    for (int t = 0; t < SPOT_CHECKS; t++) {
        long oh = t < 4 ? ((t & 1) ? OH - 1 : 0) : pick(seed, OH);
        long ow = t < 4 ? ((t & 2) ? OW - 1 : 0) : pick(seed, OW);
        long k = pick(seed, l->K);
        double want = 0.0, mag = 0.0;
        for (long c = 0; c < l->C; c++)
            for (long r = 0; r < l->R; r++)
                for (long s = 0; s < l->S; s++) {
                    long ih = oh * l->stride - l->pad_h + r, iw = ow * l->stride - l->pad_w + s;
                    if (ih < 0 || ih >= l->H || iw < 0 || iw >= l->W) continue;
                    double term = (double)src[(ih * l->W + iw) * l->C + c] * wt[((k * l->C + c) * l->R + r) * l->S + s];
                    want += term;
                    mag += fabs(term);
                }
        double got = dst[(oh * OW + ow) * l->K + k];
        double err = fabs(got - want);
        /* f32 accumulation of C*R*S products: error well below 1e-5 of their magnitude. */
        if (!(err <= 1e-5 * mag + 1e-6)) {
            if (bad < 5)
                fprintf(stderr, "resnet50_forward: %s: dst[%ld][%ld][%ld] = %.7g, expected %.7g\n", l->name, oh, ow,
                        k, got, want);
            bad++;
        }
        if (err / (1.0 + fabs(want)) > *max_err) *max_err = err / (1.0 + fabs(want));
    }

    double times[MAX_REPS];
    for (int r = 0; r < reps && !bad; r++) {
        t0 = now_ms();
        st = ps_conv_execute(plan, src, packed, NULL, dst);
        times[r] = now_ms() - t0;
        if (st != PS_SUCCESS) {
            fprintf(stderr, "resnet50_forward: %s: ps_conv_execute: %s\n", l->name, ps_status_str(st));
            bad++;
        }
    }
    if (bad) goto out;
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    *min_ms = times[0];
    *median_ms = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
out:
    free(src);
    free(wt);
    free(dst);
    free(packed);
    ps_plan_destroy(plan);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s LAYERS_FILE [REPS]   (LAYERS_FILE: bench/layers/resnet50.txt)\n", argv[0]);
        return 2;
    }
    int reps = argc == 3 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "resnet50_forward: REPS must be 1..%d\n", MAX_REPS);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "resnet50_forward: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    static layer layers[MAX_LAYERS];
    int n = read_layers(f, argv[1], layers, MAX_LAYERS);
    fclose(f);
    if (n < 0) return 1;
    if (n == 0) {
        fprintf(stderr, "resnet50_forward: %s lists no conv layer\n", argv[1]);
        return 1;
    }

    ps_context *ctx = NULL;
    ps_status st = ps_context_create(NULL, &ctx);
    if (st != PS_SUCCESS) {
        fprintf(stderr, "resnet50_forward: ps_context_create: %s: %s\n", ps_status_str(st), ps_last_error_message());
        return 1;
    }
    printf("resnet50_forward: %d conv layers from %s, N=1, NHWC, %d threads, %d timed runs per layer\n", n, argv[1],
           ps_context_num_threads(ctx), reps);
    printf("%-12s %-24s %8s %8s %9s %8s %9s  %s\n", "layer", "shape", "plan ms", "min ms", "median ms",
           "GFLOP/s", "max err", "check");

    unsigned seed = 2024;
    int failed = 0;
    double plan_total = 0.0, min_total = 0.0, median_total = 0.0, flops_total = 0.0;
    for (int i = 0; i < n; i++) {
        const layer *l = &layers[i];
        double plan_ms = 0.0, min_ms = 0.0, median_ms = 0.0, max_err = 0.0;
        int bad = run_layer(ctx, l, reps, &seed, &plan_ms, &min_ms, &median_ms, &max_err);
        long OH = (l->H + 2 * l->pad_h - l->R) / l->stride + 1, OW = (l->W + 2 * l->pad_w - l->S) / l->stride + 1;
        double flops = 2.0 * l->K * l->C * OH * OW * l->R * l->S;
        char shape[64];
        snprintf(shape, sizeof shape, "%ldx%ld %ld->%ld %ldx%ld/%ld", l->H, l->W, l->C, l->K, l->R, l->S, l->stride);
        if (bad) {
            printf("%-12s %-24s %8s %8s %9s %8s %9s  FAILED\n", l->name, shape, "-", "-", "-", "-", "-");
            failed++;
            continue;
        }
        printf("%-12s %-24s %8.2f %8.3f %9.3f %8.1f %9.2e  ok\n", l->name, shape, plan_ms, min_ms, median_ms,
               flops / min_ms * 1e-6, max_err);
        plan_total += plan_ms;
        min_total += min_ms;
        median_total += median_ms;
        flops_total += flops;
    }
    printf("resnet50_forward: %d/%d layers OK; total: plan %.1f ms, forward pass %.2f ms fastest "
           "(%.1f GFLOP/s), %.2f ms median\n",
           n - failed, n, plan_total, min_total, min_total > 0 ? flops_total / min_total * 1e-6 : 0.0, median_total);
    ps_context_destroy(ctx);
    return failed ? 1 : 0;
}
