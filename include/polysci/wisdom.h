/* polysci — wisdom: the planner's decisions, saved and restored (like FFTW).
 *
 * Every plan the planner chooses is remembered in the context's plan cache,
 * keyed by (descriptor, plan options, machine). Exporting writes that cache to
 * a file; importing it in a later process makes ps_plan_create skip variant
 * generation, analysis and ranking for those layers.
 *
 * Imported wisdom is never trusted blindly: the file carries a checksum and
 * the machine it was made on; every schedule is re-checked against its
 * descriptor. A corrupt file (PS_ERR_PARSE) or one from another machine or
 * library version (PS_ERR_STALE) is ignored as a whole and the context keeps
 * what it had: these statuses are warnings, planning still works. */
#ifndef POLYSCI_WISDOM_H
#define POLYSCI_WISDOM_H

#include "polysci/export.h"

#include <stddef.h>
#include "polysci/status.h"
#include "polysci/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the context's plan cache to `path` atomically (temporary file, then
 * rename): a reader never sees a half-written file. */
PS_API ps_status ps_wisdom_export(ps_context *ctx, const char *path);
/* Reads wisdom from `path`; *n_imported (optional) gets the number of plans added. */
PS_API ps_status ps_wisdom_import(ps_context *ctx, const char *path, int *n_imported);
/* The same from memory (len bytes, need not be NUL-terminated). */
PS_API ps_status ps_wisdom_import_buffer(ps_context *ctx, const char *data, size_t len, int *n_imported);
/* Number of plans the context's cache holds. */
PS_API int ps_context_cached_plans(const ps_context *ctx);
/* Empties the context's plan cache. */
PS_API void ps_context_forget_plans(ps_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
