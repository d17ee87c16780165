/* Building the analysed loop nest (see model.h) from a descriptor and a
 * schedule, mirroring what lib/execution runs. */
#include "analysis/model.h"
#include "core/intmath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static const char *const conv_dim_names[PS_DIM_COUNT] = {"n", "k", "oh", "ow", "c"};
static const char *const gemm_dim_names[PS_DIM_COUNT] = {"?", "m", "?", "n", "k"};

void psa_model_release(psa_model *m)
{
    if (!m) return;
    for (int i = 0; i < 2; i++) {
        free(m->brk[i].v);
        m->brk[i].v = NULL;
        m->brk[i].n = 0;
    }
    free(m->seg_off);
    free(m->seg_slo);
    free(m->seg_shi);
    m->seg_off = m->seg_slo = m->seg_shi = NULL;
}

static void add_level(psa_model *m, int coord, int64_t g, int brk, int tile_dim, int64_t tile, int parallel,
                      const char *name)
{
    psa_level *l = &m->lev[m->nlev++];
    l->coord = coord;
    l->g = g;
    l->brk = brk;
    l->segs = 0;
    l->tile_dim = tile_dim;
    l->tile = tile;
    l->parallel = parallel;
    snprintf(l->name, sizeof l->name, "%s", name);
}

/* Largest range a level on `coord` can see after the levels added so far. */
static int64_t parent_span(const psa_model *m, int coord)
{
    int64_t span = m->ext[coord];
    for (int i = 0; i < m->nlev; i++)
        if (m->lev[i].coord == coord && m->lev[i].brk < 0 && !m->lev[i].segs) span = min64(span, m->lev[i].g);
    return span;
}

/* A microkernel level that always has one iteration is left out. */
static void add_mk_level(psa_model *m, int coord, int64_t g, const char *name)
{
    if (g >= parent_span(m, coord)) return;
    add_level(m, coord, g, -1, -1, 0, 0, name);
}

static void add_breaks_level(psa_model *m, int coord, int brk, const char *name)
{
    if (m->brk[brk].n == 0) return;
    add_level(m, coord, 0, brk, -1, 0, 0, name);
}

static ps_status set_breaks(psa_breaks *b, const int64_t *v, int n)
{
    b->n = 0;
    b->v = NULL;
    if (n == 0) return PS_SUCCESS;
    b->v = malloc((size_t)n * sizeof *b->v);
    if (!b->v) return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    memcpy(b->v, v, (size_t)n * sizeof *v);
    b->n = n;
    return PS_SUCCESS;
}

/* The executor's segments (lib/execution/build.c): per ow-block, runs of
 * filter columns valid on the same output columns, the one spanning the
 * whole block moved first. */
static ps_status conv_segments(psa_model *m, int64_t n)
{
    const int64_t OW = m->ext[PSA_COW], S = m->ext[PSA_CS], nb = ceil_div(OW, n);
    m->seg_n = n;
    m->seg_nblocks = nb;
    m->seg_maxp = 0;
    m->seg_off = malloc((size_t)(nb + 1) * sizeof *m->seg_off);
    m->seg_slo = malloc((size_t)(nb * S) * sizeof *m->seg_slo);
    m->seg_shi = malloc((size_t)(nb * S) * sizeof *m->seg_shi);
    int64_t *olo = malloc((size_t)S * sizeof *olo), *ohi = malloc((size_t)S * sizeof *ohi);
    if (!m->seg_off || !m->seg_slo || !m->seg_shi || !olo || !ohi) {
        free(olo);
        free(ohi);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    }
    int64_t np = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int64_t a0 = b * n, a1 = min64((b + 1) * n, OW), first = np;
        m->seg_off[b] = np;
        for (int64_t s = 0; s < S; s++) {
            int64_t lo = max64(a0, ceil_div(max64(0, m->pl - s * m->dw), m->sw));
            int64_t hi = min64(a1, ps_floor_div(m->W - 1 + m->pl - s * m->dw, m->sw) + 1);
            if (hi <= lo) continue;
            if (np > first && m->seg_shi[np - 1] == s && olo[np - first - 1] == lo && ohi[np - first - 1] == hi) {
                m->seg_shi[np - 1] = s + 1;
            } else {
                olo[np - first] = lo;
                ohi[np - first] = hi;
                m->seg_slo[np] = s;
                m->seg_shi[np] = s + 1;
                np++;
            }
        }
        for (int64_t i = first; i < np; i++) {
            if (olo[i - first] == a0 && ohi[i - first] == a1) {
                int64_t slo = m->seg_slo[i], shi = m->seg_shi[i];
                memmove(&m->seg_slo[first + 1], &m->seg_slo[first], (size_t)(i - first) * sizeof *m->seg_slo);
                memmove(&m->seg_shi[first + 1], &m->seg_shi[first], (size_t)(i - first) * sizeof *m->seg_shi);
                m->seg_slo[first] = slo;
                m->seg_shi[first] = shi;
                break;
            }
        }
        m->seg_maxp = max64(m->seg_maxp, np - first);
    }
    m->seg_off[nb] = np;
    free(olo);
    free(ohi);
    return PS_SUCCESS;
}

