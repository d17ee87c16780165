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

typedef struct tiling {
    int n;             /* tile loops, placed outermost (after the image loop), in this order */
    ps_dim dim[2];
    int64_t tile[2];
} tiling;

/* Adds one schedule: `order` lists the dims outermost first; the tile loops
 * of `t` go right after the leading image loop. The parallel band is every
 * loop before the first reduction loop. */
/* max_band: at most this many outermost loops run in parallel (the band
 * always stops before the reduction loop). */
static ps_status add_variant(builder *b, const ps_kernel_shape *ks, const ps_dim *order, int n_order, const tiling *t,
                             int max_band)
{
    ps_schedule *s;
    ps_status st = ps_schedule_create(ks->m, ks->n, ks->k, ks->batch, &s);
    if (st) return st;
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
    /* The microkernel is the expert's; the variants are its outer loops. */
    const ps_kernel_shape expert = ps_schedule_expert_kernel(desc);
    const int gemm = desc->kind == PS_OP_GEMM;
    int64_t red = gemm ? desc->u.gemm.K : desc->u.conv.C;
    ps_dim dims[4] = {PS_DIM_K, PS_DIM_OH, PS_DIM_OW, PS_DIM_C};
    int nd = 4;
    if (gemm) {
        dims[1] = PS_DIM_OW;
        dims[2] = PS_DIM_C;
        nd = 3;
    }
    /* Microkernel shapes: the expert's, and narrower output-channel (m/2)
     * and column (about n/2) blocks. Eq. 1 tends to prefer the smaller
     * working sets of smaller kernels, which run less efficiently: the
     * alternatives get the untiled orders and the full reduction only. */
    ps_kernel_shape shapes[4];
    int n_shapes = 0;
    shapes[n_shapes++] = expert;
    {
        const int64_t cols = gemm ? desc->u.gemm.N : 0;
        ps_conv_shape cs;
        if (!gemm) ps_conv_shape_of(&desc->u.conv, &cs);
        const int64_t ow = gemm ? cols : cs.OW;
        int n2 = expert.n / 2;
        while (n2 >= 4 && ow % n2 != 0) n2--;
        if (n2 < 4) n2 = expert.n / 2;
        const int m2 = expert.m >= 32 && expert.m % 32 == 0 ? expert.m / 2 : 0;
        if (m2) shapes[n_shapes++] = (ps_kernel_shape){m2, expert.n, expert.k, expert.batch};
        if (n2 >= 4) shapes[n_shapes++] = (ps_kernel_shape){expert.m, n2, expert.k, expert.batch};
        if (m2 && n2 >= 4) shapes[n_shapes++] = (ps_kernel_shape){m2, n2, expert.k, expert.batch};
    }
    for (int sh = 0; sh < n_shapes; sh++) {
    int_list bs = batches(ceil_div(red, expert.k));
    if (sh > 0) bs.n = 1; /* alternatives: the full reduction per call */
    for (int ib = 0; ib < bs.n; ib++) {
        ps_kernel_shape kshape = shapes[sh];
        kshape.batch = bs.v[ib];
        int64_t ext[PS_DIM_COUNT];
        ps_tile_space_extents(desc, &kshape, ext);
        /* Tilings placed outermost: output-channel tiles share the inputs they
         * read while inner loops run; row tiles (conv) share weights across
         * rows; column panels (gemm, GotoBLAS-style) keep a slab of B in cache
         * across all row blocks. */
        tiling tl[16];
        int nt = 0;
        tl[nt++] = (tiling){0, {0, 0}, {0, 0}};
        for (int64_t t = 2; t <= 8 && sh == 0; t *= 2)
            if (ext[PS_DIM_K] >= 2 * t) tl[nt++] = (tiling){1, {PS_DIM_K, 0}, {t, 0}};
        if (sh == 0 && !gemm && ext[PS_DIM_OH] >= 8) {
            tl[nt++] = (tiling){1, {PS_DIM_OH, 0}, {4, 0}};
            if (ext[PS_DIM_K] >= 8) tl[nt++] = (tiling){2, {PS_DIM_K, PS_DIM_OH}, {4, 4}};
        }
        if (sh == 0 && gemm)
            for (int cols = 192; cols <= 768; cols *= 2) {
                int64_t panel = cols / kshape.n;
                if (panel < 2 || ext[PS_DIM_OW] <= panel) continue;
                tl[nt++] = (tiling){1, {PS_DIM_OW, 0}, {panel, 0}};
                if (ext[PS_DIM_K] >= 8) tl[nt++] = (tiling){2, {PS_DIM_OW, PS_DIM_K}, {panel, 4}};
            }
        ps_dim perm[4];
        memcpy(perm, dims, sizeof perm);
        for (int i = 0; i < nd; i++)
            for (int j = i + 1; j < nd; j++)
                if (perm[j] < perm[i]) { ps_dim t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
        do {
            /* A single reduction chunk makes the position of its loop
             * irrelevant: keep only the innermost one. */
            if (ext[PS_DIM_C] == 1 && perm[nd - 1] != PS_DIM_C) continue;
            ps_dim order[5];
            int no = 0;
            if (!gemm) order[no++] = PS_DIM_N;
            for (int i = 0; i < nd; i++) order[no++] = perm[i];
            for (int t = 0; t < nt; t++)
                if ((st = add_variant(&b, &kshape, order, no, &tl[t], PS_SCHEDULE_MAX_LOOPS))) goto fail;
            /* Parallel band choice: only the two outermost loops (coarser,
             * contiguous shares) instead of everything before the reduction. */
            int c_at = 0;
            while (c_at < no && order[c_at] != PS_DIM_C) c_at++;
            if (sh == 0 && ib == 0 && c_at > 2 && (st = add_variant(&b, &kshape, order, no, &tl[0], 2))) goto fail;
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
