/* Internal: the per-user cache directory and the hash that names files in
 * it (machine profiles, compiled expression code). */
#ifndef PS_CORE_CACHEDIR_H
#define PS_CORE_CACHEDIR_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a over n bytes from h (start: PS_FNV_OFFSET). */
#define PS_FNV_OFFSET 14695981039346656037ull
uint64_t ps_fnv1a(uint64_t h, const void *p, size_t n);

/* $XDG_CACHE_HOME/polysci (absolute paths only, per the XDG spec), else
 * $HOME/.cache/polysci, with `sub` ("" or "/name") appended. Returns the
 * length, 0 when neither variable is usable or buf is too small. */
int ps_cache_dir(const char *sub, char *buf, size_t len);

/* mkdir -p with mode 0700; 0 on success (or when it exists). */
int ps_mkdir_p(const char *dir);

#endif
