/* White-box test of lib/machine: cache resolution rules, PS_CACHE_SIZES,
 * overrides, JSON, profile file handling, calibration, detect time. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "machine/machine.h"
#include "machine/machine_internal.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

#define K ((size_t)1024)
#define M (K * K)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void test_parse(void)
{
    size_t s[PS_MAX_CACHE_LEVELS];
    int n = -1;
    CHECK(ps_machine_parse_cache_sizes("48K,1M,32M", s, &n) == PS_SUCCESS);
    CHECK(n == 3 && s[0] == 48 * K && s[1] == M && s[2] == 32 * M);
    CHECK(ps_machine_parse_cache_sizes(" 32k , 1MiB ,1GB ", s, &n) == PS_SUCCESS);
    CHECK(n == 3 && s[0] == 32 * K && s[1] == M && s[2] == 1024 * M);
    CHECK(ps_machine_parse_cache_sizes("65536", s, &n) == PS_SUCCESS && n == 1 && s[0] == 65536);
    const char *bad[] = {"", "48K,,32M", "48X", "1.5M", "0", "1M,512K", "1K,2K,3K,4K,5K",
                         "99999999999999999999999", "48K;1M", "K", "48K,", "-1K"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ps_status st = ps_machine_parse_cache_sizes(bad[i], s, &n);
        if (st != PS_ERR_PARSE) fprintf(stderr, "accepted bad list \"%s\"\n", bad[i]);
        CHECK(st == PS_ERR_PARSE);
        CHECK(strstr(ps_last_error_message(), "entry") || strstr(ps_last_error_message(), "levels"));
    }
}

static void test_plausible(void)
{
    char why[128];
    CHECK(ps_machine_cache_plausible(1, 48 * K, 0, why, sizeof why));
    CHECK(!ps_machine_cache_plausible(1, 4 * K, 0, why, sizeof why) && strstr(why, "minimum"));
    CHECK(!ps_machine_cache_plausible(3, 508 * M, M, why, sizeof why) && strstr(why, "maximum"));
    CHECK(ps_machine_cache_plausible(3, 96 * M, M, why, sizeof why)); /* 3D V-Cache CCD */
    CHECK(!ps_machine_cache_plausible(2, 128 * K, 256 * K, why, sizeof why) && strstr(why, "level below"));
    CHECK(!ps_machine_cache_plausible(5, 1 * M, 0, why, sizeof why));
}

static void test_resolve(void)
{
    ps_machine m;
    /* This VM: hwloc and CPUID report a 508 MiB L3, sysfs nothing. */
    ps_cache_report r[3] = {
        {"hwloc", {48 * K, M, 508 * M, 0}, {64, 64, 64, 0}, {1, 1, 1, 0}},
        {"sysfs", {0}, {0}, {0}},
        {"cpuid", {48 * K, M, 508 * M, 0}, {64, 64, 64, 0}, {1, 1, 0, 0}},
    };
    memset(&m, 0, sizeof m);
    m.n_pus = 2;
    ps_machine_resolve_caches(&m, r, 3);
    CHECK(m.n_levels == 3);
    CHECK(m.levels[0].size_bytes == 48 * K && strcmp(m.levels[0].source, "hwloc") == 0);
    CHECK(m.levels[1].size_bytes == M && strcmp(m.levels[1].source, "hwloc") == 0);
    CHECK(m.levels[2].size_bytes == 32 * M && strcmp(m.levels[2].source, "default") == 0);
    CHECK(m.levels[2].shared_by == 2 && m.levels[2].line_bytes == 64);
    CHECK(strstr(m.notes, "L3 from hwloc rejected") && strstr(m.notes, "L3 from cpuid rejected"));

    /* hwloc lacks L2 and has a bad line size; sysfs disagrees on L1. */
    ps_cache_report r2[2] = {
        {"hwloc", {32 * K, 0, 16 * M, 0}, {0, 0, 48, 0}, {2, 0, 8, 0}},
        {"sysfs", {48 * K, 2 * M, 16 * M, 0}, {64, 64, 64, 0}, {2, 2, 8, 0}},
    };
    memset(&m, 0, sizeof m);
    m.n_pus = 8;
    ps_machine_resolve_caches(&m, r2, 2);
    CHECK(m.n_levels == 3);
    CHECK(m.levels[0].size_bytes == 32 * K && strcmp(m.levels[0].source, "hwloc") == 0);
    CHECK(m.levels[0].line_bytes == 64 && m.levels[0].shared_by == 2);
    CHECK(m.levels[1].size_bytes == 2 * M && strcmp(m.levels[1].source, "sysfs") == 0);
    CHECK(m.levels[2].line_bytes == 64 && strstr(m.notes, "line size 48"));
    CHECK(strstr(m.notes, "L1: sysfs says 48K, hwloc says 32K"));

    /* Nothing at all: three default levels. L2 reported below L1: rejected. */
    memset(&m, 0, sizeof m);
    m.n_pus = 4;
    ps_machine_resolve_caches(&m, NULL, 0);
    CHECK(m.n_levels == 3 && m.levels[0].size_bytes == 32 * K && m.levels[1].size_bytes == M &&
          m.levels[2].size_bytes == 32 * M && m.levels[2].shared_by == 4);
    ps_cache_report r3[1] = {{"hwloc", {256 * K, 128 * K, 0, 0}, {64, 64, 0, 0}, {1, 1, 0, 0}}};
    memset(&m, 0, sizeof m);
    m.n_pus = 1;
    ps_machine_resolve_caches(&m, r3, 1);
    CHECK(m.n_levels == 2 && strcmp(m.levels[1].source, "default") == 0 && m.levels[1].size_bytes == M);
}

