/* polysci CLI — layers files (bench/layers/NAME.txt, installed as
 * share/polysci/layers/), used by `demo` and `bench`. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folders a bare layers name is looked up in, in order; returns how many.
 * POLYSCI_LAYERS_FROM_BINDIR is the install tree's share/polysci/layers
 * relative to its bin/ (tools/CMakeLists.txt), so an installed polysci finds
 * its copy wherever the prefix is; POLYSCI_SOURCE_LAYERS is the source tree's
 * bench/layers, for the executable in the build tree. */
static int layers_dirs(char dirs[2][4096])
{
    int n = 0;
#ifdef POLYSCI_LAYERS_FROM_BINDIR
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int w = snprintf(dirs[n], sizeof dirs[n], "%s/%s", exe, POLYSCI_LAYERS_FROM_BINDIR);
            if (w > 0 && (size_t)w < sizeof dirs[n]) {
                char *real = realpath(dirs[n], NULL);
                if (real) {
                    snprintf(dirs[n], sizeof dirs[n], "%s", real);
                    free(real);
                    n++;
                }
            }
        }
    }
#endif
#ifdef POLYSCI_SOURCE_LAYERS
    snprintf(dirs[n++], sizeof dirs[0], "%s", POLYSCI_SOURCE_LAYERS);
#endif
    return n;
}

int cli_resolve_layers(const char *cmd, const char *arg, const char *default_name, char *path, size_t len)
{
    if (arg && file_exists(arg)) {
        snprintf(path, len, "%s", arg);
        return 0;
    }
    if (arg && strchr(arg, '/')) {
        fprintf(stderr, "polysci %s: cannot read layers file '%s': %s\n", cmd, arg, strerror(ENOENT));
        return -1;
    }
    const char *name = arg ? arg : default_name;
    char dirs[2][4096];
    int n_dirs = layers_dirs(dirs);
    for (int i = 0; i < n_dirs; i++) {
        int n = snprintf(path, len, "%s/%s", dirs[i], name);
        if (n > 0 && (size_t)n < len && file_exists(path)) return 0;
        n = snprintf(path, len, "%s/%s.txt", dirs[i], name);
        if (n > 0 && (size_t)n < len && file_exists(path)) return 0;
    }
    fprintf(stderr, "polysci %s: layers file '%s' not found (looked in", cmd, name);
    for (int i = 0; i < n_dirs; i++) fprintf(stderr, "%s %s/", i ? "," : "", dirs[i]);
    fprintf(stderr, "%s); pass --layers with a path\n", n_dirs ? "" : " no folder");
    return -1;
}

int cli_read_layers(const char *cmd, const char *path, int64_t batch, ps_act_layout act, unsigned post,
                    cli_layer **out, int *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "polysci %s: cannot open '%s': %s\n", cmd, path, strerror(errno));
        return -1;
    }
    cli_layer *v = NULL;
    int n = 0, cap = 0, line_no = 0, rc = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *tok[16];
        int nt = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && nt < 16; t = strtok_r(NULL, " \t\r\n", &save))
            tok[nt++] = t;
        if (nt == 0) continue;
        if (nt != 10 && nt != 4) {
            fprintf(stderr, "polysci %s: %s:%d: expected 'name H W C K R S stride pad_h pad_w' "
                            "or 'name M N K', got %d fields\n", cmd, path, line_no, nt);
            rc = -1;
            break;
        }
        int64_t x[9];
        for (int i = 1; i < nt && rc == 0; i++) {
            /* sizes and strides >= 1, pads >= 0 */
            int64_t min = (nt == 10 && i >= 8) ? 0 : 1;
            if (cli_strict_int(tok[i], min, INT32_MAX, &x[i - 1])) {
                fprintf(stderr, "polysci %s: %s:%d: field %d of '%s' is '%s', expected an integer "
                                "in [%" PRId64 ", %d]\n",
                        cmd, path, line_no, i + 1, tok[0], tok[i], min, INT32_MAX);
                rc = -1;
            }
        }
        if (rc) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            cli_layer *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                fprintf(stderr, "polysci %s: out of memory\n", cmd);
                rc = -1;
                break;
            }
            v = nv;
        }
        cli_layer *l = &v[n++];
        snprintf(l->name, sizeof l->name, "%s", tok[0]);
        if (nt == 10) {
            ps_desc_init_conv(&l->desc);
            ps_conv_desc *d = &l->desc.u.conv;
            d->N = batch;
            d->H = x[0];
            d->W = x[1];
            d->C = x[2];
            d->K = x[3];
            d->R = x[4];
            d->S = x[5];
            d->stride_h = d->stride_w = x[6];
            d->pad_top = d->pad_bottom = x[7];
            d->pad_left = d->pad_right = x[8];
            d->layout = act;
            d->post_ops = post;
        } else {
            ps_desc_init_gemm(&l->desc);
            ps_gemm_desc *g = &l->desc.u.gemm;
            g->M = x[0];
            g->N = x[1];
            g->K = x[2];
        }
    }
    fclose(f);
    if (rc == 0 && n == 0) {
        fprintf(stderr, "polysci %s: %s has no layers\n", cmd, path);
        rc = -1;
    }
    if (rc) {
        free(v);
        return -1;
    }
    *out = v;
    *n_out = n;
    return 0;
}

