/* Internal: integer division rounding toward minus infinity, for region
 * and tile coordinates that may be negative (b > 0). */
#ifndef PS_INTMATH_H
#define PS_INTMATH_H

#include <stdint.h>

static inline int64_t ps_floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

#endif
