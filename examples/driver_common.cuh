#pragma once
// Shared by the driver-API example applications (driver_extra, two_configs): one checking
// macro for every driver call, and the path of a cubin built next to the executable.
#include <cuda.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

// `name` in the executable's own directory.
inline std::string beside_executable(const char* name) {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  expect(len > 0, "readlink /proc/self/exe");
  exe[len] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/" + name;
}

// The bytes of file `path` (exit 1 with a message naming `app` when it cannot be read).
inline std::vector<char> read_file(const std::string& path, const char* app) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "%s: cannot read %s\n", app, path.c_str());
    std::exit(1);
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// cuInit, device 0 and its primary context made current; release with cuDevicePrimaryCtxRelease.
inline CUdevice start_primary_context() {
  CKD(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CKD(cuDeviceGet(&dev, 0));
  CKD(cuDevicePrimaryCtxRetain(&ctx, dev));
  CKD(cuCtxSetCurrent(ctx));
  return dev;
}

// The inputs of a y = a*x + y kernel: x[i] = i % 211, y[i] = (i % 17) / 2, on the host and
// copied to the device.
struct Saxpy {
  int n = 0;
  size_t bytes = 0;
  std::vector<float> x, y;
  CUdeviceptr dx = 0, dy = 0;
};

inline Saxpy saxpy_inputs(int n) {
  Saxpy s;
  s.n = n;
  s.bytes = n * sizeof(float);
  s.x.resize(n);
  s.y.resize(n);
  for (int i = 0; i < n; ++i) {
    s.x[i] = float(i % 211);
    s.y[i] = float(i % 17) * 0.5f;
  }
  CKD(cuMemAlloc(&s.dx, s.bytes));
  CKD(cuMemAlloc(&s.dy, s.bytes));
  CKD(cuMemcpyHtoD(s.dx, s.x.data(), s.bytes));
  CKD(cuMemcpyHtoD(s.dy, s.y.data(), s.bytes));
  return s;
}

// y back from the device, checked against a*x + y every `stride` elements and at the end;
// the device buffers are freed.
inline std::vector<float> saxpy_result(Saxpy& s, float a, int stride) {
  std::vector<float> out(s.n);
  CKD(cuMemcpyDtoH(out.data(), s.dy, s.bytes));
  for (int i = 0; i < s.n; i += stride) expect(out[i] == a * s.x[i] + s.y[i], "y = a x + y");
  expect(out[s.n - 1] == a * s.x[s.n - 1] + s.y[s.n - 1], "y = a x + y (the last element)");
  CKD(cuMemFree(s.dx));
  CKD(cuMemFree(s.dy));
  return out;
}
