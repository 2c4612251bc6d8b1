// Case 4: a struct of device pointers passed by value. The pointers live in the parameter
// buffer, not in device memory: replay restores them from params.bin (and rewrites them
// there when it relocates a region). Launched 3 times; the suite captures launch 1.
#include <vector>

#include "common.cuh"

struct Particles {
  float* x;
  float* y;
  float* vx;
  float* vy;
  int* bounces;  // 16 counters, integer atomics: the final value is deterministic
  int n;
  float dt;
};

__global__ void stepParticles(Particles p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.n) return;
  float x = p.x[i] + p.vx[i] * p.dt;
  float y = p.y[i] + p.vy[i] * p.dt;
  if (x > 1.0f || x < 0.0f) {
    p.vx[i] = -p.vx[i];
    atomicAdd(&p.bounces[i % 16], 1);
  }
  if (y > 1.0f || y < 0.0f) p.vy[i] = -p.vy[i];
  p.x[i] = x;
  p.y[i] = y;
}

int main() {
  const int n = 1 << 18, steps = 3;
  const size_t bytes = n * sizeof(float);
  std::vector<float> init(n);
  Particles p{};
  p.n = n;
  p.dt = 0.25f;
  float** fields[4] = {&p.x, &p.y, &p.vx, &p.vy};
  for (int f = 0; f < 4; ++f) {
    for (int i = 0; i < n; ++i) init[i] = float((i * (2 * f + 1)) % 97) / (f < 2 ? 97.0f : 48.0f) - (f < 2 ? 0.0f : 1.0f);
    CK(cudaMalloc(fields[f], bytes));
    CK(cudaMemcpy(*fields[f], init.data(), bytes, cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc(&p.bounces, 16 * sizeof(int)));
  CK(cudaMemset(p.bounces, 0, 16 * sizeof(int)));
  for (int s = 0; s < steps; ++s) {
    stepParticles<<<(n + 255) / 256, 256>>>(p);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  uint64_t h = fnv1a(nullptr, 0);
  for (int f = 0; f < 4; ++f) {
    CK(cudaMemcpy(init.data(), *fields[f], bytes, cudaMemcpyDeviceToHost));
    h = fnv1a(init.data(), bytes, h);
    CK(cudaFree(*fields[f]));
  }
  int bounces[16];
  CK(cudaMemcpy(bounces, p.bounces, sizeof bounces, cudaMemcpyDeviceToHost));
  int total = 0;
  for (int b : bounces) total += b;
  expect(total > 0, "some particles bounced");
  CK(cudaFree(p.bounces));
  std::printf("bounces %d\n", total);
  print_checksum("struct_ptrs", fnv1a(bounces, sizeof bounces, h));
  return 0;
}
