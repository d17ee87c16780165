/* Double-precision reference of a stage graph with an error bound
 * (graph_ref.h).
 *
 * ---------------------------------------------------------------- the bound
 *
 * Each element carries (v, e): v is the exact value computed in double from
 * the f32 data (products of two floats are exact in double and every sum here
 * has at most a few thousand terms, so v is good to ~1e-15 relative), and e
 * bounds |x - v| for the value x a correct f32 implementation produces. The
 * implementation rounds every operation to f32 and feeds the rounded values
 * on, so e is built operation by operation, treating an operand as "some
 * float in [v - e, v + e]" (inside an expression tree as "some float in
 * [lo, hi]", which keeps |x| + 1/4 >= 1/4 however wide x's interval is):
 *
 *  - sums of L terms (stencil SUM, channel mix, resampling): the propagated
 *    part sum |w_t| e_t, plus the summation's own rounding
 *    tol(L) * sum |w_t v_t| with tol(L) = 8 u sqrt(L) + 2 u, u = 2^-24: the
 *    probabilistic bound of Higham & Mary (SISC 2019) with lambda = 8, the
 *    same bound tests/reference.c states for the conv and GEMM references;
 *    it holds for any summation order, blocking, FMA use and for partial sums
 *    kept in f32 between tiles, which is exactly what fusion and tiling
 *    change (a fused group sums a stencil's taps in another order than the
 *    unfused plan does);
 *  - max / min (stencil MAX/MIN, expression min, max, clamp): the interval
 *    of the result is [max lo_t, max hi_t], exact;
 *  - +, -, *: the interval of the exact result, widened by u * |result|
 *    (IEEE rounding to nearest; an FMA only rounds less), not widened when
 *    the operands are exact and so is the result in f32 (1 + 2 * (x != 4));
 *  - / and sqrt: the interval image, widened by 4 u * |result|: correctly
 *    rounded is u, and 4 u admits the reciprocal / reciprocal-square-root
 *    estimate refined by one Newton step (about 2 ulp) that vector code uses;
 *  - exp and log: the interval image (both are monotone, so the image of
 *    [lo, hi] is [f(lo), f(hi)]), widened by 16 u * |result| (+ 2 u absolute
 *    for log, whose result passes 0 at 1): vectorised polynomial
 *    implementations are within a few ulp, 16 u leaves room for any decent
 *    one and still flags a wrong polynomial or range reduction (~1e-4);
 *  - floor, comparisons and select are exact but discontinuous: the result's
 *    interval is the hull of what every operand value in its interval gives
 *    (a comparison whose operands' intervals overlap may come out 0 or 1:
 *    e = 1 there; select with such a condition may return either branch);
 *  - neg, abs, copies (inputs, clamp-to-edge, nearest upsampling) are exact.
 *
 * Quotients by an interval that contains 0, sqrt and log of intervals that
 * reach 0 or below, and any infinite or NaN v are ill-conditioned: e is then
 * infinite and gr_compare counts the element as unchecked (the random
 * generator guards its divisions, square roots and logarithms so that this
 * does not happen). What this bound cannot absorb: a missing, duplicated or
 * misplaced term of a sum (an error of ~1/L of the magnitude, ~1e3 times the
 * bound for the small sums of the tests), a wrong boundary value, a wrong
 * tap offset or stride, a wrong channel, a stale or unwritten element.
 *
 * gr_compare accepts |got - v| <= GR_SLACK * e (GR_SLACK = 2 covers the
 * products of two rounding errors the rules drop). A correct engine stays
 * within e itself on the random graphs (a normalized error of at most 0.5;
 * test_graph_random prints the largest per fusion mode); a bilinear weight
 * of 0.7501 instead of 0.75 (1.3e-4 relative) fails by ~100 times. */
#include "graph_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Struct layouts of the builder's nodes (no internal functions are called). */
#include "graph/graph_impl.h"

#define GR_U (1.0 / 16777216.0) /* 2^-24: unit roundoff of f32 */

double gr_sum_tolerance(int64_t L)
{
    if (L < 1) L = 1;
    return 8.0 * GR_U * sqrt((double)L) + 2.0 * GR_U;
}

