/* polysci CLI — the conv and GEMM shape options shared by `run`, `analyze` and
 * `rank` (CLI_CONV_SHAPE_OPTS / CLI_GEMM_SHAPE_OPTS in cli.h) and the parser of
 * their `conv|gemm` arguments (cli_parse_op). */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

const char *const cli_layout_names[2] = {"nhwc", "nchw"};          /* ps_act_layout order */
const char *const cli_weight_names[3] = {"kcrs", "krsc", "rsck"};  /* ps_weight_layout order */
const char *const cli_order_names[2] = {"col", "row"};             /* ps_matrix_order order */

int cli_opt_seen(const cli_opt *opts, size_t n_opts, const char *name)
{
    for (size_t k = 0; k < n_opts; k++)
        if (!strcmp(opts[k].name, name)) return opts[k].seen;
    return 0;
}

int cli_require(const char *cmd, const cli_opt *opts, size_t n_opts, const char *const *names, size_t n_names)
{
    for (size_t i = 0; i < n_names; i++)
        if (!cli_opt_seen(opts, n_opts, names[i])) {
            fprintf(stderr, "polysci %s: missing required option --%s (see 'polysci %s --help')\n", cmd,
                    names[i], cmd);
            return CLI_USAGE;
        }
    return CLI_OK;
}

/* ---------------------------------------------------------------- conv */

void cli_conv_shape_defaults(cli_conv_shape *s)
{
    memset(s, 0, sizeof *s);
    s->N = 1;
    s->R = s->S = 1;
    s->stride = s->stride_h = s->stride_w = 1;
    s->dil = s->dil_h = s->dil_w = 1;
    s->layout = "nhwc";
    s->weights = "kcrs";
}

int cli_conv_shape_desc(const char *cmd, const cli_conv_shape *s, const cli_opt *opts, size_t n_opts,
                        ps_desc *desc)
{
    static const char *const required[] = {"H", "W", "C", "K"};
    if (cli_require(cmd, opts, n_opts, required, 4)) return CLI_USAGE;
    int li = cli_choice(cmd, "layout", s->layout, cli_layout_names, 2);
    int wi = cli_choice(cmd, "weights", s->weights, cli_weight_names, 3);
    if (li < 0 || wi < 0) return CLI_USAGE;
#define SEEN(nm) cli_opt_seen(opts, n_opts, nm)
    ps_desc_init_conv(desc);
    ps_conv_desc *d = &desc->u.conv;
    d->N = s->N;
    d->C = s->C;
    d->K = s->K;
    d->H = s->H;
    d->W = s->W;
    d->R = s->R;
    d->S = s->S;
    /* General options first, then the specific ones override. */
    d->stride_h = SEEN("stride-h") ? s->stride_h : s->stride;
    d->stride_w = SEEN("stride-w") ? s->stride_w : s->stride;
    d->pad_top = SEEN("pad-top") ? s->pad_top : s->pad;
    d->pad_bottom = SEEN("pad-bottom") ? s->pad_bottom : s->pad;
    d->pad_left = SEEN("pad-left") ? s->pad_left : s->pad;
    d->pad_right = SEEN("pad-right") ? s->pad_right : s->pad;
    d->dilation_h = SEEN("dilation-h") ? s->dil_h : s->dil;
    d->dilation_w = SEEN("dilation-w") ? s->dil_w : s->dil;
#undef SEEN
    d->layout = (ps_act_layout)li;
    d->weight_layout = (ps_weight_layout)wi;
    d->post_ops = (s->bias ? PS_POST_BIAS : 0u) | (s->relu ? PS_POST_RELU : 0u);
    /* The library is the judge of validity; its message is the clearest. */
    ps_status st = ps_desc_validate(desc);
    if (st != PS_SUCCESS) {
        cli_report_status("ps_desc_validate", st);
        return CLI_USAGE;
    }
    return CLI_OK;
}

