/* The variant space: microkernel shapes x loop orders x tilings. */
#include "variants/variants.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"
#include "expert/expert.h"
#include "schedule/schedule_impl.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

typedef struct int_list {
    int n;
    int v[8];
} int_list;

static void add_unique(int_list *l, int x)
{
    if (x < 1 || l->n == 8) return;
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == x) return;
    l->v[l->n++] = x;
}



/* Reduction chunking: everything in one call, or halves/quarters (the
 * reduction loop then moves through the outer loops). */
static int_list batches(int64_t blocks)
{
    int_list l = {0};
    add_unique(&l, (int)(blocks < 4096 ? blocks : 4096));
    if (blocks >= 4) add_unique(&l, (int)ceil_div(blocks, 2));
    if (blocks >= 8) add_unique(&l, (int)ceil_div(blocks, 4));
    if (blocks >= 16) add_unique(&l, (int)ceil_div(blocks, 8));
    return l;
}

/* Upper bound on candidates per layer: the cost ranker analyses each one
 * (~10 us), and cold planning must stay within a few milliseconds. The
 * generator emits the most promising families first, so the cap trims the
 * least likely ones. */
#define PS_VARIANTS_MAX 480

typedef struct builder {
    ps_variant_set *set;
    int cap;
    const ps_problem *p;
    /* Canonical keys of the schedules kept so far (open addressing). Two
     * schedules that differ only in loops of trip count 1 run the same
     * iterations in the same order: only the first is kept. */
    uint64_t *keys;
    int key_slots;
} builder;

typedef enum { PUSH_KEPT, PUSH_DUPLICATE, PUSH_FULL } push_result;

/* FNV-1a over the kernel shape and the non-trivial loops (dim, trip count,
 * parallel). The executor's behaviour depends on nothing else. */
static uint64_t canonical_key(const ps_schedule *s, const ps_problem *p)
{
    const ps_stage *sg = &s->stages[0];
    int64_t ext[PS_DIM_COUNT], left[PS_DIM_COUNT];
    ps_tile_space_extents(p, &sg->kernel, ext);
    memcpy(left, ext, sizeof left);
    uint64_t h = 1469598103934665603ull;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 1099511628211ull)
    MIX(sg->kernel.m); MIX(sg->kernel.n); MIX(sg->kernel.k); MIX(sg->kernel.batch);
    for (int i = 0; i < sg->n_loops; i++) {
        const ps_loop *l = &sg->loops[i];
        const int64_t trips = ps_loop_trips(l, left);
        if (trips <= 1) continue;
        MIX(l->dim); MIX(trips); MIX(l->tile); MIX(l->parallel);
    }
#undef MIX
    return h ? h : 1; /* 0 marks an empty slot */
}

static push_result push(builder *b, ps_schedule *s, ps_status *st)
{
    *st = ps_schedule_check_problem(s, b->p);
    if (*st) {
        /* A generator bug, not a user error: report it loudly. */
        ps_schedule_destroy(s);
        *st = ps_error(PS_ERR_INVALID_SCHEDULE, "variant generator produced an invalid schedule: %s", ps_last_error_message());
        return PUSH_FULL;
    }
    uint64_t key = canonical_key(s, b->p);
    int slot = (int)(key % (uint64_t)b->key_slots);
    while (b->keys[slot] && b->keys[slot] != key) slot = (slot + 1) % b->key_slots;
    if (b->keys[slot] || b->set->n == PS_VARIANTS_MAX) {
        ps_schedule_destroy(s);
        return b->keys[slot] ? PUSH_DUPLICATE : PUSH_FULL;
    }
    if (b->set->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 256;
        ps_schedule **items = realloc(b->set->items, (size_t)cap * sizeof *items);
        if (!items) {
            ps_schedule_destroy(s);
            *st = ps_error(PS_ERR_OUT_OF_MEMORY, "variant generator: out of memory");
            return PUSH_FULL;
        }
        b->set->items = items;
        b->cap = cap;
    }
    b->keys[slot] = key;
    b->set->items[b->set->n++] = s;
    return PUSH_KEPT;
}

typedef struct tiling {
    int n;             /* tile loops, placed outermost (after the image loop), in this order */
    ps_dim dim[2];
    int64_t tile[2];
} tiling;

/* Adds one schedule: `order` lists the dims outermost first; the tile loops
 * of `t` go right after the leading image loop. The parallel band is the
 * loops before the first reduction loop, at most max_band of them. */
static push_result add_variant(builder *b, const ps_kernel_shape *ks, const ps_dim *order, int n_order, const tiling *t,
                               int max_band, ps_status *st)
{
    ps_schedule *s;
    if ((*st = ps_schedule_create(ks->m, ks->n, ks->k, ks->batch, &s))) return PUSH_FULL;
    ps_loop loops[PS_SCHEDULE_MAX_LOOPS];
    int nl = 0, lead = order[0] == PS_DIM_N;
    for (int i = 0; i < n_order; i++) {
        if (i == lead)
            for (int j = 0; j < t->n; j++) loops[nl++] = (ps_loop){t->dim[j], t->tile[j], 0};
        loops[nl++] = (ps_loop){order[i], 1, 0};
    }
    int band = 1;
    for (int i = 0; i < nl; i++) {
        if (loops[i].dim == PS_DIM_C || i >= max_band) band = 0;
        loops[i].parallel = band;
    }
    for (int i = 0; i < nl; i++) ps_schedule_add_loop(s, loops[i].dim, loops[i].tile, loops[i].parallel);
    return push(b, s, st);
}

