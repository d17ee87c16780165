/* The closed-form working-set engine.
 *
 * Sets of instances are handled as "spans": the levels above p fixed, level
 * p in an index range, the levels below free. The instances of a span are
 * those of a box of element coordinates (a product of ranges) that pass the
 * filter-tap validity test, because a free level covers its parent range.
 * A lexicographic interval of instances is a union of at most 2L+3 disjoint
 * spans (L levels), so everything Algorithm 1 needs reduces to boxes:
 *
 *  - the footprint of a box in an array is a product of per-dimension sets
 *    (ranges, or for the coupled (oh, r) and (ow, s) pairs, projections and
 *    strided images computed in O(R) / O(S));
 *  - a working set is the size of a union of such products, counted exactly
 *    by removing contained products, merging products that differ in one
 *    dimension, and splitting the rest along the dimensions into classes of
 *    coordinates covered by the same products;
 *  - "the first (last) instance of an interval that accesses element e" is
 *    found by descending the levels, testing an exact box predicate on each
 *    candidate index (and jumping over indices whose coordinates cannot
 *    reach e).
 *
 * No iteration space is ever enumerated; the cost is polynomial in the
 * number of levels and the filter size. */
#include "analysis/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* Floor / ceiling division by b > 0 for any sign of a. */
static int64_t fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t cdiv(int64_t a, int64_t b) { return -fdiv(-a, b); }

/* Spans of one lexicographic interval, and products counted at once. */
/* Spans of one interval: a point or subtree at each end, one per level on
 * either side, the middle, and one per segment where a range of segments
 * must be split (three places at most). */
static int max_spans(const psa_model *m)
{
    return 2 * m->nlev + 6 + 3 * (int)(m->seg_maxp > 1 ? m->seg_maxp : 1);
}

/* ================================================================== boxes */

typedef struct psa_box {
    int64_t lo[PSA_NCOORD], hi[PSA_NCOORD]; /* half-open ranges */
} psa_box;

static void box_full(const psa_model *m, psa_box *b)
{
    for (int v = 0; v < PSA_NCOORD; v++) {
        b->lo[v] = 0;
        b->hi[v] = m->ext[v];
    }
}

