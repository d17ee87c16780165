/* Alignment/scaling, isl regions and schedule trees of fused groups
 * (tiling.h). */
#include "tiling/tiling.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/fixed_box.h>
#include <isl/map.h>
#include <isl/printer.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "core/error.h"

/* Coarsest alignment a group may demand (its tiles' sides are multiples):
 * beyond it a tile of the finest member is too large to fit any cache
 * level, so the group is not worth forming. */
#define PS_TILE_ALIGN_MAX 256

static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a ? a : 1;
}

static ps_rat rat(int64_t num, int64_t den)
{
    int64_t g = gcd64(num, den);
    return (ps_rat){num / g, den / g};
}
static ps_rat rat_mul(ps_rat a, ps_rat b) { return rat(a.num * b.num, a.den * b.den); }
static ps_rat rat_div(ps_rat a, ps_rat b) { return rat(a.num * b.den, a.den * b.num); }
static int rat_eq(ps_rat a, ps_rat b) { return a.num == b.num && a.den == b.den; }

int64_t ps_group_member_tile(const ps_rat *scale, int64_t t) { return t * scale->num / scale->den; }

/* Producer coordinate per consumer coordinate along y (dim 0) or x (dim 1)
 * when stage s reads its input. */
static ps_rat edge_factor(const ps_pstage *s, int dim)
{
    switch (s->kind) {
    case PS_NODE_STENCIL: return rat(dim ? s->sx : s->sy, 1);
    case PS_NODE_RESAMPLE: return s->resample == PS_RESAMPLE_DOWN2_AVERAGE ? rat(2, 1) : rat(1, 2);
    default: return rat(1, 1);
    }
}

