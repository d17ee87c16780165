/* The expert's microkernel and the fixed loop order around it (the default
 * schedule). The measurements behind each choice: docs/expert-rules.md,
 * "Kernel choice". */
#include "expert/expert.h"

#include "core/error.h"
#include "expert/kernel.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Block size for a dimension of extent `e`: e itself when it is at most the
 * preferred block, else the preferred block or its half when one divides e,
 * else the preferred block with a remainder. Never a 16-wide exact divisor:
 * 16-wide blocks ran at 0.60-0.85x of 64 plus a remainder block, while 32
 * and 64 plus a remainder are within 1% of each other (kernel choice,
 * "blocks of 64"). */
static int pick_block(int64_t e, int pref)
{
    if (e <= pref) return (int)e;
    for (int b = pref; b >= 32 && b >= pref / 2; b /= 2)
        if (e % b == 0) return b;
    return pref;
}

int ps_expert_pick_width(int64_t ow, int max)
{
    if (ow <= max) return (int)ow;
    for (int b = max; b >= 8; b--)
        if (ow % b == 0) return b;
    return ow < 2 * max && ow <= PS_KERNEL_DIM_MAX ? (int)ow : max;
}

int ps_expert_reg_block(int m)
{
    const int vectors = (m + 15) / 16;
    return vectors == 4 ? PS_REG_BLOCK : vectors == 3 ? PS_REG_BLOCK48 : vectors == 2 ? PS_REG_BLOCK32 : 0;
}

/* Cost of one call of n columns in register blocks of reg columns, in column
 * units: each block costs about PS_BLOCK_FIXED + its columns (it reloads the
 * weight vectors per reduction step whatever its width), PS_CALL_FIXED
 * stands for the call itself. Fitted to polysci-brgemm-ceiling over n =
 * 1..56 (docs/expert-rules.md, "call-cost model"). */
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

