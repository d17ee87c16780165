/* Wisdom files: the plan cache as checksummed text.
 *
 *   polysci-wisdom 1 <library version>
 *   machine <fingerprint>
 *   plan <key>\t<schedule text>        (one line per cached plan)
 *   checksum <FNV-1a 64 of every byte above, hex>
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cachedir.h"
#include "core/error.h"
#include "plan/cache.h"
#include "polysci/version.h"
#include "polysci/wisdom.h"

#define WISDOM_MAGIC "polysci-wisdom 1 "
#define WISDOM_MAX_BYTES ((size_t)64 << 20)

/* The checksum's offset basis is not FNV's (a digit short): files written
 * with it stay readable. */
static uint64_t fnv1a(const char *p, size_t n) { return ps_fnv1a(1469598103934665603ull, p, n); }

/* Growable text buffer. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

ps_status ps_wisdom_export(ps_context *ctx, const char *path)
{
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_export: ctx is NULL");
    if (!path) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_export: path is NULL");
    sbuf b = {0};
    sb_str(&b, WISDOM_MAGIC);
    sb_str(&b, ps_version());
    sb_str(&b, "\nmachine ");
    sb_str(&b, ctx->machine_fingerprint);
    sb_str(&b, "\n");
    pthread_mutex_lock(&ctx->cache_lock);
    for (int i = 0; i < ctx->cache_n; i++) {
        char sched[1024];
        const char *kind = ctx->cache[i].key;
        ps_schedule_format(ctx->cache[i].schedule, strncmp(kind, "gemm", 4) == 0 ? PS_OP_GEMM : PS_OP_CONV_FWD, sched,
                           sizeof sched, NULL);
        sb_str(&b, "plan ");
        sb_str(&b, ctx->cache[i].key);
        sb_str(&b, "\t");
        sb_str(&b, sched);
        sb_str(&b, "\n");
    }
    pthread_mutex_unlock(&ctx->cache_lock);
    char tail[64];
    snprintf(tail, sizeof tail, "checksum %016llx\n", b.oom ? 0ull : (unsigned long long)fnv1a(b.p, b.n));
    sb_str(&b, tail);
    if (b.oom) {
        free(b.p);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_wisdom_export: out of memory");
    }
    /* Temporary file in the same directory, then rename: atomic replace. */
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        free(b.p);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_wisdom_export: out of memory");
    }
    snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    ps_status st = PS_SUCCESS;
    if (fd < 0) {
        st = ps_error(PS_ERR_IO, "ps_wisdom_export: cannot create a temporary file next to %s: %s", path, strerror(errno));
    } else {
        size_t off = 0;
        while (off < b.n) {
            ssize_t w = write(fd, b.p + off, b.n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            off += (size_t)w;
        }
        int ok = off == b.n && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) {
            st = ps_error(PS_ERR_IO, "ps_wisdom_export: cannot write %s: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(tmp);
    free(b.p);
    return st;
}

typedef struct parsed_plan {
    char *key;
    ps_schedule *sched;
} parsed_plan;

ps_status ps_wisdom_import_buffer(ps_context *ctx, const char *data, size_t len, int *n_imported)
{
    if (n_imported) *n_imported = 0;
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_import: ctx is NULL");
    if (!data && len) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_import: data is NULL");
    if (len > WISDOM_MAX_BYTES) return ps_error(PS_ERR_PARSE, "wisdom: %zu bytes is larger than any wisdom file (limit %zu)", len, WISDOM_MAX_BYTES);
    if (len < strlen(WISDOM_MAGIC) || memcmp(data, WISDOM_MAGIC, strlen(WISDOM_MAGIC)) != 0)
        return ps_error(PS_ERR_PARSE, "wisdom: not a polysci wisdom file (bad header); ignored");
    if (memchr(data, 0, len)) return ps_error(PS_ERR_PARSE, "wisdom: file contains NUL bytes; ignored");
    /* The checksum line is the last line and covers everything before it. */
    if (data[len - 1] != '\n') return ps_error(PS_ERR_PARSE, "wisdom: truncated file (no final newline); ignored");
    size_t last = len - 1;
    while (last > 0 && data[last - 1] != '\n') last--;
    unsigned long long sum;
    int consumed = 0;
    char line[64];
    size_t ll = len - last;
    if (ll >= sizeof line) return ps_error(PS_ERR_PARSE, "wisdom: missing checksum line; ignored");
    memcpy(line, data + last, ll);
    line[ll] = 0;
    if (sscanf(line, "checksum %16llx\n%n", &sum, &consumed) != 1 || (size_t)consumed != ll)
        return ps_error(PS_ERR_PARSE, "wisdom: missing checksum line; ignored");
    if (sum != fnv1a(data, last)) return ps_error(PS_ERR_PARSE, "wisdom: checksum mismatch (corrupt or edited file); ignored");

    char *text = malloc(last + 1);
    if (!text) return ps_error(PS_ERR_OUT_OF_MEMORY, "wisdom: out of memory");
    memcpy(text, data, last);
    text[last] = 0;
    ps_status st = PS_SUCCESS;
    parsed_plan *plans = NULL;
    int n = 0, cap = 0;
    char *save = NULL;
    char *hdr = strtok_r(text, "\n", &save);
    if (strcmp(hdr + strlen(WISDOM_MAGIC), ps_version()) != 0) {
        st = ps_error(PS_ERR_STALE, "wisdom: made by polysci %.40s, this is %s; ignored", hdr + strlen(WISDOM_MAGIC), ps_version());
        goto done;
    }
    char *mach = strtok_r(NULL, "\n", &save);
    if (!mach || strncmp(mach, "machine ", 8) != 0) {
        st = ps_error(PS_ERR_PARSE, "wisdom: missing machine line; ignored");
        goto done;
    }
    if (strcmp(mach + 8, ctx->machine_fingerprint) != 0) {
        st = ps_error(PS_ERR_STALE, "wisdom: made on another machine (\"%.200s\", this is \"%s\"); ignored", mach + 8,
                      ctx->machine_fingerprint);
        goto done;
    }
    for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(l, '\t');
        if (strncmp(l, "plan ", 5) != 0 || !tab) {
            st = ps_error(PS_ERR_PARSE, "wisdom: malformed line \"%.200s\"; ignored", l);
            goto done;
        }
        *tab = 0;
        ps_desc desc;
        int nthreads, top_k;
        ps_ranker ranker;
        ps_schedule *sched = NULL;
        if ((st = ps_plan_key_parse(l + 5, &desc, &nthreads, &ranker, &top_k, NULL)) ||
            (st = ps_desc_validate(&desc)) || (st = ps_schedule_parse(desc.kind, tab + 1, &sched)) ||
            (st = ps_schedule_check(sched, &desc))) {
            ps_schedule_destroy(sched);
            /* Running out of memory says nothing about the file. */
            if (st != PS_ERR_OUT_OF_MEMORY)
                st = ps_error(PS_ERR_PARSE, "wisdom: entry \"%.200s\" rejected (%s); file ignored", l + 5,
                              ps_last_error_message());
            goto done;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            parsed_plan *p = realloc(plans, (size_t)cap * sizeof *p);
            if (!p) {
                ps_schedule_destroy(sched);
                st = ps_error(PS_ERR_OUT_OF_MEMORY, "wisdom: out of memory");
                goto done;
            }
            plans = p;
        }
        plans[n++] = (parsed_plan){l + 5, sched};
    }
    /* Everything parsed and checked: only now touch the context, all or nothing. */
    {
        const char **keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
        const ps_schedule **scheds = malloc((size_t)(n ? n : 1) * sizeof *scheds);
        if (!keys || !scheds) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "wisdom: out of memory");
        } else {
            for (int i = 0; i < n; i++) {
                keys[i] = plans[i].key;
                scheds[i] = plans[i].sched;
            }
            st = ps_cache_insert_all(ctx, keys, scheds, n);
        }
        free(keys);
        free(scheds);
    }
    if (!st && n_imported) *n_imported = n;
