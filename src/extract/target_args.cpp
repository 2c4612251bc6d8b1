// The targets `kerncap extract`'s arguments name (target_args.hpp).
#include "extract/target_args.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/profile_targets.hpp"
#include "format/protocol.hpp"

namespace kerncap::extract {

namespace {

// --top N --from FILE: the kernels ranked 1..N, each matched by its exact mangled name at its
// first launch (a mangled name can be a substring of another's).
void add_top(const TargetArgs& a, CollectedTargets& out) {
  const uint64_t n = *a.top;
  if (n == 0 || n > format::kMaxTargets)
    usage_error(fmt::format("--top {}: give between 1 and {} kernels", n, format::kMaxTargets));
  const std::vector<ProfileKernel> top = top_kernels_from_file(a.from, n);
  if (top.empty()) input_error(fmt::format("{} lists no kernel: nothing for --top {} to take", a.from, n));
  if (top.size() < n)
    out.notes.push_back(fmt::format("{} lists {} kernel(s), fewer than --top {}: taking all of them", a.from,
                                    top.size(), n));
  for (const auto& k : top) {
    TargetRequest t;
    t.kernel = k.mangled;
    t.match = format::MatchKind::Exact;
    t.dispatch = 0;
    t.label = k.demangled.empty() ? k.mangled : k.demangled;
    out.targets.push_back(std::move(t));
  }
}

}  // namespace

CollectedTargets collect_targets(const TargetArgs& a) {
  CollectedTargets out;
  if (a.top.has_value() != !a.from.empty()) usage_error("--top N and --from profile.json go together");
  const bool options = !a.kernels.empty() || a.top.has_value();
  std::string positional = a.positional;
  if (options && !positional.empty()) {
    if (a.has_cmd)
      usage_error(fmt::format("with --kernel or --top every target is an option: '{}' is neither (give it as "
                              "--kernel '{}')",
                              positional, positional));
    out.app_first_word = positional;
    positional.clear();
  }
  if (!options && positional.empty())
    usage_error("name the kernel to capture: KERNEL, --kernel NAME or --top N --from profile.json");
  const uint64_t dispatch = a.dispatch.value_or(0);
  bool dispatch_used = false;
  if (!positional.empty()) {
    out.targets.push_back(parse_kernel_arg(positional, dispatch, a.regex));
    dispatch_used = true;
  }
  for (const auto& k : a.kernels) {
    TargetRequest t = parse_kernel_arg(k, dispatch, a.regex);
    // A pattern with its own @N keeps it: --dispatch counts only for those without.
    if (t.kernel.size() == k.size()) dispatch_used = true;
    out.targets.push_back(std::move(t));
  }
  if (a.dispatch.has_value() && !dispatch_used)
    usage_error(fmt::format("--dispatch {} applies to KERNEL and to --kernel patterns without @N, and no target here "
                            "is one (a --top kernel is taken at its first launch: name it with --kernel NAME@N "
                            "for another)",
                            *a.dispatch));
  if (a.top.has_value()) add_top(a, out);
  check_targets(out.targets);
  return out;
}

}  // namespace kerncap::extract
