/* The context: machine model, threads, LIBXSMM state. */
#include "plan/context_impl.h"

#include <libxsmm.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void ps_context_options_init(ps_context_options *opts)
{
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

ps_status ps_context_create(const ps_context_options *opts, ps_context **ctx)
{
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_context_create: ctx is NULL");
    *ctx = NULL;
    ps_context_options def;
    if (!opts) {
        ps_context_options_init(&def);
        opts = &def;
    }
    if (opts->struct_size != sizeof *opts)
        return ps_error(PS_ERR_INVALID_ARG, "ps_context_create: opts.struct_size is %zu, expected %zu (use ps_context_options_init)",
                        opts->struct_size, sizeof *opts);
    if (opts->num_threads < 0 || opts->num_threads > 4096)
        return ps_error(PS_ERR_INVALID_ARG, "ps_context_create: num_threads %d out of range (0..4096)", opts->num_threads);
    ps_context *c = calloc(1, sizeof *c);
    if (!c) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_context_create: out of memory");
    c->num_threads = opts->num_threads ? opts->num_threads : omp_get_max_threads();
    c->memory_limit = opts->memory_limit;
    ps_status st = ps_machine_detect(&c->machine);
    if (st) {
        free(c);
        return st;
    }
    /* Idempotent; LIBXSMM finalizes itself at exit, so contexts never call
     * libxsmm_finalize (another context may still be running kernels). */
    libxsmm_init();
    *ctx = c;
    return PS_SUCCESS;
}

void ps_context_destroy(ps_context *ctx) { free(ctx); }

int ps_context_num_threads(const ps_context *ctx) { return ctx ? ctx->num_threads : 0; }
