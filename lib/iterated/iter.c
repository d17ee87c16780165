/* Iterated-stencil descriptors: building, validation, the benchmark
 * examples, introspection (include/polysci/iterated.h). */
#include "iterated/iter_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

ps_status ps_iter_create(int ndim, const int64_t *n, ps_iter_boundary boundary, int64_t steps, ps_iter **out)
{
    static const char who[] = "ps_iter_create";
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "%s: it is NULL", who);
    *out = NULL;
    if (!n) return ps_error(PS_ERR_NULL_POINTER, "%s: n is NULL", who);
    if (ndim < 1 || ndim > PS_ITER_MAX_DIMS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: ndim %d out of range (1..%d)", who, ndim, PS_ITER_MAX_DIMS);
    int64_t total = 1;
    for (int d = 0; d < ndim; d++) {
        if (n[d] < 1) return ps_error(PS_ERR_INVALID_ARG, "%s: extent n[%d] = %lld must be >= 1", who, d, (long long)n[d]);
        /* A second buffer per array and per-thread scratch must stay far
         * from size_t limits; 2^40 points is a 4 TiB array. */
        if (!ps_mul_ok(total, n[d], &total) || total > ((int64_t)1 << 40))
            return ps_error(PS_ERR_OVERFLOW, "%s: the grid has more than 2^40 points", who);
    }
    if (boundary != PS_ITER_FIXED && boundary != PS_ITER_PERIODIC)
        return ps_error(PS_ERR_INVALID_ARG, "%s: unknown boundary %d", who, (int)boundary);
    if (steps < 0 || steps > ((int64_t)1 << 40))
        return ps_error(PS_ERR_INVALID_ARG, "%s: steps %lld out of range (0..2^40)", who, (long long)steps);
    ps_iter *it = calloc(1, sizeof *it);
    if (!it) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    it->ndim = ndim;
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) it->n[d] = d < ndim ? n[d] : 1;
    it->boundary = boundary;
    it->steps = steps;
    *out = it;
    return PS_SUCCESS;
}

void ps_iter_destroy(ps_iter *it)
{
    if (!it) return;
    for (int a = 0; a < it->n_arrays; a++) free(it->upd[a].taps);
    free(it);
}

