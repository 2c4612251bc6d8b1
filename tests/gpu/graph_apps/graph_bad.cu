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

// Launches `e` on `s` while `s` is being captured into another graph. Drivers differ: some
// record the launch as a child graph node of the outer graph, others (the H200's 580 driver)
// refuse it with cudaErrorStreamCaptureUnsupported, which invalidates the outer capture.
// Either way kerncap sees the cuGraphLaunch entry on a capturing stream, which is what this
// mode tests, and the graph's kernels do not run; so both answers are accepted and the
// program goes on to launch badOther. Relaxed mode: nothing else in the process (kerncap's
// own driver calls included) can invalidate this capture, only the launch itself.
static void nested_launch(cudaGraphExec_t e, cudaStream_t s) {
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  const cudaError_t launched = cudaGraphLaunch(e, s);
  if (launched != cudaSuccess && launched != cudaErrorStreamCaptureUnsupported) CK(launched);
  cudaGraph_t outer = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &outer);
  // A refused launch invalidates the capture: ending it reports that and gives no graph.
  if (launched == cudaSuccess) CK(ended);
  else if (ended != cudaSuccess && ended != cudaErrorStreamCaptureInvalidated) CK(ended);
  if (outer) CK(cudaGraphDestroy(outer));
  (void)cudaGetLastError();  // the runtime's last error, set by the refused launch
  std::printf("APP nested %s\n", launched == cudaSuccess ? "child-graph" : "refused");
  std::fflush(stdout);
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
    nested_launch(e, s2);
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
