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

#include <cuda.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common.cuh"

#define CKD(call)                                                                      \
  do {                                                                                 \
    CUresult r_ = (call);                                                              \
    if (r_ != CUDA_SUCCESS) {                                                          \
      const char* s_ = nullptr;                                                        \
      cuGetErrorString(r_, &s_);                                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// The cubin lives next to this executable unless a path is given.
static std::string cubin_path(int argc, char** argv) {
  if (argc > 1) return argv[1];
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  expect(len > 0, "readlink /proc/self/exe");
  exe[len] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/driver_extra_kernel.cubin";
}

int main(int argc, char** argv) {
  const std::string path = cubin_path(argc, argv);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "driver_extra: cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());

  CKD(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CKD(cuDeviceGet(&dev, 0));
  CKD(cuDevicePrimaryCtxRetain(&ctx, dev));
  CKD(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CUfunction fn;
  CKD(cuModuleLoadData(&mod, image.data()));
  CKD(cuModuleGetFunction(&fn, mod, "saxpyExtra"));

  const int n = 1 << 20;
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

  // Packed exactly as the kernel's parameter layout: x @0, y @8, a @16, n @20 (24 bytes).
  const float a = 3.0f;
  unsigned char params[24];
  std::memcpy(params + 0, &dx, 8);
  std::memcpy(params + 8, &dy, 8);
  std::memcpy(params + 16, &a, 4);
  std::memcpy(params + 20, &n, 4);
  size_t params_size = sizeof params;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE, &params_size,
                   CU_LAUNCH_PARAM_END};
  CKD(cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra));
  CKD(cuCtxSynchronize());

  std::vector<float> out(n);
  CKD(cuMemcpyDtoH(out.data(), dy, bytes));
  for (int i = 0; i < n; i += 101) expect(out[i] == a * x[i] + y[i], "y = a x + y");
  CKD(cuMemFree(dx));
  CKD(cuMemFree(dy));
  CKD(cuModuleUnload(mod));
  CKD(cuDevicePrimaryCtxRelease(dev));
  print_checksum("driver_extra", fnv1a(out.data(), bytes));
  return 0;
}

#endif
