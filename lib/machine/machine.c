/* Machine detection: caches (hwloc, cross-checked with sysfs and CPUID),
 * cores, clock/peak estimate, PS_CACHE_SIZES, JSON. Rules in machine.h. */
#include "machine/machine.h"
#include "machine/machine_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <hwloc.h>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PS_X86 1
#else
#define PS_X86 0
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* ------------------------------------------------------------------ notes */

void ps_machine_note(ps_machine *m, const char *fmt, ...)
{
    size_t cap = sizeof m->notes;
    size_t used = strnlen(m->notes, cap);
    if (used + 4 >= cap) return; /* already full (ends with "...") */
    char tmp[PS_MACHINE_NOTES_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    const char *sep = used ? "; " : "";
    size_t need = strlen(sep) + strlen(tmp);
    if (used + need < cap) {
        memcpy(m->notes + used, sep, strlen(sep));
        memcpy(m->notes + used + strlen(sep), tmp, strlen(tmp) + 1);
        return;
    }
    /* Truncate, keeping room for "..." so a reader knows text was lost. */
    size_t room = cap - 1 - used - 3;
    char *p = m->notes + used;
    size_t k = 0;
    for (const char *q = sep; *q && k < room; q++) p[k++] = *q;
    for (const char *q = tmp; *q && k < room; q++) p[k++] = *q;
    memcpy(p + k, "...", 4);
}

void ps_machine_drop_notes(ps_machine *m, const char *prefix)
{
    /* Notes are joined by "; ", which a note may hold inside parentheses. */
    char kept[PS_MACHINE_NOTES_LEN];
    size_t out = 0;
    const size_t plen = strlen(prefix);
    const char *p = m->notes;
    while (*p) {
        const char *e = p;
        for (int depth = 0; *e && !(depth == 0 && e[0] == ';' && e[1] == ' '); e++) depth += (*e == '(') - (*e == ')');
        if (strncmp(p, prefix, plen) != 0) {
            if (out) {
                memcpy(kept + out, "; ", 2);
                out += 2;
            }
            memcpy(kept + out, p, (size_t)(e - p));
            out += (size_t)(e - p);
        }
        p = *e ? e + 2 : e;
    }
    kept[out] = 0;
    memcpy(m->notes, kept, out + 1);
}

void ps_machine_fmt_size(size_t b, char *buf, size_t len)
{
    if (b && b % GIB == 0) snprintf(buf, len, "%zuG", b / GIB);
    else if (b && b % MIB == 0) snprintf(buf, len, "%zuM", b / MIB);
    else if (b && b % KIB == 0) snprintf(buf, len, "%zuK", b / KIB);
    else snprintf(buf, len, "%zu", b);
}

/* ---------------------------------------------------------- small parsing */

void ps_machine_fmt_fixed(double v, int decimals, char *buf, size_t len)
{
    if (!(v >= 0) || v > 1e15) { snprintf(buf, len, "0"); return; } /* also NaN */
    unsigned long long scale = 1;
    for (int i = 0; i < decimals; i++) scale *= 10;
    unsigned long long x = (unsigned long long)(v * (double)scale + 0.5);
    if (decimals == 0) snprintf(buf, len, "%llu", x);
    else snprintf(buf, len, "%llu.%0*llu", x / scale, decimals, x % scale);
}

int ps_machine_parse_decimal(const char **s, double *out)
{
    const char *p = *s;
    if (!isdigit((unsigned char)*p)) return 0;
    double v = 0;
    while (isdigit((unsigned char)*p)) v = v * 10 + (*p++ - '0');
    if (*p == '.') {
        p++;
        double f = 0.1;
        while (isdigit((unsigned char)*p)) { v += (*p++ - '0') * f; f *= 0.1; }
    }
    *s = p;
    *out = v;
    return 1;
}

/* Parses "48K", "1M", "32MiB", "65536" at *s (no leading blanks); 0 on error
 * with the reason in why. */
static int parse_one_size(const char **s, size_t *out, const char **why)
{
    const char *p = *s;
    if (!isdigit((unsigned char)*p)) { *why = "expected a number"; return 0; }
    unsigned long long v = 0;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p++ - '0');
        if (v > (ULLONG_MAX - d) / 10) { *why = "number too large"; return 0; }
        v = v * 10 + d;
    }
    if (*p == '.') { *why = "fractions are not accepted (write 1280K, not 1.25M)"; return 0; }
    unsigned long long mult = 1;
    switch (*p) {
    case 'k': case 'K': mult = KIB; p++; break;
    case 'm': case 'M': mult = MIB; p++; break;
    case 'g': case 'G': mult = GIB; p++; break;
    default: break;
    }
    if (mult != 1 && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B')) p += 2;
    else if (*p == 'b' || *p == 'B') p++;
    if (v > ULLONG_MAX / mult || v * mult > (unsigned long long)SIZE_MAX) {
        *why = "size too large"; return 0;
    }
    *out = (size_t)(v * mult);
    *s = p;
    return 1;
}

