// A CUDA graph made by stream capture and launched several times, for window_e2e.sh's graph
// case (`kerncap window extract --graph square@2`): each launch copies new inputs from pinned
// host memory into x, scales x, clears t, adds x into t and t into the accumulator y, copies y
// to w and squares w into z. Between launches the host writes new inputs, so the window of
// the third launch starts from state the first two made (y) and ends with every kind of node
// a graph window replays: a host-to-device copy, kernels, a memset, a device-to-device copy.
//
//   graph_app [LAUNCHES=4] [N=1<<20] [mixed]
//
// With `mixed`, each iteration also launches pre (y *= 0.5) before the graph and post
// (z += y) after it, eagerly on the same stream: a FROM..TO window pre@2..post holds the graph
// launch between two kernels (window_e2e.sh graph_mixed), and pre@2..square ends with the graph's
// last kernel.
//
// Variant for the suite, built from this file with -DVARIANT -DVARIANT_square_bad: square that
// leaves z's last element alone (a wrong kernel: the window's validation FAILs on z).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" __global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

extern "C" __global__ void add(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

extern "C" __global__ void square(float* z, const float* w, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(VARIANT_square_bad)
  if (i == n - 1) return;
#endif
  if (i < n) z[i] = w[i] * w[i];
}

extern "C" __global__ void pre(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 0.5f;
}

extern "C" __global__ void post(float* z, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] += y[i];
}

#ifndef VARIANT
#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));               \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 4;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1 << 20;
  const bool mixed = argc > 3 && std::string(argv[3]) == "mixed";
  const size_t bytes = size_t(n) * sizeof(float);
  // Distinct sizes, so that the suite can tell the regions apart: x n, t n+16, y n+32, w n+48, z n+64.
  float *x, *t, *y, *w, *z, *hx;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&t, bytes + 64));
  CK(cudaMalloc(&y, bytes + 128));
  CK(cudaMalloc(&w, bytes + 192));
  CK(cudaMalloc(&z, bytes + 256));
  CK(cudaMallocHost(&hx, bytes));
  CK(cudaMemset(y, 0, bytes + 128));
  CK(cudaMemset(z, 0, bytes + 256));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int block = 256, grid = (n + block - 1) / block;

  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(x, hx, bytes, cudaMemcpyHostToDevice, s));
  scale<<<grid, block, 0, s>>>(x, 2.0f, n);
  CK(cudaMemsetAsync(t, 0, bytes, s));
  add<<<grid, block, 0, s>>>(t, x, n);
  add<<<grid, block, 0, s>>>(y, t, n);
  CK(cudaMemcpyAsync(w, y, bytes, cudaMemcpyDeviceToDevice, s));
  square<<<grid, block, 0, s>>>(z, w, n);
  CK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphDestroy(graph));  // as PyTorch does: the executable lives on

  for (int it = 0; it < launches; ++it) {
    for (int i = 0; i < n; ++i) hx[i] = 0.001f * float((i * 7 + it * 13) % 1000);
    if (mixed) pre<<<grid, block, 0, s>>>(y, n);
    CK(cudaGraphLaunch(exec, s));
    if (mixed) post<<<grid, block, 0, s>>>(z, y, n);
    CK(cudaStreamSynchronize(s));
    float last = 0;
    CK(cudaMemcpy(&last, z + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("APP launch %d z[n-1] %.6f\n", it, last);
    std::fflush(stdout);
  }
  CK(cudaGraphExecDestroy(exec));
  return 0;
}
#endif
