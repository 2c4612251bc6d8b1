// Case 8: the same kernel launched 8 times with its iteration number as an int parameter.
// `--dispatch 3` must capture the launch whose `iteration` is 3: the suite reads that
// parameter back from params.bin, and validate proves BEFORE held three iterations' state.
#include <vector>

#include "common.cuh"

__global__ void iterate(float* state, int* trace, int iteration, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) state[i] = state[i] * 0.5f + float(iteration);
  if (i == 0) trace[iteration] = iteration * 10 + 1;
}

int main() {
  const int n = 1 << 16, launches = 8;
  std::vector<float> state(n);
  for (int i = 0; i < n; ++i) state[i] = float(i % 255);
  float* dstate;
  int* dtrace;
  CK(cudaMalloc(&dstate, n * sizeof(float)));
  CK(cudaMalloc(&dtrace, launches * sizeof(int)));
  CK(cudaMemcpy(dstate, state.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(dtrace, 0, launches * sizeof(int)));
  for (int it = 0; it < launches; ++it) {
    iterate<<<(n + 255) / 256, 256>>>(dstate, dtrace, it, n);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  int trace[launches];
  CK(cudaMemcpy(trace, dtrace, sizeof trace, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(state.data(), dstate, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int it = 0; it < launches; ++it) expect(trace[it] == it * 10 + 1, "trace[it]");
  CK(cudaFree(dstate));
  CK(cudaFree(dtrace));
  print_checksum("dispatch", fnv1a(trace, sizeof trace, fnv1a(state.data(), n * sizeof(float))));
  return 0;
}
