// Graph cases kerncap must refuse with a clear message (tests/gpu/graph_e2e.sh):
//   never   badNever exists only in a graph that is instantiated but never launched
//   nested  a graph holding badNested is launched on a stream that is itself being captured
//   alloc   badAlloc runs in a graph that allocates its buffer (a memory allocation node)
#include <cstring>

#include "graph_common.cuh"

__global__ void badNever(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1.0f;
}
__global__ void badNested(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 2.0f;
}
__global__ void badAlloc(float* tmp, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    tmp[i] = i * 0.5f;
    out[i] += tmp[i];
  }
}
__global__ void badOther(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] -= 1.0f;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "never";
  const int n = 4096;
  float* p;
  CK(cudaMalloc(&p, n * sizeof(float)));
  CK(cudaMemset(p, 0, n * sizeof(float)));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t e;
  CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  if (std::strcmp(mode, "never") == 0) badNever<<<n / 256, 256, 0, s1>>>(p, n);
  else if (std::strcmp(mode, "nested") == 0) badNested<<<n / 256, 256, 0, s1>>>(p, n);
  else {
    float* tmp;
    CK(cudaMallocAsync(&tmp, n * sizeof(float), s1));
    badAlloc<<<n / 256, 256, 0, s1>>>(tmp, p, n);
    CK(cudaFreeAsync(tmp, s1));
  }
  CK(cudaStreamEndCapture(s1, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  if (std::strcmp(mode, "nested") == 0) {
    // The launch becomes a child graph node of the graph being captured on s2.
    cudaGraph_t outer;
    CK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
    CK(cudaGraphLaunch(e, s2));
    CK(cudaStreamEndCapture(s2, &outer));
    CK(cudaGraphDestroy(outer));
  } else if (std::strcmp(mode, "alloc") == 0) {
    CK(cudaGraphLaunch(e, s1));
    CK(cudaGraphLaunch(e, s1));
  }
  badOther<<<n / 256, 256, 0, s1>>>(p, n);
  CK(cudaStreamSynchronize(s1));
  print_device("p", 0, p, n);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  return 0;
}
