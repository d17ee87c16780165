/* Forming the fused groups: PolyMage's dynamic programme (seed 002, Alg. 1,
 * bounded and repeated as Alg. 5), greedy merging, one stage per group, or a
 * grouping the caller fixed. */
#include "fusion/fusion_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"

/* The DP gives up (and the cost-checked greedy grouping is used) past this many states:
 * planning must stay in milliseconds however wide the graph. The benchmark
 * pipelines take 4-605 states and the MobileNet-v2 and ResNet-50 bodies
 * about 700; GoogLeNet's body (four-branch inception blocks) would take
 * more than 20,000 (2.5 s of cost evaluations) and still fall back. */
#define PS_DP_MAX_STATES 5000
/* Ready sets larger than this are split into singletons only: their
 * partitions grow as Bell numbers (Bell(6) = 203). */
#define PS_DP_MAX_PARTITION 6
/* Graphs of more units than this are grouped in bounded passes (Alg. 5). */
#define PS_DP_UNBOUNDED_UNITS 24
#define PS_DP_FIRST_LIMIT 8

/* ---------------------------------------------------------------- bitsets */

static inline void bs_set(uint64_t *b, int i) { b[i >> 6] |= 1ull << (i & 63); }
static inline int bs_get(const uint64_t *b, int i) { return (int)(b[i >> 6] >> (i & 63)) & 1; }
static int bs_count(const uint64_t *b, int w)
{
    int c = 0;
    for (int i = 0; i < w; i++) c += __builtin_popcountll(b[i]);
    return c;
}
static int bs_subset(const uint64_t *a, const uint64_t *b, int w)
{
    for (int i = 0; i < w; i++)
        if (a[i] & ~b[i]) return 0;
    return 1;
}
static uint64_t bs_hash(const uint64_t *b, int w, uint64_t h)
{
    for (int i = 0; i < w; i++) {
        h ^= b[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h;
}

/* ----------------------------------------------------------- COST memo */

ps_fusion_state *ps_fusion_state_create(isl_ctx *ctx, const ps_pipeline *p, const ps_cost_model *cm)
{
    ps_fusion_state *fs = calloc(1, sizeof *fs);
    if (!fs) return NULL;
    fs->isl = ctx;
    fs->p = p;
    fs->cm = *cm;
    fs->words = (p->n + 63) / 64;
    fs->memo_cap = 256;
    fs->memo = calloc(fs->memo_cap, sizeof *fs->memo);
    fs->regions = ps_region_cache_create(ctx);
    if (!fs->memo || !fs->regions) {
        ps_region_cache_destroy(fs->regions);
        free(fs->memo);
        free(fs);
        return NULL;
    }
    return fs;
}

void ps_fusion_state_destroy(ps_fusion_state *fs)
{
    if (!fs) return;
    for (size_t i = 0; i < fs->memo_cap; i++) free(fs->memo[i].key);
    free(fs->memo);
    ps_region_cache_destroy(fs->regions);
    free(fs);
}

static int memo_grow(ps_fusion_state *fs)
{
    size_t cap = fs->memo_cap * 2;
    ps_cost_entry *t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (size_t i = 0; i < fs->memo_cap; i++) {
        if (!fs->memo[i].key) continue;
        size_t h = bs_hash(fs->memo[i].key, fs->words, 0) & (cap - 1);
        while (t[h].key) h = (h + 1) & (cap - 1);
        t[h] = fs->memo[i];
    }
    free(fs->memo);
    fs->memo = t;
    fs->memo_cap = cap;
    return 1;
}

ps_status ps_group_evaluate(ps_fusion_state *fs, const int *m, int n, ps_group_eval *ev)
{
    uint64_t key[64] = {0};
    for (int i = 0; i < n; i++) bs_set(key, m[i]);
    size_t h = bs_hash(key, fs->words, 0) & (fs->memo_cap - 1);
    while (fs->memo[h].key) {
        if (memcmp(fs->memo[h].key, key, (size_t)fs->words * sizeof *key) == 0) {
            *ev = fs->memo[h].ev;
            return PS_SUCCESS;
        }
        h = (h + 1) & (fs->memo_cap - 1);
    }
    ps_status st = ps_group_cost_uncached(fs, m, n, ev);
    if (st) return st;
    fs->evaluations++;
    if (2 * (fs->memo_n + 1) > fs->memo_cap) {
        if (!memo_grow(fs)) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        h = bs_hash(key, fs->words, 0) & (fs->memo_cap - 1);
        while (fs->memo[h].key) h = (h + 1) & (fs->memo_cap - 1);
    }
    fs->memo[h].key = malloc((size_t)fs->words * sizeof *key);
    if (!fs->memo[h].key) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    memcpy(fs->memo[h].key, key, (size_t)fs->words * sizeof *key);
    fs->memo[h].ev = *ev;
    fs->memo_n++;
    return PS_SUCCESS;
}

/* --------------------------------------------------------------- units */

/* A unit is a set of stages the current pass treats as one node: single
 * stages at first, the groups of the previous pass in Alg. 5's later ones. */
typedef struct units {
    int n, w;            /* units, words of a unit bitset */
    int *stage_unit;     /* stage -> unit, -1 for graph inputs */
    uint64_t *pred, *succ; /* n x w */
} units;

static void units_release(units *u)
{
    free(u->stage_unit);
    free(u->pred);
    free(u->succ);
}

static int units_build(const ps_pipeline *p, const int *stage_unit, int n, units *u)
{
    u->n = n;
    u->w = (n + 63) / 64;
    u->stage_unit = malloc((size_t)p->n * sizeof *u->stage_unit);
    u->pred = calloc((size_t)n * (size_t)u->w + 1, sizeof *u->pred);
    u->succ = calloc((size_t)n * (size_t)u->w + 1, sizeof *u->succ);
    if (!u->stage_unit || !u->pred || !u->succ) return 0;
    memcpy(u->stage_unit, stage_unit, (size_t)p->n * sizeof *stage_unit);
    for (int s = 0; s < p->n; s++) {
        int us = stage_unit[s];
        if (us < 0) continue;
        for (int j = 0; j < p->st[s].n_in; j++) {
            int up = stage_unit[p->st[s].in[j]];
            if (up < 0 || up == us) continue;
            bs_set(u->pred + (size_t)us * u->w, up);
            bs_set(u->succ + (size_t)up * u->w, us);
        }
    }
    return 1;
}

/* COST of a set of units. */
static ps_status eval_units(ps_fusion_state *fs, const units *u, const uint64_t *set, ps_group_eval *ev)
{
    int m[PS_GRAPH_MAX_TENSORS], n = 0;
    for (int s = 0; s < fs->p->n; s++)
        if (u->stage_unit[s] >= 0 && bs_get(set, u->stage_unit[s])) m[n++] = s;
    return ps_group_evaluate(fs, m, n, ev);
}

/* ------------------------------------------------------------------- DP */

typedef struct dp_entry {
    uint64_t *key;       /* k active groups then done, each w words; NULL = empty slot */
    int k;
    double cost;
    int n_groups;
    uint64_t *groups;    /* the best grouping from this state on, n_groups x w */
} dp_entry;

typedef struct dp {
    ps_fusion_state *fs;
    const units *u;
    int limit;
    dp_entry *tab;
    size_t cap, n;
    long states;
    int aborted;
    ps_status err;
} dp;

/* Orders sets of *(const int *)words 64-bit words (qsort_r: plans may be
 * created from several threads at once). */
static int cmp_sets(const void *a, const void *b, void *words)
{
    const uint64_t *x = a, *y = b;
    const int w = *(const int *)words;
    for (int i = 0; i < w; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

static dp_entry *dp_find(dp *d, const uint64_t *key, int k, int insert)
{
    int w = d->u->w, len = (k + 1) * w;
    if (insert && 2 * (d->n + 1) > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        dp_entry *t = calloc(cap, sizeof *t);
        if (!t) return NULL;
        for (size_t i = 0; i < d->cap; i++) {
            if (!d->tab[i].key) continue;
            size_t h = bs_hash(d->tab[i].key, (d->tab[i].k + 1) * w, (uint64_t)d->tab[i].k) & (cap - 1);
            while (t[h].key) h = (h + 1) & (cap - 1);
            t[h] = d->tab[i];
        }
        free(d->tab);
        d->tab = t;
        d->cap = cap;
    }
    if (!d->cap) return NULL;
    size_t h = bs_hash(key, len, (uint64_t)k) & (d->cap - 1);
    while (d->tab[h].key) {
        if (d->tab[h].k == k && memcmp(d->tab[h].key, key, (size_t)len * sizeof *key) == 0) return &d->tab[h];
        h = (h + 1) & (d->cap - 1);
    }
    if (!insert) return NULL;
    d->tab[h].key = malloc((size_t)len * sizeof *key);
    if (!d->tab[h].key) return NULL;
    memcpy(d->tab[h].key, key, (size_t)len * sizeof *key);
    d->tab[h].k = k;
    d->tab[h].cost = INFINITY;
    d->n++;
    return &d->tab[h];
}

static void dp_release(dp *d)
{
    for (size_t i = 0; i < d->cap; i++) {
        free(d->tab[i].key);
        free(d->tab[i].groups);
    }
    free(d->tab);
}

static double group_cost(dp *d, const uint64_t *set)
{
    ps_group_eval ev;
    ps_status st = eval_units(d->fs, d->u, set, &ev);
    if (st) {
        d->err = st;
        return INFINITY;
    }
    return ev.legal ? ev.cost : INFINITY;
}

/* F(G): the cheapest grouping of G's groups and every unit not done, where
 * G's groups grow only by their successors (Alg. 1). act: k groups (w words
 * each, sorted); done: units of finalized groups. A unit joins a group only
 * once all its producers are in that group or finalized, which keeps the
 * groups' graph acyclic. */
static const dp_entry *dp_solve(dp *d, const uint64_t *act_in, int k, const uint64_t *done)
{
    const units *u = d->u;
    int w = u->w;
    uint64_t *key = malloc((size_t)(k + 1) * (size_t)w * sizeof *key);
    if (!key) {
        d->err = PS_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    memcpy(key, act_in, (size_t)k * (size_t)w * sizeof *key);
    qsort_r(key, (size_t)k, (size_t)w * sizeof *key, cmp_sets, &w);
    memcpy(key + (size_t)k * w, done, (size_t)w * sizeof *key);
    dp_entry *e = dp_find(d, key, k, 0);
    if (e) {
        free(key);
        return e;
    }
    if (++d->states > PS_DP_MAX_STATES) {
        d->aborted = 1;
        free(key);
        return NULL;
    }
    double best = INFINITY;
    int best_n = 0;
    uint64_t *best_groups = NULL;
    uint64_t *assigned = calloc((size_t)w, sizeof *assigned);
    uint64_t *trial = malloc(((size_t)k + 1) * (size_t)w * sizeof *trial);
    if (!assigned || !trial) {
        d->err = PS_ERR_OUT_OF_MEMORY;
        goto out;
    }
    for (int i = 0; i < w; i++) {
        assigned[i] = done[i];
        for (int g = 0; g < k; g++) assigned[i] |= key[(size_t)g * w + i];
    }
    /* Case I: grow one group by one of its successors. */
    for (int g = 0; g < k && !d->aborted && !d->err; g++) {
        const uint64_t *H = key + (size_t)g * w;
        if (bs_count(H, w) >= d->limit) continue;
        for (int s = 0; s < u->n && !d->aborted && !d->err; s++) {
            if (bs_get(assigned, s)) continue;
            int is_succ = 0;
            for (int i = 0; i < w; i++) is_succ |= (u->pred[(size_t)s * w + i] & H[i]) != 0;
            if (!is_succ) continue;
            int ready = 1;
            for (int i = 0; i < w; i++) ready &= (u->pred[(size_t)s * w + i] & ~(H[i] | done[i])) == 0;
            if (!ready) continue;
            memcpy(trial, key, (size_t)k * (size_t)w * sizeof *trial);
            bs_set(trial + (size_t)g * w, s);
            if (!isfinite(group_cost(d, trial + (size_t)g * w))) continue;
            const dp_entry *r = dp_solve(d, trial, k, done);
            if (!r || !(r->cost < best)) continue;
            best = r->cost;
            free(best_groups);
            best_n = r->n_groups;
            best_groups = malloc((size_t)best_n * (size_t)w * sizeof *best_groups);
            if (!best_groups) {
                d->err = PS_ERR_OUT_OF_MEMORY;
                break;
            }
            memcpy(best_groups, r->groups, (size_t)best_n * (size_t)w * sizeof *best_groups);
        }
    }
    /* Case II: finalize G, start again from every partition of the units
     * now ready. */
    if (!d->aborted && !d->err) {
        double fixed = 0;
        for (int g = 0; g < k; g++) fixed += group_cost(d, key + (size_t)g * w);
        int ready[64], nr = 0;
        for (int s = 0; s < u->n && nr < 64; s++) {
            if (bs_get(assigned, s)) continue;
            if (bs_subset(u->pred + (size_t)s * w, assigned, w)) ready[nr++] = s;
        }
        if (nr == 0) {
            if (fixed < best) {
                best = fixed;
                free(best_groups);
                best_n = k;
                best_groups = malloc(((size_t)k + 1) * (size_t)w * sizeof *best_groups);
                if (!best_groups) d->err = PS_ERR_OUT_OF_MEMORY;
                else memcpy(best_groups, key, (size_t)k * (size_t)w * sizeof *best_groups);
            }
        } else if (isfinite(fixed)) {
            int all = nr <= PS_DP_MAX_PARTITION;
            int a[64] = {0}, mx[64] = {0};
            uint64_t *blocks = calloc((size_t)nr * (size_t)w, sizeof *blocks);
            if (!blocks) d->err = PS_ERR_OUT_OF_MEMORY;
            if (!all)
                for (int i = 0; i < nr; i++) a[i] = i;
            for (int more = blocks != NULL; more && !d->aborted && !d->err;) {
                int nb = 0;
                for (int i = 0; i < nr; i++) nb = a[i] + 1 > nb ? a[i] + 1 : nb;
                memset(blocks, 0, (size_t)nr * (size_t)w * sizeof *blocks);
                for (int i = 0; i < nr; i++) bs_set(blocks + (size_t)a[i] * w, ready[i]);
                int ok = 1;
                for (int b = 0; b < nb && ok; b++) ok = isfinite(group_cost(d, blocks + (size_t)b * w));
                if (ok) {
                    const dp_entry *r = dp_solve(d, blocks, nb, assigned);
                    if (r && fixed + r->cost < best) {
                        best = fixed + r->cost;
                        free(best_groups);
                        best_n = k + r->n_groups;
                        best_groups = malloc((size_t)best_n * (size_t)w * sizeof *best_groups);
                        if (!best_groups) {
                            d->err = PS_ERR_OUT_OF_MEMORY;
                            break;
                        }
                        memcpy(best_groups, key, (size_t)k * (size_t)w * sizeof *best_groups);
                        memcpy(best_groups + (size_t)k * w, r->groups, (size_t)r->n_groups * (size_t)w * sizeof *best_groups);
                    }
                }
                if (!all) break;
                /* Next restricted growth string: a[i] <= max(a[0..i-1]) + 1. */
                int i = nr - 1;
                for (int j = 1; j < nr; j++) mx[j] = mx[j - 1] > a[j - 1] ? mx[j - 1] : a[j - 1];
                while (i > 0 && a[i] > mx[i]) i--;
                if (i == 0) {
                    more = 0;
                } else {
                    a[i]++;
                    for (int j = i + 1; j < nr; j++) a[j] = 0;
                }
            }
            free(blocks);
        }
    }
out:
    free(assigned);
    free(trial);
    if (d->aborted || d->err) {
        free(best_groups);
        free(key);
        return NULL;
    }
    e = dp_find(d, key, k, 1);
    free(key);
    if (!e) {
        free(best_groups);
        d->err = PS_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    e->cost = best;
    e->n_groups = best_n;
    e->groups = best_groups;
    return e;
}

/* ------------------------------------------------------------- groupings */

/* Groups (unit bitsets) -> stage_unit of the next pass / the result. */
static void apply_groups(const units *u, const uint64_t *groups, int ng, int n_stages, int *stage_group)
{
    for (int s = 0; s < n_stages; s++) {
        int un = u->stage_unit[s];
        stage_group[s] = -1;
        if (un < 0) continue;
        for (int g = 0; g < ng; g++)
            if (bs_get(groups + (size_t)g * u->w, un)) stage_group[s] = g;
    }
}

/* Stages of group g into m; returns their number. */
static int members(const int *stage_group, int n, int g, int *m)
{
    int k = 0;
    for (int s = 0; s < n; s++)
        if (stage_group[s] == g) m[k++] = s;
    return k;
}

/* PolyMage's greedy grouping: a group merges with its only child group
 * where the merged group is legal, largest groups first. by_cost: only
 * where the model's cost of the merged group is below the two apart (what
 * the DP falls back to where its states run out: maximal fusion of a wide
 * network body -- GoogLeNet's 79 stages in one group of 1 x 1 tiles --
 * recomputes most of it); else maximal fusion (the papers' baseline). */
static ps_status greedy(ps_fusion_state *fs, int by_cost, int *stage_group, int *ng_out)
{
    const ps_pipeline *p = fs->p;
    int n = p->n, ng = 0;
    for (int s = 0; s < n; s++) stage_group[s] = ps_pstage_computed(&p->st[s]) ? ng++ : -1;
    int *size = calloc((size_t)(ng + 1), sizeof *size), *m = malloc(((size_t)n + 1) * sizeof *m);
    if (!size || !m) {
        free(size);
        free(m);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int g = 0; g < ng; g++) size[g] = 0;
        for (int s = 0; s < n; s++)
            if (stage_group[s] >= 0) size[stage_group[s]]++;
        /* Largest groups first (PolyMage's order). */
        for (int pass = 0; pass < ng && !changed; pass++) {
            int x = -1;
            for (int g = 0; g < ng; g++)
                if (size[g] > 0 && (x < 0 || size[g] > size[x])) x = g;
            if (x < 0) break;
            int child = -1, single = 1;
            for (int s = 0; s < n && single; s++) {
                if (stage_group[s] != x) continue;
                for (int c = 0; c < p->st[s].n_cons; c++) {
                    int y = stage_group[p->st[s].cons[c]];
                    if (y == x) continue;
                    if (child < 0) child = y;
                    else if (child != y) single = 0;
                }
            }
            size[x] = -size[x] - 1; /* visited in this pass */
            if (!single || child < 0) continue;
            int k = 0;
            for (int s = 0; s < n; s++)
                if (stage_group[s] == x || stage_group[s] == child) m[k++] = s;
            ps_group_eval ev, ex, ec;
            ps_status st = ps_group_evaluate(fs, m, k, &ev);
            if (!st && ev.legal && by_cost) st = ps_group_evaluate(fs, m, members(stage_group, n, x, m), &ex);
            if (!st && ev.legal && by_cost) st = ps_group_evaluate(fs, m, members(stage_group, n, child, m), &ec);
            if (st) {
                free(size);
                free(m);
                return st;
            }
            if (!ev.legal || (by_cost && !(ev.cost < ex.cost + ec.cost))) continue;
            for (int s = 0; s < n; s++)
                if (stage_group[s] == x) stage_group[s] = child;
            changed = 1;
        }
        for (int g = 0; g < ng; g++)
            if (size[g] < 0) size[g] = -size[g] - 1;
    }
    free(size);
    free(m);
    *ng_out = ng;
    return PS_SUCCESS;
}

/* Renumbers groups 0..n-1 in an order where producers' groups come first;
 * PS_ERR_INVALID_ARG when the groups' graph has a cycle. */
static ps_status order_groups(const ps_pipeline *p, int *stage_group, int ng, int *n_out)
{
    int n = p->n;
    int *map = malloc(((size_t)ng + 1) * sizeof *map), *indeg = calloc((size_t)ng + 1, sizeof *indeg);
    char *adj = calloc((size_t)ng * (size_t)ng + 1, 1);
    int *order = malloc(((size_t)ng + 1) * sizeof *order);
    if (!map || !indeg || !adj || !order) {
        free(map);
        free(indeg);
        free(adj);
        free(order);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    for (int g = 0; g < ng; g++) map[g] = -1;
    int used = 0;
    for (int s = 0; s < n; s++)
        if (stage_group[s] >= 0 && map[stage_group[s]] < 0) map[stage_group[s]] = used++;
    for (int s = 0; s < n; s++)
        if (stage_group[s] >= 0) stage_group[s] = map[stage_group[s]];
    for (int s = 0; s < n; s++)
        for (int j = 0; j < p->st[s].n_in; j++) {
            int a = stage_group[p->st[s].in[j]], b = stage_group[s];
            if (a < 0 || b < 0 || a == b || adj[(size_t)a * used + b]) continue;
            adj[(size_t)a * used + b] = 1;
            indeg[b]++;
        }
    int no = 0;
    for (int g = 0; g < used; g++)
        if (!indeg[g]) order[no++] = g;
    for (int i = 0; i < no; i++)
        for (int b = 0; b < used; b++)
            if (adj[(size_t)order[i] * used + b] && --indeg[b] == 0) order[no++] = b;
    ps_status st = PS_SUCCESS;
    if (no < used) {
        st = ps_error(PS_ERR_INVALID_ARG, "ps_graph_plan_create: the grouping makes groups depend on each other in a cycle");
    } else {
        for (int i = 0; i < used; i++) map[order[i]] = i;
        for (int s = 0; s < n; s++)
            if (stage_group[s] >= 0) stage_group[s] = map[stage_group[s]];
        *n_out = used;
    }
    free(map);
    free(indeg);
    free(adj);
    free(order);
    return st;
}

static ps_status dp_grouping(ps_fusion_state *fs, int group_limit, int *stage_group, int *ng, long *states, int *gave_up)
{
    const ps_pipeline *p = fs->p;
    int n = p->n, nu = 0;
    int *stage_unit = malloc(((size_t)n + 1) * sizeof *stage_unit);
    if (!stage_unit) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    for (int s = 0; s < n; s++) stage_unit[s] = ps_pstage_computed(&p->st[s]) ? nu++ : -1;
    int limit = group_limit > 0 ? group_limit : nu <= PS_DP_UNBOUNDED_UNITS ? nu + 1 : PS_DP_FIRST_LIMIT;
    int covered = limit; /* largest group a pass may have formed, in stages */
    ps_status st = PS_SUCCESS;
    *states = 0;
    *gave_up = 0;
    for (;;) {
        units u = {0};
        if (!units_build(p, stage_unit, nu, &u)) {
            units_release(&u);
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
            break;
        }
        dp d = {.fs = fs, .u = &u, .limit = limit};
        uint64_t *none = calloc((size_t)u.w + 1, sizeof *none);
        const dp_entry *r = none ? dp_solve(&d, none, 0, none) : NULL;
        *states += d.states;
        if (!r || !isfinite(r->cost)) {
            st = d.err ? ps_error(d.err, "ps_graph_plan_create: %s during grouping", ps_status_str(d.err)) : PS_SUCCESS;
            if (!d.err) *gave_up = 1;
            free(none);
            dp_release(&d);
            units_release(&u);
            break;
        }
        int *next = malloc(((size_t)n + 1) * sizeof *next);
        if (!next) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        } else {
            apply_groups(&u, r->groups, r->n_groups, n, next);
            memcpy(stage_unit, next, (size_t)n * sizeof *next);
            nu = r->n_groups;
        }
        free(next);
        free(none);
        dp_release(&d);
        units_release(&u);
        if (st || covered >= n) break;
        /* Alg. 5: the next pass merges up to two of the previous groups. */
        limit = 2;
        covered *= 2;
    }
    if (!st && !*gave_up) {
        memcpy(stage_group, stage_unit, (size_t)n * sizeof *stage_group);
        *ng = nu;
    }
    free(stage_unit);
    return st;
}

ps_status ps_fuse(ps_fusion_state *fs, ps_fusion mode, const int *group_in, int group_limit, int *group_of,
                  int *n_groups, double *search_ms, long *states)
{
    const ps_pipeline *p = fs->p;
    double t0 = ps_now_ms();
    int ng = 0;
    ps_status st = PS_SUCCESS;
    *states = 0;
    switch (mode) {
    case PS_FUSION_NONE:
        for (int s = 0; s < p->n; s++) group_of[s] = ps_pstage_computed(&p->st[s]) ? ng++ : -1;
        break;
    case PS_FUSION_FIXED: {
        int *ids = malloc(((size_t)p->n + 1) * sizeof *ids);
        if (!ids) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        for (int s = 0; s < p->n; s++) {
            group_of[s] = -1;
            if (!ps_pstage_computed(&p->st[s])) continue;
            int g = 0;
            while (g < ng && ids[g] != group_in[s]) g++;
            if (g == ng) ids[ng++] = group_in[s];
            group_of[s] = g;
        }
        free(ids);
        /* Every group must be tileable. */
        int *m = malloc(((size_t)p->n + 1) * sizeof *m);
        if (!m) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        for (int g = 0; g < ng && !st; g++) {
            int k = 0;
            for (int s = 0; s < p->n; s++)
                if (group_of[s] == g) m[k++] = s;
            ps_group_eval ev;
            st = ps_group_evaluate(fs, m, k, &ev);
            if (!st && !ev.legal)
                st = ps_error(PS_ERR_INVALID_ARG, "ps_graph_plan_create: fixed group %d (stages \"%s\"%s) cannot be fused: %s",
                              group_in[m[0]], p->st[m[0]].name, k > 1 ? " and others" : "", ev.why);
        }
        free(m);
        break;
    }
    case PS_FUSION_GREEDY: st = greedy(fs, 0, group_of, &ng); break;
    case PS_FUSION_DP:
    default: {
        int gave_up = 0;
        st = dp_grouping(fs, group_limit, group_of, &ng, states, &gave_up);
        if (!st && gave_up) st = greedy(fs, 1, group_of, &ng);
        break;
    }
    }
    if (!st) st = order_groups(p, group_of, ng, n_groups);
    *search_ms = ps_now_ms() - t0;
    return st;
}
