/* The context: machine model, threads, LIBXSMM state. */
#include "plan/context_impl.h"

#include <libxsmm.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "plan/cache.h"

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
    const char *verbose = getenv("PS_VERBOSE");
    c->verbose = verbose ? atoi(verbose) : 0;
    const char *codegen = getenv("PS_CODEGEN"), *cc = getenv("PS_CC");
    c->codegen = !codegen || atoi(codegen) != 0;
    snprintf(c->cc, sizeof c->cc, "%s", cc && cc[0] && strlen(cc) < sizeof c->cc ? cc : "cc");
    /* Like oneDNN's ONEDNN_MAX_CPU_ISA: a narrower row-kernel table than the
     * machine's, to run and test the code other CPUs get. */
    const char *rk = getenv("PS_ROW_KERNELS");
    c->row_lanes_max = 16;
    if (rk && rk[0]) {
        if (!strcmp(rk, "avx512")) c->row_lanes_max = 16;
        else if (!strcmp(rk, "avx2")) c->row_lanes_max = 8;
        else if (!strcmp(rk, "generic")) c->row_lanes_max = 4;
        else {
            free(c);
            return ps_error(PS_ERR_INVALID_ARG, "ps_context_create: PS_ROW_KERNELS is \"%.32s\": expected avx512, avx2 or generic",
                            rk);
        }
    }
    if (opts->n_cache_sizes < 0 || opts->n_cache_sizes > 4) {
        free(c);
        return ps_error(PS_ERR_INVALID_ARG, "ps_context_create: n_cache_sizes %d out of range (0..4)", opts->n_cache_sizes);
    }
    ps_status st = ps_machine_detect(&c->machine);
    /* Options override the environment: a bad PS_CACHE_SIZES is then moot. */
    if (opts->n_cache_sizes > 0)
        st = ps_machine_override_caches(&c->machine, opts->cache_sizes, opts->n_cache_sizes, "api");
    if (st) {
        free(c);
        return st;
    }
    /* Idempotent; LIBXSMM finalizes itself at exit, so contexts never call
     * libxsmm_finalize (another context may still be running kernels). */
    /* Wisdom is valid for this CPU with these caches and this thread count. */
    int off = snprintf(c->machine_fingerprint, sizeof c->machine_fingerprint, "%s;cores=%d", c->machine.cpu_name,
                       c->machine.n_cores);
    for (int i = 0; i < c->machine.n_levels && off < (int)sizeof c->machine_fingerprint; i++)
        off += snprintf(c->machine_fingerprint + off, sizeof c->machine_fingerprint - (size_t)off, ";L%d=%zu",
                        c->machine.levels[i].level, c->machine.levels[i].size_bytes);
    ps_cache_init(c);
    libxsmm_init();
    *ctx = c;
    return PS_SUCCESS;
}

void ps_context_destroy(ps_context *ctx)
{
    if (!ctx) return;
    ps_cache_release(ctx);
    free(ctx);
}

int ps_context_num_threads(const ps_context *ctx) { return ctx ? ctx->num_threads : 0; }
