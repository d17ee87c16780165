/* Public analysis object (include/polysci/analysis.h) and its JSON form. */
#include "polysci/analysis.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/model.h"
#include "core/error.h"

#define PSA_MAX_DEPS (4 * PSA_NARR)
#define PSA_ELEM_BYTES 4

typedef struct psa_entry {
    int arr;
    ps_dep_kind kind;
    psa_dep d;
} psa_entry;

struct ps_analysis {
    psa_model m;
    int method;
    int ndep;
    psa_entry dep[PSA_MAX_DEPS];
};

static const char *const kind_names[4] = {"RAR", "RAW", "WAR", "WAW"};

void ps_analysis_options_init(ps_analysis_options *opts)
{
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->num_threads = 1;
    opts->method = PS_ANALYSIS_FAST;
}

static ps_status check_opts(const ps_analysis_options *opts, ps_analysis_options *o)
{
    ps_analysis_options_init(o);
    if (!opts) return PS_SUCCESS;
    if (opts->struct_size != sizeof *opts)
        return ps_error(PS_ERR_INVALID_ARG, "analysis options: struct_size %zu, expected %zu (call ps_analysis_options_init)",
                        opts->struct_size, sizeof *opts);
    if (opts->num_threads < 0)
        return ps_error(PS_ERR_INVALID_ARG, "analysis options: num_threads %d < 0", opts->num_threads);
    if (opts->method != PS_ANALYSIS_FAST && opts->method != PS_ANALYSIS_ISL)
        return ps_error(PS_ERR_INVALID_ARG, "analysis options: unknown method %d", (int)opts->method);
    *o = *opts;
    return PS_SUCCESS;
}

/* Runs the model and lists its dependences. Takes the model. */
static ps_status finish(psa_model *m, const ps_analysis_options *o, ps_analysis **out)
{
    ps_analysis *a = calloc(1, sizeof *a);
    if (!a) {
        psa_model_release(m);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
    }
    a->m = *m;
    a->method = o->method;
    ps_status st;
    if (o->method == PS_ANALYSIS_ISL) {
        psa_dep (*dk)[PSA_NARR] = calloc(4, sizeof *dk);
        if (!dk) {
            st = ps_error(PS_ERR_OUT_OF_MEMORY, "analysis: out of memory");
        } else if (!(st = psa_analyze_isl(&a->m, dk))) {
            for (int i = 0; i < PSA_NARR; i++) {
                int arr = a->m.order[i];
                for (int k = 0; k < 4; k++) {
                    if (!dk[k][arr].exists) continue;
                    a->dep[a->ndep].arr = arr;
                    a->dep[a->ndep].kind = (ps_dep_kind)k;
                    a->dep[a->ndep].d = dk[k][arr];
                    a->ndep++;
                }
            }
        }
        free(dk);
    } else {
        psa_dep d[PSA_NARR];
        if (!(st = psa_analyze_fast(&a->m, d))) {
            for (int i = 0; i < PSA_NARR; i++) {
                int arr = a->m.order[i];
                if (!d[arr].exists) continue;
                /* Inputs are only read; the output is read and written by
                 * every iteration that touches an element. */
                int nk = arr == PSA_OUT ? 4 : 1;
                for (int k = 0; k < nk; k++) {
                    a->dep[a->ndep].arr = arr;
                    a->dep[a->ndep].kind = (ps_dep_kind)k;
                    a->dep[a->ndep].d = d[arr];
                    a->ndep++;
                }
            }
        }
    }
    if (st) {
        ps_analysis_destroy(a);
        return st;
    }
    *out = a;
    return PS_SUCCESS;
}

ps_status ps_analysis_create(const ps_desc *desc, const ps_schedule *sched, const ps_analysis_options *opts,
                             ps_analysis **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_create: out is NULL");
    *out = NULL;
    if (!desc || !sched) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_create: desc or sched is NULL");
    ps_analysis_options o;
    ps_status st = check_opts(opts, &o);
    if (st) return st;
    psa_model m;
    if ((st = psa_model_from_schedule(desc, sched, o.num_threads, &m))) return st;
    return finish(&m, &o, out);
}

