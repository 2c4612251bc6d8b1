#pragma once
// Profile mode's parameter signatures (Config::profile_params, for `extract --regimes`): at
// each launch of a kernel whose name a pattern matches, the words of its parameter buffer
// that are not pointers — sizes, strides, flags — so that the offline side tells apart
// launches of one shape whose scalar arguments differ (profile/regimes.hpp). Written as the
// records' "p" lines, joined to the kernel records by correlation id.
//
// Cheap where it must be: a function handle is looked up once (its name matched, its layout
// asked); launches of other kernels cost one cached look-up. A word is a pointer when it is 8
// bytes, 8-aligned in the buffer, and lies in memory the driver knows (device, managed,
// host-mapped); the answer is cached by allocation range, so a launch asks the driver only
// about values it has not seen. Every cache is bounded (cleared when full).
//
// Pure bookkeeping behind a seam: profiler.cpp gives it the driver (param_signature_driver.cpp)
// and feeds it launches at API entry; unit tested with a fake driver
// (tests/unit/capture_param_signature_test.cpp). Thread-safe; never throws out of on_launch
// except std::bad_alloc (the caller catches).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "format/manifest.hpp"
#include "format/profile_records.hpp"
#include "format/protocol.hpp"
#include "names/match.hpp"

namespace kerncap::capture {

class SignatureDriver {
 public:
  virtual ~SignatureDriver() = default;
  virtual std::string kernel_name(const void* function) = 0;  // mangled; "" when unknown
  // The kernel's parameters (offset and size of each, by ordinal); none when the driver
  // cannot tell (an empty list: the kernel takes none).
  virtual std::optional<std::vector<format::ParamSlot>> param_layout(const void* function) = 0;
  // The allocation holding `address` when it is memory a kernel can reach through a pointer:
  // [start, end).
  struct Range {
    uint64_t start = 0, end = 0;
  };
  virtual std::optional<Range> allocation(uint64_t address) = 0;
};

class ParamSignatures {
 public:
  ParamSignatures(const std::vector<format::KernelPattern>& patterns, SignatureDriver& driver);

  // A launch at API entry (the arguments of its driver call). True, with the kernel's mangled
  // name and its scalar words in buffer order, when the kernel is signed and its parameters
  // could be read.
  bool on_launch(const void* function, void** kernel_params, void** extra, std::string* mangled,
                 std::vector<format::ScalarWord>* words);
  // Modules were unloaded: a later function may get a handle seen before.
  void forget_handles();

  // Bounds of the caches (each cleared when full).
  static constexpr size_t kMaxFunctions = 4096, kMaxRanges = 4096, kMaxNotPointers = 4096;
  // No allocation lives below this address (the first pages are never mapped): smaller
  // values are never asked about.
  static constexpr uint64_t kLowestAddress = uint64_t{1} << 20;

 private:
  struct Function {
    bool signed_ = false;  // matched and its layout known
    std::string mangled;
    std::vector<format::ParamSlot> slots;
  };
  const Function& function(const void* f);  // mu_ held
  bool is_pointer(uint64_t value);         // mu_ held

  std::vector<names::Matcher> patterns_;
  SignatureDriver& driver_;
  std::mutex mu_;
  std::unordered_map<const void*, Function> functions_;
  std::map<uint64_t, uint64_t> ranges_;        // start -> end of allocations seen
  std::unordered_set<uint64_t> not_pointers_;  // values the driver knew nothing about
};

// The scalar words of one packed parameter buffer (`slots`: its layout), at most
// kMaxScalarWords of them within the first kMaxSignatureBytes; `is_pointer` is asked only
// about 8-byte, 8-aligned words.
template <typename IsPointer>
std::vector<format::ScalarWord> scalar_words(const std::vector<uint8_t>& buffer,
                                             const std::vector<format::ParamSlot>& slots, IsPointer is_pointer) {
  std::vector<format::ScalarWord> out;
  for (uint32_t i = 0; i < slots.size(); ++i) {
    const format::ParamSlot& s = slots[i];
    for (uint32_t off = 0; off < s.size; off += 8) {
      const uint64_t at = uint64_t{s.offset} + off;
      const uint32_t size = s.size - off < 8 ? s.size - off : 8;
      if (at + size > buffer.size() || at + size > format::kMaxSignatureBytes) return out;
      uint64_t value = 0;
      for (uint32_t b = 0; b < size; ++b) value |= uint64_t{buffer[at + b]} << (8 * b);
      if (size == 8 && at % 8 == 0 && is_pointer(value)) continue;
      out.push_back({i, off, size, value});
      if (out.size() == format::kMaxScalarWords) return out;
    }
  }
  return out;
}

}  // namespace kerncap::capture
