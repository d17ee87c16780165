/* polysci CLI — timing, buffers, error reporting. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void *cli_alloc(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - 63) return NULL;
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

int cli_mul_size(size_t *out, const int64_t *f, int n)
{
    size_t r = 1;
    for (int i = 0; i < n; i++) {
        if (f[i] < 0 || (f[i] != 0 && r > SIZE_MAX / (uint64_t)f[i])) return 0;
        r *= (size_t)f[i];
    }
    /* Leave room for byte counts of float/double arrays. */
    if (r > SIZE_MAX / 16) return 0;
    *out = r;
    return 1;
}

uint64_t cli_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void cli_fill_random(float *v, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((double)(cli_splitmix64(&s) >> 40) * (2.0 / 16777216.0) - 1.0); /* 24 bits, exact in f32 */
}

void cli_fill_nan(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) v[i] = NAN;
}

int cli_report_status(const char *what, ps_status st)
{
    const char *msg = ps_last_error_message();
    fprintf(stderr, "polysci: %s failed: %s%s%s\n", what, ps_status_str(st), msg && *msg ? ": " : "",
            msg ? msg : "");
    return CLI_FAIL;
}

char *cli_plan_describe(const ps_plan *plan)
{
    size_t len = 4096;
    for (int attempt = 0; attempt < 4; attempt++) {
        char *buf = malloc(len);
        if (!buf) return NULL;
        size_t needed = 0;
        ps_status st = ps_plan_describe(plan, buf, len, &needed);
        if (st == PS_SUCCESS && needed < len) return buf;
        free(buf);
        if (st != PS_SUCCESS && st != PS_ERR_BUFFER_TOO_SMALL) {
            cli_report_status("ps_plan_describe", st);
            return NULL;
        }
        len = needed >= len ? needed + 1 : len * 2;
    }
    return NULL;
}

void cli_schedule_text(const ps_schedule *sched, ps_op_kind kind, char *buf, size_t len)
{
    if (!sched || ps_schedule_format(sched, kind, buf, len, NULL) != PS_SUCCESS) snprintf(buf, len, "?");
}

void cli_plan_schedule_text(const ps_plan *plan, char *buf, size_t len)
{
    const ps_desc *d = ps_plan_get_desc(plan);
    if (!d) {
        snprintf(buf, len, "?");
        return;
    }
    cli_schedule_text(ps_plan_get_schedule(plan), d->kind, buf, len);
}

int cli_context_create(int threads, ps_context **ctx)
{
    ps_context_options copts;
    ps_context_options_init(&copts);
    copts.num_threads = threads;
    ps_status st = ps_context_create(&copts, ctx);
    return st == PS_SUCCESS ? CLI_OK : cli_report_status("ps_context_create", st);
}

int cli_progress_enabled(void) { return isatty(STDERR_FILENO); }

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

int cli_dispatch_op(const char *cmd, const char *usage, int argc, char **argv,
                    int (*op)(ps_op_kind kind, int argc, char **argv))
{
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "conv")) return op(PS_OP_CONV_FWD, argc - 1, argv + 1);
    if (!strcmp(argv[1], "gemm")) return op(PS_OP_GEMM, argc - 1, argv + 1);
    fprintf(stderr, "polysci %s: unknown operation '%s'\n", cmd, argv[1]);
    fputs(usage, stderr);
    return CLI_USAGE;
}

int cli_split_list(char *text, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(text, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) items[n++] = t;
    return n;
}

double cli_json_number(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    p += strlen(pat);
    while (*p == ' ') p++;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

int cli_json_text(const char *line, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (len) out[0] = '\0';
    if (!p || !len) return -1;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != '"') return -1;
    size_t k = 0;
    for (p++; *p && *p != '"' && k + 1 < len; p++) {
        if (*p == '\\' && p[1]) p++;
        out[k++] = *p;
    }
    out[k] = '\0';
    return 0;
}

int cli_run_json(const char *cmd, char *line, size_t len, int *exit_code)
{
    if (exit_code) *exit_code = -1;
    line[0] = '\0';
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char buf[65536];
    while (fgets(buf, sizeof buf, f))
        if (buf[0] == '{') snprintf(line, len, "%s", buf);
    int st = pclose(f);
    int code = st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
    if (exit_code) *exit_code = code;
    return code == 0 && line[0] ? 0 : -1;
}

int cli_self_exe(const char *cmd, char *path, size_t len)
{
    ssize_t n = len > 1 ? readlink("/proc/self/exe", path, len - 1) : -1;
    if (n <= 0 || (size_t)n >= len - 1) {
        fprintf(stderr, "polysci %s: cannot find this executable\n", cmd);
        return -1;
    }
    path[n] = '\0';
    return 0;
}

int cli_source_file(const char *rel, char *path, size_t len)
{
#ifdef POLYSCI_SOURCE_DIR
    snprintf(path, len, "%s/%s", POLYSCI_SOURCE_DIR, rel);
    return access(path, R_OK) == 0 ? 0 : -1;
#else
    snprintf(path, len, "%s", rel);
    return -1;
#endif
}