ps_status ps_machine_parse_cache_sizes(const char *text, size_t *sizes, int *n)
{
    if (!text || !sizes || !n)
        return ps_error(PS_ERR_NULL_POINTER, "ps_machine_parse_cache_sizes: NULL argument");
    const char *p = text;
    int k = 0;
    *n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (k == PS_MAX_CACHE_LEVELS)
            return ps_error(PS_ERR_PARSE, "cache sizes \"%s\": more than %d levels",
                            text, PS_MAX_CACHE_LEVELS);
        const char *why = NULL;
        if (*p == ',' || *p == '\0') why = "empty entry";
        size_t v = 0;
        if (!why && parse_one_size(&p, &v, &why) && v == 0) why = "size must be positive";
        if (!why) {
            while (*p == ' ' || *p == '\t') p++;
            if (*p != ',' && *p != '\0') why = "unexpected character after the size";
        }
        if (!why && k > 0 && v <= sizes[k - 1]) why = "sizes must increase with the level";
        if (why)
            return ps_error(PS_ERR_PARSE,
                            "cache sizes \"%s\": entry %d (L%d): %s; expected a comma-separated "
                            "list like 48K,1M,32M (K/M/G = 1024^n, or plain bytes)",
                            text, k + 1, k + 1, why);
        sizes[k++] = v;
        if (*p == '\0') break;
        p++; /* ',' */
    }
    *n = k;
    return PS_SUCCESS;
}

/* Reads a small sysfs/proc file into buf (NUL-terminated, trailing newline
 * stripped). Returns its length or -1. */
static int read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = 0, r;
    while ((size_t)got + 1 < len && (r = read(fd, buf + got, len - 1 - (size_t)got)) > 0) got += r;
    close(fd);
    if (got < 0) return -1;
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' ')) buf[--got] = '\0';
    return (int)got;
}

/* Counts the CPUs in a Linux cpu list ("0-3,8-11"); 0 if malformed. */
static int count_cpu_list(const char *s)
{
    int count = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0) return 0;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a) return 0;
            s = end;
        }
        count += (int)(b - a + 1);
        if (*s == ',') s++;
        else if (*s) return 0;
    }
    return count;
}

/* --------------------------------------------------------------- the CPU */

typedef struct cpu_ident {
    char vendor[13];
    unsigned family, model, stepping;
    unsigned max_leaf, max_ext;
    int hypervisor, topoext;
} cpu_ident;

static void trim_copy(char *dst, size_t len, const char *src)
{
    while (*src == ' ' || *src == '\t') src++;
    size_t n = strlen(src);
    while (n && (src[n - 1] == ' ' || src[n - 1] == '\t' || src[n - 1] == '\n')) n--;
    if (n >= len) n = len - 1;
    for (size_t i = 0; i < n; i++) /* control bytes would break notes/JSON/profile lines */
        dst[i] = (unsigned char)src[i] < 0x20 ? ' ' : src[i];
    dst[n] = '\0';
}

/* /proc/cpuinfo value of `key` for the first processor only (reading only
 * the first block keeps this cheap on many-core machines). */
static int cpuinfo_value(const char *key, char *out, size_t len)
{
    char buf[4096];
    if (read_small_file("/proc/cpuinfo", buf, sizeof buf) <= 0) return 0;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line; ) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (*line == '\0') break; /* end of the first processor */
        if (strncmp(line, key, klen) == 0 && (line[klen] == '\t' || line[klen] == ' ' || line[klen] == ':')) {
            char *colon = strchr(line, ':');
            if (colon) { trim_copy(out, len, colon + 1); return 1; }
        }
        line = next;
    }
    return 0;
}