void cli_conv_shape_text(const ps_desc *desc, char *buf, size_t len)
{
    const ps_conv_desc *d = &desc->u.conv;
    int64_t OH, OW;
    ref_conv_out_size(d, &OH, &OW);
    snprintf(buf, len,
             "N=%" PRId64 " C=%" PRId64 " K=%" PRId64 " H=%" PRId64 " W=%" PRId64 " R=%" PRId64
             " S=%" PRId64 " stride=%" PRId64 "x%" PRId64 " pad=%" PRId64 ",%" PRId64 ",%" PRId64
             ",%" PRId64 " dilation=%" PRId64 "x%" PRId64 " -> OH=%" PRId64 " OW=%" PRId64
             " layout=%s weights=%s%s%s",
             d->N, d->C, d->K, d->H, d->W, d->R, d->S, d->stride_h, d->stride_w, d->pad_top, d->pad_bottom,
             d->pad_left, d->pad_right, d->dilation_h, d->dilation_w, OH, OW, cli_layout_names[d->layout],
             cli_weight_names[d->weight_layout], (d->post_ops & PS_POST_BIAS) ? " +bias" : "",
             (d->post_ops & PS_POST_RELU) ? " +relu" : "");
}

void cli_conv_json_shape(FILE *f, const ps_desc *desc)
{
    const ps_conv_desc *d = &desc->u.conv;
    fprintf(f, "\"N\": %" PRId64 ", \"C\": %" PRId64 ", \"K\": %" PRId64 ", \"H\": %" PRId64
               ", \"W\": %" PRId64 ", \"R\": %" PRId64 ", \"S\": %" PRId64 ", \"stride_h\": %" PRId64
               ", \"stride_w\": %" PRId64 ", \"pad_top\": %" PRId64 ", \"pad_bottom\": %" PRId64
               ", \"pad_left\": %" PRId64 ", \"pad_right\": %" PRId64 ", \"dilation_h\": %" PRId64
               ", \"dilation_w\": %" PRId64 ", \"layout\": \"%s\", \"weights\": \"%s\", \"bias\": %s"
               ", \"relu\": %s",
            d->N, d->C, d->K, d->H, d->W, d->R, d->S, d->stride_h, d->stride_w, d->pad_top,
            d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h, d->dilation_w,
            cli_layout_names[d->layout], cli_weight_names[d->weight_layout],
            (d->post_ops & PS_POST_BIAS) ? "true" : "false", (d->post_ops & PS_POST_RELU) ? "true" : "false");
}

/* ---------------------------------------------------------------- gemm */

void cli_gemm_shape_defaults(cli_gemm_shape *s)
{
    memset(s, 0, sizeof *s);
    s->order = "col";
    s->alpha = 1.0;
    s->beta = 0.0;
}

int cli_gemm_shape_desc(const char *cmd, const cli_gemm_shape *s, const cli_opt *opts, size_t n_opts,
                        ps_desc *desc)
{
    static const char *const required[] = {"M", "N", "K"};
    if (cli_require(cmd, opts, n_opts, required, 3)) return CLI_USAGE;
    int oi = cli_choice(cmd, "order", s->order, cli_order_names, 2);
    if (oi < 0) return CLI_USAGE;
    ps_desc_init_gemm(desc);
    ps_gemm_desc *g = &desc->u.gemm;
    g->M = s->M;
    g->N = s->N;
    g->K = s->K;
    g->order = (ps_matrix_order)oi;
    g->trans_a = s->trans_a;
    g->trans_b = s->trans_b;
    g->lda = s->lda;
    g->ldb = s->ldb;
    g->ldc = s->ldc;
    g->alpha = (float)s->alpha;
    g->beta = (float)s->beta;
    ps_status st = ps_desc_validate(desc);
    if (st != PS_SUCCESS) {
        cli_report_status("ps_desc_validate", st);
        return CLI_USAGE;
    }
    ref_gemm_geom geom;
    if (ref_gemm_geometry(g, &geom)) {
        fprintf(stderr, "polysci %s: a leading dimension is smaller than its matrix allows\n", cmd);
        return CLI_USAGE;
    }
    return CLI_OK;
}