int ps_group_member_index(const ps_group_geom *g, int s)
{
    int lo = 0, hi = g->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (g->m[mid] == s) return mid;
        if (g->m[mid] < s) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

void ps_group_geom_release(ps_group_geom *g)
{
    if (!g) return;
    free(g->m);
    free(g->live_out);
    free(g->inner_cons);
    free(g->sy);
    free(g->sx);
    free(g->livein);
    memset(g, 0, sizeof *g);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

ps_status ps_group_geom_init(const ps_pipeline *p, const int *members, int n, ps_group_geom *g)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->m = malloc((size_t)n * sizeof *g->m);
    g->live_out = calloc((size_t)n, sizeof *g->live_out);
    g->inner_cons = calloc((size_t)n, sizeof *g->inner_cons);
    g->sy = calloc((size_t)n, sizeof *g->sy);
    g->sx = calloc((size_t)n, sizeof *g->sx);
    int *seen = calloc((size_t)n, sizeof *seen), *queue = malloc((size_t)n * sizeof *queue);
    int cap_in = 0;
    for (int k = 0; k < n; k++) cap_in += p->st[members[k]].n_in;
    g->livein = malloc((size_t)(cap_in + 1) * sizeof *g->livein);
    if (!g->m || !g->live_out || !g->inner_cons || !g->sy || !g->sx || !seen || !queue || !g->livein) {
        free(seen);
        free(queue);
        ps_group_geom_release(g);
        return ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
    }
    memcpy(g->m, members, (size_t)n * sizeof *g->m);
    qsort(g->m, (size_t)n, sizeof *g->m, cmp_int);
    g->legal = 1;
    for (int k = 0; k < n; k++) {
        const ps_pstage *S = &p->st[g->m[k]];
        if (S->kind == PS_NODE_INPUT) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "\"%s\" is a graph input", S->name);
        }
        if (k && g->m[k] == g->m[k - 1]) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "\"%s\" is listed twice", S->name);
        }
        g->live_out[k] = S->output_index >= 0;
        for (int c = 0; c < S->n_cons; c++) {
            if (ps_group_member_index(g, S->cons[c]) >= 0) g->inner_cons[k] = 1;
            else g->live_out[k] = 1;
        }
        for (int j = 0; j < S->n_in; j++) {
            int q = S->in[j];
            if (ps_group_member_index(g, q) >= 0) continue;
            int dup = 0;
            for (int i = 0; i < g->n_livein; i++) dup |= g->livein[i] == q;
            if (!dup) g->livein[g->n_livein++] = q;
        }
    }
    /* Scales: a walk over the group's edges in both directions, one
     * component at a time. */
    for (int root = 0; root < n && g->legal; root++) {
        if (seen[root]) continue;
        seen[root] = 1;
        g->sy[root] = g->sx[root] = rat(1, 1);
        int head = 0, tail = 0;
        queue[tail++] = root;
        while (head < tail && g->legal) {
            int k = queue[head++];
            const ps_pstage *S = &p->st[g->m[k]];
            /* producers of k */
            for (int j = 0; j < S->n_in && g->legal; j++) {
                int q = ps_group_member_index(g, S->in[j]);
                if (q < 0) continue;
                ps_rat fy = rat_mul(g->sy[k], edge_factor(S, 0)), fx = rat_mul(g->sx[k], edge_factor(S, 1));
                if (!seen[q]) {
                    seen[q] = 1;
                    g->sy[q] = fy;
                    g->sx[q] = fx;
                    queue[tail++] = q;
                } else if (!rat_eq(g->sy[q], fy) || !rat_eq(g->sx[q], fx)) {
                    g->legal = 0;
                    snprintf(g->why, sizeof g->why,
                             "\"%s\" is read at two resolutions (%lld/%lld and %lld/%lld): no constant dependences",
                             p->st[g->m[q]].name, (long long)g->sy[q].num, (long long)g->sy[q].den, (long long)fy.num,
                             (long long)fy.den);
                }
            }
            /* consumers of k */
            for (int c = 0; c < S->n_cons && g->legal; c++) {
                int q = ps_group_member_index(g, S->cons[c]);
                if (q < 0) continue;
                const ps_pstage *Q = &p->st[g->m[q]];
                ps_rat fy = rat_div(g->sy[k], edge_factor(Q, 0)), fx = rat_div(g->sx[k], edge_factor(Q, 1));
                if (!seen[q]) {
                    seen[q] = 1;
                    g->sy[q] = fy;
                    g->sx[q] = fx;
                    queue[tail++] = q;
                } else if (!rat_eq(g->sy[q], fy) || !rat_eq(g->sx[q], fx)) {
                    g->legal = 0;
                    snprintf(g->why, sizeof g->why,
                             "\"%s\" is reached at two resolutions: no constant dependences", Q->name);
                }
            }
        }
    }
    free(seen);
    free(queue);
    if (!g->legal) return PS_SUCCESS;
    /* Reference: the live-out of the finest resolution. */
    g->ref = -1;
    for (int k = 0; k < n; k++) {
        if (!g->live_out[k]) continue;
        if (g->ref < 0 || (double)g->sy[k].num / (double)g->sy[k].den * (double)g->sx[k].num / (double)g->sx[k].den >
                              (double)g->sy[g->ref].num / (double)g->sy[g->ref].den * (double)g->sx[g->ref].num /
                                  (double)g->sx[g->ref].den)
            g->ref = k;
    }
    if (g->ref < 0) g->ref = n - 1;
    ps_rat ry = g->sy[g->ref], rx = g->sx[g->ref];
    g->align_y = g->align_x = 1;
    for (int k = 0; k < n; k++) {
        g->sy[k] = rat_div(g->sy[k], ry);
        g->sx[k] = rat_div(g->sx[k], rx);
        g->align_y = g->align_y / gcd64(g->align_y, g->sy[k].den) * g->sy[k].den;
        g->align_x = g->align_x / gcd64(g->align_x, g->sx[k].den) * g->sx[k].den;
        if (g->align_y > PS_TILE_ALIGN_MAX || g->align_x > PS_TILE_ALIGN_MAX) {
            g->legal = 0;
            snprintf(g->why, sizeof g->why, "resolutions too far apart (tiles would be multiples of %lld x %lld)",
                     (long long)g->align_y, (long long)g->align_x);
            return PS_SUCCESS;
        }
    }
    return PS_SUCCESS;
}

/* The access relation of consumer s reading its input j, as isl text
 * (boxes: a rectangular scratch region has the same hull either way). */
static void access_str(const ps_pipeline *p, int s, char *buf, size_t len)
{
    const ps_pstage *S = &p->st[s];
    switch (S->kind) {
    case PS_NODE_STENCIL: {
        int dy0 = S->dy[0], dy1 = S->dy[0], dx0 = S->dx[0], dx1 = S->dx[0];
        for (int t = 1; t < S->n_taps; t++) {
            if (S->dy[t] < dy0) dy0 = S->dy[t];
            if (S->dy[t] > dy1) dy1 = S->dy[t];
            if (S->dx[t] < dx0) dx0 = S->dx[t];
            if (S->dx[t] > dx1) dx1 = S->dx[t];
        }
        snprintf(buf, len, "{ [y, x] -> [a, b] : %d y + %d <= a <= %d y + %d and %d x + %d <= b <= %d x + %d }", S->sy,
                 dy0, S->sy, dy1, S->sx, dx0, S->sx, dx1);
        return;
    }
    case PS_NODE_RESAMPLE:
        if (S->resample == PS_RESAMPLE_UP2_NEAREST)
            snprintf(buf, len, "{ [y, x] -> [a, b] : 2a <= y <= 2a + 1 and 2b <= x <= 2b + 1 }");
        else if (S->resample == PS_RESAMPLE_UP2_BILINEAR)
            snprintf(buf, len, "{ [y, x] -> [a, b] : y - 2 <= 2a <= y + 1 and x - 2 <= 2b <= x + 1 }");
        else
            snprintf(buf, len, "{ [y, x] -> [a, b] : 2y <= a <= 2y + 1 and 2x <= b <= 2x + 1 }");
        return;
    default: snprintf(buf, len, "{ [y, x] -> [y, x] }"); return;
    }
}

