/* PolyScientist-DNN: batched MLP inference and the round-robin tournament. */
#include "ranking/dnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Games evaluated together. The forward pass keeps a batch as [neuron][game]
 * so every inner loop runs over BATCH contiguous floats with one weight
 * broadcast: plain loops gcc vectorizes at any width. Every game goes through
 * the same lanes in the same order, so its result does not depend on which
 * batch, thread or ISA computed it (no FMA contraction in ISO C mode). */
#define BATCH 32

typedef void (*forward_fn)(const ps_dnn_model *m, const float x[PS_DNN_IN][BATCH], float z[PS_DNN_OUT][BATCH]);

/* out[o][p] = b[o] + sum_i w[o][i] * in[i][p]. Four outputs at a time:
 * each accumulator is a chain of nin dependent multiply-adds, so one
 * output's two vectors of games would leave the FMA units waiting on their
 * latency; eight independent chains cover it. Each output's sum keeps its
 * order, so the logits do not depend on the blocking. */
static inline __attribute__((always_inline)) void dense(int nout, int nin, const float *w, const float *b,
                                                        const float *in, float *out)
{
    int o = 0;
    for (; o + 4 <= nout; o += 4) {
        float acc[4][BATCH];
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < BATCH; p++) acc[k][p] = b[o + k];
        for (int i = 0; i < nin; i++) {
            const float *x = in + i * BATCH;
            const float w0 = w[(o + 0) * nin + i], w1 = w[(o + 1) * nin + i], w2 = w[(o + 2) * nin + i],
                        w3 = w[(o + 3) * nin + i];
            for (int p = 0; p < BATCH; p++) {
                acc[0][p] += w0 * x[p];
                acc[1][p] += w1 * x[p];
                acc[2][p] += w2 * x[p];
                acc[3][p] += w3 * x[p];
            }
        }
        memcpy(out + o * BATCH, acc, sizeof acc);
    }
    for (; nout % 4 && o < nout; o++) {
        float acc[BATCH];
        for (int p = 0; p < BATCH; p++) acc[p] = b[o];
        for (int i = 0; i < nin; i++) {
            const float wi = w[o * nin + i];
            const float *x = in + i * BATCH;
            for (int p = 0; p < BATCH; p++) acc[p] += wi * x[p];
        }
        memcpy(out + o * BATCH, acc, sizeof acc);
    }
}

