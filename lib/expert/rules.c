/* The expert schedule's rules: each a named condition (`when`, in terms of
 * the problem and the machine facts: cache sizes, a slow last level,
 * LIBXSMM's register blocks) and an effect (`then`), listed in the tables
 * conv_kernel_rules, conv_loop_rules and gemm_loop_rules below, in the order
 * ps_expert_schedule tries them. docs/expert-rules.md has one row per rule
 * with the measurement that backs it and the command that repeats it.
 *
 * Terms: the filter bank is all K x C x R x S weights; `too big` means it
 * does not fit in half of L2 (exactly half is too big from two images up:
 * two images' tiles then share L2 with it); a kernel call reads the
 * weights of one output-channel block times the call's reduction blocks. */
#include "expert/expert.h"

#include "core/error.h"
#include "expert/kernel.h"
#include "ranking/rank.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static const char *const rule_names[PS_RULE_COUNT] = {
    [PS_RULE_MERGED_TAPS] = "merged-taps",
    [PS_RULE_REGISTER_WIDTH] = "register-width",
    [PS_RULE_NARROW_CALLS] = "narrow-calls",
    [PS_RULE_STREAMED_WEIGHTS] = "streamed-weights",
    [PS_RULE_CHANNEL_TILES] = "channel-tiles",
    [PS_RULE_SHORT_REGISTER_BLOCK] = "short-register-block",
    [PS_RULE_WHOLE_REGISTER_WIDTH] = "whole-register-width",
    [PS_RULE_ROW_TILES] = "row-tiles",
    [PS_RULE_IMAGES_INSIDE] = "images-inside",
    [PS_RULE_INPUT_STATIONARY] = "input-stationary",
    [PS_RULE_SHARED_CHANNELS] = "shared-channels",
    [PS_RULE_EVEN_SPLIT] = "even-split",
    [PS_RULE_GEMM_B_IN_L2] = "gemm-b-in-l2",
    [PS_RULE_GEMM_PANEL_TILES] = "gemm-panel-tiles",
    [PS_RULE_GEMM_IN_PLACE_TILES] = "gemm-in-place-tiles",
    [PS_RULE_GEMM_L2_TILES] = "gemm-l2-tiles",
};

const char *ps_expert_rule_name(ps_expert_rule rule)
{
    return (int)rule >= 0 && rule < PS_RULE_COUNT ? rule_names[rule] : "?";
}

/* ------------------------------------------------------------ loop nests */

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

/* The default's loops (ps_expert_default) around kernel ks. */
static ps_status default_loops(const ps_problem *p, const ps_kernel_shape *ks, ps_schedule **out)
{
    ps_status st = ps_expert_default(p, out);
    if (!st) (*out)->stages[0].kernel = *ks;
    return st;
}

/* ------------------------------------------------------------ conv rules */

/* What the conv rules read and write while ps_expert_schedule walks them. */
typedef struct conv_state {
    const ps_problem *p;
    const ps_conv_shape *c;
    const ps_expert_facts *f;
    int nthreads;
    double weight_bytes;   /* the filter bank */
    int too_big;           /* the bank is too large for half of L2 (with L2 unknown, always) */
    ps_kernel_shape ks;    /* the expert kernel as the kernel rules reshape it */
    int merged;            /* merged-taps applied: the other rules do not reshape the kernel */
    int rows32;            /* a 32-row rule applied */
    int64_t k_tile;        /* channel-tiles: the tile, in output-channel blocks of ks */
    unsigned fired;        /* the rules applied so far, a bit each */
} conv_state;

static int one_by_one(const ps_conv_shape *c) { return c->R * c->S == 1; }

/* The tile space of the kernel as it is now. */
static void state_extents(const conv_state *s, int64_t ext[PS_DIM_COUNT])
{
    ps_tile_space_extents(s->p, &s->ks, ext);
}

/* merged-taps: where the taps merge (few-channel first layers: one call
 * reduces over all R x S x C weights of its block and reads the R input rows
 * under its column block, and the q tap-phase calls of a block read the
 * same rows again) and the last level is slow, the kernel's rows: output
 * channels that 64 does not divide in the fewest blocks of a 16-row
 * multiple that divides K, and 32 rows where a 64-row call's weights and
 * those input rows overflow L1 but a 32-row call's fit. Its loops below. */
