/* polysci — plans: create once per layer shape, execute many times.
 *
 * ps_plan_create does all the work that can be done once: validation,
 * schedule choice, LIBXSMM JIT dispatch of every microkernel the schedule
 * needs, and precomputation of the edge (padding) geometry. ps_plan_execute
 * only walks the schedule and calls kernel pointers.
 *
 * Conv weights are packed once into the plan's internal layout:
 *   size_t bytes; ps_plan_packed_weights_size(plan, &bytes);
 *   void *packed = aligned_alloc(64, bytes);   (64-byte alignment recommended)
 *   ps_plan_pack_weights(plan, user_weights, packed);
 * and the packed buffer is passed to every execute. It carries a header that
 * ties it to the plan's weight layout, so a wrong buffer is rejected.
 *
 * Thread safety: a plan is immutable after creation; it may be executed from
 * several threads at once with separate dst buffers (and workspaces). */
#ifndef POLYSCI_PLAN_H
#define POLYSCI_PLAN_H

#include "polysci/export.h"

#include <stddef.h>
#include "polysci/status.h"
#include "polysci/context.h"
#include "polysci/desc.h"
#include "polysci/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_plan ps_plan;

/* How the planner orders the candidate schedules. */
typedef enum ps_ranker {
    PS_RANKER_DEFAULT = 0, /* the option that measured best (docs/expert-rules.md, "The default ranker"): currently
                              PS_RANKER_DNN for convolutions of N >= 2 images on machines
                              whose last-level cache is fast (several times memory's
                              bandwidth, like the machine its weights were trained on);
                              otherwise, for one image and for GEMMs PS_RANKER_NONE;
                              PS_RANKER_DNN with top_k > 1
                              (its order gives the best candidates to time); cost queries
                              treat it as PS_RANKER_COST */
    PS_RANKER_COST = 1,    /* PolyScientist cost model: Alg. 2 + Eq. 1 over isl working sets */
    PS_RANKER_DNN = 2,     /* PolyScientist-DNN: pairwise neural ranking of the variants' Alg. 2
                              working sets and shape statistics, round-robin tournament
                              (see cost.h) */
    PS_RANKER_NONE = 3,    /* no search: the expert schedule for the plan's threads, which is
                              ps_schedule_default's fixed loop order (for GEMMs with band tiles
                              of 8 x 2 kernel blocks around the reduction loop, L2 blocking,
                              where those split evenly over the threads and B does not fit
                              in half of L2; per-thread panel tiles for large operands;
                              whole rows of blocks per thread where A is read in place) */
    PS_RANKER_VOLUME = 4   /* Eq. 1 over estimated data volumes per level instead of
                              working-set sizes (see docs/cost-model.md) */
} ps_ranker;

/* ps_plan_options.flags */
#define PS_PLAN_NO_CACHE 1u /* neither read nor fill the context's plan cache */

typedef struct ps_plan_options {
    size_t struct_size;          /* sizeof(ps_plan_options); set by init */
    const ps_schedule *schedule; /* NULL: the planner chooses; else run exactly this one (copied) */
    int num_threads;             /* 0: the context's */
    ps_ranker ranker;
    int top_k;                   /* time the k best-ranked variants and the default schedule,
                                    keep the fastest; 0 or 1 = purely static (no execution
                                    while planning) */
    unsigned flags;              /* PS_PLAN_* */
    double time_budget_ms;       /* with top_k > 1: planning time (ms) after which no further candidate
                                    is timed; the expert schedule and the ranker's first choice are
                                    timed where both timings are predicted to end within it (else
                                    nothing is timed and the plan is the static default's), the
                                    others in the ranker's order while time is left. 0: no limit
                                    (all k). Part of the plan cache and wisdom key. */
} ps_plan_options;

PS_API void ps_plan_options_init(ps_plan_options *opts);

/* __give *plan. opts may be NULL. On error *plan is set to NULL. */
PS_API ps_status ps_plan_create(ps_context *ctx, const ps_desc *desc,
                         const ps_plan_options *opts, ps_plan **plan);
/* __take. NULL is a no-op. */
PS_API void ps_plan_destroy(ps_plan *plan);

/* The descriptor and schedule the plan runs (owned by the plan). */
PS_API const ps_desc *ps_plan_get_desc(const ps_plan *plan);
PS_API const ps_schedule *ps_plan_get_schedule(const ps_plan *plan);

/* Readable description: descriptor, schedule, kernels. snprintf-like. */
PS_API ps_status ps_plan_describe(const ps_plan *plan, char *buf, size_t len, size_t *needed);

/* Conv only: bytes of the packed weights buffer (header included). */
PS_API ps_status ps_plan_packed_weights_size(const ps_plan *plan, size_t *bytes);
/* Conv only: packs weights (in desc.weight_layout) into `packed`. */
PS_API ps_status ps_plan_pack_weights(const ps_plan *plan, const float *weights, void *packed);

/* Scratch bytes execute needs (NCHW conversion, transposed GEMM operands);
 * 0 when none. Pass a buffer this large as args.workspace, or NULL and the
 * plan allocates it per call. */
PS_API ps_status ps_plan_workspace_size(const ps_plan *plan, size_t *bytes);

typedef struct ps_exec_args {
    size_t struct_size;          /* sizeof(ps_exec_args); set by init */
    /* conv */
    const float *src;            /* N x C x H x W in desc layout */
    const void *weights;         /* packed by ps_plan_pack_weights */
    const float *bias;           /* K floats, when PS_POST_BIAS */
    float *dst;                  /* N x K x OH x OW in desc layout; fully written */
    /* gemm */
    const float *a, *b;
    float *c;
    /* both */
    void *workspace;             /* optional, ps_plan_workspace_size bytes */
    /* conv with PS_POST_SUM: added to the output before the activation */
    const float *sum;            /* N x OH x OW x K, NHWC (may be dst itself) */
} ps_exec_args;

PS_API void ps_exec_args_init(ps_exec_args *args);

/* Runs the plan. Checks the arguments first; on error nothing is written. */
PS_API ps_status ps_plan_execute(const ps_plan *plan, const ps_exec_args *args);

/* Conveniences over ps_plan_execute. */
PS_API ps_status ps_conv_execute(const ps_plan *plan, const float *src, const void *packed_weights,
                          const float *bias, float *dst);
PS_API ps_status ps_gemm_execute(const ps_plan *plan, const float *a, const float *b, float *c);

#ifdef __cplusplus
}
#endif
#endif