static inline __attribute__((always_inline)) void relu(float *v, int n)
{
    for (int i = 0; i < n; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
}

static inline __attribute__((always_inline)) void softsign(float *v, int n)
{
    for (int i = 0; i < n; i++) v[i] = v[i] / (1.0f + fabsf(v[i]));
}

/* The logits z of BATCH games. */
static inline __attribute__((always_inline)) void forward_body(const ps_dnn_model *m,
                                                               const float x[PS_DNN_IN][BATCH],
                                                               float z[PS_DNN_OUT][BATCH])
{
    float h1[PS_DNN_H1][BATCH], h2[PS_DNN_H2][BATCH], h3[PS_DNN_H3][BATCH], h4[PS_DNN_H4][BATCH];
    dense(PS_DNN_H1, PS_DNN_IN, &m->w1[0][0], m->b1, &x[0][0], &h1[0][0]);
    relu(&h1[0][0], PS_DNN_H1 * BATCH);
    dense(PS_DNN_H2, PS_DNN_H1, &m->w2[0][0], m->b2, &h1[0][0], &h2[0][0]);
    relu(&h2[0][0], PS_DNN_H2 * BATCH);
    dense(PS_DNN_H3, PS_DNN_H2, &m->w3[0][0], m->b3, &h2[0][0], &h3[0][0]);
    softsign(&h3[0][0], PS_DNN_H3 * BATCH);
    dense(PS_DNN_H4, PS_DNN_H3, &m->w4[0][0], m->b4, &h3[0][0], &h4[0][0]);
    relu(&h4[0][0], PS_DNN_H4 * BATCH);
    dense(PS_DNN_OUT, PS_DNN_H4, &m->w5[0][0], m->b5, &h4[0][0], &z[0][0]);
}

/* One body, compiled for the widest vectors the CPU has (chosen at run time,
 * as lib/machine/calibrate.c does); without contraction the arithmetic is the
 * same IEEE operations at every width. */
static void forward_generic(const ps_dnn_model *m, const float x[PS_DNN_IN][BATCH], float z[PS_DNN_OUT][BATCH])
{
    forward_body(m, x, z);
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) static void forward_avx512(const ps_dnn_model *m, const float x[PS_DNN_IN][BATCH],
                                                              float z[PS_DNN_OUT][BATCH])
{
    forward_body(m, x, z);
}

__attribute__((target("avx2"))) static void forward_avx2(const ps_dnn_model *m, const float x[PS_DNN_IN][BATCH],
                                                         float z[PS_DNN_OUT][BATCH])
{
    forward_body(m, x, z);
}
#endif

static forward_fn pick_forward(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx512f")) return forward_avx512;
    if (__builtin_cpu_supports("avx2")) return forward_avx2;
#endif
    return forward_generic;
}

void ps_dnn_stats(const ps_ranked *v, double s[PS_DNN_STATS])
{
    memcpy(s, v->ws, sizeof v->ws);
    memcpy(s + PS_COST_LEVELS, v->shape, sizeof v->shape);
}

void ps_dnn_features(const double a[PS_DNN_STATS], const double b[PS_DNN_STATS], float x[PS_DNN_IN])
{
    for (int l = 0; l < PS_DNN_STATS; l++) {
        const double s = a[l] + b[l];
        /* Neither variant uses this level: a tie, not a division by zero. */
        x[l] = s > 0.0 ? (float)(a[l] / s) : 0.5f;
        x[PS_DNN_STATS + l] = s > 0.0 ? (float)(b[l] / s) : 0.5f;
    }
}

/* Logits of one game: the batched pass with every lane the same game, so a
 * single inference is bit for bit what the tournament computes. */
static void logits_one(const ps_dnn_model *m, const float x[PS_DNN_IN], float z[PS_DNN_OUT])
{
    float xb[PS_DNN_IN][BATCH], zb[PS_DNN_OUT][BATCH];
    for (int i = 0; i < PS_DNN_IN; i++)
        for (int p = 0; p < BATCH; p++) xb[i][p] = x[i];
    pick_forward()(m, xb, zb);
    z[0] = zb[0][0];
    z[1] = zb[1][0];
}

void ps_dnn_infer(const ps_dnn_model *m, const float x[PS_DNN_IN], float p[PS_DNN_OUT])
{
    float z[PS_DNN_OUT];
    logits_one(m, x, z);
    /* Two-way softmax in the form that cannot overflow. */
    const float d = z[1] - z[0];
    if (d > 0.0f) {
        const float e = expf(-d);
        p[0] = e / (1.0f + e);
        p[1] = 1.0f / (1.0f + e);
    } else {
        const float e = expf(d);
        p[0] = 1.0f / (1.0f + e);
        p[1] = e / (1.0f + e);
    }
}

static int decide(float z0, float z1)
{
    const float d = z0 - z1;
    return d > PS_DNN_LOGIT_THRESHOLD ? 1 : d < -PS_DNN_LOGIT_THRESHOLD ? -1 : 0;
}

int ps_dnn_game(const ps_dnn_model *m, const float x[PS_DNN_IN])
{
    float z[PS_DNN_OUT];
    logits_one(m, x, z);
    return decide(z[0], z[1]);
}

/* Games of class i against every class j: as_b = 0 plays (i as A, j as B),
 * as_b = 1 plays (j as A, i as B); out[j] = +1 when A wins, -1 when B wins,
 * 0 for a draw. */
static void play_line(const ps_dnn_model *m, forward_fn fwd, const double (*ws)[PS_DNN_STATS], int n, int i, int as_b,
                      signed char *out)
{
    float x[PS_DNN_IN][BATCH], z[PS_DNN_OUT][BATCH];
    for (int j0 = 0; j0 < n; j0 += BATCH) {
        const int nb = n - j0 < BATCH ? n - j0 : BATCH;
        for (int p = 0; p < BATCH; p++) {
            float f[PS_DNN_IN];
            /* Lanes past the end replay the last game: defined data, results unused. */
            const double *other = ws[j0 + (p < nb ? p : nb - 1)];
            ps_dnn_features(as_b ? other : ws[i], as_b ? ws[i] : other, f);
            for (int k = 0; k < PS_DNN_IN; k++) x[k][p] = f[k];
        }
        fwd(m, x, z);
        for (int p = 0; p < nb; p++) out[j0 + p] = (signed char)decide(z[0][p], z[1][p]);
    }
}

typedef struct ws_key {
    double ws[PS_DNN_STATS];
    int pos;
} ws_key;

/* Any total order on statistics will do: only equality is used. */
static int by_ws_only(const ws_key *a, const ws_key *b)
{
    for (int l = 0; l < PS_DNN_STATS; l++)
        if (a->ws[l] != b->ws[l]) return a->ws[l] < b->ws[l] ? -1 : 1;
    return 0;
}

static int by_ws(const void *pa, const void *pb)
{
    const ws_key *a = pa, *b = pb;
    const int c = by_ws_only(a, b);
    return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

typedef struct standing {
    int wins, losses, pos;
} standing;

static int by_standing(const void *pa, const void *pb)
{
    const standing *a = pa, *b = pb;
    if (a->wins != b->wins) return a->wins > b->wins ? -1 : 1;
    if (a->losses != b->losses) return a->losses < b->losses ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Class a's tally from its full row (a as A) and column (a as B) of res. */
static void class_tally(const signed char *res, const int *count, int u, int a, int *wins, int *losses)
{
    /* Against its own class the input is all 0.5 in both orders, so the pair
     * splits its two games (one win, one loss each) or draws both. */
    const int self = res[(size_t)a * u + a] != 0 ? count[a] - 1 : 0;
    int w = self, l = self;
    for (int b = 0; b < u; b++) {
        if (b == a) continue;
        const int ab = res[(size_t)a * u + b], ba = res[(size_t)b * u + a]; /* a as A; b as A */
        w += count[b] * ((ab > 0) + (ba < 0));
        l += count[b] * ((ab < 0) + (ba > 0));
    }
    *wins = w;
    *losses = l;
}

/* Best first: the classes whose tally could still reach the top places are
 * played out (row and column), the one with the highest upper bound first,
 * until no unplayed class can reach the top-th place's wins. A class's bound
 * is its wins against the played classes plus two per variant of every other
 * class; each game is the full round robin's, so every played class's tally
 * is exact. Returns the number of played classes; sets ub[c] for the others. */
static int bounded_rounds(const ps_dnn_model *m, forward_fn fwd, const double (*uws)[PS_DNN_STATS], const int *count,
                          const int *first, int u, int n, int top, int nt, signed char *res, int *wins, int *losses,
                          int *ub, unsigned char *played, int *order, signed char *lines)
{
    for (int c = 0; c < u; c++) {
        ub[c] = (count[c] - 1) + 2 * (n - count[c]);
        played[c] = 0;
    }
    int np = 0;
    for (;;) {
        /* The top-th place's wins among the played classes (ordered as the
         * final ranking orders them: wins, losses, first position). */
        int wk = -1;
        {
            int k = 0;
            for (int c = 0; c < u; c++)
                if (played[c]) order[k++] = c;
            for (int i = 1; i < k; i++) { /* insertion sort: k is small */
                const int c = order[i];
                int j = i - 1;
                while (j >= 0 && (wins[order[j]] < wins[c] ||
                                  (wins[order[j]] == wins[c] && (losses[order[j]] > losses[c] ||
                                                                 (losses[order[j]] == losses[c] && first[order[j]] > first[c]))))) {
                    order[j + 1] = order[j];
                    j--;
                }
                order[j + 1] = c;
            }
            int seen = 0;
            for (int i = 0; i < k && wk < 0; i++)
                if ((seen += count[order[i]]) >= top) wk = wins[order[i]];
        }
        /* The next classes to play: the highest bounds (then Eq. 1's order). */
        int pick[64], npick = 0;
        const int want = nt < 64 ? nt : 64;
        while (npick < want) {
            int best = -1;
            for (int c = 0; c < u; c++) {
                if (played[c]) continue;
                int taken = 0;
                for (int i = 0; i < npick; i++) taken |= pick[i] == c;
                if (taken) continue;
                if (best < 0 || ub[c] > ub[best] || (ub[c] == ub[best] && first[c] < first[best])) best = c;
            }
            if (best < 0 || (wk >= 0 && ub[best] < wk)) break;
            pick[npick++] = best;
        }
        if (npick == 0) break;
        /* Rows and columns are independent games: one per thread. A column
         * goes to its own line first (a picked row holds one of its games). */
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && u >= 64)
        for (int t = 0; t < 2 * npick; t++) {
            const int c = pick[t / 2];
            play_line(m, fwd, uws, u, c, t % 2, t % 2 ? lines + (size_t)(t / 2) * u : res + (size_t)c * u);
        }
        for (int i = 0; i < npick; i++)
            for (int b = 0; b < u; b++) res[(size_t)b * u + pick[i]] = lines[(size_t)i * u + b];
        for (int i = 0; i < npick; i++) {
            const int c = pick[i];
            played[c] = 1;
            np++;
            class_tally(res, count, u, c, &wins[c], &losses[c]);
            for (int d = 0; d < u; d++) {
                if (played[d]) continue;
                const int got = (res[(size_t)d * u + c] > 0) + (res[(size_t)c * u + d] < 0);
                ub[d] -= count[c] * (2 - got);
            }
        }
    }
    return np;
}

ps_status ps_dnn_tournament(const ps_dnn_model *m, ps_ranking *r, int nthreads)
{
    return ps_dnn_tournament_top(m, r, nthreads, 0);
}

ps_status ps_dnn_tournament_top(const ps_dnn_model *m, ps_ranking *r, int nthreads, int top)
{
    const int n = r->n;
    r->exact = n;
    if (n < 2) {
        for (int i = 0; i < n; i++) r->v[i].wins = r->v[i].losses = 0;
        return PS_SUCCESS;
    }
    /* A game's outcome depends only on the two statistics vectors, and many
     * variants share theirs (loop orders the analysis cannot tell apart): the
     * games are played between the distinct vectors only and counted once per
     * variant pair, which gives exactly the full round robin's tally. */
    ws_key *keys = malloc((size_t)n * sizeof *keys);
    int *cls = malloc((size_t)n * sizeof *cls);   /* class of each position */
    int *count = malloc((size_t)n * sizeof *count); /* variants per class */
    int *first = malloc((size_t)n * sizeof *first); /* each class's first position */
    double (*uws)[PS_DNN_STATS] = malloc((size_t)n * sizeof *uws); /* each class's statistics */
    int *tally = malloc(4 * (size_t)n * sizeof *tally); /* wins, losses, bounds, order per class */
    unsigned char *played = malloc((size_t)n);
    standing *st = malloc((size_t)n * sizeof *st);
    ps_ranked *sorted = malloc((size_t)n * sizeof *sorted);
    signed char *res = NULL, *lines = NULL;
    int u = 0;
    const int nt = nthreads > 1 ? nthreads : 1;
    if (keys && cls && count && first && uws && tally && played && st && sorted) {
        for (int i = 0; i < n; i++) {
            ps_dnn_stats(&r->v[i], keys[i].ws);
            keys[i].pos = i;
        }
        qsort(keys, (size_t)n, sizeof *keys, by_ws);
        for (int k = 0; k < n; k++) {
            if (k == 0 || by_ws_only(&keys[k], &keys[k - 1])) {
                memcpy(uws[u], keys[k].ws, sizeof uws[u]);
                count[u] = 0;
                first[u++] = keys[k].pos;
            }
            cls[keys[k].pos] = u - 1;
            count[u - 1]++;
            if (keys[k].pos < first[u - 1]) first[u - 1] = keys[k].pos;
        }
        res = malloc((size_t)u * (size_t)u);
        lines = malloc((size_t)(nt < 64 ? nt : 64) * (size_t)u);
    }
    if (!res || !lines) {
        free(keys); free(cls); free(count); free(first); free(uws); free(tally); free(played); free(st); free(sorted);
        free(res); free(lines);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "DNN ranker: out of memory for a tournament of %d variants", n);
    }
    const forward_fn fwd = pick_forward();
    int *wins = tally, *losses = tally + u, *ub = tally + 2 * u, *order = tally + 3 * u;
    const double (*cws)[PS_DNN_STATS] = (const double(*)[PS_DNN_STATS])uws;
    int np = u;
    /* The bounded rounds pay where the field is large: each played class
     * costs two lines of u games, the round robin u lines. */
    if (top > 0 && top < n && u >= 64) {
        np = bounded_rounds(m, fwd, cws, count, first, u, n, top, nt, res, wins, losses, ub, played, order, lines);
    } else {
        /* Rows are independent and each game's outcome is fixed, so the
         * split over threads cannot change the result. Small fields are not
         * worth a parallel region. */
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && u >= 64)
        for (int a = 0; a < u; a++) play_line(m, fwd, cws, u, a, 0, res + (size_t)a * u);
        for (int a = 0; a < u; a++) {
            class_tally(res, count, u, a, &wins[a], &losses[a]);
            played[a] = 1;
        }
    }
    /* Played classes by their tally; the others after them, by bound (their
     * wins and losses: against the played classes only). */
    int max_ub = -1;
    for (int a = 0; a < u; a++) {
        if (played[a]) continue;
        int w = 0, l = 0;
        for (int c = 0; c < u; c++) {
            if (!played[c]) continue;
            const int got = (res[(size_t)a * u + c] > 0) + (res[(size_t)c * u + a] < 0);
            const int lost = (res[(size_t)a * u + c] < 0) + (res[(size_t)c * u + a] > 0);
            w += count[c] * got;
            l += count[c] * lost;
        }
        wins[a] = w;
        losses[a] = l;
        if (ub[a] > max_ub) max_ub = ub[a];
    }
    for (int i = 0; i < n; i++) {
        const int c = cls[i];
        st[i] = (standing){played[c] ? wins[c] : -1 - (2 * n - ub[c]), losses[c], i};
    }
    qsort(st, (size_t)n, sizeof *st, by_standing);
    int exact = 0;
    for (int k = 0; k < n; k++) {
        const int c = cls[st[k].pos];
        sorted[k] = r->v[st[k].pos];
        sorted[k].wins = wins[c];
        sorted[k].losses = losses[c];
        /* A place is settled when no unplayed class can reach its wins. */
        if (exact == k && played[c] && wins[c] > max_ub) exact = k + 1;
    }
    memcpy(r->v, sorted, (size_t)n * sizeof *sorted);
    r->exact = np == u ? n : exact;
    free(keys); free(cls); free(count); free(first); free(uws); free(tally); free(played); free(st); free(sorted);
    free(res); free(lines);
    return PS_SUCCESS;
}
