// Case 3: a batched kernel taking float** — device arrays of device pointers, each batch
// its own allocation. Replay must restore the pointer tables and, when a batch buffer is
// relocated, rewrite the pointers inside them.
#include <vector>

#include "common.cuh"

__global__ void batchedScale(float** out, float** in, const float* scales, int n) {
  int b = blockIdx.y;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[b][i] = in[b][i] * scales[b] + float(b);
}

int main() {
  const int batches = 4, n = 1 << 16;
  const size_t bytes = n * sizeof(float);
  std::vector<float*> din(batches), dout(batches);
  std::vector<float> host(n), scales(batches);
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < n; ++i) host[i] = float((i * (b + 3)) % 101) * 0.125f;
    scales[b] = 1.5f + b;
    CK(cudaMalloc(&din[b], bytes));
    CK(cudaMalloc(&dout[b], bytes));
    CK(cudaMemcpy(din[b], host.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout[b], 0, bytes));
  }
  float **din_table, **dout_table, *dscales;
  CK(cudaMalloc(&din_table, batches * sizeof(float*)));
  CK(cudaMalloc(&dout_table, batches * sizeof(float*)));
  CK(cudaMalloc(&dscales, batches * sizeof(float)));
  CK(cudaMemcpy(din_table, din.data(), batches * sizeof(float*), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dout_table, dout.data(), batches * sizeof(float*), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dscales, scales.data(), batches * sizeof(float), cudaMemcpyHostToDevice));

  batchedScale<<<dim3((n + 255) / 256, batches), 256>>>(dout_table, din_table, dscales, n);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());

  uint64_t h = fnv1a(nullptr, 0);
  for (int b = 0; b < batches; ++b) {
    CK(cudaMemcpy(host.data(), dout[b], bytes, cudaMemcpyDeviceToHost));
    expect(host[5] == float((5 * (b + 3)) % 101) * 0.125f * scales[b] + float(b), "out[b][5]");
    h = fnv1a(host.data(), bytes, h);
    CK(cudaFree(din[b]));
    CK(cudaFree(dout[b]));
  }
  CK(cudaFree(din_table));
  CK(cudaFree(dout_table));
  CK(cudaFree(dscales));
  print_checksum("batched_ptrs", h);
  return 0;
}
