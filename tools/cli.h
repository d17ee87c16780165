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
int cmd_info(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_rank(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_pipeline(int argc, char **argv);
/* polysci bench pipeline (cmd_bench_pipeline.c), dispatched by cmd_bench. */
int cli_bench_pipeline(int argc, char **argv);
/* polysci bench stencil (cmd_bench_stencil.c), dispatched by cmd_bench. */
int cli_bench_stencil(int argc, char **argv);
/* polysci bench chain (cmd_bench_chain.c), dispatched by cmd_bench. */
int cli_bench_chain(int argc, char **argv);
int cmd_stencil(int argc, char **argv);

/* Names of the ps_ranker values, in enum order ("default", "cost", "dnn", "none", "volume"). */
extern const char *const cli_ranker_names[5];

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

#define CLI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- planning and checking options shared by run / demo / bench / rank (cli_args.c) ----
 * Put the CLI_*_OPT entries a command has into its option table, parse, then
 * cli_plan_args_options / cli_check_args_valid validate them. */
typedef struct cli_plan_args {
    int64_t threads;    /* --threads T: 0 = OpenMP's default */
    const char *ranker; /* --ranker NAME (cli_ranker_names) */
    int64_t top_k;      /* --top-k K */
    double budget_ms;   /* --budget-ms MS */
    int no_cache;       /* --no-cache */
} cli_plan_args;

#define CLI_THREADS_OPT(p, min, help) {"threads", CLI_OPT_INT, &(p).threads, min, 4096, help, 0}
#define CLI_RANKER_OPT_HELP(p, help) {"ranker", CLI_OPT_STRING, &(p).ranker, 0, 0, help, 0}
#define CLI_RANKER_OPT(p) CLI_RANKER_OPT_HELP(p, "NAME  planner's ranker: default, cost, volume, dnn or none")
#define CLI_TOP_K_OPT(p)                                                                                \
    {"top-k", CLI_OPT_INT, &(p).top_k, 0, 1000000,                                                      \
     "K  time the default and the K best-ranked schedules (ranker default: DNN), keep the fastest", 0}, \
    {"budget-ms", CLI_OPT_FLOAT, &(p).budget_ms, 0, 0,                                                 \
     "MS  with --top-k: stop timing candidates after MS ms of planning (0: time all K)", 0}
#define CLI_NO_CACHE_OPT(p) {"no-cache", CLI_OPT_FLAG, &(p).no_cache, 0, 0, "bypass the context's plan cache", 0}

/* threads 0, ranker "default", top_k 0, budget_ms 0, no_cache 0. */
void cli_plan_args_defaults(cli_plan_args *p);
/* The ps_ranker named by p->ranker into *ranker and, when po is not NULL,
 * ps_plan_options with the arguments (num_threads, ranker, top_k, time_budget_ms, flags).
 * CLI_OK, or CLI_USAGE with a message for an unknown ranker. */
int cli_plan_args_options(const char *cmd, const cli_plan_args *p, ps_ranker *ranker, ps_plan_options *po);

typedef struct cli_check_args {
    double tol;   /* --tol X: max error relative to max|reference| */
    int64_t seed; /* --seed S: of the random operands */
} cli_check_args;

#define CLI_CHECK_OPTS(c)                                                                               \
    {"tol", CLI_OPT_FLOAT, &(c).tol, 0, 0, "X  max error relative to max|reference| (default 1e-4)", 0}, \
    {"seed", CLI_OPT_INT, &(c).seed, 0, INT64_MAX, "S  seed of the random operands (default 1)", 0}

/* tol 1e-4, seed 1. */
void cli_check_args_defaults(cli_check_args *c);
/* CLI_OK, or CLI_USAGE with a message (a negative tolerance). */
int cli_check_args_valid(const char *cmd, const cli_check_args *c);

/* ---- shape options shared by run / analyze / rank (cli_shape.c) ---- */
#define CLI_DIM_MAX INT32_MAX

extern const char *const cli_layout_names[2]; /* "nhwc", "nchw": ps_act_layout order */
extern const char *const cli_weight_names[3]; /* "kcrs", "krsc", "rsck": ps_weight_layout order */
extern const char *const cli_order_names[2];  /* "col", "row": ps_matrix_order order */

/* Whether option `name` was given (0 when there is no such option). */
int cli_opt_seen(const cli_opt *opts, size_t n_opts, const char *name);
/* CLI_USAGE with a message when one of `names` was not given, else CLI_OK. */
int cli_require(const char *cmd, const cli_opt *opts, size_t n_opts, const char *const *names, size_t n_names);

/* Conv shape: --N --H --W --C --K --R --S --stride[-h|-w] --pad[-top|-bottom|-left|-right]
 * --dilation[-h|-w] --layout --weights --bias --relu. Put CLI_CONV_SHAPE_OPTS(s) in the
 * option table, parse, then cli_conv_shape_desc builds and validates the descriptor
 * (--H --W --C --K required; specific stride/pad/dilation options override general ones). */
typedef struct cli_conv_shape {
    int64_t N, H, W, C, K, R, S;
    int64_t stride, stride_h, stride_w, pad, pad_top, pad_bottom, pad_left, pad_right;
    int64_t dil, dil_h, dil_w;
    const char *layout, *weights;
    int bias, relu;
} cli_conv_shape;

#define CLI_CONV_SHAPE_OPTS(s)                                                                          \
    {"N", CLI_OPT_INT, &(s).N, 1, CLI_DIM_MAX, "N  batch size (default 1)", 0},                          \
    {"H", CLI_OPT_INT, &(s).H, 1, CLI_DIM_MAX, "H  input height (required)", 0},                         \
    {"W", CLI_OPT_INT, &(s).W, 1, CLI_DIM_MAX, "W  input width (required)", 0},                          \
    {"C", CLI_OPT_INT, &(s).C, 1, CLI_DIM_MAX, "C  input channels (required)", 0},                       \
    {"K", CLI_OPT_INT, &(s).K, 1, CLI_DIM_MAX, "K  output channels (required)", 0},                      \
    {"R", CLI_OPT_INT, &(s).R, 1, CLI_DIM_MAX, "R  filter height (default 1)", 0},                       \
    {"S", CLI_OPT_INT, &(s).S, 1, CLI_DIM_MAX, "S  filter width (default 1)", 0},                        \
    {"stride", CLI_OPT_INT, &(s).stride, 1, CLI_DIM_MAX, "U  stride in both directions (default 1)", 0}, \
    {"stride-h", CLI_OPT_INT, &(s).stride_h, 1, CLI_DIM_MAX, "U  vertical stride (overrides --stride)", 0}, \
    {"stride-w", CLI_OPT_INT, &(s).stride_w, 1, CLI_DIM_MAX, "U  horizontal stride (overrides --stride)", 0}, \
    {"pad", CLI_OPT_INT, &(s).pad, 0, CLI_DIM_MAX, "P  zero padding on all four sides (default 0)", 0}, \
    {"pad-top", CLI_OPT_INT, &(s).pad_top, 0, CLI_DIM_MAX, "P  padding above (overrides --pad)", 0},   \
    {"pad-bottom", CLI_OPT_INT, &(s).pad_bottom, 0, CLI_DIM_MAX, "P  padding below (overrides --pad)", 0}, \
    {"pad-left", CLI_OPT_INT, &(s).pad_left, 0, CLI_DIM_MAX, "P  padding left (overrides --pad)", 0},  \
    {"pad-right", CLI_OPT_INT, &(s).pad_right, 0, CLI_DIM_MAX, "P  padding right (overrides --pad)", 0}, \
    {"dilation", CLI_OPT_INT, &(s).dil, 1, CLI_DIM_MAX, "D  filter dilation, both directions (default 1)", 0}, \
    {"dilation-h", CLI_OPT_INT, &(s).dil_h, 1, CLI_DIM_MAX, "D  vertical dilation (overrides --dilation)", 0}, \
    {"dilation-w", CLI_OPT_INT, &(s).dil_w, 1, CLI_DIM_MAX, "D  horizontal dilation (overrides --dilation)", 0}, \
    {"layout", CLI_OPT_STRING, &(s).layout, 0, 0, "L  activation layout: nhwc (default) or nchw", 0},   \
    {"weights", CLI_OPT_STRING, &(s).weights, 0, 0, "L  user weight layout: kcrs (default), krsc or rsck", 0}, \
    {"bias", CLI_OPT_FLAG, &(s).bias, 0, 0, "fused bias epilogue", 0},                                   \
    {"relu", CLI_OPT_FLAG, &(s).relu, 0, 0, "fused ReLU epilogue (after the bias)", 0}

void cli_conv_shape_defaults(cli_conv_shape *s);
/* CLI_OK, or CLI_USAGE with a message (missing option, bad choice, invalid descriptor). */
int cli_conv_shape_desc(const char *cmd, const cli_conv_shape *s, const cli_opt *opts, size_t n_opts,
                        ps_desc *desc);
/* "N=.. C=.. K=.. H=.. W=.. R=.. S=.. stride=UxU pad=t,b,l,r dilation=DxD -> OH=.. OW=.. layout=.." */
void cli_conv_shape_text(const ps_desc *desc, char *buf, size_t len);
/* The shape as JSON members (no braces): "N": 1, "C": .., ... */
void cli_conv_json_shape(FILE *f, const ps_desc *desc);

/* GEMM shape: --M --N --K (required) --order col|row --trans-a --trans-b --lda --ldb --ldc
 * --alpha --beta. */
typedef struct cli_gemm_shape {
    int64_t M, N, K, lda, ldb, ldc;
    const char *order;
    int trans_a, trans_b;
    double alpha, beta;
} cli_gemm_shape;

#define CLI_GEMM_SHAPE_OPTS(s)                                                                          \
    {"M", CLI_OPT_INT, &(s).M, 1, CLI_DIM_MAX, "M  rows of C (required)", 0},                            \
    {"N", CLI_OPT_INT, &(s).N, 1, CLI_DIM_MAX, "N  columns of C (required)", 0},                         \
    {"K", CLI_OPT_INT, &(s).K, 1, CLI_DIM_MAX, "K  reduction size (required)", 0},                       \
    {"order", CLI_OPT_STRING, &(s).order, 0, 0, "O  storage order: col (default) or row", 0},           \
    {"trans-a", CLI_OPT_FLAG, &(s).trans_a, 0, 0, "A is stored transposed (K x M)", 0},                  \
    {"trans-b", CLI_OPT_FLAG, &(s).trans_b, 0, 0, "B is stored transposed (N x K)", 0},                  \
    {"lda", CLI_OPT_INT, &(s).lda, 0, CLI_DIM_MAX, "LD  leading dimension of A (default 0 = tight)", 0}, \
    {"ldb", CLI_OPT_INT, &(s).ldb, 0, CLI_DIM_MAX, "LD  leading dimension of B (default 0 = tight)", 0}, \
    {"ldc", CLI_OPT_INT, &(s).ldc, 0, CLI_DIM_MAX, "LD  leading dimension of C (default 0 = tight)", 0}, \
    {"alpha", CLI_OPT_FLOAT, &(s).alpha, 0, 0, "X  scale of op(A)*op(B) (default 1)", 0},              \
    {"beta", CLI_OPT_FLOAT, &(s).beta, 0, 0, "X  scale of C's old value (default 0)", 0}

void cli_gemm_shape_defaults(cli_gemm_shape *s);
/* CLI_OK, or CLI_USAGE with a message (also for leading dimensions that are too small). */
int cli_gemm_shape_desc(const char *cmd, const cli_gemm_shape *s, const cli_opt *opts, size_t n_opts,
                        ps_desc *desc);
void cli_gemm_shape_text(const ps_desc *desc, char *buf, size_t len);
void cli_gemm_json_shape(FILE *f, const ps_desc *desc);
/* cli_conv_json_shape or cli_gemm_json_shape, by desc->kind. */
void cli_json_shape(FILE *f, const ps_desc *desc);

/* Parses the arguments of `polysci CMD conv|gemm`: the shape options of `kind`
 * (CLI_CONV_SHAPE_OPTS / CLI_GEMM_SHAPE_OPTS) followed by the command's own
 * options `own` (their `seen` flags are set as by cli_parse), then builds and
 * validates *desc and its text form (cli_conv_shape_text / cli_gemm_shape_text)
 * into shape. Returns CLI_OK, CLI_USAGE (message printed), or -1 after
 * printing `usage` and the option list to stdout for --help. */
int cli_parse_op(const char *cmd, ps_op_kind kind, int argc, char **argv, cli_opt *own, size_t n_own,
                 const char *usage, ps_desc *desc, char *shape, size_t shape_len);

/* ---- layers files (cli_layers.c) ---- */
typedef struct cli_layer {
    char name[64];
    ps_desc desc;
} cli_layer;
/* Resolves a layers argument: an existing path as given; else a bare name
 * (with or without ".txt"; arg NULL: default_name) looked up in the layer sets
 * the repository ships (bench/layers/): first the installed copy,
 * <prefix>/share/polysci/layers beside the executable's <prefix>/bin, then the
 * source tree the executable was built from. Returns 0, or -1 with a message. */
int cli_resolve_layers(const char *cmd, const char *arg, const char *default_name, char *path, size_t len);
/* Reads "name H W C K R S stride pad_h pad_w" (conv; batch, act layout and post-ops
 * as given) or "name M N K" (gemm, column-major) lines; '#' starts a comment.
 * *out is malloc'd. Returns 0, or -1 with a message (also for an empty file). */
int cli_read_layers(const char *cmd, const char *path, int64_t batch, ps_act_layout act, unsigned post,
                    cli_layer **out, int *n_out);
/* COUNT convolution layers drawn from the shapes frameworks use (seeded,
 * deterministic): channels 3-2048 (framework sizes, few-channel inputs and
 * arbitrary values, many not multiples of 16), spatial 7-300 (mostly
 * square), 1x1, 3x3, 5x5, 7x7, 1x7 and 7x1 filters, stride 1 or 2, "same"
 * or "valid" padding, N 1-4 (batch > 0: that N for every layer). Each layer
 * is at most 4 GFLOP and 256 MiB of operands (a larger draw shrinks its
 * spatial size, then its channels), so a set runs in minutes. Names are
 * r<seed>_<index>. *out is malloc'd. Returns 0, or -1 with a message. */
#define CLI_FAMILY_GENERAL 0
#define CLI_FAMILY_FEW_CHANNELS 1 /* 1-16 input channels, 16-96 outputs, any R x S up to 7 x 7; names f<seed>_<i> */
int cli_random_layers(const char *cmd, int count, uint64_t seed, int family, int64_t batch, ps_act_layout act,
                      unsigned post, cli_layer **out, int *n_out);
/* Short shape: conv "HxW C->K RxS/stride p<pad>", gemm "MxNxK". */
void cli_shape_short(const ps_desc *desc, char *buf, size_t len);

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
/* splitmix64: the next value of a seeded sequence, the same on every machine. */
uint64_t cli_splitmix64(uint64_t *state);
void cli_fill_random(float *v, size_t n, uint64_t seed);
void cli_fill_nan(float *v, size_t n);
/* Prints "polysci: WHAT failed: PS_ERR_X: message" to stderr; returns CLI_FAIL. */
int cli_report_status(const char *what, ps_status st);
/* Plan description into a malloc'd string (caller frees), NULL on error. */
char *cli_plan_describe(const ps_plan *plan);
/* Text form of the plan's schedule into buf ("?" on error). */
void cli_plan_schedule_text(const ps_plan *plan, char *buf, size_t len);
/* Text form of a schedule for an operation kind into buf ("?" on error). */
void cli_schedule_text(const ps_schedule *sched, ps_op_kind kind, char *buf, size_t len);
/* Creates a context running `threads` threads (0: OpenMP's default); on failure
 * prints the error and returns CLI_FAIL. */
int cli_context_create(int threads, ps_context **ctx);
/* "polysci CMD conv|gemm ...": help and unknown-operation handling, then the
 * hand-off to op() with argv[0] = "conv" or "gemm". usage is printed as is. */
int cli_dispatch_op(const char *cmd, const char *usage, int argc, char **argv,
                    int (*op)(ps_op_kind kind, int argc, char **argv));
/* ---- child processes of the benchmark drivers (cli_util.c) ---- */
/* Splits text in place at commas into at most max items; returns their number. */
int cli_split_list(char *text, char **items, int max);
/* The number after "key": in a JSON line, or NAN. */
double cli_json_number(const char *line, const char *key);
/* The string after "key": in a JSON line into out (escapes dropped, cut
 * at len - 1); 0, or -1 (out "") when there is none. */
int cli_json_text(const char *line, const char *key, char *out, size_t len);
/* Runs cmd through the shell and keeps its last stdout line that starts
 * with '{' in line. Returns 0 when it exited with status 0 and printed such
 * a line, else -1; *exit_code (may be NULL): the exit status, 128 + the
 * signal that ended it, or -1 when it could not be run. */
int cli_run_json(const char *cmd, char *line, size_t len, int *exit_code);
/* This executable's path (/proc/self/exe) into path; 0, or -1 with a message. */
int cli_self_exe(const char *cmd, char *path, size_t len);
/* The path of `rel` in the source tree this executable was built from
 * (bench scripts); 0 when it is readable, else -1 (path: what was tried). */
int cli_source_file(const char *rel, char *path, size_t len);
/* 1 when stderr is a terminal (progress lines go there only then). */
int cli_progress_enabled(void);
/* Writes s as a JSON string literal (with quotes). */
void cli_json_string(FILE *f, const char *s);

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
    double budget_ms;            /* ps_plan_options.time_budget_ms */
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
