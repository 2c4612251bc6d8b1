// CUB's onesweep radix sort (cub::DeviceRadixSort::SortKeys on 4M keys launches
// DeviceRadixSortOnesweepKernel): each pass takes its tiles from device-side counters that the
// pass before zeroed, so launching one pass twice without putting them back reads consumed
// counters (tests/gpu/stateful_e2e.sh). Built by that script with nvcc; no torch needed.
// Prints "sorted ok" after checking the result on the host.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cub/cub.cuh>

#define CK(call)                                                                            \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

int main() {
  const int n = 1 << 22;
  std::vector<unsigned> h(n);
  unsigned x = 12345;
  for (auto& v : h) v = (x = x * 1664525u + 1013904223u) >> 2;
  unsigned *in = nullptr, *out = nullptr;
  CK(cudaMalloc(&in, n * sizeof(unsigned)));
  CK(cudaMalloc(&out, n * sizeof(unsigned)));
  CK(cudaMemcpy(in, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  CK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, in, out, n));
  void* temp = nullptr;
  CK(cudaMalloc(&temp, temp_bytes));
  CK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, n));
  CK(cudaDeviceSynchronize());
  std::vector<unsigned> r(n);
  CK(cudaMemcpy(r.data(), out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int i = 1; i < n; ++i)
    if (r[i - 1] > r[i]) {
      std::fprintf(stderr, "not sorted at %d\n", i);
      return 1;
    }
  std::printf("sorted ok\n");
  return 0;
}
