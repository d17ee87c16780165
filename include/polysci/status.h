/* polysci — status codes and error reporting.
 *
 * Every fallible call returns a ps_status. On failure a detailed,
 * human-readable message is kept per thread and can be read with
 * ps_last_error_message() until the next failing call on that thread. */
#ifndef POLYSCI_STATUS_H
#define POLYSCI_STATUS_H

#include "polysci/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ps_status {
    PS_SUCCESS = 0,
    PS_ERR_NULL_POINTER = 1,   /* a required pointer argument was NULL */
    PS_ERR_INVALID_ARG = 2,    /* a field is out of range or inconsistent */
    PS_ERR_UNSUPPORTED = 3,    /* valid request this build/version cannot do */
    PS_ERR_OVERFLOW = 4,       /* a size or offset does not fit in 64 bits / size_t */
    PS_ERR_OUT_OF_MEMORY = 5,  /* an allocation failed or exceeded the memory limit */
    PS_ERR_INVALID_SCHEDULE = 6, /* a schedule does not fit the descriptor */
    PS_ERR_BACKEND = 7,        /* LIBXSMM/isl/hwloc failed (e.g. JIT dispatch) */
    PS_ERR_BAD_WEIGHTS = 8,    /* weights buffer was not packed for this plan */
    PS_ERR_BUFFER_TOO_SMALL = 9, /* caller's output buffer is too small */
    PS_ERR_IO = 10,            /* a file could not be read or written */
    PS_ERR_PARSE = 11,         /* text (schedule string, wisdom) is malformed or corrupt */
    PS_ERR_STALE = 12          /* wisdom made for another machine or version; ignored */
} ps_status;

/* Short constant name of a status ("PS_ERR_INVALID_ARG"); never NULL. */
PS_API const char *ps_status_str(ps_status status);

/* Detailed message of the last failing call on the calling thread, or ""
 * if none failed yet. Valid until the next polysci call on this thread. */
PS_API const char *ps_last_error_message(void);

#ifdef __cplusplus
}
#endif
#endif
