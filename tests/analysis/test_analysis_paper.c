/* The paper's running example (PolyScientist, Figure 4 / §5.1): for the
 * matmul with loops i, j, k the dependence on A has WSmin = 2K+3 and
 * WSmax = N*K+N+1 (source S[0,0,0], first target S[0,1,0], last target
 * S[0,N-1,0]), with both the closed form and Algorithm 1 run by isl. Every
 * dependence of every loop order is also checked against the brute-force
 * simulator, and the public API (accessors, JSON, errors) is exercised. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polysci/analysis.h"
#include "sim.h"

static int failures;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
            failures++;                                                   \
        }                                                                 \
    } while (0)

static int find_dep(const ps_analysis *a, const char *array, const char *kind)
{
    for (int i = 0; i < ps_analysis_num_dependences(a); i++)
        if (!strcmp(ps_analysis_dep_array(a, i), array) && !strcmp(ps_analysis_dep_kind(a, i), kind)) return i;
    return -1;
}

/* The paper's numbers for A, and the dependence's iterations in the JSON. */
static void check_paper(int64_t M, int64_t N, int64_t K, ps_analysis_method method)
{
    ps_analysis_options o;
    ps_analysis_options_init(&o);
    o.method = method;
    ps_analysis *a = NULL;
    ps_status st = ps_analysis_create_matmul(M, N, K, "ijk", &o, &a);
    CHECK(st == PS_SUCCESS, "create_matmul(%" PRId64 ",%" PRId64 ",%" PRId64 "): %s", M, N, K, ps_last_error_message());
    if (st) return;
    int i = find_dep(a, "A", "RAR");
    if (N < 2) {
        CHECK(i < 0, "N = 1: A is never reused, yet a dependence was reported");
    } else {
        CHECK(i >= 0, "no RAR dependence on A for M%" PRId64 " N%" PRId64 " K%" PRId64, M, N, K);
        if (i >= 0) {
            CHECK(ps_analysis_dep_ws_min(a, i) == 2 * K + 3, "M%" PRId64 " N%" PRId64 " K%" PRId64 " (%s): WSmin %" PRId64
                  ", paper 2K+3 = %" PRId64, M, N, K, method ? "isl" : "fast", ps_analysis_dep_ws_min(a, i), 2 * K + 3);
            CHECK(ps_analysis_dep_ws_max(a, i) == N * K + N + 1, "M%" PRId64 " N%" PRId64 " K%" PRId64 " (%s): WSmax %" PRId64
                  ", paper NK+N+1 = %" PRId64, M, N, K, method ? "isl" : "fast", ps_analysis_dep_ws_max(a, i),
                  N * K + N + 1);
            CHECK(ps_analysis_dep_ws_min_bytes(a, i) == 4 * (2 * K + 3), "bytes");
            CHECK(ps_analysis_dep_ws_max_bytes(a, i) == 4 * (N * K + N + 1), "bytes");
            char buf[8192], want[256];
            size_t need = 0;
            st = ps_analysis_to_json(a, buf, sizeof buf, &need);
            CHECK(st == PS_SUCCESS && need == strlen(buf), "to_json: %s", ps_status_str(st));
            snprintf(want, sizeof want,
                     "{\"array\": \"A\", \"kind\": \"RAR\", \"ws_min\": %" PRId64 ", \"ws_max\": %" PRId64
                     ", \"ws_min_bytes\": %" PRId64 ", \"ws_max_bytes\": %" PRId64,
                     2 * K + 3, N * K + N + 1, 4 * (2 * K + 3), 4 * (N * K + N + 1));
            CHECK(strstr(buf, want) != NULL, "JSON lacks %s: %s", want, buf);
            snprintf(want, sizeof want,
                     "\"shared_only\": false, \"source\": [0, 0, 0], \"min_target\": [0, 1, 0], \"max_target\": [0, %" PRId64
                     ", 0]}",
                     N - 1);
            CHECK(strstr(buf, want) != NULL, "JSON lacks %s: %s", want, buf);
        }
    }
    ps_analysis_destroy(a);
}

