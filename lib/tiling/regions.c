/* Alignment/scaling, isl regions and schedule trees of fused groups
 * (tiling.h). */
#include "tiling/tiling.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/local_space.h>
#include <isl/space.h>
#include <isl/fixed_box.h>
#include <isl/map.h>
#include <isl/printer.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "core/error.h"

/* Coarsest alignment a group may demand (its tiles' sides are multiples):
 * beyond it a tile of the finest member is too large to fit any cache
 * level, so the group is not worth forming. */
#define PS_TILE_ALIGN_MAX 256

static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a ? a : 1;
}

static ps_rat rat(int64_t num, int64_t den)
{
    int64_t g = gcd64(num, den);
    return (ps_rat){num / g, den / g};
}
static ps_rat rat_mul(ps_rat a, ps_rat b) { return rat(a.num * b.num, a.den * b.den); }
static ps_rat rat_div(ps_rat a, ps_rat b) { return rat(a.num * b.den, a.den * b.num); }
static int rat_eq(ps_rat a, ps_rat b) { return a.num == b.num && a.den == b.den; }

int64_t ps_group_member_tile(const ps_rat *scale, int64_t t) { return t * scale->num / scale->den; }

/* Producer coordinate per consumer coordinate along y (dim 0) or x (dim 1)
 * when stage s reads its input j. */
static ps_rat edge_factor(const ps_pstage *s, int j, int dim)
{
    if (s->kind == PS_NODE_CONV && j >= 1) return rat(1, 1); /* a residual, at the output's pixels */
    switch (s->kind) {
    case PS_NODE_CONV:
    case PS_NODE_STENCIL: return rat(dim ? s->sx : s->sy, 1);
    case PS_NODE_RESAMPLE: return s->resample == PS_RESAMPLE_DOWN2_AVERAGE ? rat(2, 1) : rat(1, 2);
    default: return rat(1, 1);
    }
}

/* Gives member q the scales (fy, fx) when the walk first reaches it (and
 * queues it); 0 when it was reached before at other scales. */
static int reach(ps_group_geom *g, int *seen, int *queue, int *tail, int q, ps_rat fy, ps_rat fx)
{
    if (seen[q]) return rat_eq(g->sy[q], fy) && rat_eq(g->sx[q], fx);
    seen[q] = 1;
    g->sy[q] = fy;
    g->sx[q] = fx;
    queue[(*tail)++] = q;
    return 1;
}

