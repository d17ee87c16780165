#include <immintrin.h>
#include <x86intrin.h>
#include <libxsmm.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* C (col-major) MxN = 4096 x 2048, ldc 4096; blocks m=48, n=64, k=32, A packed 86 blocks, B packed 32 blocks */
int main(int argc, char **argv) {
  int order = argc > 1 ? atoi(argv[1]) : 0; int stream = argc > 2 ? atoi(argv[2]) : 1; int reps = 31;
  int mode = argc > 3 ? atoi(argv[3]) : 0; /* 0: one exec per rep; */
  const libxsmm_blasint M = 4096, N = 2048, K = 32, bm = 48, bn = 64, ldc = 4096, lda = 48, ldb = 32;
  const int MB = 86, NB = 32;
  float alpha = 1, beta = 0; int flags = LIBXSMM_GEMM_FLAGS('N','N') | (stream ? LIBXSMM_GEMM_FLAG_ALIGN_C_NTS_HINT : 0), pf = 0;
  libxsmm_smmfunction_reducebatch_addr k48 = libxsmm_smmdispatch_reducebatch_addr(bm, bn, K, &lda, &ldb, &ldc, &alpha, &beta, &flags, &pf);
  libxsmm_blasint m16 = 16, lda16 = 16;
  libxsmm_smmfunction_reducebatch_addr k16 = libxsmm_smmdispatch_reducebatch_addr(m16, bn, K, &lda16, &ldb, &ldc, &alpha, &beta, &flags, &pf);
  float *A = aligned_alloc(64, (size_t)MB * bm * K * 4), *B = aligned_alloc(64, (size_t)NB * bn * K * 4), *C = aligned_alloc(64, (size_t)M * N * 4);
  for (size_t i = 0; i < (size_t)MB*bm*K; i++) A[i] = 1e-3f * (i % 7);
  for (size_t i = 0; i < (size_t)NB*bn*K; i++) B[i] = 1e-3f * (i % 5);
  memset(C, 0, (size_t)M*N*4);
  double t[64]; static unsigned long long kern[2];
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(2)
    {
      int tid = omp_get_thread_num(); unsigned long long tt0 = __rdtsc(); kern[tid] = 0;
      const float *ap[1], *bp[1];
      long total = MB * NB, lo = total * tid / 2, hi = total * (tid + 1) / 2;
      for (long it = lo; it < hi; it++) {
        long mb, nb;
        if (order == 0) { mb = it / NB; nb = it % NB; } else { nb = it / MB; mb = it % MB; }
        ap[0] = A + mb * bm * K; bp[0] = B + nb * bn * K;
        unsigned long long cnt = 1;
        unsigned long long k0 = __rdtsc();
        (mb == MB - 1 ? k16 : k48)(ap, bp, C + mb * bm + nb * bn * ldc, &cnt);
        kern[tid] += __rdtsc() - k0;
      }
      _mm_sfence();
      if (r == reps - 1) printf("thr %d total %.3f kern %.3f\n", tid, (__rdtsc() - tt0) * 1e-6, kern[tid] * 1e-6);
    }
    t[r] = omp_get_wtime() - t0;
  }
  for (int i = 0; i < reps; i++) for (int j = i + 1; j < reps; j++) if (t[j] < t[i]) { double x = t[i]; t[i] = t[j]; t[j] = x; }
  printf("order %d stream %d: median %.3f ms min %.3f\n", order, stream, t[reps/2]*1e3, t[0]*1e3);
}