static int64_t merged_taps_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    const size_t l1 = s->f->l1_bytes;
    if (!s->f->llc_slow || !l1 || !s->f->l2_bytes || !ps_conv_merges_taps(c)) return 0;
    int m = s->ks.m;
    for (int b = 64; c->K > 64 && b > 32; b -= 16)
        if (c->K % b == 0) {
            m = b;
            break;
        }
    const double rows = (double)c->R * (double)((s->ks.n - 1) * c->sw + c->S) * (double)c->C * sizeof(float);
    const double per_row = (double)c->R * c->S * c->C * sizeof(float); /* weights per output channel */
    if (m == 64 && 64 * per_row + rows > (double)l1 && 32 * per_row + rows <= (double)l1) m = 32;
    return m;
}

static void set_rows(conv_state *s, int64_t rows)
{
    s->ks.m = (int)rows;
    s->merged = 1;
}

/* register-width: a kernel of fewer than 64 rows (K < 64, K not a multiple
 * of 64, or a 32-row rule), whose width the expert chose for 64 rows,
 * re-chooses it for its own register blocks (14 columns for 17-32 rows, 9
 * for 33-48), where the last level is slow. */
static int64_t register_width_when(const conv_state *s)
{
    const int reg = ps_expert_reg_block(s->ks.m);
    if (!s->f->llc_slow || s->merged || !reg || reg == PS_REG_BLOCK || s->ks.n > PS_CONV_MAX_WIDTH ||
        ps_conv_few_channels(s->c))
        return 0;
    return ps_expert_cheaper_width(s->c->OW, s->ks.n, PS_CONV_MAX_WIDTH, reg);
}

static void set_width(conv_state *s, int64_t width) { s->ks.n = (int)width; }

/* The 32-row form of the 64-row kernel (the effect of the three 32-row
 * rules): an output-channel tile keeps its channels, and the width is
 * fitted to the 32-row register blocks. */
static void take_32_rows(conv_state *s, int64_t unused)
{
    (void)unused;
    s->k_tile *= s->ks.m / 32;
    s->ks.m = 32;
    s->rows32 = 1;
    const int64_t width = register_width_when(s);
    if (width) {
        set_width(s, width);
        s->fired |= 1u << PS_RULE_REGISTER_WIDTH;
    }
}

/* narrow-calls: spatial filters whose weights per kernel call (the 64-row
 * block x the call's reduction blocks x R x S taps) are 256 KiB or more
 * take 32-row blocks: the gain is in the layer's data flow (the two kernels
 * run alike with their weights in L2), and the bound is in bytes because it
 * held on a 1 MiB and a 2 MiB L2 alike. 1x1 convs lose with it. */
#define PS_NARROW_MIN_CALL_BYTES (256u << 10)
static int64_t narrow_calls_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    const ps_kernel_shape *ks = &s->ks;
    const double call_bytes = (double)ks->m * ks->k * ks->batch * c->R * c->S * sizeof(float);
    return s->f->l2_bytes && !one_by_one(c) && ks->m == 64 && c->K % 32 == 0 && !ps_conv_merges_taps(c) &&
           call_bytes >= (double)PS_NARROW_MIN_CALL_BYTES;
}

/* streamed-weights: 1x1 convs whose calls all read their weights from
 * beyond L2 (the bank too big, and one column block per image, so each
 * block's weights serve one call per image) take 32-row blocks where the
 * last level is slow: a pass over weights from memory does 2 x (register
 * block columns) flops per weight float, and the 32-row kernel's blocks hold
 * more columns. Where many column blocks reuse each weight block, 32 rows
 * lose (twice the input reads), and where the last level is fast too. */
static int64_t streamed_weights_when(const conv_state *s)
{
    if (s->rows32 || !s->f->l2_bytes) return 0;
    int64_t ext[PS_DIM_COUNT];
    state_extents(s, ext);
    return s->f->llc_slow && s->too_big && one_by_one(s->c) && s->ks.m == 64 && s->c->K % 32 == 0 &&
           ext[PS_DIM_OH] * ext[PS_DIM_OW] == 1;
}

/* channel-tiles: 1x1 convs whose bank is too big but whose image has
 * several column blocks, where the last level is slow, run in output-channel
 * tiles of at most a quarter of L2 of weights, input-stationary within each
 * tile (every block of the tile over an input block while it is in cache, the
 * tile's weights in L2 beside it), where the fixed order reads the whole
 * input once per output-channel block from beyond L2. The tile in kernel
 * blocks: at least 2 (one block is the fixed order), fewer than all. Decided
 * on the 64-row kernel (a later 32-row rule keeps its channels). */