int ps_group_member_index(const ps_group_geom *g, int s)
{
    int lo = 0, hi = g->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (g->m[mid] == s) return mid;
        if (g->m[mid] < s) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

void ps_group_geom_release(ps_group_geom *g)
{
    if (!g) return;
    free(g->m);
    free(g->live_out);
    free(g->inner_cons);
    free(g->sy);
    free(g->sx);
    free(g->livein);
    memset(g, 0, sizeof *g);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

ps_status ps_group_geom_init(const ps_pipeline *p, const int *members, int n, ps_group_geom *g)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->m = malloc((size_t)n * sizeof *g->m);
    g->live_out = calloc((size_t)n, sizeof *g->live_out);
    g->inner_cons = calloc((size_t)n, sizeof *g->inner_cons);
    g->sy = calloc((size_t)n, sizeof *g->sy);
    g->sx = calloc((size_t)n, sizeof *g->sx);
    int *seen = calloc((size_t)n, sizeof *seen), *queue = malloc((size_t)n * sizeof *queue);
    int cap_in = 0;
    for (int k = 0; k < n; k++) cap_in += p->st[members[k]].n_in;
    g->livein = malloc((size_t)(cap_in + 1) * sizeof *g->livein);
    if (!g->m || !g->live_out || !g->inner_cons || !g->sy || !g->sx || !seen || !queue || !g->livein) {
        free(seen);
        free(queue);
        ps_group_geom_release(g);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    memcpy(g->m, members, (size_t)n * sizeof *g->m);
    qsort(g->m, (size_t)n, sizeof *g->m, cmp_int);
    g->legal = 1;
    for (int k = 0; k < n; k++) {
        const ps_pstage *S = &p->st[g->m[k]];
        if (!ps_pstage_computed(S)) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "\"%s\" is a graph input or needed nowhere", S->name);
        }
        if (S->kind == PS_NODE_GAP && n > 1) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "\"%s\" (global pooling) reads its whole input: it runs alone", S->name);
        }
        if (k && g->m[k] == g->m[k - 1]) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "\"%s\" is listed twice", S->name);
        }
        g->live_out[k] = S->output_index >= 0;
        for (int c = 0; c < S->n_cons; c++) {
            if (ps_group_member_index(g, S->cons[c]) >= 0) g->inner_cons[k] = 1;
            else g->live_out[k] = 1;
        }
        for (int j = 0; j < S->n_in; j++) {
            int q = S->in[j];
            if (ps_group_member_index(g, q) >= 0) continue;
            int dup = 0;
            for (int i = 0; i < g->n_livein; i++) dup |= g->livein[i] == q;
            if (!dup) g->livein[g->n_livein++] = q;
        }
    }
    /* Scales: a walk over the group's edges in both directions, one
     * component at a time. */
    for (int root = 0; root < n && g->legal; root++) {
        if (seen[root]) continue;
        seen[root] = 1;
        g->sy[root] = g->sx[root] = rat(1, 1);
        int head = 0, tail = 0;
        queue[tail++] = root;
        while (head < tail && g->legal) {
            int k = queue[head++];
            const ps_pstage *S = &p->st[g->m[k]];
            /* producers of k */
            for (int j = 0; j < S->n_in && g->legal; j++) {
                int q = ps_group_member_index(g, S->in[j]);
                if (q < 0) continue;
                ps_rat fy = rat_mul(g->sy[k], edge_factor(S, j, 0)), fx = rat_mul(g->sx[k], edge_factor(S, j, 1));
                ps_rat old_y = g->sy[q];
                if (!reach(g, seen, queue, &tail, q, fy, fx)) {
                    g->legal = 0;
                    snprintf(g->why, sizeof g->why,
                             "\"%s\" is read at two resolutions (%lld/%lld and %lld/%lld): no constant dependences",
                             p->st[g->m[q]].name, (long long)old_y.num, (long long)old_y.den, (long long)fy.num,
                             (long long)fy.den);
                }
            }
            /* consumers of k */
            for (int c = 0; c < S->n_cons && g->legal; c++) {
                int q = ps_group_member_index(g, S->cons[c]);
                if (q < 0) continue;
                const ps_pstage *Q = &p->st[g->m[q]];
                for (int j = 0; j < Q->n_in && g->legal; j++) {
                    if (Q->in[j] != g->m[k]) continue;
                    ps_rat fy = rat_div(g->sy[k], edge_factor(Q, j, 0)), fx = rat_div(g->sx[k], edge_factor(Q, j, 1));
                    if (!reach(g, seen, queue, &tail, q, fy, fx)) {
                        g->legal = 0;
                        snprintf(g->why, sizeof g->why,
                                 "\"%s\" is reached at two resolutions: no constant dependences", Q->name);
                    }
                }
            }
        }
    }
    free(seen);
    free(queue);
    if (!g->legal) return PS_SUCCESS;
    /* Reference: the live-out of the finest resolution. */
    g->ref = -1;
    for (int k = 0; k < n; k++) {
        if (!g->live_out[k]) continue;
        if (g->ref < 0 || (double)g->sy[k].num / (double)g->sy[k].den * (double)g->sx[k].num / (double)g->sx[k].den >
                              (double)g->sy[g->ref].num / (double)g->sy[g->ref].den * (double)g->sx[g->ref].num /
                                  (double)g->sx[g->ref].den)
            g->ref = k;
    }
    if (g->ref < 0) g->ref = n - 1;
    ps_rat ry = g->sy[g->ref], rx = g->sx[g->ref];
    g->align_y = g->align_x = 1;
    for (int k = 0; k < n; k++) {
        g->sy[k] = rat_div(g->sy[k], ry);
        g->sx[k] = rat_div(g->sx[k], rx);
        g->align_y = g->align_y / gcd64(g->align_y, g->sy[k].den) * g->sy[k].den;
        g->align_x = g->align_x / gcd64(g->align_x, g->sx[k].den) * g->sx[k].den;
        /* Live-ins too: their regions are fixed-size only when the tile
         * covers whole pixels of them. */
        const ps_pstage *S = &p->st[g->m[k]];
        for (int j = 0; j < S->n_in; j++) {
            if (ps_group_member_index(g, S->in[j]) >= 0) continue;
            ps_rat fy = rat_mul(g->sy[k], edge_factor(S, j, 0)), fx = rat_mul(g->sx[k], edge_factor(S, j, 1));
            g->align_y = g->align_y / gcd64(g->align_y, fy.den) * fy.den;
            g->align_x = g->align_x / gcd64(g->align_x, fx.den) * fx.den;
        }
        if (g->align_y > PS_TILE_ALIGN_MAX || g->align_x > PS_TILE_ALIGN_MAX) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "resolutions too far apart (tiles would be multiples of %lld x %lld)",
                     (long long)g->align_y, (long long)g->align_x);
            return PS_SUCCESS;
        }
    }
    return PS_SUCCESS;
}

