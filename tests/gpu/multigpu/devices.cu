// Multi-GPU test programs for tests/gpu/multigpu_e2e.sh (built there with nvcc).
//   devices zero    scale() on device 0 (one GPU is enough)
//   devices one     scale() on device 1 only (device 0 is never used)
//   devices both    scale() on device 0, then on device 1 (extract --device 1 picks the second)
//   devices peer    peer_sum() on device 0 reads a buffer that lives on device 1 (peer access)
// Exit 0 when the results are right, 1 when wrong, 3 when the machine cannot run the mode
// (fewer than two GPUs, no peer access): the suite prints SKIPPED then.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e = (x);                                                                \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + 1.0f;
}

// out (device 0) = in_peer (device 1) * 2 + local (device 0)
__global__ void peer_sum(const float* in_peer, const float* local, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in_peer[i] * 2.0f + local[i];
}

static float* filled(int n, float base) {
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = base + static_cast<float>(i % 97);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

static int run_scale(int device, int n) {
  CHECK(cudaSetDevice(device));
  float* x = filled(n, 1.0f);
  scale<<<(n + 255) / 256, 256>>>(x, 3.0f, n);
  CHECK(cudaGetLastError());
  std::vector<float> h(n);
  CHECK(cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (h[i] != (1.0f + i % 97) * 3.0f + 1.0f) return 1;
  CHECK(cudaFree(x));
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "one";
  const int n = 1 << 20;
  if (!std::strcmp(mode, "zero")) return run_scale(0, n);
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::printf("needs two GPUs, this machine shows %d\n", count);
    return 3;
  }
  if (!std::strcmp(mode, "one")) return run_scale(1, n);
  if (!std::strcmp(mode, "both")) return run_scale(0, n) | run_scale(1, n);
  if (std::strcmp(mode, "peer")) {
    std::fprintf(stderr, "usage: devices zero|one|both|peer\n");
    return 2;
  }
  int can = 0;
  CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
  if (!can) {
    std::printf("device 0 cannot access device 1's memory (no peer access on this machine)\n");
    return 3;
  }
  CHECK(cudaSetDevice(1));
  float* in_peer = filled(n, 10.0f);
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceEnablePeerAccess(1, 0));
  float* local = filled(n, 0.5f);
  float* out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemset(out, 0, n * sizeof(float)));
  peer_sum<<<(n + 255) / 256, 256>>>(in_peer, local, out, n);
  CHECK(cudaGetLastError());
  std::vector<float> h(n);
  CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (h[i] != (10.0f + i % 97) * 2.0f + (0.5f + i % 97)) return 1;
  std::printf("peer_sum OK\n");
  return 0;
}
