/* Execution hands the caller clean upper vector state.
 *
 * LIBXSMM 1.17's kernels return with the upper halves of ymm0-15/zmm0-15
 * dirty; code compiled for plain x86-64 (SSE) that runs afterwards pays for
 * every SSE instruction on Intel cores (~700 cycles per call between the
 * kernel calls of a K = 32 GEMM, measured on an Intel Xeon VM). The executor therefore runs a
 * vzeroupper after each call. This test reads the processor's record of
 * which register state is in use (XGETBV with ECX = 1, "XINUSE") on the
 * calling thread, which also runs kernels (thread 0 of the team), right
 * after executions that go through every kernel call site: a GEMM, a conv
 * calling per tap, a conv merging its taps. Bits 2 (upper halves of
 * ymm0-15) and 6 (upper halves of zmm0-15) must be clear.
 *
 * Skipped (exit 77) where the CPU has no AVX or no XGETBV ECX = 1, or where
 * the probe does not see state this test dirties itself. */
#include <cpuid.h>

#include "test_util.h"

#define XINUSE_UPPER ((uint64_t)((1u << 2) | (1u << 6))) /* YMM_Hi128, ZMM_Hi256 */

static uint64_t xinuse(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return ((uint64_t)hi << 32) | lo;
}

/* The CPU has AVX, the OS enabled it, and XGETBV takes ECX = 1. */
static int probe_available(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
    if (__get_cpuid_max(0, NULL) < 0xd) return 0;
    __cpuid_count(0xd, 1, a, b, c, d);
    return (a & (1u << 2)) != 0;
}

/* Dirties ymm0's upper half, reads XINUSE, cleans up, reads again: the
 * probe must see both states, or it cannot tell a passing execution from a
 * failing one. */
static int probe_sees_dirty_state(void)
{
    __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
    const uint64_t dirty = xinuse();
    __asm__ volatile("vzeroupper" ::: "xmm0");
    const uint64_t clean = xinuse();
    return (dirty & XINUSE_UPPER) && !(clean & XINUSE_UPPER);
}

static void check_conv(ps_context *ctx, const char *what, int64_t C, int64_t H, int64_t K, int64_t R, int64_t pad)
{
    ps_desc desc;
    ps_desc_init_conv(&desc);
    ps_conv_desc *d = &desc.u.conv;
    d->N = 1;
    d->H = d->W = H;
    d->C = C;
    d->K = K;
    d->R = d->S = R;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = pad;
    d->layout = PS_LAYOUT_NHWC;
    d->weight_layout = PS_WEIGHTS_KCRS;
    d->post_ops = PS_POST_BIAS | PS_POST_RELU;
    ps_plan *plan = NULL;
    TU_OK(ps_plan_create(ctx, &desc, NULL, &plan));
    if (!plan) return;
    size_t packed_bytes = 0;
    TU_OK(ps_plan_packed_weights_size(plan, &packed_bytes));
    const int64_t OH = H + 2 * pad - R + 1;
    float *src = tu_alloc_f(H * H * C), *w = tu_alloc_f(K * C * R * R), *bias = tu_alloc_f(K);
    float *dst = tu_alloc_f(OH * OH * K);
    void *packed = tu_alloc(packed_bytes);
    tu_rng rng = {42};
    tu_fill_random(&rng, src, H * H * C);
    tu_fill_random(&rng, w, K * C * R * R);
    tu_fill_random(&rng, bias, K);
    TU_OK(ps_plan_pack_weights(plan, w, packed));
    const ps_status st = ps_conv_execute(plan, src, packed, bias, dst);
    const uint64_t state = xinuse(); /* before anything else runs on this thread */
    TU_CHECK(st == PS_SUCCESS, "%s: execute failed: %s", what, ps_status_str(st));
    TU_CHECK(!(state & XINUSE_UPPER), "%s: execution left upper vector state in use (XINUSE 0x%llx)", what,
             (unsigned long long)state);
    free(src);
    free(w);
    free(bias);
    free(dst);
    free(packed);
    ps_plan_destroy(plan);
}

static void check_gemm(ps_context *ctx, int64_t M, int64_t N, int64_t K)
{
    ps_desc desc;
    ps_desc_init_gemm(&desc);
    desc.u.gemm.M = M;
    desc.u.gemm.N = N;
    desc.u.gemm.K = K;
    ps_plan *plan = NULL;
    TU_OK(ps_plan_create(ctx, &desc, NULL, &plan));
    if (!plan) return;
    float *a = tu_alloc_f(M * K), *b = tu_alloc_f(K * N), *c = tu_alloc_f(M * N);
    tu_rng rng = {7};
    tu_fill_random(&rng, a, M * K);
    tu_fill_random(&rng, b, K * N);
    const ps_status st = ps_gemm_execute(plan, a, b, c);
    const uint64_t state = xinuse();
    TU_CHECK(st == PS_SUCCESS, "gemm: execute failed: %s", ps_status_str(st));
    TU_CHECK(!(state & XINUSE_UPPER), "gemm %lldx%lldx%lld: execution left upper vector state in use (XINUSE 0x%llx)",
             (long long)M, (long long)N, (long long)K, (unsigned long long)state);
    free(a);
    free(b);
    free(c);
    ps_plan_destroy(plan);
}

int main(void)
{
    if (!probe_available()) {
        printf("test_vector_state: skipped: no AVX or no XGETBV with ECX = 1\n");
        return 77;
    }
    if (!probe_sees_dirty_state()) {
        printf("test_vector_state: skipped: XINUSE does not report this thread's upper vector state\n");
        return 77;
    }
    for (int threads = 1; threads <= 2; threads++) {
        ps_context_options opts;
        ps_context_options_init(&opts);
        opts.num_threads = threads;
        ps_context *ctx = NULL;
        TU_OK(ps_context_create(&opts, &ctx));
        if (!ctx) break;
        check_gemm(ctx, 256, 192, 96);
        check_conv(ctx, "3x3 conv, 64 -> 64 channels (a call per tap)", 64, 14, 64, 3, 1);
        check_conv(ctx, "3x3 conv, 3 -> 64 channels (merged taps)", 3, 30, 64, 3, 1);
        ps_context_destroy(ctx);
    }
    return tu_finish("test_vector_state");
}
