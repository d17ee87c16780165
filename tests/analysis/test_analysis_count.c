/* Exact counting of isl sets (lib/analysis/isl_ref.c psa_isl_count, used by
 * the isl reference method): boxes are counted as products of their
 * per-dimension ranges, everything else by enumeration. Checked against
 * isl's own enumeration (isl_set_count_val) on random footprints of the
 * kind the analysis produces: images of boxes under strided, dilated,
 * padded accesses clipped to the array, products of those with ranges, and
 * unions of overlapping boxes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ctx.h>
#include <isl/options.h>
#include <isl/set.h>
#include <isl/val.h>

#include "analysis/isl_ref.h"
#include "polysci/analysis.h"
#include "polysci/polysci.h"
#include "schedule/schedule_impl.h"

static int64_t rr_state(uint64_t *st, int64_t lo, int64_t hi)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (int64_t)(z % (uint64_t)(hi - lo + 1));
}

#define rr(lo, hi) rr_state(&rng, lo, hi)

int main(void)
{
    uint64_t rng = 12345;
    isl_ctx *ctx = isl_ctx_alloc();
    isl_options_set_on_error(ctx, ISL_ON_ERROR_CONTINUE);
    int failures = 0, boxes = 0, others = 0;
    char buf[1024];
    for (int it = 0; it < 300; it++) {
        int kind = it % 3;
        if (kind == 0) {
            /* I[n, ih, iw, c] footprint of a box of (n, oh, r, ow, s, c). */
            int64_t sh = rr(1, 3), dh = rr(1, 2), pt = rr(0, 2), sw = rr(1, 3), dw = rr(1, 2), pl = rr(0, 2);
            int64_t H = rr(1, 12), W = rr(1, 12);
            int64_t oh0 = rr(0, 4), oh1 = oh0 + rr(0, 4), r0 = rr(0, 2), r1 = r0 + rr(0, 2);
            int64_t ow0 = rr(0, 4), ow1 = ow0 + rr(0, 4), s0 = rr(0, 2), s1 = s0 + rr(0, 2);
            int64_t n1 = rr(0, 2), c0 = rr(0, 5), c1 = c0 + rr(0, 5);
            snprintf(buf, sizeof buf,
                     "{ I[n, ih, iw, c] : exists oh, r, ow, s : 0 <= n <= %lld and %lld <= c <= %lld and "
                     "%lld <= oh <= %lld and %lld <= r <= %lld and %lld <= ow <= %lld and %lld <= s <= %lld and "
                     "ih = %lld*oh - %lld + %lld*r and iw = %lld*ow - %lld + %lld*s and 0 <= ih < %lld and 0 <= iw < %lld }",
                     (long long)n1, (long long)c0, (long long)c1, (long long)oh0, (long long)oh1, (long long)r0,
                     (long long)r1, (long long)ow0, (long long)ow1, (long long)s0, (long long)s1, (long long)sh,
                     (long long)pt, (long long)dh, (long long)sw, (long long)pl, (long long)dw, (long long)H,
                     (long long)W);
        } else if (kind == 1) {
            /* A box, possibly written with redundant constraints. */
            int64_t a0 = rr(-3, 3), a1 = a0 + rr(0, 6), b0 = rr(0, 9), b1 = b0 + rr(0, 20), c0 = rr(0, 3);
            snprintf(buf, sizeof buf,
                     "{ [a, b, c] : %lld <= a <= %lld and %lld <= b <= %lld and c = %lld and a <= %lld + 100 }",
                     (long long)a0, (long long)a1, (long long)b0, (long long)b1, (long long)c0, (long long)a1);
        } else {
            /* A union of overlapping boxes (what a working set looks like). */
            int n = (int)rr(2, 4);
            int len = snprintf(buf, sizeof buf, "{ ");
            for (int i = 0; i < n; i++) {
                int64_t a0 = rr(0, 6), a1 = a0 + rr(0, 5), b0 = rr(0, 6), b1 = b0 + rr(0, 5), st2 = rr(1, 3);
                len += snprintf(buf + len, sizeof buf - (size_t)len,
                                "%s[a, b] : %lld <= a <= %lld and %lld <= b <= %lld and b %% %lld = %lld", i ? "; " : "",
                                (long long)a0, (long long)a1, (long long)b0, (long long)b1, (long long)st2,
                                (long long)(b0 % st2));
            }
            snprintf(buf + len, sizeof buf - (size_t)len, " }");
        }
        isl_set *s = isl_set_read_from_str(ctx, buf);
        if (!s) {
            printf("cannot parse %s\n", buf);
            failures++;
            continue;
        }
        isl_val *v = isl_set_count_val(s);
        int64_t want = isl_val_get_num_si(v), got = psa_isl_count(s);
        isl_val_free(v);
        if (got != want) {
            printf("FAIL: %s: psa_isl_count %" PRId64 ", isl_set_count_val %" PRId64 "\n", buf, got, want);
            failures++;
        }
        if (kind == 1) boxes++;
        else others++;
        isl_set_free(s);
    }
    /* Regression: in this dilated, strided, padded, parallel conv the isl
     * reference's footprint between Wt's source and its last target is a
     * union whose isl_set_coalesce (isl 0.25) is a strict superset (WSmax
     * would be 34); counting must not go through coalescing. The brute-force
     * simulator and the closed form give 31. */
    {
        ps_desc d;
        ps_desc_init_conv(&d);
        ps_conv_desc *c = &d.u.conv;
        c->N = 2; c->C = 4; c->K = 1; c->H = 5; c->W = 5; c->R = 2; c->S = 2;
        c->stride_h = 2; c->stride_w = 3; c->pad_top = 1; c->pad_left = 1;
        c->dilation_h = c->dilation_w = 2;
        ps_schedule sch;
        memset(&sch, 0, sizeof sch);
        sch.n_stages = 1;
        sch.stages[0].kernel = (ps_kernel_shape){3, 4, 3, 3};
        static const int loops[4][3] = {{0, 2, 1}, {2, 2, 1}, {0, 1, 1}, {2, 1, 0}};
        for (int i = 0; i < 4; i++)
            sch.stages[0].loops[sch.stages[0].n_loops++] = (ps_loop){(ps_dim)loops[i][0], loops[i][1], loops[i][2]};
        for (int method = 0; method < 2; method++) {
            ps_analysis_options o;
            ps_analysis_options_init(&o);
            o.method = (ps_analysis_method)method;
            o.num_threads = 2;
            ps_analysis *a = NULL;
            int i = -1;
            if (ps_analysis_create(&d, &sch, &o, &a) == PS_SUCCESS)
                for (int k = 0; k < ps_analysis_num_dependences(a); k++)
                    if (!strcmp(ps_analysis_dep_array(a, k), "Wt")) i = k;
            if (i < 0 || ps_analysis_dep_ws_max(a, i) != 31) {
                printf("FAIL: regression conv (%s): Wt WSmax %" PRId64 ", expected 31\n", method ? "isl" : "fast",
                       i >= 0 ? ps_analysis_dep_ws_max(a, i) : -1);
                failures++;
            }
            ps_analysis_destroy(a);
        }
    }
    isl_ctx_free(ctx);
    printf("%d sets (%d boxes): %d failures\n", boxes + others, boxes, failures);
    return failures ? 1 : 0;
}
