/* Dependences of an iterated stencil and the tilings they allow, with isl
 * (seed 003: Krishnamoorthy et al., PLDI 2007; seed 004: Zhao & Cohen,
 * TACO 2020).
 *
 * 1. Dependences. The update is written in seed 003's single-statement
 *    form with the time made an array dimension (its Fig. 3): statement
 *    S[t, a, i] (array a at point i, step t) writes A[t, a, i] and reads
 *    A[t - 1, b, i + offset] for each tap. Every element is written once,
 *    so the flow dependences are exactly the reads composed with the
 *    inverse of the writes (what isl's dataflow analysis returns, without
 *    its last-writer search, which costs ten times more); their deltas,
 *    with the array difference projected out, are the distance vectors D
 *    in (t, i). Steps 1 and 2 realise them
 *    all. Fixed boundaries bound the domain to the interior (reads of
 *    boundary cells have no writer); periodic grids are analysed on the
 *    unbounded cover of the torus (tiles are computed in unwrapped
 *    coordinates and reads wrap), so D is the same for every point. The
 *    two buffers the executor stores the steps in are not part of this
 *    form; the tilings that compute in place in them are checked against
 *    that storage below.
 * 2. Hyperplanes (rows of H, distance vectors as columns): the time
 *    hyperplane e_t is legal (e_t.D >= 0) and carries every dependence when
 *    no d has d_t = 0: each step is then a parallel sweep (tiling STEP), and
 *    the face t = const satisfies the pointwise concurrent-start condition
 *    b.d > 0 for all d (003, 3.1). The classical time-skewed tiling adds
 *    h_i = sigma_i e_t + e_i with the least sigma_i making H.D >= 0.
 *    Its displacement vectors (columns of H^-1) along which some h_k.d > 0
 *    carry inter-tile dependences; when such an s_k lies in the face
 *    (b.s_k = 0) concurrent start is inhibited (003, 3.2) and tiles start
 *    as a wavefront.
 * 3. Overlapped tiles (003, 4): the back face of h_i is replaced by the
 *    companion hyperplane h_i - lambda_i e_t with the least lambda_i such
 *    that no dependence enters through it ((h_i - lambda e_t).d <= 0 for
 *    all d); going back one step a tile grows by lambda_i - sigma_i on the
 *    left and sigma_i on the right. isl then checks that the trapezoid so
 *    defined (parametric in the band height and tile size) reads nothing
 *    from outside itself but the band's input.
 * 4. Split tiles (003, 4.2): upright trapezoids (faces moving in by s per
 *    step) and the inverted ones between them. For each s from 0 up, isl
 *    checks, parametrically in the band and tile size, that an upright
 *    reads only itself (so all start at once), that an inverted one reads
 *    only uprights and itself, and that no value it reads was overwritten
 *    in the two-buffer storage (the upright's write of step t0 + 2 kills
 *    step t0's value); the least s passing is the slope. Whether inverted
 *    components read uprights along a dimension gives the order of the 2^k
 *    components of a k-dimensional split (iter_plan.c).
 * 5. A chain of skewed tiles run in order (the hybrid's inner tiling, 004
 *    hybrid tiling): the least slope for which a tile reads nothing of the
 *    next one and nothing its predecessor has overwritten.
 * All checks are on 1-D projections: a tile is a product of intervals, and
 * a box of the previous step contains everything a box reads exactly when
 * each of its intervals contains the projections. */
#include "iterated/iter_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/map.h>
#include <isl/mat.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "core/error.h"

/* A growing string; oom set when an allocation failed. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? 2 * b->cap : 256) + (size_t)n + 1;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->s = t;
        b->cap = cap;
        b->s[b->len] = '\0';
    }
}

static const char *const dim_names[PS_IT_MAX_DIMS] = {"i0", "i1", "i2"};

/* The distance vectors' 1-D projections onto (t, i) as an isl relation
 * [t0, x0] -> [t, x] (from the value to the point reading it). */
