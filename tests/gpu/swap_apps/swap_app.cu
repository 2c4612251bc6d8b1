// The application of tests/gpu/swap_e2e.sh: one kernel, `scale_add`, launched through every
// host path kerncap swaps (runtime <<<>>>, cudaLaunchKernelEx, cuLaunchKernel, a stream-
// captured graph, an explicitly built graph whose node is updated), at sizes that are and
// are not multiples of 4, then a hash of the results printed: the printed lines are the
// application's results (APP ...), identical from run to run.
//
//   swap_app [ITERATIONS] [N]
//
// scale_add re-reads x[i] REREADS times from memory (__ldcv: each load goes to L2/HBM) before
// y[i] = a * x[i] + y[i]; the fast variant (swap_fast.cu) reads it once: same bits, less time.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                                         \
    }                                                                                       \
  } while (0)

constexpr int REREADS = 12;

__global__ void scale_add(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = -INFINITY;
#pragma unroll 1
  for (int r = 0; r < REREADS; ++r) v = fmaxf(v, __ldcv(&x[i]));
  y[i] = a * v + y[i];
}

// The same operation under a C name (extern "C": the name does not spell the parameter types,
// so a variant with other parameters has the same name and only its layout tells it apart).
extern "C" __global__ void scale_add_c(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

uint64_t fnv(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  const int n = argc > 2 ? std::atoi(argv[2]) : (1 << 24) + 3;  // not a multiple of 4
  float *x, *y;
  CK(cudaMalloc(&x, sizeof(float) * n));
  CK(cudaMalloc(&y, sizeof(float) * n));
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = std::sin(0.001f * i);
  CK(cudaMemcpy(x, h.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
  CK(cudaMemset(y, 0, sizeof(float) * n));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  const int block = 256;
  auto grid = [&](int m) { return (m + block - 1) / block; };
  const int sizes[] = {n, n - 3, n / 2 + 1};  // n - 3 is a multiple of 4 when n = 2^k + 3

  for (int it = 0; it < iters; ++it)
    for (int m : sizes) scale_add<<<grid(m), block, 0, s>>>(y, x, 0.5f, m);
  CK(cudaGetLastError());
  scale_add_c<<<grid(n), block, 0, s>>>(y, x, 0.75f, n);

  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid(n));
  cfg.blockDim = dim3(block);
  cfg.stream = s;
  CK(cudaLaunchKernelEx(&cfg, scale_add, y, static_cast<const float*>(x), 0.25f, n));

  CUfunction f;
  CK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(scale_add)));
  const float* cx = x;
  float a = 0.125f;
  int m = n;
  void* args[] = {&y, &cx, &a, &m};
  if (cuLaunchKernel(f, grid(n), 1, 1, block, 1, 1, 0, s, args, nullptr) != CUDA_SUCCESS) return 4;

  // A stream-captured graph, replayed.
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  scale_add<<<grid(n), block, 0, s>>>(y, x, 2.0f, n);
  scale_add<<<grid(n / 2 + 1), block, 0, s>>>(y, x, -1.0f, n / 2 + 1);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; ++r) CK(cudaGraphLaunch(ge, s));

  // An explicit graph: a kernel node, its parameters updated in the executable graph.
  cudaGraph_t g2;
  CK(cudaGraphCreate(&g2, 0));
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(scale_add);
  kp.gridDim = dim3(grid(n));
  kp.blockDim = dim3(block);
  float a2 = 3.0f;
  void* args2[] = {&y, &cx, &a2, &m};
  kp.kernelParams = args2;
  cudaGraphNode_t node;
  CK(cudaGraphAddKernelNode(&node, g2, nullptr, 0, &kp));
  cudaGraphExec_t ge2;
  CK(cudaGraphInstantiate(&ge2, g2, 0));
  CK(cudaGraphLaunch(ge2, s));
  a2 = -2.5f;
  CK(cudaGraphExecKernelNodeSetParams(ge2, node, &kp));
  CK(cudaGraphLaunch(ge2, s));
  CK(cudaStreamSynchronize(s));

  std::vector<float> out(n);
  CK(cudaMemcpy(out.data(), y, sizeof(float) * n, cudaMemcpyDeviceToHost));
  std::printf("APP n=%d iterations=%d hash=%016llx y[0]=%.9g y[n-1]=%.9g\n", n, iters,
              static_cast<unsigned long long>(fnv(out)), out[0], out[n - 1]);
  return 0;
}
