/* Internal: the expert schedule, PolyScientist's hand-written strategy.
 *
 * What the default options run wherever they do not search (one image,
 * GEMMs, machines whose last level is slow), what the timed search keeps as
 * a candidate, and what the planner falls back to when a ranker's proposal
 * is refused. The expert's microkernel (ps_expert_kernel) is also the one
 * the variant space builds its loops around.
 *
 * ps_expert_schedule walks a list of rules, each a named condition on the
 * problem and the machine facts below and an effect on the kernel shape or
 * the loop order (rules.c). docs/expert-rules.md has one row per rule: its
 * condition, its effect and the measurement behind it. */
#ifndef PS_EXPERT_H
#define PS_EXPERT_H

#include <stddef.h>

#include "descriptors/shape.h"
#include "schedule/schedule_impl.h"

/* The machine facts the rules read. Plain numbers rather than a ps_machine,
 * so that this component does not depend on the machine model and tests can
 * state a machine in one initializer; the planner fills them with
 * ps_planner_expert_facts. */
typedef struct ps_expert_facts {
    size_t l1_bytes;    /* L1 data per core; 0 (unknown): no merged-taps rule */
    size_t l2_bytes;    /* L2 per core; 0 (unknown): every filter bank counts as too big for it,
                           and no rule that sizes blocks or tiles by L2 applies */
    size_t llc_bytes;   /* last-level cache (ps_machine_cache_bytes) */
    size_t panel_bytes; /* ps_machine_panel_bytes */
    int llc_slow;       /* ps_machine_llc_slow: the last level's bandwidth is under twice memory's */
} ps_expert_facts;

/* The rules, as ps_expert_schedule tries them: first the conv kernel rules
 * (each that applies reshapes the kernel), then the loop rules (the first
 * that applies chooses the loops; none: the default order). Names and rows
 * in docs/expert-rules.md. */
typedef enum ps_expert_rule {
    PS_RULE_MERGED_TAPS,          /* merged-tap first layers: rows that fit L1, channel loop innermost */
    PS_RULE_REGISTER_WIDTH,       /* kernels of < 64 rows: width fitted to their register blocks */
    PS_RULE_NARROW_CALLS,         /* spatial calls of >= 256 KiB of weights: 32-row blocks */
    PS_RULE_STREAMED_WEIGHTS,     /* 1x1, one column block per image, bank > L2/2: 32-row blocks */
    PS_RULE_CHANNEL_TILES,        /* 1x1, bank > L2/2, several column blocks: output-channel tiles */
    PS_RULE_SHORT_REGISTER_BLOCK, /* 64-row width leaves a short register block: 32-row blocks */
    PS_RULE_WHOLE_REGISTER_WIDTH, /* 1x1 where 32 rows do not pay: 30-column calls */
    PS_RULE_ROW_TILES,            /* spatial bank and image > L2/2: row tiles, channel blocks inside */
    PS_RULE_IMAGES_INSIDE,        /* bank > L2/2 over images of <= 64 pixels: images inside the blocks */
    PS_RULE_INPUT_STATIONARY,     /* bank <= L2/2: every channel block over a tile of input */
    PS_RULE_SHARED_CHANNELS,      /* ... tiles uneven over the threads, bank <= L2/4: blocks shared too */
    PS_RULE_EVEN_SPLIT,           /* parallel band split < 0.9 even: smaller output-channel / pixel blocks */
    PS_RULE_GEMM_B_IN_L2,         /* B fits in half of L2: the fixed order */
    PS_RULE_GEMM_PANEL_TILES,     /* operands beyond the last level: per-thread panel tiles */
    PS_RULE_GEMM_IN_PLACE_TILES,  /* A read in place: whole rows, columns cut per thread */
    PS_RULE_GEMM_L2_TILES,        /* 8 x 2 kernel blocks around the reduction loop (L2 blocking) */
    PS_RULE_COUNT
} ps_expert_rule;

/* The rule's name as docs/expert-rules.md writes it ("row-tiles", ...). */
const char *ps_expert_rule_name(ps_expert_rule rule);

/* The expert microkernel (PolyScientist's hand-chosen BRGEMM shape): the
 * widest register-friendly output-channel block (<= 64, a multiple of 16
 * dividing the extent when one exists), a column block (conv: the widest
 * dividing the row, <= 30, up to 112 for 1x1 convs with C <= 128 and for
 * few-channel convs, ~75 per phase call when their taps merge; gemm: 48)
 * and a 64-wide reduction block; batch = every reduction block (capped).
 * The default schedule and the variant space share it, so the planner
 * ranks outer loops only. */
ps_kernel_shape ps_expert_kernel(const ps_problem *p);

/* ps_schedule_default for a problem: the expert kernel in the fixed loop
 * order (conv `n* k* oh* ow* c`, column strips `n* k* ow* oh* c` where the
 * executor merges the taps of N >= 2 images; gemm `m* n* k`). Valid for
 * every problem by construction: the planner's last fallback. */
ps_status ps_expert_default(const ps_problem *p, ps_schedule **out);

/* The expert's schedule for problem p on nthreads threads of the machine
 * *facts. *fired (optional) gets a bit (1u << rule) for every rule that
 * shaped it. On success *out is the caller's; the planner checks it like any
 * other proposal (ps_planner_choose). */
ps_status ps_expert_schedule(const ps_problem *p, int nthreads, const ps_expert_facts *facts, ps_schedule **out,
                             unsigned *fired);

#endif
