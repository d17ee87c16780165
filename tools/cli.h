/* polysci CLI — shared declarations of the command-line tool.
 *
 * Every .c file in tools/ is part of the `polysci` executable. A subcommand is a
 * function `int cmd_NAME(int argc, char **argv)` (argv[0] is the command's
 * name) registered with one line in the command table of tools/polysci.c.
 * Exit codes: 0 success, 1 failure (library error, result mismatch, I/O),
 * 2 usage error (bad option or value). */
#ifndef POLYSCI_CLI_H
#define POLYSCI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "polysci/polysci.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

/* ---- subcommands (one entry each in polysci.c) ---- */
int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* Names of the ps_ranker values, in enum order ("default", "cost", "dnn", "none"). */
extern const char *const cli_ranker_names[4];

/* ---- strict option parsing (cli_args.c) ---- */
typedef enum cli_opt_type {
    CLI_OPT_INT,    /* int64_t, decimal, within [min, max] */
    CLI_OPT_FLOAT,  /* double, finite */
    CLI_OPT_FLAG,   /* int, set to 1; takes no value */
    CLI_OPT_STRING  /* const char *, points into argv */
} cli_opt_type;

typedef struct cli_opt {
    const char *name;  /* long name without the leading "--" */
    cli_opt_type type;
    void *value;       /* int64_t*, double*, int*, const char** per type */
    int64_t min, max;  /* CLI_OPT_INT only */
    const char *help;  /* one line for the usage text; "ARG  text" form */
    int seen;          /* set by cli_parse when given on the command line */
} cli_opt;

/* Parses "--name VALUE", "--name=VALUE" and flags. Positional arguments are
 * rejected. Returns CLI_OK, CLI_USAGE (message printed to stderr) or -1 when
 * --help/-h was given (usage printed to stdout by the caller). */
int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, size_t n_opts);
/* Prints the option list of a command. */
void cli_print_options(FILE *f, const cli_opt *opts, size_t n_opts);
/* Strict decimal integer (optional sign, digits only) in [min, max]: returns 0,
 * 1 when the text is not an integer, 2 when it is out of range. Silent. */
int cli_strict_int(const char *text, int64_t min, int64_t max, int64_t *out);
/* Strict conversions; print "polysci CMD: invalid value ..." and return -1 on error. */
int cli_parse_int(const char *cmd, const char *opt, const char *text, int64_t min, int64_t max,
                  int64_t *out);
int cli_parse_double(const char *cmd, const char *opt, const char *text, double *out);
/* Index of `text` in `choices` (case-sensitive), or -1 with a message. */
int cli_choice(const char *cmd, const char *opt, const char *text, const char *const *choices,
               int n_choices);

/* ---- utilities (cli_util.c) ---- */
double cli_now_ms(void);                     /* monotonic clock, milliseconds */
double cli_median(double *v, int n);         /* sorts v in place */
/* 64-byte aligned allocation of at least `bytes` (rounded up); NULL for 0 or
 * on failure. Free with free(). */
void *cli_alloc(size_t bytes);
/* Product of n non-negative factors into *out (element counts: also at
 * most SIZE_MAX/16); returns 0 on overflow. */
int cli_mul_size(size_t *out, const int64_t *f, int n);
/* Deterministic uniform values in [-1, 1). */
void cli_fill_random(float *v, size_t n, uint64_t seed);
void cli_fill_nan(float *v, size_t n);
/* Prints "polysci: WHAT failed: PS_ERR_X: message" to stderr; returns CLI_FAIL. */
int cli_report_status(const char *what, ps_status st);
/* Plan description into a malloc'd string (caller frees), NULL on error. */
char *cli_plan_describe(const ps_plan *plan);
/* Text form of the plan's schedule into buf ("?" on error). */
void cli_plan_schedule_text(const ps_plan *plan, char *buf, size_t len);
/* Writes s as a JSON string literal (with quotes). */
void cli_json_string(FILE *f, const char *s);
/* Finds the shared/ folder (with layers/ inside): $POLYSCI_SHARED, then the
 * ancestors of the executable's folder, of the source tree and of the working
 * folder (each X tried as X/shared), finally the source tree's bench/ (which
 * keeps copies of the layer lists). Returns 1 and fills buf on success. */
