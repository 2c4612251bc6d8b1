// Extra case: the kernel is first launched while its stream is being captured into a CUDA
// graph (the launch does not run then, so kerncap does not count it), the graph is launched
// twice (its kernel node counts as dispatch 0 and 1), then the kernel is launched directly
// (dispatch 2).
#include <vector>

#include "common.cuh"

__global__ void graphStep(float* v, float add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * 0.75f + add;
}

int main() {
  const int n = 1 << 18;
  const size_t bytes = n * sizeof(float);
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 129);
  float* dv;
  CK(cudaMalloc(&dv, bytes));
  CK(cudaMemcpy(dv, host.data(), bytes, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  graphStep<<<(n + 255) / 256, 256, 0, s>>>(dv, 1.0f, n);
  CK_LAUNCH();
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaGraphLaunch(exec, s));
  graphStep<<<(n + 255) / 256, 256, 0, s>>>(dv, 2.0f, n);
  CK_LAUNCH();
  CK(cudaStreamSynchronize(s));

  CK(cudaMemcpy(host.data(), dv, bytes, cudaMemcpyDeviceToHost));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(dv));
  print_checksum("graph_capture", fnv1a(host.data(), bytes));
  return 0;
}