static int fail(gr_eval *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(gr_eval *ev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->msg, sizeof ev->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* floor(a / b) for b > 0, written from the remainder (not the formula the
 * builder uses, so a shared mistake is unlikely). */
static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b, r = a % b;
    return (r != 0 && r < 0) ? q - 1 : q;
}
static int64_t div_ceil(int64_t a, int64_t b)
{
    int64_t q = a / b, r = a % b;
    return (r != 0 && r > 0) ? q + 1 : q;
}

int64_t gr_index(ps_act_layout layout, int64_t c, int64_t h, int64_t w, int64_t img, int64_t ch, int64_t y, int64_t x)
{
    if (layout == PS_LAYOUT_NCHW) return ((img * c + ch) * h + y) * w + x;
    return ((img * h + y) * w + x) * c + ch;
}

static int64_t at(const gr_tensor *t, int64_t img, int64_t y, int64_t x, int64_t ch)
{
    return ((img * t->h + (y - t->y0)) * t->w + (x - t->x0)) * t->c + ch;
}

static int inside(const gr_tensor *t, int64_t y, int64_t x)
{
    return y >= t->y0 && y < t->y0 + t->h && x >= t->x0 && x < t->x0 + t->w;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A read of tensor t at (y, x) answered by `boundary` outside its domain.
 * Returns 0 for a VALID read outside (which a correct domain never makes). */
static int read_b(const gr_tensor *t, ps_boundary boundary, int64_t img, int64_t y, int64_t x, int64_t ch, double *v,
                  double *e)
{
    if (!inside(t, y, x)) {
        if (boundary == PS_BOUNDARY_ZERO) {
            *v = 0;
            *e = 0;
            return 1;
        }
        if (boundary != PS_BOUNDARY_CLAMP) return 0;
        y = clampi(y, t->y0, t->y0 + t->h - 1);
        x = clampi(x, t->x0, t->x0 + t->w - 1);
    }
    const int64_t i = at(t, img, y, x, ch);
    *v = t->v[i];
    *e = t->e[i];
    return 1;
}

/* ---------------------------------------------------------------- expressions */

/* A value and the interval [lo, hi] that holds every result a correct f32
 * implementation may produce (lo <= v <= hi; not symmetric: |x| + 1/4 is
 * known to be >= 1/4 however wide the interval of x). */
typedef struct iv {
    double v, lo, hi;
} iv;

static const iv ILL = {NAN, -INFINITY, INFINITY};

static iv make(double v, double lo, double hi)
{
    if (isnan(v) || isnan(lo) || isnan(hi)) return (iv){v, -INFINITY, INFINITY};
    return (iv){v, fmin(lo, v), fmax(hi, v)};
}
static double radius(iv a) { return fmax(a.hi - a.v, a.v - a.lo); }

/* Adds an operation's own rounding: rel * (largest |value|) + abs_. */
static iv widen(iv a, double rel, double abs_)
{
    if (!isfinite(a.v)) return (iv){a.v, -INFINITY, INFINITY};
    const double w = rel * fmax(fabs(a.lo), fabs(a.hi)) + abs_;
    return (iv){a.v, a.lo - w, a.hi + w};
}
static int is_float(double v) { return (double)(float)v == v; }
/* The rounding of a correctly rounded f32 operation (+, -, *): none when the
 * operands are exact and so is the result in f32 (e.g. 1 + 2 * (x != 4)). */
static iv rounded(iv a)
{
    if (a.lo == a.hi && is_float(a.v)) return a;
    return widen(a, GR_U, 0);
}

/* Truth of `a op b` for every pair in the intervals: 1, 0, or -1 (both). */
static int compare_iv(ps_expr_op op, iv a, iv b)
{
    const int exact = a.lo == a.hi && b.lo == b.hi;
    switch (op) {
    case PS_EXPR_LT: return a.hi < b.lo ? 1 : a.lo >= b.hi ? 0 : -1;
    case PS_EXPR_LE: return a.hi <= b.lo ? 1 : a.lo > b.hi ? 0 : -1;
    case PS_EXPR_GT: return a.lo > b.hi ? 1 : a.hi <= b.lo ? 0 : -1;
    case PS_EXPR_GE: return a.lo >= b.hi ? 1 : a.hi < b.lo ? 0 : -1;
    case PS_EXPR_EQ: return exact ? a.v == b.v : (a.hi < b.lo || b.hi < a.lo) ? 0 : -1;
    case PS_EXPR_NE: return exact ? a.v != b.v : (a.hi < b.lo || b.hi < a.lo) ? 1 : -1;
    default: return -1;
    }
}

static int cmp_exact(ps_expr_op op, double a, double b)
{
    switch (op) {
    case PS_EXPR_LT: return a < b;
    case PS_EXPR_LE: return a <= b;
    case PS_EXPR_GT: return a > b;
    case PS_EXPR_GE: return a >= b;
    case PS_EXPR_EQ: return a == b;
    default: return a != b;
    }
}

static iv iv_min(iv a, iv b) { return make(fmin(a.v, b.v), fmin(a.lo, b.lo), fmin(a.hi, b.hi)); }
static iv iv_max(iv a, iv b) { return make(fmax(a.v, b.v), fmax(a.lo, b.lo), fmax(a.hi, b.hi)); }

/* Image of a monotone increasing f. */
static iv mono(double (*f)(double), iv a) { return make(f(a.v), f(a.lo), f(a.hi)); }

/* Hull of the four corner values of a binary operation. */
static iv corners(double v, double p, double q, double r, double t)
{
    return make(v, fmin(fmin(p, q), fmin(r, t)), fmax(fmax(p, q), fmax(r, t)));
}

/* Evaluates e at one point; in[i] is input i. *bad is set for an operator
 * this evaluator does not know. */
static iv eval_expr(const ps_expr *x, const iv *in, int n_in, int *bad)
{
    if (!x) {
        *bad = 1;
        return ILL;
    }
    iv a = {0, 0, 0}, b = {0, 0, 0}, c = {0, 0, 0};
    switch (x->op) {
    case PS_EXPR_CONST: return (iv){(double)x->value, (double)x->value, (double)x->value};
    case PS_EXPR_INPUT:
        if (x->index < 0 || x->index >= n_in) {
            *bad = 1;
            return ILL;
        }
        return in[x->index];
    default: break;
    }
    a = eval_expr(x->arg[0], in, n_in, bad);
    if (x->op >= PS_EXPR_ADD) b = eval_expr(x->arg[1], in, n_in, bad);
    if (x->op >= PS_EXPR_SELECT) c = eval_expr(x->arg[2], in, n_in, bad);
    switch (x->op) {
    case PS_EXPR_NEG: return (iv){-a.v, -a.hi, -a.lo};
    case PS_EXPR_ABS:
        if (a.lo >= 0) return a;
        if (a.hi <= 0) return (iv){-a.v, -a.hi, -a.lo};
        return make(fabs(a.v), 0, fmax(-a.lo, a.hi));
    case PS_EXPR_SQRT:
        if (!(a.lo >= 0)) return a.v >= 0 ? (iv){sqrt(a.v), -INFINITY, INFINITY} : ILL;
        return widen(mono(sqrt, a), 4 * GR_U, 0);
    case PS_EXPR_EXP: return widen(mono(exp, a), 16 * GR_U, 0);
    case PS_EXPR_LOG:
        if (!(a.lo > 0)) return a.v > 0 ? (iv){log(a.v), -INFINITY, INFINITY} : ILL;
        return widen(mono(log, a), 16 * GR_U, 2 * GR_U);
    case PS_EXPR_FLOOR: return mono(floor, a);
    case PS_EXPR_ADD: return rounded(make(a.v + b.v, a.lo + b.lo, a.hi + b.hi));
    case PS_EXPR_SUB: return rounded(make(a.v - b.v, a.lo - b.hi, a.hi - b.lo));
    case PS_EXPR_MUL: return rounded(corners(a.v * b.v, a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi));
    case PS_EXPR_DIV:
        if (!(b.lo > 0 || b.hi < 0)) return b.v != 0 ? (iv){a.v / b.v, -INFINITY, INFINITY} : ILL;
        return widen(corners(a.v / b.v, a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi), 4 * GR_U, 0);
    case PS_EXPR_MIN: return iv_min(a, b);
    case PS_EXPR_MAX: return iv_max(a, b);
    case PS_EXPR_LT:
    case PS_EXPR_LE:
    case PS_EXPR_GT:
    case PS_EXPR_GE:
    case PS_EXPR_EQ:
    case PS_EXPR_NE: {
        const int sure = compare_iv(x->op, a, b);
        const double v = cmp_exact(x->op, a.v, b.v) ? 1.0 : 0.0;
        return sure < 0 ? (iv){v, 0, 1} : (iv){v, v, v};
    }
    case PS_EXPR_SELECT: {
        /* The condition is "c != 0": sure when its interval excludes 0, or
         * is exactly {0}. */
        const int sure = a.lo > 0 || a.hi < 0 || (a.lo == 0 && a.hi == 0);
        const iv pick = a.v != 0 ? b : c;
        if (sure) return pick;
        return make(pick.v, fmin(b.lo, c.lo), fmax(b.hi, c.hi));
    }
    case PS_EXPR_CLAMP: return iv_min(iv_max(a, b), c);
    default: *bad = 1; return ILL;
    }
}

/* ---------------------------------------------------------------- stages */

static int alloc_tensor(gr_tensor *t)
{
    const size_t n = (size_t)(t->n * t->c * t->h * t->w);
    t->v = malloc((n ? n : 1) * sizeof *t->v);
    t->e = malloc((n ? n : 1) * sizeof *t->e);
    return t->v && t->e;
}

/* The domain of a stage from the definitions in graph.h. */
static int derive_domain(const ps_graph *g, const gr_eval *ev, int k, gr_tensor *t, gr_eval *err)
{
    const ps_node *nd = &g->nodes[k];
    const gr_tensor *in = nd->n_in > 0 ? &ev->t[nd->in[0]] : NULL;
    if (nd->dl)
        return fail(err, "tensor %d (\"%s\"): a graph_dl.h stage: tests/graph/test_graph_dl.c has its reference", k,
                    nd->name);
    switch (nd->kind) {
    case PS_NODE_STENCIL: {
        t->n = in->n;
        t->c = in->c;
        int dymin = nd->dy[0], dymax = nd->dy[0], dxmin = nd->dx[0], dxmax = nd->dx[0];
        for (int i = 1; i < nd->n_taps; i++) {
            dymin = nd->dy[i] < dymin ? nd->dy[i] : dymin;
            dymax = nd->dy[i] > dymax ? nd->dy[i] : dymax;
            dxmin = nd->dx[i] < dxmin ? nd->dx[i] : dxmin;
            dxmax = nd->dx[i] > dxmax ? nd->dx[i] : dxmax;
        }
        if (nd->boundary != PS_BOUNDARY_VALID) dymin = dymax = dxmin = dxmax = 0;
        /* y such that in.y0 <= sy*y + dymin and sy*y + dymax <= in.y0 + in.h - 1
         * (the builder keeps offsets within 2^28 and coordinates far from
         * 2^63, or this reference's arithmetic would overflow first) */
        if (in->y0 > INT64_MAX / 4 || in->y0 < INT64_MIN / 4 || in->x0 > INT64_MAX / 4 || in->x0 < INT64_MIN / 4)
            return fail(err, "tensor %d (\"%s\"): its input's domain starts beyond 2^61", k, nd->name);
        const int64_t ya = div_ceil(in->y0 - dymin, nd->sy), yb = div_floor(in->y0 + in->h - 1 - dymax, nd->sy);
        const int64_t xa = div_ceil(in->x0 - dxmin, nd->sx), xb = div_floor(in->x0 + in->w - 1 - dxmax, nd->sx);
        t->y0 = ya;
        t->x0 = xa;
        t->h = yb - ya + 1;
        t->w = xb - xa + 1;
        break;
    }
    case PS_NODE_POINTWISE: {
        int64_t y0 = INT64_MIN, x0 = INT64_MIN, y1 = INT64_MAX, x1 = INT64_MAX;
        t->n = in->n;
        t->c = 1;
        for (int i = 0; i < nd->n_in; i++) {
            const gr_tensor *s = &ev->t[nd->in[i]];
            if (s->n != t->n) return fail(err, "tensor %d: pointwise inputs with %lld and %lld images", k, (long long)s->n, (long long)t->n);
            if (s->c != 1 && t->c != 1 && s->c != t->c)
                return fail(err, "tensor %d: pointwise inputs with %lld and %lld channels", k, (long long)s->c, (long long)t->c);
            if (s->c > t->c) t->c = s->c;
            y0 = s->y0 > y0 ? s->y0 : y0;
            x0 = s->x0 > x0 ? s->x0 : x0;
            y1 = s->y0 + s->h < y1 ? s->y0 + s->h : y1;
            x1 = s->x0 + s->w < x1 ? s->x0 + s->w : x1;
        }
        t->y0 = y0;
        t->x0 = x0;
        t->h = y1 - y0;
        t->w = x1 - x0;
        break;
    }
    case PS_NODE_MIX:
        t->n = in->n;
        t->c = nd->c; /* K: a parameter, not derived */
        t->y0 = in->y0;
        t->x0 = in->x0;
        t->h = in->h;
        t->w = in->w;
        break;
    case PS_NODE_RESAMPLE:
        t->n = in->n;
        t->c = in->c;
        if (nd->resample == PS_RESAMPLE_DOWN2_AVERAGE) {
            /* like a stride-2 stencil: the y with 2y inside the input's rows */
            t->y0 = div_ceil(in->y0, 2);
            t->x0 = div_ceil(in->x0, 2);
            t->h = div_floor(in->y0 + in->h - 1, 2) - t->y0 + 1;
            t->w = div_floor(in->x0 + in->w - 1, 2) - t->x0 + 1;
        } else if (__builtin_mul_overflow(in->y0, (int64_t)2, &t->y0) || __builtin_mul_overflow(in->x0, (int64_t)2, &t->x0) ||
                   __builtin_mul_overflow(in->h, (int64_t)2, &t->h) || __builtin_mul_overflow(in->w, (int64_t)2, &t->w)) {
            return fail(err, "tensor %d (\"%s\"): upsampling doubles coordinates past 2^63, but the builder accepted it", k,
                        nd->name);
        } /* else: every y with floor(y / 2) inside the input's rows */
        break;
    default: return fail(err, "tensor %d: unknown node kind %d", k, (int)nd->kind);
    }
    if (t->h < 1 || t->w < 1) return fail(err, "tensor %d (\"%s\"): empty domain, but the builder accepted it", k, nd->name);
    if (t->n != nd->n || t->c != nd->c || t->y0 != nd->dom.y0 || t->x0 != nd->dom.x0 || t->h != nd->dom.h ||
        t->w != nd->dom.w)
        return fail(err,
                    "tensor %d (\"%s\"): the definitions give %lld x [%lld, +%lld) x [%lld, +%lld) x %lld, the builder "
                    "recorded %lld x [%lld, +%lld) x [%lld, +%lld) x %lld",
                    k, nd->name, (long long)t->n, (long long)t->y0, (long long)t->h, (long long)t->x0, (long long)t->w,
                    (long long)t->c, (long long)nd->n, (long long)nd->dom.y0, (long long)nd->dom.h, (long long)nd->dom.x0,
                    (long long)nd->dom.w, (long long)nd->c);
    return 0;
}

static void eval_stencil(const ps_node *nd, const gr_tensor *in, gr_tensor *t, int *bad_read)
{
    const double tol = gr_sum_tolerance(nd->n_taps);
    for (int64_t img = 0; img < t->n; img++)
        for (int64_t y = t->y0; y < t->y0 + t->h; y++)
            for (int64_t x = t->x0; x < t->x0 + t->w; x++)
                for (int64_t ch = 0; ch < t->c; ch++) {
                    double acc = 0, mag = 0, prop = 0, lo = 0, hi = 0, best = 0;
                    for (int k = 0; k < nd->n_taps; k++) {
                        double v, e;
                        if (!read_b(in, nd->boundary, img, nd->sy * y + nd->dy[k], nd->sx * x + nd->dx[k], ch, &v, &e)) {
                            *bad_read = 1;
                            v = NAN;
                            e = INFINITY;
                        }
                        const double w = nd->per_channel ? nd->w[k * t->c + ch] : nd->w[k];
                        const double term = w * v;
                        if (nd->reduce == PS_REDUCE_SUM) {
                            acc += term;
                            mag += fabs(term);
                            prop += fabs(w) * e;
                        } else {
                            /* the product is rounded before the comparison
                             * (not at all when it is exact: weight 1 or -1,
                             * an exact input) */
                            const double r = e == 0 && is_float(term) ? 0 : fabs(w) * e + GR_U * (fabs(term) + fabs(w) * e);
                            const int mx = nd->reduce == PS_REDUCE_MAX;
                            if (k == 0 || (mx ? term > best : term < best)) best = term;
                            if (k == 0) {
                                lo = term - r;
                                hi = term + r;
                            } else {
                                lo = mx ? fmax(lo, term - r) : fmin(lo, term - r);
                                hi = mx ? fmax(hi, term + r) : fmin(hi, term + r);
                            }
                        }
                    }
                    const int64_t i = at(t, img, y, x, ch);
                    if (nd->reduce == PS_REDUCE_SUM) {
                        t->v[i] = acc;
                        t->e[i] = prop + tol * mag;
                    } else {
                        const iv r = make(best, lo, hi);
                        t->v[i] = r.v;
                        t->e[i] = radius(r);
                    }
                }
}

static void eval_pointwise(const ps_node *nd, const gr_eval *ev, gr_tensor *t, int *bad)
{
    iv in[PS_POINTWISE_MAX_INPUTS];
    for (int64_t img = 0; img < t->n; img++)
        for (int64_t y = t->y0; y < t->y0 + t->h; y++)
            for (int64_t x = t->x0; x < t->x0 + t->w; x++)
                for (int64_t ch = 0; ch < t->c; ch++) {
                    for (int j = 0; j < nd->n_in; j++) {
                        const gr_tensor *s = &ev->t[nd->in[j]];
                        const int64_t k = at(s, img, y, x, s->c == 1 ? 0 : ch); /* 1 channel: broadcast */
                        in[j] = (iv){s->v[k], s->v[k] - s->e[k], s->v[k] + s->e[k]};
                    }
                    const iv r = eval_expr(nd->expr, in, nd->n_in, bad);
                    const int64_t i = at(t, img, y, x, ch);
                    t->v[i] = r.v;
                    t->e[i] = isfinite(r.v) ? radius(r) : INFINITY;
                }
}

static void eval_mix(const ps_node *nd, const gr_tensor *in, gr_tensor *t)
{
    const int64_t C = in->c;
    const double tol = gr_sum_tolerance(C + (nd->bias ? 1 : 0));
    for (int64_t img = 0; img < t->n; img++)
        for (int64_t y = t->y0; y < t->y0 + t->h; y++)
            for (int64_t x = t->x0; x < t->x0 + t->w; x++)
                for (int64_t k = 0; k < t->c; k++) {
                    double acc = nd->bias ? nd->bias[k] : 0.0;
                    double mag = fabs(acc), prop = 0;
                    for (int64_t c = 0; c < C; c++) {
                        const int64_t j = at(in, img, y, x, c);
                        const double w = nd->mix_w[k * C + c];
                        acc += w * in->v[j];
                        mag += fabs(w * in->v[j]);
                        prop += fabs(w) * in->e[j];
                    }
                    const int64_t i = at(t, img, y, x, k);
                    t->v[i] = acc;
                    t->e[i] = prop + tol * mag;
                }
}

static void eval_resample(const ps_node *nd, const gr_tensor *in, gr_tensor *t, int *bad_read)
{
    const double tol4 = gr_sum_tolerance(4);
    for (int64_t img = 0; img < t->n; img++)
        for (int64_t y = t->y0; y < t->y0 + t->h; y++)
            for (int64_t x = t->x0; x < t->x0 + t->w; x++)
                for (int64_t ch = 0; ch < t->c; ch++) {
                    const int64_t i = at(t, img, y, x, ch);
                    int64_t ry[2], rx[2];
                    double wy[2], wx[2];
                    if (nd->resample == PS_RESAMPLE_UP2_NEAREST) {
                        const int64_t j = at(in, img, div_floor(y, 2), div_floor(x, 2), ch);
                        t->v[i] = in->v[j];
                        t->e[i] = in->e[j];
                        continue;
                    }
                    if (nd->resample == PS_RESAMPLE_UP2_BILINEAR) {
                        /* sample at ((y - 0.5) / 2, (x - 0.5) / 2) */
                        const double py = ((double)y - 0.5) / 2, px = ((double)x - 0.5) / 2;
                        ry[0] = (int64_t)floor(py);
                        rx[0] = (int64_t)floor(px);
                        wy[1] = py - (double)ry[0];
                        wx[1] = px - (double)rx[0];
                        wy[0] = 1 - wy[1];
                        wx[0] = 1 - wx[1];
                    } else { /* mean of in(2y + {0,1}, 2x + {0,1}) */
                        ry[0] = 2 * y;
                        rx[0] = 2 * x;
                        wy[0] = wy[1] = wx[0] = wx[1] = 0.5;
                    }
                    ry[1] = ry[0] + 1;
                    rx[1] = rx[0] + 1;
                    double acc = 0, mag = 0, prop = 0;
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++) {
                            double v, e;
                            if (!read_b(in, nd->boundary, img, ry[a], rx[b], ch, &v, &e)) {
                                *bad_read = 1;
                                v = NAN;
                                e = INFINITY;
                            }
                            const double w = wy[a] * wx[b];
                            acc += w * v;
                            mag += fabs(w * v);
                            prop += w * e;
                        }
                    t->v[i] = acc;
                    t->e[i] = prop + tol4 * mag;
                }
}

/* The domain of every tensor (no values): inputs from their info, stages
 * from the definitions, each checked against what the builder recorded. */
static int derive_all(const ps_graph *g, gr_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    const int n = ps_graph_num_tensors(g);
    ev->t = calloc(n > 0 ? (size_t)n : 1, sizeof *ev->t);
    if (!ev->t) return fail(ev, "out of memory");
    ev->n = n;
    for (int k = 0; k < n; k++) {
        const ps_node *nd = &g->nodes[k];
        gr_tensor *t = &ev->t[k];
        ps_tensor_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (ps_graph_tensor_info(g, k, &info) != PS_SUCCESS)
            return fail(ev, "tensor %d: ps_graph_tensor_info failed: %s", k, ps_last_error_message());
        if (info.is_input != (nd->kind == PS_NODE_INPUT))
            return fail(ev, "tensor %d: tensor_info says is_input %d, node kind %d", k, info.is_input, (int)nd->kind);
        for (int j = 0; j < nd->n_in; j++)
            if (nd->in[j] < 0 || nd->in[j] >= k) return fail(ev, "tensor %d reads tensor %d (not earlier)", k, nd->in[j]);
        if (nd->kind != PS_NODE_INPUT) {
            if (derive_domain(g, ev, k, t, ev)) return -1;
            continue;
        }
        /* inputs start at (0, 0); their tensor info is their domain */
        t->n = info.n;
        t->c = info.c;
        t->y0 = t->x0 = 0;
        t->h = info.h;
        t->w = info.w;
        if (info.y0 != 0 || info.x0 != 0 || nd->dom.y0 != 0 || nd->dom.x0 != 0 || nd->dom.h != info.h || nd->dom.w != info.w)
            return fail(ev, "input tensor %d: domain does not start at (0, 0) or disagrees with its info", k);
    }
    return 0;
}

int gr_check_domains(const ps_graph *g, char *msg, size_t len)
{
    gr_eval ev;
    const int rc = derive_all(g, &ev);
    if (rc && msg && len) snprintf(msg, len, "%s", ev.msg);
    gr_eval_free(&ev);
    return rc;
}

int gr_eval_graph(const ps_graph *g, const float *const *inputs, gr_eval *ev)
{
    if (derive_all(g, ev)) return -1;
    for (int k = 0; k < ev->n; k++) {
        const ps_node *nd = &g->nodes[k];
        gr_tensor *t = &ev->t[k];
        if (!alloc_tensor(t)) return fail(ev, "out of memory");
        if (nd->kind == PS_NODE_INPUT) {
            int which = -1;
            for (int i = 0; i < ps_graph_num_inputs(g); i++)
                if (ps_graph_input(g, i) == k) which = i;
            if (which < 0) return fail(ev, "input tensor %d is not among ps_graph_input(0..%d)", k, ps_graph_num_inputs(g) - 1);
            const float *src = inputs[which];
            for (int64_t img = 0; img < t->n; img++)
                for (int64_t y = 0; y < t->h; y++)
                    for (int64_t x = 0; x < t->w; x++)
                        for (int64_t ch = 0; ch < t->c; ch++) {
                            const int64_t i = at(t, img, y, x, ch);
                            t->v[i] = src[gr_index(nd->layout, t->c, t->h, t->w, img, ch, y, x)];
                            t->e[i] = 0;
                        }
            continue;
        }
        int bad = 0;
        switch (nd->kind) {
        case PS_NODE_STENCIL: eval_stencil(nd, &ev->t[nd->in[0]], t, &bad); break;
        case PS_NODE_POINTWISE: eval_pointwise(nd, ev, t, &bad); break;
        case PS_NODE_MIX: eval_mix(nd, &ev->t[nd->in[0]], t); break;
        case PS_NODE_RESAMPLE: eval_resample(nd, &ev->t[nd->in[0]], t, &bad); break;
        default: break;
        }
        if (bad)
            return fail(ev, "tensor %d (\"%s\"): a read outside a VALID domain or an unknown expression operator", k,
                        nd->name);
    }
    return 0;
}

void gr_eval_free(gr_eval *ev)
{
    if (!ev) return;
    for (int k = 0; k < ev->n && ev->t; k++) {
        free(ev->t[k].v);
        free(ev->t[k].e);
    }
    free(ev->t);
    ev->t = NULL;
    ev->n = 0;
}

static int64_t info_elems(const ps_graph *g, ps_tensor t)
{
    ps_tensor_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (t < 0 || ps_graph_tensor_info(g, t, &info) != PS_SUCCESS) return 0;
    return info.n * info.h * info.w * info.c;
}

int64_t gr_input_elems(const ps_graph *g, int i) { return info_elems(g, ps_graph_input(g, i)); }
int64_t gr_output_elems(const ps_graph *g, int i) { return info_elems(g, ps_graph_output(g, i)); }

/* Graph output i's stored region (tensor info) and its reference tensor. */
static int out_region(const ps_graph *g, const gr_eval *ev, int i, ps_tensor_info *r, const gr_tensor **t)
{
    const ps_tensor k = ps_graph_output(g, i);
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    if (k < 0 || k >= ev->n || ps_graph_tensor_info(g, k, r) != PS_SUCCESS) return 0;
    *t = &ev->t[k];
    return 1;
}

int64_t gr_compare(const ps_graph *g, const gr_eval *ev, int i, const float *got, gr_cmp *cmp)
{
    memset(cmp, 0, sizeof *cmp);
    ps_tensor_info r;
    const gr_tensor *t;
    if (!out_region(g, ev, i, &r, &t)) {
        cmp->n_bad = 1; /* no such output */
        return 1;
    }
    for (int64_t img = 0; img < r.n; img++)
        for (int64_t y = r.y0; y < r.y0 + r.h; y++)
            for (int64_t x = r.x0; x < r.x0 + r.w; x++)
                for (int64_t ch = 0; ch < r.c; ch++) {
                    const int64_t ri = at(t, img, y, x, ch);
                    const double want = t->v[ri], e = t->e[ri];
                    const double gv = (double)got[gr_index(r.layout, r.c, r.h, r.w, img, ch, y - r.y0, x - r.x0)];
                    if (!isfinite(want) || isinf(e)) {
                        /* ill-conditioned: only "written and finite" is checked */
                        cmp->n_unchecked++;
                        if (isfinite(gv)) continue;
                    }
                    const double err = fabs(gv - want), bound = GR_SLACK * e + GR_TINY;
                    double norm = err / bound;
                    if (!(err <= bound) || !isfinite(gv)) {
                        if (!cmp->n_bad) {
                            cmp->bad_img = img;
                            cmp->bad_ch = ch;
                            cmp->bad_y = y;
                            cmp->bad_x = x;
                            cmp->bad_got = gv;
                            cmp->bad_want = want;
                            cmp->bad_bound = bound;
                        }
                        cmp->n_bad++;
                        if (!isfinite(norm)) norm = INFINITY;
                    }
                    if (norm > cmp->max_norm_err) cmp->max_norm_err = norm;
                    if (err > cmp->max_err) cmp->max_err = err;
                }
    return cmp->n_bad;
}

void gr_store_output(const ps_graph *g, const gr_eval *ev, int i, float *dst)
{
    ps_tensor_info r;
    const gr_tensor *t;
    if (!out_region(g, ev, i, &r, &t)) return;
    for (int64_t img = 0; img < r.n; img++)
        for (int64_t y = r.y0; y < r.y0 + r.h; y++)
            for (int64_t x = r.x0; x < r.x0 + r.w; x++)
                for (int64_t ch = 0; ch < r.c; ch++)
                    dst[gr_index(r.layout, r.c, r.h, r.w, img, ch, y - r.y0, x - r.x0)] = (float)t->v[at(t, img, y, x, ch)];
}

/* ---------------------------------------------------------------- printing */

static const char *boundary_name(ps_boundary b)
{
    return b == PS_BOUNDARY_ZERO ? "zero" : b == PS_BOUNDARY_CLAMP ? "clamp" : b == PS_BOUNDARY_VALID ? "valid"
           : b == PS_BOUNDARY_IGNORE ? "ignore" : "?";
}

void gr_print_graph(const ps_graph *g, FILE *f)
{
    static const char *reduce[] = {"sum", "max", "min"};
    static const char *resample[] = {"up2-nearest", "up2-bilinear", "down2-average"};
    for (int k = 0; k < ps_graph_num_tensors(g); k++) {
        const ps_node *nd = &g->nodes[k];
        fprintf(f, "  t%d \"%s\" %lldx[%lld,+%lld)x[%lld,+%lld)x%lld ", k, nd->name, (long long)nd->n,
                (long long)nd->dom.y0, (long long)nd->dom.h, (long long)nd->dom.x0, (long long)nd->dom.w,
                (long long)nd->c);
        switch (nd->kind) {
        case PS_NODE_INPUT: fprintf(f, "input %s", nd->layout == PS_LAYOUT_NCHW ? "nchw" : "nhwc"); break;
        case PS_NODE_STENCIL:
            fprintf(f, "stencil(t%d) %s %s stride %dx%d%s taps", nd->in[0], reduce[nd->reduce % 3],
                    boundary_name(nd->boundary), nd->sy, nd->sx, nd->per_channel ? " per-channel" : "");
            for (int t = 0; t < nd->n_taps; t++) {
                fprintf(f, " (%d,%d)", nd->dy[t], nd->dx[t]);
                if (!nd->per_channel) fprintf(f, "*%.9g", (double)nd->w[t]);
            }
            break;
        case PS_NODE_POINTWISE: {
            char text[2048];
            ps_expr_to_str(nd->expr, text, (int)sizeof text);
            fprintf(f, "pointwise(");
            for (int j = 0; j < nd->n_in; j++) fprintf(f, "%st%d", j ? ", " : "", nd->in[j]);
            fprintf(f, ") %s", text);
            break;
        }
        case PS_NODE_MIX: fprintf(f, "mix(t%d) k %lld%s", nd->in[0], (long long)nd->c, nd->bias ? " bias" : ""); break;
        case PS_NODE_RESAMPLE:
            fprintf(f, "resample(t%d) %s %s", nd->in[0], resample[nd->resample % 3], boundary_name(nd->boundary));
            break;
        case PS_NODE_CONV: fprintf(f, "conv(t%d) k %lld taps %d", nd->in[0], (long long)nd->c, nd->n_taps); break;
        case PS_NODE_CONCAT: fprintf(f, "concat of %d", nd->n_in); break;
        case PS_NODE_GAP: fprintf(f, "global avg pool(t%d)", nd->in[0]); break;
        }
        if (nd->output_index >= 0)
            fprintf(f, "  -> output %d %s region [%lld,+%lld)x[%lld,+%lld)", nd->output_index,
                    nd->layout == PS_LAYOUT_NCHW ? "nchw" : "nhwc", (long long)nd->out_region.y0,
                    (long long)nd->out_region.h, (long long)nd->out_region.x0, (long long)nd->out_region.w);
        fprintf(f, "\n");
    }
}
