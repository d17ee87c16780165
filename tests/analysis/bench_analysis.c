/* Analysis time per schedule variant on a layer list (default: the ResNet-50
 * layers of bench/layers/resnet50.txt in the source tree, format "name H W C K
 * R S stride pad_h pad_w").
 *
 *   bench_analysis [layers.txt] [variants per layer (200)] [minibatch N (28)] [threads (28)] [repeats (3)]
 *
 * For every layer it builds `variants` schedules — the 120 orders of the
 * five tile loops, then orders with an extra tiling level on k, oh or ow —
 * with a parallel band over the outer non-reduction loops, and times
 * ps_analysis_create + destroy (PS_ANALYSIS_FAST) with 1 thread and with
 * `threads` threads, best of `repeats` runs each. Prints per-layer mean / max
 * microseconds per variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "polysci/analysis.h"
#include "descriptors/shape.h"
#include "polysci/polysci.h"
#include "schedule/schedule_impl.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Widest divisor of ow in [7, 28], else 28 (remainder block). */
static int pick_n(int64_t ow)
{
    for (int b = 28; b >= 7; b--)
        if (ow % b == 0) return b;
    return ow < 28 ? (int)ow : 28;
}

/* Variant v: permutation v % 120 of (n, k, oh, ow, c); for v >= 120 an
 * extra outer tile on dimension (k, oh, ow)[(v / 120 - 1) % 3]. */
static void make_variant(int v, const int64_t ext[PS_DIM_COUNT], ps_kernel_shape ks, ps_schedule *s)
{
    static const ps_dim dims[5] = {PS_DIM_N, PS_DIM_K, PS_DIM_OH, PS_DIM_OW, PS_DIM_C};
    int perm[5] = {0, 1, 2, 3, 4}, p = v % 120;
    for (int i = 0; i < 5; i++) { /* Lehmer code */
        int f = 1;
        for (int j = 2; j < 5 - i; j++) f *= j;
        int q = p / f;
        p %= f;
        int t = perm[i + q];
        memmove(&perm[i + 1], &perm[i], (size_t)q * sizeof *perm);
        perm[i] = t;
    }
    memset(s, 0, sizeof *s);
    s->n_stages = 1;
    s->stages[0].kernel = ks;
    ps_stage *sg = &s->stages[0];
    int tiled = v >= 120 ? (int)(1 + (v / 120 - 1) % 3) : -1; /* index into dims */
    if (tiled >= 0 && ext[dims[tiled]] > 4) sg->loops[sg->n_loops++] = (ps_loop){dims[tiled], 4, 0};
    for (int i = 0; i < 5; i++) {
        ps_dim d = dims[perm[i]];
        if (ext[d] > 1) sg->loops[sg->n_loops++] = (ps_loop){d, 1, 0};
    }
    /* Parallel band: the outer loops up to the first reduction loop, at most 2. */
    for (int i = 0; i < sg->n_loops && i < 2 && sg->loops[i].dim != PS_DIM_C; i++) sg->loops[i].parallel = 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : POLYSCI_SOURCE_LAYERS "/resnet50.txt";
    const int variants = argc > 2 ? atoi(argv[2]) : 200;
    const int64_t N = argc > 3 ? atoll(argv[3]) : 28;
    const int threads = argc > 4 ? atoi(argv[4]) : 28;
    const int reps = argc > 5 ? atoi(argv[5]) : 3;
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    char line[512];
    double all_sum[2] = {0, 0}, all_max[2] = {0, 0};
    long all_n = 0;
    printf("%-10s %5s %5s %5s %5s %3s %2s | %9s %9s | %9s %9s  (us per variant; %d variants, N=%lld, 1 / %d threads)\n",
           "layer", "H", "W", "C", "K", "R", "s", "mean1", "max1", "meanT", "maxT", variants, (long long)N, threads);
    while (fgets(line, sizeof line, f)) {
        char name[64];
        long long H, W, C, K, R, S, st, ph, pw;
        if (line[0] == '#' || sscanf(line, "%63s %lld %lld %lld %lld %lld %lld %lld %lld %lld", name, &H, &W, &C, &K, &R,
                                     &S, &st, &ph, &pw) != 10)
            continue;
        ps_desc desc;
        ps_desc_init_conv(&desc);
        ps_conv_desc *c = &desc.u.conv;
        c->N = N; c->C = C; c->K = K; c->H = H; c->W = W; c->R = R; c->S = S;
        c->stride_h = c->stride_w = st;
        c->pad_top = c->pad_bottom = ph;
        c->pad_left = c->pad_right = pw;
        ps_conv_shape cs; /* the executor's tile space (1x1 convs may be one row) */
        ps_conv_shape_of(c, &cs);
        const int64_t OW = cs.OW, OH = cs.OH;
        ps_kernel_shape ks = {(int)(K < 64 ? K : 64), pick_n(OW), (int)(C < 64 ? C : 64), 4};
        int64_t ext[PS_DIM_COUNT] = {N, cdiv(K, ks.m), OH, cdiv(OW, ks.n), cdiv(cdiv(C, ks.k), ks.batch)};
        double sum[2] = {0, 0}, mx[2] = {0, 0};
        for (int v = 0; v < variants; v++) {
            ps_schedule s;
            make_variant(v, ext, ks, &s);
            for (int t = 0; t < 2; t++) {
                ps_analysis_options o;
                ps_analysis_options_init(&o);
                o.num_threads = t ? threads : 1;
                /* Best of `reps` runs: the machine may be shared. */
                double dt = 1e30;
                for (int rep = 0; rep < reps; rep++) {
                    ps_analysis *a = NULL;
                    double t0 = now_us();
                    ps_status stt = ps_analysis_create(&desc, &s, &o, &a);
                    double t1 = now_us() - t0;
                    if (stt) {
                        fprintf(stderr, "%s variant %d: %s: %s\n", name, v, ps_status_str(stt),
                                ps_last_error_message());
                        return 1;
                    }
                    ps_analysis_destroy(a);
                    if (t1 < dt) dt = t1;
                }
                sum[t] += dt;
                if (dt > mx[t]) mx[t] = dt;
            }
        }
        printf("%-10s %5lld %5lld %5lld %5lld %3lld %2lld | %9.1f %9.1f | %9.1f %9.1f\n", name, H, W, C, K, R, st,
               sum[0] / variants, mx[0], sum[1] / variants, mx[1]);
        for (int t = 0; t < 2; t++) {
            all_sum[t] += sum[t];
            if (mx[t] > all_max[t]) all_max[t] = mx[t];
        }
        all_n += variants;
    }
    fclose(f);
    if (all_n)
        printf("%-10s %31s | %9.1f %9.1f | %9.1f %9.1f\n", "all", "", all_sum[0] / all_n, all_max[0],
               all_sum[1] / all_n, all_max[1]);
    return 0;
}
