// Case 7: a templated kernel in nested namespaces, instantiated four ways, so the mangled
// names are long and differ only in template arguments. The suite selects the double
// instantiation by a substring of its demangled name ("transform_kernel<double").
#include <vector>

#include "common.cuh"

namespace kc_demo {

template <typename T>
struct Scale {
  T k;
  __device__ T operator()(T v) const { return v * k; }
};
template <typename T>
struct Square {
  __device__ T operator()(T v) const { return v * v; }
};
template <typename T>
struct AddConst {
  T c;
  __device__ T operator()(T v) const { return v + c; }
};

namespace detail {
template <typename T, int kUnroll, typename Op>
__global__ void transform_kernel(const T* __restrict__ in, T* __restrict__ out, size_t n, Op op) {
  size_t base = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kUnroll;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (base + u < n) out[base + u] = op(in[base + u]);
}
}  // namespace detail

template <typename T, int kUnroll, typename Op>
uint64_t run(size_t n, Op op, uint64_t h) {
  std::vector<T> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = T(i % 1021);
  T *din, *dout;
  CK(cudaMalloc(&din, n * sizeof(T)));
  CK(cudaMalloc(&dout, n * sizeof(T)));
  CK(cudaMemcpy(din, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const size_t threads = (n + kUnroll - 1) / kUnroll;
  detail::transform_kernel<T, kUnroll, Op><<<unsigned((threads + 255) / 256), 256>>>(din, dout, n, op);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(host.data(), dout, n * sizeof(T), cudaMemcpyDeviceToHost));
  CK(cudaFree(din));
  CK(cudaFree(dout));
  return fnv1a(host.data(), n * sizeof(T), h);
}

}  // namespace kc_demo

int main() {
  const size_t n = 1 << 18;
  uint64_t h = fnv1a(nullptr, 0);
  h = kc_demo::run<float, 4>(n, kc_demo::Scale<float>{1.5f}, h);
  h = kc_demo::run<int, 8>(n, kc_demo::AddConst<int>{7}, h);
  h = kc_demo::run<double, 2>(n, kc_demo::Square<double>{}, h);
  h = kc_demo::run<float, 4>(n, kc_demo::Scale<float>{-2.0f}, h);
  print_checksum("templated", h);
  return 0;
}
