/* Random small conv and GEMM schedules (strided, dilated, padded, partial
 * tiles, parallel bands over 1-4 threads): the closed-form analysis must
 * agree exactly with the brute-force simulator (sim.h) — every array's
 * dependence, source and targets, per-array and total working sets, shared
 * working sets — and, on the smaller cases, with Algorithm 1 computed by
 * isl on the element-level model.
 * PS_TEST_SEED / PS_TEST_COUNT override the seed / number of cases. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/model.h"
#include "descriptors/shape.h"
#include "sim.h"

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t rr(rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(rnext(r) % (uint64_t)(hi - lo + 1)); }

/* A random valid schedule over tile-space extents ext (dims in `dims`). */
static void gen_schedule(rng *r, const int64_t ext[PS_DIM_COUNT], const int *dims, int ndims, ps_kernel_shape ks,
                         ps_schedule *s, int *nthreads)
{
    memset(s, 0, sizeof *s);
    s->n_stages = 1;
    s->stages[0].kernel = ks;
    int64_t chain[PS_DIM_COUNT][4];
    int nchain[PS_DIM_COUNT] = {0}, used[PS_DIM_COUNT] = {0};
    int total = 0;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        int q = ext[d] > 1 ? (int)rr(r, 1, 3) : (int)rr(r, 0, 1);
        /* q-1 distinct tiles in [2, ext+1], decreasing, then 1. */
        int64_t t[4];
        int nt = 0;
        for (int a = 0; a < q - 1; a++) {
            int64_t v = rr(r, 2, ext[d] + 1);
            int dup = 0;
            for (int b = 0; b < nt; b++) dup |= t[b] == v;
            if (!dup) t[nt++] = v;
        }
        for (int a = 0; a < nt; a++)
            for (int b = a + 1; b < nt; b++)
                if (t[b] > t[a]) {
                    int64_t x = t[a];
                    t[a] = t[b];
                    t[b] = x;
                }
        if (q > 0) t[nt++] = 1;
        memcpy(chain[d], t, sizeof t);
        nchain[d] = nt;
        total += nt;
    }
    ps_stage *sg = &s->stages[0];
    while (sg->n_loops < total) {
        int d = dims[rr(r, 0, ndims - 1)];
        if (used[d] == nchain[d]) continue;
        sg->loops[sg->n_loops++] = (ps_loop){(ps_dim)d, chain[d][used[d]++], 0};
    }
    int band = (int)rr(r, 0, sg->n_loops < 3 ? sg->n_loops : 3);
    for (int i = 0; i < band && sg->loops[i].dim != PS_DIM_C; i++) sg->loops[i].parallel = 1;
    *nthreads = (int)rr(r, 1, 4);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int failures, n_late_source, n_shared_only, n_segs, n_segs_reordered, n_merged;

static void print_case(const ps_desc *desc, const ps_schedule *s, int nt)
{
    if (desc->kind == PS_OP_CONV_FWD) {
        const ps_conv_desc *c = &desc->u.conv;
        printf("  conv N%lld C%lld K%lld H%lld W%lld R%lld S%lld stride %lld,%lld pad %lld,%lld,%lld,%lld dil %lld,%lld\n",
               (long long)c->N, (long long)c->C, (long long)c->K, (long long)c->H, (long long)c->W, (long long)c->R,
               (long long)c->S, (long long)c->stride_h, (long long)c->stride_w, (long long)c->pad_top,
               (long long)c->pad_bottom, (long long)c->pad_left, (long long)c->pad_right, (long long)c->dilation_h,
               (long long)c->dilation_w);
    } else {
        const ps_gemm_desc *g = &desc->u.gemm;
        printf("  gemm M%lld N%lld K%lld\n", (long long)g->M, (long long)g->N, (long long)g->K);
    }
    const ps_stage *sg = &s->stages[0];
    printf("  kernel %dx%dx%d/%d threads %d loops:", sg->kernel.m, sg->kernel.n, sg->kernel.k, sg->kernel.batch, nt);
    for (int i = 0; i < sg->n_loops; i++)
        printf(" %d:%lld%s", (int)sg->loops[i].dim, (long long)sg->loops[i].tile, sg->loops[i].parallel ? "*" : "");
    printf("\n");
}