/* Every dependence of every loop order against the simulator. */
static void check_orders(int64_t M, int64_t N, int64_t K)
{
    static const char *orders[6] = {"ijk", "ikj", "jik", "jki", "kij", "kji"};
    static const char *names[3] = {"B", "A", "C"}; /* sim arrays IN, WT, OUT */
    for (int o = 0; o < 6; o++) {
        sim S;
        sim_init_matmul(&S, M, N, K, orders[o]);
        sim_dep sd[3];
        sim_analyze(&S, sd);
        sim_free(&S);
        for (int method = 0; method < 2; method++) {
            ps_analysis_options opt;
            ps_analysis_options_init(&opt);
            opt.method = (ps_analysis_method)method;
            ps_analysis *a = NULL;
            ps_status st = ps_analysis_create_matmul(M, N, K, orders[o], &opt, &a);
            CHECK(st == PS_SUCCESS, "%s", ps_last_error_message());
            if (st) continue;
            int expect = 0;
            for (int arr = 0; arr < 3; arr++) {
                static const char *kinds[4] = {"RAR", "RAW", "WAR", "WAW"};
                int nk = arr == SIM_OUT ? 4 : 1;
                for (int k = 0; k < nk; k++) {
                    int i = find_dep(a, names[arr], kinds[k]);
                    CHECK((i >= 0) == sd[arr].exists, "order %s %s %s: exists %d, simulator %d", orders[o], names[arr],
                          kinds[k], i >= 0, sd[arr].exists);
                    if (i < 0 || !sd[arr].exists) continue;
                    expect++;
                    CHECK(ps_analysis_dep_ws_min(a, i) == sd[arr].ws_min &&
                              ps_analysis_dep_ws_max(a, i) == sd[arr].ws_max,
                          "order %s M%" PRId64 " N%" PRId64 " K%" PRId64 " %s %s (%s): %" PRId64 "/%" PRId64
                          ", simulator %" PRId64 "/%" PRId64,
                          orders[o], M, N, K, names[arr], kinds[k], method ? "isl" : "fast",
                          ps_analysis_dep_ws_min(a, i), ps_analysis_dep_ws_max(a, i), sd[arr].ws_min, sd[arr].ws_max);
                }
            }
            CHECK(ps_analysis_num_dependences(a) == expect, "order %s: %d dependences, expected %d", orders[o],
                  ps_analysis_num_dependences(a), expect);
            ps_analysis_destroy(a);
        }
    }
}

