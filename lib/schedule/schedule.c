/* Schedules as data: construction, text form, and validation against a
 * problem. The strategies that choose one (the expert rules, the default
 * loop order, the variant space and its rankers) live elsewhere and build
 * them through this interface. */
#include "schedule/schedule_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

ps_status ps_schedule_create(int m, int n, int k, int batch, ps_schedule **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_create: out is NULL");
    *out = NULL;
    if (m < 1 || n < 1 || k < 1 || m > PS_KERNEL_DIM_MAX || n > PS_KERNEL_DIM_MAX || k > PS_KERNEL_DIM_MAX)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: microkernel %dx%dx%d out of range (each 1..%d)", m, n, k, PS_KERNEL_DIM_MAX);
    if (batch < 1 || batch > PS_KERNEL_BATCH_MAX)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: batch %d out of range (1..%d)", batch, PS_KERNEL_BATCH_MAX);
    ps_schedule *s = calloc(1, sizeof *s);
    if (!s) return ps_error(PS_ERR_OUT_OF_MEMORY, "schedule: out of memory");
    s->n_stages = 1;
    s->stages[0].kernel = (ps_kernel_shape){m, n, k, batch};
    *out = s;
    return PS_SUCCESS;
}

ps_status ps_schedule_add_loop(ps_schedule *sched, ps_dim dim, int64_t tile, int parallel)
{
    if (!sched) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_add_loop: sched is NULL");
    if ((int)dim < 0 || dim >= PS_DIM_COUNT)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: unknown dimension %d", (int)dim);
    if (tile < 1) return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: tile must be >= 1 (got %lld)", (long long)tile);
    ps_stage *st = &sched->stages[sched->n_stages - 1];
    if (st->n_loops >= PS_SCHEDULE_MAX_LOOPS)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: more than %d loops", PS_SCHEDULE_MAX_LOOPS);
    st->loops[st->n_loops++] = (ps_loop){dim, tile, parallel ? 1 : 0};
    return PS_SUCCESS;
}

ps_schedule *ps_schedule_copy(const ps_schedule *sched)
{
    if (!sched) return NULL;
    ps_schedule *s = malloc(sizeof *s);
    if (s) memcpy(s, sched, sizeof *s);
    return s;
}

void ps_schedule_destroy(ps_schedule *sched) { free(sched); }

static const char *const conv_names[PS_DIM_COUNT] = {"n", "k", "oh", "ow", "c"};
static const char *const gemm_names[PS_DIM_COUNT] = {NULL, "m", NULL, "n", "k"};

const char *ps_dim_name(ps_op_kind kind, ps_dim dim)
{
    if ((int)dim < 0 || dim >= PS_DIM_COUNT) return "?";
    const char *n = kind == PS_OP_GEMM ? gemm_names[dim] : conv_names[dim];
    return n ? n : "?";
}

static int dim_of_name(ps_op_kind kind, const char *name, size_t len)
{
    const char *const *names = kind == PS_OP_GEMM ? gemm_names : conv_names;
    for (int d = 0; d < PS_DIM_COUNT; d++)
        if (names[d] && strlen(names[d]) == len && strncmp(names[d], name, len) == 0) return d;
    return -1;
}

static int parse_int(const char **p, long long *v)
{
    if (!isdigit((unsigned char)**p)) return 0;
    errno = 0;
    char *end;
    *v = strtoll(*p, &end, 10);
    if (errno) return 0;
    *p = end;
    return 1;
}

static void skip_ws(const char **p) { while (isspace((unsigned char)**p)) (*p)++; }