done:
    for (int i = 0; i < n; i++) ps_schedule_destroy(plans[i].sched);
    free(plans);
    free(text);
    return st;
}

ps_status ps_wisdom_import(ps_context *ctx, const char *path, int *n_imported)
{
    if (n_imported) *n_imported = 0;
    if (!ctx) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_import: ctx is NULL");
    if (!path) return ps_error(PS_ERR_NULL_POINTER, "ps_wisdom_import: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return ps_error(PS_ERR_IO, "ps_wisdom_import: cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return ps_error(PS_ERR_IO, "ps_wisdom_import: %s is not a regular file", path);
    }
    long size = (long)sb.st_size;
    if ((size_t)size > WISDOM_MAX_BYTES) {
        fclose(f);
        return ps_error(PS_ERR_PARSE, "wisdom: %s is %ld bytes, larger than any wisdom file; ignored", path, size);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_wisdom_import: out of memory");
    }
    size_t n = fread(buf, 1, (size_t)size, f);
    int err = ferror(f) || n != (size_t)size;
    fclose(f);
    ps_status st = err ? ps_error(PS_ERR_IO, "ps_wisdom_import: cannot read %s", path)
                       : ps_wisdom_import_buffer(ctx, buf, n, n_imported);
    free(buf);
    return st;
}