static int64_t channel_tiles_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    const size_t l2 = s->f->l2_bytes;
    if (s->rows32 || !s->f->llc_slow || !s->too_big || !l2 || !one_by_one(c)) return 0;
    int64_t ext[PS_DIM_COUNT];
    state_extents(s, ext);
    if (ext[PS_DIM_OH] * ext[PS_DIM_OW] < 2) return 0;
    const int64_t tile = (int64_t)((double)(l2 / 4) / ((double)s->ks.m * c->C * sizeof(float)));
    return tile >= 2 && tile < ext[PS_DIM_K] ? tile : 0;
}

static void set_channel_tile(conv_state *s, int64_t tile) { s->k_tile = tile; }

/* short-register-block: where the 64-row kernel's width leaves a short last
 * register block (not a multiple of 6 columns; each block passes over the
 * call's weights once) and the last level is slow, 32-row blocks, whose
 * register blocks hold about 14 columns. The 32-row kernel reads each input
 * block twice as often, so for 1x1 convs only where at least
 * PS_SHORT_BLOCK_MIN_CHANNELS output channels (the tile's, with channel
 * tiles) share each input block and a call's input block stays within
 * PS_SHORT_BLOCK_MAX_INPUT_BYTES. Wide calls (beyond PS_CONV_MAX_WIDTH: few
 * channels, 1x1 with C <= 128) keep 64 rows. */
#define PS_SHORT_BLOCK_MIN_CHANNELS 256
#define PS_SHORT_BLOCK_MAX_INPUT_BYTES (64u << 10)
static int64_t short_register_block_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    const ps_kernel_shape *ks = &s->ks;
    if (s->rows32 || !s->f->l2_bytes || !s->f->llc_slow || ks->m != 64 || c->K % 32 ||
        ks->n > PS_CONV_MAX_WIDTH || ks->n % PS_REG_BLOCK == 0 || ps_conv_few_channels(c) || ps_conv_merges_taps(c))
        return 0;
    if (!one_by_one(c)) return 1;
    const int64_t channels = s->k_tile ? s->k_tile * ks->m : c->K;
    const double input_bytes = (double)ks->n * ks->k * ks->batch * sizeof(float);
    return channels >= PS_SHORT_BLOCK_MIN_CHANNELS && input_bytes <= (double)PS_SHORT_BLOCK_MAX_INPUT_BYTES;
}

/* whole-register-width: 1x1 convs whose 64-row calls leave a short register
 * block where 32 rows do not pay (short-register-block did not apply) take
 * calls of whole register blocks instead, the widest within the usual cap
 * (30 columns), where the (flattened) row spans at least four such calls,
 * so the one remainder call for the row's rest weighs little (a 63-column
 * row would run 30 + 30 + 3 against 3 x 21). Where the last level is slow. */
static int64_t whole_register_width_when(const conv_state *s)
{
    const ps_kernel_shape *ks = &s->ks;
    const int width = PS_CONV_MAX_WIDTH / PS_REG_BLOCK * PS_REG_BLOCK;
    if (s->rows32 || !s->f->l2_bytes || !s->f->llc_slow || ks->m != 64 || !one_by_one(s->c) ||
        ks->n % PS_REG_BLOCK == 0 || ks->n > PS_CONV_MAX_WIDTH)
        return 0;
    return s->c->OW >= 4 * width ? width : 0;
}

/* A conv rule that reshapes the kernel: `when` gives the rule's parameter
 * where it applies (0: it does not), `then` applies it. */
typedef struct conv_kernel_rule {
    ps_expert_rule rule;
    int64_t (*when)(const conv_state *s);
    void (*then)(conv_state *s, int64_t param);
} conv_kernel_rule;

/* In order: each rule reads the kernel the rules above it left. */
static const conv_kernel_rule conv_kernel_rules[] = {
    {PS_RULE_MERGED_TAPS, merged_taps_when, set_rows},
    {PS_RULE_REGISTER_WIDTH, register_width_when, set_width},
    {PS_RULE_NARROW_CALLS, narrow_calls_when, take_32_rows},
    {PS_RULE_STREAMED_WEIGHTS, streamed_weights_when, take_32_rows},
    {PS_RULE_CHANNEL_TILES, channel_tiles_when, set_channel_tile},
    {PS_RULE_SHORT_REGISTER_BLOCK, short_register_block_when, take_32_rows},
    {PS_RULE_WHOLE_REGISTER_WIDTH, whole_register_width_when, set_width},
};

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

