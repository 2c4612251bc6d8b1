#pragma once
// The footprint a validation uses to be strong: the capture's cached one, or (with
// `--footprint auto`, the default) one measured now by `kerncap footprint` in a child process —
// the Compute Sanitizer must be attached before the driver starts, which this process has
// already done or will do for the replay itself.
#include <optional>
#include <string>

#include "format/capture_dir.hpp"
#include "format/footprint.hpp"

namespace kerncap::cli {

enum class FootprintUse { Auto, Never, Require };
FootprintUse footprint_use_from(const std::string& s);  // auto | never | require (Error(Usage) else)

// nullopt: validation stays weak; the reason is printed on stderr unless quiet.
std::optional<format::Footprint> footprint_for(const std::string& dir, FootprintUse use, bool quiet);
// The same for a capture this process opened already (`dir` as the user named it, for messages).
std::optional<format::Footprint> footprint_for(const format::Capture& cap, const std::string& dir, FootprintUse use,
                                               bool quiet);

}  // namespace kerncap::cli
