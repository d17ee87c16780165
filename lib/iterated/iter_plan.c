/* Iterated-stencil plans: ps_iter_plan_create (dependences, tiling choice,
 * layout, all decided once), execute, describe, stats
 * (include/polysci/iterated.h). */
#include "iterated/iter_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "plan/context_impl.h"

/* Taps k, k + 1, k + 2 read x - 1, x, x + 1 of one row of one array. */
static int triple_at(const ps_it_upd *U, int k, int nd)
{
    const int xd = nd - 1;
    if (k + 2 >= U->n_taps) return 0;
    for (int j = 0; j < 3; j++) {
        const ps_it_tap *t = &U->taps[k + j];
        if (t->array != U->taps[k].array || t->off[xd] != j - 1) return 0;
        for (int d = 0; d < xd; d++)
            if (t->off[d] != U->taps[k].off[d]) return 0;
    }
    return 1;
}

/* The update's taps as sum_runs' runs (iter_impl.h), in their order: the
 * stencils of the benchmarks (heat along rows, face neighbours around a
 * row's triple, the 9-point Jacobi's three triples) are all in that form. */
static void find_runs(ps_it_upd *U, int nd)
{
    const int xd = nd - 1;
    int k = 0, s0 = 0, n3 = 0, s1 = 0;
    U->run_s0 = U->run_n3 = U->run_s1 = 0;
    if (U->n_taps > PS_SUM_RUNS_MAX_TAPS) return;
    for (; k < U->n_taps && U->taps[k].off[xd] == 0; k++) s0++; /* a triple starts at -1 */
    for (; triple_at(U, k, nd); k += 3) n3++;
    for (; k < U->n_taps && U->taps[k].off[xd] == 0; k++) s1++;
    if (k < U->n_taps || n3 < 1 || n3 > PS_SUM_RUNS_MAX_TRIPLES) return;
    U->run_s0 = s0;
    U->run_n3 = n3;
    U->run_s1 = s1;
}

/* Columns per strip of compute_box's rows: the distinct rows one output
 * row reads (an array at one offset across the rows), the row it writes
 * and the input row the next output row adds, in three quarters of L1,
 * whole vectors (heat-2d's rows of 4000 on a 32 KiB L1: strips of 1216
 * columns ran its split tiles at 68.5-68.9 ms against 71.7-73.2 with the
 * 2048 the input rows alone allow). 0 (whole rows) for one-dimensional grids, whose boxes
 * are one row, and where an update has two or more taps per row it reads:
 * its kernel then has the multiply-adds to hide loads from L2, and the
 * strips' shorter sequential streams cost the prefetchers more than the L1
 * reuse saves (the 9-point Jacobi: 4% slower with its rows in L2, 25% in
 * L3; the 5-point heat stencil 20-25% faster). */
static int64_t strip_columns(const ps_iter_plan *pl, size_t l1_bytes)
{
    if (pl->nd < 2 || l1_bytes == 0) return 0;
    const int xd = pl->nd - 1;
    int rows = 1;
    for (int a = 0; a < pl->n_arrays; a++) {
        const ps_it_upd *U = &pl->upd[a];
        int distinct = 0;
        for (int k = 0; k < U->n_taps; k++) {
            int seen = 0;
            for (int j = 0; j < k && !seen; j++) {
                seen = U->taps[j].array == U->taps[k].array;
                for (int d = 0; d < xd && seen; d++) seen = U->taps[j].off[d] == U->taps[k].off[d];
            }
            distinct += !seen;
        }
        if (U->n_taps >= 2 * distinct) return 0;
        if (distinct > rows) rows = distinct;
    }
    int64_t w = (int64_t)(0.75 * (double)l1_bytes / (4.0 * (rows + 2))) / 16 * 16;
    return w < 128 ? 128 : w;
}

static size_t round16(size_t v) { return (v + 15) & ~(size_t)15; }

void ps_iter_options_init(ps_iter_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->tiling = PS_ITER_TILING_AUTO;
}

void ps_iter_plan_destroy(ps_iter_plan *pl)
{
    if (!pl) return;
    for (int a = 0; a < pl->n_arrays; a++) {
        free(pl->upd[a].taps);
        free(pl->upd[a].w);
    }
    free(pl->deps_text);
    free(pl->why);
    free(pl);
}

static const char *tiling_name(ps_iter_tiling t)
{
    static const char *const names[] = {"auto", "step", "overlap", "split", "hybrid"};
    return (unsigned)t < 5 ? names[t] : "?";
}

