/* Lowering a pointwise expression tree to a register program (ps_vprog),
 * once at plan time: equal subtrees become one operation (common
 * subexpressions appear whenever a stage was inlined into two places of its
 * consumer), products read only by a sum, comparisons read only by a select
 * and differences read only by abs are fused with their reader (one pass
 * over the chunk instead of two or three), leaves become operands, and
 * registers are reused after their last read, so a program keeps few
 * PS_VCHUNK-float buffers in L1. */
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "graph/graph_impl.h"
#include "core/error.h"

typedef struct lnode {
    const ps_expr *e;
    int arg[3];      /* value ids of the tree operands, -1 for none */
    int leaf;        /* operand code (PS_VOP_CONST / PS_VOP_INPUT(i)) for leaves */
    float k;
    int uses;        /* readers among the other values */
    int absorbed;    /* fused into its only reader: no operation of its own */
    int op;          /* operation emitted (ps_expr_op or PS_VOP_*) */
    int cmp;
    int n_ops;       /* operands of the emitted operation */
    int opnd[4];     /* their value ids */
    int last_use;    /* last operation (value id) reading it */
} lnode;

typedef struct lowering {
    lnode *v;
    int n, cap;
} lowering;

static int same(const ps_expr *e, const int *args, const lnode *c)
{
    if (c->e->op != e->op) return 0;
    if (e->op == PS_EXPR_CONST) return memcmp(&c->e->value, &e->value, sizeof e->value) == 0;
    if (e->op == PS_EXPR_INPUT) return c->e->index == e->index;
    for (int i = 0; i < 3; i++)
        if (c->arg[i] != args[i]) return 0;
    return 1;
}

/* Value id of e (post-order), -2 on out of memory. */
static int visit(lowering *L, const ps_expr *e)
{
    int args[3] = {-1, -1, -1};
    int ar = ps_expr_arity(e->op);
    for (int i = 0; i < ar; i++) {
        args[i] = visit(L, e->arg[i]);
        if (args[i] < 0) return -2;
    }
    for (int i = 0; i < L->n; i++)
        if (same(e, args, &L->v[i])) return i;
    if (L->n == L->cap) {
        int cap = L->cap ? 2 * L->cap : 32;
        lnode *v = realloc(L->v, (size_t)cap * sizeof *v);
        if (!v) return -2;
        L->v = v;
        L->cap = cap;
    }
    lnode *d = &L->v[L->n];
    memset(d, 0, sizeof *d);
    d->e = e;
    memcpy(d->arg, args, sizeof args);
    if (e->op == PS_EXPR_CONST) {
        d->leaf = PS_VOP_CONST;
        d->k = e->value;
    } else if (e->op == PS_EXPR_INPUT) {
        d->leaf = PS_VOP_INPUT(e->index);
    }
    d->last_use = -1;
    return L->n++;
}

static int is_cmp(ps_expr_op op) { return op >= PS_EXPR_LT && op <= PS_EXPR_NE; }

/* A value the reader may absorb: an operation (not a leaf) read only once. */
static int absorbable(const lowering *L, int v, ps_expr_op op)
{
    return v >= 0 && !L->v[v].leaf && L->v[v].uses == 1 && L->v[v].e->op == op;
}

/* Decides what operation node i emits and with which operands. */
static void fuse(lowering *L, int i)
{
    lnode *d = &L->v[i];
    const int *a = d->arg;
    ps_expr_op op = d->e->op;
    d->op = op;
    d->n_ops = ps_expr_arity(op);
    memcpy(d->opnd, a, sizeof d->arg);
    if (op == PS_EXPR_ADD || op == PS_EXPR_SUB) {
        int m0 = absorbable(L, a[0], PS_EXPR_MUL), m1 = absorbable(L, a[1], PS_EXPR_MUL);
        const lnode *x = &L->v[a[0]], *y = &L->v[a[1]];
        if (m0 && m1) {
            d->op = op == PS_EXPR_ADD ? PS_VOP_MAM : PS_VOP_MSM;
            d->n_ops = 4;
            int o[4] = {x->arg[0], x->arg[1], y->arg[0], y->arg[1]};
            memcpy(d->opnd, o, sizeof o);
        } else if (m0) {
            d->op = op == PS_EXPR_ADD ? PS_VOP_FMA : PS_VOP_FMS;
            d->n_ops = 3;
            int o[4] = {x->arg[0], x->arg[1], a[1], -1};
            memcpy(d->opnd, o, sizeof o);
        } else if (m1) {
            d->op = op == PS_EXPR_ADD ? PS_VOP_FMA : PS_VOP_FNMA;
            d->n_ops = 3;
            int o[4] = {y->arg[0], y->arg[1], a[0], -1};
            memcpy(d->opnd, o, sizeof o);
        } else {
            return;
        }
        if (m0) L->v[a[0]].absorbed = 1;
        if (m1) L->v[a[1]].absorbed = 1;
    } else if (op == PS_EXPR_SELECT && a[0] >= 0 && !L->v[a[0]].leaf && L->v[a[0]].uses == 1 &&
               is_cmp(L->v[a[0]].e->op)) {
        const lnode *c = &L->v[a[0]];
        d->op = PS_VOP_SELCMP;
        d->cmp = c->e->op;
        d->n_ops = 4;
        int o[4] = {c->arg[0], c->arg[1], a[1], a[2]};
        memcpy(d->opnd, o, sizeof o);
        L->v[a[0]].absorbed = 1;
    } else if (op == PS_EXPR_ABS && absorbable(L, a[0], PS_EXPR_SUB)) {
        const lnode *s = &L->v[a[0]];
        d->op = PS_VOP_ABSDIFF;
        d->n_ops = 2;
        int o[4] = {s->arg[0], s->arg[1], -1, -1};
        memcpy(d->opnd, o, sizeof o);
        L->v[a[0]].absorbed = 1;
    }
}

