/* PolyScientist-DNN ranker (lib/ranking/dnn.c):
 *  - the C inference against the trainer's own float32 inference
 *    (tests/data/dnn_vectors.txt, written by tools/dnn/train.py with the
 *    weights it wrote to lib/ranking/dnn_weights.c): features exactly,
 *    softmax within 1e-5, game outcomes, and whole tournaments (order, wins,
 *    losses) on 1 and 2 threads;
 *  - determinism of ps_cost_query with PS_RANKER_DNN, and that it reports
 *    every variant once with ranks 1..n and the Eq. 1 working sets;
 *  - ps_plan_create with PS_RANKER_DNN (static, and top_k timing; also
 *    PS_RANKER_DEFAULT with top_k, which times the DNN's order) runs the
 *    tournament's choice and computes the right result; the default options
 *    run the DNN's first choice for a convolution of N >= 2 images where the
 *    L3 is fast and the expert schedule where it is slow, for one image and
 *    for a GEMM; the expert's rules: convs
 *    whose weights fit in half of L2 run input-stationary, GEMMs get L2 band
 *    tiles where they balance over the threads;
 *  - the planning time of the tournament on a ~350-variant layer (printed,
 *    not asserted). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/context_impl.h"
#include "polysci/polysci.h"
#include "expert/expert.h"
#include "ranking/dnn.h"
#include "ranking/planner.h"
#include "ranking/rank.h"
#include "reference.h"
#include "schedule/schedule_impl.h"
#include "test_util.h"


static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---------------------------------------------------------------- vectors */

/* Reads n doubles from *p (advancing it); returns the count read. */
static int read_doubles(char **p, double *v, int n)
{
    int k = 0;
    while (k < n) {
        char *end;
        double d = strtod(*p, &end);
        if (end == *p) break;
        v[k++] = d;
        *p = end;
    }
    return k;
}

static char *skip_bar(char *p)
{
    char *b = strchr(p, '|');
    return b ? b + 1 : p + strlen(p);
}

static void check_game(char *line, int no)
{
    double ab[2 * PS_DNN_STATS] = {0}, x[PS_DNN_IN] = {0}, p[2] = {0};
    char *q = line + 4;
    TU_CHECK(read_doubles(&q, ab, 2 * PS_DNN_STATS) == 2 * PS_DNN_STATS, "vectors line %d: %d statistics expected",
             no, 2 * PS_DNN_STATS);
    q = skip_bar(q);
    TU_CHECK(read_doubles(&q, x, PS_DNN_IN) == PS_DNN_IN, "vectors line %d: %d features expected", no, PS_DNN_IN);
    q = skip_bar(q);
    TU_CHECK(read_doubles(&q, p, 2) == 2, "vectors line %d: 2 probabilities expected", no);
    q = skip_bar(q);
    int want = (int)strtol(q, NULL, 10);
    float xf[PS_DNN_IN], pf[PS_DNN_OUT];
    ps_dnn_features(ab, ab + PS_DNN_STATS, xf);
    for (int i = 0; i < PS_DNN_IN; i++)
        TU_CHECK(xf[i] == (float)x[i], "vectors line %d: feature %d is %.9g, Python %.9g", no, i, xf[i], x[i]);
    ps_dnn_infer(&ps_dnn_weights, xf, pf);
    for (int i = 0; i < PS_DNN_OUT; i++)
        TU_CHECK(fabs(pf[i] - p[i]) <= 1e-5, "vectors line %d: p[%d] = %.8f, Python %.8f", no, i, pf[i], p[i]);
    /* A game decided within rounding of the threshold may go either way. */
    if (fabs(p[0] - PS_DNN_THRESHOLD) > 1e-4 && fabs(p[1] - PS_DNN_THRESHOLD) > 1e-4)
        TU_CHECK(ps_dnn_game(&ps_dnn_weights, xf) == want, "vectors line %d: outcome %d, Python %d", no,
              ps_dnn_game(&ps_dnn_weights, xf), want);
}

/* "tournament N" with its N 'v' lines, order, wins, losses. */
static int check_tournament(FILE *f, int n, int *no)
{
    double (*ws)[PS_DNN_STATS] = calloc((size_t)n, sizeof *ws);
    long *want[3];
    for (int k = 0; k < 3; k++) want[k] = calloc((size_t)n, sizeof *want[k]);
    static const char *const keys[3] = {"order", "wins", "losses"};
    char line[8192];
    int ok = ws && want[0] && want[1] && want[2];
    for (int i = 0; ok && i < n; i++) {
        ok = fgets(line, sizeof line, f) && !strncmp(line, "v ", 2);
        (*no)++;
        char *q = line + 2;
        if (ok) ok = read_doubles(&q, ws[i], PS_DNN_STATS) == PS_DNN_STATS;
    }
    for (int k = 0; ok && k < 3; k++) {
        ok = fgets(line, sizeof line, f) && !strncmp(line, keys[k], strlen(keys[k]));
        (*no)++;
        char *q = line + strlen(keys[k]);
        for (int i = 0; ok && i < n; i++) {
            char *end;
            want[k][i] = strtol(q, &end, 10);
            ok = end != q;
            q = end;
        }
    }
    TU_CHECK(ok, "vectors line %d: malformed tournament of %d", *no, n);
    for (int threads = 1; ok && threads <= 2; threads++) {
        ps_ranking r = {n, calloc((size_t)n, sizeof(ps_ranked)), n};
        if (!r.v) abort();
        for (int i = 0; i < n; i++) {
            memcpy(r.v[i].ws, ws[i], sizeof r.v[i].ws);
            memcpy(r.v[i].shape, ws[i] + PS_COST_LEVELS, sizeof r.v[i].shape);
            r.v[i].index = i;
        }
        TU_CHECK(ps_dnn_tournament(&ps_dnn_weights, &r, threads) == PS_SUCCESS, "tournament: %s",
              ps_last_error_message());
        int same = 1;
        for (int k = 0; k < n; k++) {
            const ps_ranked *v = &r.v[k];
            same &= v->index == want[0][k] && v->wins == want[1][v->index] && v->losses == want[2][v->index];
        }
        TU_CHECK(same, "tournament of %d on %d thread(s) differs from Python's (first: variant %d, %d wins, %d losses)",
              n, threads, r.v[0].index, r.v[0].wins, r.v[0].losses);
        ps_ranking_release(&r); /* schedules are NULL: destroying them is a no-op */
    }
    free(ws);
    for (int k = 0; k < 3; k++) free(want[k]);
    return ok;
}

static void vectors(const char *path)
{
    FILE *f = fopen(path, "r");
    TU_CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    char line[8192];
    int no = 0, games = 0, tournaments = 0;
    while (fgets(line, sizeof line, f)) {
        no++;
        if (!strncmp(line, "game ", 5)) {
            check_game(line, no);
            games++;
        } else if (!strncmp(line, "tournament ", 11)) {
            int n = atoi(line + 11);
            TU_CHECK(n > 1 && n < 100000, "vectors line %d: bad tournament size", no);
            if (n <= 1 || n >= 100000 || !check_tournament(f, n, &no)) break;
            tournaments++;
        }
    }
    fclose(f);
    printf("test vectors: %d games, %d tournaments\n", games, tournaments);
    TU_CHECK(games >= 5 && tournaments >= 1, "%s has %d games and %d tournaments", path, games, tournaments);
}

/* ---------------------------------------------------------------- through the API */

static void conv_shape(ps_desc *d, int64_t N, int64_t C, int64_t K, int64_t HW, int64_t R)
{
    ps_desc_init_conv(d);
    ps_conv_desc *c = &d->u.conv;
    c->N = N; c->C = C; c->K = K; c->H = c->W = HW; c->R = c->S = R;
    c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = R / 2;
}

/* The expert schedule of descriptor d (valid) on the machine *facts. */
static ps_status expert_of(const ps_desc *d, int threads, const ps_expert_facts *facts, ps_schedule **out)
{
    ps_problem p;
    ps_status st = ps_problem_of(d, &p);
    return st ? st : ps_expert_schedule(&p, threads, facts, out, NULL);
}

static void gemm_shape(ps_desc *d, int64_t M, int64_t N, int64_t K, int row_major)
{
    ps_desc_init_gemm(d);
    d->u.gemm.M = M;
    d->u.gemm.N = N;
    d->u.gemm.K = K;
    d->u.gemm.order = row_major ? PS_ROW_MAJOR : PS_COL_MAJOR;
}

