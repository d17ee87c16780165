/* Double-precision reference evaluation of a stage graph
 * (include/polysci/graph.h, include/polysci/expr.h), with an error bound.
 *
 * Every tensor is computed whole over its domain, stage after stage in
 * creation order, straight from the definitions in graph.h: nothing is fused,
 * tiled or inlined. Domains are derived here from those definitions too and
 * checked against what the builder recorded, so a builder that derives a
 * wrong domain fails the evaluation instead of being trusted.
 *
 * Alongside each value v the evaluation carries a bound e on how far the
 * result of a CORRECT single-precision implementation may be from v: the
 * graph's inputs, weights and constants are f32 values taken exactly, so e
 * comes only from the f32 rounding of every operation and from how rounding
 * errors of a stage's inputs propagate through it (see graph_ref.c for the
 * per-operation rules and why they hold). gr_compare accepts a result when
 *     |got - v| <= GR_SLACK * e + GR_TINY
 * and never accepts NaN or infinity (so NaN-prefilled, unwritten elements
 * fail).
 *
 * The graph is read through the public API where it has getters (counts,
 * tensor info, inputs/outputs, output regions) and through the builder's
 * nodes (lib/graph/graph_impl.h: struct layouts only, no internal functions)
 * for stage parameters, which graph.h has no getters for. It links with
 * either the shared library or polysci_internal and depends on nothing else
 * in tests/, so the CLI can link it too. */
#ifndef PS_TESTS_GRAPH_REF_H
#define PS_TESTS_GRAPH_REF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "polysci/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Multiplier on the propagated bound, for the first-order terms the rules
 * drop (products of two rounding errors) and a reduction's partial sums
 * being rounded against a slightly different running value. */
#define GR_SLACK 2.0
/* Absolute slack for results that are exactly 0 (e.g. a ZERO-boundary
 * stencil that reads only outside its input). */
#define GR_TINY 1e-30

/* One tensor, evaluated over its domain [y0, y0 + h) x [x0, x0 + w). */
typedef struct gr_tensor {
    int64_t n, c, y0, x0, h, w;
    double *v; /* value, at ((img * h + (y - y0)) * w + (x - x0)) * c + ch */
    double *e; /* error bound of a correct f32 implementation, same index */
} gr_tensor;

typedef struct gr_eval {
    int n;         /* tensors */
    gr_tensor *t;  /* t[0 .. n-1] in creation order */
    char msg[512]; /* why gr_eval_graph failed */
} gr_eval;

/* Evaluates every tensor of g; inputs[i] holds graph input i in its layout.
 * Returns 0, or -1 with ev->msg (an unknown node kind or operator, a domain
 * the builder recorded differently, out of memory). gr_eval_free releases
 * ev either way. */
int gr_eval_graph(const ps_graph *g, const float *const *inputs, gr_eval *ev);
void gr_eval_free(gr_eval *ev);

/* Derives every tensor's domain from the definitions and compares it with
 * the builder's, without computing values (for graphs too large to
 * evaluate). Returns 0, or -1 with the reason in msg. */
int gr_check_domains(const ps_graph *g, char *msg, size_t len);

/* Elements of graph input / output number i as the user stores them
 * (n * h * w * c of its tensor info: the stored region for outputs). */
int64_t gr_input_elems(const ps_graph *g, int i);
int64_t gr_output_elems(const ps_graph *g, int i);

/* Offset of (img, ch, y, x) of an n x h x w x c buffer in `layout`
 * (y, x relative to the buffer's corner). */
int64_t gr_index(ps_act_layout layout, int64_t c, int64_t h, int64_t w, int64_t img, int64_t ch, int64_t y, int64_t x);

typedef struct gr_cmp {
    int64_t n_bad;       /* elements outside the bound (NaN and inf count as bad) */
    int64_t n_unchecked; /* ill-conditioned elements (infinite bound): only required to be finite */
    double max_norm_err; /* max of |got - v| / (GR_SLACK * e + GR_TINY); <= 1 passes */
    double max_err;      /* max of |got - v| */
    /* the first bad element: */
    int64_t bad_img, bad_ch, bad_y, bad_x; /* y, x in the tensor's coordinates */
    double bad_got, bad_want, bad_bound;
} gr_cmp;

/* Compares `got` (graph output i, as stored by ps_graph_execute) with the
 * reference. Returns the number of bad elements (cmp->n_bad). */
int64_t gr_compare(const ps_graph *g, const gr_eval *ev, int i, const float *got, gr_cmp *cmp);

/* Stores the reference of graph output i as f32 in the user's layout and
 * region (what a correct execute writes, up to the bound). */
void gr_store_output(const ps_graph *g, const gr_eval *ev, int i, float *dst);

/* The tolerance of a sum of L rounded f32 terms, relative to the sum of
 * their magnitudes (graph_ref.c). */
double gr_sum_tolerance(int64_t L);

/* Readable listing of the graph (one line per tensor: kind, parameters,
 * domain), for failure reports. */
void gr_print_graph(const ps_graph *g, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