static ps_status check(const ps_iter *it, const ps_iter_options *o)
{
    static const char who[] = "ps_iter_plan_create";
    if (o->struct_size != sizeof *o)
        return ps_error(PS_ERR_INVALID_ARG, "%s: opts.struct_size is %zu, expected %zu (use ps_iter_options_init)", who,
                        o->struct_size, sizeof *o);
    if (o->num_threads < 0 || o->num_threads > 4096)
        return ps_error(PS_ERR_INVALID_ARG, "%s: num_threads %d out of range (0..4096)", who, o->num_threads);
    if ((unsigned)o->tiling > PS_ITER_TILING_HYBRID) return ps_error(PS_ERR_INVALID_ARG, "%s: unknown tiling %d", who, (int)o->tiling);
    if (o->band < 0 || o->band > (1 << 20))
        return ps_error(PS_ERR_INVALID_ARG, "%s: band %lld out of range (0..2^20)", who, (long long)o->band);
    if (o->tiling == PS_ITER_TILING_STEP && o->band > 1)
        return ps_error(PS_ERR_INVALID_ARG, "%s: the step-by-step tiling runs bands of one step (band %lld given)", who,
                        (long long)o->band);
    for (int d = 0; d < it->ndim; d++)
        if (o->tile[d] < 0) return ps_error(PS_ERR_INVALID_ARG, "%s: tile[%d] = %lld is negative", who, d, (long long)o->tile[d]);
    if (o->skew_width < 0) return ps_error(PS_ERR_INVALID_ARG, "%s: skew_width %lld is negative", who, (long long)o->skew_width);
    if ((unsigned)o->split_order > PS_ITER_SPLIT_PIPELINED)
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown split_order %d", who, (int)o->split_order);
    if (it->n_arrays < 1) return ps_error(PS_ERR_INVALID_ARG, "%s: the descriptor has no array (ps_iter_add_array)", who);
    for (int a = 0; a < it->n_arrays; a++)
        if (!it->upd[a].n_taps)
            return ps_error(PS_ERR_INVALID_ARG, "%s: array \"%s\" has no update (ps_iter_set_update)", who, it->name[a]);
    int r[PS_ITER_MAX_DIMS];
    ps_iter_radius(it, r);
    if (it->boundary == PS_ITER_FIXED)
        for (int d = 0; d < it->ndim; d++)
            if (it->n[d] <= 2 * r[d])
                return ps_error(PS_ERR_INVALID_ARG, "%s: extent %lld along dimension %d leaves no interior for radius %d", who,
                                (long long)it->n[d], d, r[d]);
    return PS_SUCCESS;
}