static void cost_query(ps_context *ctx)
{
    ps_desc d;
    conv_shape(&d, 2, 64, 128, 14, 3);
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.num_threads = 2;
    ps_cost_report *dnn1 = NULL, *dnn2 = NULL, *cost = NULL;
    o.ranker = PS_RANKER_DNN;
    TU_CHECK(ps_cost_query(ctx, &d, &o, &dnn1) == PS_SUCCESS, "DNN cost query: %s", ps_last_error_message());
    TU_CHECK(ps_cost_query(ctx, &d, &o, &dnn2) == PS_SUCCESS, "DNN cost query: %s", ps_last_error_message());
    o.ranker = PS_RANKER_COST;
    TU_CHECK(ps_cost_query(ctx, &d, &o, &cost) == PS_SUCCESS, "cost query: %s", ps_last_error_message());
    if (!dnn1 || !dnn2 || !cost) goto done;
    const int n = ps_cost_report_size(dnn1);
    TU_CHECK(n > 1 && n == ps_cost_report_size(dnn2) && n == ps_cost_report_size(cost),
          "variant counts: DNN %d and %d, cost %d", n, ps_cost_report_size(dnn2), ps_cost_report_size(cost));
    int *seen = calloc((size_t)n, sizeof *seen);
    if (!seen) abort();
    for (int i = 0; i < n && n == ps_cost_report_size(cost); i++) {
        ps_variant_cost a, b;
        ps_cost_report_get(dnn1, i, &a);
        ps_cost_report_get(dnn2, i, &b);
        TU_CHECK(a.rank == i + 1, "rank %d at index %d", a.rank, i);
        TU_CHECK(!strcmp(a.schedule, b.schedule) && a.cost == b.cost,
              "rank %d differs between two identical DNN queries", i + 1);
        TU_CHECK(a.cost >= 0 && a.cost == floor(a.cost) && a.cost <= 2.0 * (n - 1),
              "rank %d: cost %g is not a loss count", i + 1, a.cost);
        /* The same variant with the same Alg. 2 working sets as in Eq. 1's list. */
        int j = 0;
        ps_variant_cost c;
        for (; j < n; j++) {
            ps_cost_report_get(cost, j, &c);
            if (!strcmp(c.schedule, a.schedule)) break;
        }
        TU_CHECK(j < n && !seen[j], "rank %d ('%s') is %s in the Eq. 1 list", i + 1, a.schedule,
              j < n ? "repeated" : "not");
        if (j < n) {
            seen[j] = 1;
            TU_CHECK(!memcmp(c.ws_bytes, a.ws_bytes, sizeof a.ws_bytes), "rank %d: working sets differ from Eq. 1's",
                  i + 1);
            TU_CHECK(c.parallel_iterations == a.parallel_iterations && c.parallel_efficiency == a.parallel_efficiency &&
                         c.reduction_steps == a.reduction_steps && c.kernel_m == a.kernel_m,
                     "rank %d: shape statistics differ from Eq. 1's", i + 1);
        }
    }
    free(seen);
done:
    ps_cost_report_destroy(dnn1);
    ps_cost_report_destroy(dnn2);
    ps_cost_report_destroy(cost);
}

/* Plans with the DNN ranker (or the default ranker with top_k > 1, which
 * times the DNN's first candidates), checks the choice against the DNN cost
 * query, runs it against the reference. */
static void plan(ps_context *ctx, ps_ranker ranker, int top_k)
{
    ps_desc d;
    conv_shape(&d, 2, 32, 48, 10, 3);
    d.u.conv.post_ops = PS_POST_BIAS | PS_POST_RELU;
    const ps_conv_desc *c = &d.u.conv;
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.ranker = ranker;
    o.top_k = top_k;
    o.flags = PS_PLAN_NO_CACHE;
    ps_plan *p = NULL;
    ps_cost_report *rep = NULL;
    TU_CHECK(ps_plan_create(ctx, &d, &o, &p) == PS_SUCCESS, "plan (ranker %d, top_k %d): %s", (int)ranker, top_k,
             ps_last_error_message());
    o.ranker = PS_RANKER_DNN;
    TU_CHECK(ps_cost_query(ctx, &d, &o, &rep) == PS_SUCCESS, "DNN cost query: %s", ps_last_error_message());
    if (!p || !rep) goto done;
    char text[512];
    ps_schedule_format(ps_plan_get_schedule(p), PS_OP_CONV_FWD, text, sizeof text, NULL);
    int at = -1;
    for (int i = 0; i < ps_cost_report_size(rep) && at < 0; i++) {
        ps_variant_cost v;
        ps_cost_report_get(rep, i, &v);
        if (!strcmp(v.schedule, text)) at = i;
    }
    /* With timing, the expert schedule competes too. */
    char dflt[512] = "";
    ps_schedule *ds = NULL;
    const ps_expert_facts facts = ps_planner_expert_facts(&ctx->machine);
    if (expert_of(&d, 2, &facts, &ds) == PS_SUCCESS)
        ps_schedule_format(ds, PS_OP_CONV_FWD, dflt, sizeof dflt, NULL);
    ps_schedule_destroy(ds);
    TU_CHECK((at >= 0 && at < (top_k > 1 ? top_k : 1)) || (top_k > 1 && !strcmp(text, dflt)),
          "top_k %d: the plan runs '%s', tournament place %d", top_k, text, at + 1);

    int64_t OH, OW;
    ref_conv_out_size(c, &OH, &OW);
    const int64_t ns = c->N * c->H * c->W * c->C, nw = c->K * c->C * c->R * c->S, nd = c->N * OH * OW * c->K;
    size_t pb = 0;
    ps_plan_packed_weights_size(p, &pb);
    float *src = malloc((size_t)ns * 4), *w = malloc((size_t)nw * 4), *bias = malloc((size_t)c->K * 4),
          *dst = malloc((size_t)nd * 4);
    double *ref = malloc((size_t)nd * 8), *mag = malloc((size_t)nd * 8);
    void *packed = aligned_alloc(64, (pb + 63) / 64 * 64);
    if (!src || !w || !bias || !dst || !ref || !mag || !packed) abort();
    for (int64_t i = 0; i < ns; i++) src[i] = (float)((i * 7919) % 201) / 100.0f - 1.0f;
    for (int64_t i = 0; i < nw; i++) w[i] = (float)((i * 104729) % 199) / 99.0f - 1.0f;
    for (int64_t i = 0; i < c->K; i++) bias[i] = 0.01f * (float)i;
    for (int64_t i = 0; i < nd; i++) dst[i] = NAN;
    TU_CHECK(ps_plan_pack_weights(p, w, packed) == PS_SUCCESS, "pack: %s", ps_last_error_message());
    TU_CHECK(ps_conv_execute(p, src, packed, bias, dst) == PS_SUCCESS, "execute: %s", ps_last_error_message());
    int64_t L;
    ref_conv_fwd(c, src, w, bias, ref, mag, &L);
    ref_cmp cmp;
    ref_compare(dst, ref, mag, nd, L, &cmp);
    TU_CHECK(cmp.n_bad == 0, "DNN plan '%s': %lld wrong outputs (first at %lld: %g, want %g)", text,
          (long long)cmp.n_bad, (long long)cmp.first_bad, cmp.first_got, cmp.first_ref);
    free(src); free(w); free(bias); free(dst); free(ref); free(mag); free(packed);
done:
    ps_plan_destroy(p);
    ps_cost_report_destroy(rep);
}

/* For convolutions of N >= 2 images the default options run the DNN's first
 * choice where the L3 is fast (l3_fast: 3x memory's bandwidth), the expert
 * schedule where it is slow (as fast as memory) and for one image. Checked
 * on shapes where the two differ (at least one per batch size must, so the
 * test cannot pass by coincidence; both depend on the machine's caches); for
 * GEMMs the static default stays the expert schedule (docs/expert-rules.md). */
