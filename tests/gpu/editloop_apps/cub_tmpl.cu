// editloop_e2e.sh, case cub_tmpl: three instantiations of the header's kernel template in one
// unit (cub_tmpl.cuh); the case captures tmpl_scan<float, 256>. Values are small integers, so
// every sum is exact in float.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cub_tmpl.cuh"

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

int main() {
  const int n = 1 << 18;
  std::vector<float> in(n);
  std::vector<int> in_i(n);
  for (int i = 0; i < n; ++i) in_i[i] = i % 7, in[i] = float(in_i[i]);
  float *din, *dout;
  int *din_i, *dout_i;
  CK(cudaMalloc(&din, n * sizeof(float)));
  CK(cudaMalloc(&dout, n * sizeof(float)));
  CK(cudaMalloc(&din_i, n * sizeof(int)));
  CK(cudaMalloc(&dout_i, n * sizeof(int)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(din_i, in_i.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  tmpl_scan<float, 128><<<n / 128, 128>>>(din, dout, n);
  tmpl_scan<int, 128><<<n / 128, 128>>>(din_i, dout_i, n);
  tmpl_scan<float, 256><<<n / 256, 256>>>(din, dout, n);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  CK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("checksum cub_tmpl %.1f\n", double(out[255]) + double(out[n - 1]));
  return 0;
}
