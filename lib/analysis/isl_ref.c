/* The element-level isl model and Algorithm 1 computed literally with isl:
 * the reference the closed form is checked against (PS_ANALYSIS_ISL). */
#include "analysis/isl_ref.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/constraint.h>
#include <isl/ilp.h>
#include <isl/space.h>
#include <isl/flow.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/val.h>

#include "analysis/engine.h"
#include "core/error.h"

/* ---------------------------------------------------------- text builder */

typedef struct psa_sb {
    char *s;
    size_t n, cap;
    int oom;
} psa_sb;

static void sb_printf(psa_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(psa_sb *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap - b->n <= (size_t)k) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static const char *const coord_names[PSA_NCOORD] = {"n", "k", "oh", "ow", "c", "r", "s"};

/* "S[l0, ..., n, k, oh, ow, c, r, s]" */
static void sb_tuple(psa_sb *b, const psa_model *m)
{
    sb_printf(b, "S[");
    for (int l = 0; l < m->nlev; l++) sb_printf(b, "l%d, ", l);
    for (int v = 0; v < PSA_NCOORD; v++) sb_printf(b, "%s%s", coord_names[v], v + 1 < PSA_NCOORD ? ", " : "]");
}

static void sb_access(psa_sb *b, const psa_model *m, int arr)
{
    sb_printf(b, "{ ");
    sb_tuple(b, m);
    switch (arr) {
    case PSA_IN:
        sb_printf(b, " -> %s[n, %lld*oh - %lld + %lld*r, %lld*ow - %lld + %lld*s, c] }", m->arr_name[arr],
                  (long long)m->sh, (long long)m->pt, (long long)m->dh, (long long)m->sw, (long long)m->pl,
                  (long long)m->dw);
        break;
    case PSA_WT: sb_printf(b, " -> %s[k, c, r, s] }", m->arr_name[arr]); break;
    default: sb_printf(b, " -> %s[n, oh, ow, k] }", m->arr_name[arr]); break;
    }
}

static void sb_domain(psa_sb *b, const psa_model *m, int thread)
{
    sb_printf(b, "{ ");
    sb_tuple(b, m);
    sb_printf(b, " : ");
    for (int v = 0; v < PSA_NCOORD; v++) sb_printf(b, "0 <= %s < %lld and ", coord_names[v], (long long)m->ext[v]);
    sb_printf(b, "0 <= %lld*oh - %lld + %lld*r < %lld and ", (long long)m->sh, (long long)m->pt, (long long)m->dh,
              (long long)m->H);
    sb_printf(b, "0 <= %lld*ow - %lld + %lld*s < %lld", (long long)m->sw, (long long)m->pl, (long long)m->dw,
              (long long)m->W);
    /* Per coordinate: the start of the current range as an affine
     * expression of the keys, until a breaks level is met. */
    psa_sb start[PSA_NCOORD];
    int after_breaks[PSA_NCOORD] = {0};
    memset(start, 0, sizeof start);
    for (int v = 0; v < PSA_NCOORD; v++) sb_printf(&start[v], "0");
    for (int l = 0; l < m->nlev; l++) {
        const psa_level *lv = &m->lev[l];
        const char *cv = coord_names[lv->coord];
        if (lv->segs) {
            /* Key: the segment's position in its ow-block; blocks with the
             * same segments share one disjunct per segment. */
            sb_printf(b, " and (");
            int firstd = 1;
            for (int64_t b0 = 0; b0 < m->seg_nblocks;) {
                int64_t b1 = b0 + 1;
                const int64_t o0 = m->seg_off[b0], np = m->seg_off[b0 + 1] - o0;
                while (b1 < m->seg_nblocks && m->seg_off[b1 + 1] - m->seg_off[b1] == np) {
                    int same = 1;
                    for (int64_t j = 0; j < np && same; j++)
                        same = m->seg_slo[m->seg_off[b1] + j] == m->seg_slo[o0 + j] &&
                               m->seg_shi[m->seg_off[b1] + j] == m->seg_shi[o0 + j];
                    if (!same) break;
                    b1++;
                }
                for (int64_t j = 0; j < np; j++) {
                    sb_printf(b, "%s(l%d = %lld and %lld <= ow < %lld and %lld <= s < %lld)", firstd ? "" : " or ", l,
                              (long long)j, (long long)(b0 * m->seg_n), (long long)(b1 * m->seg_n),
                              (long long)m->seg_slo[o0 + j], (long long)m->seg_shi[o0 + j]);
                    firstd = 0;
                }
                b0 = b1;
            }
            sb_printf(b, "%s)", firstd ? "false" : "");
            after_breaks[PSA_CS] = 1;
        } else if (lv->brk >= 0) {
            const psa_breaks *bk = &m->brk[lv->brk];
            sb_printf(b, " and (");
            for (int p = 0; p <= bk->n; p++) {
                sb_printf(b, "%s(l%d = %d", p ? " or " : "", l, p);
                if (p > 0) sb_printf(b, " and %s >= %lld", cv, (long long)bk->v[p - 1]);
                if (p < bk->n) sb_printf(b, " and %s < %lld", cv, (long long)bk->v[p]);
                sb_printf(b, ")");
            }
            sb_printf(b, ")");
            after_breaks[lv->coord] = 1;
        } else if (after_breaks[lv->coord]) {
            /* Below a breaks level ranges start at multiples of g. */
            sb_printf(b, " and %lld*l%d <= %s < %lld*l%d + %lld", (long long)lv->g, l, cv, (long long)lv->g, l,
                      (long long)lv->g);
        } else {
            psa_sb *st = &start[lv->coord];
            sb_printf(b, " and l%d >= 0 and %s + %lld*l%d <= %s < %s + %lld*l%d + %lld", l, st->s, (long long)lv->g,
                      l, cv, st->s, (long long)lv->g, l, (long long)lv->g);
            sb_printf(st, " + %lld*l%d", (long long)lv->g, l);
        }
    }
    if (thread >= 0 && m->nband > 0) {
        int64_t bb, ee;
        psa_thread_chunk(m, thread, &bb, &ee);
        sb_printf(b, " and %lld <= ", (long long)bb);
        int64_t mul = 1;
        for (int l = m->nband - 1; l >= 0; l--) {
            sb_printf(b, "%lld*l%d%s", (long long)mul, l, l ? " + " : "");
            mul *= m->band_trip[l];
        }
        sb_printf(b, " < %lld", (long long)ee);
    }
    sb_printf(b, " }");
    for (int v = 0; v < PSA_NCOORD; v++) {
        if (start[v].oom) b->oom = 1;
        free(start[v].s);
    }
}

void psa_isl_model_free(psa_isl_model *im)
{
    isl_union_set_free(im->domain);
    isl_union_map_free(im->reads);
    isl_union_map_free(im->writes);
    isl_union_map_free(im->schedule);
    memset(im, 0, sizeof *im);
}

static isl_union_map *read_umap(isl_ctx *ctx, psa_sb *b)
{
    return b->oom ? NULL : isl_union_map_read_from_str(ctx, b->s);
}

ps_status psa_isl_build(isl_ctx *ctx, const psa_model *m, int thread, psa_isl_model *out)
{
    memset(out, 0, sizeof *out);
    psa_sb b = {0};
    sb_domain(&b, m, thread);
    if (!b.oom) out->domain = isl_union_set_read_from_str(ctx, b.s);
    b.n = 0;
    sb_printf(&b, "{ ");
    sb_tuple(&b, m);
    sb_printf(&b, " -> [");
    for (int l = 0; l < m->nlev; l++) sb_printf(&b, "%sl%d", l ? ", " : "", l);
    sb_printf(&b, "] }");
    out->schedule = read_umap(ctx, &b);
    for (int arr = 0; arr < PSA_NARR; arr++) {
        b.n = 0;
        sb_access(&b, m, arr);
        isl_union_map *r = read_umap(ctx, &b);
        if (arr == PSA_OUT) out->writes = isl_union_map_copy(r);
        out->reads = out->reads ? isl_union_map_union(out->reads, r) : r;
    }
    int oom = b.oom;
    free(b.s);
    if (oom) {
        psa_isl_model_free(out);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    }
    out->reads = isl_union_map_intersect_domain(out->reads, isl_union_set_copy(out->domain));
    out->writes = isl_union_map_intersect_domain(out->writes, isl_union_set_copy(out->domain));
    out->schedule = isl_union_map_intersect_domain(out->schedule, isl_union_set_copy(out->domain));
    if (!out->domain || !out->reads || !out->writes || !out->schedule) {
        const char *msg = isl_ctx_last_error_msg(ctx);
        psa_isl_model_free(out);
        return ps_error(PS_ERR_BACKEND, "analysis: isl could not build the model: %s", msg ? msg : "unknown error");
    }
    return PS_SUCCESS;
}

/* ---------------------------------------------------------------- count */

/* The bounding box of a nonempty bounded set: lo[i] <= x_i <= hi[i]. */
static int bounding_box(__isl_keep isl_set *set, int64_t *lo, int64_t *hi, int n)
{
    for (int i = 0; i < n; i++) {
        isl_val *a = isl_set_dim_min_val(isl_set_copy(set), i);
        isl_val *b = isl_set_dim_max_val(isl_set_copy(set), i);
        int ok = a && b && isl_val_is_int(a) && isl_val_is_int(b);
        if (ok) {
            lo[i] = isl_val_get_num_si(a);
            hi[i] = isl_val_get_num_si(b);
        }
        isl_val_free(a);
        isl_val_free(b);
        if (!ok) return -1;
    }
    return 0;
}

int64_t psa_isl_count(__isl_keep isl_set *set)
{
    if (!set) return -1;
    isl_bool empty = isl_set_is_empty(set);
    if (empty < 0) return -1;
    if (empty) return 0;
    /* A box is counted as the product of its ranges: build the bounding box
     * and check that it equals the set. (Not isl_set_coalesce: in isl 0.25
     * it can return a strict superset of a union with strided pieces.) */
    isl_size n = isl_set_dim(set, isl_dim_set);
    int64_t lo[16], hi[16];
    int64_t result = -1;
    if (n >= 0 && n <= 16 && bounding_box(set, lo, hi, n) == 0) {
        isl_space *sp = isl_set_get_space(set);
        isl_set *box = isl_set_universe(sp);
        for (int i = 0; i < n; i++) {
            box = isl_set_lower_bound_si(box, isl_dim_set, i, (int)lo[i]);
            box = isl_set_upper_bound_si(box, isl_dim_set, i, (int)hi[i]);
        }
        int fits = 1;
        for (int i = 0; i < n; i++) fits &= lo[i] >= INT32_MIN && hi[i] <= INT32_MAX;
        isl_bool eq = fits ? isl_set_is_equal(box, set) : isl_bool_false;
        isl_set_free(box);
        if (eq == isl_bool_true) {
            result = 1;
            for (int i = 0; i < n; i++) result *= hi[i] - lo[i] + 1;
        }
    }
    if (result < 0) {
        isl_val *v = isl_set_count_val(set);
        result = v && isl_val_is_int(v) ? isl_val_get_num_si(v) : -1;
        isl_val_free(v);
    }
    return result;
}

/* ------------------------------------------------------------- analysis */

/* Coordinates of the single point of `pt` (__keep), as level indices. */
static int point_index(const psa_model *m, __isl_keep isl_set *pt, int64_t *idx)
{
    isl_point *p = isl_set_sample_point(isl_set_copy(pt));
    if (!p) return -1;
    int64_t x[PSA_NCOORD];
    for (int v = 0; v < PSA_NCOORD; v++) {
        isl_val *val = isl_point_get_coordinate_val(p, isl_dim_set, m->nlev + v);
        x[v] = val ? isl_val_get_num_si(val) : 0;
        isl_val_free(val);
    }
    isl_point_free(p);
    psa_index_of(m, x, idx);
    return 0;
}

/* Distinct elements per array accessed by the instances of dom between s
 * and t (both included). All arguments __keep. */
static int interval_counts(const psa_isl_model *im, __isl_keep isl_set *dom, __isl_keep isl_set *s,
                           __isl_keep isl_set *t, const psa_model *m, int64_t cnt[PSA_NARR])
{
    isl_set *ge = isl_map_domain(isl_set_lex_ge_set(isl_set_copy(dom), isl_set_copy(s)));
    isl_set *le = isl_map_domain(isl_set_lex_le_set(isl_set_copy(dom), isl_set_copy(t)));
    isl_union_set *w = isl_union_set_from_set(isl_set_intersect(ge, le));
    isl_union_map *acc = isl_union_map_union(isl_union_map_copy(im->reads), isl_union_map_copy(im->writes));
    isl_union_set *fp = isl_union_set_apply(w, acc);
    int rc = fp ? 0 : -1;
    for (int arr = 0; arr < PSA_NARR && rc == 0; arr++) {
        isl_ctx *ctx = isl_union_set_get_ctx(fp);
        isl_space *sp = isl_space_set_alloc(ctx, 0, 4);
        sp = isl_space_set_tuple_name(sp, isl_dim_set, m->arr_name[arr]);
        isl_set *x = isl_union_set_extract_set(fp, sp);
        cnt[arr] = psa_isl_count(x);
        if (cnt[arr] < 0) rc = -1;
        isl_set_free(x);
    }
    isl_union_set_free(fp);
    return rc;
}

static __isl_give isl_union_map *array_access(__isl_keep isl_union_map *acc, const psa_model *m, int arr)
{
    isl_ctx *ctx = isl_union_map_get_ctx(acc);
    isl_space *sp = isl_space_set_alloc(ctx, 0, 4);
    sp = isl_space_set_tuple_name(sp, isl_dim_set, m->arr_name[arr]);
    return isl_union_map_intersect_range(isl_union_map_copy(acc), isl_union_set_from_set(isl_set_universe(sp)));
}

ps_status psa_analyze_isl(const psa_model *m, psa_dep dep[4][PSA_NARR])
{
    memset(dep, 0, sizeof(psa_dep) * 4 * PSA_NARR);
    isl_ctx *ctx = isl_ctx_alloc();
    if (!ctx) return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: isl_ctx_alloc failed");
    isl_options_set_on_error(ctx, ISL_ON_ERROR_CONTINUE);
    psa_isl_model im;
    const int thread = m->nthreads > 1 && m->nband > 0 ? psa_rep_thread(m) : -1;
    ps_status st = psa_isl_build(ctx, m, thread, &im);
    if (st) {
        isl_ctx_free(ctx);
        return st;
    }
    isl_set *dom = isl_set_from_union_set(isl_union_set_copy(im.domain));
    for (int arr = 0; arr < PSA_NARR && !st; arr++) {
        isl_union_map *rd = array_access(im.reads, m, arr), *wr = array_access(im.writes, m, arr);
        for (int kind = 0; kind < 4 && !st; kind++) {
            /* RAR: read -> read, RAW: write -> read, WAR: read -> write, WAW: write -> write. */
            isl_union_map *src = isl_union_map_copy(kind == 1 || kind == 3 ? wr : rd);
            isl_union_map *snk = isl_union_map_copy(kind >= 2 ? wr : rd);
            isl_union_access_info *ai = isl_union_access_info_from_sink(snk);
            ai = isl_union_access_info_set_may_source(ai, src);
            ai = isl_union_access_info_set_schedule_map(ai, isl_union_map_copy(im.schedule));
            isl_union_flow *fl = isl_union_access_info_compute_flow(ai);
            isl_union_map *D = isl_union_flow_get_may_dependence(fl);
            isl_union_flow_free(fl);
            if (!D) {
                st = ps_error(PS_ERR_BACKEND, "analysis: isl dependence analysis failed");
                break;
            }
            if (isl_union_map_is_empty(D)) {
                isl_union_map_free(D);
                continue;
            }
            /* Algorithm 1, lines 6-12. */
            isl_map *Dm = isl_map_from_union_map(D);
            isl_set *s = isl_set_lexmin(isl_map_domain(isl_map_copy(Dm)));
            isl_set *T = isl_set_apply(isl_set_copy(s), Dm);
            isl_set *tmin = isl_set_lexmin(isl_set_copy(T));
            isl_set *tmax = isl_set_lexmax(T);
            psa_dep *d = &dep[kind][arr];
            if (!s || !tmin || !tmax || point_index(m, s, d->src) || point_index(m, tmin, d->tmin) ||
                point_index(m, tmax, d->tmax) || interval_counts(&im, dom, s, tmin, m, d->ws_min_arr) ||
                interval_counts(&im, dom, s, tmax, m, d->ws_max_arr)) {
                st = ps_error(PS_ERR_BACKEND, "analysis: isl failed computing working sets");
            } else {
                d->exists = 1;
                d->ws_min = d->ws_max = 0;
                for (int a = 0; a < PSA_NARR; a++) {
                    d->ws_min += d->ws_min_arr[a];
                    d->ws_max += d->ws_max_arr[a];
                }
                psa_fill_shared(m, d);
            }
            isl_set_free(s);
            isl_set_free(tmin);
            isl_set_free(tmax);
        }
        isl_union_map_free(rd);
        isl_union_map_free(wr);
    }
    isl_set_free(dom);
    psa_isl_model_free(&im);
    isl_ctx_free(ctx);
    return st;
}