static void conv_default(ps_context *ctx, int64_t N, int l3_fast)
{
    const ps_machine saved = ctx->machine;
    tu_set_l3_speed(ctx, l3_fast ? 3 : 1);
    static const int64_t shapes[][4] = {{64, 128, 14, 1}, {128, 128, 14, 3}, {64, 256, 28, 1}}; /* C K HW R */
    int checked = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        ps_desc d;
        conv_shape(&d, N, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        ps_plan_options o;
        ps_plan_options_init(&o);
        o.flags = PS_PLAN_NO_CACHE;
        ps_plan *p = NULL;
        ps_schedule *ds = NULL;
        ps_cost_report *rep = NULL;
        TU_CHECK(ps_plan_create(ctx, &d, &o, &p) == PS_SUCCESS, "conv plan: %s", ps_last_error_message());
        o.ranker = PS_RANKER_DNN;
        TU_CHECK(ps_cost_query(ctx, &d, &o, &rep) == PS_SUCCESS, "DNN cost query: %s", ps_last_error_message());
        const ps_expert_facts facts = ps_planner_expert_facts(&ctx->machine);
        TU_CHECK(expert_of(&d, 2, &facts, &ds) == PS_SUCCESS,
                 "expert schedule: %s", ps_last_error_message());
        ps_variant_cost first;
        if (p && ds && rep && ps_cost_report_get(rep, 0, &first) == PS_SUCCESS) {
            char got[512], dflt[512];
            ps_schedule_format(ps_plan_get_schedule(p), PS_OP_CONV_FWD, got, sizeof got, NULL);
            ps_schedule_format(ds, PS_OP_CONV_FWD, dflt, sizeof dflt, NULL);
            if (strcmp(first.schedule, dflt)) {
                checked++;
                const char *want = N >= 2 && l3_fast ? first.schedule : dflt;
                TU_CHECK(!strcmp(got, want), "conv, N=%lld, %s L3, default options: the plan runs '%s', expected "
                         "'%s' (DNN's first '%s', expert schedule '%s')", (long long)N, l3_fast ? "fast" : "slow",
                         got, want, first.schedule, dflt);
            }
        }
        ps_cost_report_destroy(rep);
        ps_schedule_destroy(ds);
        ps_plan_destroy(p);
    }
    TU_CHECK(checked > 0, "N=%lld: no shape where the DNN's first choice differs from the expert schedule",
             (long long)N);
    ctx->machine = saved;
}

/* The schedule a plan runs with these options (threads 0: the context's),
 * formatted; empty if planning failed. */
static void plan_schedule(ps_context *ctx, const ps_desc *d, ps_ranker ranker, int threads, char *buf, size_t len)
{
    ps_plan_options o;
    ps_plan_options_init(&o);
    o.flags = PS_PLAN_NO_CACHE;
    o.ranker = ranker;
    o.num_threads = threads;
    ps_plan *p = NULL;
    buf[0] = 0;
    TU_CHECK(ps_plan_create(ctx, d, &o, &p) == PS_SUCCESS, "plan: %s", ps_last_error_message());
    if (p) ps_schedule_format(ps_plan_get_schedule(p), d->kind, buf, len, NULL);
    ps_plan_destroy(p);
}

/* The expert schedule of conv d on two threads of the machine *facts and
 * ps_schedule_default's, formatted into got and dflt (512 bytes each; empty
 * where one failed, which is a check failure). */
static void expert_and_default(const ps_desc *d, const ps_expert_facts *facts, char *got, char *dflt)
{
    ps_schedule *ex = NULL, *ds = NULL;
    got[0] = dflt[0] = '\0';
    TU_CHECK(expert_of(d, 2, facts, &ex) == PS_SUCCESS, "expert: %s", ps_last_error_message());
    TU_CHECK(ps_schedule_default(d, &ds) == PS_SUCCESS, "default: %s", ps_last_error_message());
    if (ex) ps_schedule_format(ex, PS_OP_CONV_FWD, got, 512, NULL);
    if (ds) ps_schedule_format(ds, PS_OP_CONV_FWD, dflt, 512, NULL);
    ps_schedule_destroy(ex);
    ps_schedule_destroy(ds);
}

/* The expert's conv rules: input-stationary loops (every output-channel block
 * innermost, over a tile of input) when the weights fit in half of L2 and its
 * tiles split evenly over the threads (2 here), or with the output-channel
 * loop parallel too (stationary = 2) where the tiles do not and the weights
 * fit in a quarter of L2, else ps_schedule_default's order; 32-channel kernel blocks for spatial filters whose weights per call
 * (64 channels x the call's C blocks x taps) are 256 KiB or more, and where
 * the last level is slow for 1x1 convs whose every call reads fresh weights,
 * and there output-channel tiles for larger 1x1 filter banks; with L2 unknown (0) the default schedule. The plans themselves run against
 * the reference in test_schedules (no search, small weights). */
/* even-split: where the chosen schedule splits its parallel band below 0.9
 * even, smaller kernel blocks until it does not; never where it already
 * does, with one thread, or on merged taps. */
static void even_split_rule(void)
{
    static const struct {
        int64_t N, C, K, HW, R;
        int threads, fires;
    } cases[] = {
        {1, 960, 160, 7, 1, 2, 1},   /* 5 blocks of 32 rows, 49 pixels in one call: 3 + 2 */
        {1, 960, 160, 7, 1, 16, 1},  /* 5 of 16 threads busy */
        {1, 960, 160, 7, 1, 1, 0},   /* one thread: nothing to split */
        {1, 12, 83, 17, 1, 2, 1},    /* 83 rows: one block of 64 and a 19-row remainder */
        {1, 64, 64, 56, 3, 2, 0},    /* 56 rows of blocks: even already */
        {2, 3, 64, 56, 3, 16, 0},    /* merged taps: its rows are shaped for L1 */
    };
    const ps_expert_facts facts = {.l2_bytes = 1 << 20};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ps_desc d;
        conv_shape(&d, cases[i].N, cases[i].C, cases[i].K, cases[i].HW, cases[i].R);
        ps_problem p;
        ps_schedule *s = NULL;
        unsigned fired = 0;
        TU_CHECK(ps_problem_of(&d, &p) == PS_SUCCESS &&
                     ps_expert_schedule(&p, cases[i].threads, &facts, &s, &fired) == PS_SUCCESS,
                 "case %zu: %s", i, ps_last_error_message());
        if (!s) continue;
        char text[512];
        ps_schedule_format(s, PS_OP_CONV_FWD, text, sizeof text, NULL);
        const int fires = !!(fired & 1u << PS_RULE_EVEN_SPLIT);
        const double bal = ps_rank_balance(&p, s, cases[i].threads);
        TU_CHECK(fires == cases[i].fires, "case %zu (%d threads): even-split %s, '%s' (balance %.3f)", i,
                 cases[i].threads, fires ? "fired" : "did not fire", text, bal);
        TU_CHECK(cases[i].threads < 2 || fires == 0 || bal >= 0.9, "case %zu: '%s' splits %.3f even", i, text, bal);
        TU_CHECK(ps_schedule_check_problem(s, &p) == PS_SUCCESS, "case %zu: '%s': %s", i, text,
                 ps_last_error_message());
        ps_schedule_destroy(s);
    }
}

