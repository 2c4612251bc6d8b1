#pragma once
// A one-thread kernel that busy-waits on %globaltimer for a given time. Timing with events
// enqueues it before the start event: while the GPU spins, the CPU queues the start event,
// the launch and the stop event, so the interval between the events holds the kernel and
// not the CPU's enqueue time. PTX, JIT-compiled by the driver: no compiler at run time.
#include <cstdint>

#include <cuda.h>

namespace kerncap::replay {

// The PTX of kerncap_spin(u64 ns) (its name starts with "kerncap_": kernel records skip it).
const char* spin_ptx();

class SpinKernel {
 public:
  SpinKernel();  // loads into the current context; Error(Device) when the driver refuses
  ~SpinKernel();
  SpinKernel(const SpinKernel&) = delete;
  SpinKernel& operator=(const SpinKernel&) = delete;
  void enqueue(CUstream stream, uint64_t ns) const;

 private:
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace kerncap::replay