static ps_status oom(void)
{
    return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory lowering an expression");
}

ps_status ps_vprog_lower(const ps_expr *e, ps_vprog *prog)
{
    memset(prog, 0, sizeof *prog);
    lowering L = {0};
    int root = visit(&L, e);
    if (root < 0) {
        free(L.v);
        return oom();
    }
    for (int i = 0; i < L.n; i++)
        for (int j = 0; j < 3; j++)
            if (L.v[i].arg[j] >= 0) L.v[L.v[i].arg[j]].uses++;
    /* Readers decide first (post-order: a reader comes after its operands),
     * so fusion walks from the root down. */
    for (int i = L.n - 1; i >= 0; i--)
        if (!L.v[i].leaf && !L.v[i].absorbed) fuse(&L, i);
    for (int i = 0; i < L.n; i++) {
        const lnode *d = &L.v[i];
        if (d->leaf || d->absorbed) continue;
        for (int j = 0; j < d->n_ops; j++)
            if (d->opnd[j] >= 0) L.v[d->opnd[j]].last_use = i;
    }
    int n_ops = 0, n_consts = 0;
    for (int i = 0; i < L.n; i++) {
        const lnode *d = &L.v[i];
        if (d->leaf || d->absorbed) continue;
        n_ops++;
        if (d->op >= PS_VOP_FMA)
            for (int j = 0; j < d->n_ops; j++) n_consts += L.v[d->opnd[j]].leaf == PS_VOP_CONST;
    }
    if (n_ops == 0) n_ops = 1; /* a leaf as the whole expression: one copy */
    prog->ops = calloc((size_t)n_ops, sizeof *prog->ops);
    prog->const_reg = malloc(((size_t)n_consts + 1) * sizeof *prog->const_reg);
    prog->const_val = malloc(((size_t)n_consts + 1) * sizeof *prog->const_val);
    int *reg = malloc((size_t)L.n * sizeof *reg);
    int *free_regs = malloc((size_t)(L.n + n_consts + 1) * sizeof *free_regs);
    if (!prog->ops || !prog->const_reg || !prog->const_val || !reg || !free_regs) {
        free(L.v);
        free(reg);
        free(free_regs);
        ps_vprog_release(prog);
        return oom();
    }
    int n_free = 0, n_regs = 0, k = 0;
    const lnode *r = &L.v[root];
    if (r->leaf) {
        ps_vop *op = &prog->ops[k++];
        op->op = r->e->op;
        op->dst = PS_VOP_OUT;
        op->a[0] = r->leaf;
        op->a[1] = op->a[2] = op->a[3] = PS_VOP_CONST;
        op->k[0] = r->k;
    }
    for (int i = 0; i < L.n && !r->leaf; i++) {
        lnode *d = &L.v[i];
        if (d->leaf || d->absorbed) continue;
        ps_vop *op = &prog->ops[k++];
        op->op = d->op;
        op->cmp = d->cmp;
        for (int j = 0; j < 4; j++) {
            op->a[j] = PS_VOP_CONST;
            if (j >= d->n_ops || d->opnd[j] < 0) continue;
            const lnode *a = &L.v[d->opnd[j]];
            if (a->leaf == PS_VOP_CONST && d->op >= PS_VOP_FMA) {
                /* fused operations take constants from registers filled once */
                int cr = n_regs++;
                prog->const_reg[prog->n_consts] = cr;
                prog->const_val[prog->n_consts++] = a->k;
                op->a[j] = cr;
            } else if (a->leaf) {
                op->a[j] = a->leaf;
                op->k[j] = a->k;
            } else {
                op->a[j] = reg[d->opnd[j]];
            }
        }
        if (i == root) {
            op->dst = PS_VOP_OUT;
        } else {
            reg[i] = n_free ? free_regs[--n_free] : n_regs++;
            op->dst = reg[i];
        }
        /* Operands read for the last time free their registers after the
         * destination is chosen, so no operation writes a register it reads. */
        for (int j = 0; j < d->n_ops; j++) {
            int a = d->opnd[j];
            if (a < 0 || L.v[a].leaf || L.v[a].last_use != i) continue;
            int dup = 0;
            for (int jj = 0; jj < j; jj++) dup |= d->opnd[jj] == a;
            if (!dup) free_regs[n_free++] = reg[a];
        }
    }
    prog->n_ops = k;
    prog->n_regs = n_regs;
    free(L.v);
    free(reg);
    free(free_regs);
    return PS_SUCCESS;
}

void ps_vprog_release(ps_vprog *prog)
{
    if (!prog) return;
    free(prog->ops);
    free(prog->const_reg);
    free(prog->const_val);
    memset(prog, 0, sizeof *prog);
}
