/* polysci — pointwise expressions: the body of a pointwise graph stage.
 *
 * An expression is a tree built in code from constants, references to the
 * stage's inputs (by position) and operators; ps_graph_add_pointwise copies
 * it into the graph and the planner lowers it once to a short list of vector
 * operations over rows, so nothing walks the tree while a plan executes.
 *
 * Ownership follows isl: constructors return a new expression (__give);
 * operators consume their operands (__take), so trees compose without
 * temporaries:
 *
 *     ps_expr *e = ps_expr_binary(PS_EXPR_SUB,
 *                      ps_expr_binary(PS_EXPR_MUL, ps_expr_const(2.0f), ps_expr_input(0)),
 *                      ps_expr_input(1));            (2 * in0 - in1)
 *     ... ps_graph_add_pointwise(g, "sharpen", e, 2, inputs, &t);
 *     ps_expr_free(e);
 *
 * Every function accepts NULL operands and then returns NULL (after freeing
 * the operands it was given), so an allocation failure deep in a tree
 * surfaces once, as a NULL tree, which ps_graph_add_pointwise rejects with
 * PS_ERR_NULL_POINTER. Comparisons yield 1.0f or 0.0f; select(c, a, b)
 * takes a where c != 0. Arithmetic is IEEE single precision, evaluated in
 * the order the tree gives (no reassociation). */
#ifndef POLYSCI_EXPR_H
#define POLYSCI_EXPR_H

#include "polysci/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_expr ps_expr;

typedef enum ps_expr_op {
    /* leaves */
    PS_EXPR_CONST = 0,
    PS_EXPR_INPUT = 1,
    /* unary */
    PS_EXPR_NEG = 10,
    PS_EXPR_ABS = 11,
    PS_EXPR_SQRT = 12,
    PS_EXPR_EXP = 13,
    PS_EXPR_LOG = 14,
    PS_EXPR_FLOOR = 15,
    /* binary */
    PS_EXPR_ADD = 20,
    PS_EXPR_SUB = 21,
    PS_EXPR_MUL = 22,
    PS_EXPR_DIV = 23,
    PS_EXPR_MIN = 24,
    PS_EXPR_MAX = 25,
    PS_EXPR_LT = 30,
    PS_EXPR_LE = 31,
    PS_EXPR_GT = 32,
    PS_EXPR_GE = 33,
    PS_EXPR_EQ = 34,
    PS_EXPR_NE = 35,
    /* ternary */
    PS_EXPR_SELECT = 40, /* c != 0 ? a : b */
    PS_EXPR_CLAMP = 41   /* min(max(x, lo), hi) */
} ps_expr_op;

/* __give. A constant. */
PS_API ps_expr *ps_expr_const(float value);
/* __give. The value of the stage's input number `index` (0-based position in
 * the inputs array of ps_graph_add_pointwise) at the point being computed. */
PS_API ps_expr *ps_expr_input(int index);
/* __give. op is one of the unary operators; __take a. */
PS_API ps_expr *ps_expr_unary(ps_expr_op op, ps_expr *a);
/* __give. op is one of the binary operators; __take a, b. */
PS_API ps_expr *ps_expr_binary(ps_expr_op op, ps_expr *a, ps_expr *b);
/* __give. c != 0 ? a : b; __take c, a, b. */
PS_API ps_expr *ps_expr_select(ps_expr *c, ps_expr *a, ps_expr *b);
/* __give. min(max(x, lo), hi); __take x, lo, hi. */
PS_API ps_expr *ps_expr_clamp(ps_expr *x, ps_expr *lo, ps_expr *hi);

/* __give. A deep copy (NULL for NULL or when out of memory). */
PS_API ps_expr *ps_expr_copy(const ps_expr *e);
/* __take. NULL is a no-op. */
PS_API void ps_expr_free(ps_expr *e);

/* Infix text of the tree ("((2 * in0) - in1)"); snprintf semantics: returns
 * the length needed (without the NUL), writes at most len bytes, always
 * NUL-terminated when len > 0. "(null)" for NULL. */
PS_API int ps_expr_to_str(const ps_expr *e, char *buf, int len);

#ifdef __cplusplus
}
#endif
#endif