static void test_override_and_env(void)
{
    ps_machine m;
    unsetenv("PS_CACHE_SIZES");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS);
    ps_machine before = m;
    size_t bad1[3] = {48 * K, 48 * K, M}, zero[1] = {0}, good[2] = {64 * K, 4 * M};
    CHECK(ps_machine_override_caches(&m, bad1, 3, "api") == PS_ERR_INVALID_ARG);
    CHECK(ps_machine_override_caches(&m, zero, 1, "api") == PS_ERR_INVALID_ARG);
    CHECK(ps_machine_override_caches(&m, good, 0, "api") == PS_ERR_INVALID_ARG);
    CHECK(ps_machine_override_caches(&m, good, 5, "api") == PS_ERR_INVALID_ARG);
    CHECK(memcmp(&m, &before, sizeof m) == 0);
    CHECK(ps_machine_override_caches(&m, good, 2, "api") == PS_SUCCESS);
    CHECK(m.n_levels == 2 && m.levels[1].size_bytes == 4 * M && strcmp(m.levels[1].source, "api") == 0);
    CHECK(m.levels[1].latency_ns > 0 && m.levels[1].bandwidth_gbs > 0);

    setenv("PS_CACHE_SIZES", "48K,2M,16M", 1);
    CHECK(ps_machine_detect(&m) == PS_SUCCESS);
    CHECK(m.n_levels == 3 && m.levels[1].size_bytes == 2 * M && m.levels[2].size_bytes == 16 * M);
    CHECK(strcmp(m.levels[0].source, "env") == 0 && strcmp(m.levels[2].source, "env") == 0);
    setenv("PS_CACHE_SIZES", "48K,1M", 1); /* the whole hierarchy: L3 dropped */
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && m.n_levels == 2);
    setenv("PS_CACHE_SIZES", "48K,2Q", 1);
    CHECK(ps_machine_detect(&m) == PS_ERR_PARSE);
    CHECK(strstr(ps_last_error_message(), "entry 2"));
    CHECK(m.n_levels >= 1 && m.n_cores >= 1 && m.levels[0].size_bytes > 0); /* still filled */
    unsetenv("PS_CACHE_SIZES");
}

static void test_notes(void)
{
    ps_machine m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 200; i++) ps_machine_note(&m, "note number %d", i);
    size_t n = strlen(m.notes);
    CHECK(n < sizeof m.notes && n > sizeof m.notes - 40);
    CHECK(strcmp(m.notes + n - 3, "...") == 0);
    CHECK(strncmp(m.notes, "note number 0; note number 1", 28) == 0);
}

static void test_json(void)
{
    ps_machine m;
    CHECK(ps_machine_detect(&m) == PS_SUCCESS);
    snprintf(m.cpu_name, sizeof m.cpu_name, "A \"quoted\" \\ name\x01\xff");
    int need = ps_machine_to_json(&m, NULL, 0);
    CHECK(need > 100);
    char *buf = malloc((size_t)need + 1);
    CHECK(ps_machine_to_json(&m, buf, (size_t)need + 1) == need && (int)strlen(buf) == need);
    CHECK(strstr(buf, "\"cpu\": \"A \\\"quoted\\\" \\\\ name\\u0001\\ufffd\""));
    CHECK(strstr(buf, "{\"caches\": [{\"level\": 1, \"size_bytes\": "));
    CHECK(strstr(buf, "\"memory\": {\"latency_ns\": ") && strstr(buf, "\"peak_gflops_per_core\": "));
    CHECK(buf[need - 1] == '}');
    char small[16];
    CHECK(ps_machine_to_json(&m, small, sizeof small) == need && strlen(small) == sizeof small - 1);
    free(buf);
}

