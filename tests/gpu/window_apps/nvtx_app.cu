// A window bounded by an NVTX range, for window_e2e.sh's nvtx case (`kerncap window extract
// --range step@2`): four iterations, each a range "step" around three kernels on one stream
// (scale x, add x into the accumulator y, square y into z), with a nested range "inner" around
// the second (its pop must not end the window). Even iterations push "step" with
// nvtxRangePushEx (ASCII attributes), odd ones with nvtxRangePushA: step@2 is an Ex push,
// step@1 an A push. A range "setup" is pushed before the first CUDA call, so NVTX initialises
// (and loads its injection) before cuInit loads kerncap. nvtx3 is header-only.
//
//   nvtx_app [ITERATIONS=4] [N=1<<20]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" __global__ void nvtx_scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + 1.0f;
}

extern "C" __global__ void nvtx_accumulate(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

extern "C" __global__ void nvtx_square(float* z, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] * y[i];
}

#define CK(call)                                                       \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    if (e_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

static void push_step(int it) {
  if (it % 2 == 0) {
    nvtxEventAttributes_t a = {};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "step";
    nvtxRangePushEx(&a);
  } else {
    nvtxRangePushA("step");
  }
}

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 4;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1 << 20;
  nvtxRangePushA("setup");  // before cuInit: NVTX loads its injection now
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = 0.001f * static_cast<float>(i % 1000);
  float *x, *y, *z;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  CK(cudaMalloc(&z, n * sizeof(float)));
  CK(cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(y, 0, n * sizeof(float)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  nvtxRangePop();
  const int block = 256, grid = (n + block - 1) / block;
  for (int it = 0; it < iterations; ++it) {
    push_step(it);
    nvtx_scale<<<grid, block, 0, s>>>(x, 0.5f, n);
    nvtxRangePushA("inner");
    nvtx_accumulate<<<grid, block, 0, s>>>(y, x, n);
    nvtxRangePop();
    nvtx_square<<<grid, block, 0, s>>>(z, y, n);
    CK(cudaGetLastError());
    nvtxRangePop();
  }
  CK(cudaStreamSynchronize(s));
  float last = 0;
  CK(cudaMemcpy(&last, z + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("nvtx_app: %d iterations, z[n-1] = %g\n", iterations, last);
  return 0;
}