static void identify_cpu(ps_machine *m, cpu_ident *id)
{
    memset(id, 0, sizeof *id);
#if PS_X86
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    id->max_leaf = a;
    memcpy(id->vendor, &b, 4); memcpy(id->vendor + 4, &d, 4); memcpy(id->vendor + 8, &c, 4);
    if (id->max_leaf >= 1) {
        __cpuid(1, a, b, c, d);
        unsigned base = (a >> 8) & 0xf;
        id->family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
        id->model = (a >> 4) & 0xf;
        if (base == 0x6 || base == 0xf) id->model |= ((a >> 16) & 0xf) << 4;
        id->stepping = a & 0xf;
        id->hypervisor = (c >> 31) & 1;
    }
    __cpuid(0x80000000, a, b, c, d);
    id->max_ext = a >= 0x80000000 && a < 0x8000ffff ? a : 0;
    if (id->max_ext >= 0x80000001) {
        __cpuid(0x80000001, a, b, c, d);
        id->topoext = (c >> 22) & 1;
    }
    if (id->max_ext >= 0x80000004) {
        unsigned w[12];
        char brand[49];
        for (unsigned i = 0; i < 3; i++) __cpuid(0x80000002 + i, w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
        memcpy(brand, w, 48);
        brand[48] = '\0';
        trim_copy(m->cpu_name, sizeof m->cpu_name, brand);
    }
    snprintf(m->cpu_key, sizeof m->cpu_key, "%s-%x-%x-%x", id->vendor, id->family, id->model, id->stepping);
#else
    struct utsname u;
    if (uname(&u) == 0) snprintf(m->cpu_key, sizeof m->cpu_key, "%.40s", u.machine);
    else snprintf(m->cpu_key, sizeof m->cpu_key, "unknown");
#endif
    if (!m->cpu_name[0] && !cpuinfo_value("model name", m->cpu_name, sizeof m->cpu_name))
        snprintf(m->cpu_name, sizeof m->cpu_name, "unknown CPU");
}

/* ------------------------------------------------------- cache reporters */

static void hwloc_report(ps_machine *m, hwloc_topology_t topo, ps_cache_report *r, int *first_cpu)
{
    r->source = "hwloc";
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return;
    /* Our threads inherit the calling thread's binding (taskset, cgroups). */
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(topo));
    hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(topo));
    if (hwloc_bitmap_iszero(set)) hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(topo));
    m->n_pus = hwloc_bitmap_weight(set);
    int cores = 0;
    for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, c)) != NULL; )
        if (hwloc_bitmap_intersects(c->cpuset, set)) cores++;
    m->n_cores = cores > 0 ? cores : m->n_pus;
    int first = hwloc_bitmap_first(set);
    if (first >= 0) *first_cpu = first;
    hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(topo, (unsigned)first) : NULL;
    static const hwloc_obj_type_t types[PS_MAX_CACHE_LEVELS] = {
        HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE};
    for (int l = 0; pu && l < PS_MAX_CACHE_LEVELS; l++) {
        hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(topo, types[l], pu);
        if (!c || c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
        r->size[l] = (size_t)c->attr->cache.size;
        r->line_bytes[l] = (int)c->attr->cache.linesize;
        r->shared_by[l] = hwloc_bitmap_weight(c->cpuset);
    }
    if (!r->size[0] && !r->size[1] && !r->size[2] && !r->size[3])
        ps_machine_note(m, "hwloc: no caches reported");
    hwloc_bitmap_free(set);
}

static void sysfs_report(ps_machine *m, int cpu, ps_cache_report *r)
{
    r->source = "sysfs";
    char path[128], val[256];
    int found = 0;
    for (int idx = 0; idx < 16; idx++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, idx);
        if (read_small_file(path, val, sizeof val) <= 0) break;
        found = 1;
        int level = atoi(val);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, idx);
        if (read_small_file(path, val, sizeof val) <= 0 || strcmp(val, "Instruction") == 0) continue;
        if (level < 1 || level > PS_MAX_CACHE_LEVELS) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, idx);
        size_t size = 0;
        const char *p = val, *why;
        if (read_small_file(path, val, sizeof val) <= 0 || !parse_one_size(&p, &size, &why)) continue;
        r->size[level - 1] = size;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/coherency_line_size", cpu, idx);
        if (read_small_file(path, val, sizeof val) > 0) r->line_bytes[level - 1] = atoi(val);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, idx);
        if (read_small_file(path, val, sizeof val) > 0) r->shared_by[level - 1] = count_cpu_list(val);
    }
    if (!found) ps_machine_note(m, "sysfs: no cache directory for cpu%d", cpu);
}

#if PS_X86
/* Intel leaf 4 / AMD 0x8000001D share a layout. Returns levels found. */
static int cpuid_deterministic(unsigned leaf, int n_pus, ps_cache_report *r)
{
    int found = 0;
    for (unsigned sub = 0; sub < 16; sub++) {
        unsigned a, b, c, d;
        __cpuid_count(leaf, sub, a, b, c, d);
        unsigned type = a & 31, level = (a >> 5) & 7;
        if (type == 0) break;
        if (type == 2 || level < 1 || level > PS_MAX_CACHE_LEVELS) continue; /* instruction */
        size_t line = (b & 0xfff) + 1, parts = ((b >> 12) & 0x3ff) + 1, ways = ((b >> 22) & 0x3ff) + 1;
        r->size[level - 1] = line * parts * ways * ((size_t)c + 1);
        r->line_bytes[level - 1] = (int)line;
        /* An upper bound on APIC IDs, not a count: clamp to what we see. */
        int share = (int)((a >> 14) & 0xfff) + 1;
        r->shared_by[level - 1] = share < n_pus ? share : n_pus;
        found++;
    }
    return found;
}
#endif

