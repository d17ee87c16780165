/* The variant space: microkernel shapes x loop orders x tilings. */
#include "variants/variants.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "descriptors/shape.h"
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

/* Register-friendly blocks of a channel-like extent e: multiples of the
 * 16-float vector up to `max`, or e itself when it is smaller. */
static int_list channel_blocks(int64_t e, int max, int count)
{
    int_list l = {0};
    if (e <= max) add_unique(&l, (int)e);
    for (int b = max; b >= 16 && l.n < count; b /= 2)
        if (b < e) add_unique(&l, b);
    if (l.n == 0) add_unique(&l, (int)(e < max ? e : max));
    return l;
}

/* Column blocks: the widest divisors of e in [4, max] (no remainder kernel),
 * e itself when small, else max with a remainder. */
static int_list column_blocks(int64_t e, int max, int count)
{
    int_list l = {0};
    if (e <= max) add_unique(&l, (int)e);
    for (int b = max; b >= 4 && l.n < count; b--)
        if (e % b == 0) add_unique(&l, b);
    if (l.n < count && e > max) add_unique(&l, max);
    if (l.n < count && e > max / 2) add_unique(&l, max / 2);
    return l;
}

/* Reduction chunking: everything in one call, or halves/quarters (the
 * reduction loop then moves through the outer loops). */
static int_list batches(int64_t blocks)
{
    int_list l = {0};
    add_unique(&l, (int)(blocks < 4096 ? blocks : 4096));
    if (blocks >= 4) add_unique(&l, (int)ceil_div(blocks, 2));
    if (blocks >= 8) add_unique(&l, (int)ceil_div(blocks, 4));
    return l;
}

typedef struct builder {
    ps_variant_set *set;
    int cap;
    const ps_desc *desc;
} builder;

static ps_status push(builder *b, ps_schedule *s)
{
    ps_status st = ps_schedule_check(s, b->desc);
    if (st) {
        /* A generator bug, not a user error: report it loudly. */
        ps_schedule_destroy(s);
        return ps_error(PS_ERR_INVALID_SCHEDULE, "variant generator produced an invalid schedule: %s", ps_last_error_message());
    }
    if (b->set->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 256;
        ps_schedule **items = realloc(b->set->items, (size_t)cap * sizeof *items);
        if (!items) {
            ps_schedule_destroy(s);
            return ps_error(PS_ERR_OUT_OF_MEMORY, "variant generator: out of memory");
        }
        b->set->items = items;
        b->cap = cap;
    }
    b->set->items[b->set->n++] = s;
    return PS_SUCCESS;
}

/* Adds one schedule: `order` lists the dims outermost first; a tile loop of
 * `tile_dim` with `tile` (> 1) goes right after the leading image loop. The
 * parallel band is every loop before the first reduction loop. */
static ps_status add_variant(builder *b, const ps_kernel_shape *ks, const ps_dim *order, int n_order, int tile_dim,
                             int64_t tile)
{
    ps_schedule *s;
    ps_status st = ps_schedule_create(ks->m, ks->n, ks->k, ks->batch, &s);
    if (st) return st;
    ps_loop loops[PS_SCHEDULE_MAX_LOOPS];
    int nl = 0;
    for (int i = 0; i < n_order; i++) {
        if (tile > 1 && ((i == 1 && order[0] == PS_DIM_N) || (i == 0 && order[0] != PS_DIM_N)))
            loops[nl++] = (ps_loop){(ps_dim)tile_dim, tile, 0};
        loops[nl++] = (ps_loop){order[i], 1, 0};
    }
    int band = 1;
    for (int i = 0; i < nl; i++) {
        if (loops[i].dim == PS_DIM_C) band = 0;
        loops[i].parallel = band;
    }
    for (int i = 0; i < nl; i++) ps_schedule_add_loop(s, loops[i].dim, loops[i].tile, loops[i].parallel);
    return push(b, s);
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

ps_status ps_variants_generate(const ps_desc *desc, ps_variant_set *out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_variants_generate: out is NULL");
    memset(out, 0, sizeof *out);
    ps_status st = ps_desc_validate(desc);
    if (st) return st;
    builder b = {out, 0, desc};
    int_list ms, ns, ks;
    int64_t red; /* reduction extent */
    /* Inner dims to permute behind the image loop. */
    ps_dim dims[4];
    int nd;
    if (desc->kind == PS_OP_GEMM) {
        const ps_gemm_desc *g = &desc->u.gemm;
        ms = channel_blocks(g->M, 64, 3);
        ns = column_blocks(g->N, 32, 2);
        ks = channel_blocks(g->K, 64, 2);
        red = g->K;
        dims[0] = PS_DIM_K; dims[1] = PS_DIM_OW; dims[2] = PS_DIM_C;
        nd = 3;
    } else {
        ps_conv_shape c;
        ps_conv_shape_of(&desc->u.conv, &c);
        ms = channel_blocks(c.K, 64, 2);
        ns = column_blocks(c.OW, 28, 2);
        ks = channel_blocks(c.C, 64, 2);
        red = c.C;
        dims[0] = PS_DIM_K; dims[1] = PS_DIM_OH; dims[2] = PS_DIM_OW; dims[3] = PS_DIM_C;
        nd = 4;
    }
    for (int im = 0; im < ms.n; im++)
        for (int in = 0; in < ns.n; in++)
            for (int ik = 0; ik < ks.n; ik++) {
                int_list bs = batches(ceil_div(red, ks.v[ik]));
                for (int ib = 0; ib < bs.n; ib++) {
                    ps_kernel_shape kshape = {ms.v[im], ns.v[in], ks.v[ik], bs.v[ib]};
                    int64_t ext[PS_DIM_COUNT];
                    ps_tile_space_extents(desc, &kshape, ext);
                    ps_dim perm[4];
                    memcpy(perm, dims, sizeof perm);
                    /* Start from the sorted permutation. */
                    for (int i = 0; i < nd; i++)
                        for (int j = i + 1; j < nd; j++)
                            if (perm[j] < perm[i]) { ps_dim t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
                    do {
                        /* A single reduction chunk makes the position of its
                         * loop irrelevant: keep only the innermost one. */
                        if (ext[PS_DIM_C] == 1 && perm[nd - 1] != PS_DIM_C) continue;
                        ps_dim order[5];
                        int no = 0;
                        if (desc->kind == PS_OP_CONV_FWD) order[no++] = PS_DIM_N;
                        for (int i = 0; i < nd; i++) order[no++] = perm[i];
                        if ((st = add_variant(&b, &kshape, order, no, 0, 1))) goto fail;
                        /* Output-channel tiling: a tile of blocks shares the
                         * inputs it reads while other loops run inside. */
                        if (ext[PS_DIM_K] >= 8 && (st = add_variant(&b, &kshape, order, no, PS_DIM_K, 4))) goto fail;
                    } while (next_permutation(perm, nd));
                }
            }
    return PS_SUCCESS;
fail:
    ps_variant_set_release(out);
    return st;
}

void ps_variant_set_release(ps_variant_set *set)
{
    if (!set) return;
    for (int i = 0; i < set->n; i++) ps_schedule_destroy(set->items[i]);
    free(set->items);
    set->items = NULL;
    set->n = 0;
}