/* Index of the first breakpoint > x. */
static int brk_upper(const psa_breaks *bk, int64_t x)
{
    int lo = 0, hi = bk->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (bk->v[mid] > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Iterations of level l within box b. */
static int64_t level_trip(const psa_model *m, int l, const psa_box *b)
{
    const psa_level *lv = &m->lev[l];
    const int64_t lo = b->lo[lv->coord], hi = b->hi[lv->coord];
    if (lo >= hi) return 0;
    if (lv->segs) {
        const int64_t blk = b->lo[PSA_COW] / m->seg_n;
        return b->lo[PSA_COW] < b->hi[PSA_COW] ? m->seg_off[blk + 1] - m->seg_off[blk] : 0;
    }
    if (lv->brk < 0) return (hi - lo + lv->g - 1) / lv->g;
    const psa_breaks *bk = &m->brk[lv->brk];
    int j0 = brk_upper(bk, lo), j1 = j0;
    while (j1 < bk->n && bk->v[j1] < hi) j1++;
    return (int64_t)(j1 - j0) + 1;
}

/* Narrows b to indices [i0, i1] of level l (i1 may be PSA_INF); 0 if empty. */
static int level_apply(const psa_model *m, int l, psa_box *b, int64_t i0, int64_t i1)
{
    const psa_level *lv = &m->lev[l];
    const int v = lv->coord;
    const int64_t lo = b->lo[v], hi = b->hi[v];
    if (lo >= hi || i0 < 0 || i0 > i1) return 0;
    int64_t nlo, nhi;
    if (lv->segs) {
        /* One segment, or all of them (the parent range). Callers never ask
         * for other ranges: segments are not in increasing s order. */
        const int64_t trip = level_trip(m, l, b);
        if (i0 >= trip) return 0;
        if (i0 == 0 && i1 >= trip - 1) return 1;
        if (i0 != i1) return 0;
        const int64_t j = m->seg_off[b->lo[PSA_COW] / m->seg_n] + i0;
        nlo = max64(lo, m->seg_slo[j]);
        nhi = min64(hi, m->seg_shi[j]);
        if (nlo >= nhi) return 0;
    } else if (lv->brk < 0) {
        const int64_t trip = (hi - lo + lv->g - 1) / lv->g;
        if (i0 >= trip) return 0;
        nlo = lo + i0 * lv->g;
        nhi = i1 >= trip - 1 ? hi : min64(hi, lo + (i1 + 1) * lv->g);
    } else {
        const psa_breaks *bk = &m->brk[lv->brk];
        int j0 = brk_upper(bk, lo), j1 = j0;
        while (j1 < bk->n && bk->v[j1] < hi) j1++;
        const int64_t cnt = j1 - j0; /* pieces: cnt + 1 */
        if (i0 > cnt) return 0;
        nlo = i0 == 0 ? lo : bk->v[j0 + i0 - 1];
        nhi = i1 >= cnt ? hi : bk->v[j0 + i1];
    }
    b->lo[v] = nlo;
    b->hi[v] = nhi;
    return 1;
}

/* Index of coordinate value x at level l inside box b (x within the range). */
static int64_t level_index_of(const psa_model *m, int l, const psa_box *b, int64_t x)
{
    const psa_level *lv = &m->lev[l];
    const int64_t lo = b->lo[lv->coord];
    if (lv->segs) {
        const int64_t o = m->seg_off[b->lo[PSA_COW] / m->seg_n], e = m->seg_off[b->lo[PSA_COW] / m->seg_n + 1];
        for (int64_t j = o; j < e; j++)
            if (x >= m->seg_slo[j] && x < m->seg_shi[j]) return j - o;
        return 0;
    }
    if (lv->brk < 0) return (x - lo) / lv->g;
    const psa_breaks *bk = &m->brk[lv->brk];
    return brk_upper(bk, x) - brk_upper(bk, lo);
}

/* ----------------------------------------------- filter-tap validity */

/* Output rows oh for which filter row r is inside the image: [*a, *b]. */
static void valid_oh_for_r(const psa_model *m, int64_t r, int64_t *a, int64_t *b)
{
    *a = cdiv(m->pt - r * m->dh, m->sh);
    *b = fdiv(m->H - 1 + m->pt - r * m->dh, m->sh);
}
static void valid_ow_for_s(const psa_model *m, int64_t s, int64_t *a, int64_t *b)
{
    *a = cdiv(m->pl - s * m->dw, m->sw);
    *b = fdiv(m->W - 1 + m->pl - s * m->dw, m->sw);
}
/* Filter rows r valid for output row oh: [*a, *b]. */
static void valid_r_for_oh(const psa_model *m, int64_t oh, int64_t *a, int64_t *b)
{
    *a = cdiv(m->pt - oh * m->sh, m->dh);
    *b = fdiv(m->H - 1 + m->pt - oh * m->sh, m->dh);
}
static void valid_s_for_ow(const psa_model *m, int64_t ow, int64_t *a, int64_t *b)
{
    *a = cdiv(m->pl - ow * m->sw, m->dw);
    *b = fdiv(m->W - 1 + m->pl - ow * m->sw, m->dw);
}

static int box_nonempty(const psa_box *b)
{
    for (int v = 0; v < PSA_NCOORD; v++)
        if (b->lo[v] >= b->hi[v]) return 0;
    return 1;
}

static int rows_ok(const psa_model *m, const psa_box *b)
{
    for (int64_t r = b->lo[PSA_CR]; r < b->hi[PSA_CR]; r++) {
        int64_t a, c;
        valid_oh_for_r(m, r, &a, &c);
        if (max64(a, b->lo[PSA_COH]) <= min64(c, b->hi[PSA_COH] - 1)) return 1;
    }
    return 0;
}
static int cols_ok(const psa_model *m, const psa_box *b)
{
    for (int64_t s = b->lo[PSA_CS]; s < b->hi[PSA_CS]; s++) {
        int64_t a, c;
        valid_ow_for_s(m, s, &a, &c);
        if (max64(a, b->lo[PSA_COW]) <= min64(c, b->hi[PSA_COW] - 1)) return 1;
    }
    return 0;
}
/* The box holds at least one instance. */
static int box_has_instance(const psa_model *m, const psa_box *b)
{
    return box_nonempty(b) && rows_ok(m, b) && cols_ok(m, b);
}

/* ============================================================== workspace */

/* Word arena addressed by offsets (it may move when it grows); allocation
 * is stack-like (mark / release). On allocation failure `oom` is set and
 * the reserve at offset 0 is handed out, so callers need no checks; the
 * results are then discarded. */
typedef struct psa_span psa_span;
typedef struct psa_spans psa_spans;
typedef struct psa_prod psa_prod;

typedef struct psa_ws {
    const psa_model *m;
    uint64_t *w;
    size_t cap_words, used, reserve;
    int oom;
    int internal;        /* a span list overflowed (cannot happen: max_spans) */
    int64_t *tlo, *thi;  /* interval scratch, one entry per filter row / column */
    int cap;             /* max_spans(m): spans of an interval, products of a count */
    psa_spans *sp;       /* ws_count's / first_reused's spans and products */
    psa_spans *sps;      /* search_interval's spans */
    psa_prod *all, *P;
} psa_ws;

static size_t ws_alloc(psa_ws *s, size_t n)
{
    if (!s->oom && s->used + n > s->cap_words) {
        size_t cap = s->cap_words * 2;
        while (cap < s->used + n) cap *= 2;
        uint64_t *w = realloc(s->w, cap * sizeof *w);
        if (w) {
            s->w = w;
            s->cap_words = cap;
        } else {
            s->oom = 1;
        }
    }
    if (s->oom) {
        /* Out of memory: small requests (bitsets, interval lists) get the
         * reserve at offset 0 so that their callers need no checks; callers
         * of larger ones (count_rec) check `oom`. Results are discarded. */
        memset(s->w, 0, (n < s->reserve ? n : s->reserve) * sizeof *s->w);
        return 0;
    }
    size_t off = s->used;
    s->used += n;
    memset(s->w + off, 0, n * sizeof *s->w);
    return off;
}

static int64_t bs_words(int64_t U) { return (U + 63) / 64; }

static void bs_set_range(uint64_t *b, int64_t a, int64_t e)
{
    while (a < e) {
        int64_t wi = a / 64, bit = a % 64;
        int64_t n = min64(64 - bit, e - a);
        uint64_t mask = n == 64 ? ~0ull : ((1ull << n) - 1) << bit;
        b[wi] |= mask;
        a += n;
    }
}

static int bs_test(const uint64_t *b, int64_t x) { return (int)((b[x / 64] >> (x % 64)) & 1u); }

static int64_t bs_count(const uint64_t *b, int64_t nw)
{
    int64_t c = 0;
    for (int64_t i = 0; i < nw; i++) c += __builtin_popcountll(b[i]);
    return c;
}

/* ================================================================== isets */

/* A finite set of integers: the interval [lo, hi) when off < 0, else a
 * bitset at ws->w + off over the dimension's universe with hull [lo, hi).
 * Bitsets are never contiguous (those are stored as intervals). */
typedef struct psa_iset {
    int64_t lo, hi, cnt, off;
} psa_iset;

struct psa_prod {
    psa_iset d[4];
};

static psa_iset iset_interval(int64_t lo, int64_t hi)
{
    psa_iset s = {lo, hi, hi > lo ? hi - lo : 0, -1};
    if (hi <= lo) s.lo = s.hi = 0;
    return s;
}

/* Finalizes a bitset at `off` (universe U): hull, count, or an interval. */
static psa_iset iset_from_bits(psa_ws *ws, size_t off, int64_t U)
{
    const int64_t nw = bs_words(U);
    const uint64_t *b = ws->w + off;
    int64_t cnt = bs_count(b, nw);
    if (cnt == 0) return iset_interval(0, 0);
    int64_t lo = 0, hi = 0;
    for (int64_t i = 0; i < nw; i++)
        if (b[i]) { lo = i * 64 + __builtin_ctzll(b[i]); break; }
    for (int64_t i = nw - 1; i >= 0; i--)
        if (b[i]) { hi = i * 64 + 64 - __builtin_clzll(b[i]); break; }
    if (hi - lo == cnt) return iset_interval(lo, hi);
    psa_iset s = {lo, hi, cnt, (int64_t)off};
    return s;
}

static int iset_contains(const psa_ws *ws, const psa_iset *s, int64_t x)
{
    if (x < s->lo || x >= s->hi) return 0;
    return s->off < 0 ? 1 : bs_test(ws->w + s->off, x);
}

/* a ⊆ b */
static int iset_subset(const psa_ws *ws, const psa_iset *a, const psa_iset *b)
{
    if (a->cnt == 0) return 1;
    if (a->lo < b->lo || a->hi > b->hi || a->cnt > b->cnt) return 0;
    if (b->off < 0) return 1;
    if (a->off < 0) { /* contiguous a inside a non-contiguous b: only if b has all of it */
        for (int64_t x = a->lo; x < a->hi; x++)
            if (!bs_test(ws->w + b->off, x)) return 0;
        return 1;
    }
    const uint64_t *pa = ws->w + a->off, *pb = ws->w + b->off;
    for (int64_t i = a->lo / 64; i <= (a->hi - 1) / 64; i++)
        if (pa[i] & ~pb[i]) return 0;
    return 1;
}

static int iset_equal(const psa_ws *ws, const psa_iset *a, const psa_iset *b)
{
    if (a->cnt != b->cnt || a->lo != b->lo || a->hi != b->hi) return 0;
    if ((a->off < 0) != (b->off < 0)) return 0;
    if (a->off < 0) return 1;
    const uint64_t *pa = ws->w + a->off, *pb = ws->w + b->off;
    for (int64_t i = a->lo / 64; i <= (a->hi - 1) / 64; i++)
        if (pa[i] != pb[i]) return 0;
    return 1;
}

static int iset_intersects(const psa_ws *ws, const psa_iset *a, const psa_iset *b)
{
    int64_t lo = max64(a->lo, b->lo), hi = min64(a->hi, b->hi);
    if (lo >= hi) return 0;
    if (a->off < 0 && b->off < 0) return 1;
    if (a->off >= 0 && b->off >= 0) {
        const uint64_t *pa = ws->w + a->off, *pb = ws->w + b->off;
        for (int64_t i = lo / 64; i <= (hi - 1) / 64; i++)
            if (pa[i] & pb[i]) return 1;
        return 0;
    }
    const psa_iset *bits = a->off >= 0 ? a : b;
    for (int64_t x = lo; x < hi; x++)
        if (bs_test(ws->w + bits->off, x)) return 1;
    return 0;
}

/* Writes s into the bitset at off (universe already allocated). */
static void iset_or_into(psa_ws *ws, size_t off, const psa_iset *s)
{
    if (s->cnt == 0) return;
    if (s->off < 0) {
        bs_set_range(ws->w + off, s->lo, s->hi);
    } else {
        for (int64_t i = s->lo / 64; i <= (s->hi - 1) / 64; i++) ws->w[off + i] |= ws->w[s->off + i];
    }
}

/* a ∪ b into *out; 0 if it cannot be represented (a dimension that only
 * holds intervals, and a gap between them). */
static int iset_union(psa_ws *ws, const psa_iset *a, const psa_iset *b, int64_t U, int bits_ok, psa_iset *out)
{
    if (a->off < 0 && b->off < 0 && max64(a->lo, b->lo) <= min64(a->hi, b->hi)) {
        *out = iset_interval(min64(a->lo, b->lo), max64(a->hi, b->hi));
        return 1;
    }
    if (!bits_ok) return 0;
    size_t off = ws_alloc(ws, (size_t)bs_words(U));
    iset_or_into(ws, off, a);
    iset_or_into(ws, off, b);
    *out = iset_from_bits(ws, off, U);
    return 1;
}

/* Union of the n intervals [tlo[i], thi[i]) (scratch arrays, any order). */
static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static psa_iset iset_union_intervals(psa_ws *ws, int64_t *lo, int64_t *hi, int64_t n, int64_t U)
{
    if (n == 0) return iset_interval(0, 0);
    /* Few intervals: insertion sort by lo (keeping pairs together). */
    for (int64_t i = 1; i < n; i++) {
        int64_t a = lo[i], b = hi[i], j = i;
        while (j > 0 && lo[j - 1] > a) {
            lo[j] = lo[j - 1];
            hi[j] = hi[j - 1];
            j--;
        }
        lo[j] = a;
        hi[j] = b;
    }
    int64_t clo = lo[0], chi = hi[0];
    int single = 1;
    for (int64_t i = 1; i < n; i++) {
        if (lo[i] > chi) {
            single = 0;
            break;
        }
        chi = max64(chi, hi[i]);
    }
    if (single) return iset_interval(clo, chi);
    size_t off = ws_alloc(ws, (size_t)bs_words(U));
    for (int64_t i = 0; i < n; i++) bs_set_range(ws->w + off, lo[i], hi[i]);
    return iset_from_bits(ws, off, U);
}

/* ============================================================ footprints */

/* Dimensions whose footprint sets may be non-contiguous. */
static int dim_bits_ok(int arr, int d)
{
    return arr == PSA_WT ? d >= 2 : (d == 1 || d == 2);
}

/* Valid (oh, r) pairs of a box: for each r of the box, the output rows
 * [a, b] it is valid for. Returns the number of r with a nonempty range. */
typedef struct psa_pairs {
    int64_t n;          /* entries */
    int64_t *x, *a, *b; /* filter index, [a, b] range of output index */
} psa_pairs;

static void box_pairs(const psa_model *m, const psa_box *bx, int rows, psa_pairs *p)
{
    p->n = 0;
    const int fc = rows ? PSA_CR : PSA_CS, oc = rows ? PSA_COH : PSA_COW;
    for (int64_t f = bx->lo[fc]; f < bx->hi[fc]; f++) {
        int64_t a, b;
        if (rows) valid_oh_for_r(m, f, &a, &b);
        else valid_ow_for_s(m, f, &a, &b);
        a = max64(a, bx->lo[oc]);
        b = min64(b, bx->hi[oc] - 1);
        if (a > b) continue;
        p->x[p->n] = f;
        p->a[p->n] = a;
        p->b[p->n] = b;
        p->n++;
    }
}

/* Scratch for box_fp: pair lists sized for the filter extents. */
typedef struct psa_fpscratch {
    psa_pairs rows, cols;
} psa_fpscratch;

/* Footprints of box bx in all arrays (out[arr]); 0 if it holds no instance. */
static int box_fp(psa_ws *ws, psa_fpscratch *sc, const psa_box *bx, psa_prod out[PSA_NARR], int only_arr)
{
    const psa_model *m = ws->m;
    if (!box_nonempty(bx)) return 0;
    box_pairs(m, bx, 1, &sc->rows);
    if (sc->rows.n == 0) return 0;
    box_pairs(m, bx, 0, &sc->cols);
    if (sc->cols.n == 0) return 0;
    for (int arr = 0; arr < PSA_NARR; arr++) {
        if (only_arr >= 0 && arr != only_arr) continue;
        psa_prod *P = &out[arr];
        if (arr == PSA_WT) {
            P->d[0] = iset_interval(bx->lo[PSA_CK], bx->hi[PSA_CK]);
            P->d[1] = iset_interval(bx->lo[PSA_CC], bx->hi[PSA_CC]);
            for (int side = 0; side < 2; side++) {
                const psa_pairs *pp = side ? &sc->cols : &sc->rows;
                for (int64_t i = 0; i < pp->n; i++) {
                    ws->tlo[i] = pp->x[i];
                    ws->thi[i] = pp->x[i] + 1;
                }
                P->d[2 + side] = iset_union_intervals(ws, ws->tlo, ws->thi, pp->n, m->arr_ext[arr][2 + side]);
            }
        } else if (arr == PSA_OUT) {
            P->d[0] = iset_interval(bx->lo[PSA_CN], bx->hi[PSA_CN]);
            P->d[3] = iset_interval(bx->lo[PSA_CK], bx->hi[PSA_CK]);
            for (int side = 0; side < 2; side++) {
                const psa_pairs *pp = side ? &sc->cols : &sc->rows;
                for (int64_t i = 0; i < pp->n; i++) {
                    ws->tlo[i] = pp->a[i];
                    ws->thi[i] = pp->b[i] + 1;
                }
                P->d[1 + side] = iset_union_intervals(ws, ws->tlo, ws->thi, pp->n, m->arr_ext[arr][1 + side]);
            }
        } else {
            P->d[0] = iset_interval(bx->lo[PSA_CN], bx->hi[PSA_CN]);
            P->d[3] = iset_interval(bx->lo[PSA_CC], bx->hi[PSA_CC]);
            for (int side = 0; side < 2; side++) {
                const psa_pairs *pp = side ? &sc->cols : &sc->rows;
                /* Element index o*st - pad + f*dl of output o and filter f. */
                const int64_t st = side ? m->sw : m->sh;
                const int64_t dl = side ? m->dw : m->dh, pad = side ? m->pl : m->pt;
                const int64_t U = m->arr_ext[arr][1 + side];
                int strided = 0;
                for (int64_t i = 0; i < pp->n; i++) {
                    ws->tlo[i] = pp->a[i] * st - pad + pp->x[i] * dl;
                    ws->thi[i] = pp->b[i] * st - pad + pp->x[i] * dl + 1;
                    if (st > 1 && pp->b[i] > pp->a[i]) strided = 1;
                }
                if (!strided) {
                    P->d[1 + side] = iset_union_intervals(ws, ws->tlo, ws->thi, pp->n, U);
                } else {
                    size_t off = ws_alloc(ws, (size_t)bs_words(U));
                    /* The bounds in locals: stores through w may alias the
                     * pair arrays, which would reload them every element. */
                    uint64_t *restrict w = ws->w + off;
                    for (int64_t i = 0; i < pp->n; i++) {
                        const int64_t b = pp->b[i];
                        /* valid pairs index the array: 0 <= x < U */
                        for (int64_t o = pp->a[i], x = pp->a[i] * st - pad + pp->x[i] * dl; o <= b; o++, x += st)
                            w[x >> 6] |= 1ull << (x & 63);
                    }
                    P->d[1 + side] = iset_from_bits(ws, off, U);
                }
            }
        }
    }
    return 1;
}

/* ======================================================= union counting */

static int prod_subset(const psa_ws *ws, const psa_prod *a, const psa_prod *b)
{
    for (int d = 0; d < 4; d++)
        if (!iset_subset(ws, &a->d[d], &b->d[d])) return 0;
    return 1;
}

static int prod_intersects(const psa_ws *ws, const psa_prod *a, const psa_prod *b)
{
    for (int d = 0; d < 4; d++)
        if (!iset_intersects(ws, &a->d[d], &b->d[d])) return 0;
    return 1;
}

static int64_t prod_count(const psa_prod *p)
{
    int64_t c = 1;
    for (int d = 0; d < 4; d++) c *= p->d[d].cnt;
    return c;
}

/* Drops products contained in others and merges products that differ in a
 * single dimension, until nothing changes. Returns the new count. */
static int prods_reduce(psa_ws *ws, int arr, psa_prod *P, int n)
{
    const psa_model *m = ws->m;
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i == j || !prod_subset(ws, &P[i], &P[j])) continue;
                P[i] = P[--n];
                i--;
                changed = 1;
                break;
            }
        }
        for (int i = 0; i < n && !changed; i++) {
            for (int j = i + 1; j < n && !changed; j++) {
                int diff = -1, ndiff = 0;
                for (int d = 0; d < 4 && ndiff < 2; d++)
                    if (!iset_equal(ws, &P[i].d[d], &P[j].d[d])) {
                        diff = d;
                        ndiff++;
                    }
                if (ndiff != 1) continue;
                psa_iset u;
                if (!iset_union(ws, &P[i].d[diff], &P[j].d[diff], m->arr_ext[arr][diff], dim_bits_ok(arr, diff), &u))
                    continue;
                P[i].d[diff] = u;
                P[j] = P[--n];
                changed = 1;
            }
        }
    }
    return n;
}

