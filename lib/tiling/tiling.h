/* Internal: overlapped tiling of a fused group (seeds 002 and 004).
 *
 * A group is a set of pipeline stages run tile by tile: every tile computes,
 * stage after stage, the region of each stage that its share of the group's
 * live-out stages needs, so neighbouring tiles recompute the overlap and
 * never wait for each other.
 *
 * 1. Alignment and scaling (ps_group_geom_init): every member gets a
 *    rational scale per dimension relative to a reference member (a live-out
 *    of the finest resolution): a stencil of stride s reads its producer at
 *    s times its own coordinate, an x2 upsampling at half, a x2 downsampling
 *    at twice. A member reached with two different scales cannot be tiled
 *    with constant dependences: the group is illegal (seed 002, COST = inf).
 * 2. Regions (ps_group_regions, isl): for a reference tile of Ty x Tx pixels
 *    and symbolic tile indices (ti, tj), the live-outs' own parts are
 *    propagated back through the access relations (exact, with floor
 *    divisions for resampling; a union over all paths of the DAG) and each
 *    member's region is summarised by isl's simple fixed box hull: an offset
 *    affine in (ti, tj) and a constant size. That constant-size box is
 *    seed 004's common tile representative: every interior tile computes
 *    the same shapes at shifted offsets. No fixed size means no overlapped
 *    tiling for these tile sizes.
 * 3. The schedule tree (ps_group_schedule_tree): tile band over (ti, tj),
 *    an expansion node mapping each tile to the member instances it
 *    computes, and a sequence of the members' point bands, printed by
 *    describe. */
#ifndef PS_TILING_H
#define PS_TILING_H

#include <isl/ctx.h>

#include "fusion/pipeline.h"

typedef struct ps_rat {
    int64_t num, den;  /* den > 0, reduced */
} ps_rat;

typedef struct ps_group_geom {
    int n;               /* members */
    int *m;              /* member stages, topological order */
    int *live_out;       /* member stored for use outside the group (or a graph output) */
    int *inner_cons;     /* member read by another member */
    ps_rat *sy, *sx;     /* member coordinate = reference coordinate * scale */
    int ref;             /* reference member */
    int64_t align_y, align_x; /* reference tile sizes are multiples of these */
    int n_livein;
    int *livein;         /* producer stages outside the group that members read */
    int legal;
    char why[192];       /* why not, when !legal */
} ps_group_geom;

/* Scale analysis of the group of the n stages in m (any order; stored
 * sorted). Fills g (allocating; release with ps_group_geom_release). An
 * illegal group is not an error: g->legal = 0 and g->why says why. */
ps_status ps_group_geom_init(const ps_pipeline *p, const int *m, int n, ps_group_geom *g);
void ps_group_geom_release(ps_group_geom *g);

/* Index of stage s among g's members, -1 if not a member. */
int ps_group_member_index(const ps_group_geom *g, int s);

/* A box as a function of the tile indices: y0 = ay * ti + by, x0 = ax * tj + bx. */
typedef struct ps_region_form {
    int64_t ay, by, h;
    int64_t ax, bx, w;
} ps_region_form;

static inline ps_box ps_region_at(const ps_region_form *f, int64_t ti, int64_t tj)
{
    return (ps_box){f->ay * ti + f->by, f->ax * tj + f->bx, f->h, f->w};
}

/* Tile size of member k in its own pixels (Ty * scale). */
int64_t ps_group_member_tile(const ps_rat *scale, int64_t t);

/* isl's images of tile regions under the access relations, cached: the
 * image of a consumer region [a ti + b, a ti + b + h) under an access
 * depends on the access's coefficients and on the region's offset b and
 * excess h - a only (the tile sizes are multiples of the resolutions' ratios
 * (ps_group_geom.align), so the floors of resampling resolve the same way
 * for every tile), so each distinct one is computed once per plan. */
typedef struct ps_region_cache ps_region_cache;
ps_region_cache *ps_region_cache_create(isl_ctx *ctx);
void ps_region_cache_destroy(ps_region_cache *rc);
/* isl computations the cache answered without isl / with it. */
void ps_region_cache_counts(const ps_region_cache *rc, long *hits, long *misses);

/* The regions of a reference tile of ty x tx pixels: forms[k] for member k,
 * then forms[n + i] for live-in i. y and x are independent (every access
 * relation is a product of one relation per dimension), so each is
 * propagated alone: from the live-outs' own parts back through every member,
 * a region being the hull of what its consumers in the group read (the
 * maximum over all paths of the DAG). Returns 1, or 0 when some region has
 * no fixed size (the tiling is not overlapped-legal for these sizes), -1
 * when isl failed (message set). */
int ps_group_regions(ps_region_cache *rc, const ps_pipeline *p, const ps_group_geom *g, int64_t ty, int64_t tx,
                     ps_region_form *forms);

/* __give: the group's tiled schedule tree for tile indices [ti0, ti1) x
 * [tj0, tj1) as isl's YAML text (NULL when out of memory or isl failed). */
char *ps_group_schedule_tree(isl_ctx *ctx, const ps_pipeline *p, const ps_group_geom *g, const ps_region_form *forms,
                             int64_t ti0, int64_t ti1, int64_t tj0, int64_t tj1);

#endif