/* merged-taps, loops: where the taps merge and there are several
 * output-channel blocks, every block in turn over each input row (the
 * channel loop innermost, so the rows stay in L1 across the blocks):
 * `n* oh* ow* c k`. That reuse is in L1, so it holds whatever the last
 * level's speed (the kernel part above applies to a slow one only). One
 * block keeps the default's walk. */
static int64_t merged_blocks_when(const conv_state *s)
{
    return ps_conv_merges_taps(s->c) && ceil_div(s->c->K, s->ks.m) > 1;
}

static ps_status stationary_loops(const conv_state *s, int64_t unused, ps_schedule **out)
{
    (void)unused;
    return input_stationary(&s->ks, 0, 0, out);
}

/* channel-tiles, loops: `n* k:T* oh* ow* c k`. */
static int64_t channel_tile_loops_when(const conv_state *s) { return s->k_tile; }

static ps_status channel_tile_loops(const conv_state *s, int64_t tile, ps_schedule **out)
{
    return input_stationary(&s->ks, tile, 0, out);
}

/* row-tiles: spatial convs whose bank is too big run the fixed order, each
 * output-channel block over the whole image; where the image does not fit
 * in half of L2 either, that reads it from beyond L2 once per block. In row
 * tiles with the blocks inside, `n* oh:T* k* ow* oh* c`, a tile's input rows
 * stay in L2 while every block runs over them, and the bank streams once
 * per tile instead. Where the last level is slow (that traffic counts) and
 * the tiles move fewer bytes: (OH / T) x the bank against (K / m) x the
 * image. T is the largest divisor of OH (the threads split whole tiles
 * evenly) with at least four tiles per image whose input rows and one
 * block of weights fit in half of L2. */
static int64_t row_tiles_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    const ps_kernel_shape *ks = &s->ks;
    const size_t l2 = s->f->l2_bytes;
    if (!s->too_big || !s->f->llc_slow || !l2 || one_by_one(c) || ps_conv_merges_taps(c)) return 0;
    const double half = (double)l2 / 2, row = (double)c->W * (double)c->C * sizeof(float);
    const double image = (double)c->H * row;
    const double block = (double)ks->m * (double)(c->C * c->R * c->S) * sizeof(float);
    if (image <= half) return 0;
    for (int64_t t = c->OH / 4; t >= 1; t--) {
        const double rows = (double)((t - 1) * c->sh + (c->R - 1) * c->dh + 1);
        if (c->OH % t || rows * row + block > half) continue;
        return (double)(c->OH / t) * s->weight_bytes < (double)ceil_div(c->K, ks->m) * image ? t : 0;
    }
    return 0;
}

/* The row-tile loops, `n* oh:T* k* ow* oh* c`. A tile of one row is the row
 * loop itself, `n* oh* k* ow* c`: a point loop over oh inside a tile of 1
 * would repeat the tile (a schedule's tiles per dimension strictly
 * decrease). */
static ps_status row_tile_loops(const conv_state *s, int64_t rows, ps_schedule **out)
{
    const expert_loop loops[] = {{PS_DIM_N, 1, 1},  {PS_DIM_OH, rows, 1}, {PS_DIM_K, 1, 1},
                                 {PS_DIM_OW, 1, 1}, {PS_DIM_OH, 1, 1},    {PS_DIM_C, 1, 0}};
    if (rows > 1) return loops_around(&s->ks, loops, 6, out);
    const expert_loop one_row[] = {loops[0], loops[1], loops[2], loops[3], loops[5]};
    return loops_around(&s->ks, one_row, 5, out);
}

/* images-inside: a bank too big over images of at most
 * PS_IMAGES_INSIDE_MAX_PIXELS output pixels, two images or more, where the
 * last level is slow: `k* n* oh* ow* c`, each weight block serving every
 * image while it is in cache, where the fixed order streams the whole bank
 * once per image. Such an image uses each weight float for so few flops that
 * the stream paces the kernels. */