static int file_exists(const char *p) { return access(p, F_OK) == 0; }

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    if (f) { fputs(text, f); fclose(f); }
}

static void test_profile_and_calibration(void)
{
    char dir[] = "/tmp/ps_machine_test_XXXXXX", path[700];
    if (!mkdtemp(dir)) { CHECK(0); return; }
    setenv("XDG_CACHE_HOME", dir, 1);
    ps_machine m;

    setenv("PS_CALIBRATE", "0", 1);
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strcmp(m.perf_source, "table") == 0);
    CHECK(ps_machine_calibrate(&m, 1) == PS_SUCCESS && strcmp(m.perf_source, "table") == 0);
    CHECK(ps_machine_profile_path(&m, path, sizeof path) > 0 && strncmp(path, dir, strlen(dir)) == 0);
    CHECK(!file_exists(path));

    setenv("PS_CALIBRATE", "1", 1);
    CHECK(ps_machine_calibrate(&m, 0) == PS_SUCCESS && strcmp(m.perf_source, "calibrated") == 0);
    CHECK(!file_exists(path)); /* use_profile_file = 0 touches no file */
    double t0 = now_ms();
    CHECK(ps_machine_calibrate(&m, 1) == PS_SUCCESS && strcmp(m.perf_source, "calibrated") == 0);
    double t_cal = now_ms() - t0;
    printf("calibrate: %.1f ms\n", t_cal);
    CHECK(t_cal < 1000);
    CHECK(file_exists(path));
    for (int i = 0; i < m.n_levels; i++) {
        printf("  L%d %7.2f ns %7.1f GB/s\n", i + 1, m.levels[i].latency_ns, m.levels[i].bandwidth_gbs);
        CHECK(m.levels[i].latency_ns > 0 && m.levels[i].bandwidth_gbs > 0);
        if (i) CHECK(m.levels[i].latency_ns >= m.levels[i - 1].latency_ns &&
                     m.levels[i].bandwidth_gbs <= m.levels[i - 1].bandwidth_gbs);
    }
    printf("  mem %6.2f ns %7.1f GB/s; peak %.1f GFLOP/s/core at %.3f GHz, %d FMA pipes\n",
           m.mem_latency_ns, m.mem_bandwidth_gbs, m.peak_gflops_core, m.freq_ghz, m.fma_units);
    CHECK(m.peak_gflops_core > 1 && strcmp(m.peak_source, "measured") == 0);
    ps_machine cal = m;

    /* detect picks the profile up, with identical values (3 decimals). */
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strcmp(m.perf_source, "profile") == 0);
    CHECK(strcmp(m.peak_source, "profile") == 0);
    CHECK(m.mem_latency_ns > cal.mem_latency_ns - 0.001 && m.mem_latency_ns < cal.mem_latency_ns + 0.001);
    CHECK(m.peak_gflops_core > cal.peak_gflops_core - 0.001 && m.peak_gflops_core < cal.peak_gflops_core + 0.001);
    /* ... and calibrate with the file does not measure again. */
    CHECK(ps_machine_calibrate(&m, 1) == PS_SUCCESS && strcmp(m.perf_source, "profile") == 0);

    /* Corrupt and stale files are ignored with a note. */
    write_file(path, "polysci-machine-profile 1\ncpu x\ngarbage\n");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strcmp(m.perf_source, "table") == 0);
    CHECK(strstr(m.notes, "stale")); /* the cpu line comes first and does not match */
    write_file(path, "polysci-machine-profile 1\ngarbage\n");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strcmp(m.perf_source, "table") == 0);
    CHECK(strstr(m.notes, "corrupt at line 2"));
    write_file(path, "polysci-machine-profile 99\n");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strstr(m.notes, "stale"));
    write_file(path, "polysci-machine-profile 1\n");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strstr(m.notes, "incomplete"));
    write_file(path, "");
    CHECK(ps_machine_detect(&m) == PS_SUCCESS && strcmp(m.perf_source, "table") == 0);

    /* force re-measures even with a valid profile. */
    CHECK(ps_machine_calibrate(&m, 1) == PS_SUCCESS && strcmp(m.perf_source, "calibrated") == 0);
    setenv("PS_CALIBRATE", "force", 1);
    CHECK(ps_machine_calibrate(&m, 1) == PS_SUCCESS && strcmp(m.perf_source, "calibrated") == 0);
    unsetenv("PS_CALIBRATE");

    unlink(path);
    rmdir(strcat(strcpy(path, dir), "/polysci"));
    rmdir(dir);
    unsetenv("XDG_CACHE_HOME");
}