static int same_coords(const psa_model *m, const int64_t *idx, const int64_t *x)
{
    int64_t y[PSA_NCOORD];
    if (!psa_coords_of(m, idx, y)) return 0;
    return memcmp(x, y, sizeof y) == 0;
}

/* Checks one case against the simulator (and isl when asked). */
static void check_case(int id, const ps_desc *desc, const ps_schedule *s, int nt, int with_isl)
{
    psa_model m;
    ps_status st = psa_model_from_schedule(desc, s, nt, &m);
    if (st) {
        printf("case %d: model failed: %s\n", id, ps_last_error_message());
        print_case(desc, s, nt);
        failures++;
        return;
    }
    for (int l = 0; l < m.nlev; l++)
        if (m.lev[l].segs) {
            n_segs++;
            int reordered = 0;
            for (int64_t b = 0; b < m.seg_nblocks; b++)
                for (int64_t j = m.seg_off[b] + 1; j < m.seg_off[b + 1]; j++)
                    if (m.seg_slo[j] < m.seg_slo[j - 1]) reordered = 1;
            n_segs_reordered += reordered;
        }
    n_merged += m.merge_taps;
    psa_dep dep[PSA_NARR];
    if ((st = psa_analyze_fast(&m, dep))) {
        printf("case %d: analysis failed: %s\n", id, ps_last_error_message());
        failures++;
        psa_model_release(&m);
        return;
    }
    sim S;
    if (desc->kind == PS_OP_CONV_FWD) sim_init_conv(&S, &desc->u.conv, s, nt);
    else sim_init_gemm(&S, desc->u.gemm.M, desc->u.gemm.N, desc->u.gemm.K, s, nt);
    sim_dep sd[3];
    sim_analyze(&S, sd);
    int bad = 0;
    for (int a = 0; a < 3; a++) {
        n_late_source += sd[a].src_not_first;
        n_shared_only += sd[a].shared_only;
    }
    for (int a = 0; a < 3 && !bad; a++) {
        const psa_dep *d = &dep[a];
        const sim_dep *e = &sd[a];
        if (d->exists != e->exists || d->shared_only != e->shared_only) bad = 1;
        if (!d->exists || bad) continue;
        if (d->ws_min != e->ws_min || d->ws_max != e->ws_max || d->ws_min_shared != e->ws_min_shared ||
            d->ws_max_shared != e->ws_max_shared)
            bad = 1;
        for (int k = 0; k < 3; k++)
            if (d->ws_min_arr[k] != e->ws_min_arr[k] || d->ws_max_arr[k] != e->ws_max_arr[k]) bad = 1;
        if (!same_coords(&m, d->src, e->src)) bad = 1;
        if (!d->shared_only && (!same_coords(&m, d->tmin, e->tmin) || !same_coords(&m, d->tmax, e->tmax))) bad = 1;
        if (bad) printf("case %d: array %s differs\n", id, m.arr_name[a]);
    }
    if (bad) {
        print_case(desc, s, nt);
        for (int a = 0; a < 3; a++) {
            printf("  %-2s fast: exists %d shared_only %d ws %" PRId64 "/%" PRId64 " (%" PRId64 ",%" PRId64 ",%" PRId64
                   " / %" PRId64 ",%" PRId64 ",%" PRId64 ") shared %" PRId64 "/%" PRId64 "\n",
                   m.arr_name[a], dep[a].exists, dep[a].shared_only, dep[a].ws_min, dep[a].ws_max,
                   dep[a].ws_min_arr[0], dep[a].ws_min_arr[1], dep[a].ws_min_arr[2], dep[a].ws_max_arr[0],
                   dep[a].ws_max_arr[1], dep[a].ws_max_arr[2], dep[a].ws_min_shared, dep[a].ws_max_shared);
            printf("     sim:  exists %d shared_only %d ws %" PRId64 "/%" PRId64 " (%" PRId64 ",%" PRId64 ",%" PRId64
                   " / %" PRId64 ",%" PRId64 ",%" PRId64 ") shared %" PRId64 "/%" PRId64 "\n",
                   sd[a].exists, sd[a].shared_only, sd[a].ws_min, sd[a].ws_max, sd[a].ws_min_arr[0],
                   sd[a].ws_min_arr[1], sd[a].ws_min_arr[2], sd[a].ws_max_arr[0], sd[a].ws_max_arr[1],
                   sd[a].ws_max_arr[2], sd[a].ws_min_shared, sd[a].ws_max_shared);
            int64_t x[PSA_NCOORD];
            psa_coords_of(&m, dep[a].src, x);
            printf("     src fast (%lld,%lld,%lld,%lld,%lld,%lld,%lld) sim (%lld,%lld,%lld,%lld,%lld,%lld,%lld)\n",
                   (long long)x[0], (long long)x[1], (long long)x[2], (long long)x[3], (long long)x[4],
                   (long long)x[5], (long long)x[6], (long long)sd[a].src[0], (long long)sd[a].src[1],
                   (long long)sd[a].src[2], (long long)sd[a].src[3], (long long)sd[a].src[4], (long long)sd[a].src[5],
                   (long long)sd[a].src[6]);
        }
        failures++;
    }
    if (with_isl && !bad) {
        psa_dep (*dk)[PSA_NARR] = calloc(4, sizeof *dk);
        if ((st = psa_analyze_isl(&m, dk))) {
            printf("case %d: isl analysis failed: %s\n", id, ps_last_error_message());
            failures++;
        } else {
            for (int a = 0; a < 3; a++) {
                if (dep[a].shared_only) continue; /* not searched for by the isl reference */
                for (int k = 0; k < 4; k++) {
                    int expect = dep[a].exists && (k == 0 || a == PSA_OUT);
                    const psa_dep *d = &dk[k][a];
                    if (d->exists != expect ||
                        (expect && (d->ws_min != dep[a].ws_min || d->ws_max != dep[a].ws_max ||
                                    d->ws_min_shared != dep[a].ws_min_shared || memcmp(d->src, dep[a].src, (size_t)m.nlev * sizeof *d->src) ||
                                    memcmp(d->tmin, dep[a].tmin, (size_t)m.nlev * sizeof *d->tmin) ||
                                    memcmp(d->tmax, dep[a].tmax, (size_t)m.nlev * sizeof *d->tmax)))) {
                        printf("case %d: isl differs for %s kind %d: exists %d ws %" PRId64 "/%" PRId64
                               ", fast %d %" PRId64 "/%" PRId64 "\n",
                               id, m.arr_name[a], k, d->exists, d->ws_min, d->ws_max, dep[a].exists, dep[a].ws_min,
                               dep[a].ws_max);
                        print_case(desc, s, nt);
                        failures++;
                    }
                }
            }
        }
        free(dk);
    }
    sim_free(&S);
    psa_model_release(&m);
}