ps_status ps_iter_plan_create(ps_context *ctx, const ps_iter *it, const ps_iter_options *opts, ps_iter_plan **out)
{
    static const char who[] = "ps_iter_plan_create";
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "%s: plan is NULL", who);
    *out = NULL;
    if (!ctx || !it) return ps_error(PS_ERR_NULL_POINTER, "%s: ctx or it is NULL", who);
    ps_iter_options def;
    if (!opts) {
        ps_iter_options_init(&def);
        opts = &def;
    }
    ps_status st = check(it, opts);
    if (st) return st;
    double t0 = ps_now_ms();
    ps_iter_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    pl->ctx = ctx;
    pl->opts = *opts;
    pl->nthreads = opts->num_threads ? opts->num_threads : ctx->num_threads;
    if (pl->nthreads < 1) pl->nthreads = 1;
    pl->k = ps_row_kernels_for(ctx->machine.simd_f32_lanes < ctx->row_lanes_max ? ctx->machine.simd_f32_lanes
                                                                                : ctx->row_lanes_max);
    pl->nd = it->ndim;
    pl->periodic = it->boundary == PS_ITER_PERIODIC;
    pl->n_arrays = it->n_arrays;
    pl->steps = it->steps;
    pl->skew_dim = -1;
    ps_iter_radius(it, pl->radius);
    pl->npts = 1;
    for (int d = pl->nd - 1; d >= 0; d--) {
        ps_it_dim *D = &pl->dim[d];
        D->n = it->n[d];
        D->periodic = pl->periodic;
        D->lo = pl->periodic ? 0 : pl->radius[d];
        D->hi = pl->periodic ? D->n : D->n - pl->radius[d];
        D->stride = pl->npts;
        pl->npts *= D->n;
    }
    pl->arr_floats = round16((size_t)pl->npts);
    for (int a = 0; a < pl->n_arrays && !st; a++) {
        const ps_it_update *u = &it->upd[a];
        ps_it_upd *U = &pl->upd[a];
        memcpy(pl->name[a], it->name[a], sizeof pl->name[a]);
        U->taps = malloc((size_t)u->n_taps * sizeof *U->taps);
        U->w = malloc((size_t)u->n_taps * sizeof *U->w);
        if (!U->taps || !U->w) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
            break;
        }
        U->n_taps = u->n_taps;
        U->constant = u->constant;
        for (int k = 0; k < u->n_taps; k++) {
            U->taps[k].array = u->taps[k].array;
            for (int d = 0; d < PS_IT_MAX_DIMS; d++) U->taps[k].off[d] = d < pl->nd ? u->taps[k].offset[d] : 0;
            U->w[k] = u->taps[k].weight;
        }
        if (u->n_taps > pl->max_taps) pl->max_taps = u->n_taps;
        find_runs(U, pl->nd);
    }
    ps_it_deps deps;
    memset(&deps, 0, sizeof deps);
    if (!st) st = ps_iter_deps_compute(it, &deps);
    if (!st) {
        pl->deps_text = deps.text;
        deps.text = NULL;
        if (!deps.checks_ok)
            st = ps_error(PS_ERR_BACKEND, "%s: isl found dependences entering an overlapped tile built from them", who);
    }
    if (!st) st = ps_iter_choose(pl, &deps, opts, &pl->ev, &pl->why);
    if (!st) ps_iter_apply(pl, &deps, &pl->ev);
    /* Step by step streams every row from memory, where shorter streams
     * only cost the prefetchers (heat-2d step by step in strips: 290 ->
     * 395 ms). */
    if (!st && pl->tiling != PS_ITER_TILING_STEP) pl->strip = strip_columns(pl, ps_machine_cache_bytes(&ctx->machine, 1));
    ps_iter_deps_release(&deps);
    if (!st) {
        if ((pl->tiling == PS_ITER_TILING_OVERLAP || pl->tiling == PS_ITER_TILING_HYBRID) && pl->band >= 2) {
            double f = 1;
            for (int d = 0; d < pl->nd; d++) f *= (double)pl->dim[d].scr_ext;
            if (f > 1e15) st = ps_error(PS_ERR_OVERFLOW, "%s: the scratch would overflow", who);
            pl->scr_floats = round16((size_t)f);
            pl->thread_floats = 2 * (size_t)pl->n_arrays * pl->scr_floats;
        }
        double bytes = ((double)pl->n_arrays * (double)pl->arr_floats + (double)pl->nthreads * (double)pl->thread_floats) * 4.0;
        if (bytes > 1e18) st = ps_error(PS_ERR_OVERFLOW, "%s: the workspace would overflow", who);
        pl->workspace_bytes = (size_t)bytes;
        if (!st && ctx->memory_limit && pl->workspace_bytes > ctx->memory_limit)
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "%s: the plan needs a %zu-byte workspace, over the context's limit of %zu", who,
                          pl->workspace_bytes, ctx->memory_limit);
    }
    if (st) {
        ps_iter_plan_destroy(pl);
        return st;
    }
    pl->computed = ps_iter_count_points(pl);
    pl->needed = pl->ev.needed;
    pl->plan_ms = ps_now_ms() - t0;
    if (ctx->verbose) {
        fprintf(stderr, "polysci_verbose,iter_create,%dD,%s,band %lld,tile", pl->nd, tiling_name(pl->tiling), (long long)pl->band);
        for (int d = 0; d < pl->nd; d++) fprintf(stderr, "%s%lld", d ? "x" : " ", (long long)pl->dim[d].tile);
        fprintf(stderr, ",%.3f\n", pl->plan_ms);
        /* one line per tiling considered */
        for (const char *l = pl->why; l && *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            while (len > 0 && *l == ' ') {
                l++;
                len--;
            }
            fprintf(stderr, "polysci_verbose,iter_candidate,%.*s\n", len, l);
            l = e ? e + 1 : l + len;
        }
    }
    *out = pl;
    return PS_SUCCESS;
}

ps_status ps_iter_plan_workspace_size(const ps_iter_plan *plan, size_t *bytes)
{
    if (!plan || !bytes) return ps_error(PS_ERR_NULL_POINTER, "ps_iter_plan_workspace_size: plan or bytes is NULL");
    *bytes = plan->workspace_bytes;
    return PS_SUCCESS;
}

