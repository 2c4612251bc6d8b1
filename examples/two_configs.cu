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

#include <cuda.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common.cuh"

#define CKD(call)                                                                               \
  do {                                                                                          \
    CUresult r_ = (call);                                                                       \
    if (r_ != CUDA_SUCCESS) {                                                                   \
      const char* s_ = nullptr;                                                                 \
      cuGetErrorString(r_, &s_);                                                                \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

// A cubin built next to this executable.
static std::vector<char> read_beside(const char* name) {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  expect(len > 0, "readlink /proc/self/exe");
  exe[len] = 0;
  std::string path(exe);
  path = path.substr(0, path.rfind('/')) + "/" + name;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "two_configs: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "bounds";
  expect(mode == "bounds" || mode == "same", "mode is bounds or same");
  const std::vector<char> first = read_beside("two_configs_256x2.cubin");
  const std::vector<char> second = read_beside(mode == "bounds" ? "two_configs_128x8.cubin" : "two_configs_256x4.cubin");

  CKD(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CKD(cuDeviceGet(&dev, 0));
  CKD(cuDevicePrimaryCtxRetain(&ctx, dev));
  CKD(cuCtxSetCurrent(ctx));
  // Load and look up both, as an autotuner compiles every configuration before choosing.
  CUmodule m1, m2;
  CUfunction f1, f2;
  CKD(cuModuleLoadData(&m1, first.data()));
  CKD(cuModuleGetFunction(&f1, m1, "twoConfigs"));
  CKD(cuModuleLoadData(&m2, second.data()));
  CKD(cuModuleGetFunction(&f2, m2, "twoConfigs"));

  const int n = (1 << 20) + 77;  // not a multiple of either configuration's elements a block
  const size_t bytes = n * sizeof(float);
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 211);
    y[i] = float(i % 17) * 0.5f;
  }
  CUdeviceptr dx, dy;
  CKD(cuMemAlloc(&dx, bytes));
  CKD(cuMemAlloc(&dy, bytes));
  CKD(cuMemcpyHtoD(dx, x.data(), bytes));
  CKD(cuMemcpyHtoD(dy, y.data(), bytes));
  float a = 3.0f;
  int count = n;
  void* args[] = {&dx, &dy, &a, &count};
  // The first configuration "won": 256 threads a block, 512 elements a block.
  CKD(cuLaunchKernel(f1, (n + 511) / 512, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CKD(cuCtxSynchronize());

  std::vector<float> out(n);
  CKD(cuMemcpyDtoH(out.data(), dy, bytes));
  for (int i = 0; i < n; i += 97) expect(out[i] == a * x[i] + y[i], "y = a x + y");
  expect(out[n - 1] == a * x[n - 1] + y[n - 1], "the tail");
  (void)f2;
  CKD(cuMemFree(dx));
  CKD(cuMemFree(dy));
  CKD(cuModuleUnload(m1));
  CKD(cuModuleUnload(m2));
  CKD(cuDevicePrimaryCtxRelease(dev));
  print_checksum("two_configs", fnv1a(out.data(), bytes));
  return 0;
}

#endif