/* Reads an integer isl_val (consumed); 0 in *ok when it is not one. */
static int64_t val_int(isl_val *v, int *ok)
{
    int64_t r = 0;
    if (!v || isl_val_is_int(v) != isl_bool_true) *ok = 0;
    else r = isl_val_get_num_si(v);
    isl_val_free(v);
    return r;
}

/* offset = a * t + b where t is parameter `param` (0: ti, 1: tj). */
static int aff_form(isl_aff *aff, int param, int64_t *a, int64_t *b)
{
    int ok = aff != NULL;
    if (ok && isl_aff_dim(aff, isl_dim_div) != 0) ok = 0;
    if (ok) {
        *b = val_int(isl_aff_get_constant_val(aff), &ok);
        *a = val_int(isl_aff_get_coefficient_val(aff, isl_dim_param, param), &ok);
        int64_t other = val_int(isl_aff_get_coefficient_val(aff, isl_dim_param, 1 - param), &ok);
        if (other != 0) ok = 0;
    }
    isl_aff_free(aff);
    return ok;
}

static int box_form(isl_set *region, ps_region_form *f)
{
    isl_fixed_box *box = isl_set_get_simple_fixed_box_hull(region);
    int ok = box && isl_fixed_box_is_valid(box) == isl_bool_true;
    if (ok) {
        isl_multi_aff *off = isl_fixed_box_get_offset(box);
        isl_multi_val *size = isl_fixed_box_get_size(box);
        ok = off && size;
        if (ok) ok = aff_form(isl_multi_aff_get_at(off, 0), 0, &f->ay, &f->by);
        if (ok) ok = aff_form(isl_multi_aff_get_at(off, 1), 1, &f->ax, &f->bx);
        if (ok) f->h = val_int(isl_multi_val_get_at(size, 0), &ok);
        if (ok) f->w = val_int(isl_multi_val_get_at(size, 1), &ok);
        isl_multi_aff_free(off);
        isl_multi_val_free(size);
    }
    isl_fixed_box_free(box);
    return ok;
}

int ps_group_regions(isl_ctx *ctx, const ps_pipeline *p, const ps_group_geom *g, int64_t ty, int64_t tx,
                     ps_region_form *forms)
{
    int n = g->n, rc = 1;
    isl_set **R = calloc((size_t)n, sizeof *R);
    char buf[512];
    if (!R) {
        ps_error(PS_ERR_OUT_OF_MEMORY, "ps_graph_plan_create: out of memory");
        return -1;
    }
    for (int k = n - 1; k >= 0 && rc == 1; k--) {
        const ps_pstage *S = &p->st[g->m[k]];
        isl_set *r = NULL;
        if (g->live_out[k]) {
            int64_t hy = ps_group_member_tile(&g->sy[k], ty), hx = ps_group_member_tile(&g->sx[k], tx);
            snprintf(buf, sizeof buf,
                     "[ti, tj] -> { [y, x] : %lld ti <= y < %lld ti + %lld and %lld tj <= x < %lld tj + %lld }",
                     (long long)hy, (long long)hy, (long long)hy, (long long)hx, (long long)hx, (long long)hx);
            r = isl_set_read_from_str(ctx, buf);
        }
        for (int c = 0; c < S->n_cons; c++) {
            int q = ps_group_member_index(g, S->cons[c]);
            if (q < 0) continue;
            access_str(p, g->m[q], buf, sizeof buf);
            isl_set *part = isl_set_apply(isl_set_copy(R[q]), isl_map_read_from_str(ctx, buf));
            r = r ? isl_set_union(r, part) : part;
        }
        if (!r) {
            rc = -1;
            break;
        }
        R[k] = isl_set_coalesce(r);
        if (!box_form(R[k], &forms[k])) rc = 0;
    }
    for (int i = 0; i < g->n_livein && rc == 1; i++) {
        int q0 = g->livein[i];
        isl_set *r = NULL;
        for (int k = 0; k < n; k++) {
            const ps_pstage *S = &p->st[g->m[k]];
            int reads = 0;
            for (int j = 0; j < S->n_in; j++) reads |= S->in[j] == q0;
            if (!reads) continue;
            access_str(p, g->m[k], buf, sizeof buf);
            isl_set *part = isl_set_apply(isl_set_copy(R[k]), isl_map_read_from_str(ctx, buf));
            r = r ? isl_set_union(r, part) : part;
        }
        if (!r) {
            rc = -1;
            break;
        }
        r = isl_set_coalesce(r);
        if (!box_form(r, &forms[n + i])) rc = 0;
        isl_set_free(r);
    }
    for (int k = 0; k < n; k++) isl_set_free(R[k]);
    free(R);
    if (rc < 0) ps_error(PS_ERR_BACKEND, "ps_graph_plan_create: isl failed computing tile regions");
    return rc;
}

