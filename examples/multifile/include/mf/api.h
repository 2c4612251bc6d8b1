#pragma once
// Host entry points of the multifile example, one group per translation unit.
#include <cstddef>

namespace mf {
void run_scale_f32(float* out, const float* in, int n, int work);               // pipeline.cu
void run_scale_f64(double* out, const double* in, int n, int work);             // reduce.cu
void run_stencil(float* out, const float* in, int n, int work);                 // stencil.cu
void run_partial_sums(double* sums, const double* in, int n);                   // reduce.cu
void check(int err, const char* what);                                          // main.cu
}  // namespace mf