/* The executor runs a chunk's full C blocks, then the remainder block. */
static ps_status part_breaks(psa_model *m, int64_t k)
{
    const int64_t C = m->ext[PSA_CC];
    if (C % k != 0 && C / k >= 1) {
        int64_t b = (C / k) * k;
        return set_breaks(&m->brk[1], &b, 1);
    }
    return set_breaks(&m->brk[1], NULL, 0);
}

static const int dim_coord[PS_DIM_COUNT] = {PSA_CN, PSA_CK, PSA_COH, PSA_COW, PSA_CC};

/* Loop names in the user's terms: for row-major GEMMs the stage's K and OW
 * dimensions were swapped (as the executor does) and are named back. */
static ps_status add_schedule_loops(psa_model *m, const ps_stage *sg, const int64_t text[PS_DIM_COUNT],
                                    const int64_t unit[PS_DIM_COUNT], int is_gemm, int swapped)
{
    const char *names[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) {
        int u = swapped && d == PS_DIM_K ? PS_DIM_OW : swapped && d == PS_DIM_OW ? PS_DIM_K : d;
        names[d] = is_gemm ? gemm_dim_names[u] : conv_dim_names[u];
    }
    int64_t last_tile[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) last_tile[d] = INT64_MAX;
    if (sg->n_loops < 0 || sg->n_loops > PS_SCHEDULE_MAX_LOOPS)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: bad loop count %d", sg->n_loops);
    int in_band = 1;
    m->nband = 0;
    for (int i = 0; i < sg->n_loops; i++) {
        const ps_loop *l = &sg->loops[i];
        if ((int)l->dim < 0 || l->dim >= PS_DIM_COUNT)
            return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: loop %d has unknown dimension %d", i, (int)l->dim);
        const int d = l->dim;
        if (is_gemm && (d == PS_DIM_N || d == PS_DIM_OH))
            return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: loop %d: dimension %d does not exist for gemm", i, d);
        if (l->tile < 1)
            return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: loop %d (%s) has tile %lld < 1", i, names[d],
                            (long long)l->tile);
        if (l->tile >= last_tile[d])
            return ps_error(PS_ERR_INVALID_SCHEDULE,
                            "analysis: loops over %s must have strictly decreasing tiles (%lld after %lld)", names[d],
                            (long long)l->tile, (long long)last_tile[d]);
        last_tile[d] = l->tile;
        if (l->parallel) {
            if (!in_band)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: parallel loop %d (%s) is not in the outermost band",
                                i, names[d]);
            if (d == PS_DIM_C)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: the reduction loop %s cannot run in parallel",
                                names[d]);
            m->nband++;
        } else {
            in_band = 0;
        }
        int64_t g;
        if (!ps_mul_ok(l->tile, unit[d], &g))
            return ps_error(PS_ERR_OVERFLOW, "analysis: tile %lld of %s overflows", (long long)l->tile, names[d]);
        char name[32];
        if (l->tile > 1)
            snprintf(name, sizeof name, "%s:%lld%s", names[d], (long long)l->tile, l->parallel ? "*" : "");
        else
            snprintf(name, sizeof name, "%s%s", names[d], l->parallel ? "*" : "");
        add_level(m, dim_coord[d], g, -1, d, l->tile, l->parallel, name);
    }
    for (int d = 0; d < PS_DIM_COUNT; d++) {
        if (last_tile[d] == INT64_MAX) {
            if (text[d] > 1)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: no loop over %s, whose extent is %lld", names[d],
                                (long long)text[d]);
        } else if (last_tile[d] != 1) {
            return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: the innermost loop over %s has tile %lld; it must be 1",
                            names[d], (long long)last_tile[d]);
        }
    }
    /* Trip counts of the band as the executor collapses it: a loop's trip is
     * taken over a full parent tile (iterations past the extent are empty). */
    int64_t parent[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) parent[d] = text[d];
    m->T = 1;
    for (int i = 0; i < m->nband; i++) {
        const ps_loop *l = &sg->loops[i];
        m->band_trip[i] = ceil_div(parent[l->dim], l->tile);
        parent[l->dim] = l->tile;
        if (!ps_mul_ok(m->T, m->band_trip[i], &m->T))
            return ps_error(PS_ERR_OVERFLOW, "analysis: parallel band too large");
    }
    return PS_SUCCESS;
}

