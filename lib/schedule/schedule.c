/* Schedules: construction, text form, validation against a descriptor, and
 * the default (fixed loop order) schedule. */
#include "schedule/schedule_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Largest microkernel extent we ask LIBXSMM to JIT in one dimension. */
#define PS_KERNEL_DIM_MAX 1024
#define PS_KERNEL_BATCH_MAX (1 << 20)

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

void ps_tile_space_extents(const ps_desc *desc, const ps_kernel_shape *ks, int64_t ext[PS_DIM_COUNT])
{
    if (desc->kind == PS_OP_GEMM) {
        /* In the user's terms: m blocks rows of C, n its columns, whatever
         * the storage order (the executor transposes row-major internally). */
        const ps_gemm_desc *g = &desc->u.gemm;
        ext[PS_DIM_N] = 1;
        ext[PS_DIM_K] = ceil_div(g->M, ks->m);
        ext[PS_DIM_OH] = 1;
        ext[PS_DIM_OW] = ceil_div(g->N, ks->n);
        ext[PS_DIM_C] = ceil_div(ceil_div(g->K, ks->k), ks->batch);
    } else {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        ext[PS_DIM_N] = c.N;
        ext[PS_DIM_K] = ceil_div(c.K, ks->m);
        ext[PS_DIM_OH] = c.OH;
        ext[PS_DIM_OW] = ceil_div(c.OW, ks->n);
        ext[PS_DIM_C] = ceil_div(ceil_div(c.C, ks->k), ks->batch);
    }
}

ps_status ps_schedule_check(const ps_schedule *sched, const ps_desc *desc)
{
    if (!sched) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_check: sched is NULL");
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
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
    ps_tile_space_extents(desc, ks, ext);
    int64_t last_tile[PS_DIM_COUNT];
    for (int d = 0; d < PS_DIM_COUNT; d++) last_tile[d] = INT64_MAX;
    int in_band = 1;
    for (int i = 0; i < sg->n_loops; i++) {
        const ps_loop *l = &sg->loops[i];
        if ((int)l->dim < 0 || l->dim >= PS_DIM_COUNT)
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: loop %d has unknown dimension %d", i, (int)l->dim);
        const char *name = ps_dim_name(desc->kind, l->dim);
        if (desc->kind == PS_OP_GEMM && (l->dim == PS_DIM_N || l->dim == PS_DIM_OH))
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
                                ps_dim_name(desc->kind, (ps_dim)d), (long long)ext[d]);
        } else if (last_tile[d] != 1) {
            return ps_error(PS_ERR_INVALID_SCHEDULE, "schedule: the innermost loop over %s has tile %lld; it must be 1",
                            ps_dim_name(desc->kind, (ps_dim)d), (long long)last_tile[d]);
        }
    }
    return PS_SUCCESS;
}

/* Block size for a dimension of extent `e`: e itself when it is at most the
 * preferred block, else the preferred block or its half when one divides e,
 * else the preferred block with a remainder. Never a 16-wide exact divisor:
 * on the VM 16-wide blocks ran at 0.60-0.85x of 64 plus a remainder block
 * (K = 400, 336, 80; C = 1008, 1040, 480: docs/performance.md), while 32 and
 * 64 plus a remainder are within 1% of each other. */
static int pick_block(int64_t e, int pref)
{
    if (e <= pref) return (int)e;
    for (int b = pref; b >= 32 && b >= pref / 2; b /= 2)
        if (e % b == 0) return b;
    return pref;
}

/* Output-column block: the whole row when it is at most max; else the widest
 * divisor of the row in [8, max] (no remainder kernel); else the whole row if
 * it is under 2*max (one call beats a block plus a remainder); else max. */
static int pick_width(int64_t ow, int max)
{
    if (ow <= max) return (int)ow;
    for (int b = max; b >= 8; b--)
        if (ow % b == 0) return b;
    return ow < 2 * max ? (int)ow : max;
}

/* Cost of one call of n columns of a 64-row kernel, in column units.
 * LIBXSMM 1.17 blocks a 64-row AVX-512 kernel's columns in register blocks
 * of 6 (the last one what is left), and each block reloads the four A
 * vectors per reduction step whatever its width: a block costs about
 * PS_BLOCK_FIXED + its columns. Fitted to polysci-brgemm-ceiling --m 64 --k
 * 64 --batch 8 --threads 2, n = 1..56 (Intel Xeon VM, session 17): 6, 12,
 * 18 columns 413-417 GFLOP/s, 7 (6 + 1) 344, 8 370, 13 379, 19 379, 11 and
 * 17 (last block of 5) 404-407. PS_CALL_FIXED stands for the call itself.
 * A 32-row kernel holds 14 columns per register block (PS_REG_BLOCK32;
 * --m 32 --k 64 --batch 36, session 29: 14, 28, 42 columns 469-472 GFLOP/s,
 * 15-16 431-433, 19 449, 30 449-450), a 48-row one about 9 (--m 48 --k 64 --batch 8:
 * 9, 16, 24, 27 469-471, 19 455, 10 432), a 24-row one like 32 (14 and 28
 * 339-340, 19 317); the same form is used with those blocks. */
#define PS_REG_BLOCK 6
#define PS_REG_BLOCK32 14
#define PS_REG_BLOCK48 9
/* The expert's usual cap on a conv kernel's columns (ps_schedule_expert_kernel). */
#define PS_CONV_MAX_WIDTH 30
#define PS_BLOCK_FIXED 2.7
#define PS_CALL_FIXED 3.0
static double call_cost(int64_t n, int reg)
{
    const int64_t blocks = ceil_div(n, reg);
    return PS_CALL_FIXED + (double)blocks * PS_BLOCK_FIXED + (double)n;
}

/* A row of ow columns in calls of b columns and one remainder call. */
static double row_cost(int64_t ow, int64_t b, int reg)
{
    return (double)(ow / b) * call_cost(b, reg) + (ow % b ? call_cost(ow % b, reg) : 0.0);
}

/* Width n of a row of ow columns, or a cheaper one for register blocks of
 * reg columns: pick_width's choice (the widest divisor) or a multiple of the
 * block up to max, where it is 3% cheaper than n. */
static int cheaper_width(int64_t ow, int n, int max, int reg)
{
    int best = n;
    double best_cost = 0.97 * row_cost(ow, n, reg); /* what another width must beat */
    const int divisor = pick_width(ow, max);
    if (row_cost(ow, divisor, reg) < best_cost) {
        best = divisor;
        best_cost = row_cost(ow, divisor, reg);
    }
    for (int b = 2 * reg; b <= max && b < ow; b += reg) {
        const double c = row_cost(ow, b, reg);
        if (c < best_cost) {
            best = b;
            best_cost = c;
        }
    }
    return best;
}