ps_status ps_schedule_parse(ps_op_kind kind, const char *text, ps_schedule **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_parse: out is NULL");
    *out = NULL;
    if (!text) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_parse: text is NULL");
    if (kind != PS_OP_CONV_FWD && kind != PS_OP_GEMM)
        return ps_error(PS_ERR_INVALID_ARG, "ps_schedule_parse: unknown op kind %d", (int)kind);
    const char *p = text;
    long long mnkb[4];
    skip_ws(&p);
    for (int i = 0; i < 3; i++) {
        if (!parse_int(&p, &mnkb[i]) || *p != (i < 2 ? 'x' : '/'))
            return ps_error(PS_ERR_PARSE, "schedule \"%s\": expected \"MxNxK/B : loops\" at offset %d", text, (int)(p - text));
        p++;
    }
    if (!parse_int(&p, &mnkb[3]))
        return ps_error(PS_ERR_PARSE, "schedule \"%s\": expected batch after '/' at offset %d", text, (int)(p - text));
    skip_ws(&p);
    if (*p != ':') return ps_error(PS_ERR_PARSE, "schedule \"%s\": expected ':' at offset %d", text, (int)(p - text));
    p++;
    for (int i = 0; i < 4; i++)
        if (mnkb[i] < 1 || mnkb[i] > PS_KERNEL_BATCH_MAX)
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule \"%s\": microkernel sizes must be positive and small", text);
    ps_schedule *s;
    ps_status st = ps_schedule_create((int)mnkb[0], (int)mnkb[1], (int)mnkb[2], (int)mnkb[3], &s);
    if (st) return st;
    for (;;) {
        skip_ws(&p);
        if (!*p) break;
        const char *name = p;
        while (isalpha((unsigned char)*p)) p++;
        int d = dim_of_name(kind, name, (size_t)(p - name));
        if (d < 0) {
            ps_schedule_destroy(s);
            return ps_error(PS_ERR_PARSE, "schedule \"%s\": unknown loop name at offset %d (%s loops: %s)", text,
                            (int)(name - text), kind == PS_OP_GEMM ? "gemm" : "conv", kind == PS_OP_GEMM ? "m n k" : "n k oh ow c");
        }
        long long tile = 1;
        if (*p == ':') {
            p++;
            if (!parse_int(&p, &tile) || tile < 1) {
                ps_schedule_destroy(s);
                return ps_error(PS_ERR_PARSE, "schedule \"%s\": expected a positive tile after ':' at offset %d", text, (int)(p - text));
            }
        }
        int par = 0;
        if (*p == '*') { par = 1; p++; }
        if (*p && !isspace((unsigned char)*p)) {
            ps_schedule_destroy(s);
            return ps_error(PS_ERR_PARSE, "schedule \"%s\": unexpected '%c' at offset %d", text, *p, (int)(p - text));
        }
        if ((st = ps_schedule_add_loop(s, (ps_dim)d, tile, par))) { ps_schedule_destroy(s); return st; }
    }
    *out = s;
    return PS_SUCCESS;
}

ps_status ps_schedule_format(const ps_schedule *sched, ps_op_kind kind, char *buf, size_t len, size_t *needed)
{
    if (!sched) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_format: sched is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_format: buf is NULL");
    if (kind != PS_OP_CONV_FWD && kind != PS_OP_GEMM)
        return ps_error(PS_ERR_INVALID_ARG, "ps_schedule_format: unknown op kind %d", (int)kind);
    char tmp[64 + PS_SCHEDULE_MAX_LOOPS * 32];
    const ps_stage *st = &sched->stages[0];
    int off = snprintf(tmp, sizeof tmp, "%dx%dx%d/%d :", st->kernel.m, st->kernel.n, st->kernel.k, st->kernel.batch);
    for (int i = 0; i < st->n_loops; i++) {
        const ps_loop *l = &st->loops[i];
        off += snprintf(tmp + off, sizeof tmp - (size_t)off, " %s", ps_dim_name(kind, l->dim));
        if (l->tile != 1) off += snprintf(tmp + off, sizeof tmp - (size_t)off, ":%lld", (long long)l->tile);
        if (l->parallel) off += snprintf(tmp + off, sizeof tmp - (size_t)off, "*");
    }
    if (needed) *needed = (size_t)off;
    if (len) {
        size_t n = (size_t)off < len ? (size_t)off : len - 1;
        memcpy(buf, tmp, n);
        buf[n] = 0;
    }
    if ((size_t)off >= len) return ps_error(PS_ERR_BUFFER_TOO_SMALL, "ps_schedule_format: needs %d bytes plus NUL", off);
    return PS_SUCCESS;
}

int ps_band_box(const ps_loop *loops, int np, const int64_t *trips, const int64_t ext[PS_DIM_COUNT], int64_t it,
                int64_t lo[PS_DIM_COUNT], int64_t hi[PS_DIM_COUNT])
{
    int64_t idx[PS_SCHEDULE_MAX_LOOPS];
    for (int i = np - 1; i >= 0; i--) {
        idx[i] = it % trips[i];
        it /= trips[i];
    }
    for (int d = 0; d < PS_DIM_COUNT; d++) {
        lo[d] = 0;
        hi[d] = ext[d];
    }
    for (int i = 0; i < np; i++) {
        const ps_loop *l = &loops[i];
        const int64_t x = lo[l->dim] + idx[i] * l->tile;
        if (x >= hi[l->dim]) return 0; /* partial parent tile: nothing here */
        lo[l->dim] = x;
        hi[l->dim] = hi[l->dim] < x + l->tile ? hi[l->dim] : x + l->tile;
    }
    return 1;
}