static int overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + bn && y < x + an;
}

ps_status ps_iter_execute(const ps_iter_plan *plan, float *const *arrays, void *workspace)
{
    static const char who[] = "ps_iter_execute";
    if (!plan) return ps_error(PS_ERR_NULL_POINTER, "%s: plan is NULL", who);
    if (!arrays) return ps_error(PS_ERR_NULL_POINTER, "%s: arrays is NULL", who);
    size_t bytes = (size_t)plan->npts * sizeof(float);
    for (int a = 0; a < plan->n_arrays; a++) {
        if (!arrays[a]) return ps_error(PS_ERR_NULL_POINTER, "%s: array %d (\"%s\") is NULL", who, a, plan->name[a]);
        for (int b = 0; b < a; b++)
            if (overlaps(arrays[a], bytes, arrays[b], bytes))
                return ps_error(PS_ERR_INVALID_ARG, "%s: arrays \"%s\" and \"%s\" overlap", who, plan->name[b], plan->name[a]);
        if (workspace && overlaps(arrays[a], bytes, workspace, plan->workspace_bytes))
            return ps_error(PS_ERR_INVALID_ARG, "%s: array \"%s\" overlaps the workspace", who, plan->name[a]);
    }
    if (workspace && ((uintptr_t)workspace & 63))
        return ps_error(PS_ERR_INVALID_ARG, "%s: workspace must be 64-byte aligned", who);
    void *ws = workspace;
    if (!ws) {
        ws = aligned_alloc(64, (plan->workspace_bytes + 63) / 64 * 64 + 64);
        if (!ws) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: cannot allocate the %zu-byte workspace", who, plan->workspace_bytes);
    }
    double t0 = plan->ctx->verbose ? ps_now_ms() : 0;
    ps_iter_run(plan, arrays, ws);
    if (plan->ctx->verbose)
        fprintf(stderr, "polysci_verbose,iter_exec,%dD,%s,%lld steps,%.3f\n", plan->nd, tiling_name(plan->tiling),
                (long long)plan->steps, ps_now_ms() - t0);
    if (!workspace) free(ws);
    return PS_SUCCESS;
}

ps_status ps_iter_plan_get_stats(const ps_iter_plan *pl, ps_iter_plan_stats *s)
{
    if (!pl || !s) return ps_error(PS_ERR_NULL_POINTER, "ps_iter_plan_get_stats: plan or stats is NULL");
    if (s->struct_size != sizeof *s)
        return ps_error(PS_ERR_INVALID_ARG, "ps_iter_plan_get_stats: stats.struct_size is %zu, expected %zu", s->struct_size,
                        sizeof *s);
    s->tiling = pl->tiling;
    s->band = pl->band;
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) s->tile[d] = d < pl->nd ? pl->dim[d].tile : 1;
    s->skew_width = pl->skew_dim >= 0 ? pl->skew_w : 0;
    s->phases = pl->tiling != PS_ITER_TILING_SPLIT ? 1 : pl->split_pipe >= 0 ? 2 : pl->n_phases;
    s->split_order = pl->tiling != PS_ITER_TILING_SPLIT ? (ps_iter_split_order)0
                     : pl->split_pipe >= 0                ? PS_ITER_SPLIT_PIPELINED
                                                          : PS_ITER_SPLIT_PHASES;
    s->points_computed = pl->computed;
    s->points_needed = pl->needed;
    s->redundant_fraction = pl->needed > 0 ? pl->computed / pl->needed - 1.0 : 0.0;
    s->scratch_bytes = pl->thread_floats * sizeof(float);
    s->workspace_bytes = pl->workspace_bytes;
    s->model_ms = pl->ev.cost * 1e3;
    s->plan_ms = pl->plan_ms;
    return PS_SUCCESS;
}