/* pick_width for 64-row kernels, aware of their register blocks: a width
 * that leaves a short last block (19 = 6 + 6 + 6 + 1 columns) runs below
 * one in whole blocks plus a remainder call (30 columns and 16 left per
 * 1786-column row: fastrcnn_15/17/19, 47 x 38 1x1 convs flattened, ran
 * 1.08-1.10x faster with 24, 30 or 18 columns than 19, fastrcnn_18 1.03x at
 * N = 2, 1.06-1.18x at N = 1; Intel Xeon VM, session 17,
 * docs/performance.md). Widths that are multiples of the block are tried
 * beside pick_width's choice, which stays unless one is 3% cheaper. */
static int pick_width64(int64_t ow, int max) { return cheaper_width(ow, pick_width(ow, max), max, PS_REG_BLOCK); }

ps_kernel_shape ps_schedule_expert_kernel(const ps_desc *desc)
{
    ps_kernel_shape ks;
    if (desc->kind == PS_OP_GEMM) {
        /* Sized on the column-major problem the executor runs (a row-major
         * GEMM is its transpose: M and N swap). But the schedule's kernel is
         * in the user's terms and the executor swaps it back, so for a
         * row-major GEMM the 64-block is sized on N and applied along M, and
         * the 48-cap comes from M and applies along N (M = 16, N = 4096: a
         * 16 x 16 executor kernel). On the shared (row-major) GEMM shapes the
         * orientation meant (schedule 48 x 64, executor 64 x 48) ran at
         * 0.76-1.01x of this one (one run, docs/performance.md), so it stays.
         * Measured (docs/performance.md):
         * 48-wide column blocks and 8 reduction blocks per call beat 16-24
         * wide and 16; 48 with a remainder block rather than the widest
         * dividing width (2048 columns: 32): K = 32 2.1-2.8 -> 1.6-1.7 ms,
         * the other shared GEMM shapes within +-2%. */
        ps_gemm_shape g;
        ps_gemm_shape_of(&desc->u.gemm, &g);
        ks.m = pick_block(g.M, 64);
        ks.n = (int)(g.N < 48 ? g.N : 48);
        ks.k = pick_block(g.K, 64);
        int64_t blocks = ceil_div(g.K, ks.k);
        ks.batch = (int)(blocks < 8 ? blocks : 8);
    } else {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        ks.m = pick_block(c.K, 64);
        /* Few-channel convs get blocks twice as wide: a call does little work
         * per batch entry (k = C per tap, or merged taps split into q =
         * ceil(S/sw) calls over every q-th column), so wider calls amortise
         * its fixed cost (vgga_01, resnet_00, fastrcnn_01 merged, 48-60
         * columns: 1.04-1.12x faster than 25-28; mobilenet_01 per tap, 56:
         * 1.05-1.07x; docs/performance.md). Merged taps cut a block into q
         * calls, so the cap grows to ~75 columns per call, whole rows on the
         * shared layers: fastrcnn_01 (q = 4, 300 columns) ran 1.10-1.11x
         * faster with 100-column blocks than with 50 (Zen 5, session 10);
         * on the Intel Xeon of session 13, ~75 against ~25 columns per call,
         * as a binary against its parent (bench/ab.sh, four rounds): vgga_01
         * (224 against 56) 0.75-0.76 -> 0.82-0.87x oneDNN at N = 1, resnet_00
         * (112 against 56) 0.85-0.87 -> 0.90-0.91, fastrcnn_01 (300 against
         * 100) 0.87-0.88 -> 0.91-0.95 at N = 2 (docs/performance.md). */
        /* 30, not 28: widths are the largest divisor of OW up to the cap, and
         * LIBXSMM blocks 64-row kernels in 6-column register blocks, so on
         * 150-column rows 30 beats 25 (Intel Xeon, session 15, one image,
         * alternating: fastrcnn_05 2.77-2.82 vs 3.00-3.14 ms in two rounds,
         * fastrcnn_03 5.40-5.73 vs 5.86-5.92 in three). No shared layer has another
         * OW whose widest divisor moves (56, 112, 224 -> 28; 75 -> 25). */
        int max_n = PS_CONV_MAX_WIDTH;
        /* 1x1 convs whose calls reduce over few floats (C <= 128: the whole
         * C per call) do as little work per call as few-channel convs: up
         * to 112 columns. Intel Xeon, session 13 (docs/performance.md): one
         * image, 56x56 64->64 1.15x, 112x112 32->64 1.12-1.20x, 56x56
         * 128->128 1.05x faster than 28 columns; as a binary against its
         * parent, MobileNet 0.903-0.908 -> 0.923-0.932x oneDNN (N = 1),
         * 0.960-0.966 -> 0.971-0.977 (N = 2), Fast R-CNN and ResNet-50
         * +0.5-1.3%. */
        if (c.R == 1 && c.S == 1 && c.C <= 128) max_n = 112;
        /* Few channels per tap (not merged: k = C floats per batch entry)
         * likewise up to 112: mobilenet_01 (112 columns, 3 x 3 / 2, C = 3)
         * ran whole rows in 0.068-0.071 ms against 0.073-0.077 in blocks of
         * 56 at N = 1, 0.135-0.142 against 0.152-0.159 at N = 2 (Intel Xeon,
         * session 15, three alternating rounds). */
        if (ps_conv_few_channels(&c)) {
            const int64_t per_calls = ps_conv_merges_taps(&c) ? 75 * ps_conv_tap_phases(&c) : 0;
            max_n = per_calls > 112 ? (int)per_calls : 112;
        }
        /* 64-row kernels by their register blocks; the few-channel convs'
         * calls are split into tap phases (merged taps) or reduce over a few
         * floats, where the blocks were not measured. */
        ks.n = ks.m == 64 && !ps_conv_few_channels(&c) ? pick_width64(c.OW, max_n) : pick_width(c.OW, max_n);
        ks.k = pick_block(c.C, 64);
        int64_t blocks = ceil_div(c.C, ks.k);
        ks.batch = (int)(blocks < 64 ? blocks : 64);
    }
    return ks;
}