#define PS_IMAGES_INSIDE_MAX_PIXELS 64
static int64_t images_inside_when(const conv_state *s)
{
    const ps_conv_shape *c = s->c;
    return s->f->llc_slow && s->too_big && c->N >= 2 && c->OH * c->OW <= PS_IMAGES_INSIDE_MAX_PIXELS &&
           !ps_conv_merges_taps(c);
}

static ps_status images_inside_loops(const conv_state *s, int64_t unused, ps_schedule **out)
{
    (void)unused;
    const expert_loop loops[] = {{PS_DIM_K, 1, 1}, {PS_DIM_N, 1, 1}, {PS_DIM_OH, 1, 1}, {PS_DIM_OW, 1, 1}, {PS_DIM_C, 1, 0}};
    return loops_around(&s->ks, loops, 5, out);
}

/* Whether the input-stationary tiles (image, row, column block) split over
 * the threads more than 5% less evenly than the fixed order's (tiles x
 * output-channel blocks) do. */
static int stationary_uneven(const conv_state *s)
{
    int64_t ext[PS_DIM_COUNT];
    state_extents(s, ext);
    const int64_t nt = s->nthreads < 1 ? 1 : s->nthreads, tiles = ext[PS_DIM_N] * ext[PS_DIM_OH] * ext[PS_DIM_OW];
    return 20 * ceil_div(tiles, nt) * ext[PS_DIM_K] > 21 * ceil_div(tiles * ext[PS_DIM_K], nt);
}

/* The bank fits in half of L2 (L2 known) and the taps do not merge. */
static int bank_fits(const conv_state *s) { return s->f->l2_bytes && !s->too_big && !ps_conv_merges_taps(s->c); }

/* input-stationary: a bank that fits in half of L2, whose tiles split over
 * the threads as evenly as the fixed order's: the threads share the tiles
 * and each runs every output-channel block over its tile's input while it is
 * in cache, the weights staying in L2 beside it, where the fixed order reads
 * each input tile once per block. */
static int64_t input_stationary_when(const conv_state *s) { return bank_fits(s) && !stationary_uneven(s); }

/* shared-channels: the same where the tiles split unevenly and the bank fits
 * in a quarter of L2: the output-channel loop joins the parallel band
 * outside the reduction, `n* oh* ow* k* c`, so the threads split (tile,
 * block) pairs. A bank between a quarter and a half of L2 keeps the fixed
 * order there (the fixed order's threads then hold half of it each). */
static int64_t shared_channels_when(const conv_state *s)
{
    return bank_fits(s) && stationary_uneven(s) && 4 * s->weight_bytes <= (double)s->f->l2_bytes;
}

static ps_status shared_channel_loops(const conv_state *s, int64_t unused, ps_schedule **out)
{
    (void)unused;
    return input_stationary(&s->ks, 0, 1, out);
}

/* A conv rule that chooses the loops around the kernel. */
typedef struct conv_loop_rule {
    ps_expert_rule rule;
    int64_t (*when)(const conv_state *s);
    ps_status (*then)(const conv_state *s, int64_t param, ps_schedule **out);
} conv_loop_rule;

/* The first that applies chooses; none: the default order. */
static const conv_loop_rule conv_loop_rules[] = {
    {PS_RULE_MERGED_TAPS, merged_blocks_when, stationary_loops},
    {PS_RULE_CHANNEL_TILES, channel_tile_loops_when, channel_tile_loops},
    {PS_RULE_ROW_TILES, row_tiles_when, row_tile_loops},
    {PS_RULE_IMAGES_INSIDE, images_inside_when, images_inside_loops},
    {PS_RULE_INPUT_STATIONARY, input_stationary_when, stationary_loops},
    {PS_RULE_SHARED_CHANNELS, shared_channels_when, shared_channel_loops},
};

/* The loops around s->ks: the first loop rule that applies, else the
 * default order. */
static ps_status conv_loops(const conv_state *s, ps_schedule **out, unsigned *fired)
{
    for (size_t i = 0; i < sizeof conv_loop_rules / sizeof conv_loop_rules[0]; i++) {
        const int64_t param = conv_loop_rules[i].when(s);
        if (!param) continue;
        *fired = s->fired | 1u << conv_loop_rules[i].rule;
        return conv_loop_rules[i].then(s, param, out);
    }
    *fired = s->fired;
    return default_loops(s->p, &s->ks, out);
}