static isl_map *dep_1d(isl_ctx *ictx, const ps_it_deps *d, int i)
{
    sbuf b = {0};
    sb_printf(&b, "{ [t0, x0] -> [t, x] : ");
    int first = 1;
    for (int k = 0; k < d->n_dist; k++) {
        int dup = 0;
        for (int j = 0; j < k && !dup; j++) dup = d->dist[j][0] == d->dist[k][0] && d->dist[j][1 + i] == d->dist[k][1 + i];
        if (dup) continue;
        sb_printf(&b, "%s(t = t0 + %d and x = x0 + %d)", first ? "" : " or ", d->dist[k][0], d->dist[k][1 + i]);
        first = 0;
    }
    if (first) sb_printf(&b, "1 = 0");
    sb_printf(&b, " }");
    isl_map *m = b.oom ? NULL : isl_map_read_from_str(ictx, b.s);
    free(b.s);
    return m;
}

static isl_set *pset(isl_ctx *ictx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static isl_set *pset(isl_ctx *ictx, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof text) return NULL;
    return isl_set_read_from_str(ictx, text);
}

/* 1 empty, 0 not, -1 isl failed; takes s. */
static int empty(isl_set *s)
{
    if (!s) return -1;
    isl_bool e = isl_set_is_empty(s);
    isl_set_free(s);
    return e == isl_bool_error ? -1 : e == isl_bool_true;
}

/* The values (points at step >= t_min) that the points of `set` read. */
static isl_set *sources(isl_set *set, isl_map *dep, int t_min)
{
    isl_set *src = isl_set_apply(set, isl_map_reverse(isl_map_copy(dep)));
    if (!src) return NULL;
    isl_set *lim = isl_set_read_from_str(isl_set_get_ctx(src), t_min ? "{ [t, x] : t >= 1 }" : "{ [t, x] : t >= 0 }");
    return isl_set_intersect(src, isl_set_align_params(lim, isl_set_get_space(src)));
}

/* The overlapped trapezoid of a tile [0, B) owning the band's last step
 * reads nothing from outside itself but the band's input. */
static int overlap_closed(isl_ctx *ictx, isl_map *dep, int64_t el, int64_t er)
{
    const char *fmt = "[tau, B] -> { [t, x] : tau >= 1 and B >= 1 and 1 <= t <= tau and "
                      "-%lld * (tau - t) <= x < B + %lld * (tau - t) }";
    isl_set *o = pset(ictx, fmt, (long long)el, (long long)er);
    isl_set *o2 = pset(ictx, fmt, (long long)el, (long long)er);
    if (!o || !o2) {
        isl_set_free(o);
        isl_set_free(o2);
        return -1;
    }
    return empty(isl_set_subtract(sources(o, dep, 1), o2));
}

/* Split tiles of slope s, uprights [s t, B - s t) and [B + s t, 2B - s t),
 * the inverted one [B - s t, B + s t) between them: 1 when legal with two
 * buffers; *ui: the inverted one reads the uprights. */