static void cpuid_report(ps_machine *m, const cpu_ident *id, ps_cache_report *r)
{
    r->source = "cpuid";
#if PS_X86
    int intel = strcmp(id->vendor, "GenuineIntel") == 0;
    int amd = strcmp(id->vendor, "AuthenticAMD") == 0 || strcmp(id->vendor, "HygonGenuine") == 0;
    int found = 0;
    if (intel && id->max_leaf >= 4) found = cpuid_deterministic(4, m->n_pus, r);
    else if (amd && id->topoext && id->max_ext >= 0x8000001D) found = cpuid_deterministic(0x8000001D, m->n_pus, r);
    if (!found && amd && id->max_ext >= 0x80000006) {
        unsigned a, b, c, d;
        __cpuid(0x80000005, a, b, c, d);
        r->size[0] = (size_t)(c >> 24) * KIB;
        r->line_bytes[0] = (int)(c & 0xff);
        r->shared_by[0] = 1;
        __cpuid(0x80000006, a, b, c, d);
        r->size[1] = (size_t)(c >> 16) * KIB;
        r->line_bytes[1] = (int)(c & 0xff);
        r->shared_by[1] = 1;
        r->size[2] = (size_t)(d >> 18) * 512 * KIB;
        r->line_bytes[2] = (int)(d & 0xff);
        if (id->topoext) ps_machine_note(m, "cpuid: 0x8000001D empty, used legacy 0x80000005/6");
        found = 1;
    }
    if (!found) ps_machine_note(m, "cpuid: no cache leaves for vendor %s", id->vendor);
#else
    (void)m; (void)id;
#endif
}

/* ------------------------------------------------------------ resolution */

static const size_t plaus_lo[PS_MAX_CACHE_LEVELS] = {8 * KIB, 64 * KIB, 256 * KIB, 16 * MIB};
static const size_t plaus_hi[PS_MAX_CACHE_LEVELS] = {256 * KIB, 32 * MIB, 128 * MIB, GIB};
static const size_t default_size[PS_MAX_CACHE_LEVELS] = {32 * KIB, MIB, 32 * MIB, 128 * MIB};

size_t ps_machine_cache_bytes(const ps_machine *m, int level)
{
    for (int i = 0; i < m->n_levels; i++)
        if (m->levels[i].level == level) return m->levels[i].size_bytes;
    return 0;
}

int ps_machine_llc_slow(const ps_machine *m)
{
    for (int i = 0; i < m->n_levels; i++)
        if (m->levels[i].level == 3) return m->levels[i].bandwidth_gbs < 2.0 * m->mem_bandwidth_gbs;
    return 0;
}

size_t ps_machine_stream_bytes(const ps_machine *m)
{
    const size_t llc = ps_machine_cache_bytes(m, 3);
    return ps_machine_llc_slow(m) ? llc / 4 : llc;
}

size_t ps_machine_panel_bytes(const ps_machine *m)
{
    return ps_machine_llc_slow(m) ? ps_machine_cache_bytes(m, 3) / 2 : 0;
}

int ps_machine_cache_plausible(int level, size_t size, size_t below, char *why, size_t why_len)
{
    char a[24], b[24];
    if (level < 1 || level > PS_MAX_CACHE_LEVELS) {
        snprintf(why, why_len, "level %d is not modelled", level);
        return 0;
    }
    ps_machine_fmt_size(size, a, sizeof a);
    if (size < plaus_lo[level - 1]) {
        ps_machine_fmt_size(plaus_lo[level - 1], b, sizeof b);
        snprintf(why, why_len, "%s is below the L%d minimum %s", a, level, b);
        return 0;
    }
    if (size > plaus_hi[level - 1]) {
        ps_machine_fmt_size(plaus_hi[level - 1], b, sizeof b);
        snprintf(why, why_len, "%s is above the L%d maximum %s per instance", a, level, b);
        return 0;
    }
    if (below && size <= below) {
        ps_machine_fmt_size(below, b, sizeof b);
        snprintf(why, why_len, "%s is not larger than the level below (%s)", a, b);
        return 0;
    }
    if (why_len) why[0] = '\0';
    return 1;
}

