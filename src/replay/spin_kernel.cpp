#include "replay/spin_kernel.hpp"

#include "common/driver.hpp"

namespace kerncap::replay {

const char* spin_ptx() {
  // PTX 7.0 / sm_50: every driver kerncap supports JITs it for every GPU it supports.
  return R"(.version 7.0
.target sm_50
.address_size 64

.visible .entry kerncap_spin(.param .u64 ns)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
WAIT:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra WAIT;
  ret;
}
)";
}

SpinKernel::SpinKernel() {
  KC_CU(cuModuleLoadData(&module_, spin_ptx()));
  KC_CU(cuModuleGetFunction(&function_, module_, "kerncap_spin"));
}

SpinKernel::~SpinKernel() {
  if (module_) driver().cuModuleUnload(module_);
}

void SpinKernel::enqueue(CUstream stream, uint64_t ns) const {
  void* args[] = {&ns};
  KC_CU(cuLaunchKernel(function_, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr));
}

}  // namespace kerncap::replay