/* Recursion order of the dimensions: the contiguous ones first. */
static const int dim_order[PSA_NARR][4] = {{0, 3, 1, 2}, {0, 1, 2, 3}, {0, 3, 1, 2}};

typedef struct psa_count_ctx {
    psa_ws *ws;
    int arr;
    const psa_prod *P;
} psa_count_ctx;

static int64_t union_one_dim(psa_count_ctx *cx, const int *list, int len, int d)
{
    psa_ws *ws = cx->ws;
    int all_iv = 1;
    for (int i = 0; i < len; i++)
        if (cx->P[list[i]].d[d].off >= 0) all_iv = 0;
    if (all_iv) {
        size_t mark = ws->used;
        size_t off = ws_alloc(ws, (size_t)len * 2);
        int64_t *lo = (int64_t *)(ws->w + off), *hi = lo + len;
        for (int i = 0; i < len; i++) {
            lo[i] = cx->P[list[i]].d[d].lo;
            hi[i] = cx->P[list[i]].d[d].hi;
        }
        for (int i = 1; i < len; i++) {
            int64_t a = lo[i], b = hi[i];
            int j = i;
            while (j > 0 && lo[j - 1] > a) {
                lo[j] = lo[j - 1];
                hi[j] = hi[j - 1];
                j--;
            }
            lo[j] = a;
            hi[j] = b;
        }
        int64_t total = 0, clo = lo[0], chi = hi[0];
        for (int i = 1; i < len; i++) {
            if (lo[i] > chi) {
                total += chi - clo;
                clo = lo[i];
                chi = hi[i];
            } else {
                chi = max64(chi, hi[i]);
            }
        }
        total += chi - clo;
        ws->used = mark;
        return total;
    }
    const int64_t U = ws->m->arr_ext[cx->arr][d];
    size_t mark = ws->used;
    size_t off = ws_alloc(ws, (size_t)bs_words(U));
    for (int i = 0; i < len; i++) iset_or_into(ws, off, &cx->P[list[i]].d[d]);
    int64_t c = bs_count(ws->w + off, bs_words(U));
    ws->used = mark;
    return c;
}

