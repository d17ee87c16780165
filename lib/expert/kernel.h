/* Internal to lib/expert: LIBXSMM 1.17's register blocking as the expert's
 * kernel choice (kernel.c) and its width rules (rules.c) model it. */
#ifndef PS_EXPERT_KERNEL_H
#define PS_EXPERT_KERNEL_H

#include <stdint.h>

/* Columns per register block of LIBXSMM 1.17's AVX-512 kernels by rows
 * (ceil(m / 16) vectors per column): 6 for 49-64, 9 for 33-48, 14 for 17-32.
 * Each block reloads the call's weight vectors once per reduction step,
 * whatever its width, so a width that leaves a short last block runs below
 * one in whole blocks. Measured with polysci-brgemm-ceiling (cached operands,
 * 2 threads; docs/expert-rules.md, "call-cost model"). */
/* Columns per call of a one-vector-per-column kernel whose columns alias
 * in L1 (ps_expert_kernel). */
#define PS_ALIASED_MAX_N 10
#define PS_REG_BLOCK 6
#define PS_REG_BLOCK48 9
#define PS_REG_BLOCK32 14

/* The expert's usual cap on a conv kernel's columns: the widest divisor of
 * the row up to 30 (five whole 6-column register blocks). */
#define PS_CONV_MAX_WIDTH 30

/* Register block, in columns, of a kernel of m rows; 0 where not measured
 * (16 rows and fewer). */
int ps_expert_reg_block(int m);

/* Output-column block: the whole row when it is at most max; else the widest
 * divisor of the row in [8, max] (no remainder kernel); else the whole row if
 * it is under 2*max (one call beats a block plus a remainder) and a kernel
 * that wide exists (PS_KERNEL_DIM_MAX); else max (at most PS_KERNEL_DIM_MAX). */
int ps_expert_pick_width(int64_t ow, int max);

/* Width n of a row of ow columns, or a cheaper one for register blocks of
 * reg columns: ps_expert_pick_width's choice (the widest divisor) or a
 * multiple of the block up to max, where it is 3% cheaper than n. */
int ps_expert_cheaper_width(int64_t ow, int n, int max, int reg);

#endif