void cli_gemm_shape_text(const ps_desc *desc, char *buf, size_t len)
{
    const ps_gemm_desc *g = &desc->u.gemm;
    ref_gemm_geom geom;
    if (ref_gemm_geometry(g, &geom)) memset(&geom, 0, sizeof geom);
    snprintf(buf, len,
             "M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " order=%s op(A)=%s op(B)=%s lda=%" PRId64
             " ldb=%" PRId64 " ldc=%" PRId64 " alpha=%g beta=%g",
             g->M, g->N, g->K, cli_order_names[g->order == PS_ROW_MAJOR], g->trans_a ? "A^T" : "A",
             g->trans_b ? "B^T" : "B", geom.lda, geom.ldb, geom.ldc, (double)g->alpha, (double)g->beta);
}

void cli_gemm_json_shape(FILE *f, const ps_desc *desc)
{
    const ps_gemm_desc *g = &desc->u.gemm;
    fprintf(f, "\"M\": %" PRId64 ", \"N\": %" PRId64 ", \"K\": %" PRId64 ", \"order\": \"%s\""
               ", \"trans_a\": %s, \"trans_b\": %s, \"lda\": %" PRId64 ", \"ldb\": %" PRId64
               ", \"ldc\": %" PRId64 ", \"alpha\": %.9g, \"beta\": %.9g",
            g->M, g->N, g->K, g->order == PS_ROW_MAJOR ? "row" : "col", g->trans_a ? "true" : "false",
            g->trans_b ? "true" : "false", g->lda, g->ldb, g->ldc, (double)g->alpha, (double)g->beta);
}

void cli_json_shape(FILE *f, const ps_desc *desc)
{
    if (desc->kind == PS_OP_GEMM) cli_gemm_json_shape(f, desc);
    else cli_conv_json_shape(f, desc);
}

/* ---------------------------------------------------------------- parser */

int cli_parse_op(const char *cmd, ps_op_kind kind, int argc, char **argv, cli_opt *own, size_t n_own,
                 const char *usage, ps_desc *desc, char *shape, size_t shape_len)
{
    cli_conv_shape cs;
    cli_gemm_shape gs;
    cli_conv_shape_defaults(&cs);
    cli_gemm_shape_defaults(&gs);
    const cli_opt conv_opts[] = {CLI_CONV_SHAPE_OPTS(cs)}, gemm_opts[] = {CLI_GEMM_SHAPE_OPTS(gs)};
    const int gemm = kind == PS_OP_GEMM;
    const size_t n_shape = gemm ? CLI_ARRAY_LEN(gemm_opts) : CLI_ARRAY_LEN(conv_opts);
    cli_opt opts[64];
    if (n_shape + n_own > CLI_ARRAY_LEN(opts)) {
        fprintf(stderr, "polysci %s: too many options (%zu)\n", cmd, n_shape + n_own);
        return CLI_FAIL;
    }
    memcpy(opts, gemm ? gemm_opts : conv_opts, n_shape * sizeof *opts);
    memcpy(opts + n_shape, own, n_own * sizeof *opts);
    const size_t n = n_shape + n_own;
    int rc = cli_parse(cmd, argc, argv, opts, n);
    for (size_t i = 0; i < n_own; i++) own[i].seen = opts[n_shape + i].seen;
    if (rc < 0) {
        fputs(usage, stdout);
        cli_print_options(stdout, opts, n);
        return -1;
    }
    if (rc) return rc;
    if (gemm) {
        if ((rc = cli_gemm_shape_desc(cmd, &gs, opts, n, desc))) return rc;
        cli_gemm_shape_text(desc, shape, shape_len);
    } else {
        if ((rc = cli_conv_shape_desc(cmd, &cs, opts, n, desc))) return rc;
        cli_conv_shape_text(desc, shape, shape_len);
    }
    return CLI_OK;
}
