/* Pointwise expressions: the tree users build (include/polysci/expr.h). */
#include "graph/graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ps_expr_arity(ps_expr_op op)
{
    switch (op) {
    case PS_EXPR_CONST:
    case PS_EXPR_INPUT: return 0;
    case PS_EXPR_NEG:
    case PS_EXPR_ABS:
    case PS_EXPR_SQRT:
    case PS_EXPR_EXP:
    case PS_EXPR_LOG:
    case PS_EXPR_FLOOR: return 1;
    case PS_EXPR_ADD:
    case PS_EXPR_SUB:
    case PS_EXPR_MUL:
    case PS_EXPR_DIV:
    case PS_EXPR_MIN:
    case PS_EXPR_MAX:
    case PS_EXPR_LT:
    case PS_EXPR_LE:
    case PS_EXPR_GT:
    case PS_EXPR_GE:
    case PS_EXPR_EQ:
    case PS_EXPR_NE: return 2;
    case PS_EXPR_SELECT:
    case PS_EXPR_CLAMP: return 3;
    }
    return -1;
}

static ps_expr *node(ps_expr_op op)
{
    ps_expr *e = calloc(1, sizeof *e);
    if (e) e->op = op;
    return e;
}

ps_expr *ps_expr_const(float value)
{
    ps_expr *e = node(PS_EXPR_CONST);
    if (e) e->value = value;
    return e;
}

ps_expr *ps_expr_input(int index)
{
    if (index < 0) return NULL;
    ps_expr *e = node(PS_EXPR_INPUT);
    if (e) e->index = index;
    return e;
}

static ps_expr *with_args(ps_expr_op op, int arity, ps_expr *a, ps_expr *b, ps_expr *c)
{
    ps_expr *args[3] = {a, b, c};
    int ok = ps_expr_arity(op) == arity;
    for (int i = 0; i < arity; i++) ok = ok && args[i];
    ps_expr *e = ok ? node(op) : NULL;
    if (!e) {
        for (int i = 0; i < 3; i++) ps_expr_free(args[i]);
        return NULL;
    }
    for (int i = 0; i < arity; i++) e->arg[i] = args[i];
    return e;
}

ps_expr *ps_expr_unary(ps_expr_op op, ps_expr *a) { return with_args(op, 1, a, NULL, NULL); }
ps_expr *ps_expr_binary(ps_expr_op op, ps_expr *a, ps_expr *b) { return with_args(op, 2, a, b, NULL); }
ps_expr *ps_expr_select(ps_expr *c, ps_expr *a, ps_expr *b) { return with_args(PS_EXPR_SELECT, 3, c, a, b); }
ps_expr *ps_expr_clamp(ps_expr *x, ps_expr *lo, ps_expr *hi) { return with_args(PS_EXPR_CLAMP, 3, x, lo, hi); }

ps_expr *ps_expr_copy(const ps_expr *e)
{
    if (!e) return NULL;
    ps_expr *r = node(e->op);
    if (!r) return NULL;
    r->value = e->value;
    r->index = e->index;
    for (int i = 0; i < 3; i++) {
        if (!e->arg[i]) continue;
        r->arg[i] = ps_expr_copy(e->arg[i]);
        if (!r->arg[i]) {
            ps_expr_free(r);
            return NULL;
        }
    }
    return r;
}

void ps_expr_free(ps_expr *e)
{
    if (!e) return;
    for (int i = 0; i < 3; i++) ps_expr_free(e->arg[i]);
    free(e);
}

int ps_expr_max_input(const ps_expr *e)
{
    if (!e) return -1;
    int m = e->op == PS_EXPR_INPUT ? e->index : -1;
    for (int i = 0; i < 3; i++) {
        int a = ps_expr_max_input(e->arg[i]);
        if (a > m) m = a;
    }
    return m;
}

int ps_expr_size(const ps_expr *e)
{
    if (!e) return 0;
    return 1 + ps_expr_size(e->arg[0]) + ps_expr_size(e->arg[1]) + ps_expr_size(e->arg[2]);
}

