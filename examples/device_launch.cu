// Case: a kernel launched only from the device (CUDA dynamic parallelism). scaleParent runs
// on the host's launch and launches scaleChild from its first thread; the host never
// launches scaleChild, so kerncap (which sees host-side launches) cannot capture it, and
// `extract scaleChild` must say so: the kernel sits in the loaded code but was never
// launched from the host (tests/gpu/run.sh, case err_device_launch). Built with -rdc.
#include <vector>

#include "common.cuh"

__global__ void scaleChild(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void scaleParent(float* x, float a, int n) {
  if (blockIdx.x == 0 && threadIdx.x == 0) scaleChild<<<(n + 255) / 256, 256>>>(x, a, n);
}

int main() {
  const int n = 1 << 16;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 97);
  float* d = nullptr;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  scaleParent<<<1, 32>>>(d, 2.0f, n);
  CK_LAUNCH();
  CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  print_checksum("device_launch", fnv1a(h.data(), h.size() * sizeof(float)));
  return 0;
}
