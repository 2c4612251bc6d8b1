// An explicitly built graph (uFill -> uAxpy) whose uAxpy node gets new parameters on the
// executable before every launch (cudaGraphExecKernelNodeSetParams: alpha = 1, 2, 3, 4).
// y accumulates across launches. A capture of uAxpy at --dispatch 2 must carry alpha 3.
#include "graph_common.cuh"

__global__ void uFill(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + (i % 13);
}
__global__ void uAxpy(const float* x, float* y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i] * 0.5f;
}

int main() {
  const int n = 1 << 15, threads = 128, blocks = (n + threads - 1) / threads;
  const size_t bytes = n * sizeof(float);
  float *x, *y;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  CK(cudaMemset(y, 0, bytes));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  float v = 0.5f;
  int nn = n;
  void* fill_args[] = {&x, &v, &nn};
  cudaKernelNodeParams fp{};
  fp.func = reinterpret_cast<void*>(uFill);
  fp.gridDim = dim3(blocks);
  fp.blockDim = dim3(threads);
  fp.kernelParams = fill_args;
  cudaGraphNode_t fill, axpy;
  CK(cudaGraphAddKernelNode(&fill, graph, nullptr, 0, &fp));
  float alpha = 1.0f;
  void* axpy_args[] = {&x, &y, &alpha, &nn};
  cudaKernelNodeParams ap{};
  ap.func = reinterpret_cast<void*>(uAxpy);
  ap.gridDim = dim3(blocks);
  ap.blockDim = dim3(threads);
  ap.kernelParams = axpy_args;
  CK(cudaGraphAddKernelNode(&axpy, graph, &fill, 1, &ap));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));

  for (int step = 0; step < 4; ++step) {
    alpha = 1.0f + step;  // read by the setter below, not by the launch
    CK(cudaGraphExecKernelNodeSetParams(exec, axpy, &ap));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    print_device("y", step, y, n);
  }
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return 0;
}