/* Shapes depend on the seed only (cli_splitmix64), the same on every machine. */
static double shape_unit(uint64_t *s) { return (double)(cli_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

/* An integer log-uniform in [lo, hi]. */
static int64_t shape_log_uniform(uint64_t *s, int64_t lo, int64_t hi)
{
    double v = exp(log((double)lo) + shape_unit(s) * (log((double)hi + 1.0) - log((double)lo)));
    int64_t r = (int64_t)v;
    return r < lo ? lo : r > hi ? hi : r;
}

/* A channel count: the sizes networks are built from (multiples of 8 and 16
 * up to 2048), a few channels (3-16, with probability few: images and stems
 * as inputs, heads as outputs), or any value in 3-2048 (pruned and
 * odd-width networks). */
static int64_t shape_channels(uint64_t *s, double few)
{
    static const int64_t common[] = {16, 24, 32, 40, 48, 64, 72, 80, 96, 112, 120, 128, 144, 160, 192, 240, 256,
                                     288, 320, 384, 480, 512, 576, 640, 768, 960, 1024, 1280, 1536, 2048};
    double u = shape_unit(s);
    if (u < few) return 3 + (int64_t)(cli_splitmix64(s) % 14);
    if (u < 0.6) return common[cli_splitmix64(s) % (sizeof common / sizeof common[0])];
    return shape_log_uniform(s, 3, 2048);
}

static double conv_flops(const ps_conv_desc *d, int64_t *oh, int64_t *ow)
{
    *oh = (d->H + d->pad_top + d->pad_bottom - d->R) / d->stride_h + 1;
    *ow = (d->W + d->pad_left + d->pad_right - d->S) / d->stride_w + 1;
    return 2.0 * (double)d->N * (double)d->K * (double)d->C * (double)*oh * (double)*ow * (double)d->R * (double)d->S;
}

int cli_random_layers(const char *cmd, int count, uint64_t seed, int family, int64_t batch, ps_act_layout act,
                      unsigned post, cli_layer **out, int *n_out)
{
    if (count < 1) {
        fprintf(stderr, "polysci %s: --random needs a count >= 1\n", cmd);
        return -1;
    }
    cli_layer *v = calloc((size_t)count, sizeof *v);
    if (!v) {
        fprintf(stderr, "polysci %s: out of memory\n", cmd);
        return -1;
    }
    static const int64_t filters[][2] = {{1, 1}, {3, 3}, {5, 5}, {7, 7}, {1, 7}, {7, 1}};
    static const double filter_p[] = {0.32, 0.34, 0.10, 0.10, 0.07, 0.07};
    const double max_flops = 4e9, max_bytes = 256.0 * 1024 * 1024;
    uint64_t s = seed ^ 0x5DEECE66Dull;
    for (int i = 0; i < count; i++) {
        cli_layer *l = &v[i];
        snprintf(l->name, sizeof l->name, "%s%" PRIu64 "_%d", family == CLI_FAMILY_FEW_CHANNELS ? "f" : "r", seed, i);
        ps_desc_init_conv(&l->desc);
        ps_conv_desc *d = &l->desc.u.conv;
        double u = shape_unit(&s);
        int f = 0;
        for (double acc = filter_p[0]; f < 5 && u >= acc; acc += filter_p[++f]) {}
        d->R = filters[f][0];
        d->S = filters[f][1];
        d->stride_h = d->stride_w = shape_unit(&s) < 0.7 ? 1 : 2;
        int same = shape_unit(&s) < 0.7;
        d->H = shape_log_uniform(&s, 7, 300);
        d->W = shape_unit(&s) < 0.75 ? d->H : shape_log_uniform(&s, 7, 300);
        d->C = shape_channels(&s, 0.12); /* inputs: images and stems have 3-16 channels */
        d->K = shape_channels(&s, 0.03); /* outputs: few only in heads */
        if (family == CLI_FAMILY_FEW_CHANNELS) {
            /* the layers that start network bodies: 1-16 input channels, 16-96
             * outputs, any filter up to 7 x 7 (square three times in four) */
            d->C = 1 + (int64_t)(cli_splitmix64(&s) % 16);
            d->K = 16 + (int64_t)(cli_splitmix64(&s) % 81);
            d->R = 1 + (int64_t)(cli_splitmix64(&s) % 7);
            d->S = shape_unit(&s) < 0.75 ? d->R : 1 + (int64_t)(cli_splitmix64(&s) % 7);
        }
        d->N = batch > 0 ? batch : 1 + (int64_t)(cli_splitmix64(&s) % 4);
        d->pad_top = d->pad_bottom = same ? (d->R - 1) / 2 : 0;
        d->pad_left = d->pad_right = same ? (d->S - 1) / 2 : 0;
        d->layout = act;
        d->post_ops = post;
        /* Within budget: shrink the image first (large channel counts come with
         * small images in real networks), then the channels; never below a
         * valid shape (the filter fits the padded image). */
        for (;;) {
            int64_t oh, ow;
            double fl = conv_flops(d, &oh, &ow);
            double bytes = 4.0 * ((double)d->N * (double)d->C * (double)d->H * (double)d->W +
                                  (double)d->K * (double)d->C * (double)d->R * (double)d->S +
                                  (double)d->N * (double)d->K * (double)oh * (double)ow);
            if (fl <= max_flops && bytes <= max_bytes) break;
            int64_t h = d->H * 4 / 5, w = d->W * 4 / 5;
            if (h >= 7 && w >= 7 && h + d->pad_top + d->pad_bottom >= d->R && w + d->pad_left + d->pad_right >= d->S) {
                d->H = h;
                d->W = w;
            } else if (d->C >= d->K && d->C > 3) d->C = d->C * 4 / 5 > 3 ? d->C * 4 / 5 : 3;
            else if (d->K > 3) d->K = d->K * 4 / 5 > 3 ? d->K * 4 / 5 : 3;
            else if (d->N > 1) d->N--;
            else break; /* unreachable: 3 channels at 7x7 are a few MFLOP */
        }
        if (d->H + d->pad_top + d->pad_bottom < d->R) d->H = d->R; /* valid 7-tap filter on a small image */
        if (d->W + d->pad_left + d->pad_right < d->S) d->W = d->S;
        if (ps_desc_validate(&l->desc) != PS_SUCCESS) {
            fprintf(stderr, "polysci %s: random layer %s is not valid: %s\n", cmd, l->name, ps_last_error_message());
            free(v);
            return -1;
        }
    }
    *out = v;
    *n_out = count;
    return 0;
}

void cli_shape_short(const ps_desc *desc, char *buf, size_t len)
{
    if (desc->kind == PS_OP_GEMM) {
        const ps_gemm_desc *g = &desc->u.gemm;
        snprintf(buf, len, "%" PRId64 "x%" PRId64 "x%" PRId64, g->M, g->N, g->K);
        return;
    }
    const ps_conv_desc *d = &desc->u.conv;
    char pad[48];
    if (d->pad_top == d->pad_left) snprintf(pad, sizeof pad, "%" PRId64, d->pad_top);
    else snprintf(pad, sizeof pad, "%" PRId64 ",%" PRId64, d->pad_top, d->pad_left);
    snprintf(buf, len, "%" PRId64 "x%" PRId64 " %" PRId64 "->%" PRId64 " %" PRId64 "x%" PRId64
                       "/%" PRId64 " p%s",
             d->H, d->W, d->C, d->K, d->R, d->S, d->stride_h, pad);
}