ps_status ps_analysis_create_matmul(int64_t M, int64_t N, int64_t K, const char *order, const ps_analysis_options *opts,
                                    ps_analysis **out)
{
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_create_matmul: out is NULL");
    *out = NULL;
    ps_analysis_options o;
    ps_status st = check_opts(opts, &o);
    if (st) return st;
    psa_model m;
    if ((st = psa_model_matmul(M, N, K, order, &m))) return st;
    return finish(&m, &o, out);
}

void ps_analysis_destroy(ps_analysis *a)
{
    if (!a) return;
    psa_model_release(&a->m);
    free(a);
}

int ps_analysis_num_dependences(const ps_analysis *a) { return a ? a->ndep : 0; }

int ps_analysis_element_bytes(const ps_analysis *a)
{
    (void)a;
    return PSA_ELEM_BYTES;
}

static const psa_entry *entry(const ps_analysis *a, int i)
{
    if (!a || i < 0 || i >= a->ndep) return NULL;
    return &a->dep[i];
}

ps_status ps_analysis_get_dependence(const ps_analysis *a, int i, ps_dependence_info *info)
{
    if (!a || !info) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_get_dependence: NULL argument");
    const psa_entry *e = entry(a, i);
    if (!e) return ps_error(PS_ERR_INVALID_ARG, "ps_analysis_get_dependence: index %d out of range [0, %d)", i, a->ndep);
    info->array = a->m.arr_name[e->arr];
    info->kind = e->kind;
    info->kind_name = kind_names[e->kind];
    info->ws_min = e->d.ws_min;
    info->ws_max = e->d.ws_max;
    info->ws_min_bytes = e->d.ws_min * PSA_ELEM_BYTES;
    info->ws_max_bytes = e->d.ws_max * PSA_ELEM_BYTES;
    info->ws_min_shared = e->d.ws_min_shared;
    info->ws_max_shared = e->d.ws_max_shared;
    info->ws_min_shared_bytes = e->d.ws_min_shared * PSA_ELEM_BYTES;
    info->ws_max_shared_bytes = e->d.ws_max_shared * PSA_ELEM_BYTES;
    info->shared_only = e->d.shared_only;
    return PS_SUCCESS;
}

const char *ps_analysis_dep_array(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? a->m.arr_name[e->arr] : NULL;
}
const char *ps_analysis_dep_kind(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? kind_names[e->kind] : NULL;
}
int64_t ps_analysis_dep_ws_min(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? e->d.ws_min : -1;
}
int64_t ps_analysis_dep_ws_max(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? e->d.ws_max : -1;
}
int64_t ps_analysis_dep_ws_min_bytes(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? e->d.ws_min * PSA_ELEM_BYTES : -1;
}
int64_t ps_analysis_dep_ws_max_bytes(const ps_analysis *a, int i)
{
    const psa_entry *e = entry(a, i);
    return e ? e->d.ws_max * PSA_ELEM_BYTES : -1;
}

/* ------------------------------------------------------------------ JSON */

typedef struct jbuf {
    char *buf;
    size_t len, pos; /* pos counts every byte, also those that did not fit */
} jbuf;