static int line_ok(int line) { return line >= 16 && line <= 256 && (line & (line - 1)) == 0; }

void ps_machine_resolve_caches(ps_machine *m, const ps_cache_report *r, int nr)
{
    int max_level = 0;
    for (int i = 0; i < nr; i++)
        for (int l = 0; l < PS_MAX_CACHE_LEVELS; l++)
            if (r[i].size[l] && l + 1 > max_level) max_level = l + 1;
    if (max_level == 0) {
        max_level = 3;
        ps_machine_note(m, "no source reported caches: defaults for L1-L3");
    }
    int n_pus = m->n_pus > 0 ? m->n_pus : 1;
    size_t below = 0;
    int below_line = 64;
    char sz[24], sz2[24], why[128];
    for (int l = 1; l <= max_level; l++) {
        int win = -1;
        for (int i = 0; i < nr; i++) {
            size_t s = r[i].size[l - 1];
            if (!s) continue;
            ps_machine_fmt_size(s, sz, sizeof sz);
            if (!ps_machine_cache_plausible(l, s, below, why, sizeof why)) {
                ps_machine_note(m, "L%d from %s rejected: %s", l, r[i].source, why);
            } else if (win < 0) {
                win = i;
            } else if (s != r[win].size[l - 1]) {
                ps_machine_fmt_size(r[win].size[l - 1], sz2, sizeof sz2);
                ps_machine_note(m, "L%d: %s says %s, %s says %s; kept %s", l, r[i].source, sz,
                                r[win].source, sz2, r[win].source);
            }
        }
        ps_cache_level *c = &m->levels[l - 1];
        memset(c, 0, sizeof *c);
        c->level = l;
        if (win >= 0) {
            c->size_bytes = r[win].size[l - 1];
            c->line_bytes = r[win].line_bytes[l - 1];
            c->shared_by = r[win].shared_by[l - 1];
            c->source = r[win].source;
        } else {
            size_t d = default_size[l - 1];
            if (below && d <= below) d = 2 * below;
            c->size_bytes = d;
            c->line_bytes = below_line;
            c->shared_by = 0;
            c->source = "default";
            ps_machine_fmt_size(d, sz, sizeof sz);
            ps_machine_note(m, "L%d: no plausible report, default %s", l, sz);
        }
        if (!line_ok(c->line_bytes)) {
            if (c->line_bytes != 0)
                ps_machine_note(m, "L%d: line size %d replaced by %d", l, c->line_bytes, below_line);
            c->line_bytes = below_line;
        }
        if (c->shared_by <= 0) c->shared_by = l >= 3 ? n_pus : 1;
        below = c->size_bytes;
        below_line = c->line_bytes;
    }
    m->n_levels = max_level;
}

/* Replaces levels without touching perf values (detect fills those later). */
static void apply_override(ps_machine *m, const size_t *sizes, int n, const char *source)
{
    int n_pus = m->n_pus > 0 ? m->n_pus : 1;
    char list[128] = "", sz[24];
    for (int i = 0; i < n; i++) {
        ps_cache_level *c = &m->levels[i];
        if (i >= m->n_levels) {
            c->line_bytes = i > 0 ? m->levels[i - 1].line_bytes : 64;
            c->shared_by = i >= 2 ? n_pus : 1;
            c->latency_ns = c->bandwidth_gbs = 0;
        }
        c->level = i + 1;
        c->size_bytes = sizes[i];
        c->source = source;
        ps_machine_fmt_size(sizes[i], sz, sizeof sz);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "", sz);
    }
    for (int i = n; i < PS_MAX_CACHE_LEVELS; i++) memset(&m->levels[i], 0, sizeof m->levels[i]);
    m->n_levels = n;
    ps_machine_note(m, "caches set by %s: %s", source, list);
}

ps_status ps_machine_override_caches(ps_machine *m, const size_t *sizes, int n, const char *source)
{
    if (!m || !sizes || !source)
        return ps_error(PS_ERR_NULL_POINTER, "ps_machine_override_caches: NULL argument");
    if (n < 1 || n > PS_MAX_CACHE_LEVELS)
        return ps_error(PS_ERR_INVALID_ARG, "cache override: %d levels given, expected 1..%d",
                        n, PS_MAX_CACHE_LEVELS);
    for (int i = 0; i < n; i++) {
        if (sizes[i] == 0)
            return ps_error(PS_ERR_INVALID_ARG, "cache override: L%d size is 0", i + 1);
        if (i > 0 && sizes[i] <= sizes[i - 1])
            return ps_error(PS_ERR_INVALID_ARG,
                            "cache override: L%d (%zu bytes) is not larger than L%d (%zu bytes)",
                            i + 1, sizes[i], i, sizes[i - 1]);
    }
    apply_override(m, sizes, n, source);
    /* The profile is keyed by the sizes, so the old values may not apply. */
    const char *perf_before = m->perf_source;
    ps_machine_perf_table(m);
    if (ps_machine_calibrate_mode(m) != 0 && !ps_machine_load_profile(m) && perf_before &&
        strcmp(perf_before, "table") != 0)
        ps_machine_note(m, "latency/bandwidth reset to the table for the new cache sizes");
    return PS_SUCCESS;
}