static void conv_expert_rule(ps_context *ctx)
{
    static const struct {
        int64_t N, C, K, HW, R;
        size_t l2;
        int stationary, narrow, llc_slow;
    } cases[] = {
        {1, 64, 256, 56, 1, 128 << 10, 1, 0, 0},    /* 64 KiB of weights, exactly half of L2; 28 tiles of 112 */
        {1, 64, 256, 56, 1, (128 << 10) - 4, 0, 0, 0}, /* one float more than half */
        {2, 64, 256, 56, 1, 128 << 10, 0, 0, 0},    /* two images: exactly half is too much */
        {2, 64, 256, 56, 1, (128 << 10) + 4, 1, 0, 0}, /* ... one float less than half is not */
        {2, 128, 128, 14, 3, 1 << 20, 0, 1, 0},     /* 576 KiB > 512 KiB; calls of 64 x 128 x 9: 288 KiB */
        {2, 128, 128, 14, 3, 2 << 20, 1, 1, 0},     /* the same with 2 MiB of L2: half holds it; calls >= 256 KiB */
        {2, 256, 128, 14, 2, 2 << 20, 1, 1, 0},     /* 2x2, C = 256: calls of exactly 256 KiB */
        {2, 224, 128, 14, 2, 2 << 20, 1, 0, 0},     /* C = 224 (7 blocks of 32): 224 KiB */
        {2, 64, 64, 14, 3, 1 << 20, 1, 0, 0},       /* 144 KiB, two images */
        {2, 64, 128, 14, 3, 1 << 20, 1, 0, 0},      /* calls of 64 x 64 x 9 = 144 KiB < 256 KiB */
        {2, 3, 64, 14, 3, 1 << 20, 0, 0, 0},        /* merged taps: the default's strips */
        {1, 64, 256, 14, 1, 0, 0, 0, 0},            /* L2 unknown */
        {1, 128, 128, 14, 3, 0, 0, 0, 0},           /* L2 unknown: no narrow blocks either */
        {1, 256, 512, 14, 1, 1 << 20, 0, 0, 0},     /* mobilenet_07 at N = 1: 512 KiB, 7 tiles for 2 threads */
        {1, 256, 512, 14, 1, 2 << 20, 2, 0, 0},     /* the same, 2 MiB of L2: a quarter holds it; channels shared */
        {1, 256, 512, 14, 1, (2 << 20) - 4, 0, 0, 0}, /* one float less than four times the weights */
        {1, 256, 1024, 14, 1, 4 << 20, 2, 0, 0},    /* resnet_13 at N = 1 with 4 MiB of L2 */
        {1, 256, 1024, 14, 1, 2 << 20, 0, 0, 0},    /* ... with 2 MiB: 1 MiB of weights, half of L2 */
        {2, 256, 512, 14, 1, 1 << 20, 0, 0, 0},     /* mobilenet_07, two images (14 tiles): exactly half */
        {2, 256, 512, 14, 1, 2 << 20, 1, 0, 0},     /* ... with 2 MiB of L2 */
        {1, 2048, 512, 7, 1, 1 << 20, 0, 0, 0},     /* 1x1, calls of 512 KiB: 1x1 keeps 64 channels */
        /* Slow last level: 1x1 convs whose calls all read fresh weights (one
         * column block per image, weights too large for half of L2). */
        {1, 2048, 512, 7, 1, 1 << 20, 0, 1, 1},     /* resnet_19: 4 MiB, 49 pixels in one block */
        {2, 512, 512, 7, 1, 2 << 20, 3, 1, 1},      /* 1 MiB, exactly half of L2, two images: images inside */
        {1, 512, 512, 7, 1, 2 << 20, 0, 0, 1},      /* ... one image: half is not too much (uneven tiles: default) */
        {2, 1024, 256, 12, 1, 1 << 20, 0, 0, 1},    /* 144 pixels in 6 blocks reuse each weight block */
        {2, 128, 128, 14, 3, 1 << 20, 0, 1, 1},     /* spatial: the call-size rule as without the flag */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_desc d;
        conv_shape(&d, cases[i].N, cases[i].C, cases[i].K, cases[i].HW, cases[i].R);
        char got[512], dflt[512], want_kernel[512] = "";
        expert_and_default(&d, &(ps_expert_facts){.l2_bytes = cases[i].l2, .llc_slow = cases[i].llc_slow}, got, dflt);
        const char *loops = strchr(got, ':'), *dloops = strchr(dflt, ':');
        /* the default's kernel, or with 32-channel blocks */
        snprintf(want_kernel, sizeof want_kernel, "%s%.*s", cases[i].narrow ? "32" : "",
                 dloops ? (int)(dloops - dflt) - (cases[i].narrow ? 2 : 0) : 0, dflt + (cases[i].narrow ? 2 : 0));
        TU_CHECK(loops && dloops && (size_t)(loops - got) == strlen(want_kernel) &&
                     !strncmp(got, want_kernel, strlen(want_kernel)),
                 "case %zu: expert '%s', want the kernel '%s' (default '%s')", i, got, want_kernel, dflt);
        if (cases[i].stationary) {
            const char *want = cases[i].stationary == 3   ? ": k* n* oh* ow* c"
                               : cases[i].stationary == 2 ? ": n* oh* ow* k* c"
                                                          : ": n* oh* ow* c k";
            TU_CHECK(loops && !strcmp(loops, want), "case %zu: expert '%s', want '%s'", i, got, want);
        } else
            TU_CHECK(loops && dloops && !strcmp(loops, dloops), "case %zu: expert '%s', want the default's loops ('%s')",
                     i, got, dflt);
    }
    /* Slow last level, 1x1 filter banks too large for half of L2 with several
     * column blocks per image: output-channel tiles of a quarter of L2, each
     * input-stationary. */
    static const struct {
        int64_t N, C, K, HW;
        size_t l2;
        int llc_slow;
        const char *loops; /* the whole schedule; NULL: the default's */
    } tiles[] = {
        /* resnet_13: 64 KiB per block, 8 per 512 KiB; 512 channels share each
         * 28-column input block, so 32-channel blocks (short register
         * blocks, below), 16 per tile */
        {2, 256, 1024, 14, 2 << 20, 1, "32x28x64/4 : n* k:16* oh* ow* c k"},
        {2, 1024, 256, 14, 2 << 20, 1, "64x30x64/16 : n* k:2* oh* ow* c k"}, /* resnet_14: 256 KiB per block; 30 columns */
        {2, 256, 1024, 14, 2 << 20, 0, NULL},                     /* fast last level */
        {1, 256, 1024, 14, 2 << 20, 1, "32x28x64/4 : n* k* oh* ow* c"}, /* one image: half of L2 is not too much */
        {2, 1024, 256, 14, 1 << 20, 1, "64x30x64/16 : n* k* oh* ow* c"}, /* a quarter of L2 holds one block: no tiles */
        {2, 4096, 256, 14, 2 << 20, 1, "64x30x64/64 : n* k* oh* ow* c"}, /* one block (1 MiB) exceeds a quarter */
        {2, 256, 1024, 7, 2 << 20, 1, "32x49x64/4 : k* n* oh* ow* c"}, /* one column block: the 32-channel rule */
    };
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        ps_desc d;
        conv_shape(&d, tiles[i].N, tiles[i].C, tiles[i].K, tiles[i].HW, 1);
        char got[512], dflt[512];
        expert_and_default(&d, &(ps_expert_facts){.l2_bytes = tiles[i].l2, .llc_slow = tiles[i].llc_slow}, got, dflt);
        const char *want = tiles[i].loops ? tiles[i].loops : dflt;
        TU_CHECK(!strcmp(got, want), "tile case %zu: expert '%s', want '%s'", i, got, want);
    }
    /* Slow last level, filter banks too large for half of L2 over images of
     * at most 64 output pixels, two images or more: the images inside the
     * output-channel blocks. Whole schedules (2 MiB of L2, two threads). */
    static const struct {
        int64_t N, C, K, HW, R;
        int llc_slow;
        const char *want; /* NULL: the default's loops around the same kernel */
    } inside[] = {
        {2, 512, 512, 7, 3, 1, "32x7x64/8 : k* n* oh* ow* c"},     /* resnet_17: 9 MiB, 49 pixels */
        {1, 512, 512, 7, 3, 1, "32x7x64/8 : n* k* oh* ow* c"},     /* one image */
        {2, 512, 512, 7, 3, 0, NULL},                              /* fast last level */
        {2, 512, 512, 8, 3, 1, "32x8x64/8 : k* n* oh* ow* c"},     /* 64 pixels */
        {2, 512, 512, 9, 3, 1, "32x9x64/8 : n* k* oh* ow* c"},     /* 81 pixels */
        {4, 2048, 512, 7, 1, 1, "32x49x64/32 : k* n* oh* ow* c"},  /* resnet_19, four images */
        {2, 128, 128, 7, 3, 1, "32x7x64/2 : n* oh* ow* c k"},      /* 576 KiB: half of L2 holds it */
    };
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        ps_desc d;
        conv_shape(&d, inside[i].N, inside[i].C, inside[i].K, inside[i].HW, inside[i].R);
        char got[512], dflt[512];
        expert_and_default(&d, &(ps_expert_facts){.l2_bytes = 2 << 20, .llc_slow = inside[i].llc_slow}, got, dflt);
        const char *loops = strchr(got, ':'), *dloops = strchr(dflt, ':');
        if (inside[i].want)
            TU_CHECK(!strcmp(got, inside[i].want), "inside case %zu: expert '%s', want '%s'", i, got, inside[i].want);
        else
            TU_CHECK(loops && dloops && !strcmp(loops, dloops), "inside case %zu: expert '%s', want the default's loops ('%s')",
                     i, got, dflt);
    }
    /* Slow last level, 64-row kernels whose width leaves a short last
     * register block (not a multiple of 6 columns): 32-channel blocks for
     * spatial filters, and for 1x1 convs where at least 256 output channels
     * share each input block and a call's input block is at most 64 KiB;
     * other 1x1 convs whose row spans at least four take 30-column calls.
     * Whole schedules (2 MiB of L2, two threads). */
    static const struct {
        int64_t N, C, K, HW, R;
        int llc_slow;
        const char *want;
    } short_blocks[] = {
        {2, 64, 64, 56, 3, 1, "32x28x64/1 : n* oh* ow* c k"},     /* resnet_03: 28 = 4 x 6 + 4 */
        {2, 64, 64, 56, 3, 0, "64x28x64/1 : n* oh* ow* c k"},     /* fast last level */
        {2, 64, 64, 30, 3, 1, "64x30x64/1 : n* oh* ow* c k"},     /* 30 columns: five whole blocks */
        {2, 256, 256, 28, 1, 1, "32x28x64/4 : n* oh* ow* c k"},   /* mobilenet_06: 256 channels, 28 KiB */
        {2, 256, 128, 28, 1, 1, "64x30x64/4 : n* oh* ow* c k"},   /* 128 channels: whole register blocks */
        {2, 256, 128, 28, 1, 0, "64x28x64/4 : n* oh* ow* c k"},   /* ... fast last level */
        {2, 256, 64, 56, 1, 1, "64x30x64/4 : n* oh* ow* c k"},    /* resnet_04: 3136 pixels, 64 channels */
        {2, 256, 64, 5, 1, 1, "64x25x64/4 : n* oh* ow* c k"},     /* 25 pixels: no row beyond 30 columns */
        {1, 256, 1024, 14, 1, 1, "32x28x64/4 : n* k* oh* ow* c"}, /* resnet_13, one image: the default's loops */
        {1, 1024, 256, 14, 1, 1, "64x30x64/16 : n* k* oh* ow* c"}, /* resnet_14: 112 KiB of input per call; 30 columns */
        {2, 64, 256, 56, 1, 1, "64x112x64/1 : n* oh* ow* c k"},   /* C <= 128: wide calls keep 64 rows */
        {2, 3, 64, 56, 3, 1, NULL},                               /* merged taps: the default */
    };
    for (size_t i = 0; i < sizeof short_blocks / sizeof short_blocks[0]; i++) {
        ps_desc d;
        conv_shape(&d, short_blocks[i].N, short_blocks[i].C, short_blocks[i].K, short_blocks[i].HW, short_blocks[i].R);
        char got[512], dflt[512];
        const ps_expert_facts facts = {.l2_bytes = 2 << 20, .llc_slow = short_blocks[i].llc_slow};
        expert_and_default(&d, &facts, got, dflt);
        const char *want = short_blocks[i].want ? short_blocks[i].want : dflt;
        TU_CHECK(!strcmp(got, want), "short-block case %zu: expert '%s', want '%s'", i, got, want);
    }
    /* Slow last level, convs whose taps merge (few-channel first layers): 32
     * rows where a 64-row call's weights and the input rows under its column
     * block overflow L1 and a 32-row call's fit, K that 64 does not divide in
     * the fewest blocks of a 16-row multiple; on any last level, with several
     * blocks the output-channel loop innermost. Whole schedules (2 MiB of L2, two
     * threads); resnet_00 holds 37632 + 19236 bytes at 64 rows, 18816 +
     * 19236 at 32. */
    static const struct {
        int64_t N, HW, K, R, stride, pad;
        size_t l1;
        int llc_slow;
        const char *want;
    } merged[] = {
        {1, 224, 64, 7, 2, 3, 48 << 10, 1, "32x112x3/1 : n* oh* ow* c k"}, /* resnet_00 */
        {2, 224, 64, 7, 2, 3, 48 << 10, 1, "32x112x3/1 : n* oh* ow* c k"}, /* ... rows, not strips */
        {2, 224, 64, 7, 2, 3, 48 << 10, 0, "64x112x3/1 : n* k* ow* oh* c"}, /* fast last level: the default */
        {1, 224, 64, 7, 2, 3, 0, 1, "64x112x3/1 : n* k* oh* ow* c"},       /* L1 unknown */
        {1, 224, 64, 7, 2, 3, 56868, 1, "64x112x3/1 : n* k* oh* ow* c"},   /* 64 rows fit exactly */
        {1, 224, 64, 7, 2, 3, 56864, 1, "32x112x3/1 : n* oh* ow* c k"},    /* ... one float less */
        {1, 224, 64, 7, 2, 3, 38048, 1, "64x112x3/1 : n* k* oh* ow* c"},   /* 32 rows overflow by a float */
        {1, 224, 64, 3, 1, 1, 48 << 10, 1, "64x224x3/1 : n* k* oh* ow* c"}, /* vgga_01: 64 rows fit */
        {1, 227, 64, 11, 4, 0, 48 << 10, 1, "64x55x3/1 : n* k* oh* ow* c"}, /* alexnet_01: neither fits */
        {1, 231, 96, 11, 4, 0, 48 << 10, 1, "48x56x3/1 : n* oh* ow* c k"},  /* overfeat_01: 96 = 2 x 48 */
        {2, 231, 96, 11, 4, 0, 48 << 10, 0, "32x56x3/1 : n* oh* ow* c k"}, /* fast: the loops, not the rows */
    };
    for (size_t i = 0; i < sizeof merged / sizeof merged[0]; i++) {
        ps_desc d;
        conv_shape(&d, merged[i].N, 3, merged[i].K, merged[i].HW, merged[i].R);
        ps_conv_desc *c = &d.u.conv;
        c->stride_h = c->stride_w = merged[i].stride;
        c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = merged[i].pad;
        const ps_expert_facts facts = {.l1_bytes = merged[i].l1, .l2_bytes = 2 << 20, .llc_slow = merged[i].llc_slow};
        char got[512], dflt[512];
        expert_and_default(&d, &facts, got, dflt);
        TU_CHECK(!strcmp(got, merged[i].want), "merged case %zu: expert '%s', want '%s'", i, got, merged[i].want);
    }
    /* The 30-column calls need a row of at least four (1x1, 256 -> 64, H x 7
     * pixels flattened; 28 is the widest divisor of both rows). */
    static const struct {
        int64_t H;
        const char *want;
    } rows[] = {
        {20, "64x30x64/4 : n* oh* ow* c k"}, /* 140 columns: four calls of 30 and one of 20 */
        {16, "64x28x64/4 : n* oh* ow* c k"}, /* 112 columns: fewer than four */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ps_desc d;
        conv_shape(&d, 2, 256, 64, 7, 1);
        d.u.conv.H = rows[i].H;
        char got[512], dflt[512];
        expert_and_default(&d, &(ps_expert_facts){.l2_bytes = 2 << 20, .llc_slow = 1}, got, dflt);
        TU_CHECK(!strcmp(got, rows[i].want), "row case %zu: expert '%s', want '%s'", i, got, rows[i].want);
    }
    /* Kernels of fewer than 64 rows re-choose their width for their register
     * blocks (14 columns for 17-32 rows, 9 for 33-48) where the last level is
     * slow: 32-channel blocks (3 x 3, 128 -> 128: calls of 288 KiB) over 75
     * columns as 3 x 25 instead of 30 + 30 + 15 (the 64-row choice), over 38
     * columns keep 24 + 14 (28 + 10 is not 3% cheaper); K = 48 and 24 (1x1
     * over 512 channels, 1786 columns flattened) 27 and 28 instead of 19. */
    static const struct {
        int64_t H, W, C, K, R;
        int llc_slow;
        const char *want;
    } widths[] = {
        {94, 75, 128, 128, 3, 1, "32x25x64/2 : n* oh* ow* c k"}, /* fastrcnn_10 */
        {94, 75, 128, 128, 3, 0, "32x30x64/2 : n* oh* ow* c k"}, /* fast last level: the 64-row choice */
        {47, 38, 128, 128, 3, 1, "32x24x64/2 : n* oh* ow* c k"},
        {47, 38, 512, 48, 1, 1, "48x27x64/8 : n* oh* ow* c k"},  /* fastrcnn_21 */
        {47, 38, 512, 48, 1, 0, "48x19x64/8 : n* oh* ow* c k"},
        {47, 38, 512, 24, 1, 1, "24x28x64/8 : n* oh* ow* c k"},  /* fastrcnn_22 */
        {47, 38, 512, 16, 1, 1, "16x19x64/8 : n* oh* ow* c k"},  /* 16 rows: not measured */
    };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        ps_desc d;
        conv_shape(&d, 2, widths[i].C, widths[i].K, 7, widths[i].R);
        d.u.conv.H = widths[i].H;
        d.u.conv.W = widths[i].W;
        char got[512], dflt[512];
        expert_and_default(&d, &(ps_expert_facts){.l2_bytes = 2 << 20, .llc_slow = widths[i].llc_slow}, got, dflt);
        TU_CHECK(!strcmp(got, widths[i].want), "register-block width case %zu: expert '%s', want '%s'", i, got,
                 widths[i].want);
    }
    /* Slow last level, spatial filter banks too large for half of L2 over
     * images that do not fit in half of L2 either: row tiles with the
     * output-channel blocks inside, T the largest divisor of OH with at least
     * four tiles whose input rows and one block of weights fit in half of L2,
     * where the tiles stream fewer bytes than the blocks' passes over the
     * image. Whole schedules (two threads); 3 x 3, padding 1. */
    static const struct {
        int64_t N, H, W, C, K;
        size_t l2;
        int llc_slow;
        const char *want;
    } row_tile_cases[] = {
        {1, 56, 56, 128, 256, 2 << 20, 1, "32x28x64/2 : n* oh:14* k* ow* oh* c"}, /* vgga_03: 14, not 28 */
        {2, 56, 56, 256, 256, 2 << 20, 1, "32x28x64/4 : n* oh:8* k* ow* oh* c"},  /* vgga_04 */
        {2, 56, 56, 256, 256, 2 << 20, 0, "32x28x64/4 : n* k* oh* ow* c"},        /* fast last level */
        {1, 28, 28, 256, 512, 2 << 20, 1, "32x28x64/4 : n* k* oh* ow* c"},        /* vgga_05: the image fits */
        {1, 28, 28, 512, 512, 2 << 20, 1, "32x28x64/8 : n* k* oh* ow* c"},        /* vgga_06: 63 > 28 MiB */
        {1, 47, 38, 256, 256, 2 << 20, 1, "32x24x64/4 : n* k* oh* ow* c"},        /* fastrcnn_16: OH = 47 */
        {1, 32, 64, 128, 256, 2 << 20, 1, "32x28x64/2 : n* k* oh* ow* c"},        /* image of exactly half of L2 */
        {1, 32, 64, 128, 256, (2 << 20) - 8, 1, "32x28x64/2 : n* oh:8* k* ow* oh* c"}, /* ... half of L2 a float smaller */
    };
    for (size_t i = 0; i < sizeof row_tile_cases / sizeof row_tile_cases[0]; i++) {
        ps_desc d;
        conv_shape(&d, row_tile_cases[i].N, row_tile_cases[i].C, row_tile_cases[i].K, 7, 3);
        d.u.conv.H = row_tile_cases[i].H;
        d.u.conv.W = row_tile_cases[i].W;
        char got[512], dflt[512];
        const ps_expert_facts facts = {.l2_bytes = row_tile_cases[i].l2, .llc_slow = row_tile_cases[i].llc_slow};
        expert_and_default(&d, &facts, got, dflt);
        TU_CHECK(!strcmp(got, row_tile_cases[i].want), "row-tile case %zu: expert '%s', want '%s'", i, got,
                 row_tile_cases[i].want);
    }
    /* Row tiles of one output row (the input rows of two do not fit beside a
     * block of weights in half of L2): the row loop itself, with no point
     * loop over oh inside it, which the schedule check would refuse (issue
     * 48's layers; each refused before with "strictly decreasing tiles"). */
    static const struct {
        int64_t N, H, W, C, K, R, S, sh, sw, pad;
        size_t l2;
        const char *want;
    } one_row[] = {
        {1, 224, 224, 256, 256, 3, 3, 2, 2, 1, 2 << 20, "32x28x64/4 : n* oh* k* ow* c"},
        {2, 21, 64, 256, 256, 2, 2, 3, 1, 0, 1 << 20, "32x28x64/4 : n* oh* k* ow* c"},
        {2, 21, 64, 256, 256, 2, 2, 3, 1, 0, 2 << 20, "32x28x64/4 : n* oh* k* ow* c"},
        {1, 5, 150, 350, 375, 2, 1, 1, 1, 0, 2 << 20, "64x30x64/6 : n* oh* k* ow* c"},
    };
    for (size_t i = 0; i < sizeof one_row / sizeof one_row[0]; i++) {
        ps_desc d;
        conv_shape(&d, one_row[i].N, one_row[i].C, one_row[i].K, one_row[i].H, one_row[i].R);
        ps_conv_desc *c = &d.u.conv;
        c->W = one_row[i].W;
        c->S = one_row[i].S;
        c->stride_h = one_row[i].sh;
        c->stride_w = one_row[i].sw;
        c->pad_top = c->pad_bottom = c->pad_left = c->pad_right = one_row[i].pad;
        char got[512], dflt[512];
        const ps_expert_facts facts = {.l2_bytes = one_row[i].l2, .llc_slow = 1};
        expert_and_default(&d, &facts, got, dflt);
        TU_CHECK(!strcmp(got, one_row[i].want), "one-row tile case %zu: expert '%s', want '%s'", i, got,
                 one_row[i].want);
        ps_schedule *s = NULL;
        TU_CHECK(ps_schedule_parse(PS_OP_CONV_FWD, got, &s) == PS_SUCCESS && ps_schedule_check(s, &d) == PS_SUCCESS,
                 "one-row tile case %zu: '%s' fails its check: %s", i, got, ps_last_error_message());
        ps_schedule_destroy(s);
    }
    /* Through the planner: one image, default options, the context's L2. */
    const size_t l2 = ps_machine_cache_bytes(&ctx->machine, 2);
    ps_desc d;
    conv_shape(&d, 1, 16, 32, 14, 1); /* 2 KiB of weights */
    char got[512];
    plan_schedule(ctx, &d, PS_RANKER_DEFAULT, 0, got, sizeof got);
    if (got[0] && l2 >= 4096) {
        const char *loops = strchr(got, ':');
        TU_CHECK(loops && !strcmp(loops, ": n* oh* ow* c k"), "one image, 2 KiB of weights, L2 %zu: plan runs '%s'",
                 l2, got);
    }
}

