#pragma once
// The driver side of profile mode's parameter signatures (param_signature.hpp).
#include "capture/param_signature.hpp"

namespace kerncap::capture {

// Names, layouts and allocations from the CUDA driver; its calls made as the tool (ToolScope).
class DriverSignatureDriver final : public SignatureDriver {
 public:
  std::string kernel_name(const void* function) override;
  std::optional<std::vector<format::ParamSlot>> param_layout(const void* function) override;
  std::optional<Range> allocation(uint64_t address) override;
};

}  // namespace kerncap::capture
