// A wrong variant of swap_app.cu's scale_add: four elements per thread-quad, and the tail
// of a size that is not a multiple of 4 is dropped (a tail-mask bug). Right at sizes that are
// multiples of 4, wrong at the others.
#include <cmath>
__global__ void scale_add(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (n & ~3)) return;
  const float v = fmaxf(-INFINITY, __ldcv(&x[i]));
  y[i] = a * v + y[i];
}