void ps_tile_space_extents(const ps_problem *p, const ps_kernel_shape *ks, int64_t ext[PS_DIM_COUNT])
{
    if (p->desc.kind == PS_OP_GEMM) {
        /* In the user's terms: m blocks rows of C, n its columns, whatever
         * the storage order (the executor transposes row-major internally). */
        const ps_gemm_desc *g = &p->desc.u.gemm;
        ext[PS_DIM_N] = 1;
        ext[PS_DIM_K] = ceil_div(g->M, ks->m);
        ext[PS_DIM_OH] = 1;
        ext[PS_DIM_OW] = ceil_div(g->N, ks->n);
        ext[PS_DIM_C] = ceil_div(ceil_div(g->K, ks->k), ks->batch);
    } else {
        const ps_conv_shape *c = &p->conv;
        ext[PS_DIM_N] = c->N;
        ext[PS_DIM_K] = ceil_div(c->K, ks->m);
        ext[PS_DIM_OH] = c->OH;
        ext[PS_DIM_OW] = ceil_div(c->OW, ks->n);
        ext[PS_DIM_C] = ceil_div(ceil_div(c->C, ks->k), ks->batch);
    }
}

ps_status ps_schedule_check(const ps_schedule *sched, const ps_desc *desc)
{
    if (!sched) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_check: sched is NULL");
    ps_problem p;
    ps_status st = ps_problem_of(desc, &p);
    return st ? st : ps_schedule_check_problem(sched, &p);
}

ps_status ps_schedule_check_problem(const ps_schedule *sched, const ps_problem *p)
{
    const ps_op_kind kind = p->desc.kind;
    if (sched->n_stages != 1)
        return ps_error(PS_ERR_UNSUPPORTED, "schedule: %d stages; this version runs single-stage schedules", sched->n_stages);
    const ps_stage *sg = &sched->stages[0];
    const ps_kernel_shape *ks = &sg->kernel;
    if (ks->m < 1 || ks->n < 1 || ks->k < 1 || ks->batch < 1 || ks->m > PS_KERNEL_DIM_MAX || ks->n > PS_KERNEL_DIM_MAX ||
        ks->k > PS_KERNEL_DIM_MAX || ks->batch > PS_KERNEL_BATCH_MAX)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: microkernel %dx%dx%d/%d out of range", ks->m, ks->n, ks->k, ks->batch);
    if (sg->n_loops < 0 || sg->n_loops > PS_SCHEDULE_MAX_LOOPS)
        return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: bad loop count %d", sg->n_loops);
    int64_t ext[PS_DIM_COUNT];
    ps_tile_space_extents(p, ks, ext);
    int64_t last_tile[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) last_tile[d] = INT64_MAX;
    int in_band = 1;
    for (int i = 0; i < sg->n_loops; i++) {
        const ps_loop *l = &sg->loops[i];
        if ((int)l->dim < 0 || l->dim >= PS_DIM_COUNT)
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: loop %d has unknown dimension %d", i, (int)l->dim);
        const char *name = ps_dim_name(kind, l->dim);
        if (kind == PS_OP_GEMM && (l->dim == PS_DIM_N || l->dim == PS_DIM_OH))
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: loop %d: dimension %d does not exist for gemm", i, (int)l->dim);
        if (l->tile < 1) return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: loop %d (%s) has tile %lld < 1", i, name, (long long)l->tile);
        if (l->tile >= last_tile[l->dim])
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: loops over %s must have strictly decreasing tiles (%lld after %lld)",
                            name, (long long)l->tile, (long long)last_tile[l->dim]);
        last_tile[l->dim] = l->tile;
        if (l->parallel) {
            if (!in_band)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: parallel loop %d (%s) is not in the outermost band", i, name);
            if (l->dim == PS_DIM_C)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: the reduction loop %s cannot run in parallel", name);
        } else {
            in_band = 0;
        }
    }
    for (int d = 0; d < PS_DIM_COUNT; d++) {
        if (last_tile[d] == INT64_MAX) {
            if (ext[d] > 1)
                return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: no loop over %s, whose extent is %lld",
                                ps_dim_name(kind, (ps_dim)d), (long long)ext[d]);
        } else if (last_tile[d] != 1) {
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: the innermost loop over %s has tile %lld; it must be 1",
                            ps_dim_name(kind, (ps_dim)d), (long long)last_tile[d]);
        }
    }
    return PS_SUCCESS;
}
