// A variant of swap_app.cu's scale_add_c with another parameter layout (a is a double, so n
// moves from offset 20 to 24): kerncap must refuse it, before the application runs when it has
// a capture of the kernel, else at the first launch.
extern "C" __global__ void scale_add_c(float* y, const float* x, double a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<float>(a) * x[i] + y[i];
}