/* even-split: the executor splits the parallel band into equal contiguous
 * shares, so a band of few iterations leaves threads idle for part of the
 * layer (5 output-channel blocks of a 7 x 7 image on 2 threads: 3 + 2; on
 * 16 threads 11 of them idle). Where the chosen schedule's split is below
 * PS_EXPERT_MIN_BALANCE (ps_rank_balance, the work each thread gets), the
 * kernel is made smaller until it is not: the output-channel block halved
 * (down to one vector of rows) and the pixel block cut into p equal parts,
 * the largest kernel (m x n) that splits evenly enough winning, larger m
 * first; the same rules then choose the loops around it. Where none does,
 * the most even one, if it is at least 0.05 better. Measured (Zen 4 VM, 2
 * threads, 7 x 7 960 -> 160 1x1): 32 x 49 (5 blocks) 0.079 ms, 16 x 49 0.069. */
#define PS_EXPERT_MIN_BALANCE 0.9
#define PS_EVEN_SPLIT_MAX_PARTS 8

static ps_status even_split(conv_state *s, ps_schedule **out, unsigned *fired)
{
    const double have = ps_rank_balance(s->p, *out, s->nthreads);
    if (have >= PS_EXPERT_MIN_BALANCE) return PS_SUCCESS;
    const ps_kernel_shape ks0 = s->ks;
    const int vec = 16; /* rows of one AVX-512 vector: the smallest block the kernels fill */
    ps_kernel_shape best = ks0;
    double best_bal = have;
    int best_even = 0;
    for (int m = ks0.m; m >= vec && m % vec == 0; m /= 2) {
        for (int parts = 1; parts <= PS_EVEN_SPLIT_MAX_PARTS && parts <= ks0.n; parts++) {
            if (m == ks0.m && parts == 1) continue;
            ps_kernel_shape ks = ks0;
            ks.m = m;
            ks.n = (ks0.n + parts - 1) / parts;
            s->ks = ks;
            ps_schedule *cand = NULL;
            unsigned f = 0;
            if (conv_loops(s, &cand, &f)) continue;
            const double bal = ps_rank_balance(s->p, cand, s->nthreads);
            ps_schedule_destroy(cand);
            const int even = bal >= PS_EXPERT_MIN_BALANCE;
            const long area = (long)ks.m * ks.n, best_area = (long)best.m * best.n;
            if (even ? !best_even || area > best_area || (area == best_area && ks.m > best.m)
                     : !best_even && bal > best_bal) {
                best = ks;
                best_bal = bal;
                best_even = even;
            }
        }
    }
    s->ks = ks0;
    if (!best_even && best_bal < have + 0.05) return PS_SUCCESS;
    s->ks = best;
    s->fired |= 1u << PS_RULE_EVEN_SPLIT;
    ps_schedule *cand = NULL;
    ps_status st = conv_loops(s, &cand, fired);
    if (st) return st;
    ps_schedule_destroy(*out);
    *out = cand;
    return PS_SUCCESS;
}

static ps_status conv_expert(const ps_problem *p, int nthreads, const ps_expert_facts *facts, ps_schedule **out,
                             unsigned *fired)
{
    conv_state s = {.p = p, .c = &p->conv, .f = facts, .nthreads = nthreads, .ks = ps_expert_kernel(p)};
    s.weight_bytes = (double)ps_conv_weight_elems(s.c) * sizeof(float);
    const double l2 = (double)facts->l2_bytes;
    s.too_big = s.c->N >= 2 ? 2 * s.weight_bytes >= l2 : 2 * s.weight_bytes > l2;
    for (size_t i = 0; i < sizeof conv_kernel_rules / sizeof conv_kernel_rules[0]; i++) {
        const int64_t param = conv_kernel_rules[i].when(&s);
        if (!param) continue;
        s.fired |= 1u << conv_kernel_rules[i].rule;
        conv_kernel_rules[i].then(&s, param);
    }
    ps_status st = conv_loops(&s, out, fired);
    /* merged-taps shapes its rows to L1 (its own kernel). */
    if (st || nthreads < 2 || s.merged) return st;
    return even_split(&s, out, fired);
}

/* ------------------------------------------------------------ GEMM rules */

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