static int next_permutation(ps_dim *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1]) i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (a[j] <= a[i]) j--;
    ps_dim t = a[i]; a[i] = a[j]; a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) { t = a[l]; a[l] = a[r]; a[r] = t; }
    return 1;
}

/* One family of variants: a kernel shape with its reduction chunking, a
 * tiling and a parallel-band limit, under every order of the tile loops.
 * Returns nonzero when the generator must stop (cap reached or error). */
static int add_family(builder *b, const ps_kernel_shape *ks, const tiling *t, int max_band, ps_status *st)
{
    const int gemm = b->p->desc.kind == PS_OP_GEMM;
    ps_dim perm[4] = {PS_DIM_K, PS_DIM_OH, PS_DIM_OW, PS_DIM_C};
    int nd = 4;
    if (gemm) {
        perm[1] = PS_DIM_OW;
        perm[2] = PS_DIM_C;
        nd = 3;
    }
    for (int i = 0; i < nd; i++)
        for (int j = i + 1; j < nd; j++)
            if (perm[j] < perm[i]) { ps_dim x = perm[i]; perm[i] = perm[j]; perm[j] = x; }
    do {
        ps_dim order[5];
        int no = 0;
        if (!gemm) order[no++] = PS_DIM_N;
        for (int i = 0; i < nd; i++) order[no++] = perm[i];
        if (add_variant(b, ks, order, no, t, max_band, st) == PUSH_FULL) return 1;
    } while (next_permutation(perm, nd));
    return 0;
}

/* Tilings of one kernel shape, most promising first. Output-channel tiles
 * share the inputs they read while inner loops run; row tiles (conv) share
 * weights across rows; column panels (GotoBLAS-style for gemm; long
 * flattened rows of 1x1 convs) keep a slab of the right-hand operand in
 * cache across all output-channel blocks. `wide` adds the second tier. */
static int tilings(const ps_problem *p, const ps_kernel_shape *ks, int wide, tiling *tl)
{
    int64_t ext[PS_DIM_COUNT];
    ps_tile_space_extents(p, ks, ext);
    const int gemm = p->desc.kind == PS_OP_GEMM;
    int nt = 0;
    if (!wide) {
        for (int64_t t = 2; t <= 16; t *= 2)
            if (ext[PS_DIM_K] >= 2 * t) tl[nt++] = (tiling){1, {PS_DIM_K, 0}, {t, 0}};
        if (!gemm && ext[PS_DIM_OH] >= 8) {
            tl[nt++] = (tiling){1, {PS_DIM_OH, 0}, {4, 0}};
            if (ext[PS_DIM_K] >= 8) tl[nt++] = (tiling){2, {PS_DIM_K, PS_DIM_OH}, {4, 4}};
        }
        if (gemm)
            for (int cols = 192; cols <= 768; cols *= 2) {
                int64_t panel = cols / ks->n;
                if (panel < 2 || ext[PS_DIM_OW] <= panel) continue;
                tl[nt++] = (tiling){1, {PS_DIM_OW, 0}, {panel, 0}};
                if (ext[PS_DIM_K] >= 8) tl[nt++] = (tiling){2, {PS_DIM_OW, PS_DIM_K}, {panel, 4}};
            }
        return nt;
    }
    if (!gemm) {
        for (int64_t t = 2; t <= 16; t *= 2)
            if (t != 4 && ext[PS_DIM_OH] >= 2 * t) tl[nt++] = (tiling){1, {PS_DIM_OH, 0}, {t, 0}};
        for (int64_t t = 2; t <= 32; t *= 2)
            if (ext[PS_DIM_OW] >= 2 * t) tl[nt++] = (tiling){1, {PS_DIM_OW, 0}, {t, 0}};
        if (ext[PS_DIM_K] >= 4 && ext[PS_DIM_OH] >= 4) tl[nt++] = (tiling){2, {PS_DIM_K, PS_DIM_OH}, {2, 2}};
        if (ext[PS_DIM_K] >= 4 && ext[PS_DIM_OW] >= 8) tl[nt++] = (tiling){2, {PS_DIM_OW, PS_DIM_K}, {4, 2}};
    } else {
        for (int64_t t = 2; t <= 8; t *= 2)
            if (ext[PS_DIM_OW] >= 2 * t) tl[nt++] = (tiling){1, {PS_DIM_OW, 0}, {t, 0}};
        if (ext[PS_DIM_K] >= 4 && ext[PS_DIM_OW] >= 4) tl[nt++] = (tiling){2, {PS_DIM_K, PS_DIM_OW}, {2, 2}};
    }
    return nt;
}

