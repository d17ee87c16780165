/* polysci CLI — strict option parsing; the planning and checking options. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_strict_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    const char *p = text;
    int digits = 0;
    if (*p == '+' || *p == '-') p++;
    for (; *p; p++, digits++)
        if (!isdigit((unsigned char)*p)) break;
    if (!digits || *p) return 1;
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE || v < min || v > max) return 2;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, int64_t min, int64_t max,
                  int64_t *out)
{
    int rc = cli_strict_int(text, min, max, out);
    if (rc == 1)
        fprintf(stderr, "polysci %s: invalid value '%s' for --%s: expected a decimal integer\n",
                cmd, text, opt);
    else if (rc == 2 && max == INT64_MAX)
        fprintf(stderr, "polysci %s: invalid value '%s' for --%s: must be an integer >= %" PRId64 "\n",
                cmd, text, opt, min);
    else if (rc == 2)
        fprintf(stderr, "polysci %s: invalid value '%s' for --%s: must be an integer in [%" PRId64
                ", %" PRId64 "]\n", cmd, text, opt, min, max);
    return rc ? -1 : 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *text, double *out)
{
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    /* strtod accepts leading blanks, hex floats, "inf" and "nan": refuse them. */
    int bad = !*text || isspace((unsigned char)*text) || end == text || *end || errno == ERANGE ||
              !isfinite(v) || strchr(text, 'x') || strchr(text, 'X');
    if (bad) {
        fprintf(stderr, "polysci %s: invalid value '%s' for --%s: expected a finite decimal number\n",
                cmd, text, opt);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_choice(const char *cmd, const char *opt, const char *text, const char *const *choices,
               int n_choices)
{
    for (int i = 0; i < n_choices; i++)
        if (!strcmp(text, choices[i])) return i;
    fprintf(stderr, "polysci %s: invalid value '%s' for --%s: expected one of", cmd, text, opt);
    for (int i = 0; i < n_choices; i++) fprintf(stderr, "%s %s", i ? "," : "", choices[i]);
    fprintf(stderr, "\n");
    return -1;
}

int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, size_t n_opts)
{
    for (size_t i = 0; i < n_opts; i++) opts[i].seen = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) return -1;
        if (strncmp(arg, "--", 2) || !arg[2]) {
            fprintf(stderr, "polysci %s: unexpected argument '%s' (see 'polysci %s --help')\n",
                    cmd, arg, cmd);
            return CLI_USAGE;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = NULL;
        for (size_t k = 0; k < n_opts; k++)
            if (strlen(opts[k].name) == name_len && !strncmp(opts[k].name, name, name_len)) {
                o = &opts[k];
                break;
            }
        if (!o) {
            fprintf(stderr, "polysci %s: unknown option '--%.*s' (see 'polysci %s --help')\n",
                    cmd, (int)name_len, name, cmd);
            return CLI_USAGE;
        }
        if (o->seen) {
            fprintf(stderr, "polysci %s: option --%s given more than once\n", cmd, o->name);
            return CLI_USAGE;
        }
        o->seen = 1;
        if (o->type == CLI_OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "polysci %s: option --%s takes no value\n", cmd, o->name);
                return CLI_USAGE;
            }
            *(int *)o->value = 1;
            continue;
        }
        const char *val;
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) {
                fprintf(stderr, "polysci %s: option --%s needs a value\n", cmd, o->name);
                return CLI_USAGE;
            }
            val = argv[++i];
        }
        switch (o->type) {
        case CLI_OPT_INT:
            if (cli_parse_int(cmd, o->name, val, o->min, o->max, (int64_t *)o->value)) return CLI_USAGE;
            break;
        case CLI_OPT_FLOAT:
            if (cli_parse_double(cmd, o->name, val, (double *)o->value)) return CLI_USAGE;
            break;
        case CLI_OPT_STRING:
            if (!*val) {
                fprintf(stderr, "polysci %s: option --%s needs a non-empty value\n", cmd, o->name);
                return CLI_USAGE;
            }
            *(const char **)o->value = val;
            break;
        case CLI_OPT_FLAG:
            break;
        }
    }
    return CLI_OK;
}

void cli_print_options(FILE *f, const cli_opt *opts, size_t n_opts)
{
    for (size_t i = 0; i < n_opts; i++) {
        const char *help = opts[i].help ? opts[i].help : "";
        /* help is "ARG  description" for options with a value, "description" for flags. */
        char left[64];
        if (opts[i].type == CLI_OPT_FLAG) {
            snprintf(left, sizeof left, "--%s", opts[i].name);
        } else {
            const char *sp = strstr(help, "  ");
            int arg_len = sp ? (int)(sp - help) : 0;
            snprintf(left, sizeof left, "--%s %.*s", opts[i].name, arg_len, help);
            help = sp ? sp + 2 : help;
        }
        fprintf(f, "  %-26s %s\n", left, help);
    }
}

void cli_plan_args_defaults(cli_plan_args *p)
{
    p->threads = 0;
    p->ranker = "default";
    p->top_k = 0;
    p->budget_ms = 0.0;
    p->no_cache = 0;
}

int cli_plan_args_options(const char *cmd, const cli_plan_args *p, ps_ranker *ranker, ps_plan_options *po)
{
    int r = cli_choice(cmd, "ranker", p->ranker, cli_ranker_names, (int)CLI_ARRAY_LEN(cli_ranker_names));
    if (r < 0) return CLI_USAGE;
    *ranker = (ps_ranker)r;
    if (po) {
        ps_plan_options_init(po);
        po->num_threads = (int)p->threads;
        po->ranker = *ranker;
        po->top_k = (int)p->top_k;
        po->time_budget_ms = p->budget_ms;
        po->flags = p->no_cache ? PS_PLAN_NO_CACHE : 0u;
    }
    return CLI_OK;
}

void cli_check_args_defaults(cli_check_args *c)
{
    c->tol = 1e-4;
    c->seed = 1;
}

int cli_check_args_valid(const char *cmd, const cli_check_args *c)
{
    if (c->tol < 0.0) {
        fprintf(stderr, "polysci %s: invalid value for --tol: must be >= 0\n", cmd);
        return CLI_USAGE;
    }
    return CLI_OK;
}