/* GEMMs, default options (and PS_RANKER_NONE): the expert schedule, with L2
 * band tiles of 8 x 2 kernel blocks where they split over the threads as
 * evenly as single blocks, else the fixed order; where A is read in place,
 * rows of blocks per thread (gemm_in_place_rule). Blocks and tiles in the
 * user's rows and columns of C, as the schedule speaks (kernel 64 x 48). The
 * context's L3 is made fast (the table's row depends on the CPU): none of
 * these operands exceeds it, so no panels; then slow, where the planner
 * passes the machine's panel_bytes (16 MiB) and the 16 and 32 MiB operands
 * get panel tiles. */
static void gemm_default(ps_context *ctx)
{
    const ps_machine saved = ctx->machine;
    tu_set_l3_speed(ctx, 3);
    static const struct {
        int64_t M, N, K;
        int row_major, threads;
        const char *loops; /* NULL: the fixed order */
    } cases[] = {
        {1024, 1024, 4096, 0, 2, ": m:8* n:2* k m n"},  /* 16 x 22 blocks: 2 x 11 tiles, even */
        {128, 2048, 4096, 1, 2, ": m* n:43* k n"},      /* 2 x 43 blocks, A in place: a row of blocks per thread */
        {768, 128, 4096, 1, 2, NULL},                    /* 12 x 3 blocks: row tiles of 8 and 4 blocks, 2:1 (measured
                                                            0.72x the fixed order); in the executor's swapped terms
                                                            it would look even */
        {2048, 128, 4096, 1, 4, ": m:8* n:2* k m n"},   /* 32 x 3 blocks: a row tile of 8 blocks per thread */
        {256, 256, 2048, 1, 2, ": m:2* n:6* k m n"},    /* 4 x 6 blocks, A in place: two rows of blocks per thread
                                                            (the 8 x 2 tiles: three, 2:1) */
        {256, 256, 2048, 0, 2, NULL},                    /* column-major: A packed, three 8 x 2 tiles, 2:1 */
        {1024, 1024, 4096, 0, 1, ": m:8* n:2* k m n"},  /* one thread: nothing to balance */
        {96, 80, 64, 0, 2, NULL},                        /* one tile holds all four blocks */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_desc d;
        gemm_shape(&d, cases[i].M, cases[i].N, cases[i].K, cases[i].row_major);
        char got[512], none[512], fixed[512] = "";
        plan_schedule(ctx, &d, PS_RANKER_DEFAULT, cases[i].threads, got, sizeof got);
        plan_schedule(ctx, &d, PS_RANKER_NONE, cases[i].threads, none, sizeof none);
        ps_schedule *ds = NULL;
        TU_CHECK(ps_schedule_default(&d, &ds) == PS_SUCCESS, "GEMM default schedule: %s", ps_last_error_message());
        if (ds) ps_schedule_format(ds, PS_OP_GEMM, fixed, sizeof fixed, NULL);
        ps_schedule_destroy(ds);
        TU_CHECK(!strcmp(got, none), "GEMM %lldx%lldx%lld: default options run '%s', PS_RANKER_NONE '%s'",
                 (long long)cases[i].M, (long long)cases[i].N, (long long)cases[i].K, got, none);
        const char *loops = strchr(got, ':');
        if (cases[i].loops)
            TU_CHECK(loops && !strcmp(loops, cases[i].loops),
                     "GEMM %lldx%lldx%lld on %d threads: default options run '%s', want '%s'", (long long)cases[i].M,
                     (long long)cases[i].N, (long long)cases[i].K, cases[i].threads, got, cases[i].loops);
        else
            TU_CHECK(!strcmp(got, fixed), "GEMM %lldx%lldx%lld on %d threads: default options run '%s', want the fixed "
                     "order '%s'", (long long)cases[i].M, (long long)cases[i].N, (long long)cases[i].K,
                     cases[i].threads, got, fixed);
    }
    tu_set_l3_speed(ctx, 1);
    TU_CHECK(ps_machine_panel_bytes(&ctx->machine) == 16u << 20, "slow 32 MiB L3: panel bytes %zu",
             ps_machine_panel_bytes(&ctx->machine));
    static const struct {
        int64_t M, N, K;
        const char *loops;
    } slow[] = {
        {1024, 1024, 4096, ": m:16* n:11* k m n"}, /* 16 MiB operands */
        {128, 2048, 4096, ": m:2* n:11* k m n"},   /* B 32 MiB, A 2 MiB */
        {128, 768, 4096, ": m* n:16* k n"},        /* B 12 MiB: no panels; A in place */
    };
    for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++) {
        ps_desc d;
        gemm_shape(&d, slow[i].M, slow[i].N, slow[i].K, 1);
        char got[512];
        plan_schedule(ctx, &d, PS_RANKER_DEFAULT, 2, got, sizeof got);
        const char *loops = strchr(got, ':');
        TU_CHECK(loops && !strcmp(loops, slow[i].loops), "slow L3, GEMM %lldx%lldx%lld: default options run '%s', want '%s'",
                 (long long)slow[i].M, (long long)slow[i].N, (long long)slow[i].K, got, slow[i].loops);
    }
    ctx->machine = saved;
}

