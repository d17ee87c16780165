/* Lowering a pointwise expression tree to a register program (ps_vprog),
 * once at plan time: equal subtrees become one operation (common
 * subexpressions appear whenever a stage was inlined into two places of its
 * consumer), leaves become operands, and registers are reused after their
 * last read, so a program keeps few PS_VCHUNK-float buffers in L1. */
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "graph/graph_impl.h"
#include "core/error.h"

typedef struct lnode {
    const ps_expr *e;
    int arg[3];      /* value ids of the operands, -1 for none */
    int leaf;        /* operand code (PS_VOP_CONST / PS_VOP_INPUT(i)) for leaves */
    float k;
    int last_use;    /* last op (value id) reading it */
} lnode;

typedef struct lowering {
    lnode *v;
    int n, cap;
} lowering;

static int same(const lowering *L, const ps_expr *e, const int *args, const lnode *c)
{
    if (c->e->op != e->op) return 0;
    if (e->op == PS_EXPR_CONST) return memcmp(&c->e->value, &e->value, sizeof e->value) == 0;
    if (e->op == PS_EXPR_INPUT) return c->e->index == e->index;
    (void)L;
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
        if (same(L, e, args, &L->v[i])) return i;
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
    d->leaf = 0;
    if (e->op == PS_EXPR_CONST) {
        d->leaf = PS_VOP_CONST;
        d->k = e->value;
    } else if (e->op == PS_EXPR_INPUT) {
        d->leaf = PS_VOP_INPUT(e->index);
    }
    d->last_use = -1;
    return L->n++;
}

ps_status ps_vprog_lower(const ps_expr *e, ps_vprog *prog)
{
    memset(prog, 0, sizeof *prog);
    lowering L = {0};
    int root = visit(&L, e);
    if (root < 0) {
        free(L.v);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory lowering an expression");
    }
    for (int i = 0; i < L.n; i++)
        for (int j = 0; j < 3; j++)
            if (L.v[i].arg[j] >= 0) L.v[L.v[i].arg[j]].last_use = i;
    int n_ops = 0;
    for (int i = 0; i < L.n; i++) n_ops += !L.v[i].leaf;
    if (n_ops == 0) n_ops = 1; /* a leaf as the whole expression: one copy */
    prog->ops = calloc((size_t)n_ops, sizeof *prog->ops);
    int *reg = malloc((size_t)L.n * sizeof *reg);
    int *free_regs = malloc((size_t)(L.n + 1) * sizeof *free_regs);
    if (!prog->ops || !reg || !free_regs) {
        free(L.v);
        free(reg);
        free(free_regs);
        free(prog->ops);
        prog->ops = NULL;
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory lowering an expression");
    }
    int n_free = 0, n_regs = 0, k = 0;
    if (L.v[root].leaf) {
        ps_vop *op = &prog->ops[k++];
        op->op = L.v[root].e->op;
        op->dst = PS_VOP_OUT;
        op->a[0] = L.v[root].leaf;
        op->a[1] = op->a[2] = PS_VOP_CONST;
        op->k[0] = L.v[root].k;
    }
    for (int i = 0; i < L.n && !L.v[root].leaf; i++) {
        lnode *d = &L.v[i];
        if (d->leaf) continue;
        ps_vop *op = &prog->ops[k++];
        op->op = d->e->op;
        for (int j = 0; j < 3; j++) {
            op->a[j] = PS_VOP_CONST;
            if (d->arg[j] < 0) continue;
            const lnode *a = &L.v[d->arg[j]];
            if (a->leaf) {
                op->a[j] = a->leaf;
                op->k[j] = a->k;
            } else {
                op->a[j] = reg[d->arg[j]];
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
        for (int j = 0; j < 3; j++) {
            int a = d->arg[j];
            if (a < 0 || L.v[a].leaf || L.v[a].last_use != i) continue;
            int dup = 0;
            for (int jj = 0; jj < j; jj++) dup |= d->arg[jj] == a;
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
