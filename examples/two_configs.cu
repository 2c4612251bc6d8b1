// Two compilations of one kernel, as an autotuner (Triton, Inductor) makes one per
// configuration: the kernel half of this file is compiled to three cubins that differ in
// threads a block and elements a thread (-DKC_THREADS, -DKC_PER_THREAD; a Triton XBLOCK of
// their product). The program loads two of them as two modules, then launches the one loaded
// FIRST with its own geometry, so a capture that took the most recently loaded image of the
// name would hold the wrong code (tests/gpu/run.sh, cases two_configs_*):
//   two_configs bounds   256 x 2, then 128 x 8: the launch bounds tell them apart
//   two_configs same     256 x 2, then 256 x 4: the same bounds; only the module binding does
#ifdef KC_KERNEL_ONLY

extern "C" __global__ void __launch_bounds__(KC_THREADS) twoConfigs(const float* x, float* y, float a, int n) {
  const int base = blockIdx.x * (KC_THREADS * KC_PER_THREAD) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < KC_PER_THREAD; ++k) {
    const int i = base + k * KC_THREADS;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

#else

#include <string>
#include <vector>

#include "driver_common.cuh"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "bounds";
  expect(mode == "bounds" || mode == "same", "mode is bounds or same");
  const std::vector<char> first = read_file(beside_executable("two_configs_256x2.cubin"), "two_configs");
  const std::vector<char> second = read_file(
      beside_executable(mode == "bounds" ? "two_configs_128x8.cubin" : "two_configs_256x4.cubin"), "two_configs");
  const CUdevice dev = start_primary_context();
  // Load and look up both, as an autotuner compiles every configuration before choosing.
  CUmodule m1, m2;
  CUfunction f1, f2;
  CKD(cuModuleLoadData(&m1, first.data()));
  CKD(cuModuleGetFunction(&f1, m1, "twoConfigs"));
  CKD(cuModuleLoadData(&m2, second.data()));
  CKD(cuModuleGetFunction(&f2, m2, "twoConfigs"));

  int n = (1 << 20) + 77;  // not a multiple of either configuration's elements a block
  Saxpy s = saxpy_inputs(n);
  float a = 3.0f;
  void* args[] = {&s.dx, &s.dy, &a, &n};
  // The first configuration "won": 256 threads a block, 512 elements a block.
  CKD(cuLaunchKernel(f1, (n + 511) / 512, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CKD(cuCtxSynchronize());
  (void)f2;

  const std::vector<float> out = saxpy_result(s, a, 97);
  CKD(cuModuleUnload(m1));
  CKD(cuModuleUnload(m2));
  CKD(cuDevicePrimaryCtxRelease(dev));
  print_checksum("two_configs", fnv1a(out.data(), s.bytes));
  return 0;
}

#endif