static void jprintf(jbuf *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jprintf(jbuf *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = j->pos < j->len ? j->len - j->pos : 0;
    int n = vsnprintf(room ? j->buf + j->pos : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) j->pos += (size_t)n;
}

static void jstring(jbuf *j, const char *s)
{
    jprintf(j, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') jprintf(j, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) jprintf(j, "\\u%04x", (unsigned)(unsigned char)*s);
        else jprintf(j, "%c", *s);
    }
    jprintf(j, "\"");
}

static void jvector(jbuf *j, const psa_model *m, const int64_t *v)
{
    jprintf(j, "[");
    for (int l = 0; l < m->nlev; l++) jprintf(j, "%s%" PRId64, l ? ", " : "", v[l]);
    jprintf(j, "]");
}

static const char *op_name(psa_op op)
{
    return op == PSA_OP_CONV ? "conv" : op == PSA_OP_GEMM ? "gemm" : "matmul";
}

ps_status ps_analysis_to_json(const ps_analysis *a, char *buf, size_t len, size_t *needed)
{
    if (!a) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_to_json: analysis is NULL");
    if (!buf && len) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_to_json: buf is NULL");
    jbuf j = {buf, len, 0};
    const psa_model *m = &a->m;
    jprintf(&j, "{\"op\": \"%s\", \"method\": \"%s\", \"num_threads\": %d, \"element_bytes\": %d, \"loops\": [",
            op_name(m->op), a->method == PS_ANALYSIS_ISL ? "isl" : "fast", m->nthreads, PSA_ELEM_BYTES);
    for (int l = 0; l < m->nlev; l++) {
        if (l) jprintf(&j, ", ");
        jstring(&j, m->lev[l].name);
    }
    jprintf(&j, "], \"dependences\": [");
    for (int i = 0; i < a->ndep; i++) {
        const psa_entry *e = &a->dep[i];
        const psa_dep *d = &e->d;
        jprintf(&j, "%s{\"array\": ", i ? ", " : "");
        jstring(&j, m->arr_name[e->arr]);
        jprintf(&j,
                ", \"kind\": \"%s\", \"ws_min\": %" PRId64 ", \"ws_max\": %" PRId64 ", \"ws_min_bytes\": %" PRId64
                ", \"ws_max_bytes\": %" PRId64 ", \"ws_min_shared\": %" PRId64 ", \"ws_max_shared\": %" PRId64
                ", \"ws_min_shared_bytes\": %" PRId64 ", \"ws_max_shared_bytes\": %" PRId64 ", \"shared_only\": %s",
                kind_names[e->kind], d->ws_min, d->ws_max, d->ws_min * PSA_ELEM_BYTES, d->ws_max * PSA_ELEM_BYTES,
                d->ws_min_shared, d->ws_max_shared, d->ws_min_shared * PSA_ELEM_BYTES,
                d->ws_max_shared * PSA_ELEM_BYTES, d->shared_only ? "true" : "false");
        jprintf(&j, ", \"source\": ");
        jvector(&j, m, d->src);
        jprintf(&j, ", \"min_target\": ");
        jvector(&j, m, d->tmin);
        jprintf(&j, ", \"max_target\": ");
        jvector(&j, m, d->tmax);
        jprintf(&j, "}");
    }
    jprintf(&j, "]}");
    if (needed) *needed = j.pos;
    if (j.pos >= len) {
        if (len) buf[len - 1] = 0;
        return ps_error(PS_ERR_BUFFER_TOO_SMALL, "ps_analysis_to_json: %zu bytes needed, buffer has %zu", j.pos + 1,
                        len);
    }
    return PS_SUCCESS;
}

ps_status ps_analysis_write_json(const ps_analysis *a, FILE *f)
{
    if (!a || !f) return ps_error(PS_ERR_NULL_POINTER, "ps_analysis_write_json: NULL argument");
    size_t need = 0;
    ps_status st = ps_analysis_to_json(a, NULL, 0, &need);
    if (st && st != PS_ERR_BUFFER_TOO_SMALL) return st;
    char *buf = malloc(need + 1);
    if (!buf) return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_analysis_write_json: out of memory");
    st = ps_analysis_to_json(a, buf, need + 1, NULL);
    if (!st && (fputs(buf, f) < 0 || fputc('\n', f) == EOF)) st = ps_error(PS_ERR_IO, "ps_analysis_write_json: write failed");
    free(buf);
    return st;
}
