/* A cache directory of a test's own for the code polysci compiles at plan
 * time (lib/codegen): every object the test's plans need is compiled there
 * (none is left from earlier runs), and the user's cache is not touched.
 * mkdtemp and setenv are POSIX: the including file defines _GNU_SOURCE
 * before its first include. */
#ifndef TU_JIT_CACHE_H
#define TU_JIT_CACHE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Makes dir (a mkdtemp template) and points XDG_CACHE_HOME at it: 1, or 0
 * with errno set. */
static inline int tu_jit_cache_create(char *dir)
{
    if (!mkdtemp(dir)) return 0;
    return setenv("XDG_CACHE_HOME", dir, 1) == 0;
}

/* Removes dir/polysci/jit's files, the directories and dir. */
static inline void tu_jit_cache_remove(const char *dir)
{
    char jit[600], path[900];
    snprintf(jit, sizeof jit, "%s/polysci/jit", dir);
    DIR *d = opendir(jit);
    for (struct dirent *f; d && (f = readdir(d));) {
        if (f->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", jit, f->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(jit);
    snprintf(path, sizeof path, "%s/polysci", dir);
    rmdir(path);
    rmdir(dir);
}

#endif