static int64_t count_rec(psa_count_ctx *cx, const int *list_in, int len, int depth)
{
    psa_ws *ws = cx->ws;
    /* The arena may move while recursing: keep the list on the stack. */
    int list[len];
    memcpy(list, list_in, (size_t)len * sizeof *list);
    const int *ord = dim_order[cx->arr];
    if (len == 1) {
        int64_t c = 1;
        for (int k = depth; k < 4; k++) c *= cx->P[list[0]].d[ord[k]].cnt;
        return c;
    }
    const int d = ord[depth];
    if (depth == 3) return union_one_dim(cx, list, len, d);

    const size_t mark = ws->used;
    const int nw = (len + 63) / 64;
    int all_iv = 1;
    int64_t hlo = INT64_MAX, hhi = INT64_MIN;
    for (int i = 0; i < len; i++) {
        const psa_iset *s = &cx->P[list[i]].d[d];
        if (s->off >= 0) all_iv = 0;
        hlo = min64(hlo, s->lo);
        hhi = max64(hhi, s->hi);
    }
    /* Atoms: (size, member mask) of coordinate classes. */
    int64_t max_atoms = all_iv ? 2 * (int64_t)len : hhi - hlo;
    size_t a_size = ws_alloc(ws, (size_t)max_atoms);
    size_t a_mask = ws_alloc(ws, (size_t)(max_atoms * nw));
    size_t eoff = all_iv ? ws_alloc(ws, (size_t)len * 2) : 0;
    if (ws->oom) return 0;
    int64_t na = 0;
    if (all_iv) {
        int64_t *E = (int64_t *)(ws->w + eoff);
        for (int i = 0; i < len; i++) {
            E[2 * i] = cx->P[list[i]].d[d].lo;
            E[2 * i + 1] = cx->P[list[i]].d[d].hi;
        }
        qsort(E, (size_t)len * 2, sizeof *E, cmp_i64);
        for (int e = 0; e + 1 < 2 * len; e++) {
            E = (int64_t *)(ws->w + eoff);
            if (E[e] == E[e + 1]) continue;
            uint64_t *mk = ws->w + a_mask + na * nw;
            int any = 0;
            for (int i = 0; i < len; i++) {
                const psa_iset *s = &cx->P[list[i]].d[d];
                if (s->lo <= E[e] && s->hi >= E[e + 1]) {
                    mk[i / 64] |= 1ull << (i % 64);
                    any = 1;
                }
            }
            if (!any) continue;
            ((int64_t *)(ws->w + a_size))[na] = E[e + 1] - E[e];
            na++;
        }
    } else {
        for (int64_t x = hlo; x < hhi; x++) {
            uint64_t *mk = ws->w + a_mask + na * nw;
            int any = 0;
            for (int i = 0; i < len; i++)
                if (iset_contains(ws, &cx->P[list[i]].d[d], x)) {
                    mk[i / 64] |= 1ull << (i % 64);
                    any = 1;
                }
            if (!any) continue;
            if (na > 0 && memcmp(mk - nw, mk, (size_t)nw * sizeof *mk) == 0) {
                ((int64_t *)(ws->w + a_size))[na - 1]++;
                memset(mk, 0, (size_t)nw * sizeof *mk);
                continue;
            }
            ((int64_t *)(ws->w + a_size))[na] = 1;
            na++;
        }
    }
    /* Group atoms with equal masks, then recurse once per group. */
    int64_t total = 0;
    for (int64_t a = 0; a < na; a++) {
        int64_t *sz = (int64_t *)(ws->w + a_size);
        if (sz[a] == 0) continue;
        int64_t size = sz[a];
        const uint64_t *ma = ws->w + a_mask + a * nw;
        for (int64_t b = a + 1; b < na; b++) {
            if (sz[b] && memcmp(ma, ws->w + a_mask + b * nw, (size_t)nw * sizeof *ma) == 0) {
                size += sz[b];
                sz[b] = 0;
            }
        }
        int sub = 0, sl[len];
        for (int i = 0; i < len; i++)
            if ((ma[i / 64] >> (i % 64)) & 1u) sl[sub++] = list[i];
        total += size * count_rec(cx, sl, sub, depth + 1);
    }
    ws->used = mark;
    return total;
}

/* |P[0] ∪ ... ∪ P[n-1]| for array arr; P is reordered. */
static int64_t count_union(psa_ws *ws, int arr, psa_prod *P, int n)
{
    n = prods_reduce(ws, arr, P, n);
    if (n == 0) return 0;
    if (n == 1) return prod_count(&P[0]);
    psa_count_ctx cx = {ws, arr, P};
    int list[n];
    for (int i = 0; i < n; i++) list[i] = i;
    return count_rec(&cx, list, n, 0);
}

/* ================================================================= spans */

struct psa_span {
    int p;                        /* level with the index range (nlev: no levels) */
    int64_t i0, i1;
    int64_t pre[PSA_MAX_LEVELS];  /* indices of levels < p */
    psa_box parent;               /* box before level p */
    psa_box box;                  /* box of the span */
};


struct psa_spans {
    int n, cap;
    int overflow;      /* more spans than cap: an internal error */
    psa_span s[];
};

/* pr[l] = box after fixing levels < l to v (pr[0] full); ok[l] = nonempty. */
static void prefix_boxes(const psa_model *m, const int64_t *v, int upto, psa_box *pr, int *ok)
{
    box_full(m, &pr[0]);
    ok[0] = 1;
    for (int l = 0; l < upto; l++) {
        pr[l + 1] = pr[l];
        ok[l + 1] = ok[l] && v[l] != PSA_INF && level_apply(m, l, &pr[l + 1], v[l], v[l]);
    }
}

static void span_emit(const psa_model *m, psa_spans *out, const int64_t *v, const psa_box *pr, const int *ok, int l,
                      int64_t i0, int64_t i1)
{
    if (!ok[l] || i0 > i1) return;
    if (l < m->nlev && m->lev[l].segs && i0 != i1) {
        /* Segments are not in s order: a range of them is not a box. */
        const int64_t trip = level_trip(m, l, &pr[l]);
        if (!(i0 == 0 && i1 >= trip - 1)) {
            for (int64_t i = i0; i <= i1 && i < trip; i++) span_emit(m, out, v, pr, ok, l, i, i);
            return;
        }
    }
    if (out->n == out->cap) {
        out->overflow = 1;
        return;
    }
    psa_span *s = &out->s[out->n];
    s->p = l;
    s->i0 = i0;
    s->i1 = i1;
    memcpy(s->pre, v, (size_t)l * sizeof *v);
    s->parent = pr[l];
    s->box = pr[l];
    if (l < m->nlev && !level_apply(m, l, &s->box, i0, i1)) return;
    out->n++;
}

/* The instances between a and b (index vectors; b may end in PSA_INF
 * entries meaning "to the end of that subtree"), a included iff incl_a, as
 * disjoint spans in execution order. */