static void set_arrays(psa_model *m, int is_conv, int swapped)
{
    const int64_t *x = m->ext;
    int64_t in[4] = {x[PSA_CN], m->H, m->W, x[PSA_CC]};
    int64_t wt[4] = {x[PSA_CK], x[PSA_CC], x[PSA_CR], x[PSA_CS]};
    int64_t out[4] = {x[PSA_CN], x[PSA_COH], x[PSA_COW], x[PSA_CK]};
    memcpy(m->arr_ext[PSA_IN], in, sizeof in);
    memcpy(m->arr_ext[PSA_WT], wt, sizeof wt);
    memcpy(m->arr_ext[PSA_OUT], out, sizeof out);
    if (is_conv) {
        m->arr_name[PSA_IN] = "I";
        m->arr_name[PSA_WT] = "Wt";
        m->arr_name[PSA_OUT] = "O";
        m->order[0] = PSA_IN;
        m->order[1] = PSA_WT;
        m->order[2] = PSA_OUT;
    } else if (!swapped) {
        m->arr_name[PSA_IN] = "B";
        m->arr_name[PSA_WT] = "A";
        m->arr_name[PSA_OUT] = "C";
        m->order[0] = PSA_WT;
        m->order[1] = PSA_IN;
        m->order[2] = PSA_OUT;
    } else {
        /* Row-major: the normalized problem is C^T = B^T A^T. */
        m->arr_name[PSA_IN] = "A";
        m->arr_name[PSA_WT] = "B";
        m->arr_name[PSA_OUT] = "C";
        m->order[0] = PSA_IN;
        m->order[1] = PSA_WT;
        m->order[2] = PSA_OUT;
    }
}