int ps_expert_cheaper_width(int64_t ow, int n, int max, int reg)
{
    int best = n;
    double best_cost = 0.97 * row_cost(ow, n, reg); /* what another width must beat */
    const int divisor = ps_expert_pick_width(ow, max);
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

/* The column block of a 64-row kernel, aware of its 6-column register
 * blocks: a width that leaves a short last block (19 = 6 + 6 + 6 + 1) runs
 * below one in whole blocks plus a remainder call, so multiples of the block
 * are tried beside ps_expert_pick_width's choice, which stays unless one is
 * 3% cheaper (kernel choice, "64-row widths"). */
static int pick_width64(int64_t ow, int max)
{
    return ps_expert_cheaper_width(ow, ps_expert_pick_width(ow, max), max, PS_REG_BLOCK);
}

ps_kernel_shape ps_expert_kernel(const ps_problem *p)
{
    ps_kernel_shape ks;
    if (p->desc.kind == PS_OP_GEMM) {
        /* Sized on the column-major problem the executor runs (a row-major
         * GEMM is its transpose: M and N swap). The schedule's kernel is in
         * the user's terms and the executor swaps it back, so for a
         * row-major GEMM the 64-block is sized on N and applied along M, and
         * the 48-cap comes from M and applies along N (M = 16, N = 4096: a
         * 16 x 16 executor kernel). The orientation that would keep them
         * apart ran at 0.76-1.01x of this one, so it stays; 48-wide column
         * blocks with a remainder and 8 reduction blocks per call beat 16-24
         * wide blocks, the widest dividing width and 16 (kernel choice,
         * "GEMM kernel"). */
        const ps_gemm_shape *g = &p->gemm;
        ks.m = pick_block(g->M, 64);
        ks.n = (int)(g->N < 48 ? g->N : 48);
        ks.k = pick_block(g->K, 64);
        const int64_t blocks = ceil_div(g->K, ks.k);
        ks.batch = (int)(blocks < 8 ? blocks : 8);
        return ks;
    }
    const ps_conv_shape *c = &p->conv;
    ks.m = pick_block(c->K, 64);
    /* 30 columns, not 28: widths are the largest divisor of OW up to the
     * cap, and 64-row kernels run 6-column register blocks, so 150-column
     * rows take 30 rather than 25 (kernel choice, "30-column cap"). */
    int max_n = PS_CONV_MAX_WIDTH;
    /* 1x1 convs whose calls reduce over few floats (C <= 128: the whole C
     * per call) do as little work per call as few-channel convs: up to 112
     * columns spread each call's fixed cost (kernel choice, "wide 1x1"). */
    if (c->R == 1 && c->S == 1 && c->C <= 128) max_n = 112;
    /* Few channels per tap likewise up to 112; where the taps merge, a block
     * is cut into q = ceil(S / sw) phase calls, so ~75 columns per call
     * (kernel choice, "few channels"). */
    if (ps_conv_few_channels(c)) {
        const int64_t per_calls = ps_conv_merges_taps(c) ? 75 * ps_conv_tap_phases(c) : 0;
        max_n = per_calls > PS_KERNEL_DIM_MAX ? PS_KERNEL_DIM_MAX : per_calls > 112 ? (int)per_calls : 112;
    }
    /* 64-row kernels by their register blocks; the few-channel convs' calls
     * are split into tap phases (merged taps) or reduce over a few floats,
     * where the blocks were not measured. */
    ks.n = ks.m == 64 && !ps_conv_few_channels(c) ? pick_width64(c->OW, max_n) : ps_expert_pick_width(c->OW, max_n);
    /* One vector per column (m <= 16): LIBXSMM's register block spans all
     * of a call's columns, and where their input pixels lie a multiple of
     * 4 KiB apart (C x stride floats) the columns' lines all fall in the
     * same L1 sets (x86 L1 data caches are virtually indexed, 4 KiB per
     * way). polysci-brgemm-ceiling, m 9 and 16, k 64, batch 24, columns
     * 12 KiB apart, against 12 KiB + 64 B (Zen 4, 8-way L1): 10 columns
     * 0.96-0.97, 12 0.69-0.75, 14 0.55-0.56, 30 0.18-0.19 of the speed; m =
     * 32 and up (14 columns or fewer per register block) unaffected. A 1536
     * -> 9 3x3 stride-2 layer: 9.9 ms with 30 columns per call. */
    if (ks.m <= 16 && (c->C * c->sw * (int64_t)sizeof(float)) % 4096 == 0 && ks.n > PS_ALIASED_MAX_N) {
        ks.n = PS_ALIASED_MAX_N;
        for (int b = PS_ALIASED_MAX_N; b >= 8; b--)
            if (c->OW % b == 0) {
                ks.n = b;
                break;
            }
    }
    ks.k = pick_block(c->C, 64);
    const int64_t blocks = ceil_div(c->C, ks.k);
    ks.batch = (int)(blocks < 64 ? blocks : 64);
    return ks;
}

ps_status ps_expert_default(const ps_problem *p, ps_schedule **out)
{
    const ps_kernel_shape ks = ps_expert_kernel(p);
    ps_schedule *s;
    ps_status st = ps_schedule_create(ks.m, ks.n, ks.k, ks.batch, &s);
    if (st) return st;
    if (p->desc.kind == PS_OP_GEMM) {
        ps_schedule_add_loop(s, PS_DIM_K, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_OW, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    } else {
        /* Column blocks join the band: a flattened 1x1 conv of one image has
         * nothing else to share between threads. Convs whose filter-row taps
         * the executor merges walk each column strip down its rows (ow
         * outside oh), 0.99-1.05x rows outside columns on those layers; not
         * for one image, where the threads would split each row's strips
         * between them (rows 1.23-1.34x on vgga_01 at N = 1; kernel choice,
         * "column strips"). */
        const int strips = ps_conv_merges_taps(&p->conv) && p->conv.N >= 2;
        ps_schedule_add_loop(s, PS_DIM_N, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_K, 1, 1);
        ps_schedule_add_loop(s, strips ? PS_DIM_OW : PS_DIM_OH, 1, 1);
        ps_schedule_add_loop(s, strips ? PS_DIM_OH : PS_DIM_OW, 1, 1);
        ps_schedule_add_loop(s, PS_DIM_C, 1, 0);
    }
    *out = s;
    return PS_SUCCESS;
}

ps_status ps_schedule_default(const ps_desc *desc, ps_schedule **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_schedule_default: out is NULL");
    *out = NULL;
    ps_problem p;
    ps_status st = ps_problem_of(desc, &p);
    return st ? st : ps_expert_default(&p, out);
}