/* What the GEMM rules read and write. */
typedef struct gemm_state {
    const ps_problem *p;
    const ps_gemm_desc *g; /* the user's rows and columns of C: the schedule's terms */
    const ps_expert_facts *f;
    int nt;                /* threads, >= 1 */
    ps_kernel_shape ks;    /* the expert kernel (gemm-panel-tiles may halve its batch) */
    int64_t even;          /* gemm_makespan of single blocks: what tiles must match within 5% */
    int64_t tm, tn;        /* the chosen tiles, in kernel blocks */
} gemm_state;

/* Whether tiles of tm x tn kernel blocks of ks split over the threads within
 * 5% as evenly as single blocks do. */
static int tiles_even(const gemm_state *s, const ps_kernel_shape *ks, int64_t tm, int64_t tn)
{
    return 20 * gemm_makespan(s->g, ks, tm, tn, s->nt) <= 21 * s->even;
}

/* gemm-b-in-l2: where all of B fits in half of L2 the fixed order keeps it
 * there across every row block by itself, and band tiles would only scatter
 * C's writes. */
static int gemm_b_in_l2_when(gemm_state *s)
{
    const size_t l2 = s->f->l2_bytes;
    return l2 && 2.0 * (double)s->g->K * (double)s->g->N * sizeof(float) < (double)l2;
}

/* gemm-panel-tiles: where the executor packs per-thread panels
 * (ps_gemm_panels_pay: both operands beyond the last level, or the larger
 * at least panel_bytes), band tiles whose panels each thread packs itself:
 * the smaller of the user's row and column extents whole where it has at
 * most ~1024 elements, else in equal tiles of at most that, the other cut
 * into one tile per thread or a multiple (at most ~768 elements), so each
 * chunk's panels serve every block of the tile while they are in cache. A
 * side cut needs PS_GEMM_PANEL_MIN_BLOCKS blocks for the executor to use
 * panels. A smaller side of 1025-3072 elements stays whole instead, at half
 * the chunk depth (batch 4 for 8: a panel holds as many floats as one of
 * twice the elements at full depth) and with the cut side's cap doubled:
 * each thread then has one tile and packs its share of each operand once per
 * chunk. Larger sides keep their tiles. */
static int gemm_panel_tiles_when(gemm_state *s)
{
    if (!ps_gemm_panels_pay(&s->p->gemm, s->f->llc_bytes, s->f->panel_bytes)) return 0;
    const ps_gemm_desc *g = s->g;
    ps_kernel_shape ks = s->ks;
    const int64_t mb = ceil_div(g->M, ks.m), nb = ceil_div(g->N, ks.n);
    const int rows_whole = g->M <= g->N;
    const int64_t whole = rows_whole ? mb : nb, cut = rows_whole ? nb : mb;
    const int64_t whole_elems = rows_whole ? g->M : g->N;
    const int shallow = whole_elems > 1024 && whole_elems <= 3072 && ks.batch >= 8;
    const int64_t whole_cap = (shallow ? 3072 : 1024) / (rows_whole ? ks.m : ks.n),
                  cut_cap = (shallow ? 1536 : 768) / (rows_whole ? ks.n : ks.m);
    /* At least half the cap (>= 8 blocks for kernels of <= 64): panels stay on. */
    const int64_t whole_tile = ceil_div(whole, ceil_div(whole, whole_cap));
    for (int64_t j = 1; j <= cut; j++) {
        const int64_t t = ceil_div(cut, s->nt * j);
        if (t > cut_cap) continue;
        if (t < PS_GEMM_PANEL_MIN_BLOCKS) return 0;
        const int64_t tm = rows_whole ? whole_tile : t, tn = rows_whole ? t : whole_tile;
        if (shallow) ks.batch /= 2;
        if (!tiles_even(s, &ks, tm, tn)) return 0;
        s->ks = ks;
        s->tm = tm;
        s->tn = tn;
        return 1;
    }
    return 0;
}

/* gemm-in-place-tiles: where the executor reads A in place
 * (ps_gemm_a_in_place), the normalized problem's rows (A's columns) whole,
 * its few columns cut into one tile per thread, the reduction-chunk loop
 * outside the tile's block loops: a column of A is read one kernel block per
 * call, lda floats from the next, and with the chunk loop outside the calls
 * that follow read the rest of the same columns, one run the prefetchers
 * follow. In the user's terms a row-major GEMM keeps its columns whole and
 * cuts its rows (the normalized problem is its transpose). */