/* GEMMs whose operands both exceed the last-level cache, or whose larger
 * operand reaches panel_bytes (ps_gemm_panels_pay), get large band tiles (the
 * smaller side whole, or in equal tiles of at most 1024 elements, the other
 * cut per thread; a smaller side of 1025-3072 elements whole at half the
 * batch) whose panels the executor packs per thread; the others keep the
 * 8 x 2 L2 tiles. */
static void gemm_panel_rule(void)
{
    static const struct {
        int64_t M, N, K;
        int threads;
        size_t llc, panel;
        const char *loops; /* NULL: anything but the panel tiles */
        int batch;         /* the kernel's batch; 0: not checked */
    } cases[] = {
        {1024, 1024, 32768, 2, 32u << 20, 0, ": m:16* n:11* k m n", 8},          /* 128 MiB operands: 16 x 22 blocks, 2 tiles */
        {1024, 1024, 32768, 1, 32u << 20, 0, ": m:16* n:11* k m n", 8},          /* 22 columns of blocks > 16: two tiles */
        {1024, 1024, 32768, 2, 0, 0, ": m:8* n:2* k m n", 8},                     /* last-level cache unknown */
        {1024, 1024, 32768, 2, 256u << 20, 0, ": m:8* n:2* k m n", 8},            /* operands fit */
        {1024, 1024, 32768, 2, 256u << 20, 128u << 20, ": m:16* n:11* k m n", 8}, /* fit, but reach panel_bytes */
        {2048, 2048, 2048, 2, 32u << 20, 0, ": m:8* n:2* k m n", 8},              /* 16 MiB operands fit */
        /* Smaller side of 1025-3072 elements: whole, at batch 4, the other
         * side one tile per thread (cap 1536 elements). */
        {2048, 2048, 2048, 2, 32u << 20, 16u << 20, ": m:32* n:22* k m n", 4},
        {3072, 3072, 2048, 2, 32u << 20, 16u << 20, ": m:48* n:32* k m n", 4},
        {2048, 8192, 2048, 2, 32u << 20, 16u << 20, ": m:32* n:29* k m n", 4}, /* 171 column blocks: 6 tiles */
        {1100, 4096, 4096, 2, 32u << 20, 16u << 20, ": m:18* n:22* k m n", 4},
        {4096, 4096, 4096, 2, 32u << 20, 0, ": m:16* n:15* k m n", 8},         /* 64 row blocks: 4 tiles; 86 columns: 6 */
        {4096, 4096, 1024, 2, 32u << 20, 16u << 20, ": m:16* n:15* k m n", 8}, /* over 3072: tiles, full depth */
        {1024, 1024, 32768, 16, 32u << 20, 0, NULL, 0},                           /* tiles of 2 column blocks: too few */
        {4096, 1000, 32768, 2, 32u << 20, 0, ": m:11* n:21* k m n", 8},           /* columns whole (21 blocks), 64 row blocks */
        /* One large operand (B, 32 MiB): rows whole although only 2 blocks,
         * 43 column blocks cut into 4 tiles of 11; not without panel_bytes,
         * nor below it (16 MiB: 1024 columns, 22 blocks, 2 tiles of 11). */
        {128, 2048, 4096, 2, 32u << 20, 16u << 20, ": m:2* n:11* k m n", 8},
        {128, 2048, 4096, 2, 32u << 20, 0, ": m* n:43* k n", 0},   /* A in place: gemm_in_place_rule */
        {128, 1024, 4096, 2, 32u << 20, 16u << 20, ": m:2* n:11* k m n", 8},
        {128, 1024, 4096, 2, 32u << 20, 17u << 20, ": m* n:22* k n", 0}, /* A in place: gemm_in_place_rule */
        {320, 3072, 4096, 2, 32u << 20, 16u << 20, ": m:5* n:16* k m n", 8},     /* 64 column blocks, 4 tiles */
        {4096, 256, 2048, 2, 32u << 20, 16u << 20, ": m:11* n:6* k m n", 8},     /* A the larger: columns whole, 6 tiles */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_desc d;
        gemm_shape(&d, cases[i].M, cases[i].N, cases[i].K, 1);
        ps_schedule *ex = NULL;
        char got[512] = "";
        const ps_expert_facts facts = {.l2_bytes = 1 << 20, .llc_bytes = cases[i].llc, .panel_bytes = cases[i].panel};
        TU_CHECK(expert_of(&d, cases[i].threads, &facts, &ex) == PS_SUCCESS,
                 "expert: %s", ps_last_error_message());
        if (ex) ps_schedule_format(ex, PS_OP_GEMM, got, sizeof got, NULL);
        ps_schedule_destroy(ex);
        const char *loops = strchr(got, ':');
        if (cases[i].loops)
            TU_CHECK(loops && !strcmp(loops, cases[i].loops), "case %zu: expert '%s', want '%s'", i, got,
                     cases[i].loops);
        else
            TU_CHECK(loops && !strstr(loops, "m:16*"), "case %zu: expert '%s', want no panel tiles", i, got);
        int batch = 0;
        if (cases[i].batch)
            TU_CHECK(sscanf(got, "%*dx%*dx%*d/%d", &batch) == 1 && batch == cases[i].batch,
                     "case %zu: expert '%s', want batch %d", i, got, cases[i].batch);
    }
}