/* isl identifier of member k: S<k>_<name with non-identifier bytes as _>. */
static void member_id(const ps_pipeline *p, const ps_group_geom *g, int k, char *buf, size_t len)
{
    int off = snprintf(buf, len, "S%d_", k);
    const char *name = p->st[g->m[k]].name;
    for (size_t i = 0; name[i] && (size_t)off + 1 < len; i++)
        buf[off++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    buf[off] = '\0';
}

char *ps_group_schedule_tree(isl_ctx *ctx, const ps_pipeline *p, const ps_group_geom *g, const ps_region_form *forms,
                             int64_t ti0, int64_t ti1, int64_t tj0, int64_t tj1)
{
    char buf[1024], id[96];
    snprintf(buf, sizeof buf, "{ T[ti, tj] : %lld <= ti < %lld and %lld <= tj < %lld }", (long long)ti0, (long long)ti1,
             (long long)tj0, (long long)tj1);
    isl_union_set *tiles = isl_union_set_read_from_str(ctx, buf);
    isl_schedule *sched = isl_schedule_from_domain(isl_union_set_copy(tiles));
    isl_multi_union_pw_aff *band =
        isl_multi_union_pw_aff_read_from_str(ctx, "[{ T[ti, tj] -> [(ti)] }, { T[ti, tj] -> [(tj)] }]");
    sched = isl_schedule_insert_partial_schedule(sched, band);
    /* The expansion: tile (ti, tj) -> the instances of every member it computes. */
    isl_union_set *expanded = NULL;
    isl_union_map *contraction = NULL;
    isl_union_set_list *filters = isl_union_set_list_alloc(ctx, g->n);
    for (int k = 0; k < g->n; k++) {
        const ps_region_form *f = &forms[k];
        member_id(p, g, k, id, sizeof id);
        snprintf(buf, sizeof buf,
                 "{ %s[ti, tj, y, x] : %lld <= ti < %lld and %lld <= tj < %lld and "
                 "%lld ti + %lld <= y < %lld ti + %lld and %lld tj + %lld <= x < %lld tj + %lld }",
                 id, (long long)ti0, (long long)ti1, (long long)tj0, (long long)tj1, (long long)f->ay, (long long)f->by,
                 (long long)f->ay, (long long)(f->by + f->h), (long long)f->ax, (long long)f->bx, (long long)f->ax,
                 (long long)(f->bx + f->w));
        isl_union_set *e = isl_union_set_read_from_str(ctx, buf);
        filters = isl_union_set_list_add(filters, isl_union_set_copy(e));
        expanded = expanded ? isl_union_set_union(expanded, e) : e;
        snprintf(buf, sizeof buf, "{ %s[ti, tj, y, x] -> T[ti, tj] }", id);
        isl_union_map *c = isl_union_map_read_from_str(ctx, buf);
        contraction = contraction ? isl_union_map_union(contraction, c) : c;
    }
    isl_schedule *exp = isl_schedule_from_domain(expanded);
    isl_schedule_node *node = isl_schedule_get_root(exp);
    isl_schedule_free(exp);
    node = isl_schedule_node_child(node, 0);
    node = isl_schedule_node_insert_sequence(node, filters);
    for (int k = 0; k < g->n; k++) {
        member_id(p, g, k, id, sizeof id);
        snprintf(buf, sizeof buf, "[{ %s[ti, tj, y, x] -> [(y)] }, { %s[ti, tj, y, x] -> [(x)] }]", id, id);
        node = isl_schedule_node_child(node, k);  /* the filter */
        node = isl_schedule_node_child(node, 0);  /* below it */
        node = isl_schedule_node_insert_partial_schedule(node, isl_multi_union_pw_aff_read_from_str(ctx, buf));
        node = isl_schedule_node_parent(node);
        node = isl_schedule_node_parent(node);
    }
    exp = isl_schedule_node_get_schedule(node);
    isl_schedule_node_free(node);
    sched = isl_schedule_expand(sched, isl_union_pw_multi_aff_from_union_map(contraction), exp);
    isl_union_set_free(tiles);
    char *text = NULL;
    if (sched) {
        isl_printer *pr = isl_printer_to_str(ctx);
        pr = isl_printer_set_yaml_style(pr, ISL_YAML_STYLE_BLOCK);
        pr = isl_printer_print_schedule(pr, sched);
        text = isl_printer_get_str(pr);
        isl_printer_free(pr);
    }
    isl_schedule_free(sched);
    return text;
}