static void out(char *buf, size_t len, size_t *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void out(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = *off < len ? len - *off : 0;
    int n = vsnprintf(room ? buf + *off : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) *off += (size_t)n;
}

ps_status ps_iter_plan_describe(const ps_iter_plan *pl, char *buf, size_t len, size_t *needed)
{
    if (!pl) return ps_error(PS_ERR_NULL_POINTER, "ps_iter_plan_describe: plan is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_iter_plan_describe: buf is NULL");
    size_t off = 0;
    int taps = 0;
    for (int a = 0; a < pl->n_arrays; a++) taps += pl->upd[a].n_taps;
    out(buf, len, &off, "iterated-stencil plan: %d-D grid ", pl->nd);
    for (int d = 0; d < pl->nd; d++) out(buf, len, &off, "%s%lld", d ? " x " : "", (long long)pl->dim[d].n);
    out(buf, len, &off, ", %d array%s, %d taps, %s boundary (radius", pl->n_arrays, pl->n_arrays == 1 ? "" : "s", taps,
        pl->periodic ? "periodic" : "fixed");
    for (int d = 0; d < pl->nd; d++) out(buf, len, &off, "%s%d", d ? " x " : " ", pl->radius[d]);
    out(buf, len, &off, "), T = %lld, %d threads, %s row kernels, planned in %.2f ms\n", (long long)pl->steps, pl->nthreads,
        pl->k->isa, pl->plan_ms);
    out(buf, len, &off, "%s", pl->deps_text ? pl->deps_text : "");
    out(buf, len, &off, "chosen: %s%s, band %lld step%s (%lld band%s), tile", tiling_name(pl->tiling),
        pl->opts.tiling == PS_ITER_TILING_AUTO ? " (cost model)" : " (forced)", (long long)pl->band, pl->band == 1 ? "" : "s",
        (long long)pl->n_bands, pl->n_bands == 1 ? "" : "s");
    for (int d = 0; d < pl->nd; d++) {
        const ps_it_dim *D = &pl->dim[d];
        out(buf, len, &off, "%s%lld%s", d ? " x " : " ", (long long)D->tile, D->kind == PS_ITD_FULL ? " (whole)" : "");
    }
    if (pl->skew_dim >= 0)
        out(buf, len, &off, ", chain of skewed tiles %lld wide (slope %lld) along i%d", (long long)pl->skew_w, (long long)pl->skew_s,
            pl->skew_dim);
    if (pl->strip > 0) out(buf, len, &off, ", rows in strips of up to %lld columns", (long long)pl->strip);
    double red = pl->needed > 0 ? pl->computed / pl->needed - 1 : 0;
    out(buf, len, &off, "\n  %.0f point updates for %.0f needed: redundant %.2f%%; ", pl->computed, pl->needed, 100 * red);
    if (pl->tiling == PS_ITER_TILING_SPLIT) {
        /* the components, by phase: bracketed per phase where the phases
         * are the order, one list where the order is pipelined */
        const int pipe = pl->split_pipe >= 0;
        if (pipe) {
            const ps_it_dim *D = &pl->dim[pl->split_pipe];
            out(buf, len, &off,
                "pipelined along i%d: each thread a block of its %lld tiles, the inverted components between two of them "
                "after the second, then (after a barrier) the %lld on the blocks' edges; components",
                pl->split_pipe, (long long)D->ntiles, (long long)(ps_it_n_inverted(D) - (D->ntiles - pl->nthreads)));
        } else {
            out(buf, len, &off, "%d phase%s per band:", pl->n_phases, pl->n_phases == 1 ? "" : "s");
        }
        for (int p = 0; p < pl->n_phases; p++) {
            if (!pipe) out(buf, len, &off, " [");
            for (int q = 0; q < pl->phase[p].n_masks; q++) {
                out(buf, len, &off, "%s", q || pipe ? " " : "");
                for (int d = 0; d < pl->nd; d++)
                    out(buf, len, &off, "%c", pl->dim[d].kind != PS_ITD_SPLIT ? '-' : (pl->phase[p].mask[q] >> d) & 1 ? 'I' : 'U');
                out(buf, len, &off, " x%lld", (long long)pl->phase[p].count[q]);
            }
            if (!pipe) out(buf, len, &off, "]");
        }
        out(buf, len, &off, " (U upright, I inverted, - untiled)\n");
    } else {
        out(buf, len, &off, "%lld parallel tasks per band\n", (long long)pl->ov_tasks);
    }
    out(buf, len, &off, "  scratch %zu bytes per thread, workspace %zu bytes; model %.4g ms\n", pl->thread_floats * sizeof(float),
        pl->workspace_bytes, pl->ev.cost * 1e3);
    out(buf, len, &off, "why: the least modelled time among the candidates of each tiling (far = the grid's traffic, near = "
                        "a task's steps outside L2, sync = barriers):\n%s",
        pl->why ? pl->why : "");
    if (needed) *needed = off;
    if (len > 0) buf[off < len ? off : len - 1] = '\0';
    return PS_SUCCESS;
}