static int split_ok(isl_ctx *ictx, isl_map *dep, int64_t s, int *ui)
{
    char ctxc[96];
    snprintf(ctxc, sizeof ctxc, "tau >= 1 and B >= %lld * tau and 1 <= t <= tau", (long long)(2 * s));
    long long S = (long long)s;
#define SET(fmt, ...) pset(ictx, "[tau, B] -> { [t, x] : %s and " fmt " }", ctxc, __VA_ARGS__)
    isl_set *u = SET("%lld * t <= x < B - %lld * t", S, S);
    isl_set *u2 = SET("B + %lld * t <= x < 2 * B - %lld * t", S, S);
    isl_set *inv = SET("B - %lld * t <= x < B + %lld * t", S, S);
#undef SET
    int ok = -1;
    *ui = 0;
    if (u && u2 && inv) {
        /* (a) an upright reads only itself (or the band's input) */
        int a = empty(isl_set_subtract(sources(isl_set_copy(u), dep, 1), isl_set_copy(u)));
        /* (b) the inverted one reads only the uprights and itself */
        isl_set *known = isl_set_union(isl_set_union(isl_set_copy(u), isl_set_copy(u2)), isl_set_copy(inv));
        int b = empty(isl_set_subtract(sources(isl_set_copy(inv), dep, 1), known));
        /* (c) nothing it reads was overwritten: the uprights' write of step
         * t0 + 2 reuses the buffer of step t0 */
        isl_map *back2 = isl_map_read_from_str(ictx, "{ [t, x] -> [t - 2, x] }");
        isl_set *killed = isl_set_apply(isl_set_union(isl_set_copy(u), isl_set_copy(u2)), back2);
        int c = empty(isl_set_intersect(sources(isl_set_copy(inv), dep, 0), killed));
        int r = empty(isl_set_intersect(sources(isl_set_copy(inv), dep, 1), isl_set_copy(u)));
        if (a >= 0 && b >= 0 && c >= 0 && r >= 0) {
            ok = a && b && c;
            *ui = !r;
        }
    }
    isl_set_free(u);
    isl_set_free(u2);
    isl_set_free(inv);
    return ok;
}

/* A chain of skewed tiles [m W - s t, (m + 1) W - s t) run in order m: 1
 * when tile 0 reads nothing of tile 1 and tile 1 reads nothing tile 0
 * overwrote (two buffers). */
static int skew_ok(isl_ctx *ictx, isl_map *dep, int64_t s)
{
    long long S = (long long)s;
    const char *ctxc = "tau >= 1 and W >= 1 and 1 <= t <= tau";
    isl_set *p0 = pset(ictx, "[tau, W] -> { [t, x] : %s and -%lld * t <= x < W - %lld * t }", ctxc, S, S);
    isl_set *p1 = pset(ictx, "[tau, W] -> { [t, x] : %s and W - %lld * t <= x < 2 * W - %lld * t }", ctxc, S, S);
    int ok = -1;
    if (p0 && p1) {
        int a = empty(isl_set_intersect(sources(isl_set_copy(p0), dep, 1), isl_set_copy(p1)));
        isl_map *back2 = isl_map_read_from_str(ictx, "{ [t, x] -> [t - 2, x] }");
        int c = empty(isl_set_intersect(sources(isl_set_copy(p1), dep, 0), isl_set_apply(isl_set_copy(p0), back2)));
        if (a >= 0 && c >= 0) ok = a && c;
    }
    isl_set_free(p0);
    isl_set_free(p1);
    return ok;
}

/* The distance vectors' projections onto (t, i) and (t, j) are the same
 * set. */
static int same_projection(const ps_it_deps *d, int i, int j)
{
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < d->n_dist; k++) {
            int a = pass ? j : i, b = pass ? i : j, found = 0;
            for (int q = 0; q < d->n_dist && !found; q++)
                found = d->dist[q][0] == d->dist[k][0] && d->dist[q][1 + b] == d->dist[k][1 + a];
            if (!found) return 0;
        }
    return 1;
}

static isl_stat collect_point(isl_point *pnt, void *user)
{
    ps_it_deps *d = user;
    if (d->n_dist >= PS_IT_MAX_DIST) {
        isl_point_free(pnt);
        return isl_stat_error;
    }
    for (int j = 0; j <= d->nd; j++) {
        isl_val *v = isl_point_get_coordinate_val(pnt, isl_dim_set, j);
        d->dist[d->n_dist][j] = v ? (int)isl_val_get_num_si(v) : 0;
        isl_val_free(v);
    }
    d->n_dist++;
    isl_point_free(pnt);
    return isl_stat_ok;
}

/* The least v in [0, vmax] outside the union over d of
 * { v : sign * (coef_t(v) d_t + d_i) > 0 } where coef_t(v) = base + mul v:
 * written as isl sets, one disjunct per distance vector. -1: none. */