/* Reads an integer isl_val (consumed); 0 in *ok when it is not one. */
static int64_t val_int(isl_val *v, int *ok)
{
    int64_t r = 0;
    if (!v || isl_val_is_int(v) != isl_bool_true) *ok = 0;
    else r = isl_val_get_num_si(v);
    isl_val_free(v);
    return r;
}

/* One dimension of an access relation: the consumer's point y reads the
 * producer's points a with  A a >= P y + q0  and  A a <= P y + q1. */
typedef struct access1 {
    int64_t A, P, q0, q1;
} access1;

static access1 access_dim(const ps_pstage *S, int j, int dim)
{
    if (S->kind == PS_NODE_CONV && j >= 1) return (access1){1, 1, 0, 0}; /* the residual */
    switch (S->kind) {
    case PS_NODE_CONV:
    case PS_NODE_STENCIL: {
        int lo = INT32_MAX, hi = INT32_MIN;
        for (int t = 0; t < S->n_taps; t++) {
            int d = dim ? S->dx[t] : S->dy[t];
            if (d < lo) lo = d;
            if (d > hi) hi = d;
        }
        return (access1){1, dim ? S->sx : S->sy, lo, hi};
    }
    case PS_NODE_RESAMPLE:
        if (S->resample == PS_RESAMPLE_UP2_NEAREST) return (access1){2, 1, -1, 0};  /* a = floor(y / 2) */
        if (S->resample == PS_RESAMPLE_UP2_BILINEAR) return (access1){2, 1, -2, 1}; /* floor((y-1)/2) .. floor((y+1)/2) */
        return (access1){1, 2, 0, 1};                                               /* 2y .. 2y + 1 */
    default: return (access1){1, 1, 0, 0};
    }
}

/* A one-dimensional region a ti + b .. a ti + b + h - 1. */
typedef struct form1 {
    int64_t a, b, h;
} form1;

typedef struct rc_entry {
    int used;
    access1 acc;
    int64_t b, e;        /* consumer offset and excess (h - a) */
    int ok;
    int64_t pb, pe;      /* producer offset and excess */
} rc_entry;

struct ps_region_cache {
    isl_ctx *ctx;
    rc_entry *tab;
    size_t cap, n;
    long hits, misses;
};

ps_region_cache *ps_region_cache_create(isl_ctx *ctx)
{
    ps_region_cache *rc = calloc(1, sizeof *rc);
    if (!rc) return NULL;
    rc->ctx = ctx;
    rc->cap = 256;
    rc->tab = calloc(rc->cap, sizeof *rc->tab);
    if (!rc->tab) {
        free(rc);
        return NULL;
    }
    return rc;
}

void ps_region_cache_destroy(ps_region_cache *rc)
{
    if (!rc) return;
    free(rc->tab);
    free(rc);
}

void ps_region_cache_counts(const ps_region_cache *rc, long *hits, long *misses)
{
    *hits = rc ? rc->hits : 0;
    *misses = rc ? rc->misses : 0;
}

static isl_constraint *ineq(isl_local_space *ls, int64_t c_param, int64_t c_in, int64_t c_out, int64_t cst,
                            enum isl_dim_type in_type)
{
    isl_constraint *c = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
    c = isl_constraint_set_coefficient_si(c, isl_dim_param, 0, (int)c_param);
    if (c_in) c = isl_constraint_set_coefficient_si(c, in_type, 0, (int)c_in);
    if (c_out) c = isl_constraint_set_coefficient_si(c, isl_dim_out, 0, (int)c_out);
    return isl_constraint_set_constant_si(c, (int)cst);
}

/* isl: the image of the consumer region f under acc, as a fixed-size box
 * affine in the tile index. 1 and *out, 0 when the image has no fixed size,
 * -1 when isl failed. */