int cli_find_shared(char *buf, size_t len);

/* ---- double-precision references (reference.c) ---- */
/* dst: N*K*OH*OW doubles in d->layout. weights in d->weight_layout, bias K
 * floats (when PS_POST_BIAS). OpenMP-parallel. Returns 0, or -1 when out of memory. */
int ref_conv_fwd(const ps_conv_desc *d, const float *src, const float *weights,
                 const float *bias, double *dst);
/* Output size the reference uses (independent of the library). */
void ref_conv_out_size(const ps_conv_desc *d, int64_t *OH, int64_t *OW);

/* Storage geometry of a GEMM operand: elements spanned by the buffer. */
typedef struct ref_gemm_geom {
    int64_t lda, ldb, ldc;        /* effective (tight when the desc says 0) */
    size_t a_elems, b_elems, c_elems;
} ref_gemm_geom;
/* Fills the geometry; returns -1 if a leading dimension is too small or a
 * size overflows. */
int ref_gemm_geometry(const ps_gemm_desc *g, ref_gemm_geom *geom);
/* c (c_elems doubles): starts as c0 everywhere, logical elements set to
 * alpha*op(A)*op(B) + beta*c0. Returns 0, or -1 when out of memory. */
int ref_gemm(const ps_gemm_desc *g, const float *a, const float *b, const float *c0, double *c);

typedef struct ref_cmp {
    double max_abs_err;   /* max |out - ref| (inf when out has NaN/inf) */
    double max_abs_ref;   /* max |ref| */
    double rel_err;       /* max_abs_err / max_abs_ref (max_abs_ref 0: / 1) */
    size_t worst;         /* index of the largest error */
    size_t n_nonfinite;   /* outputs that are NaN or infinite */
} ref_cmp;
void ref_compare(const float *out, const double *ref, size_t n, ref_cmp *res);

/* ---- plan, run and check one operation (harness.c) ---- */
typedef struct cli_check_opts {
    const ps_schedule *schedule; /* NULL: the planner chooses */
    int num_threads;             /* 0: the context's */
    ps_ranker ranker;            /* ps_plan_options.ranker */
    int top_k;                   /* ps_plan_options.top_k */
    unsigned plan_flags;         /* ps_plan_options.flags */
    int reps;                    /* timed executions (>= 1) */
    double tol;                  /* pass if max rel err <= tol and all finite */
    int describe;                /* fill cli_result.description */
    uint64_t seed;               /* for the random operands */
} cli_check_opts;

typedef struct cli_result {
    double flops;                /* nominal: 2*N*K*C*OH*OW*R*S or 2*M*N*K */
    double plan_ms, pack_ms, ref_ms;
    double exec_ms, exec_ms_min; /* median and minimum of reps */
    double gflops;               /* flops / median */
    int threads;                 /* the plan's thread count */
    ref_cmp cmp;                 /* worst over the checked executions */
    int ok;                      /* 1: ran and matched the reference */
    char schedule[512];          /* text form of the schedule the plan runs */
    char *description;           /* ps_plan_describe (malloc'd) or NULL */
    char error[1024];            /* non-empty when a call failed */
} cli_result;

/* Plans `desc`, packs weights, runs once on NaN-filled output and checks
 * against the reference, then runs `reps` timed executions and checks again.
 * Returns CLI_OK when everything ran (res->ok says whether it matched) or
 * CLI_FAIL when a library call or allocation failed (res->error says which).
 * Free res->description with free(). */
int cli_check(ps_context *ctx, const ps_desc *desc, const cli_check_opts *opts, cli_result *res);

#endif