static void decompose(const psa_model *m, const int64_t *a, const int64_t *b, int incl_a, psa_spans *out)
{
    const int L = m->nlev;
    psa_box pa[PSA_MAX_LEVELS + 1], pb[PSA_MAX_LEVELS + 1];
    int oka[PSA_MAX_LEVELS + 1], okb[PSA_MAX_LEVELS + 1];
    out->n = 0;
    out->overflow = 0;
    if (L == 0) {
        box_full(m, &pa[0]);
        oka[0] = 1;
        if (incl_a) span_emit(m, out, a, pa, oka, 0, 0, 0);
        return;
    }
    int p = 0;
    while (p < L && a[p] == b[p]) p++;
    prefix_boxes(m, a, L, pa, oka);
    if (p == L) {
        if (incl_a) span_emit(m, out, a, pa, oka, L - 1, a[L - 1], a[L - 1]);
        return;
    }
    if (b[p] != PSA_INF && b[p] < a[p]) return; /* empty interval */
    prefix_boxes(m, b, L, pb, okb);
    int qa = L, qb = L;
    while (qa > 0 && a[qa - 1] == 0) qa--;
    while (qb > 0 && b[qb - 1] == PSA_INF) qb--;
    int64_t mid_lo, mid_hi;
    if (incl_a && qa <= p + 1) {
        mid_lo = a[p];
    } else {
        int top = L - 1;
        if (incl_a) {
            if (qa < L) span_emit(m, out, a, pa, oka, qa, 0, PSA_INF);
            else span_emit(m, out, a, pa, oka, L - 1, a[L - 1], a[L - 1]);
            top = qa - 1;
        }
        for (int l = top; l >= p + 1; l--) span_emit(m, out, a, pa, oka, l, a[l] + 1, PSA_INF);
        mid_lo = a[p] + 1;
    }
    if (qb <= p) mid_hi = PSA_INF;
    else if (qb == p + 1) mid_hi = b[p];
    else mid_hi = b[p] - 1;
    if (mid_lo <= mid_hi) span_emit(m, out, a, pa, oka, p, mid_lo, mid_hi);
    if (qb > p + 1) {
        for (int l = p + 1; l < qb; l++)
            if (b[l] > 0) span_emit(m, out, b, pb, okb, l, 0, b[l] - 1);
        if (qb < L) span_emit(m, out, b, pb, okb, qb, 0, PSA_INF);
        else span_emit(m, out, b, pb, okb, L - 1, b[L - 1], b[L - 1]);
    }
}

/* ============================================================ predicates */

typedef struct psa_pred psa_pred;
struct psa_pred {
    int (*test)(const psa_pred *, const psa_box *);
    const psa_model *m;
    int64_t hlo[PSA_NCOORD], hhi[PSA_NCOORD]; /* coordinates an instance passing can have (inclusive) */
    int arr;
    int64_t e[4];                             /* element (access predicate) */
    psa_ws *ws;                               /* intersection predicate */
    psa_fpscratch *sc;
    const psa_prod *other;
    int nother;
};

static void pred_hull_full(psa_pred *P)
{
    for (int v = 0; v < PSA_NCOORD; v++) {
        P->hlo[v] = 0;
        P->hhi[v] = P->m->ext[v] - 1;
    }
}

static int test_valid(const psa_pred *P, const psa_box *b) { return box_has_instance(P->m, b); }

/* Does some instance of box b access element e of array arr? */
static int test_access(const psa_pred *P, const psa_box *b)
{
    const psa_model *m = P->m;
    const int64_t *e = P->e;
    if (!box_nonempty(b)) return 0;
    if (P->arr == PSA_WT) {
        if (e[0] < b->lo[PSA_CK] || e[0] >= b->hi[PSA_CK] || e[1] < b->lo[PSA_CC] || e[1] >= b->hi[PSA_CC] ||
            e[2] < b->lo[PSA_CR] || e[2] >= b->hi[PSA_CR] || e[3] < b->lo[PSA_CS] || e[3] >= b->hi[PSA_CS])
            return 0;
        int64_t a, c;
        valid_oh_for_r(m, e[2], &a, &c);
        if (max64(a, b->lo[PSA_COH]) > min64(c, b->hi[PSA_COH] - 1)) return 0;
        valid_ow_for_s(m, e[3], &a, &c);
        return max64(a, b->lo[PSA_COW]) <= min64(c, b->hi[PSA_COW] - 1);
    }
    if (P->arr == PSA_OUT) {
        if (e[0] < b->lo[PSA_CN] || e[0] >= b->hi[PSA_CN] || e[1] < b->lo[PSA_COH] || e[1] >= b->hi[PSA_COH] ||
            e[2] < b->lo[PSA_COW] || e[2] >= b->hi[PSA_COW] || e[3] < b->lo[PSA_CK] || e[3] >= b->hi[PSA_CK])
            return 0;
        int64_t a, c;
        valid_r_for_oh(m, e[1], &a, &c);
        if (max64(a, b->lo[PSA_CR]) > min64(c, b->hi[PSA_CR] - 1)) return 0;
        valid_s_for_ow(m, e[2], &a, &c);
        return max64(a, b->lo[PSA_CS]) <= min64(c, b->hi[PSA_CS] - 1);
    }
    if (e[0] < b->lo[PSA_CN] || e[0] >= b->hi[PSA_CN] || e[3] < b->lo[PSA_CC] || e[3] >= b->hi[PSA_CC]) return 0;
    int found = 0;
    for (int64_t r = b->lo[PSA_CR]; r < b->hi[PSA_CR] && !found; r++) {
        int64_t t = e[1] + m->pt - r * m->dh;
        if (t % m->sh == 0 && t / m->sh >= b->lo[PSA_COH] && t / m->sh < b->hi[PSA_COH] && t >= 0) found = 1;
    }
    if (!found) return 0;
    for (int64_t s = b->lo[PSA_CS]; s < b->hi[PSA_CS]; s++) {
        int64_t t = e[2] + m->pl - s * m->dw;
        if (t % m->sw == 0 && t >= 0 && t / m->sw >= b->lo[PSA_COW] && t / m->sw < b->hi[PSA_COW]) return 1;
    }
    return 0;
}

static void pred_access(psa_pred *P, const psa_model *m, int arr, const int64_t e[4])
{
    memset(P, 0, sizeof *P);
    P->m = m;
    P->test = test_access;
    P->arr = arr;
    memcpy(P->e, e, sizeof P->e);
    pred_hull_full(P);
    int64_t a, b;
    if (arr == PSA_WT) {
        P->hlo[PSA_CK] = P->hhi[PSA_CK] = e[0];
        P->hlo[PSA_CC] = P->hhi[PSA_CC] = e[1];
        P->hlo[PSA_CR] = P->hhi[PSA_CR] = e[2];
        P->hlo[PSA_CS] = P->hhi[PSA_CS] = e[3];
        valid_oh_for_r(m, e[2], &a, &b);
        P->hlo[PSA_COH] = max64(a, 0);
        P->hhi[PSA_COH] = b;
        valid_ow_for_s(m, e[3], &a, &b);
        P->hlo[PSA_COW] = max64(a, 0);
        P->hhi[PSA_COW] = b;
    } else if (arr == PSA_OUT) {
        P->hlo[PSA_CN] = P->hhi[PSA_CN] = e[0];
        P->hlo[PSA_COH] = P->hhi[PSA_COH] = e[1];
        P->hlo[PSA_COW] = P->hhi[PSA_COW] = e[2];
        P->hlo[PSA_CK] = P->hhi[PSA_CK] = e[3];
        valid_r_for_oh(m, e[1], &a, &b);
        P->hlo[PSA_CR] = max64(a, 0);
        P->hhi[PSA_CR] = b;
        valid_s_for_ow(m, e[2], &a, &b);
        P->hlo[PSA_CS] = max64(a, 0);
        P->hhi[PSA_CS] = b;
    } else {
        P->hlo[PSA_CN] = P->hhi[PSA_CN] = e[0];
        P->hlo[PSA_CC] = P->hhi[PSA_CC] = e[3];
        /* oh = (ih + pt - r*dh) / sh: decreasing in r. */
        P->hlo[PSA_COH] = max64(0, cdiv(e[1] + m->pt - (m->ext[PSA_CR] - 1) * m->dh, m->sh));
        P->hhi[PSA_COH] = fdiv(e[1] + m->pt, m->sh);
        P->hlo[PSA_COW] = max64(0, cdiv(e[2] + m->pl - (m->ext[PSA_CS] - 1) * m->dw, m->sw));
        P->hhi[PSA_COW] = fdiv(e[2] + m->pl, m->sw);

        P->hlo[PSA_CR] = max64(0, cdiv(e[1] + m->pt - (m->ext[PSA_COH] - 1) * m->sh, m->dh));
        P->hhi[PSA_CR] = fdiv(e[1] + m->pt, m->dh);
        P->hlo[PSA_CS] = max64(0, cdiv(e[2] + m->pl - (m->ext[PSA_COW] - 1) * m->sw, m->dw));
        P->hhi[PSA_CS] = fdiv(e[2] + m->pl, m->dw);
    }
}