/* GEMMs whose A the executor reads in place (ps_gemm_a_in_place: at most 4
 * column blocks of the normalized problem, no transpose, alpha 1) get tiles
 * with the normalized rows whole and the columns cut per thread (in the
 * user's terms a row-major GEMM's columns whole and rows cut) where those
 * split evenly; else the 8 x 2 tiles or the fixed order as before. */
static void gemm_in_place_rule(void)
{
    static const struct {
        int64_t M, N, K;
        int row_major, threads;
        float alpha;
        const char *loops;
    } cases[] = {
        {256, 256, 2048, 1, 2, 1.0f, ": m:2* n:6* k m n"},  /* 4 row blocks, two per thread; the 8 x 2 tiles split 2:1 */
        {256, 256, 2048, 1, 1, 1.0f, ": m:4* n:6* k m n"},  /* one thread: one tile */
        {256, 192, 4096, 1, 2, 1.0f, ": m:2* n:4* k m n"},  /* was 8 x 2 tiles (columns cut) */
        {1024, 192, 2048, 0, 2, 1.0f, ": m:16* n:2* k m n"}, /* column-major: rows whole, 4 column blocks cut */
        {256, 256, 2048, 0, 2, 1.0f, ": m* n* k"},          /* column-major: 6 column blocks, A packed */
        {256, 256, 2048, 1, 2, 0.5f, ": m* n* k"},          /* alpha: A packed */
        {192, 256, 2048, 1, 2, 1.0f, ": m* n* k"},          /* 3 row blocks split 2:1 */
        {256, 256, 128, 1, 2, 1.0f, ": m* n* k"},           /* B fits in half of L2: the fixed order */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_desc d;
        gemm_shape(&d, cases[i].M, cases[i].N, cases[i].K, cases[i].row_major);
        d.u.gemm.alpha = cases[i].alpha;
        ps_schedule *ex = NULL;
        char got[512] = "";
        const ps_expert_facts facts = {.l2_bytes = 1 << 20, .llc_bytes = 32u << 20};
        TU_CHECK(expert_of(&d, cases[i].threads, &facts, &ex) == PS_SUCCESS, "expert: %s",
                 ps_last_error_message());
        if (ex) ps_schedule_format(ex, PS_OP_GEMM, got, sizeof got, NULL);
        ps_schedule_destroy(ex);
        const char *loops = strchr(got, ':');
        TU_CHECK(loops && !strcmp(loops, cases[i].loops), "case %zu: expert '%s', want '%s'", i, got, cases[i].loops);
    }
}