static int64_t least_outside(isl_ctx *ictx, const ps_it_deps *d, int i, int64_t base, int mul, int strict_neg,
                             int64_t vmax)
{
    sbuf b = {0};
    sb_printf(&b, "{ [v] : ");
    for (int k = 0; k < d->n_dist; k++)
        sb_printf(&b, "%s(%lld + %d * v) * %d + %d %s 0", k ? " or " : "", (long long)base, mul, d->dist[k][0], d->dist[k][1 + i],
                  strict_neg ? "<" : ">");
    if (!d->n_dist) sb_printf(&b, "1 = 0");
    sb_printf(&b, " }");
    isl_set *bad = b.oom ? NULL : isl_set_read_from_str(ictx, b.s);
    free(b.s);
    isl_set *good = pset(ictx, "{ [v] : 0 <= v <= %lld }", (long long)vmax);
    good = isl_set_subtract(good, bad);
    if (!good) return -2;
    if (isl_set_is_empty(good) == isl_bool_true) {
        isl_set_free(good);
        return -1;
    }
    isl_val *m = isl_set_dim_min_val(good, 0);
    int64_t r = m ? isl_val_get_num_si(m) : -2;
    isl_val_free(m);
    return r;
}

/* 1 when no distance vector has h.d `op` 0 (op "<" for legality). */
static int none_with(isl_set *D, int nd, const int64_t *h, const char *op)
{
    sbuf b = {0};
    sb_printf(&b, "{ [dt");
    for (int i = 0; i < nd; i++) sb_printf(&b, ", d%d", i);
    sb_printf(&b, "] : %lld * dt", (long long)h[0]);
    for (int i = 0; i < nd; i++) sb_printf(&b, " + %lld * d%d", (long long)h[1 + i], i);
    sb_printf(&b, " %s 0 }", op);
    isl_set *c = b.oom ? NULL : isl_set_read_from_str(isl_set_get_ctx(D), b.s);
    free(b.s);
    return empty(isl_set_intersect(isl_set_copy(D), c));
}

static void vec_text(sbuf *b, const int64_t *v, int n)
{
    sb_printf(b, "(");
    for (int j = 0; j < n; j++) sb_printf(b, "%s%lld", j ? "," : "", (long long)v[j]);
    sb_printf(b, ")");
}

