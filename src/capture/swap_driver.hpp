#pragma once
// SwapDriver on the CUDA driver: variant images read once from their files, loaded once
// per context (cuModuleLoadData), their entry looked up by name.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "capture/swapper.hpp"

namespace kerncap::capture {

class DriverSwapDriver final : public SwapDriver {
 public:
  std::string name_of(CUfunction f) override;
  std::vector<format::ParamSlot> layout_of(CUfunction f) override;
  CUfunction variant_function(const format::SwapSpec& s, CUcontext ctx, std::string* why) override;
  std::vector<format::ParamSlot> variant_layout(CUfunction v) override;
  bool allow_shared(CUfunction v, uint32_t shared_mem) override;
  CUcontext current_context() override;
  bool stream_capturing(CUstream stream) override;

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<char>> images_;  // path -> bytes (NUL-terminated for PTX)
  std::map<CUfunction, uint32_t> shared_allowed_;    // variant -> dynamic shared bytes allowed
};

}  // namespace kerncap::capture
