/* Choosing the row-kernel table for the machine model. */
#include "kernels/kernels.h"

const ps_row_kernels *ps_row_kernels_for(int simd_f32_lanes)
{
    /* The machine model may come from an override or a profile; the table
     * must also run on the CPU at hand. */
    __builtin_cpu_init();
    if (simd_f32_lanes >= 16 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return &ps_row_kernels_avx512;
    if (simd_f32_lanes >= 8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &ps_row_kernels_avx2;
    return &ps_row_kernels_generic;
}