/* The streaming-store threshold follows the L3 and its speed relative to memory. */
static void test_stream_bytes(void)
{
    ps_machine m;
    memset(&m, 0, sizeof m);
    m.n_levels = 2;
    m.levels[0] = (ps_cache_level){.level = 1, .size_bytes = 48 * K, .bandwidth_gbs = 300};
    m.levels[1] = (ps_cache_level){.level = 2, .size_bytes = 2 * M, .bandwidth_gbs = 150};
    m.mem_bandwidth_gbs = 24.4;
    CHECK(ps_machine_stream_bytes(&m) == 0); /* no L3: never stream */
    m.n_levels = 3;
    m.levels[2] = (ps_cache_level){.level = 3, .size_bytes = 32 * M, .bandwidth_gbs = 105};
    CHECK(ps_machine_stream_bytes(&m) == 32 * M); /* fast L3: what does not fit in it */
    CHECK(!ps_machine_llc_slow(&m) && ps_machine_panel_bytes(&m) == 0); /* panels only where both operands exceed */
    m.levels[2].bandwidth_gbs = 30;
    CHECK(ps_machine_llc_slow(&m));
    CHECK(ps_machine_stream_bytes(&m) == 8 * M); /* L3 under 2x memory's bandwidth: a quarter */
    CHECK(ps_machine_panel_bytes(&m) == 16 * M);  /* and panels for one operand of half of it */
    m.levels[2].bandwidth_gbs = 48.8;             /* exactly twice: fast */
    CHECK(!ps_machine_llc_slow(&m) && ps_machine_stream_bytes(&m) == 32 * M);
}

/* The built-in table's rows: Intel Xeons (mesh L3, about memory's speed per
 * core) and the default (an L3 several times faster than memory). */
static void test_table_rows(void)
{
    static const struct {
        const char *key, *name, *row;
        int slow;
    } cases[] = {
        {"GenuineIntel-6-a7-1", "Intel(R) Xeon(R) Processor", "Intel Xeon", 1},
        {"GenuineIntel-6-8f-8", "Intel(R) Xeon(R) Platinum 8480+", "Intel Xeon", 1},
        {"GenuineIntel-6-b7-1", "13th Gen Intel(R) Core(TM) i9-13900K", "default", 0},
        {"AuthenticAMD-1a-2-0", "AMD EPYC 9B45 128-Core Processor", "default", 0},
        {"aarch64", "unknown CPU", "default", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_machine m;
        memset(&m, 0, sizeof m);
        m.n_levels = 3;
        for (int l = 0; l < 3; l++) m.levels[l] = (ps_cache_level){.level = l + 1, .size_bytes = (size_t)64 << (6 * l)};
        snprintf(m.cpu_key, sizeof m.cpu_key, "%s", cases[i].key);
        snprintf(m.cpu_name, sizeof m.cpu_name, "%s", cases[i].name);
        const char *row = ps_machine_perf_table(&m);
        CHECK(row && !strcmp(row, cases[i].row));
        CHECK(!strcmp(m.perf_source, "table"));
        CHECK(ps_machine_llc_slow(&m) == cases[i].slow);
        CHECK(m.levels[0].bandwidth_gbs > m.levels[1].bandwidth_gbs && m.levels[1].bandwidth_gbs > m.levels[2].bandwidth_gbs);
        CHECK(m.levels[2].bandwidth_gbs > m.mem_bandwidth_gbs && m.mem_latency_ns > m.levels[2].latency_ns);
    }
}

static void test_detect_time(void)
{
    ps_machine m;
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = now_ms();
        CHECK(ps_machine_detect(&m) == PS_SUCCESS);
        double t = now_ms() - t0;
        if (t < best) best = t;
    }
    printf("detect: best of 5 %.2f ms (hwloc plugin loading included)\n", best);
    double t0 = now_ms();
    CHECK(ps_machine_detect_from(&m, NULL) == PS_SUCCESS);
    printf("detect without hwloc: %.3f ms\n", now_ms() - t0);
    CHECK(m.n_cores >= 1 && m.n_pus >= m.n_cores && m.n_levels >= 1);
}

int main(void)
{
    unsetenv("PS_CALIBRATE");
    unsetenv("PS_CACHE_SIZES");
    test_parse();
    test_plausible();
    test_resolve();
    test_override_and_env();
    test_notes();
    test_json();
    test_profile_and_calibration();
    test_detect_time();
    test_stream_bytes();
    test_table_rows();
    if (failures) { fprintf(stderr, "%d failure(s)\n", failures); return 1; }
    printf("test_machine: all passed\n");
    return 0;
}