ps_status psa_model_from_schedule(const ps_desc *desc, const ps_schedule *sched, int nthreads, psa_model *m)
{
    memset(m, 0, sizeof *m);
    if (!desc || !sched) return ps_error(PS_ERR_NULL_POINTER, "analysis: desc or schedule is NULL");
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
    if (sched->n_stages != 1)
        return ps_error(PS_ERR_UNSUPPORTED, "analysis: %d stages; only single-stage schedules are analysed",
                        sched->n_stages);
    /* Row-major GEMMs run as the transposed column-major problem: the
     * schedule's m (rows of the user's C) blocks the normalized columns. */
    const int swapped = desc->kind == PS_OP_GEMM && desc->u.gemm.order == PS_ROW_MAJOR;
    ps_stage stage = sched->stages[0];
    if (swapped) {
        stage.kernel.m = sched->stages[0].kernel.n;
        stage.kernel.n = sched->stages[0].kernel.m;
        for (int i = 0; i < stage.n_loops && i < PS_SCHEDULE_MAX_LOOPS; i++)
            stage.loops[i].dim = stage.loops[i].dim == PS_DIM_K    ? PS_DIM_OW
                                 : stage.loops[i].dim == PS_DIM_OW ? PS_DIM_K
                                                                   : stage.loops[i].dim;
    }
    const ps_stage *sg = &stage;
    const ps_kernel_shape *ks = &sg->kernel;
    if (ks->m < 1 || ks->n < 1 || ks->k < 1 || ks->batch < 1)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "analysis: microkernel %dx%dx%d/%d out of range", ks->m, ks->n,
                        ks->k, ks->batch);
    m->nthreads = nthreads > 1 ? nthreads : 1;
    int64_t text[PS_DIM_COUNT], unit[PS_DIM_COUNT];
    if (desc->kind == PS_OP_CONV_FWD) {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        m->op = PSA_OP_CONV;
        /* The executor's rule (build.c), and the conv over the padded copy it
         * then reads (every tap valid). */
        m->merge_taps = ps_conv_merge_taps_view(&c, ks->k);
        m->H = c.H; m->W = c.W; m->sh = c.sh; m->sw = c.sw; m->pt = c.pt; m->pl = c.pl; m->dh = c.dh; m->dw = c.dw;
        int64_t x[PSA_NCOORD] = {c.N, c.K, c.OH, c.OW, c.C, c.R, c.S};
        memcpy(m->ext, x, sizeof x);
        unit[PS_DIM_N] = 1; unit[PS_DIM_K] = ks->m; unit[PS_DIM_OH] = 1; unit[PS_DIM_OW] = ks->n;
        unit[PS_DIM_C] = (int64_t)ks->batch * ks->k;
    } else {
        ps_gemm_shape g;
        ps_gemm_shape_of(&desc->u.gemm, &g);
        m->op = PSA_OP_GEMM;
        m->H = 1; m->W = g.N; m->sh = m->sw = 1; m->pt = m->pl = 0; m->dh = m->dw = 1;
        int64_t x[PSA_NCOORD] = {1, g.M, 1, g.N, g.K, 1, 1};
        memcpy(m->ext, x, sizeof x);
        unit[PS_DIM_N] = 1; unit[PS_DIM_K] = ks->m; unit[PS_DIM_OH] = 1; unit[PS_DIM_OW] = ks->n;
        unit[PS_DIM_C] = (int64_t)ks->batch * ks->k;
    }
    for (int d = 0; d < PS_DIM_COUNT; d++) text[d] = ceil_div(m->ext[dim_coord[d]], unit[d]);
    if (m->ext[PSA_COH] < 1 || m->ext[PSA_COW] < 1)
        return ps_error(PS_ERR_INVALID_ARG, "analysis: empty output");
    set_arrays(m, m->op == PSA_OP_CONV, swapped);
    if ((st = add_schedule_loops(m, sg, text, unit, m->op == PSA_OP_GEMM, swapped))) goto fail;
    if ((st = part_breaks(m, ks->k))) goto fail;
    if (m->op == PSA_OP_CONV) {
        if ((st = conv_segments(m, ks->n))) goto fail;
        if (m->seg_maxp > 1) {
            add_level(m, PSA_CS, 0, -1, -1, 0, 0, "seg");
            m->lev[m->nlev - 1].segs = 1;
        }
        add_breaks_level(m, PSA_CC, 1, "part");
        if (m->merge_taps) {
            /* One call per filter row: k = the segment's taps x C. */
            add_mk_level(m, PSA_CR, 1, "r");
            add_mk_level(m, PSA_COW, 1, "ow_e");
            add_mk_level(m, PSA_CS, 1, "s");
        } else {
            add_mk_level(m, PSA_CR, 1, "r");
            add_mk_level(m, PSA_CS, 1, "s");
            add_mk_level(m, PSA_CC, ks->k, "cb");
            add_mk_level(m, PSA_COW, 1, "ow_e");
        }
        add_mk_level(m, PSA_CC, 1, "c_e");
        add_mk_level(m, PSA_CK, 1, "k_e");
    } else {
        add_breaks_level(m, PSA_CC, 1, "part");
        add_mk_level(m, PSA_COW, 1, swapped ? "i" : "j");
        add_mk_level(m, PSA_CC, 1, "kk");
        add_mk_level(m, PSA_CK, 1, swapped ? "j" : "i");
    }
    return PS_SUCCESS;
