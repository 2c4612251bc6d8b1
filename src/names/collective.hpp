#pragma once
// NCCL's own kernels (ncclDevKernel_*, ncclKernel_*): what a capture of one can and cannot
// mean. Such a kernel is one rank's half of a collective: it spins on flags that the other
// ranks' kernels (and NCCL's proxy thread) write into its buffers over NVLink, PCIe or the
// network while it runs. A replay runs one rank alone, so its peers never answer: it would
// wait forever, or, with the flags of BEFORE already set, read stale data.
#include <string>
#include <string_view>

namespace kerncap::names {

bool is_nccl_kernel(std::string_view mangled, std::string_view demangled);

// The explanation `extract` prints after capturing one and `replay`/`validate` give when
// they refuse it.
std::string nccl_capture_note();

}  // namespace kerncap::names