/* ------------------------------------------------------------ clock, peak */

/* Core clock in GHz; *source is its ps_machine.freq_source, *how says more
 * for the notes. 0 when nothing is known. */
static double read_freq_ghz(int cpu, const cpu_ident *id, const ps_machine *m, const char **source, const char **how)
{
    char path[96], val[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", cpu);
    if (read_small_file(path, val, sizeof val) > 0) {
        double khz = 0;
        const char *p = val;
        if (ps_machine_parse_decimal(&p, &khz) && khz > 1e5) {
            *source = "sysfs";
            *how = "sysfs cpuinfo_max_freq";
            return khz / 1e6;
        }
    }
    if (cpuinfo_value("cpu MHz", val, sizeof val)) {
        double mhz = 0;
        const char *p = val;
        if (ps_machine_parse_decimal(&p, &mhz) && mhz > 100) {
            *source = "cpuinfo";
            *how = id->hypervisor ? "/proc/cpuinfo under a hypervisor: usually the TSC rate, not the core clock"
                                  : "/proc/cpuinfo cpu MHz";
            return mhz / 1e3;
        }
    }
    const char *at = strstr(m->cpu_name, "@ ");
    if (at) {
        const char *p = at + 2;
        double ghz = 0;
        if (ps_machine_parse_decimal(&p, &ghz) && strncmp(p, "GHz", 3) == 0 && ghz > 0.1) {
            *source = "brand";
            *how = "brand string";
            return ghz;
        }
    }
    *source = "default";
    *how = "unknown";
    return 0;
}

/* FMA instructions issued per cycle and their f32 lanes, from the ISA
 * (CPUID feature flags) and the vendor's family/model where the datapath is
 * narrower than the ISA: Zen 4 (family 0x19 with AVX-512; Zen 3, the same
 * family, has none) runs a 512-bit FMA over its two 256-bit pipes, one per
 * cycle, as measured (32 flop/cycle); Zen 5 has 512-bit pipes except in its
 * mobile parts (models 0x20-0x2f, 0x60-0x6f); Zen 1 (family 0x17 below model
 * 0x30) splits 256-bit FMAs over 128-bit pipes. */
static void fma_shape(const cpu_ident *id, int *pipes, int *lanes, const char **what)
{
#if PS_X86
    int amd = strcmp(id->vendor, "AuthenticAMD") == 0;
    if (__builtin_cpu_supports("avx512f")) {
        *lanes = 16;
        *pipes = 2;
        *what = "AVX-512, two 512-bit FMAs per cycle";
        if (amd && id->family == 0x19) {
            *pipes = 1;
            *what = "AVX-512 on Zen 4: one 512-bit FMA per cycle over two 256-bit pipes";
        }
        if (amd && id->family == 0x1a && ((id->model >= 0x20 && id->model <= 0x2f) || (id->model >= 0x60 && id->model <= 0x6f))) {
            *pipes = 1; *what = "AVX-512 on mobile Zen 5: 256-bit datapath";
        }
        return;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *lanes = 8;
        *pipes = amd && id->family == 0x17 && id->model < 0x30 ? 1 : 2;
        *what = *pipes == 1 ? "AVX2 on Zen 1: 128-bit pipes" : "AVX2, two 256-bit FMAs per cycle";
        return;
    }
    *lanes = 4; *pipes = 1; *what = "SSE, no FMA";
#else
    (void)id;
    *lanes = 4; *pipes = 2; *what = "unknown ISA: assumed 2 x 128-bit FMA";
#endif
}

/* The table's peak and clock; what they rest on in `text`, for the notes. */
static void estimate_peak(ps_machine *m, const cpu_ident *id, int cpu, char *text, size_t len)
{
    const char *how, *what;
    fma_shape(id, &m->fma_units, &m->simd_f32_lanes, &what);
    double ghz = read_freq_ghz(cpu, id, m, &m->freq_source, &how);
    if (ghz <= 0) { ghz = 3.0; how = "unknown, assumed 3.0 GHz"; }
    m->freq_ghz = ghz;
    m->peak_gflops_core = m->fma_units * m->simd_f32_lanes * 2.0 * ghz;
    m->peak_source = "table";
    ps_machine_stencil_table(m);
    char g[24], p[24];
    ps_machine_fmt_fixed(ghz, 3, g, sizeof g);
    ps_machine_fmt_fixed(m->peak_gflops_core, 1, p, sizeof p);
    snprintf(text, len, "peak %s GFLOP/s/core from the table = %d FMA(s) x %d lanes x 2 x %s GHz (%s; clock from %s)",
             p, m->fma_units, m->simd_f32_lanes, g, what, how);
}

/* ---------------------------------------------------------------- detect */

static int first_allowed_cpu(int *count)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    *count = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    *count = CPU_COUNT(&set);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) return i;
    return 0;
}

