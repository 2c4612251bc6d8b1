// Case 1: the plainest launch. c = a + b, once.
// `vector_add --abort-before-launch` aborts after allocating, before the kernel runs:
// the GPU suite uses it for "application crashes before the target". `--repeat K` launches
// it K times on the same inputs, so a later launch rewrites bytes that are already equal
// (what benchmark loops do). Built a second time as two broken variants for strong
// validation: KC_VARIANT_NOOP writes nothing, KC_VARIANT_TAIL skips the last partial block;
// and KC_VARIANT_CLAMP clamps b at 0, right only for the captured inputs (b >= 0): plain
// validation passes it, `--fuzz` must not; KC_VARIANT_TAILMASK has an off-by-one in the mask
// of its last load (the last b reads as 0), right only where the captured b[n-1] is 0 (n = 100024).
// The judge suite (tests/gpu/judge_e2e.sh) builds four more: KC_VARIANT_WRONG (+1), KC_VARIANT_NAN
// (one NaN), KC_VARIANT_ULP (a relative change of 1e-4: outside fp32's default tolerance, inside a
// kerncap.toml of 1e-3) and KC_VARIANT_FAULT (thread 0 also stores to address 8).
#include <cstring>
#include <vector>

#include "common.cuh"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(KC_VARIANT_NOOP)
  (void)i;
#elif defined(KC_VARIANT_CLAMP)
  if (i < n) c[i] = a[i] + fmaxf(b[i], 0.0f);
#elif defined(KC_VARIANT_TAILMASK)
  if (i < n) c[i] = a[i] + (i < n - 1 ? b[i] : 0.0f);
#elif defined(KC_VARIANT_WRONG)
  if (i < n) c[i] = a[i] + b[i] + 1.0f;
#elif defined(KC_VARIANT_NAN)
  if (i < n) c[i] = i == n / 2 ? __int_as_float(0x7fc00000) : a[i] + b[i];
#elif defined(KC_VARIANT_ULP)
  if (i < n) c[i] = (a[i] + b[i]) * 1.0001f;
#elif defined(KC_VARIANT_FAULT)
  if (i < n) c[i] = a[i] + b[i];
  if (i == 0) *reinterpret_cast<volatile float*>(uintptr_t{8}) = 1.0f;
#elif defined(KC_VARIANT_TAIL)
  if (i < n / blockDim.x * blockDim.x) c[i] = a[i] + b[i];
#else
  if (i < n) c[i] = a[i] + b[i];
#endif
}

int main(int argc, char** argv) {
  int n = 1 << 20;
  int repeat = 1;
  bool abort_before = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--abort-before-launch") == 0) abort_before = true;
    else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else n = std::atoi(argv[i]);
  }
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * (i % 1000);
    b[i] = 0.25f * (i % 77);
  }
  const size_t bytes = n * sizeof(float);
  float *da, *db, *dc;
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&db, bytes));
  CK(cudaMalloc(&dc, bytes));
  CK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(dc, 0, bytes));
  if (abort_before) {
    std::fprintf(stderr, "vector_add: aborting before the launch, as asked\n");
    std::abort();
  }
  for (int k = 0; k < repeat; ++k) {
    vectorAdd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) expect(c[i] == a[i] + b[i], "c == a + b");
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dc));
  print_checksum("vector_add", fnv1a(c.data(), bytes));
  return 0;
}