/* Does some instance of b access an element of P->arr that the products
 * P->other contain? */
static int test_intersect(const psa_pred *P, const psa_box *b)
{
    psa_prod fp[PSA_NARR];
    size_t mark = P->ws->used;
    int r = 0;
    if (box_fp(P->ws, P->sc, b, fp, P->arr)) {
        for (int i = 0; i < P->nother && !r; i++) r = prod_intersects(P->ws, &fp[P->arr], &P->other[i]);
    }
    P->ws->used = mark;
    return r;
}

/* ================================================================ search */

/* Index range of level l over box b that can reach the hull of P. */
static void level_range(const psa_model *m, const psa_pred *P, int l, const psa_box *b, int64_t *i0, int64_t *i1)
{
    const psa_level *lv = &m->lev[l];
    const int64_t trip = level_trip(m, l, b);
    *i1 = min64(*i1, trip - 1);
    if (lv->brk >= 0 || lv->segs) return;
    const int v = lv->coord;
    const int64_t lo = b->lo[v];
    int64_t a = P->hlo[v] > lo ? (P->hlo[v] - lo) / lv->g : 0;
    int64_t z = P->hhi[v] >= lo ? (P->hhi[v] - lo) / lv->g : -1;
    *i0 = max64(*i0, a);
    *i1 = min64(*i1, z);
}

/* First (last) instance of span sp passing P, into idx; 0 if none. */
static int search_span(const psa_model *m, const psa_pred *P, const psa_span *sp, int last, int64_t *idx)
{
    if (!P->test(P, &sp->box)) return 0;
    memcpy(idx, sp->pre, (size_t)sp->p * sizeof *idx);
    psa_box cur = sp->parent;
    for (int l = sp->p; l < m->nlev; l++) {
        int64_t i0 = l == sp->p ? sp->i0 : 0, i1 = l == sp->p ? sp->i1 : PSA_INF;
        level_range(m, P, l, &cur, &i0, &i1);
        int found = 0;
        for (int64_t k = 0; i0 + k <= i1; k++) {
            int64_t i = last ? i1 - k : i0 + k;
            psa_box sub = cur;
            if (!level_apply(m, l, &sub, i, i)) continue;
            if (P->test(P, &sub)) {
                idx[l] = i;
                cur = sub;
                found = 1;
                break;
            }
        }
        if (!found) return 0; /* cannot happen with an exact predicate */
    }
    return 1;
}

/* First (last) instance passing P in [a, b] (a excluded unless incl_a). */
static int search_interval(psa_ws *ws, const psa_pred *P, const int64_t *a, const int64_t *b, int incl_a, int last,
                           int64_t *idx)
{
    psa_spans *sp = ws->sps;
    decompose(ws->m, a, b, incl_a, sp);
    ws->internal |= sp->overflow;
    for (int k = 0; k < sp->n; k++) {
        const psa_span *s = &sp->s[last ? sp->n - 1 - k : k];
        if (search_span(ws->m, P, s, last, idx)) return 1;
    }
    return 0;
}

/* ============================================================ instances */

int psa_coords_of(const psa_model *m, const int64_t *idx, int64_t x[PSA_NCOORD])
{
    psa_box b;
    box_full(m, &b);
    for (int l = 0; l < m->nlev; l++)
        if (!level_apply(m, l, &b, idx[l], idx[l])) return 0;
    for (int v = 0; v < PSA_NCOORD; v++) {
        if (b.hi[v] - b.lo[v] != 1) return 0;
        x[v] = b.lo[v];
    }
    return box_has_instance(m, &b);
}

void psa_index_of(const psa_model *m, const int64_t x[PSA_NCOORD], int64_t *idx)
{
    psa_box b;
    box_full(m, &b);
    for (int l = 0; l < m->nlev; l++) {
        idx[l] = level_index_of(m, l, &b, x[m->lev[l].coord]);
        level_apply(m, l, &b, idx[l], idx[l]);
    }
}

static int64_t band_index(const psa_model *m, const int64_t *idx)
{
    int64_t g = 0;
    for (int i = 0; i < m->nband; i++) g = g * m->band_trip[i] + idx[i];
    return g;
}

/* Lower (all zero) and upper (band iteration g, then PSA_INF) index vectors
 * of band iterations [g0, g1]. */
static void band_bounds(const psa_model *m, int64_t g0, int64_t g1, int64_t *lo, int64_t *hi)
{
    for (int l = 0; l < m->nlev; l++) {
        lo[l] = 0;
        hi[l] = PSA_INF;
    }
    if (m->nband == 0) return;
    psa_band_decode(m, g0, lo);
    psa_band_decode(m, g1, hi);
}

/* ======================================================== working sets */

/* Distinct elements of each array accessed by the instances in [a, b] (b may
 * end in PSA_INF entries), into cnt[arr]. */
static void ws_count(psa_ws *ws, psa_fpscratch *sc, const int64_t *a, const int64_t *b, int64_t cnt[PSA_NARR])
{
    psa_spans *sp = ws->sp;
    decompose(ws->m, a, b, 1, sp);
    ws->internal |= sp->overflow;
    const size_t mark = ws->used;
    int n = 0;
    for (int i = 0; i < sp->n; i++)
        if (box_fp(ws, sc, &sp->s[i].box, &ws->all[(size_t)n * PSA_NARR], -1)) n++;
    for (int arr = 0; arr < PSA_NARR; arr++) {
        for (int i = 0; i < n; i++) ws->P[i] = ws->all[(size_t)i * PSA_NARR + arr];
        cnt[arr] = count_union(ws, arr, ws->P, n);
    }
    ws->used = mark;
}

/* ================================================== first reused source */

/* Does some instance of box b access an element of arr that another
 * instance of b, or an instance of the products `later`, also accesses? */
static int reused_in(psa_ws *ws, psa_fpscratch *sc, int arr, const psa_box *b, const psa_prod *later, int nlater)
{
    const psa_model *m = ws->m;
    if (!box_has_instance(m, b)) return 0;
    /* Several instances of b on one element. */
    if (arr == PSA_IN) {
        if (b->hi[PSA_CK] - b->lo[PSA_CK] >= 2) return 1;
        for (int side = 0; side < 2; side++) {
            psa_pairs *pp = side ? &sc->cols : &sc->rows;
            box_pairs(m, b, side == 0, pp);
            const int64_t st = side ? m->sw : m->sh, dl = side ? m->dw : m->dh, pad = side ? m->pl : m->pt;
            const int64_t U = m->arr_ext[PSA_IN][1 + side];
            size_t mark = ws->used, off = ws_alloc(ws, (size_t)bs_words(U));
            int hit = 0;
            for (int64_t i = 0; i < pp->n && !hit; i++)
                for (int64_t o = pp->a[i]; o <= pp->b[i] && !hit; o++) {
                    int64_t x = o * st - pad + pp->x[i] * dl;
                    if (bs_test(ws->w + off, x)) hit = 1;
                    ws->w[off + x / 64] |= 1ull << (x % 64);
                }
            ws->used = mark;
            if (hit) return 1;
        }
    } else if (arr == PSA_WT) {
        if (b->hi[PSA_CN] - b->lo[PSA_CN] >= 2) return 1;
        for (int side = 0; side < 2; side++) {
            psa_pairs *pp = side ? &sc->cols : &sc->rows;
            box_pairs(m, b, side == 0, pp);
            for (int64_t i = 0; i < pp->n; i++)
                if (pp->b[i] > pp->a[i]) return 1;
        }
    } else {
        if (b->hi[PSA_CC] - b->lo[PSA_CC] >= 2) return 1;
        for (int side = 0; side < 2; side++) {
            const int oc = side ? PSA_COW : PSA_COH, fc = side ? PSA_CS : PSA_CR;
            for (int64_t o = b->lo[oc]; o < b->hi[oc]; o++) {
                int64_t a, c;
                if (side) valid_s_for_ow(m, o, &a, &c);
                else valid_r_for_oh(m, o, &a, &c);
                if (min64(c, b->hi[fc] - 1) - max64(a, b->lo[fc]) >= 1) return 1;
            }
        }
    }
    if (nlater == 0) return 0;
    psa_prod fp[PSA_NARR];
    size_t mark = ws->used;
    int r = 0;
    if (box_fp(ws, sc, b, fp, arr))
        for (int i = 0; i < nlater && !r; i++) r = prod_intersects(ws, &fp[arr], &later[i]);
    ws->used = mark;
    return r;
}

