#pragma once
// `kerncap extract`'s target arguments (KERNEL, repeatable --kernel, --top N --from
// profile.json, --dispatch, --regex) turned into the list of targets, apart from the CLI so
// that every refusal is unit-tested. Each bad combination is an Error(Usage) and each bad
// profile an Error(Input), both with a message naming the option (exit 2 in the CLI).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extract/targets.hpp"

namespace kerncap::extract {

struct TargetArgs {
  std::string positional;            // KERNEL as CLI11 parsed it (may be the application's first word)
  bool has_cmd = false;              // --cmd given (then no argument after -- belongs to the application)
  std::vector<std::string> kernels;  // --kernel, in order
  std::optional<uint64_t> top;       // --top N, when given
  std::string from;                  // --from profile.json ("" when not given)
  std::optional<uint64_t> dispatch;  // --dispatch N, when given (else 0)
  bool regex = false;                // --regex
};

struct CollectedTargets {
  std::vector<TargetRequest> targets;  // KERNEL, each --kernel, then the --top kernels, in rank order
  // With --kernel or --top no KERNEL is given, so the word CLI11 put there is the first word
  // of the application: the caller puts it back in front of argv.
  std::optional<std::string> app_first_word;
  std::vector<std::string> notes;  // said on stderr, not refusals (a profile with fewer than N kernels)
};

CollectedTargets collect_targets(const TargetArgs& a);

}  // namespace kerncap::extract