static int image_isl(isl_ctx *ctx, const access1 *acc, const form1 *f, form1 *out)
{
    isl_space *sp = isl_space_set_alloc(ctx, 1, 1);
    sp = isl_space_set_dim_name(sp, isl_dim_param, 0, "ti");
    isl_local_space *ls = isl_local_space_from_space(isl_space_copy(sp));
    /* a ti + b <= y <= a ti + b + h - 1 */
    isl_basic_set *region = isl_basic_set_universe(isl_space_copy(sp));
    region = isl_basic_set_add_constraint(region, ineq(ls, -f->a, 0, 1, -f->b, isl_dim_set));
    region = isl_basic_set_add_constraint(region, ineq(ls, f->a, 0, -1, f->b + f->h - 1, isl_dim_set));
    isl_local_space_free(ls);
    isl_space *msp = isl_space_map_from_set(sp);
    isl_local_space *mls = isl_local_space_from_space(isl_space_copy(msp));
    /* A a - P y - q0 >= 0,  -A a + P y + q1 >= 0 */
    isl_basic_map *access = isl_basic_map_universe(msp);
    access = isl_basic_map_add_constraint(access, ineq(mls, 0, -acc->P, acc->A, -acc->q0, isl_dim_in));
    access = isl_basic_map_add_constraint(access, ineq(mls, 0, acc->P, -acc->A, acc->q1, isl_dim_in));
    isl_local_space_free(mls);
    isl_set *img = isl_set_from_basic_set(isl_basic_set_apply(region, access));
    int ok = -1;
    if (img) {
        isl_fixed_box *box = isl_set_get_simple_fixed_box_hull(img);
        ok = box ? 0 : -1;
        if (box && isl_fixed_box_is_valid(box) == isl_bool_true) {
            isl_multi_aff *off = isl_fixed_box_get_offset(box);
            isl_multi_val *size = isl_fixed_box_get_size(box);
            int good = off && size;
            if (good) {
                isl_aff *aff = isl_multi_aff_get_at(off, 0);
                good = aff && isl_aff_dim(aff, isl_dim_div) == 0;
                if (good) {
                    out->b = val_int(isl_aff_get_constant_val(aff), &good);
                    out->a = val_int(isl_aff_get_coefficient_val(aff, isl_dim_param, 0), &good);
                }
                isl_aff_free(aff);
                if (good) out->h = val_int(isl_multi_val_get_at(size, 0), &good);
            }
            isl_multi_aff_free(off);
            isl_multi_val_free(size);
            ok = good;
        }
        isl_fixed_box_free(box);
    }
    isl_set_free(img);
    return ok;
}

static size_t rc_slot(const access1 *acc, int64_t b, int64_t e, size_t cap)
{
    uint64_t h = (uint64_t)acc->A * 0x9e3779b97f4a7c15ull ^ (uint64_t)acc->P * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)acc->q0 * 0x165667b19e3779f9ull ^ (uint64_t)acc->q1 * 0x27d4eb2f165667c5ull ^
                 (uint64_t)b * 0x94d049bb133111ebull ^ (uint64_t)e * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The producer region acc reads for consumer region f (cached). */
static int image(ps_region_cache *rc, const access1 *acc, const form1 *f, form1 *out)
{
    /* The producer's slope is the consumer's times P / A: whole only when
     * the tile sizes respect the resolutions (they do, by alignment). */
    if ((f->a * acc->P) % acc->A) return 0;
    int64_t e = f->h - f->a;
    size_t i = rc_slot(acc, f->b, e, rc->cap);
    while (rc->tab[i].used) {
        const rc_entry *c = &rc->tab[i];
        if (!memcmp(&c->acc, acc, sizeof *acc) && c->b == f->b && c->e == e) {
            rc->hits++;
            if (!c->ok) return 0;
            out->a = f->a * acc->P / acc->A;
            out->b = c->pb;
            out->h = out->a + c->pe;
            return 1;
        }
        i = (i + 1) & (rc->cap - 1);
    }
    /* isl at a canonical slope with the same divisibility: the offset and
     * excess it finds hold for every tile size (the region is the
     * consumer's shifted by constants). */
    form1 canon = {acc->A * 64, f->b, acc->A * 64 + e}, img = {0, 0, 0};
    int r = image_isl(rc->ctx, acc, &canon, &img);
    if (r < 0) return -1;
    rc->misses++;
    if (r == 1 && img.a != canon.a * acc->P / acc->A) r = 0;
    if (2 * (rc->n + 1) > rc->cap) {
        size_t cap = rc->cap * 2;
        rc_entry *t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t k = 0; k < rc->cap; k++) {
            if (!rc->tab[k].used) continue;
            size_t j = rc_slot(&rc->tab[k].acc, rc->tab[k].b, rc->tab[k].e, cap);
            while (t[j].used) j = (j + 1) & (cap - 1);
            t[j] = rc->tab[k];
        }
        free(rc->tab);
        rc->tab = t;
        rc->cap = cap;
        i = rc_slot(acc, f->b, e, rc->cap);
        while (rc->tab[i].used) i = (i + 1) & (rc->cap - 1);
    }
    rc_entry *c = &rc->tab[i];
    c->used = 1;
    c->acc = *acc;
    c->b = f->b;
    c->e = e;
    c->ok = r == 1;
    c->pb = img.b;
    c->pe = img.h - img.a;
    rc->n++;
    if (r != 1) return 0;
    out->a = f->a * acc->P / acc->A;
    out->b = img.b;
    out->h = out->a + c->pe;
    return 1;
}

