/* Internal: setting the per-thread error message. */
#ifndef PS_CORE_ERROR_H
#define PS_CORE_ERROR_H

#include <stdint.h>
#include "polysci/status.h"

/* Records a printf-style message for ps_last_error_message() and returns
 * `status`, so callers write `return ps_error(PS_ERR_INVALID_ARG, "...", x);`. */
ps_status ps_error(ps_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Checked arithmetic on non-negative 64-bit sizes: returns 0 on overflow. */
int ps_mul_ok(int64_t a, int64_t b, int64_t *out);

#endif
