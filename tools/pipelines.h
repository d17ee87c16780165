/* polysci CLI — the benchmark pipelines, built with the graph API.
 *
 * The algorithms of Halide's apps and PolyMage's benchmarks, stage for stage
 * (bench/pipeline/ holds their Halide versions and float64 references):
 *   harris      RGB -> gray, Sobel Ix/Iy (/12), products, 3x3 box sums,
 *               det - 0.04 trace^2; valid region [3, W-3) x [3, H-3)
 *   unsharp     Halide's apps/unsharp: gray, 7-tap Gaussian (sigma 1.5) in y
 *               then x, ratio = (2 gray - blur) / gray, output = ratio * input
 *   unsharp_pm  PolyMage's: per channel [1 4 6 4 1]/16 in y then x,
 *               sharpen = 4 in - 3 blur, |in - blur| < 0.001 ? in : sharpen
 *   blur3x3     per channel (in(x-1)+in(x)+in(x+1))/3, then the same in y
 *   laplacian   detail-enhancing Laplacian pyramid, 4 levels, per channel:
 *               down2 = [1 4 6 4 1]/16 in x and y at stride 2, up2 = bilinear,
 *               r(i) = gain(i) (g(i) - up2(g(i+1))) + up2(r(i+1)), gains 1.8,
 *               1.4, 1.2
 * All read one planar (NCHW) f32 image of 3 channels, clamp-to-edge where
 * the algorithm has a boundary, and write one planar output. */
#ifndef POLYSCI_CLI_PIPELINES_H
#define POLYSCI_CLI_PIPELINES_H

#include "polysci/polysci.h"

#define CLI_N_PIPELINES 5
extern const char *const cli_pipeline_names[CLI_N_PIPELINES];

/* __give *graph: pipeline `name` for an h x w image (n images). */
ps_status cli_pipeline_build(const char *name, int64_t n, int64_t h, int64_t w, ps_graph **graph);

#endif