static void check_api(void)
{
    ps_analysis *a = (ps_analysis *)&failures; /* must be reset to NULL on error */
    CHECK(ps_analysis_create_matmul(4, 4, 4, "iik", NULL, &a) == PS_ERR_INVALID_ARG && a == NULL, "bad order");
    CHECK(ps_analysis_create_matmul(4, 4, 4, "ij", NULL, &a) == PS_ERR_INVALID_ARG, "short order");
    CHECK(ps_analysis_create_matmul(0, 4, 4, "ijk", NULL, &a) == PS_ERR_INVALID_ARG, "M = 0");
    CHECK(ps_analysis_create_matmul(4, 4, 4, NULL, NULL, &a) == PS_ERR_NULL_POINTER, "NULL order");
    CHECK(ps_analysis_create_matmul(4, 4, 4, "ijk", NULL, NULL) == PS_ERR_NULL_POINTER, "NULL out");
    ps_analysis_options o;
    ps_analysis_options_init(&o);
    o.struct_size = 3;
    CHECK(ps_analysis_create_matmul(4, 4, 4, "ijk", &o, &a) == PS_ERR_INVALID_ARG, "struct_size");
    CHECK(ps_analysis_create(NULL, NULL, NULL, &a) == PS_ERR_NULL_POINTER, "NULL desc");

    /* Invalid schedules are rejected. */
    ps_desc d;
    ps_desc_init_gemm(&d);
    d.u.gemm.M = d.u.gemm.N = d.u.gemm.K = 32;
    ps_schedule s;
    memset(&s, 0, sizeof s);
    s.n_stages = 1;
    s.stages[0].kernel = (ps_kernel_shape){8, 8, 8, 2};
    s.stages[0].loops[s.stages[0].n_loops++] = (ps_loop){PS_DIM_K, 1, 1};
    s.stages[0].loops[s.stages[0].n_loops++] = (ps_loop){PS_DIM_OW, 1, 0};
    CHECK(ps_analysis_create(&d, &s, NULL, &a) == PS_ERR_INVALID_SCHEDULE, "missing reduction loop");
    s.stages[0].loops[s.stages[0].n_loops++] = (ps_loop){PS_DIM_C, 2, 0};
    CHECK(ps_analysis_create(&d, &s, NULL, &a) == PS_ERR_INVALID_SCHEDULE, "innermost tile 2");
    s.stages[0].loops[2].tile = 1;
    s.stages[0].loops[2].parallel = 1;
    CHECK(ps_analysis_create(&d, &s, NULL, &a) == PS_ERR_INVALID_SCHEDULE, "parallel reduction");
    s.stages[0].loops[2].parallel = 0;

    /* A valid parallel GEMM: accessors, shared sets, JSON round trip sizes. */
    o.struct_size = sizeof o;
    o.num_threads = 4;
    ps_status st = ps_analysis_create(&d, &s, &o, &a);
    CHECK(st == PS_SUCCESS, "gemm analysis: %s", ps_last_error_message());
    if (st) return;
    int n = ps_analysis_num_dependences(a);
    CHECK(n == 6, "gemm: %d dependences (A, B, and C's four kinds expected)", n);
    for (int i = 0; i < n; i++) {
        ps_dependence_info info;
        CHECK(ps_analysis_get_dependence(a, i, &info) == PS_SUCCESS, "get_dependence");
        CHECK(info.ws_min >= 1 && info.ws_min <= info.ws_max, "%s %s: %" PRId64 "/%" PRId64, info.array,
              info.kind_name, info.ws_min, info.ws_max);
        CHECK(info.ws_min_shared >= info.ws_min && info.ws_max_shared >= info.ws_max, "shared below per-thread");
        CHECK(info.ws_max_bytes == 4 * info.ws_max && info.ws_max_shared_bytes == 4 * info.ws_max_shared, "bytes");
        CHECK(!strcmp(info.kind_name, ps_analysis_dep_kind(a, i)) && !strcmp(info.array, ps_analysis_dep_array(a, i)),
              "accessors");
    }
    ps_dependence_info info;
    CHECK(ps_analysis_get_dependence(a, n, &info) == PS_ERR_INVALID_ARG, "index out of range");
    CHECK(ps_analysis_dep_ws_min(a, -1) == -1 && ps_analysis_dep_array(a, n) == NULL, "bad index accessors");
    size_t need = 0;
    CHECK(ps_analysis_to_json(a, NULL, 0, &need) == PS_ERR_BUFFER_TOO_SMALL && need > 0, "size query");
    char *buf = malloc(need + 1);
    CHECK(ps_analysis_to_json(a, buf, need, NULL) == PS_ERR_BUFFER_TOO_SMALL && strlen(buf) == need - 1,
          "truncated JSON is NUL-terminated");
    CHECK(ps_analysis_to_json(a, buf, need + 1, NULL) == PS_SUCCESS && strlen(buf) == need, "full JSON");
    CHECK(strncmp(buf, "{\"op\": \"gemm\", \"method\": \"fast\", \"num_threads\": 4,", 49) == 0, "JSON head: %s", buf);
    free(buf);
    ps_analysis_destroy(a);
    ps_analysis_destroy(NULL);
}

/* A row-major GEMM is analysed as the transposed column-major problem the
 * executor runs (its schedule speaks of the user's rows and columns): the
 * working sets equal those of the column-major problem with M and N, the
 * kernel's m and n and the m and n loops swapped, and A and B trading names. */
