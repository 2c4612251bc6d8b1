// multifile: runs every kernel of the example `--steps` times on the same inputs and prints
// "checksum multifile <hex>". Arguments: --n N (elements), --work W (the kernels' wasted
// loads per element, see slow_load), --steps S.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mf/api.h>

#include "../kernels/bias.cuh"

namespace mf {

void check(int err, const char* what) {
  if (err == 0) return;
  std::fprintf(stderr, "multifile: %s failed: %s\n", what, cudaGetErrorString(static_cast<cudaError_t>(err)));
  std::exit(1);
}

}  // namespace mf

namespace {

template <typename T>
T* device_copy(const std::vector<T>& h) {
  T* d = nullptr;
  mf::check(static_cast<int>(cudaMalloc(&d, h.size() * sizeof(T))), "cudaMalloc");
  mf::check(static_cast<int>(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)), "cudaMemcpy");
  return d;
}

template <typename T>
uint64_t fold(uint64_t h, const T* d, size_t count) {
  std::vector<T> host(count);
  mf::check(static_cast<int>(cudaMemcpy(host.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost)), "cudaMemcpy");
  const auto* b = reinterpret_cast<const unsigned char*>(host.data());
  for (size_t i = 0; i < count * sizeof(T); ++i) h = (h ^ b[i]) * 1099511628211ull;  // FNV-1a
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 1 << 20, work = 64, steps = 3;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--n")) n = std::atoi(argv[a + 1]);
    else if (!std::strcmp(argv[a], "--work")) work = std::atoi(argv[a + 1]);
    else if (!std::strcmp(argv[a], "--steps")) steps = std::atoi(argv[a + 1]);
  }
  std::vector<float> in_f(n), bias(MF_BIAS_SLOTS);
  std::vector<double> in_d(n);
  uint32_t s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    in_f[i] = static_cast<float>(s >> 8) / 16777216.0f;
    in_d[i] = static_cast<double>(s) / 4294967296.0;
  }
  for (int i = 0; i < MF_BIAS_SLOTS; ++i) bias[i] = 0.001f * static_cast<float>(i);
  float* d_in_f = device_copy(in_f);
  float* d_bias = device_copy(bias);
  double* d_in_d = device_copy(in_d);
  float* d_scaled = device_copy(std::vector<float>(n, 0.0f));
  float* d_smooth = device_copy(std::vector<float>(n, 0.0f));
  float* d_biased = device_copy(std::vector<float>(n, 0.0f));
  double* d_scaled_d = device_copy(std::vector<double>(n, 0.0));
  const int blocks = (n + MF_BLOCK - 1) / MF_BLOCK;
  double* d_sums = device_copy(std::vector<double>(blocks, 0.0));

  for (int step = 0; step < steps; ++step) {
    mf::run_scale_f32(d_scaled, d_in_f, n, work);
    mf::run_scale_f64(d_scaled_d, d_in_d, n, work);
    mf::run_stencil(d_smooth, d_scaled, n, work);
    mf_bias<<<blocks, MF_BLOCK>>>(d_biased, d_smooth, d_bias, n, work);
    mf::check(static_cast<int>(cudaGetLastError()), "mf_bias");
    mf::run_partial_sums(d_sums, d_scaled_d, n);
  }
  mf::check(static_cast<int>(cudaDeviceSynchronize()), "cudaDeviceSynchronize");
  uint64_t h = 1469598103934665603ull;
  h = fold(h, d_scaled, n);
  h = fold(h, d_smooth, n);
  h = fold(h, d_biased, n);
  h = fold(h, d_sums, blocks);
  std::printf("checksum multifile %016llx\n", static_cast<unsigned long long>(h));
  return 0;
}
