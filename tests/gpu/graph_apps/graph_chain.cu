// A stream-captured graph of several kernels, launched 4 times: init -> {side, square} ->
// memset -> gTarget -> gTail, with a fork/join across two streams. gTarget's inputs come
// from earlier nodes (square, side, the memset); gTail accumulates across launches, so
// running any node twice would change the printed checksums. The source graph is destroyed
// right after instantiation, as PyTorch does.
#include "graph_common.cuh"

__global__ void gInit(float* a, float t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = (i % 97) * 0.25f + t;
}
__global__ void gSide(const float* a, float* s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) s[i] = a[i] * 0.5f;
}
__global__ void gSquare(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] * a[i] - 1.0f;
}
__global__ void gTarget(const float* b, const float* s, float* c, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = b[i] * k + s[i] + c[i] * 0.125f;
}
__global__ void gTail(const float* c, float* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = acc[i] * 0.5f + c[i];
}

int main() {
  const int n = 1 << 16, threads = 256, blocks = (n + threads - 1) / threads;
  const size_t bytes = n * sizeof(float);
  float *a, *b, *s, *c, *acc;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&s, bytes));
  CK(cudaMalloc(&c, bytes));
  CK(cudaMalloc(&acc, bytes));
  CK(cudaMemset(acc, 0, bytes));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  gInit<<<blocks, threads, 0, s1>>>(a, 1.0f, n);
  CK(cudaEventRecord(fork, s1));
  CK(cudaStreamWaitEvent(s2, fork, 0));
  gSide<<<blocks, threads, 0, s2>>>(a, s, n);
  CK(cudaEventRecord(join, s2));
  gSquare<<<blocks, threads, 0, s1>>>(a, b, n);
  CK(cudaMemsetAsync(c, 0, bytes, s1));
  CK(cudaStreamWaitEvent(s1, join, 0));
  gTarget<<<blocks, threads, 0, s1>>>(b, s, c, 3.0f, n);
  gTail<<<blocks, threads, 0, s1>>>(c, acc, n);
  CK(cudaStreamEndCapture(s1, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphDestroy(graph));

  for (int step = 0; step < 4; ++step) {
    CK(cudaGraphLaunch(exec, s1));
    CK(cudaStreamSynchronize(s1));
    print_device("acc", step, acc, n);
  }
  print_device("c", 4, c, n);
  CK(cudaGraphExecDestroy(exec));
  return 0;
}