ps_status ps_machine_detect_from(ps_machine *m, struct hwloc_topology *topology)
{
    if (!m) return ps_error(PS_ERR_NULL_POINTER, "ps_machine_detect: m is NULL");
    memset(m, 0, sizeof *m);
    cpu_ident id;
    identify_cpu(m, &id);

    ps_cache_report rep[3];
    memset(rep, 0, sizeof rep);
    int n_aff = 0;
    int cpu = first_allowed_cpu(&n_aff);
    if (topology) {
        hwloc_report(m, topology, &rep[0], &cpu);
    } else {
        rep[0].source = "hwloc";
        ps_machine_note(m, "hwloc: not used; cores from sysfs thread siblings");
    }
    if (m->n_pus <= 0) m->n_pus = n_aff > 0 ? n_aff : 1;
    if (m->n_cores <= 0) {
        /* Without hwloc: assume every core has as many threads as ours. */
        char path[96], val[256];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
        int smt = read_small_file(path, val, sizeof val) > 0 ? count_cpu_list(val) : 1;
        m->n_cores = smt > 1 ? (m->n_pus + smt - 1) / smt : m->n_pus;
    }
    sysfs_report(m, cpu, &rep[1]);
    cpuid_report(m, &id, &rep[2]);
    ps_machine_resolve_caches(m, rep, 3);

    ps_status st = PS_SUCCESS;
    const char *env = getenv("PS_CACHE_SIZES");
    if (env && *env) {
        size_t sizes[PS_MAX_CACHE_LEVELS];
        int n = 0;
        st = ps_machine_parse_cache_sizes(env, sizes, &n);
        if (st == PS_SUCCESS) apply_override(m, sizes, n, "env");
        else ps_machine_note(m, "PS_CACHE_SIZES ignored: malformed");
    }

    /* The table first; a profile replaces what it measured (a profile
     * without a clock keeps the table's). */
    const char *row = ps_machine_perf_table(m);
    char peak_text[400];
    estimate_peak(m, &id, cpu, peak_text, sizeof peak_text);
    int mode = ps_machine_calibrate_mode(m);
    if (mode == 0 || !ps_machine_load_profile(m)) {
        ps_machine_note(m, "%s", peak_text);
        ps_machine_note(m, "latency/bandwidth: built-in table, %s row (%s)", row,
                        mode == 0 ? "PS_CALIBRATE=0" : "no profile yet; polysci info --calibrate measures");
    }
    return st;
}

ps_status ps_machine_detect(ps_machine *m)
{
    if (!m) return ps_error(PS_ERR_NULL_POINTER, "ps_machine_detect: m is NULL");
    hwloc_topology_t topo = NULL;
    int ok = hwloc_topology_init(&topo) == 0;
    if (ok) {
        /* Never move the caller's thread: hwloc's x86 backend would bind it
         * to every PU in turn (slow on a loaded machine, and a side effect
         * on an application thread); our own CPUID reader covers what that
         * backend adds where sysfs has no cache information. */
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING);
        /* Only caches, cores and PUs: halves the load time. */
        hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
        hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
        hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
        hwloc_topology_set_type_filter(topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
        ok = hwloc_topology_load(topo) == 0;
    }
    ps_status st = ps_machine_detect_from(m, ok ? topo : NULL);
    if (topo) hwloc_topology_destroy(topo);
    return st;
}

/* ------------------------------------------------------------------ JSON */

typedef struct jbuf {
    char *buf;
    size_t len, pos; /* pos counts every byte asked for, like snprintf */
} jbuf;

static void jput(jbuf *j, const char *s, size_t n)
{
    if (j->pos < j->len) {
        size_t room = j->len - 1 - j->pos;
        size_t k = n < room ? n : room;
        memcpy(j->buf + j->pos, s, k);
        j->buf[j->pos + k] = '\0';
    }
    j->pos += n;
}

