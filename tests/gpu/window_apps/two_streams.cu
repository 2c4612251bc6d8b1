// Two streams joined by events for tests/gpu/window_e2e.sh, ITER times:
//   produce(a) on s0, event e0 on s0 -> s1 waits e0, side(b <- a) on s1, event e1 on s1
//   -> s0 waits e1, join(c <- a + b) on s0
// A window produce..join on s0 joins s1 through e1: side's work on s1 and the two events are
// operations of the window (case two_streams). MODE graph: side runs as a CUDA graph launched on
// s1 (captured on a third stream before the loop), which a window does not record on a stream
// other than its own: the window is refused, naming s1 and the graph (case two_streams_refused).
//
//   two_streams [ITER=3] [N=1048576] [MODE=kernel|graph]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

extern "C" __global__ void produce(float* a, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = v + i * 1e-6f;
}
extern "C" __global__ void side(float* b, const float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = 2 * a[i];
}
extern "C" __global__ void join(float* c, const float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 3;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1 << 20;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * 4));
  CHECK(cudaMalloc(&b, n * 4));
  CHECK(cudaMalloc(&c, n * 4));
  cudaStream_t s0, s1;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreateWithFlags(&e0, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  const int blocks = (n + 255) / 256;
  const bool graph = argc > 3 && std::strcmp(argv[3], "graph") == 0;
  cudaGraphExec_t side_graph = nullptr;
  if (graph) {
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
    side<<<blocks, 256, 0, s2>>>(b, a, n);
    CHECK(cudaStreamEndCapture(s2, &g));
    CHECK(cudaGraphInstantiate(&side_graph, g, 0));
  }
  for (int it = 0; it < iters; ++it) {
    produce<<<blocks, 256, 0, s0>>>(a, n, float(it));
    CHECK(cudaEventRecord(e0, s0));
    CHECK(cudaStreamWaitEvent(s1, e0, 0));
    if (graph) CHECK(cudaGraphLaunch(side_graph, s1));
    else side<<<blocks, 256, 0, s1>>>(b, a, n);
    CHECK(cudaEventRecord(e1, s1));
    CHECK(cudaStreamWaitEvent(s0, e1, 0));
    join<<<blocks, 256, 0, s0>>>(c, a, b, n);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("two_streams: %d iterations\n", iters);
  return 0;
}
