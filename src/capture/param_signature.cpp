#include "capture/param_signature.hpp"

#include <algorithm>
#include <iterator>
#include <regex>

#include "capture/launch_info.hpp"
#include "common/log.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {

ParamSignatures::ParamSignatures(const std::vector<format::KernelPattern>& patterns, SignatureDriver& driver)
    : driver_(driver) {
  for (const format::KernelPattern& p : patterns) {
    try {
      patterns_.push_back(p.match == format::MatchKind::Exact
                              ? names::Matcher::exact(p.kernel)
                              : names::Matcher(p.kernel, p.match == format::MatchKind::Regex));
    } catch (const std::regex_error& e) {
      // The launcher checks its patterns first; a hand-set variable only loses this one.
      log::warn("profile: parameter signatures: bad regex '{}' ({}); ignored", p.kernel, e.what());
    }
  }
}

const ParamSignatures::Function& ParamSignatures::function(const void* f) {
  if (auto it = functions_.find(f); it != functions_.end()) return it->second;
  if (functions_.size() >= kMaxFunctions) functions_.clear();
  Function fn;
  fn.mangled = driver_.kernel_name(f);
  if (!fn.mangled.empty()) {
    const std::string demangled = names::demangle(fn.mangled);
    const bool named = std::any_of(patterns_.begin(), patterns_.end(),
                                   [&](const names::Matcher& m) { return m.matches(fn.mangled, demangled); });
    if (named) {
      if (auto layout = driver_.param_layout(f)) {
        fn.slots = std::move(*layout);
        fn.signed_ = true;
      } else {
        log::warn("profile: the driver cannot give {}'s parameter layout: its launches are grouped by shape only",
                  demangled);
      }
    }
  }
  return functions_.emplace(f, std::move(fn)).first->second;
}

bool ParamSignatures::is_pointer(uint64_t value) {
  if (value < kLowestAddress) return false;
  if (auto it = ranges_.upper_bound(value); it != ranges_.begin() && value < std::prev(it)->second) return true;
  if (not_pointers_.count(value)) return false;
  const std::optional<SignatureDriver::Range> r = driver_.allocation(value);
  if (!r) {
    if (not_pointers_.size() >= kMaxNotPointers) not_pointers_.clear();
    not_pointers_.insert(value);
    return false;
  }
  if (ranges_.size() >= kMaxRanges) ranges_.clear();
  // A driver that answers without a range still makes the value a pointer.
  const uint64_t start = std::min(r->start, value), end = std::max(r->end, value + 1);
  uint64_t& known = ranges_[start];
  known = std::max(known, end);
  return true;
}

bool ParamSignatures::on_launch(const void* function_handle, void** kernel_params, void** extra,
                                std::string* mangled, std::vector<format::ScalarWord>* words) {
  std::lock_guard lk(mu_);
  const Function& fn = function(function_handle);
  if (!fn.signed_) return false;
  LaunchArgs a;
  a.kernel_params = kernel_params;
  a.extra = extra;
  std::vector<uint8_t> buffer;
  std::string source, why;
  if (!pack_params(a, fn.slots, &buffer, &source, &why)) return false;  // the launch fails the same way
  *words = scalar_words(buffer, fn.slots, [&](uint64_t v) { return is_pointer(v); });
  *mangled = fn.mangled;
  return true;
}

void ParamSignatures::forget_handles() {
  std::lock_guard lk(mu_);
  functions_.clear();
}

}  // namespace kerncap::capture
