// A kernel launched at several shapes, as a model launches one kernel at prefill and decode
// sizes: scaleShift (y = a * x + 1) over n = 4M (10 launches), n = 1000003 (5 launches, not a
// multiple of the block: a partial last block) and n = 4096 (40 launches). Each launch first
// spins REPS dependent FMAs whose result is never stored (a stand-in for real work), so the
// kernel's time depends on its shape. For `extract --regimes` (tests/gpu/regimes_e2e.sh).
// Built again as variants: KC_VARIANT_TAIL skips the last partial block (wrong only at
// n = 1000003); KC_VARIANT_BIGFAST drops the spin where n >= 1M and doubles it below (faster
// on the large regimes, slower on the small one; the same values everywhere); KC_VARIANT_FAULT_SMALL
// stores to an illegal address at n = 4096 only, KC_VARIANT_HANG_ODD never ends at n = 1000003
// (a regime set's faults and hangs through `kerncap evaluate`).
// examples/CMakeLists.txt also builds the application with KC_VARIANT_BIGFAST (regimes_bigfast),
// to time the variant inside the application: a rebuild-and-rerun.
// Then gridStride, a grid-stride loop whose grid is capped (as elementwise kernels cap theirs at
// a few waves): at n = 4M (4 launches) and n = 1M (6 launches) its grid is the same, so only
// its scalar argument n tells the two regimes apart; each size writes two output buffers in
// turn (pointer arguments that differ, one regime still).
#include <cstring>
#include <vector>

#include "common.cuh"

#ifndef KC_REPS
#define KC_REPS 256
#endif

__global__ void scaleShift(const float* x, float* y, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int reps = KC_REPS;
#if defined(KC_VARIANT_BIGFAST)
  reps = n >= (1 << 20) ? 0 : 2 * KC_REPS;
#endif
  float acc = threadIdx.x;
  for (int r = 0; r < reps; ++r) acc = fmaf(acc, 0.999f, 0.5f);
  if (acc == -1.0f) y[0] = acc;  // never true: keeps the loop
#if defined(KC_VARIANT_FAULT_SMALL)
  if (n == 4096 && i == 0) *reinterpret_cast<volatile float*>(8) = 1.0f;  // an illegal address
#endif
#if defined(KC_VARIANT_HANG_ODD)
  if (n == 1000003)  // spins until x[0] holds a value it never holds: the launch never ends
    while (reinterpret_cast<volatile const float*>(x)[0] != -12345.0f) {
    }
#endif
#if defined(KC_VARIANT_TAIL)
  if (i < n / static_cast<int>(blockDim.x) * static_cast<int>(blockDim.x)) y[i] = a * x[i] + 1.0f;
#else
  if (i < n) y[i] = a * x[i] + 1.0f;
#endif
}

__global__ void gridStride(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] - 1.0f;
}

// gridStride's capped grid: 264 blocks (two waves of 132 SMs) whatever n.
constexpr int kCappedGrid = 264;

int main() {
  const int sizes[] = {1 << 22, 1000003, 4096};
  const int launches[] = {10, 5, 40};
  const int nmax = 1 << 22;
  std::vector<float> h(nmax);
  for (int i = 0; i < nmax; ++i) h[i] = float(i % 1013) * 0.01f;
  float *x, *y;
  CK(cudaMalloc(&x, nmax * sizeof(float)));
  CK(cudaMalloc(&y, nmax * sizeof(float)));
  CK(cudaMemcpy(x, h.data(), nmax * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(y, 0, nmax * sizeof(float)));
  // Interleaved, as decode steps follow a prefill: every round launches each size once
  // until its count is used up.
  for (int round = 0; round < 40; ++round)
    for (int s = 0; s < 3; ++s) {
      if (round >= launches[s]) continue;
      const int n = sizes[s];
      scaleShift<<<(n + 255) / 256, 256>>>(x, y, n, 0.5f + 0.25f * s);
      CK_LAUNCH();
    }
  float *z0, *z1;
  CK(cudaMalloc(&z0, nmax * sizeof(float)));
  CK(cudaMalloc(&z1, nmax * sizeof(float)));
  const int capped[] = {1 << 22, 1 << 20};
  const int capped_launches[] = {4, 6};
  for (int round = 0; round < 6; ++round)
    for (int s = 0; s < 2; ++s) {
      if (round >= capped_launches[s]) continue;
      const int n = capped[s];
      const int grid = (n + 255) / 256 < kCappedGrid ? (n + 255) / 256 : kCappedGrid;
      gridStride<<<grid, 256>>>(x, round % 2 ? z1 : z0, n, 2.0f);
      CK_LAUNCH();
    }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(nmax);
  CK(cudaMemcpy(out.data(), y, nmax * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<float> out_z(nmax);
  CK(cudaMemcpy(out_z.data(), z1, nmax * sizeof(float), cudaMemcpyDeviceToHost));
  print_checksum("regimes", fnv1a(out.data(), nmax * sizeof(float)) ^ fnv1a(out_z.data(), nmax * sizeof(float)));
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(z0));
  CK(cudaFree(z1));
  return 0;
}