/* add_family over every reduction chunking in bs and, for tier -1, the
 * untiled loops only; tier 0: untiled plus the first tilings; tier 1: the
 * second tier of tilings. */
static int add_families(builder *b, const ps_kernel_shape *shape, const int_list *bs, int tier, int max_band,
                        ps_status *st)
{
    static const tiling untiled = {0, {0, 0}, {0, 0}};
    for (int ib = 0; ib < bs->n; ib++) {
        ps_kernel_shape ks = *shape;
        ks.batch = bs->v[ib];
        if (tier <= 0 && add_family(b, &ks, &untiled, max_band, st)) return 1;
        if (tier < 0) continue;
        tiling tl[16];
        int nt = tilings(b->p, &ks, tier, tl);
        for (int t = 0; t < nt; t++)
            if (add_family(b, &ks, &tl[t], max_band, st)) return 1;
    }
    return 0;
}

ps_status ps_variants_generate(const ps_problem *p, ps_variant_set *out)
{
    memset(out, 0, sizeof *out);
    builder b = {out, 0, p, NULL, 4 * PS_VARIANTS_MAX};
    if (!(b.keys = calloc((size_t)b.key_slots, sizeof *b.keys)))
        return ps_error(PS_ERR_OUT_OF_MEMORY, "variant generator: out of memory");
    ps_status st = PS_SUCCESS;
    /* The microkernel is the expert's; the variants are its outer loops. */
    const ps_kernel_shape expert = ps_expert_kernel(p);
    const int gemm = p->desc.kind == PS_OP_GEMM;
    const int64_t red = gemm ? p->desc.u.gemm.K : p->conv.C;
    /* Alternative microkernel shapes: narrower output-channel (m/2, m/4)
     * and column (about n/2) blocks. Eq. 1 tends to prefer the smaller working
     * sets of smaller kernels, which run less efficiently, so they come
     * after the expert kernel's families. */
    ps_kernel_shape shapes[5];
    int n_shapes = 0;
    shapes[n_shapes++] = expert;
    {
        const int64_t ow = gemm ? p->desc.u.gemm.N : p->conv.OW;
        int n2 = expert.n / 2;
        while (n2 >= 4 && ow % n2 != 0) n2--;
        if (n2 < 4) n2 = expert.n / 2;
        const int m2 = expert.m % 32 == 0                 ? expert.m / 2
                       : expert.m > 16 && expert.m % 16 == 0 ? 16
                       : expert.m > 8 && expert.m % 8 == 0   ? 8
                                                             : 0;
        if (m2) shapes[n_shapes++] = (ps_kernel_shape){m2, expert.n, expert.k, expert.batch};
        if (n2 >= 4) shapes[n_shapes++] = (ps_kernel_shape){expert.m, n2, expert.k, expert.batch};
        if (m2 && n2 >= 4) shapes[n_shapes++] = (ps_kernel_shape){m2, n2, expert.k, expert.batch};
        if (m2 && m2 % 32 == 0) shapes[n_shapes++] = (ps_kernel_shape){m2 / 2, expert.n, expert.k, expert.batch};
    }
    const int_list bs = batches(ceil_div(red, expert.k));
    const int all = PS_SCHEDULE_MAX_LOOPS;
    int stop = 0;
    /* Tiers, most promising first (the cap trims the last ones):
     * 1. the expert kernel, every reduction chunking, the first tilings,
     *    the widest parallel band;          2. its two-loop band;
     * 3. the alternative kernels, whole reduction per call, first tilings;
     * 4. the expert kernel's finer and column tilings;
     * 5. one- and two-loop bands over the first tilings (conv, N >= threads:
     *    whole images per thread);          6. the alternative kernels with
     *    every chunking and tiling. */
    if (!stop) stop = add_families(&b, &expert, &bs, 0, all, &st);
    if (!stop) stop = add_families(&b, &expert, &bs, -1, 2, &st);
    for (int sh = 1; sh < n_shapes && !stop; sh++) stop = add_families(&b, &shapes[sh], &(int_list){1, {bs.v[0]}}, 0, all, &st);
    if (!stop) stop = add_families(&b, &expert, &bs, 1, all, &st);
    for (int band = 1; band <= 2 && !stop; band++) stop = add_families(&b, &expert, &bs, 0, band, &st);
    for (int sh = 1; sh < n_shapes && !stop; sh++) stop = add_families(&b, &shapes[sh], &bs, 0, all, &st);
    for (int sh = 1; sh < n_shapes && !stop; sh++) stop = add_families(&b, &shapes[sh], &bs, 1, all, &st);
    free(b.keys);
    if (st) {
        ps_variant_set_release(out);
        return st;
    }
    return PS_SUCCESS;
}

void ps_variant_set_release(ps_variant_set *set)
{
    if (!set) return;
    for (int i = 0; i < set->n; i++) ps_schedule_destroy(set->items[i]);
    free(set->items);
    set->items = NULL;
    set->n = 0;
}
