// Case 12c: the driver API alone. The kernel half of this file is compiled to a separate
// cubin (driver_extra_kernel.cubin, built next to the program, -DKC_KERNEL_ONLY); the program
// loads it at run time with cuModuleLoadData and launches with cuLaunchKernel's `extra`
// form (CU_LAUNCH_PARAM_BUFFER_POINTER): one packed parameter buffer, no kernelParams.
#ifdef KC_KERNEL_ONLY

extern "C" __global__ void saxpyExtra(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

#else

#include <cstring>
#include <string>
#include <vector>

#include "driver_common.cuh"

int main(int argc, char** argv) {
  // The cubin lives next to this executable unless a path is given.
  const std::vector<char> image =
      read_file(argc > 1 ? argv[1] : beside_executable("driver_extra_kernel.cubin"), "driver_extra");
  const CUdevice dev = start_primary_context();
  CUmodule mod;
  CUfunction fn;
  CKD(cuModuleLoadData(&mod, image.data()));
  CKD(cuModuleGetFunction(&fn, mod, "saxpyExtra"));

  const int n = 1 << 20;
  Saxpy s = saxpy_inputs(n);
  // Packed exactly as the kernel's parameter layout: x @0, y @8, a @16, n @20 (24 bytes).
  const float a = 3.0f;
  unsigned char params[24];
  std::memcpy(params + 0, &s.dx, 8);
  std::memcpy(params + 8, &s.dy, 8);
  std::memcpy(params + 16, &a, 4);
  std::memcpy(params + 20, &n, 4);
  size_t params_size = sizeof params;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE, &params_size,
                   CU_LAUNCH_PARAM_END};
  CKD(cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra));
  CKD(cuCtxSynchronize());

  const std::vector<float> out = saxpy_result(s, a, 101);
  CKD(cuModuleUnload(mod));
  CKD(cuDevicePrimaryCtxRelease(dev));
  print_checksum("driver_extra", fnv1a(out.data(), s.bytes));
  return 0;
}

#endif