ps_status ps_iter_add_array(ps_iter *it, const char *name, int *array)
{
    static const char who[] = "ps_iter_add_array";
    if (!it || !array) return ps_error(PS_ERR_NULL_POINTER, "%s: it or array is NULL", who);
    if (it->n_arrays >= PS_ITER_MAX_ARRAYS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: the descriptor has %d arrays already (the most)", who, PS_ITER_MAX_ARRAYS);
    if (name && strlen(name) > PS_ITER_NAME_MAX)
        return ps_error(PS_ERR_INVALID_ARG, "%s: name longer than %d bytes", who, PS_ITER_NAME_MAX);
    int a = it->n_arrays;
    if (name) {
        for (int b = 0; b < a; b++)
            if (!strcmp(it->name[b], name)) return ps_error(PS_ERR_INVALID_ARG, "%s: an array is named \"%s\" already", who, name);
        snprintf(it->name[a], sizeof it->name[a], "%s", name);
    } else {
        snprintf(it->name[a], sizeof it->name[a], "a%d", a);
    }
    it->n_arrays++;
    *array = a;
    return PS_SUCCESS;
}

ps_status ps_iter_set_update(ps_iter *it, int array, int n_taps, const ps_iter_tap *taps, float constant)
{
    static const char who[] = "ps_iter_set_update";
    if (!it || !taps) return ps_error(PS_ERR_NULL_POINTER, "%s: it or taps is NULL", who);
    if (array < 0 || array >= it->n_arrays)
        return ps_error(PS_ERR_INVALID_ARG, "%s: array %d does not exist (the descriptor has %d)", who, array, it->n_arrays);
    if (it->upd[array].n_taps)
        return ps_error(PS_ERR_INVALID_ARG, "%s: array \"%s\" has an update already", who, it->name[array]);
    if (n_taps < 1 || n_taps > PS_ITER_MAX_TAPS)
        return ps_error(PS_ERR_INVALID_ARG, "%s: n_taps %d out of range (1..%d)", who, n_taps, PS_ITER_MAX_TAPS);
    if (!isfinite(constant)) return ps_error(PS_ERR_INVALID_ARG, "%s: the constant is not finite", who);
    for (int k = 0; k < n_taps; k++) {
        const ps_iter_tap *t = &taps[k];
        if (t->array < 0 || t->array >= it->n_arrays)
            return ps_error(PS_ERR_INVALID_ARG, "%s: tap %d reads array %d, which does not exist (add arrays first)", who, k,
                            t->array);
        for (int d = 0; d < PS_ITER_MAX_DIMS; d++) {
            if (d >= it->ndim && t->offset[d])
                return ps_error(PS_ERR_INVALID_ARG, "%s: tap %d has offset %d along dimension %d of a %d-D grid", who, k,
                                t->offset[d], d, it->ndim);
            if (t->offset[d] < -PS_ITER_MAX_OFFSET || t->offset[d] > PS_ITER_MAX_OFFSET)
                return ps_error(PS_ERR_INVALID_ARG, "%s: tap %d offset %d along dimension %d out of range (-%d..%d)", who, k,
                                t->offset[d], d, PS_ITER_MAX_OFFSET, PS_ITER_MAX_OFFSET);
        }
        if (!isfinite(t->weight)) return ps_error(PS_ERR_INVALID_ARG, "%s: tap %d has a weight that is not finite", who, k);
    }
    ps_iter_tap *copy = malloc((size_t)n_taps * sizeof *copy);
    if (!copy) return ps_error(PS_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    memcpy(copy, taps, (size_t)n_taps * sizeof *copy);
    it->upd[array].taps = copy;
    it->upd[array].n_taps = n_taps;
    it->upd[array].constant = constant;
    return PS_SUCCESS;
}

void ps_iter_radius(const ps_iter *it, int *r)
{
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) r[d] = 0;
    for (int a = 0; a < it->n_arrays; a++)
        for (int k = 0; k < it->upd[a].n_taps; k++)
            for (int d = 0; d < it->ndim; d++) {
                int o = abs(it->upd[a].taps[k].offset[d]);
                if (o > r[d]) r[d] = o;
            }
}

ps_status ps_iter_create_example(ps_iter_example which, const int64_t *n, ps_iter_boundary boundary, int64_t steps,
                                 ps_iter **out)
{
    static const char who[] = "ps_iter_create_example";
    if (!out) return ps_error(PS_ERR_NULL_POINTER, "%s: it is NULL", who);
    *out = NULL;
    static const int ndims[4] = {1, 2, 3, 2};
    if ((int)which < 0 || (int)which > 3) return ps_error(PS_ERR_INVALID_ARG, "%s: unknown example %d", who, (int)which);
    ps_iter *it = NULL;
    ps_status st = ps_iter_create(ndims[which], n, boundary, steps, &it);
    int u = 0;
    if (!st) st = ps_iter_add_array(it, "u", &u);
    if (st) {
        ps_iter_destroy(it);
        return st;
    }
    ps_iter_tap taps[9];
    int nt = 0;
    memset(taps, 0, sizeof taps);
    switch (which) {
    case PS_ITER_HEAT1D:
        for (int i = -1; i <= 1; i++) {
            taps[nt].offset[0] = i;
            taps[nt++].weight = i ? 0.25f : 0.5f;
        }
        break;
    case PS_ITER_HEAT2D:
    case PS_ITER_HEAT3D: {
        /* Reading order: the face neighbours before the centre along the
         * outer dimensions first, then the centre, then the ones after. */
        int nd = ndims[which];
        for (int d = 0; d < nd; d++) {
            taps[nt].offset[d] = -1;
            taps[nt++].weight = 0.125f;
        }
        taps[nt++].weight = which == PS_ITER_HEAT2D ? 0.5f : 0.25f;
        for (int d = nd - 1; d >= 0; d--) {
            taps[nt].offset[d] = 1;
            taps[nt++].weight = 0.125f;
        }
        break;
    }
    case PS_ITER_JACOBI2D:
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                taps[nt].offset[0] = dy;
                taps[nt].offset[1] = dx;
                taps[nt++].weight = (float)(1.0 / 9);
            }
        break;
    }
    for (int k = 0; k < nt; k++) taps[k].array = u;
    st = ps_iter_set_update(it, u, nt, taps, 0.0f);
    if (st) {
        ps_iter_destroy(it);
        return st;
    }
    *out = it;
    return PS_SUCCESS;
}

ps_status ps_iter_get_info(const ps_iter *it, ps_iter_info *info)
{
    if (!it || !info) return ps_error(PS_ERR_NULL_POINTER, "ps_iter_get_info: it or info is NULL");
    if (info->struct_size != sizeof *info)
        return ps_error(PS_ERR_INVALID_ARG, "ps_iter_get_info: info.struct_size is %zu, expected %zu", info->struct_size,
                        sizeof *info);
    info->ndim = it->ndim;
    int r[PS_ITER_MAX_DIMS];
    ps_iter_radius(it, r);
    int64_t pts = 1;
    for (int d = 0; d < PS_ITER_MAX_DIMS; d++) {
        info->n[d] = it->n[d];
        info->radius[d] = r[d];
        int64_t len = it->boundary == PS_ITER_PERIODIC ? it->n[d] : it->n[d] - 2 * r[d];
        pts *= len > 0 ? len : 0;
    }
    info->boundary = it->boundary;
    info->steps = it->steps;
    info->n_arrays = it->n_arrays;
    info->updated_points = pts;
    info->taps = 0;
    for (int a = 0; a < it->n_arrays; a++) info->taps += it->upd[a].n_taps;
    return PS_SUCCESS;
}

ps_status ps_iter_get_update(const ps_iter *it, int array, const char **name, int *n_taps, ps_iter_tap *taps,
                             int max_taps, float *constant)
{
    static const char who[] = "ps_iter_get_update";
    if (!it) return ps_error(PS_ERR_NULL_POINTER, "%s: it is NULL", who);
    if (array < 0 || array >= it->n_arrays)
        return ps_error(PS_ERR_INVALID_ARG, "%s: array %d does not exist (the descriptor has %d)", who, array, it->n_arrays);
    const ps_it_update *u = &it->upd[array];
    if (name) *name = it->name[array];
    if (n_taps) *n_taps = u->n_taps;
    if (taps && max_taps > 0) memcpy(taps, u->taps, (size_t)(max_taps < u->n_taps ? max_taps : u->n_taps) * sizeof *taps);
    if (constant) *constant = u->constant;
    return PS_SUCCESS;
}