static void check_row_major(void)
{
    ps_desc dr, dc;
    ps_desc_init_gemm(&dr);
    dr.u.gemm.M = 40; dr.u.gemm.N = 24; dr.u.gemm.K = 20;
    dr.u.gemm.order = PS_ROW_MAJOR;
    ps_desc_init_gemm(&dc);
    dc.u.gemm.M = 24; dc.u.gemm.N = 40; dc.u.gemm.K = 20;
    ps_schedule sr, sc;
    memset(&sr, 0, sizeof sr);
    memset(&sc, 0, sizeof sc);
    sr.n_stages = sc.n_stages = 1;
    sr.stages[0].kernel = (ps_kernel_shape){8, 4, 4, 2};
    sc.stages[0].kernel = (ps_kernel_shape){4, 8, 4, 2};
    static const ps_loop lr[] = {{PS_DIM_K, 2, 1}, {PS_DIM_OW, 1, 0}, {PS_DIM_C, 1, 0}, {PS_DIM_K, 1, 0}};
    static const ps_loop lc[] = {{PS_DIM_OW, 2, 1}, {PS_DIM_K, 1, 0}, {PS_DIM_C, 1, 0}, {PS_DIM_OW, 1, 0}};
    for (int i = 0; i < 4; i++) {
        sr.stages[0].loops[sr.stages[0].n_loops++] = lr[i];
        sc.stages[0].loops[sc.stages[0].n_loops++] = lc[i];
    }
    ps_analysis_options o;
    ps_analysis_options_init(&o);
    o.num_threads = 3;
    ps_analysis *ar = NULL, *ac = NULL;
    ps_status st = ps_analysis_create(&dr, &sr, &o, &ar);
    CHECK(st == PS_SUCCESS, "row-major: %s", ps_last_error_message());
    st = ps_analysis_create(&dc, &sc, &o, &ac);
    CHECK(st == PS_SUCCESS, "column-major: %s", ps_last_error_message());
    if (ar && ac) {
        CHECK(ps_analysis_num_dependences(ar) == ps_analysis_num_dependences(ac) && ps_analysis_num_dependences(ar) == 6,
              "%d vs %d dependences", ps_analysis_num_dependences(ar), ps_analysis_num_dependences(ac));
        for (int i = 0; i < ps_analysis_num_dependences(ar); i++) {
            ps_dependence_info a, b;
            ps_analysis_get_dependence(ar, i, &a);
            const char *other = !strcmp(a.array, "A") ? "B" : !strcmp(a.array, "B") ? "A" : "C";
            int j = find_dep(ac, other, a.kind_name);
            CHECK(j >= 0, "no %s %s in the column-major analysis", other, a.kind_name);
            if (j < 0) continue;
            ps_analysis_get_dependence(ac, j, &b);
            CHECK(a.ws_min == b.ws_min && a.ws_max == b.ws_max && a.ws_min_shared == b.ws_min_shared &&
                      a.ws_max_shared == b.ws_max_shared && a.shared_only == b.shared_only,
                  "row-major %s %s %" PRId64 "/%" PRId64 " vs column-major %s %" PRId64 "/%" PRId64, a.array,
                  a.kind_name, a.ws_min, a.ws_max, b.array, b.ws_min, b.ws_max);
        }
        char buf[4096];
        ps_analysis_to_json(ar, buf, sizeof buf, NULL);
        CHECK(strstr(buf, "\"loops\": [\"m:2*\", \"n\", \"k\", \"m\"") != NULL, "row-major loop names: %s", buf);
    }
    ps_analysis_destroy(ar);
    ps_analysis_destroy(ac);
}

int main(void)
{
    static const int64_t sizes[][3] = {{4, 5, 6}, {1, 2, 1}, {3, 7, 2}, {2, 1, 5}, {8, 8, 8}, {5, 13, 3}, {16, 10, 33}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        check_paper(sizes[i][0], sizes[i][1], sizes[i][2], PS_ANALYSIS_FAST);
        check_paper(sizes[i][0], sizes[i][1], sizes[i][2], PS_ANALYSIS_ISL);
    }
    /* Large: closed form only (the formulas hold for any size). */
    check_paper(224, 1000, 4096, PS_ANALYSIS_FAST);
    check_paper(1, 100000, 100000, PS_ANALYSIS_FAST);
    check_orders(3, 4, 5);
    check_orders(2, 1, 3);
    check_orders(6, 5, 4);
    check_api();
    check_row_major();
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