static ps_status analyse(isl_ctx *ictx, const ps_iter *it, ps_it_deps *d, sbuf *tx)
{
    static const char who[] = "ps_iter_plan_create";
    const int nd = it->ndim;
    int r[PS_IT_MAX_DIMS];
    ps_iter_radius(it, r);
    /* --- the program as isl sees it --- */
    sbuf dom = {0}, wr = {0}, rd = {0}, tup = {0};
    sb_printf(&tup, "S[t, a");
    for (int i = 0; i < nd; i++) sb_printf(&tup, ", %s", dim_names[i]);
    sb_printf(&tup, "]");
    const char *S = tup.s ? tup.s : "";
    sb_printf(&dom, "{ %s : 1 <= t <= 2 and 0 <= a < %d", S, it->n_arrays);
    if (it->boundary == PS_ITER_FIXED)
        for (int i = 0; i < nd; i++)
            sb_printf(&dom, " and %d <= %s < %lld", r[i], dim_names[i], (long long)(it->n[i] - r[i]));
    sb_printf(&dom, " }");
    sb_printf(&wr, "{ %s -> A[t, a", S);
    for (int i = 0; i < nd; i++) sb_printf(&wr, ", %s", dim_names[i]);
    sb_printf(&wr, "] }");
    sb_printf(&rd, "{ %s -> A[t - 1, b", S);
    for (int i = 0; i < nd; i++) sb_printf(&rd, ", j%d", i);
    sb_printf(&rd, "] : (");
    int first = 1;
    for (int a = 0; a < it->n_arrays; a++)
        for (int k = 0; k < it->upd[a].n_taps; k++) {
            const ps_iter_tap *tp = &it->upd[a].taps[k];
            int dup = 0;
            for (int q = 0; q < k && !dup; q++) {
                const ps_iter_tap *o = &it->upd[a].taps[q];
                dup = o->array == tp->array && !memcmp(o->offset, tp->offset, sizeof o->offset);
            }
            if (dup) continue;
            sb_printf(&rd, "%s(a = %d and b = %d", first ? "" : " or ", a, tp->array);
            for (int i = 0; i < nd; i++) sb_printf(&rd, " and j%d = %s + %d", i, dim_names[i], tp->offset[i]);
            sb_printf(&rd, ")");
            first = 0;
        }
    sb_printf(&rd, ") }");
    ps_status st = PS_SUCCESS;
    isl_set *D = NULL;
    if (dom.oom || wr.oom || rd.oom || tup.oom) st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    if (!st) {
        isl_union_set *domain = isl_union_set_read_from_str(ictx, dom.s);
        isl_union_map *writes = isl_union_map_intersect_domain(isl_union_map_read_from_str(ictx, wr.s), isl_union_set_copy(domain));
        isl_union_map *reads = isl_union_map_intersect_domain(isl_union_map_read_from_str(ictx, rd.s), domain);
        /* writer -> reader */
        isl_union_map *dep = isl_union_map_reverse(isl_union_map_apply_range(reads, isl_union_map_reverse(writes)));
        isl_union_set *delta = isl_union_map_deltas(dep);
        /* One statement space, so one set; empty when nothing depends on
         * anything (a grid whose interior reads only boundary cells). */
        isl_set *dl = NULL;
        isl_bool none = delta ? isl_union_set_is_empty(delta) : isl_bool_error;
        if (none == isl_bool_false) dl = isl_set_from_union_set(isl_union_set_copy(delta));
        if (none == isl_bool_true) {
            sbuf e = {0};
            sb_printf(&e, "{ [dt");
            for (int i = 0; i < nd; i++) sb_printf(&e, ", d%d", i);
            sb_printf(&e, "] : 1 = 0 }");
            D = e.oom ? NULL : isl_set_read_from_str(ictx, e.s);
            free(e.s);
        } else if (dl) {
            D = isl_set_project_out(dl, isl_dim_set, 1, 1);
            D = isl_set_reset_tuple_id(D);
        }
        isl_union_set_free(delta);
        if (!D) st = ps_error(PS_ERR_BACKEND, "%s: isl failed on the dependence analysis", who);
    }
    free(dom.s);
    free(wr.s);
    free(rd.s);
    free(tup.s);
    if (st) return st;
    d->dist = malloc(PS_IT_MAX_DIST * sizeof *d->dist);
    if (!d->dist) {
        isl_set_free(D);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
    if (isl_set_foreach_point(D, collect_point, d) < 0) {
        isl_set_free(D);
        return ps_error(PS_ERR_BACKEND, "%s: isl could not enumerate the distance vectors (more than %d?)", who, PS_IT_MAX_DIST);
    }
    int rmax = 0;
    for (int k = 0; k < d->n_dist; k++)
        for (int i = 0; i < nd; i++) rmax = abs(d->dist[k][1 + i]) > rmax ? abs(d->dist[k][1 + i]) : rmax;

    sb_printf(tx, "dependences (isl: the reads composed with the inverse writes, time an array dimension): %d distance vector%s (t", d->n_dist,
              d->n_dist == 1 ? "" : "s");
    for (int i = 0; i < nd; i++) sb_printf(tx, ", i%d", i);
    sb_printf(tx, "):");
    for (int k = 0; k < d->n_dist && k < 32; k++) {
        int64_t v[PS_IT_MAX_DIMS + 1];
        for (int j = 0; j <= nd; j++) v[j] = d->dist[k][j];
        sb_printf(tx, " ");
        vec_text(tx, v, nd + 1);
    }
    if (d->n_dist > 32) sb_printf(tx, " ...");
    sb_printf(tx, "\n");

    /* --- the time hyperplane --- */
    int64_t et[PS_IT_MAX_DIMS + 1] = {1, 0, 0, 0};
    int legal_t = none_with(D, nd, et, "<"), zero_t = none_with(D, nd, et, "="), pos_t = none_with(D, nd, et, "<=");
    if (legal_t < 0 || zero_t < 0 || pos_t < 0) {
        isl_set_free(D);
        return ps_error(PS_ERR_BACKEND, "%s: isl failed on the time hyperplane", who);
    }
    d->time_carries = legal_t && zero_t;
    d->pointwise_start = pos_t;
    sb_printf(tx, "  time hyperplane e_t: %s, %s; face t = const: b.d > 0 for every d %s\n",
              legal_t ? "legal (e_t.D >= 0)" : "ILLEGAL", zero_t ? "carries every dependence, so each step is a parallel sweep" : "leaves dependences inside a step",
              pos_t ? "holds (pointwise concurrent start)" : "fails");

    /* --- classical skewed hyperplanes, displacement vectors, concurrent start --- */
    int ok = legal_t && zero_t;
    for (int i = 0; i < nd && ok; i++) {
        d->sigma[i] = least_outside(ictx, d, i, 0, 1, 1, 4 * PS_ITER_MAX_OFFSET);
        if (d->sigma[i] < 0) ok = 0;
    }
    if (!ok) {
        isl_set_free(D);
        return ps_error(PS_ERR_UNSUPPORTED, "%s: the update's dependences leave no legal time tiling", who);
    }
    isl_mat *H = isl_mat_alloc(ictx, (unsigned)(nd + 1), (unsigned)(nd + 1));
    for (int row = 0; row <= nd && H; row++)
        for (int col = 0; col <= nd; col++)
            H = isl_mat_set_element_si(H, row, col, row == col ? 1 : (col == 0 && row > 0 ? (int)d->sigma[row - 1] : 0));
    isl_mat *Hinv = isl_mat_right_inverse(H);
    sb_printf(tx, "  classical time tiling H = {e_t");
    for (int i = 0; i < nd; i++) sb_printf(tx, ", %lld e_t + e_i%d", (long long)d->sigma[i], i);
    sb_printf(tx, "} (least skews with H.D >= 0)");
    d->tiled_inhibited = 0;
    for (int k = 1; k <= nd && Hinv; k++) {
        /* s_k: column k of H^-1; the face t = const contains it when its
         * time component is 0. */
        isl_val *v0 = isl_mat_get_element_val(Hinv, 0, k);
        int in_face = v0 && isl_val_is_zero(v0) == isl_bool_true;
        isl_val_free(v0);
        int64_t h[PS_IT_MAX_DIMS + 1] = {d->sigma[k - 1], 0, 0, 0};
        h[k] = 1;
        int uncarried = none_with(D, nd, h, ">");
        if (uncarried < 0) ok = 0;
        if (in_face && uncarried == 0) d->tiled_inhibited = 1;
    }
    isl_mat_free(Hinv);
    if (!ok || !Hinv) {
        isl_set_free(D);
        return ps_error(PS_ERR_BACKEND, "%s: isl failed on the displacement vectors", who);
    }
    sb_printf(tx, ": %s\n",
              d->tiled_inhibited ? "a displacement vector in the face t = const carries inter-tile dependences, so "
                                   "concurrent start is inhibited (tiles would start as a wavefront)"
                                 : "no inter-tile dependence along the face t = const (concurrent start kept)");

    /* --- companions, split and skew slopes, per dimension --- */
    d->checks_ok = 1;
    for (int i = 0; i < nd; i++) {
        /* Dimensions with the same projected distances (heat-3d's three)
         * get the same answers: reuse them. */
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (same_projection(d, i, j)) same = j;
        if (same >= 0) {
            d->sigma[i] = d->sigma[same];
            d->lambda[i] = d->lambda[same];
            d->el[i] = d->el[same];
            d->er[i] = d->er[same];
            d->split_s[i] = d->split_s[same];
            d->split_ui[i] = d->split_ui[same];
            d->skew_s[i] = d->skew_s[same];
            sb_printf(tx, "  i%d: the distances project onto (t, i%d) as onto (t, i%d): the same tiles\n", i, i, same);
            continue;
        }
        d->lambda[i] = least_outside(ictx, d, i, d->sigma[i], -1, 0, 8 * PS_ITER_MAX_OFFSET);
        if (d->lambda[i] < 0) {
            isl_set_free(D);
            return ps_error(PS_ERR_BACKEND, "%s: isl found no companion hyperplane along dimension %d", who, i);
        }
        /* Never shrink a tile going back: a negative growth would only
         * trim points the executor can compute anyway. */
        d->el[i] = d->lambda[i] - d->sigma[i] > 0 ? d->lambda[i] - d->sigma[i] : 0;
        d->er[i] = d->sigma[i];
        isl_map *dep = dep_1d(ictx, d, i);
        int closed = dep ? overlap_closed(ictx, dep, d->el[i], d->er[i]) : -1;
        int found = 0;
        for (int64_t s = 0; s <= 2 * rmax + 2 && dep && !found; s++) {
            int ui = 0, o = split_ok(ictx, dep, s, &ui);
            if (o < 0) break;
            if (o) {
                d->split_s[i] = s;
                d->split_ui[i] = ui;
                found = 1;
            }
        }
        int found_skew = 0;
        for (int64_t s = 0; s <= 2 * rmax + 2 && dep && !found_skew; s++) {
            int o = skew_ok(ictx, dep, s);
            if (o < 0) break;
            if (o) {
                d->skew_s[i] = s;
                found_skew = 1;
            }
        }
        isl_map_free(dep);
        if (closed < 0 || !found || !found_skew) {
            isl_set_free(D);
            return ps_error(PS_ERR_BACKEND, "%s: isl failed on the tile shapes along dimension %d", who, i);
        }
        if (!closed) d->checks_ok = 0;
        sb_printf(tx,
                  "  i%d: companion of h_i%d's back face: h - %lld e_t, so an overlapped tile grows by %lld (left) and %lld "
                  "(right) per earlier step; isl: %s\n"
                  "      split slope %lld (uprights read only themselves, inverted tiles only uprights and themselves, nothing "
                  "overwritten in two buffers)%s; skewed chain slope %lld\n",
                  i, i, (long long)d->lambda[i], (long long)d->el[i], (long long)d->er[i],
                  closed ? "no dependence enters the trapezoid" : "DEPENDENCES ENTER THE TRAPEZOID", (long long)d->split_s[i],
                  d->split_ui[i] ? "" : ", inverted tiles independent of uprights", (long long)d->skew_s[i]);
    }
    isl_set_free(D);
    return PS_SUCCESS;
}

ps_status ps_iter_deps_compute(const ps_iter *it, ps_it_deps *d)
{
    memset(d, 0, sizeof *d);
    d->nd = it->ndim;
    isl_ctx *ictx = isl_ctx_alloc();
    if (!ictx) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_iter_plan_create: out of memory");
    isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
    sbuf tx = {0};
    ps_status st = analyse(ictx, it, d, &tx);
    isl_ctx_free(ictx);
    if (!st && tx.oom) st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_iter_plan_create: out of memory");
    if (st) {
        free(tx.s);
        ps_iter_deps_release(d);
        return st;
    }
    d->text = tx.s;
    return PS_SUCCESS;
}

void ps_iter_deps_release(ps_it_deps *d)
{
    if (!d) return;
    free(d->dist);
    free(d->text);
    d->dist = NULL;
    d->text = NULL;
}