int main(void)
{
    const char *env = getenv("PS_TEST_SEED");
    rng r = {env ? strtoull(env, NULL, 0) : 20240601ull};
    env = getenv("PS_TEST_COUNT");
    const int count = env ? atoi(env) : 160;
    int nconv = 0, ngemm = 0, npar = 0, nstrided = 0, npadded = 0, nisl = 0;
    for (int id = 0; id < count; id++) {
        ps_desc desc;
        int64_t ext[PS_DIM_COUNT];
        ps_kernel_shape ks = {(int)rr(&r, 1, 4), (int)rr(&r, 1, 4), (int)rr(&r, 1, 4), (int)rr(&r, 1, 3)};
        int64_t instances;
        if (id % 3 != 2) {
            ps_desc_init_conv(&desc);
            ps_conv_desc *c = &desc.u.conv;
            int64_t OH, OW;
            do {
                c->N = rr(&r, 1, 2); c->C = rr(&r, 1, 6); c->K = rr(&r, 1, 6);
                c->H = rr(&r, 1, 7); c->W = rr(&r, 1, 7); c->R = rr(&r, 1, 3); c->S = rr(&r, 1, 3);
                c->stride_h = rr(&r, 1, 3); c->stride_w = rr(&r, 1, 3);
                c->dilation_h = rr(&r, 1, 2); c->dilation_w = rr(&r, 1, 2);
                c->pad_top = rr(&r, 0, c->dilation_h * (c->R - 1));
                c->pad_bottom = rr(&r, 0, c->dilation_h * (c->R - 1));
                c->pad_left = rr(&r, 0, c->dilation_w * (c->S - 1));
                c->pad_right = rr(&r, 0, c->dilation_w * (c->S - 1));
                if (id % 7 == 3) { /* merged taps (ps_conv_merges_taps: C in one block, R*K >= 128*sh, dw = 1) */
                    c->C = rr(&r, 1, ks.k); c->K = rr(&r, 43, 50); c->R = 3; c->S = rr(&r, 2, 3);
                    c->stride_h = 1;
                    c->pad_top = rr(&r, 0, c->dilation_h * 2);
                    c->pad_bottom = rr(&r, 0, c->dilation_h * 2);
                    c->pad_left = rr(&r, 0, c->dilation_w * (c->S - 1));
                    c->pad_right = rr(&r, 0, c->dilation_w * (c->S - 1));
                }
                if (id % 20 == 1) { /* 1x1 stride-1 unpadded: the executor sees one row of H*W pixels */
                    c->R = c->S = c->stride_h = c->stride_w = 1;
                    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = 0;
                }
                OH = c->H + c->pad_top + c->pad_bottom - c->dilation_h * (c->R - 1) - 1;
                OW = c->W + c->pad_left + c->pad_right - c->dilation_w * (c->S - 1) - 1;
            } while (OH < 0 || OW < 0);
            /* Tile space of the executor's canonical shape. */
            ps_conv_shape cs;
            ps_conv_shape_of(c, &cs);
            OH = cs.OH;
            OW = cs.OW;
            ext[PS_DIM_N] = c->N;
            ext[PS_DIM_K] = cdiv(c->K, ks.m);
            ext[PS_DIM_OH] = OH;
            ext[PS_DIM_OW] = cdiv(OW, ks.n);
            ext[PS_DIM_C] = cdiv(cdiv(c->C, ks.k), ks.batch);
            nconv++;
            nstrided += c->stride_h > 1 || c->stride_w > 1;
            npadded += c->pad_top || c->pad_bottom || c->pad_left || c->pad_right;
            instances = c->N * c->K * OH * OW * c->C * c->R * c->S;
        } else {
            ps_desc_init_gemm(&desc);
            ps_gemm_desc *g = &desc.u.gemm;
            g->M = rr(&r, 1, 12); g->N = rr(&r, 1, 12); g->K = rr(&r, 1, 12);
            ext[PS_DIM_N] = 1;
            ext[PS_DIM_K] = cdiv(g->M, ks.m);
            ext[PS_DIM_OH] = 1;
            ext[PS_DIM_OW] = cdiv(g->N, ks.n);
            ext[PS_DIM_C] = cdiv(cdiv(g->K, ks.k), ks.batch);
            ngemm++;
            instances = g->M * g->N * g->K;
        }
        static const int conv_dims[] = {PS_DIM_N, PS_DIM_K, PS_DIM_OH, PS_DIM_OW, PS_DIM_C};
        static const int gemm_dims[] = {PS_DIM_K, PS_DIM_OW, PS_DIM_C};
        ps_schedule s;
        int nt;
        if (desc.kind == PS_OP_CONV_FWD) gen_schedule(&r, ext, conv_dims, 5, ks, &s, &nt);
        else gen_schedule(&r, ext, gemm_dims, 3, ks, &s, &nt);
        npar += nt > 1 && s.stages[0].n_loops > 0 && s.stages[0].loops[0].parallel;
        int with_isl = id % 6 == 0 && instances <= 1500;
        nisl += with_isl;
        check_case(id, &desc, &s, nt, with_isl);
    }
    printf("%d cases (%d conv: %d strided, %d padded; %d gemm; %d parallel; %d also checked with isl; "
           "%d dependences with a late source, %d shared-only; %d with edge segments, %d of them reordered; "
           "%d with merged taps): %d failures\n",
           count, nconv, nstrided, npadded, ngemm, npar, nisl, n_late_source, n_shared_only, n_segs, n_segs_reordered,
           n_merged, failures);
    return failures ? 1 : 0;
}
