/* Force-included (-include) into polysci's sources for the fault-injection
 * build (tests/fault/CMakeLists.txt): every allocation the library makes
 * itself goes through a counting shim that can be told to fail the Nth one.
 * Allocations inside isl, hwloc, LIBXSMM and libc are not affected. */
#ifndef PS_FAULT_ALLOC_SHIM_H
#define PS_FAULT_ALLOC_SHIM_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
void *ps_fault_malloc(size_t n);
void *ps_fault_calloc(size_t n, size_t size);
void *ps_fault_realloc(void *p, size_t n);
void *ps_fault_aligned_alloc(size_t align, size_t n);
int ps_fault_posix_memalign(void **out, size_t align, size_t n);
char *ps_fault_strdup(const char *s);
char *ps_fault_strndup(const char *s, size_t n);
void ps_fault_free(void *p);
#ifdef __cplusplus
}
#endif

#ifndef PS_FAULT_SHIM_IMPL
#define malloc(n) ps_fault_malloc(n)
#define calloc(n, s) ps_fault_calloc(n, s)
#define realloc(p, n) ps_fault_realloc(p, n)
#define aligned_alloc(a, n) ps_fault_aligned_alloc(a, n)
#define posix_memalign(o, a, n) ps_fault_posix_memalign(o, a, n)
#define strdup(s) ps_fault_strdup(s)
#define strndup(s, n) ps_fault_strndup(s, n)
#define free(p) ps_fault_free(p)
#endif

#endif