fail:
    psa_model_release(m);
    return st;
}

ps_status psa_model_matmul(int64_t M, int64_t N, int64_t K, const char *order, psa_model *m)
{
    memset(m, 0, sizeof *m);
    if (!order) return ps_error(PS_ERR_NULL_POINTER, "analysis: order is NULL");
    if (M < 1 || N < 1 || K < 1)
        return ps_error(PS_ERR_INVALID_ARG, "analysis: matmul sizes must be >= 1 (M %lld, N %lld, K %lld)",
                        (long long)M, (long long)N, (long long)K);
    if (strlen(order) != 3 || !strchr(order, 'i') || !strchr(order, 'j') || !strchr(order, 'k'))
        return ps_error(PS_ERR_INVALID_ARG, "analysis: loop order \"%s\" is not a permutation of \"ijk\"", order);
    int64_t t;
    if (!ps_mul_ok(M, N, &t) || !ps_mul_ok(t, K, &t)) return ps_error(PS_ERR_OVERFLOW, "analysis: matmul too large");
    m->op = PSA_OP_MATMUL;
    m->H = 1; m->W = N; m->sh = m->sw = 1; m->pt = m->pl = 0; m->dh = m->dw = 1;
    int64_t x[PSA_NCOORD] = {1, M, 1, N, K, 1, 1};
    memcpy(m->ext, x, sizeof x);
    m->nthreads = 1;
    m->T = 1;
    set_arrays(m, 0, 0);
    for (int i = 0; i < 3; i++) {
        char name[2] = {order[i], 0};
        int coord = order[i] == 'i' ? PSA_CK : order[i] == 'j' ? PSA_COW : PSA_CC;
        add_level(m, coord, 1, -1, -1, 0, 0, name);
    }
    return PS_SUCCESS;
}

void psa_thread_chunk(const psa_model *m, int t, int64_t *b, int64_t *e)
{
    /* As the executor (T * t / nt), without overflowing for huge bands. */
    *b = (int64_t)((__int128)m->T * t / m->nthreads);
    *e = (int64_t)((__int128)m->T * (t + 1) / m->nthreads);
}

int psa_rep_thread(const psa_model *m)
{
    for (int t = 0; t < m->nthreads; t++) {
        int64_t b, e;
        psa_thread_chunk(m, t, &b, &e);
        if (e > b) return t;
    }
    return 0;
}

void psa_band_decode(const psa_model *m, int64_t g, int64_t *idx)
{
    for (int i = m->nband - 1; i >= 0; i--) {
        idx[i] = g % m->band_trip[i];
        g /= m->band_trip[i];
    }
}

void psa_access(const psa_model *m, int arr, const int64_t x[PSA_NCOORD], int64_t e[4])
{
    switch (arr) {
    case PSA_IN:
        e[0] = x[PSA_CN];
        e[1] = x[PSA_COH] * m->sh - m->pt + x[PSA_CR] * m->dh;
        e[2] = x[PSA_COW] * m->sw - m->pl + x[PSA_CS] * m->dw;
        e[3] = x[PSA_CC];
        break;
    case PSA_WT:
        e[0] = x[PSA_CK]; e[1] = x[PSA_CC]; e[2] = x[PSA_CR]; e[3] = x[PSA_CS];
        break;
    default:
        e[0] = x[PSA_CN]; e[1] = x[PSA_COH]; e[2] = x[PSA_COW]; e[3] = x[PSA_CK];
        break;
    }
}

int psa_array_uses_dim(int arr, int d)
{
    switch (arr) {
    case PSA_IN: return d == PS_DIM_N || d == PS_DIM_OH || d == PS_DIM_OW || d == PS_DIM_C;
    case PSA_WT: return d == PS_DIM_K || d == PS_DIM_C;
    default: return d == PS_DIM_N || d == PS_DIM_K || d == PS_DIM_OH || d == PS_DIM_OW;
    }
}