static int gemm_in_place_tiles_when(gemm_state *s)
{
    const ps_gemm_desc *g = s->g;
    const ps_gemm_shape *shape = &s->p->gemm;
    const int64_t mb = ceil_div(g->M, s->ks.m), nb = ceil_div(g->N, s->ks.n);
    const int64_t col_blocks = shape->swap ? mb : nb; /* the normalized problem's */
    if (!ps_gemm_a_in_place(shape, col_blocks)) return 0;
    const int64_t cut = ceil_div(col_blocks, s->nt);
    const int64_t tm = shape->swap ? cut : mb, tn = shape->swap ? nb : cut;
    if (!tiles_even(s, &s->ks, tm, tn)) return 0;
    s->tm = tm;
    s->tn = tn;
    return 1;
}

/* gemm-l2-tiles: band tiles of 8 row blocks x 2 column blocks with the
 * reduction-chunk loop inside them, so a chunk's B panel of the tile (two
 * blocks) stays in L2 while the tile's 8 A blocks stream past, each used
 * twice in a row; the fixed order reduces one output block over all of K
 * before the next, streaming both operands from beyond L2. */
static int gemm_l2_tiles_when(gemm_state *s)
{
    if (!tiles_even(s, &s->ks, 8, 2)) return 0;
    s->tm = 8;
    s->tn = 2;
    return 1;
}

/* A GEMM rule: `when` decides and, where it applies, sets the tiles (the
 * B-in-L2 rule sets none: the fixed order). The first that applies chooses;
 * every tiling must split over the threads within 5% as evenly as single
 * blocks do. None: the fixed order. */
typedef struct gemm_rule {
    ps_expert_rule rule;
    int (*when)(gemm_state *s);
} gemm_rule;

static const gemm_rule gemm_rules[] = {
    {PS_RULE_GEMM_B_IN_L2, gemm_b_in_l2_when},
    {PS_RULE_GEMM_PANEL_TILES, gemm_panel_tiles_when},
    {PS_RULE_GEMM_IN_PLACE_TILES, gemm_in_place_tiles_when},
    {PS_RULE_GEMM_L2_TILES, gemm_l2_tiles_when},
};

static ps_status gemm_expert(const ps_problem *p, int nthreads, const ps_expert_facts *facts, ps_schedule **out,
                             unsigned *fired)
{
    gemm_state s = {.p = p, .g = &p->desc.u.gemm, .f = facts, .nt = nthreads < 1 ? 1 : nthreads,
                    .ks = ps_expert_kernel(p)};
    s.even = gemm_makespan(s.g, &s.ks, 1, 1, s.nt);
    size_t i = 0;
    while (i < sizeof gemm_rules / sizeof gemm_rules[0] && !gemm_rules[i].when(&s)) i++;
    if (i == sizeof gemm_rules / sizeof gemm_rules[0]) return ps_expert_default(p, out);
    *fired |= 1u << gemm_rules[i].rule;
    if (gemm_rules[i].rule == PS_RULE_GEMM_B_IN_L2) return ps_expert_default(p, out);
    /* A side of one block (panel tiles spanning it whole) has no block loop
     * inside the tile. */
    ps_schedule *sch;
    ps_status st = ps_schedule_create(s.ks.m, s.ks.n, s.ks.k, s.ks.batch, &sch);
    if (st) return st;
    ps_schedule_add_loop(sch, PS_DIM_K, s.tm, 1);
    ps_schedule_add_loop(sch, PS_DIM_OW, s.tn, 1);
    ps_schedule_add_loop(sch, PS_DIM_C, 1, 0);
    if (s.tm > 1) ps_schedule_add_loop(sch, PS_DIM_K, 1, 0);
    if (s.tn > 1) ps_schedule_add_loop(sch, PS_DIM_OW, 1, 0);
    *out = sch;
    return PS_SUCCESS;
}

ps_status ps_expert_schedule(const ps_problem *p, int nthreads, const ps_expert_facts *facts, ps_schedule **out,
                             unsigned *fired)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_expert_schedule: out is NULL");
    *out = NULL;
    if (!facts) return ps_error(PS_ERR_NULL_POINTER, "ps_expert_schedule: facts is NULL");
    unsigned rules = 0;
    const ps_status st = p->desc.kind == PS_OP_GEMM ? gemm_expert(p, nthreads, facts, out, &rules)
                                                    : conv_expert(p, nthreads, facts, out, &rules);
    if (fired) *fired = st ? 0 : rules;
    return st;
}