/* First instance in [a, b] whose element of arr is accessed again later in
 * [a, b]; into idx. */
static int first_reused(psa_ws *ws, psa_fpscratch *sc, int arr, const int64_t *a, const int64_t *b, int64_t *idx)
{
    const psa_model *m = ws->m;
    psa_spans *sp = ws->sp;
    psa_prod *later = malloc((size_t)(ws->cap + m->nlev * (m->seg_maxp > 1 ? m->seg_maxp : 1) + 2) * sizeof *later);
    int found = 0;
    if (!later) {
        ws->oom = 1;
        goto done;
    }
    decompose(m, a, b, 1, sp);
    ws->internal |= sp->overflow;
    const size_t mark = ws->used;
    /* later products of spans k+1..: built from the back. */
    int nl = 0;
    int k;
    psa_prod fp[PSA_NARR];
    /* Products of all spans, in order; the later list of span k is the tail. */
    psa_prod *sprod = malloc((size_t)(sp->n + 1) * sizeof *sprod);
    int *has = malloc((size_t)(sp->n + 1) * sizeof *has);
    if (!sprod || !has) {
        ws->oom = 1;
        free(sprod);
        free(has);
        goto done;
    }
    for (k = 0; k < sp->n; k++) {
        has[k] = box_fp(ws, sc, &sp->s[k].box, fp, arr);
        if (has[k]) sprod[k] = fp[arr];
    }
    for (k = 0; k < sp->n && !found; k++) {
        nl = 0;
        for (int j = k + 1; j < sp->n; j++)
            if (has[j]) later[nl++] = sprod[j];
        if (!reused_in(ws, sc, arr, &sp->s[k].box, later, nl)) continue;
        /* Descend. */
        const psa_span *s = &sp->s[k];
        memcpy(idx, s->pre, (size_t)s->p * sizeof *idx);
        psa_box cur = s->parent;
        int ok = 1;
        for (int l = s->p; l < m->nlev && ok; l++) {
            int64_t i0 = l == s->p ? s->i0 : 0, i1 = l == s->p ? s->i1 : PSA_INF;
            i1 = min64(i1, level_trip(m, l, &cur) - 1);
            int got = 0;
            for (int64_t i = i0; i <= i1; i++) {
                psa_box sub = cur, rest = cur;
                if (!level_apply(m, l, &sub, i, i)) continue;
                int nr = nl;
                if (m->lev[l].segs) { /* the later segments one by one: they are not a box */
                    for (int64_t j = i + 1; j <= i1; j++) {
                        rest = cur;
                        if (level_apply(m, l, &rest, j, j) && box_fp(ws, sc, &rest, fp, arr)) later[nr++] = fp[arr];
                    }
                } else if (i < i1 && level_apply(m, l, &rest, i + 1, i1) && box_fp(ws, sc, &rest, fp, arr)) {
                    later[nr++] = fp[arr];
                }
                if (reused_in(ws, sc, arr, &sub, later, nr)) {
                    idx[l] = i;
                    cur = sub;
                    nl = nr;
                    got = 1;
                    break;
                }
            }
            ok = got;
        }
        found = ok;
    }
    free(sprod);
    free(has);
    ws->used = mark;
done:
    free(later);
    return found;
}

/* ================================================================ driver */

static int cmp_i64(const void *x, const void *y);

void psa_fill_shared(const psa_model *m, psa_dep *dep)
{
    /* Threads active at the source's band iteration (relative to their own
     * share), and how many distinct slices of each array they work on: the
     * number of distinct tuples of their band indices over the dimensions
     * the array depends on. A tuple is encoded exactly in one integer (mixed
     * radix of the band trip counts, whose product fits). */
    for (int a = 0; a < PSA_NARR; a++) dep->mult[a] = 1;
    int64_t b0, e0;
    psa_thread_chunk(m, psa_rep_thread(m), &b0, &e0);
    const int64_t rel = band_index(m, dep->src) - b0;
    const int nt = m->nthreads;
    int64_t *keys = m->nband > 0 && nt > 1 ? malloc((size_t)nt * (PSA_NARR + 1) * sizeof *keys) : NULL;
    if (keys) {
        int nk = 0;
        for (int t = 0; t < nt; t++) {
            int64_t b, e, idx[PSA_MAX_LEVELS];
            psa_thread_chunk(m, t, &b, &e);
            if (b + rel >= e) continue; /* this thread is done by then */
            psa_band_decode(m, b + rel, idx);
            psa_box bx;
            box_full(m, &bx);
            int ok = 1;
            for (int l = 0; l < m->nband && ok; l++) ok = level_apply(m, l, &bx, idx[l], idx[l]);
            if (!ok) continue; /* an empty band iteration */
            for (int a = 0; a < PSA_NARR; a++) {
                int64_t key = 0;
                for (int l = 0; l < m->nband; l++)
                    key = key * m->band_trip[l] + (psa_array_uses_dim(a, m->lev[l].tile_dim) ? idx[l] : 0);
                keys[(size_t)a * nt + nk] = key;
            }
            nk++;
        }
        for (int a = 0; a < PSA_NARR && nk > 0; a++) {
            int64_t *k = keys + (size_t)a * nt;
            qsort(k, (size_t)nk, sizeof *k, cmp_i64);
            int64_t distinct = 1;
            for (int i = 1; i < nk; i++) distinct += k[i] != k[i - 1];
            dep->mult[a] = distinct;
        }
        free(keys);
    }
    dep->ws_min_shared = dep->ws_max_shared = 0;
    for (int a = 0; a < PSA_NARR; a++) {
        dep->ws_min_shared += dep->mult[a] * dep->ws_min_arr[a];
        dep->ws_max_shared += dep->mult[a] * dep->ws_max_arr[a];
    }
}

static void sum_arrays(psa_dep *d)
{
    d->ws_min = d->ws_max = 0;
    for (int a = 0; a < PSA_NARR; a++) {
        d->ws_min += d->ws_min_arr[a];
        d->ws_max += d->ws_max_arr[a];
    }
}

/* Working sets of rep-thread band iterations [min(i, j), max(i, j)]. */
static void window_count(psa_ws *ws, psa_fpscratch *sc, int64_t i, int64_t j, int64_t e0, int64_t cnt[PSA_NARR])
{
    const psa_model *m = ws->m;
    int64_t lo[PSA_MAX_LEVELS], hi[PSA_MAX_LEVELS];
    int64_t g0 = min64(i, j), g1 = min64(max64(i, j), e0 - 1);
    band_bounds(m, g0, g1, lo, hi);
    ws_count(ws, sc, lo, hi, cnt);
}

