#include "core/cachedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

uint64_t ps_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

int ps_cache_dir(const char *sub, char *buf, size_t len)
{
    const char *x = getenv("XDG_CACHE_HOME");
    int n;
    if (x && x[0] == '/') n = snprintf(buf, len, "%s/polysci%s", x, sub);
    else {
        const char *h = getenv("HOME");
        if (!h || h[0] != '/') {
            if (len) buf[0] = '\0';
            return 0;
        }
        n = snprintf(buf, len, "%s/.cache/polysci%s", h, sub);
    }
    return n > 0 && (size_t)n < len ? n : 0;
}

int ps_mkdir_p(const char *dir)
{
    char tmp[512];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, dir, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST ? 0 : -1;
}