/* A shallow copy of r's places (the copy's schedules are borrowed: free its
 * v only). */
static ps_ranking borrow(const ps_ranking *r)
{
    ps_ranking c = *r;
    c.v = malloc((size_t)(r->n ? r->n : 1) * sizeof *c.v);
    if (!c.v) abort();
    memcpy(c.v, r->v, (size_t)r->n * sizeof *c.v);
    return c;
}

/* The first `places` places of a and b: the same variants, wins and losses. */
static int same_places(const ps_ranking *a, const ps_ranking *b, int places)
{
    for (int k = 0; k < places; k++)
        if (a->v[k].index != b->v[k].index || a->v[k].wins != b->v[k].wins || a->v[k].losses != b->v[k].losses)
            return 0;
    return 1;
}

/* ps_dnn_tournament_top against the full round robin from the same Eq. 1
 * order: its settled places are the round robin's, at least `top` of them,
 * on 1 and 2 threads; completing it gives the whole round robin. */
static void top_of(const ps_ranking *eq1, const char *what)
{
    ps_ranking full = borrow(eq1);
    TU_CHECK(ps_dnn_tournament(&ps_dnn_weights, &full, 2) == PS_SUCCESS, "%s: tournament: %s", what,
             ps_last_error_message());
    static const int tops[] = {1, 2, 8, 40};
    for (size_t t = 0; t < sizeof tops / sizeof *tops; t++)
        for (int threads = 1; threads <= 2; threads++) {
            ps_ranking r = borrow(eq1);
            TU_CHECK(ps_dnn_tournament_top(&ps_dnn_weights, &r, threads, tops[t]) == PS_SUCCESS, "%s: top: %s", what,
                     ps_last_error_message());
            const int want = tops[t] < r.n ? tops[t] : r.n;
            TU_CHECK(r.exact >= want && r.exact <= r.n, "%s, top %d, %d thread(s): %d places settled", what, tops[t],
                     threads, r.exact);
            TU_CHECK(same_places(&r, &full, r.exact), "%s, top %d, %d thread(s): a settled place differs", what,
                     tops[t], threads);
            TU_CHECK(ps_ranking_complete(&r, threads) == PS_SUCCESS && r.exact == r.n &&
                         same_places(&r, &full, r.n),
                     "%s, top %d, %d thread(s): the completed ranking differs", what, tops[t], threads);
            free(r.v);
        }
    free(full.v);
}

static void tournament_top(ps_context *ctx)
{
    /* Fields of distinct random statistics (with repeats: classes of several
     * variants), in their given order as Eq. 1's. */
    static const int sizes[] = {70, 200, 500};
    uint64_t x = 88172645463325252ull;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int n = sizes[s];
        ps_ranking r = {n, calloc((size_t)n, sizeof(ps_ranked)), n};
        if (!r.v) abort();
        for (int i = 0; i < n; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (i > 0 && x % 5 == 0) { /* a repeat of an earlier variant's statistics */
                const int j = (int)(x / 5 % (uint64_t)i);
                memcpy(r.v[i].ws, r.v[j].ws, sizeof r.v[i].ws);
                memcpy(r.v[i].shape, r.v[j].shape, sizeof r.v[i].shape);
            } else {
                for (int l = 0; l < PS_COST_LEVELS; l++) {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    r.v[i].ws[l] = (double)(x % 1000000) * (l == 3 ? 0.5 : 1.0);
                }
                for (int l = 0; l < PS_SHAPE_COUNT; l++) {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    r.v[i].shape[l] = (double)(1 + x % 64);
                }
            }
            r.v[i].cost = i;
            r.v[i].index = i;
        }
        char what[64];
        snprintf(what, sizeof what, "random field of %d", n);
        top_of(&r, what);
        ps_ranking_release(&r);
    }
    /* Rankings of real layers (hundreds of variants). */
    static const int shapes[][5] = {{2, 128, 128, 28, 3}, {3, 10, 891, 60, 7}, {1, 64, 256, 56, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        ps_desc d;
        conv_shape(&d, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4]);
        ps_problem p;
        ps_ranking r = {0};
        TU_CHECK(ps_problem_of(&d, &p) == PS_SUCCESS &&
                     ps_rank_variants(&ctx->machine, &p, 2, PS_RANKER_COST, &r) == PS_SUCCESS,
                 "ranking: %s", ps_last_error_message());
        if (!r.v) continue;
        char what[64];
        snprintf(what, sizeof what, "conv %d: %d variants", (int)s, r.n);
        top_of(&r, what);
        ps_ranking_release(&r);
    }
}

/* Planning time of the tournament alone on a ResNet-50 3x3 layer (~350
 * variants); informational: the suite runs on shared machines. */
static void timing(ps_context *ctx)
{
    ps_desc d;
    conv_shape(&d, 2, 128, 128, 28, 3);
    ps_problem p;
    ps_ranking r = {0};
    TU_CHECK(ps_problem_of(&d, &p) == PS_SUCCESS && ps_rank_variants(&ctx->machine, &p, 2, PS_RANKER_COST, &r) == PS_SUCCESS,
             "ranking: %s", ps_last_error_message());
    if (!r.v) return;
    for (int threads = 1; threads <= 2; threads++) {
        double best = 1e300;
        for (int rep = 0; rep < 3; rep++) {
            const double t0 = now_ms();
            TU_CHECK(ps_dnn_tournament(&ps_dnn_weights, &r, threads) == PS_SUCCESS, "tournament: %s",
                  ps_last_error_message());
            const double t = now_ms() - t0;
            if (t < best) best = t;
        }
        double best_top = 1e300;
        for (int rep = 0; rep < 3; rep++) {
            ps_ranking c = borrow(&r);
            const double t0 = now_ms();
            TU_CHECK(ps_dnn_tournament_top(&ps_dnn_weights, &c, threads, 8) == PS_SUCCESS, "tournament: %s",
                     ps_last_error_message());
            const double t = now_ms() - t0;
            if (t < best_top) best_top = t;
            free(c.v);
        }
        printf("tournament of %d variants (%d games) on %d thread%s: %.3f ms, its first 8 places %.3f ms (best of 3)\n",
               r.n, r.n * (r.n - 1), threads, threads == 1 ? "" : "s", best, best_top);
    }
    ps_ranking_release(&r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s tests/data/dnn_vectors.txt\n", argv[0]);
        return 2;
    }
    vectors(argv[1]);
    /* The VM's caches, whatever the machine: the GEMM rules depend on the
     * last level (gemm_default's 16 MiB operands must fit in it). */
    ps_context *ctx = NULL;
    TU_CHECK(tu_context_with_caches(2, 48 << 10, 1 << 20, 32 << 20, &ctx) == PS_SUCCESS, "context: %s",
             ps_last_error_message());
    if (ctx) {
        cost_query(ctx);
        plan(ctx, PS_RANKER_DNN, 0);
        plan(ctx, PS_RANKER_DNN, 3);
        plan(ctx, PS_RANKER_DEFAULT, 3);
        for (int fast = 0; fast <= 1; fast++) {
            conv_default(ctx, 2, fast);
            conv_default(ctx, 1, fast);
        }
        conv_expert_rule(ctx);
        even_split_rule();
        gemm_default(ctx);
        gemm_panel_rule();
        gemm_in_place_rule();
        tournament_top(ctx);
        timing(ctx);
        ps_context_destroy(ctx);
    }
    if (tu_failures) {
        printf("test_dnn: FAILED %d of %d checks\n", tu_failures, tu_checks);
        return 1;
    }
    printf("test_dnn: all %d checks passed\n", tu_checks);
    return 0;
}