ps_expr *ps_expr_substitute(const ps_expr *e, const int *input_map, ps_expr *const *replace)
{
    if (!e) return NULL;
    if (e->op == PS_EXPR_INPUT) {
        if (replace && replace[e->index]) return ps_expr_copy(replace[e->index]);
        ps_expr *r = ps_expr_input(input_map ? input_map[e->index] : e->index);
        return r;
    }
    ps_expr *r = node(e->op);
    if (!r) return NULL;
    r->value = e->value;
    r->index = e->index;
    for (int i = 0; i < 3; i++) {
        if (!e->arg[i]) continue;
        r->arg[i] = ps_expr_substitute(e->arg[i], input_map, replace);
        if (!r->arg[i]) {
            ps_expr_free(r);
            return NULL;
        }
    }
    return r;
}

const char *ps_expr_op_text(ps_expr_op op)
{
    switch (op) {
    case PS_EXPR_NEG: return "-";
    case PS_EXPR_ABS: return "abs";
    case PS_EXPR_SQRT: return "sqrt";
    case PS_EXPR_EXP: return "exp";
    case PS_EXPR_LOG: return "log";
    case PS_EXPR_FLOOR: return "floor";
    case PS_EXPR_ADD: return "+";
    case PS_EXPR_SUB: return "-";
    case PS_EXPR_MUL: return "*";
    case PS_EXPR_DIV: return "/";
    case PS_EXPR_MIN: return "min";
    case PS_EXPR_MAX: return "max";
    case PS_EXPR_LT: return "<";
    case PS_EXPR_LE: return "<=";
    case PS_EXPR_GT: return ">";
    case PS_EXPR_GE: return ">=";
    case PS_EXPR_EQ: return "==";
    case PS_EXPR_NE: return "!=";
    case PS_EXPR_SELECT: return "select";
    case PS_EXPR_CLAMP: return "clamp";
    default: return "?";
    }
}

/* Appends to buf at *off, snprintf-style (counts what would be written). */
static void put(char *buf, int len, int *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static void put(char *buf, int len, int *off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int room = *off < len ? len - *off : 0;
    int n = vsnprintf(room ? buf + *off : NULL, (size_t)room, fmt, ap);
    va_end(ap);
    if (n > 0) *off += n;
}

static void to_str(const ps_expr *e, char *buf, int len, int *off)
{
    switch (ps_expr_arity(e->op)) {
    case 0:
        if (e->op == PS_EXPR_CONST) put(buf, len, off, "%.9g", (double)e->value);
        else put(buf, len, off, "in%d", e->index);
        return;
    case 1:
        put(buf, len, off, e->op == PS_EXPR_NEG ? "(-" : "%s(", ps_expr_op_text(e->op));
        to_str(e->arg[0], buf, len, off);
        put(buf, len, off, ")");
        return;
    case 2:
        if (e->op == PS_EXPR_MIN || e->op == PS_EXPR_MAX) {
            put(buf, len, off, "%s(", ps_expr_op_text(e->op));
            to_str(e->arg[0], buf, len, off);
            put(buf, len, off, ", ");
            to_str(e->arg[1], buf, len, off);
            put(buf, len, off, ")");
        } else {
            put(buf, len, off, "(");
            to_str(e->arg[0], buf, len, off);
            put(buf, len, off, " %s ", ps_expr_op_text(e->op));
            to_str(e->arg[1], buf, len, off);
            put(buf, len, off, ")");
        }
        return;
    default:
        put(buf, len, off, "%s(", ps_expr_op_text(e->op));
        for (int i = 0; i < 3; i++) {
            if (i) put(buf, len, off, ", ");
            to_str(e->arg[i], buf, len, off);
        }
        put(buf, len, off, ")");
    }
}

int ps_expr_to_str(const ps_expr *e, char *buf, int len)
{
    if (len < 0) len = 0;
    int off = 0;
    if (!e) put(buf, len, &off, "(null)");
    else to_str(e, buf, len, &off);
    if (len > 0 && off >= len) buf[len - 1] = '\0';
    if (len > 0 && off == 0) buf[0] = '\0';
    return off;
}