/* Hull of two regions of the same slope (the group's scales agree). */
static int hull1(form1 *acc, int *have, const form1 *f)
{
    if (!*have) {
        *acc = *f;
        *have = 1;
        return 1;
    }
    if (acc->a != f->a) return 0;
    int64_t end = acc->b + acc->h > f->b + f->h ? acc->b + acc->h : f->b + f->h;
    if (f->b < acc->b) acc->b = f->b;
    acc->h = end - acc->b;
    return 1;
}

int ps_group_regions(ps_region_cache *rc, const ps_pipeline *p, const ps_group_geom *g, int64_t ty, int64_t tx,
                     ps_region_form *forms)
{
    int n = g->n;
    form1 *R = malloc(((size_t)n + 1) * sizeof *R);
    if (!R) {
        ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        return -1;
    }
    int rc_out = 1;
    for (int dim = 0; dim < 2 && rc_out == 1; dim++) {
        int64_t t = dim ? tx : ty;
        for (int k = n - 1; k >= 0 && rc_out == 1; k--) {
            const ps_pstage *S = &p->st[g->m[k]];
            int have = 0;
            if (g->live_out[k]) {
                int64_t own = ps_group_member_tile(dim ? &g->sx[k] : &g->sy[k], t);
                form1 o = {own, 0, own};
                hull1(&R[k], &have, &o);
            }
            for (int c = 0; c < S->n_cons && rc_out == 1; c++) {
                int q = ps_group_member_index(g, S->cons[c]);
                if (q < 0) continue;
                const ps_pstage *Q = &p->st[g->m[q]];
                for (int j = 0; j < Q->n_in && rc_out == 1; j++) {
                    if (Q->in[j] != g->m[k]) continue;
                    access1 acc = access_dim(Q, j, dim);
                    form1 img;
                    int r = image(rc, &acc, &R[q], &img);
                    if (r != 1) rc_out = r < 0 ? -1 : 0;
                    else if (!hull1(&R[k], &have, &img)) rc_out = 0;
                }
            }
            if (rc_out == 1 && !have) rc_out = 0;
            if (rc_out != 1) break;
            if (dim) {
                forms[k].ax = R[k].a;
                forms[k].bx = R[k].b;
                forms[k].w = R[k].h;
            } else {
                forms[k].ay = R[k].a;
                forms[k].by = R[k].b;
                forms[k].h = R[k].h;
            }
        }
        for (int i = 0; i < g->n_livein && rc_out == 1; i++) {
            int have = 0;
            form1 L = {0, 0, 0};
            for (int k = 0; k < n && rc_out == 1; k++) {
                const ps_pstage *S = &p->st[g->m[k]];
                for (int j = 0; j < S->n_in && rc_out == 1; j++) {
                    if (S->in[j] != g->livein[i]) continue;
                    access1 acc = access_dim(S, j, dim);
                    form1 img;
                    int r = image(rc, &acc, &R[k], &img);
                    if (r != 1) rc_out = r < 0 ? -1 : 0;
                    else if (!hull1(&L, &have, &img) && img.h > L.h)
                        L = img; /* read at two resolutions: the larger region sizes the cost */
                }
            }
            if (dim) {
                forms[n + i].ax = L.a;
                forms[n + i].bx = L.b;
                forms[n + i].w = L.h;
            } else {
                forms[n + i].ay = L.a;
                forms[n + i].by = L.b;
                forms[n + i].h = L.h;
            }
        }
    }
    free(R);
    if (rc_out < 0) ps_error(PS_ERR_BACKEND, "ps_graph_plan_create: isl failed computing tile regions");
    return rc_out;
}

