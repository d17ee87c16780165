/* Control side of the allocation shim (alloc_shim.c), for the test driver. */
#ifndef PS_FAULT_ALLOC_SHIM_CTL_H
#define PS_FAULT_ALLOC_SHIM_CTL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* Starts counting from 0. fail_at = N >= 1: the Nth allocation call fails
 * (and, with sticky != 0, every later one too); 0 = none fails. */
void ps_fault_arm(long fail_at, int sticky);
long ps_fault_calls(void);      /* allocation calls since ps_fault_arm */
long ps_fault_failed(void);     /* calls that were made to fail */
long ps_fault_live(void);       /* blocks the library allocated and has not freed */
size_t ps_fault_live_bytes(void);
/* Call site (return address) of the allocation call number `n` of the last
 * armed run (1-based), if recorded; NULL otherwise. */
void *ps_fault_site(long n);
/* Calls `show` for up to `max` (<= 64) live blocks. */
void ps_fault_dump_live(int max, void (*show)(void *block, size_t size, void *site));
#ifdef __cplusplus
}
#endif
#endif
