#pragma once
// An extern "C" kernel in a header that app/main.cu includes by a relative path
// ("../kernels/bias.cuh"). MF_FAST_PATH (set by the build) changes what it computes.
#include <mf/common.cuh>

extern "C" __global__ void mf_bias(float* out, const float* in, const float* bias, int n, int work) {
  const int i = mf::global_index();
  if (i >= n) return;
  const float v = mf::slow_load(in, i, work);  // kc:slow
#ifdef MF_FAST_PATH
  float r = v + 2.0f * bias[i % MF_BIAS_SLOTS];
#else
  float r = v + bias[i % MF_BIAS_SLOTS];
#endif
  out[i] = r;  // kc:store
}