ps_status ps_schedule_default(const ps_desc *desc, ps_schedule **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_default: out is NULL");
    *out = NULL;
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
    ps_kernel_shape ks = ps_schedule_expert_kernel(desc);
    ps_schedule *s;
    if ((st = ps_schedule_create(ks.m, ks.n, ks.k, ks.batch, &s))) return st;
    if (desc->kind == PS_OP_GEMM) {
        ps_schedule_add_loop(s, PS_DIM_K, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_OW, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    } else {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        /* Column blocks join the band: a flattened 1x1 conv of one image has
         * nothing else to share between threads. Convs whose filter-row taps
         * the executor merges walk each column strip down its rows (ow
         * outside oh): with the taps copied side by side (sessions 3-5) that
         * reused the copies, 1.01-1.57x over rows outside columns; reading
         * them in place, strips still measure 0.99-1.05x on those layers and
         * rows 1.08x on mobilenet_01, which does not merge (exhaustive run,
         * docs/performance.md). Not for one image: the threads then split
         * each row's strips between them, and rows measured 1.23-1.34x on
         * vgga_01 (N = 1, 2 threads, six alternating pairs), within 1.5% on
         * the other merged first layers. */
        const int strips = ps_conv_merges_taps(&c) && c.N >= 2;
        ps_schedule_add_loop(s, PS_DIM_N, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_K, 1, 1);
        ps_schedule_add_loop(s, strips ? PS_DIM_OW : PS_DIM_OH, 1, 1);
        ps_schedule_add_loop(s, strips ? PS_DIM_OH : PS_DIM_OW, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    }
    *out = s;
    return PS_SUCCESS;
}

/* Elements of C in the first x iterations of a GEMM band of tiles of rows x
 * cols elements walked row-tile-major (the last tiles partial). */
static int64_t gemm_band_prefix(int64_t M, int64_t N, int64_t rows, int64_t cols, int64_t x)
{
    const int64_t trips_n = ceil_div(N, cols), q = x / trips_n, r = x % trips_n;
    const int64_t done = q * rows < M ? q * rows : M, left = M - done;
    return done * N + (left < rows ? left : rows) * (r * cols < N ? r * cols : N);
}

/* Largest work any thread gets when nt threads split a GEMM's band of tiles
 * of tm x tn kernel blocks as the executor does (contiguous ranges of
 * iterations). In the schedule's terms, the user's rows (m) and columns (n)
 * of C: the executor of a row-major GEMM swaps both the dimensions and the
 * kernel's m and n, which leaves the walk the same. */
static int64_t gemm_makespan(const ps_gemm_desc *g, const ps_kernel_shape *ks, int64_t tm, int64_t tn, int nt)
{
    const int64_t rows = tm * ks->m, cols = tn * ks->n;
    const int64_t total = ceil_div(g->M, rows) * ceil_div(g->N, cols);
    int64_t worst = 0;
    for (int t = 0; t < nt; t++) {
        const int64_t work = gemm_band_prefix(g->M, g->N, rows, cols, total * (t + 1) / nt) -
                             gemm_band_prefix(g->M, g->N, rows, cols, total * t / nt);
        if (work > worst) worst = work;
    }
    return worst;
}

/* Spatial filters whose weights per kernel call (the 64-channel block x the
 * call's C blocks x R x S taps) are 256 KiB or more run 32-channel blocks.
 * The bound was a quarter of L2, from the Zen 5 VM (1 MiB L2); on the Intel
 * Xeon VM (2 MiB) the layers with 256-512 KiB calls gain too, old/new binary
 * (session 18, three rounds, docs/performance.md): alexnet_02 0.88-0.92 ->
 * 0.95-0.97x oneDNN, alexnet_03, resnet_07 and vgga_03 +2-6%, fastrcnn_10
 * -2-3% (as on the Zen 5), and there the 32-row kernel also runs faster
 * alone (polysci-brgemm-ceiling --m 32 --n 27: 453-468 GFLOP/s, --m 64
 * 404-446), so the bound is in bytes. Measured on the Zen 5 beside the
 * 64-channel expert schedule in the alternating
 * trials (VM, 2 threads, the 21 such layers of the six sets, same loops):
 * 1.030 / 1.025 / 1.029x at N = 1 (fastrcnn_20 1.20-1.22, vgga_07 1.03-1.08,
 * alexnet_04 1.05-1.06; fastrcnn_10 0.92-1.00 and fastrcnn_13 0.98 lose), ~1.02x
 * at N = 2. In isolation the two kernels run alike (polysci-brgemm-ceiling,
 * weights in L2: 434-443 GFLOP/s), so the gain is in the layer's data flow.
 * 1x1 convs lose with it (0.82-1.00: resnet_14/19, fastrcnn_26/27). */
#define PS_NARROW_MIN_CALL_BYTES (256u << 10)
static int conv_narrow_block(const ps_conv_shape *c, const ps_kernel_shape *ks, size_t l2_bytes)
{
    const double call_bytes = (double)ks->m * ks->k * ks->batch * c->R * c->S * sizeof(float);
    return l2_bytes && c->R * c->S > 1 && ks->m == 64 && c->K % 32 == 0 && !ps_conv_merges_taps(c) &&
           call_bytes >= (double)PS_NARROW_MIN_CALL_BYTES;
}

/* 1x1 convs whose calls all read their weights from beyond L2 run 32-channel
 * blocks too, where the last level is slow (ps_machine_llc_slow): an image's
 * whole output is one column block, so each output-channel block's weights
 * serve one call per image, and the filter bank is too large to stay in L2
 * between images (the expert's too_big). A kernel pass over a weight block
 * that comes from memory does 2 x (its register block's columns) flops per
 * weight float loaded; LIBXSMM 1.17's 64-row kernels block 6 columns, and
 * 32-row ones, half the registers per column, presumably more. Weights
 * streamed from memory (polysci-brgemm-ceiling
 * --k 64 --batch 32 --a-chunks 64|128, Xeon VM, 2 threads) 419 against 344
 * GFLOP/s at 49 columns, 394 against 329 at 28; with the weights in cache
 * 452 against 449. The 10 such layers of the six sets (7 x 7 outputs, 1-8
 * MiB of weights; same loops), old/new binary on the Xeon VM, three rounds
 * each: 0.976-0.979 -> 1.045-1.047x oneDNN at N = 2, 0.968-0.973 ->
 * 1.035 at N = 1, every layer +2-14% but resnet_16 at N = 1 (0.91-0.94 ->
 * 0.91-0.92; session 26, docs/performance.md). Where the weight blocks are
 * reused by many column blocks (47 x 38 outputs) 32 rows lose up to 12%
 * (twice the input reads), and on the Zen 5, whose L3 is fast, resnet_19 and
 * fastrcnn_26/27 lost with them (session 9). */
static int conv_streamed_weights_block(const ps_conv_shape *c, const ps_kernel_shape *ks,
                                       const int64_t ext[PS_DIM_COUNT], int too_big, int llc_slow)
{
    return llc_slow && too_big && c->R * c->S == 1 && ks->m == 64 && c->K % 32 == 0 &&
           ext[PS_DIM_OH] * ext[PS_DIM_OW] == 1;
}

/* 1x1 convs whose filter bank is too large for half of L2 (too_big) but
 * whose image has several column blocks run in output-channel tiles of at
 * most a quarter of L2 of weights, each tile input-stationary (every block
 * of the tile over an input block while it is in cache, the tile's weights
 * in L2 beside it), where the last level is slow. The fixed order reads the
 * whole input once per output-channel block from there. Measured as
 * candidates beside the plan (Xeon VM, two processes, session 26,
 * docs/performance.md "Session 26"): the seven such layers of the six sets
 * at N = 2 0.99-1.10x (fastrcnn_17 1.03-1.10, fastrcnn_18/19 1.01-1.03,
 * resnet_13 1.02), at N = 1 fastrcnn_18 1.05-1.08, resnet_10 1.00; spatial
 * layers lose (vgga_03 0.91-1.03). Old/new binary, three rounds: the seven
 * at N = 2 0.971-0.981 -> 0.994-1.006x oneDNN, the two at N = 1 0.959-0.960
 * -> 0.993-1.017. Returns the tile in kernel blocks (at least 2: one block is
 * the fixed order), 0 for no tiles. */
static int64_t conv_channel_tile(const ps_conv_shape *c, const ps_kernel_shape *ks, const int64_t ext[PS_DIM_COUNT],
                                 size_t l2_bytes, int too_big, int llc_slow)
{
    if (!llc_slow || !too_big || !l2_bytes || c->R * c->S != 1 || ext[PS_DIM_OH] * ext[PS_DIM_OW] < 2) return 0;
    const int64_t tile = (int64_t)((double)(l2_bytes / 4) / ((double)ks->m * c->C * sizeof(float)));
    return tile >= 2 && tile < ext[PS_DIM_K] ? tile : 0;
}

/* Images inside the output-channel blocks, `k* n* oh* ow* c`, for filter
 * banks too large for half of L2 (too_big) over small images, where the last
 * level is slow: each weight block then serves every image while it is in
 * cache, where the fixed order `n* k* ...` streams the whole bank from memory
 * once per image. An image of at most PS_IMAGES_INSIDE_MAX_PIXELS output
 * pixels uses each weight float for that few flops per image that the
 * stream paces the kernels. As candidates beside the plan at N = 2 (Xeon VM,
 * two processes, session 32, docs/performance.md), the plans' own kernels:
 * all 12 layers of the six sets with 7 x 7 outputs and 2-9 MiB of weights
 * +0-5.6% (resnet_17 and fastrcnn_24, 3x3 512 -> 512, +5%; the 1x1s +0-3%);
 * 12 x 12 to 14 x 14 outputs -1.3 to +1.5%, 24 x 24 to 47 x 38 -1.9 to
 * +0.2%. */
#define PS_IMAGES_INSIDE_MAX_PIXELS 64
static int conv_images_inside(const ps_conv_shape *c, int too_big, int llc_slow)
{
    return llc_slow && too_big && c->N >= 2 && c->OH * c->OW <= PS_IMAGES_INSIDE_MAX_PIXELS &&
           !ps_conv_merges_taps(c);
}

/* One loop of an expert schedule: dimension, tile (1: untiled), parallel. */
typedef struct expert_loop {
    ps_dim dim;
    int64_t tile;
    int parallel;
} expert_loop;

/* The schedule of kernel ks inside loops[0..n) (outermost first). */
static ps_status loops_around(const ps_kernel_shape *ks, const expert_loop *loops, int n, ps_schedule **out)
{
    ps_schedule *s;
    ps_status st = ps_schedule_create(ks->m, ks->n, ks->k, ks->batch, &s);
    if (st) return st;
    for (int i = 0; i < n; i++) ps_schedule_add_loop(s, loops[i].dim, loops[i].tile, loops[i].parallel);
    *out = s;
    return PS_SUCCESS;
}

/* `k* n* oh* ow* c` around kernel ks (conv_images_inside). */
static ps_status images_inside(const ps_kernel_shape *ks, ps_schedule **out)
{
    const expert_loop loops[] = {{PS_DIM_K, 1, 1}, {PS_DIM_N, 1, 1}, {PS_DIM_OH, 1, 1}, {PS_DIM_OW, 1, 1}, {PS_DIM_C, 1, 0}};
    return loops_around(ks, loops, 5, out);
}

/* 32-channel blocks where the 64-row kernel's width leaves a short last
 * register block, where the last level is slow. LIBXSMM 1.17 blocks a
 * 64-row kernel's columns by 6 (PS_REG_BLOCK) and a 32-row kernel's by
 * about 14, and every register block passes over the call's weights once:
 * cached operands, polysci-brgemm-ceiling --k 64 --batch 8 --threads 2
 * (Xeon VM, session 27), 14 columns 432 (64 rows: 6 + 6 + 2) against 470
 * GFLOP/s (32 rows), 13 423 against 469, 28 458 against 469; at multiples of
 * 6 the two are alike (12: 466/467). In a layer the 32-row kernel reads each
 * input block twice as often, so for 1x1 convs it pays only where at least
 * PS_SHORT_BLOCK_MIN_CHANNELS output channels (the tile's, in output-channel
 * tiles) share each input block and a call's input block stays within
 * PS_SHORT_BLOCK_MAX_INPUT_BYTES. Measured as candidates beside the plan
 * (same loops, three processes each, N = 1 / N = 2; session 27,
 * docs/performance.md): resnet_03 and vgga_02 (3 x 3, 28 columns)
 * 1.034-1.038 / 1.030-1.037 (vgga_02 at N = 1 0.998-1.003); resnet_11 (14
 * columns, 256 channels) 1.026-1.035 / 1.023-1.029; resnet_10, resnet_13,
 * mobilenet_06/07/08 (28 columns, 256-1024 channels) 1.005-1.023; resnet_05
 * 1.003-1.006 / 0.994-0.998. Outside: fewer channels (resnet_04, 64: 0.995-
 * 1.000 / 0.976-0.979; resnet_06/09, 128: 1.015-1.022 / 0.988-0.998) or
 * larger input blocks (resnet_14, 112 KiB per call: 0.981-1.002 / 0.966-
 * 1.001). Wide calls (beyond the usual cap of PS_CONV_MAX_WIDTH columns:
 * few-channel convs, 1x1 convs with C <= 128) and 30-column rows keep 64
 * rows: there 32 rows lost (session 26: 0.83-0.98 on fastrcnn_02-14 and
 * mobilenet_02, 0.92-0.98 on fastrcnn_03/06). channels: the output channels
 * sharing an input block. */
#define PS_SHORT_BLOCK_MIN_CHANNELS 256
#define PS_SHORT_BLOCK_MAX_INPUT_BYTES (64u << 10)
static int conv_short_register_block(const ps_conv_shape *c, const ps_kernel_shape *ks, int64_t channels,
                                     int llc_slow)
{
    if (!llc_slow || ks->m != 64 || c->K % 32 || ks->n > PS_CONV_MAX_WIDTH || ks->n % PS_REG_BLOCK == 0 ||
        ps_conv_few_channels(c) || ps_conv_merges_taps(c))
        return 0;
    if (c->R * c->S > 1) return 1;
    const double input_bytes = (double)ks->n * ks->k * ks->batch * sizeof(float);
    return channels >= PS_SHORT_BLOCK_MIN_CHANNELS && input_bytes <= (double)PS_SHORT_BLOCK_MAX_INPUT_BYTES;
}

/* 1x1 convs whose 64-row calls leave a short register block where 32 rows
 * do not pay (conv_short_register_block: fewer than
 * PS_SHORT_BLOCK_MIN_CHANNELS channels per input block, or larger input
 * blocks) take calls of whole register blocks instead, the widest within
 * the usual cap (30 columns), where the (flattened) row spans at least four
 * such calls, so that the one remainder call for the row's rest, with a
 * short block of its own, weighs little (196-3136 columns measured; a
 * 63-column row would run 30 + 30 + 3 against 3 x 21). Returns that width,
 * 0 for no rule.
 * Cached, a 64-row call of 28 columns runs 2.4-2.8% below one of 24-48
 * (polysci-brgemm-ceiling --m 64 --k 64 --batch 4|8|16 --ldb 64*batch
 * --b-offset 64 --ldc 64, Xeon VM: 451/456/460 against 463/467/471 GFLOP/s);
 * in the layer, as candidates beside the plan (three processes, N = 1 / N =
 * 2, session 29, docs/performance.md): resnet_04 (256 -> 64, 3136 pixels)
 * 1.019-1.023 / 1.021-1.032 with 30 columns, resnet_09 (512 -> 128, 784)
 * 1.012-1.044 / 0.991-1.026, resnet_14 (1024 -> 256, 196, output-channel
 * tiles at N = 2) 1.007-1.020 at N = 2; 36-48 columns gained alike or up to
 * 2% more at N = 2. */
static int conv_whole_register_width(const ps_conv_shape *c, const ps_kernel_shape *ks, int llc_slow)
{
    const int width = PS_CONV_MAX_WIDTH / PS_REG_BLOCK * PS_REG_BLOCK;
    if (!llc_slow || ks->m != 64 || c->R * c->S != 1 || ks->n % PS_REG_BLOCK == 0 || ks->n > PS_CONV_MAX_WIDTH)
        return 0;
    return c->OW >= 4 * width ? width : 0;
}

/* Convs whose filter bank fits in half of L2 run input-stationary: the
 * threads share (image, row, column block) tiles and each runs every
 * output-channel block over its tile's input while it is in cache, the
 * weights staying in L2 beside it; the fixed order (output-channel blocks
 * outside the rows) reads each input tile once per output-channel block.
 * Measured on the VM (2 threads, that order beside the fixed one in the
 * alternating trials, all 75 layers of the six shared sets): weights
 * <= 512 KiB, 37 layers: 1.042x at N = 1 (0.905-1.175), 1.022x at N = 2
 * (0.976-1.076); 1-2 MiB: 0.51-1.05x; larger: 0.50-1.02x. Convs with
 * merged taps keep the default's walk (strips for N >= 2; resnet_00 at N = 2
 * ran rows at 0.975-1.012x of strips in four runs) but where
 * conv_merged_taps_rows splits their output channels. ResNet-50 at N = 1 (the
 * one-image default) then: 1.02x the fixed order (docs/performance.md).
 * Where the tiles do not split over the threads within 5% as evenly as the
 * fixed order's (tiles x output-channel blocks) do (mobilenet_07 at N = 1, 7
 * tiles for 2 threads, ran at 0.905 and 0.917), the output-channel loop is
 * parallel too, outside the reduction: the threads split (tile, channel
 * block) pairs, one tile at most shared between two. Measured on the Xeon VM
 * (2 MiB L2, N = 1, old/new binary, four rounds; session 20): weights up to
 * a quarter of L2 gain 3-9% over the fixed order (fastrcnn_14, mobilenet_05,
 * mobilenet_07, resnet_08), 1 MiB lose 1-1.5% (resnet_13, resnet_14,
 * mobilenet_08: the fixed order's threads hold half of them each), so those
 * keep the fixed order. At N >= 2, weights of exactly half of L2 keep the
 * fixed order too: the five such layers of the six sets (1 MiB on the Xeon
 * VM: resnet_13/14, fastrcnn_17/19, mobilenet_08) ran 2.5-5% faster so in
 * three rounds of old/new binaries (session 22), where at N = 1 fastrcnn_17
 * lost 4.5% and fastrcnn_19 gained 2.5% (the other three take the fixed order
 * there already: uneven tiles). At N >= 2 this rule serves machines whose
 * last level is slow (ps_planner_default_ranker; elsewhere the DNN ranks). */
/* The input-stationary loops around kernel ks: the threads share (image,
 * row, column block) tiles, each running the output-channel blocks over its
 * tile's input, `n* oh* ow* c k`; with k_tile > 0 inside output-channel
 * tiles of that many blocks, `n* k:T* oh* ow* c k`; with share_k the
 * output-channel blocks join the parallel band outside the reduction,
 * `n* oh* ow* k* c`. */
static ps_status input_stationary(const ps_kernel_shape *ks, int64_t k_tile, int share_k, ps_schedule **out)
{
    ps_schedule *s;
    ps_status st = ps_schedule_create(ks->m, ks->n, ks->k, ks->batch, &s);
    if (st) return st;
    ps_schedule_add_loop(s, PS_DIM_N, 1, 1);
    if (k_tile) ps_schedule_add_loop(s, PS_DIM_K, k_tile, 1);
    ps_schedule_add_loop(s, PS_DIM_OH, 1, 1);
    ps_schedule_add_loop(s, PS_DIM_OW, 1, 1);
    if (share_k) {
        ps_schedule_add_loop(s, PS_DIM_K, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    } else {
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
        ps_schedule_add_loop(s, PS_DIM_K, 1, 0);
    }
    *out = s;
    return PS_SUCCESS;
}

/* Convs whose taps merge (ps_conv_merges_taps: the few-channel first
 * layers), where the last level is slow: the kernel's rows, 0 for no rule.
 * Each call reduces over all R x S x C weights of its output-channel block
 * (merged taps need the whole C in one block) and reads the R input rows
 * under its column block, and the q tap-phase calls of a block read the same
 * rows again. A 64-row kernel whose weights and those rows overflow L1 runs
 * 32 rows where they fit, each block in turn over the rows (the output-
 * channel loop innermost, so the rows stay in L1 across the blocks): cached,
 * the 32-row call is 2-4% faster on every merged first layer of the six sets
 * (polysci-brgemm-ceiling with each layer's call: resnet_00 --m 32|64 --n 28
 * --k 21 --batch 7 --ldb 24 --b-offset 687 --ldc 256 --c-phases 4, 456-459
 * against 440-442 GFLOP/s), and in the layer it gains where the rows fit:
 * resnet_00 (7x7/2, 37 KiB of weights at 64 rows, 19 KiB of rows) 1.03-1.04x
 * at N = 1, 1.04-1.06x at N = 2; where they do not fit either way it loses
 * (alexnet_01, 46 KiB of weights at 32 rows: 0.97) or ties (fastrcnn_01, 50
 * KiB of rows: 1.00-1.01 / 0.99-1.00), and where 64 rows fit it loses
 * (vgga_01: 0.98 / 0.93-1.00). Output channels that 64 does not divide come
 * in the fewest blocks of a 16-row multiple that does, the output-channel
 * loop innermost: overfeat_01 (K = 96) ran 48 rows so at 1.07-1.11x its
 * 32-row plan (`n* k* oh* ow* c`, where the threads split the channel
 * blocks) at N = 1 and 1.02-1.03x at N = 2, 32 rows so 1.04-1.08 / 0.98-1.01
 * (Xeon VM, three processes of candidates beside the plan). Old/new binary,
 * three rounds at N = 1 / 2 / 4: resnet_00 0.92-0.94 -> 0.95-0.96 / 0.91-0.93
 * -> 0.93-0.94 / 0.91-0.93 -> 0.95-0.96x oneDNN, overfeat_01 0.91 -> 0.98-1.00
 * / 0.95-0.96 -> 0.98 / 0.95-0.96 -> 0.98-0.99 (session 29,
 * docs/performance.md). */
static int conv_merged_taps_rows(const ps_conv_shape *c, const ps_kernel_shape *ks, size_t l1_bytes, int llc_slow)
{
    if (!llc_slow || !l1_bytes || !ps_conv_merges_taps(c)) return 0;
    int m = ks->m;
    for (int b = 64; c->K > 64 && b > 32; b -= 16)
        if (c->K % b == 0) {
            m = b;
            break;
        }
    const double rows = (double)c->R * (double)((ks->n - 1) * c->sw + c->S) * (double)c->C * sizeof(float);
    const double per_row = (double)c->R * c->S * c->C * sizeof(float); /* weights per output channel */
    if (m == 64 && 64 * per_row + rows > (double)l1_bytes && 32 * per_row + rows <= (double)l1_bytes) m = 32;
    return m;
}

/* Spatial convs whose filter bank is too large for half of L2 run the
 * fixed order, `n* k* oh* ow* c`: each output-channel block over the whole
 * image. Where the image does not fit in half of L2 either, that reads the
 * image from beyond L2 once per output-channel block; in row tiles with the
 * output-channel blocks inside, `n* oh:T* k* ow* oh* c`, a tile's input rows
 * stay in L2 while every block runs over them and the filter bank streams
 * once per tile instead. Taken where the slow last level makes that traffic
 * count (llc_slow) and the tiles move fewer bytes: (OH / T) x the filter
 * bank against (K / m) x the image. T is the largest divisor of OH (the
 * threads then split whole tiles evenly) with at least four tiles per image
 * whose input rows and one output-channel block of weights fit in half of
 * L2. Measured as candidates beside the plan (Xeon VM, 2 threads, three
 * processes, N = 1 / N = 2; session 30, docs/performance.md): vgga_03 (56 x
 * 56, 128 -> 256, T = 14) 1.033-1.040 / 1.031-1.058x, vgga_04 (256 -> 256,
 * T = 8) 1.019-1.033 / 1.020-1.032x; tiles that do not divide OH lost up to
 * 10% at N = 1 (uneven threads), two tiles per image (vgga_03, T = 28) 1%
 * less than four. Where the image fits in half of L2 (vgga_05/07, resnet_12,
 * alexnet_02-05, overfeat_03-05: every block rereads it from L2) tiles lost
 * 1-33%, and where they move more bytes (vgga_06: 63 against 28 MiB) 1-2%
 * at N = 1. Returns T, 0 for no tiles. */
static int64_t conv_row_tile(const ps_conv_shape *c, const ps_kernel_shape *ks, double weight_bytes, size_t l2_bytes,
                             int llc_slow)
{
    if (!llc_slow || !l2_bytes || c->R * c->S == 1 || ps_conv_merges_taps(c)) return 0;
    const double half = (double)l2_bytes / 2, row = (double)c->W * (double)c->C * sizeof(float);
    const double image = (double)c->H * row;
    const double block = (double)ks->m * (double)(c->C * c->R * c->S) * sizeof(float);
    if (image <= half) return 0;
    for (int64_t t = c->OH / 4; t >= 1; t--) {
        const double rows = (double)((t - 1) * c->sh + (c->R - 1) * c->dh + 1);
        if (c->OH % t || rows * row + block > half) continue;
        return (double)(c->OH / t) * weight_bytes < (double)ceil_div(c->K, ks->m) * image ? t : 0;
    }
    return 0;
}

/* The row-tile loops around kernel ks (conv_row_tile): `n* oh:T* k* ow* oh* c`.
 * A tile of one row is the row loop itself, `n* oh* k* ow* c`: a point loop
 * over oh inside a tile of 1 would repeat the tile (schedules need strictly
 * decreasing tiles per dimension). */
static ps_status row_tiles(const ps_kernel_shape *ks, int64_t rows, ps_schedule **out)
{
    const expert_loop loops[] = {{PS_DIM_N, 1, 1},  {PS_DIM_OH, rows, 1}, {PS_DIM_K, 1, 1},
                                 {PS_DIM_OW, 1, 1}, {PS_DIM_OH, 1, 1},    {PS_DIM_C, 1, 0}};
    if (rows > 1) return loops_around(ks, loops, 6, out);
    const expert_loop one_row[] = {loops[0], loops[1], loops[2], loops[3], loops[5]};
    return loops_around(ks, one_row, 5, out);
}

/* Register block, in columns, of LIBXSMM 1.17's AVX-512 kernels of m rows
 * (ceil(m / 16) vectors per column): 6 for 49-64 (PS_REG_BLOCK), 9 for
 * 33-48, 14 for 17-32; 0 where not measured (16 rows and fewer). */
static int reg_block(int m)
{
    const int vectors = (m + 15) / 16;
    return vectors == 4 ? PS_REG_BLOCK : vectors == 3 ? PS_REG_BLOCK48 : vectors == 2 ? PS_REG_BLOCK32 : 0;
}

/* Where the last level is slow, the width of a kernel of fewer than 64 rows
 * (the expert chose it for 64) re-chosen for its register blocks
 * (cheaper_width). As candidates beside the plan, three processes, N = 1 /
 * N = 2 (Xeon VM, session 29, docs/performance.md): fastrcnn_10 (3 x 3, 128
 * -> 128 in 32-channel blocks, 75 columns: 30 + 30 + 15 -> 3 x 25)
 * 1.024-1.031 / 1.027-1.034x (28 columns 1.015-1.024x, 38 1.023-1.035x);
 * fastrcnn_21 (1x1, 512 -> 48, 1786 columns flattened: 19 -> 27)
 * 1.028-1.031 / 1.013-1.022x; fastrcnn_22 (512 -> 24: 19 -> 28) 1.053-1.062
 * / 1.040-1.043x. */
static void fit_register_blocks(const ps_conv_shape *c, ps_kernel_shape *ks, int llc_slow)
{
    const int reg = reg_block(ks->m);
    if (llc_slow && reg && reg != PS_REG_BLOCK && ks->n <= PS_CONV_MAX_WIDTH && !ps_conv_few_channels(c))
        ks->n = cheaper_width(c->OW, ks->n, PS_CONV_MAX_WIDTH, reg);
}

/* Kernel ks in its 32-channel form (its width fitted to it). */
static void rows32_kernel(const ps_conv_shape *c, ps_kernel_shape *ks, int llc_slow)
{
    ks->m = 32;
    fit_register_blocks(c, ks, llc_slow);
}

/* ps_schedule_default's loops around kernel ks (the expert's kernel, or
 * its 32-channel or whole-register-block form). */
static ps_status default_loops(const ps_desc *desc, const ps_kernel_shape *ks, ps_schedule **out)
{
    ps_status st = ps_schedule_default(desc, out);
    if (!st) (*out)->stages[0].kernel = *ks;
    return st;
}

static ps_status conv_expert(const ps_desc *desc, int nthreads, const ps_expert_facts *facts, ps_schedule **out)
{
    const size_t l2_bytes = facts->l2_bytes;
    const int llc_slow = facts->llc_slow;
    ps_conv_shape c;
    ps_conv_shape_of(&desc->u.conv, &c);
    const double weight_bytes = (double)ps_conv_weight_elems(&c) * sizeof(float);
    ps_kernel_shape ks = ps_schedule_expert_kernel(desc);
    const int merged_rows = l2_bytes ? conv_merged_taps_rows(&c, &ks, facts->l1_bytes, llc_slow) : 0;
    if (merged_rows) {
        ks.m = merged_rows;
        return ceil_div(c.K, ks.m) > 1 ? input_stationary(&ks, 0, 0, out) : default_loops(desc, &ks, out);
    }
    fit_register_blocks(&c, &ks, llc_slow); /* K < 64, or not a multiple of it */
    /* Exactly half of L2 is too much from two images up. */
    const int too_big = c.N >= 2 ? 2 * weight_bytes >= (double)l2_bytes : 2 * weight_bytes > (double)l2_bytes;
    int64_t ext[PS_DIM_COUNT]; /* the tile space of the expert kernel */
    ps_tile_space_extents(desc, &ks, ext);
    const int narrow = conv_narrow_block(&c, &ks, l2_bytes) ||
                       (l2_bytes && conv_streamed_weights_block(&c, &ks, ext, too_big, llc_slow));
    if (!l2_bytes || too_big || ps_conv_merges_taps(&c)) {
        int64_t tile = narrow ? 0 : conv_channel_tile(&c, &ks, ext, l2_bytes, too_big, llc_slow);
        const int rows32 = narrow || (l2_bytes && conv_short_register_block(&c, &ks, tile ? tile * ks.m : c.K, llc_slow));
        const int width = rows32 || !l2_bytes ? 0 : conv_whole_register_width(&c, &ks, llc_slow);
        if (width) ks.n = width;
        if (rows32) {
            tile *= ks.m / 32; /* the same channels in 32-channel blocks */
            rows32_kernel(&c, &ks, llc_slow);
        }
        if (tile) return input_stationary(&ks, tile, 0, out);
        const int64_t rows = conv_row_tile(&c, &ks, weight_bytes, l2_bytes, llc_slow);
        if (rows) return row_tiles(&ks, rows, out);
        return conv_images_inside(&c, too_big, llc_slow) ? images_inside(&ks, out) : default_loops(desc, &ks, out);
    }
    const int width = narrow ? 0 : conv_whole_register_width(&c, &ks, llc_slow);
    if (narrow || conv_short_register_block(&c, &ks, c.K, llc_slow)) {
        rows32_kernel(&c, &ks, llc_slow);
        ps_tile_space_extents(desc, &ks, ext); /* twice the output-channel blocks */
    } else if (width) {
        ks.n = width;
        ps_tile_space_extents(desc, &ks, ext); /* fewer, wider column blocks */
    }
    const int64_t nt = nthreads < 1 ? 1 : nthreads, tiles = ext[PS_DIM_N] * ext[PS_DIM_OH] * ext[PS_DIM_OW];
    const int uneven = 20 * ceil_div(tiles, nt) * ext[PS_DIM_K] > 21 * ceil_div(tiles * ext[PS_DIM_K], nt);
    if (uneven && 4 * weight_bytes > (double)l2_bytes) return default_loops(desc, &ks, out);
    return input_stationary(&ks, 0, uneven, out);
}

/* Band tiles for GEMMs whose panels each thread packs itself
 * (ps_gemm_panels_pay): the smaller of the user's row and column extents
 * whole where it has at most ~1024 elements, else in equal tiles of at most
 * that, the other cut into one tile per thread or a multiple (at most ~768
 * elements), so each chunk's panels are used by every block of the tile
 * while they are in cache. On 1024x1024x32768 (VM, 2 threads, alternating
 * trials in one process) 1024 x 528 tiles ran at 0.91-0.96x dnnl_sgemm, the
 * 8 x 2 tiles with a packing pass at 0.74-0.83x; on 128x2048x4096 (Xeon VM)
 * the 128 x 528 tiles 7.6 ms, 128 x 384 tiles (three per thread, 24:19
 * blocks) 8.9; on 2048x2048x2048 (Xeon VM, old/new binary, 4 rounds) 1024 x
 * 528 tiles 0.84-0.87x dnnl_sgemm, the 8 x 2 tiles with the pass 0.77-0.83x.
 * A side cut needs PS_GEMM_PANEL_MIN_BLOCKS blocks for the executor to use
 * panels.
 * A smaller side of 1025-3072 elements stays whole instead, at half the
 * chunk depth (batch 4 for 8, so a panel holds as many floats as one of
 * twice the elements at the full depth) and with the cut side's cap doubled
 * to match: each thread then has one tile and packs its share of each
 * operand once per chunk, where the cut tiles packed A and B panels again
 * for every tile. Xeon VM, 2 threads, row-major, alternating trials in one
 * process against the tiles above: 2048^3 (2048 x 1056 per thread, batch 4)
 * 50.3-51.8 against 53.0-55.9 ms, 3072x3072x2048 105.7 against 111.9; at
 * batch 8 or 2 no gain. At 4096 (4096x4096x1024, whole rows at batch 4 or
 * 2) 101.9-108.0 against 97.2 ms, so larger sides keep their tiles
 * (docs/performance.md "Session 23"). Sets *tm, *tn (kernel blocks) and
 * halves ks->batch where the side stays whole that way; 0 when no such
 * tiling exists. */
static int gemm_panel_tiles(const ps_gemm_desc *g, ps_kernel_shape *ks, int nt, int64_t *tm, int64_t *tn)
{
    const int64_t mb = ceil_div(g->M, ks->m), nb = ceil_div(g->N, ks->n);
    const int rows_whole = g->M <= g->N;
    const int64_t whole = rows_whole ? mb : nb, cut = rows_whole ? nb : mb;
    const int64_t whole_elems = rows_whole ? g->M : g->N;
    const int shallow = whole_elems > 1024 && whole_elems <= 3072 && ks->batch >= 8;
    const int64_t whole_cap = (shallow ? 3072 : 1024) / (rows_whole ? ks->m : ks->n),
                  cut_cap = (shallow ? 1536 : 768) / (rows_whole ? ks->n : ks->m);
    /* At least half the cap (>= 8 blocks for kernels of <= 64): panels stay on. */
    const int64_t whole_tile = ceil_div(whole, ceil_div(whole, whole_cap));
    for (int64_t j = 1; j <= cut; j++) {
        const int64_t t = ceil_div(cut, nt * j);
        if (t > cut_cap) continue;
        if (t < PS_GEMM_PANEL_MIN_BLOCKS) return 0;
        *tm = rows_whole ? whole_tile : t;
        *tn = rows_whole ? t : whole_tile;
        if (shallow) ks->batch /= 2;
        return 1;
    }
    return 0;
}

/* Band tiles for GEMMs whose A the executor reads in place
 * (ps_gemm_a_in_place): the normalized problem's rows (A's columns) whole,
 * its few columns cut into one tile per thread, the reduction-chunk loop
 * outside the tile's block loops. In place, a column of A is read one kernel
 * block (48-64 floats) per call, lda floats from the next; with the chunk
 * loop outside, the calls that follow read the rest of the same columns, so
 * each comes in as one run the prefetchers follow, where the fixed order and
 * the 8 x 2 tiles jump to other columns between the pieces. In the user's
 * terms a row-major GEMM keeps its columns whole and cuts its rows (the
 * normalized problem is its transpose). Intel Xeon VM, 2 threads, medians of
 * alternating processes (docs/performance.md): row-major 256x256x2048 0.78
 * ms against 0.89 (fixed order), 256x192x4096 1.29-1.31 against 1.61-1.62
 * (8 x 2 tiles), 128x288x4096 0.91-0.95 against 1.09-1.12, column-major
 * 1024x192x2048 3.30-3.32 against 3.62-3.66. Sets *tm, *tn (kernel blocks,
 * the schedule's terms); 0 when A is packed. */
static int gemm_in_place_tiles(const ps_gemm_desc *g, const ps_gemm_shape *shape, const ps_kernel_shape *ks, int nt,
                               int64_t *tm, int64_t *tn)
{
    const int64_t mb = ceil_div(g->M, ks->m), nb = ceil_div(g->N, ks->n);
    const int64_t col_blocks = shape->swap ? mb : nb; /* the normalized problem's */
    if (!ps_gemm_a_in_place(shape, col_blocks)) return 0;
    const int64_t cut = ceil_div(col_blocks, nt);
    *tm = shape->swap ? cut : mb;
    *tn = shape->swap ? nb : cut;
    return 1;
}

/* Whether tiles of tm x tn kernel blocks split over nt threads within 5% as
 * evenly as single blocks do (even: gemm_makespan of single blocks). */
static int gemm_tiles_even(const ps_gemm_desc *g, const ps_kernel_shape *ks, int nt, int64_t even, int64_t tm,
                           int64_t tn)
{
    return 20 * gemm_makespan(g, ks, tm, tn, nt) <= 21 * even;
}

ps_status ps_schedule_expert(const ps_desc *desc, int nthreads, const ps_expert_facts *facts, ps_schedule **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_expert: out is NULL");
    *out = NULL;
    if (!facts) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_expert: facts is NULL");
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
    const size_t l2_bytes = facts->l2_bytes;
    if (desc->kind != PS_OP_GEMM) return conv_expert(desc, nthreads, facts, out);
    /* L2 blocking for GEMMs: band tiles of 8 row blocks x 2 column blocks
     * with the reduction-chunk loop inside them, so a chunk's B panel of the
     * tile (two blocks) stays in L2 while the tile's 8 A blocks stream past,
     * each used twice in a row; the fixed order reduces one output block over
     * all of K before the next, streaming both operands from memory or L3.
     * Measured on the VM (2 threads, the shared GEMM shapes, alternating
     * trials in one process, two runs): 1.00-1.19x the fixed order on six
     * shapes, 0.65x on 256x256x2048, whose three tiles split 2:1 over two
     * threads. So tiles only where they split over the threads within 5% as
     * evenly as single blocks do (docs/performance.md). Nor where all of B
     * fits in half of L2: the fixed order then keeps it there across every
     * row block by itself, and the tiles only scatter C's writes (Intel Xeon,
     * 2 MiB L2, 2048x4096x32 row-major: 3.96 ms tiled, 2.62 fixed; the Zen 5's
     * 1 MiB L2 holds that B only half over, and the tiles won 1.06x there).
     * Where the executor packs per-thread panels, or reads A in place, other
     * tiles first (gemm_panel_tiles, gemm_in_place_tiles). */
    const int nt = nthreads < 1 ? 1 : nthreads;
    ps_kernel_shape ks = ps_schedule_expert_kernel(desc);
    const ps_gemm_desc *g = &desc->u.gemm;
    ps_gemm_shape shape;
    ps_gemm_shape_of(g, &shape);
    if (l2_bytes && 2.0 * (double)g->K * (double)g->N * sizeof(float) < (double)l2_bytes)
        return ps_schedule_default(desc, out);
    /* The first of these tilings that splits evenly: panel tiles, in-place
     * tiles, 8 x 2; none: the fixed order. */
    const int64_t even = gemm_makespan(g, &ks, 1, 1, nt);
    int64_t tile_m, tile_n;
    ps_kernel_shape panel_ks = ks; /* the panel tiles may halve the batch */
    int found = ps_gemm_panels_pay(&shape, facts->llc_bytes, facts->panel_bytes) &&
                gemm_panel_tiles(g, &panel_ks, nt, &tile_m, &tile_n) && gemm_tiles_even(g, &panel_ks, nt, even, tile_m, tile_n);
    if (found)
        ks = panel_ks;
    else
        found = gemm_in_place_tiles(g, &shape, &ks, nt, &tile_m, &tile_n) &&
                gemm_tiles_even(g, &ks, nt, even, tile_m, tile_n);
    if (!found) {
        tile_m = 8;
        tile_n = 2;
        found = gemm_tiles_even(g, &ks, nt, even, tile_m, tile_n);
    }
    if (!found) return ps_schedule_default(desc, out);
    ps_schedule *s;
    if ((st = ps_schedule_create(ks.m, ks.n, ks.k, ks.batch, &s))) return st;
    /* A side of one block (panel tiles spanning it whole) has no block loop
     * inside the tile. */
    ps_schedule_add_loop(s, PS_DIM_K, tile_m, 1);
    ps_schedule_add_loop(s, PS_DIM_OW, tile_n, 1);
    ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    if (tile_m > 1) ps_schedule_add_loop(s, PS_DIM_K, 1, 0);
    if (tile_n > 1) ps_schedule_add_loop(s, PS_DIM_OW, 1, 0);
    *out = s;
    return PS_SUCCESS;
}