/* Reuse of arr that only happens between threads (see docs/analysis.md). */
static void shared_only_dep(psa_ws *ws, psa_fpscratch *sc, int arr, int rep, psa_dep *d)
{
    const psa_model *m = ws->m;
    int64_t b0, e0;
    psa_thread_chunk(m, rep, &b0, &e0);
    if (m->nband == 0 || e0 >= m->T) return;
    int64_t lo[PSA_MAX_LEVELS], hi[PSA_MAX_LEVELS], olo[PSA_MAX_LEVELS], ohi[PSA_MAX_LEVELS];
    band_bounds(m, b0, e0 - 1, lo, hi);
    band_bounds(m, e0, m->T - 1, olo, ohi);
    /* Footprint of the other threads' work in arr. */
    psa_spans *sp = ws->sp;
    psa_prod *other = malloc((size_t)ws->cap * sizeof *other);
    if (!other) {
        ws->oom = 1;
        return;
    }
    decompose(m, olo, ohi, 1, sp);
    ws->internal |= sp->overflow;
    const size_t mark = ws->used;
    int no = 0;
    psa_prod fp[PSA_NARR];
    for (int k = 0; k < sp->n; k++)
        if (box_fp(ws, sc, &sp->s[k].box, fp, arr)) other[no++] = fp[arr];
    psa_pred Q;
    memset(&Q, 0, sizeof Q);
    Q.m = m;
    Q.test = test_intersect;
    pred_hull_full(&Q);
    Q.arr = arr;
    Q.ws = ws;
    Q.sc = sc;
    Q.other = other;
    Q.nother = no;
    int64_t s[PSA_MAX_LEVELS];
    int found = search_interval(ws, &Q, lo, hi, 1, 0, s);
    ws->used = mark;
    free(other);
    if (!found) return;
    int64_t x[PSA_NCOORD], e[4];
    psa_coords_of(m, s, x);
    psa_access(m, arr, x, e);
    psa_pred P;
    pred_access(&P, m, arr, e);
    const int64_t is = band_index(m, s) - b0;
    /* Per other thread: its accesses nearest to the source's relative band
     * iteration on either side, and its first and last. */
    int64_t best_below = -1, best_above = -1, first = -1, lastv = -1;
    int64_t tb[PSA_MAX_LEVELS], ta[PSA_MAX_LEVELS], tf[PSA_MAX_LEVELS], tl[PSA_MAX_LEVELS], t[PSA_MAX_LEVELS];
    for (int th = 0; th < m->nthreads; th++) {
        int64_t b, e1;
        psa_thread_chunk(m, th, &b, &e1);
        if (th == rep || e1 <= b) continue;
        int64_t a1[PSA_MAX_LEVELS], z1[PSA_MAX_LEVELS];
        band_bounds(m, b, min64(b + is, e1 - 1), a1, z1);
        if (search_interval(ws, &P, a1, z1, 1, 1, t)) {
            int64_t r = band_index(m, t) - b;
            if (r <= is && r > best_below) {
                best_below = r;
                memcpy(tb, t, sizeof t);
            }
        }
        if (b + is <= e1 - 1) {
            band_bounds(m, b + is, e1 - 1, a1, z1);
            if (search_interval(ws, &P, a1, z1, 1, 0, t)) {
                int64_t r = band_index(m, t) - b;
                if (best_above < 0 || r < best_above) {
                    best_above = r;
                    memcpy(ta, t, sizeof t);
                }
            }
        }
        band_bounds(m, b, e1 - 1, a1, z1);
        if (search_interval(ws, &P, a1, z1, 1, 0, t)) {
            int64_t r = band_index(m, t) - b;
            if (first < 0 || r < first) {
                first = r;
                memcpy(tf, t, sizeof t);
            }
        }
        if (search_interval(ws, &P, a1, z1, 1, 1, t)) {
            int64_t r = band_index(m, t) - b;
            if (r > lastv) {
                lastv = r;
                memcpy(tl, t, sizeof t);
            }
        }
    }
    if (first < 0) return; /* cannot happen: the source was found via another thread */
    d->exists = 1;
    d->shared_only = 1;
    memcpy(d->src, s, sizeof d->src);
    int64_t c1[PSA_NARR], c2[PSA_NARR];
    /* WSmin: the nearer of the two nearest accesses. */
    int64_t wmin = -1;
    if (best_below >= 0) {
        window_count(ws, sc, is, best_below, e0 - b0, c1);
        wmin = c1[0] + c1[1] + c1[2];
        memcpy(d->ws_min_arr, c1, sizeof c1);
        memcpy(d->tmin, tb, sizeof tb);
    }
    if (best_above >= 0) {
        window_count(ws, sc, is, best_above, e0 - b0, c2);
        if (wmin < 0 || c2[0] + c2[1] + c2[2] < wmin) {
            memcpy(d->ws_min_arr, c2, sizeof c2);
            memcpy(d->tmin, ta, sizeof ta);
        }
    }
    /* WSmax: the farther of the first and the last access. */
    window_count(ws, sc, is, first, e0 - b0, c1);
    window_count(ws, sc, is, lastv, e0 - b0, c2);
    if (c2[0] + c2[1] + c2[2] > c1[0] + c1[1] + c1[2]) {
        memcpy(d->ws_max_arr, c2, sizeof c2);
        memcpy(d->tmax, tl, sizeof tl);
    } else {
        memcpy(d->ws_max_arr, c1, sizeof c1);
        memcpy(d->tmax, tf, sizeof tf);
    }
    sum_arrays(d);
}

ps_status psa_analyze_fast(const psa_model *m, psa_dep dep[PSA_NARR])
{
    memset(dep, 0, sizeof(psa_dep) * PSA_NARR);

    psa_ws ws;
    memset(&ws, 0, sizeof ws);
    ws.m = m;
    int64_t fmax = max64(m->ext[PSA_CR], m->ext[PSA_CS]) + 1;
    /* Largest single arena request: a bitset of a footprint dimension, or
     * the atoms of one counting step. */
    int64_t umax = 1;
    for (int a = 0; a < PSA_NARR; a++)
        for (int d = 0; d < 4; d++)
            if (dim_bits_ok(a, d)) umax = max64(umax, m->arr_ext[a][d]);
    ws.cap = max_spans(m);
    ws.reserve = (size_t)(bs_words(umax) + 2 * ws.cap + 64);
    ws.cap_words = ws.reserve + 2048;
    ws.used = ws.reserve;
    ws.w = malloc(ws.cap_words * sizeof *ws.w);
    psa_fpscratch sc;
    int64_t *pairbuf = malloc((size_t)fmax * 6 * sizeof *pairbuf);
    ws.tlo = malloc((size_t)fmax * sizeof *ws.tlo);
    ws.thi = malloc((size_t)fmax * sizeof *ws.thi);
    ws.sp = malloc(sizeof *ws.sp + (size_t)ws.cap * sizeof(psa_span));
    ws.sps = malloc(sizeof *ws.sps + (size_t)ws.cap * sizeof(psa_span));
    ws.all = malloc((size_t)ws.cap * PSA_NARR * sizeof *ws.all);
    ws.P = malloc((size_t)ws.cap * sizeof *ws.P);
    if (!pairbuf || !ws.tlo || !ws.thi || !ws.w || !ws.sp || !ws.sps || !ws.all || !ws.P) {
        free(ws.sps);
        free(pairbuf);
        free(ws.tlo);
        free(ws.thi);
        free(ws.w);
        free(ws.sp);
        free(ws.all);
        free(ws.P);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    }
    ws.sp->cap = ws.sps->cap = ws.cap;
    sc.rows.x = pairbuf;
    sc.rows.a = pairbuf + fmax;
    sc.rows.b = pairbuf + 2 * fmax;
    sc.cols.x = pairbuf + 3 * fmax;
    sc.cols.a = pairbuf + 4 * fmax;
    sc.cols.b = pairbuf + 5 * fmax;

    const int rep = psa_rep_thread(m);
    int64_t b0, e0, lo[PSA_MAX_LEVELS], hi[PSA_MAX_LEVELS];
    psa_thread_chunk(m, rep, &b0, &e0);
    band_bounds(m, b0, e0 - 1, lo, hi);

    psa_pred V;
    memset(&V, 0, sizeof V);
    V.m = m;
    V.test = test_valid;
    pred_hull_full(&V);
    int64_t f[PSA_MAX_LEVELS];
    if (search_interval(&ws, &V, lo, hi, 1, 0, f)) {
        for (int arr = 0; arr < PSA_NARR && !ws.oom; arr++) {
            psa_dep *d = &dep[arr];
            int64_t x[PSA_NCOORD], e[4], s[PSA_MAX_LEVELS], t[PSA_MAX_LEVELS];
            psa_pred P;
            psa_coords_of(m, f, x);
            psa_access(m, arr, x, e);
            pred_access(&P, m, arr, e);
            int ok = 0;
            if (search_interval(&ws, &P, f, hi, 0, 0, t)) {
                memcpy(s, f, sizeof s);
                ok = 1;
            } else if (first_reused(&ws, &sc, arr, lo, hi, s)) {
                psa_coords_of(m, s, x);
                psa_access(m, arr, x, e);
                pred_access(&P, m, arr, e);
                ok = search_interval(&ws, &P, s, hi, 0, 0, t);
            }
            if (ok) {
                d->exists = 1;
                memcpy(d->src, s, sizeof d->src);
                memcpy(d->tmin, t, sizeof d->tmin);
                search_interval(&ws, &P, s, hi, 0, 1, d->tmax);
                ws_count(&ws, &sc, s, d->tmin, d->ws_min_arr);
                ws_count(&ws, &sc, s, d->tmax, d->ws_max_arr);
                sum_arrays(d);
            } else if (m->nthreads > 1) {
                shared_only_dep(&ws, &sc, arr, rep, d);
            }
            if (d->exists) psa_fill_shared(m, d);
        }
    }
    int oom = ws.oom, internal = ws.internal;
    free(pairbuf);
    free(ws.tlo);
    free(ws.thi);
    free(ws.w);
    free(ws.sp);
    free(ws.sps);
    free(ws.all);
    free(ws.P);
    if (oom) return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    if (internal) return ps_error(PS_ERR_BACKEND, "analysis: internal error (span list overflow)");
    return PS_SUCCESS;
}
