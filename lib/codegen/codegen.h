/* Internal: plan-time code for the graph executor's expression programs.
 *
 * The row kernels run a lowered expression (ps_vprog) as a loop of
 * operations over chunks of PS_VCHUNK floats, each operation reading and
 * writing whole chunks in L1: two loads and a store per operation and
 * vector, which bounds a program of a few operations to several times the
 * cycles of the same arithmetic held in registers. ps_codegen_compile writes
 * each program as one C loop (every operation a statement on locals), builds
 * them with the system C compiler into one shared object for the row-kernel
 * table's instruction set, loads it and sets each program's fn; the
 * interpreter stays for programs the generator does not write (exp, log)
 * and where no compiler runs.
 *
 * Compiled objects are kept in the cache directory (core/cachedir.h,
 * "/jit") under a hash of their source and the compiler command, so a
 * program is compiled once per machine and user; later plans only load it. */
#ifndef PS_CODEGEN_H
#define PS_CODEGEN_H

#include "kernels/kernels.h"
#include "polysci/context.h"
#include "polysci/status.h"

/* Whether the generator writes prog (every operation but exp and log). */
int ps_codegen_covers(const ps_vprog *prog);

/* __give *handle (NULL where nothing was loaded; release with
 * ps_codegen_release after the programs' last use). Compiles the programs
 * it covers for the row-kernel table `isa` ("avx512", "avx2", "generic")
 * and sets their fn. A missing compiler, a failed compilation or an
 * unusable cache directory is not an error: those programs keep fn = NULL
 * (the interpreter), *why says why (why_len > 0). Returns
 * PS_ERR_OUT_OF_MEMORY only. */
ps_status ps_codegen_compile(const ps_context *ctx, const char *isa, ps_vprog *const *progs, int n, void **handle,
                             int *n_compiled, int *cached, char *why, size_t why_len);

void ps_codegen_release(void *handle);

#endif
