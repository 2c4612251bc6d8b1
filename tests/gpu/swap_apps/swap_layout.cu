// A variant of swap_app.cu's scale_add with another parameter layout (a is a double):
// kerncap must refuse it before the application runs.
__global__ void scale_add(float* y, const float* x, double a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<float>(a) * x[i] + y[i];
}
