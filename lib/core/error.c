#include "core/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "polysci/version.h"

/* Thread-local by design: the error text belongs to the calling thread. */
static _Thread_local char last_error[1024];

ps_status ps_error(ps_status status, const char *fmt, ...)
{
    /* Format into a local buffer first: callers may pass the previous
     * message (ps_last_error_message()) as an argument to wrap it. */
    char text[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    memcpy(last_error, text, sizeof text);
    return status;
}

const char *ps_last_error_message(void) { return last_error; }

const char *ps_status_str(ps_status status)
{
    switch (status) {
    case PS_SUCCESS: return "PS_SUCCESS";
    case PS_ERR_NULL_POINTER: return "PS_ERR_NULL_POINTER";
    case PS_ERR_INVALID_ARG: return "PS_ERR_INVALID_ARG";
    case PS_ERR_UNSUPPORTED: return "PS_ERR_UNSUPPORTED";
    case PS_ERR_OVERFLOW: return "PS_ERR_OVERFLOW";
    case PS_ERR_OUT_OF_MEMORY: return "PS_ERR_OUT_OF_MEMORY";
    case PS_ERR_INVALID_SCHEDULE: return "PS_ERR_INVALID_SCHEDULE";
    case PS_ERR_BACKEND: return "PS_ERR_BACKEND";
    case PS_ERR_BAD_WEIGHTS: return "PS_ERR_BAD_WEIGHTS";
    case PS_ERR_BUFFER_TOO_SMALL: return "PS_ERR_BUFFER_TOO_SMALL";
    case PS_ERR_IO: return "PS_ERR_IO";
    case PS_ERR_PARSE: return "PS_ERR_PARSE";
    case PS_ERR_STALE: return "PS_ERR_STALE";
    }
    return "PS_ERR_UNKNOWN";
}

int ps_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return 0;
    if (a != 0 && b > INT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

const char *ps_version(void) { return "0.1.0"; }
int ps_api_version(void) { return PS_API_VERSION; }
