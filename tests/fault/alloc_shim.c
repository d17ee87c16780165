/* Counting, failing allocator for the fault-injection test. Thread-safe
 * (a mutex around the live-block table): the library may allocate from
 * OpenMP threads. Blocks are tracked by address so frees of memory the
 * library did not allocate through the shim (e.g. strings from isl) are
 * passed through without being counted. */
#define _GNU_SOURCE 1
#define PS_FAULT_SHIM_IMPL 1
#include "alloc_shim.h"
#include "alloc_shim_ctl.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long calls, failed, fail_at;
static int sticky;

/* Open-addressing table of live blocks. */
typedef struct slot {
    void *p; /* NULL = empty, TOMB = deleted */
    size_t size;
    void *site;
} slot;
#define TOMB ((void *)1)
static slot *tab;
static size_t cap, used, live;
static size_t live_bytes;

/* Sites of the first calls of a run, for reporting which call failed. */
#define SITES 200000
static void *sites[SITES];

static size_t hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static void grow(void)
{
    size_t ncap = cap ? cap * 2 : 4096;
    slot *nt = calloc(ncap, sizeof *nt);
    if (!nt) {
        fprintf(stderr, "alloc_shim: out of memory for the live table\n");
        abort();
    }
    for (size_t i = 0; i < cap; i++)
        if (tab[i].p && tab[i].p != TOMB) {
            size_t j = hash(tab[i].p) & (ncap - 1);
            while (nt[j].p) j = (j + 1) & (ncap - 1);
            nt[j] = tab[i];
        }
    free(tab);
    tab = nt;
    cap = ncap;
    used = live;
}

static void track(void *p, size_t size, void *site)
{
    if ((used + 1) * 2 > cap) grow();
    size_t j = hash(p) & (cap - 1);
    while (tab[j].p && tab[j].p != TOMB) j = (j + 1) & (cap - 1);
    if (!tab[j].p) used++;
    tab[j] = (slot){p, size, site};
    live++;
    live_bytes += size;
}

/* Removes p; returns 1 if it was tracked. */
static int untrack(void *p)
{
    if (!cap) return 0;
    size_t j = hash(p) & (cap - 1);
    while (tab[j].p) {
        if (tab[j].p == p) {
            live--;
            live_bytes -= tab[j].size;
            tab[j].p = TOMB;
            return 1;
        }
        j = (j + 1) & (cap - 1);
    }
    return 0;
}

/* Counts one call; returns 1 if it must fail. Called with the lock held. */
static int should_fail(void *site)
{
    calls++;
    if (calls <= SITES) sites[calls - 1] = site;
    if (fail_at > 0 && (calls == fail_at || (sticky && calls > fail_at))) {
        failed++;
        return 1;
    }
    return 0;
}

#define SITE __builtin_extract_return_addr(__builtin_return_address(0))

void *ps_fault_malloc(size_t n)
{
    void *site = SITE;
    pthread_mutex_lock(&lock);
    void *p = should_fail(site) ? NULL : malloc(n);
    if (p) track(p, n, site);
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

void *ps_fault_calloc(size_t n, size_t size)
{
    void *site = SITE;
    pthread_mutex_lock(&lock);
    void *p = should_fail(site) ? NULL : calloc(n, size);
    if (p) track(p, n * size, site);
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

void *ps_fault_realloc(void *old, size_t n)
{
    void *site = SITE;
    pthread_mutex_lock(&lock);
    void *p = NULL;
    if (!should_fail(site)) {
        const int tracked = old ? untrack(old) : 1;
        p = realloc(old, n);
        if (p) {
            if (tracked) track(p, n, site);
        } else if (old && tracked) {
            track(old, 0, site); /* realloc failed for real: the old block stays */
        }
    }
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

void *ps_fault_aligned_alloc(size_t align, size_t n)
{
    void *site = SITE;
    pthread_mutex_lock(&lock);
    void *p = should_fail(site) ? NULL : aligned_alloc(align, n);
    if (p) track(p, n, site);
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

int ps_fault_posix_memalign(void **out, size_t align, size_t n)
{
    void *site = SITE;
    pthread_mutex_lock(&lock);
    int rc = ENOMEM;
    if (!should_fail(site)) {
        rc = posix_memalign(out, align, n);
        if (rc == 0) track(*out, n, site);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

char *ps_fault_strdup(const char *s)
{
    void *site = SITE;
    const size_t n = strlen(s) + 1;
    pthread_mutex_lock(&lock);
    char *p = should_fail(site) ? NULL : malloc(n);
    if (p) {
        memcpy(p, s, n);
        track(p, n, site);
    }
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

char *ps_fault_strndup(const char *s, size_t max)
{
    void *site = SITE;
    size_t n = strnlen(s, max);
    pthread_mutex_lock(&lock);
    char *p = should_fail(site) ? NULL : malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
        track(p, n + 1, site);
    }
    pthread_mutex_unlock(&lock);
    if (!p) errno = ENOMEM;
    return p;
}

void ps_fault_free(void *p)
{
    if (!p) return;
    pthread_mutex_lock(&lock);
    untrack(p);
    pthread_mutex_unlock(&lock);
    free(p);
}

void ps_fault_arm(long at, int stick)
{
    pthread_mutex_lock(&lock);
    calls = 0;
    failed = 0;
    fail_at = at;
    sticky = stick;
    pthread_mutex_unlock(&lock);
}

#define GETTER(type, name, expr)                                                                                     \
    type name(void)                                                                                                  \
    {                                                                                                                \
        pthread_mutex_lock(&lock);                                                                                   \
        type v = (type)(expr);                                                                                       \
        pthread_mutex_unlock(&lock);                                                                                 \
        return v;                                                                                                    \
    }
GETTER(long, ps_fault_calls, calls)
GETTER(long, ps_fault_failed, failed)
GETTER(long, ps_fault_live, live)
GETTER(size_t, ps_fault_live_bytes, live_bytes)

void *ps_fault_site(long n)
{
    pthread_mutex_lock(&lock);
    void *s = n >= 1 && n <= SITES && n <= calls ? sites[n - 1] : NULL;
    pthread_mutex_unlock(&lock);
    return s;
}

void ps_fault_dump_live(int max, void (*show)(void *block, size_t size, void *site))
{
    /* Copied out first: `show` may allocate. */
    slot copy[64];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < cap && n < max && n < 64; i++)
        if (tab[i].p && tab[i].p != TOMB) copy[n++] = tab[i];
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) show(copy[i].p, copy[i].size, copy[i].site);
}