static void jstr(jbuf *j, const char *s) { jput(j, s, strlen(s)); }

/* Length of a valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (n == 0 || s[0] >= 0xf8) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

static void jquote(jbuf *j, const char *s)
{
    jput(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ) {
        char esc[8];
        if (*p == '"' || *p == '\\') { esc[0] = '\\'; esc[1] = (char)*p; jput(j, esc, 2); p++; }
        else if (*p == '\n') { jput(j, "\\n", 2); p++; }
        else if (*p == '\t') { jput(j, "\\t", 2); p++; }
        else if (*p < 0x20 || *p == 0x7f) { snprintf(esc, sizeof esc, "\\u%04x", *p); jstr(j, esc); p++; }
        else if (*p < 0x80) { jput(j, (const char *)p, 1); p++; }
        else {
            int n = utf8_len(p);
            if (n) { jput(j, (const char *)p, (size_t)n); p += n; }
            else { jstr(j, "\\ufffd"); p++; } /* invalid byte: JSON must be UTF-8 */
        }
    }
    jput(j, "\"", 1);
}

static void jnum(jbuf *j, double v, int decimals)
{
    char t[40];
    ps_machine_fmt_fixed(v, decimals, t, sizeof t);
    jstr(j, t);
}

static void jint(jbuf *j, long long v)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", v);
    jstr(j, t);
}

int ps_machine_to_json(const ps_machine *m, char *buf, size_t len)
{
    jbuf j = {buf, len, 0};
    if (buf && len) buf[0] = '\0';
    if (!buf) j.len = 0;
    if (!m) { jstr(&j, "null"); return (int)j.pos; }
    jstr(&j, "{\"caches\": [");
    for (int i = 0; i < m->n_levels && i < PS_MAX_CACHE_LEVELS; i++) {
        const ps_cache_level *c = &m->levels[i];
        jstr(&j, i ? ", {\"level\": " : "{\"level\": ");
        jint(&j, c->level);
        jstr(&j, ", \"size_bytes\": ");
        jint(&j, (long long)c->size_bytes);
        jstr(&j, ", \"line_bytes\": ");
        jint(&j, c->line_bytes);
        jstr(&j, ", \"shared_by\": ");
        jint(&j, c->shared_by);
        jstr(&j, ", \"source\": ");
        jquote(&j, c->source ? c->source : "unknown");
        jstr(&j, ", \"latency_ns\": ");
        jnum(&j, c->latency_ns, 2);
        jstr(&j, ", \"bandwidth_gbs\": ");
        jnum(&j, c->bandwidth_gbs, 1);
        jstr(&j, ", \"perf_source\": ");
        jquote(&j, m->perf_source ? m->perf_source : "unknown");
        jstr(&j, "}");
    }
    jstr(&j, "], \"cores\": ");
    jint(&j, m->n_cores);
    jstr(&j, ", \"pus\": ");
    jint(&j, m->n_pus);
    jstr(&j, ", \"memory\": {\"latency_ns\": ");
    jnum(&j, m->mem_latency_ns, 2);
    jstr(&j, ", \"bandwidth_gbs\": ");
    jnum(&j, m->mem_bandwidth_gbs, 1);
    jstr(&j, ", \"perf_source\": ");
    jquote(&j, m->perf_source ? m->perf_source : "unknown");
    jstr(&j, "}, \"peak_gflops_per_core\": ");
    jnum(&j, m->peak_gflops_core, 1);
    jstr(&j, ", \"stencil_gflops_per_core\": {\"l1\": ");
    jnum(&j, m->stencil_gflops[0], 1);
    jstr(&j, ", \"l2\": ");
    jnum(&j, m->stencil_gflops[1], 1);
    jstr(&j, "}, \"freq_ghz\": ");
    jnum(&j, m->freq_ghz, 3);
    jstr(&j, ", \"freq_source\": ");
    jquote(&j, m->freq_source ? m->freq_source : "unknown");
    jstr(&j, ", \"fma_units\": ");
    jint(&j, m->fma_units);
    jstr(&j, ", \"simd_f32_lanes\": ");
    jint(&j, m->simd_f32_lanes);
    jstr(&j, ", \"perf_source\": ");
    jquote(&j, m->perf_source ? m->perf_source : "unknown");
    jstr(&j, ", \"peak_source\": ");
    jquote(&j, m->peak_source ? m->peak_source : "unknown");
    jstr(&j, ", \"cpu\": ");
    jquote(&j, m->cpu_name);
    jstr(&j, ", \"notes\": ");
    jquote(&j, m->notes);
    jstr(&j, "}");
    return j.pos > INT_MAX ? INT_MAX : (int)j.pos;
}