/* isl identifier of member k: S<k>_<name with non-identifier bytes as _>. */
static void member_id(const ps_pipeline *p, const ps_group_geom *g, int k, char *buf, size_t len)
{
    int off = snprintf(buf, len, "S%d_", k);
    const char *name = p->st[g->m[k]].name;
    for (size_t i = 0; name[i] && (size_t)off + 1 < len; i++)
        buf[off++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    buf[off] = '\0';
}

char *ps_group_schedule_tree(isl_ctx *ctx, const ps_pipeline *p, const ps_group_geom *g, const ps_region_form *forms,
                             int64_t ti0, int64_t ti1, int64_t tj0, int64_t tj1)
{
    char buf[1024], id[96];
    snprintf(buf, sizeof buf, "{ T[ti, tj] : %lld <= ti < %lld and %lld <= tj < %lld }", (long long)ti0, (long long)ti1,
             (long long)tj0, (long long)tj1);
    isl_union_set *tiles = isl_union_set_read_from_str(ctx, buf);
    isl_schedule *sched = isl_schedule_from_domain(isl_union_set_copy(tiles));
    isl_multi_union_pw_aff *band =
        isl_multi_union_pw_aff_read_from_str(ctx, "[{ T[ti, tj] -> [(ti)] }, { T[ti, tj] -> [(tj)] }]");
    sched = isl_schedule_insert_partial_schedule(sched, band);
    /* The expansion: tile (ti, tj) -> the instances of every member it computes. */
    isl_union_set *expanded = NULL;
    isl_union_map *contraction = NULL;
    isl_union_set_list *filters = isl_union_set_list_alloc(ctx, g->n);
    for (int k = 0; k < g->n; k++) {
        const ps_region_form *f = &forms[k];
        member_id(p, g, k, id, sizeof id);
        snprintf(buf, sizeof buf,
                 "{ %s[ti, tj, y, x] : %lld <= ti < %lld and %lld <= tj < %lld and "
                 "%lld ti + %lld <= y < %lld ti + %lld and %lld tj + %lld <= x < %lld tj + %lld }",
                 id, (long long)ti0, (long long)ti1, (long long)tj0, (long long)tj1, (long long)f->ay, (long long)f->by,
                 (long long)f->ay, (long long)(f->by + f->h), (long long)f->ax, (long long)f->bx, (long long)f->ax,
                 (long long)(f->bx + f->w));
        isl_union_set *e = isl_union_set_read_from_str(ctx, buf);
        filters = isl_union_set_list_add(filters, isl_union_set_copy(e));
        expanded = expanded ? isl_union_set_union(expanded, e) : e;
        snprintf(buf, sizeof buf, "{ %s[ti, tj, y, x] -> T[ti, tj] }", id);
        isl_union_map *c = isl_union_map_read_from_str(ctx, buf);
        contraction = contraction ? isl_union_map_union(contraction, c) : c;
    }
    isl_schedule *exp = isl_schedule_from_domain(expanded);
    isl_schedule_node *node = isl_schedule_get_root(exp);
    isl_schedule_free(exp);
    node = isl_schedule_node_child(node, 0);
    node = isl_schedule_node_insert_sequence(node, filters);
    for (int k = 0; k < g->n; k++) {
        member_id(p, g, k, id, sizeof id);
        snprintf(buf, sizeof buf, "[{ %s[ti, tj, y, x] -> [(y)] }, { %s[ti, tj, y, x] -> [(x)] }]", id, id);
        node = isl_schedule_node_child(node, k);  /* the filter */
        node = isl_schedule_node_child(node, 0);  /* below it */
        node = isl_schedule_node_insert_partial_schedule(node, isl_multi_union_pw_aff_read_from_str(ctx, buf));
        node = isl_schedule_node_parent(node);
        node = isl_schedule_node_parent(node);
    }
    exp = isl_schedule_node_get_schedule(node);
    isl_schedule_node_free(node);
    sched = isl_schedule_expand(sched, isl_union_pw_multi_aff_from_union_map(contraction), exp);
    isl_union_set_free(tiles);
    char *text = NULL;
    if (sched) {
        isl_printer *pr = isl_printer_to_str(ctx);
        pr = isl_printer_set_yaml_style(pr, ISL_YAML_STYLE_BLOCK);
        pr = isl_printer_print_schedule(pr, sched);
        text = isl_printer_get_str(pr);
        isl_printer_free(pr);
    }
    isl_schedule_free(sched);
    return text;
}
