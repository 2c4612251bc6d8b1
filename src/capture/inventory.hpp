#pragma once
// What the application holds that a capture needs, gathered from CUPTI callbacks while it
// runs: the patterns naming the targets (one per target, format::effective_targets), the
// live allocations, and the code images that may hold a target. Filled by LaunchWatcher,
// read by Capturer at a target launch.
#include <algorithm>
#include <vector>

#include "capture/config.hpp"
#include "capture/image_store.hpp"
#include "capture/texture_tracker.hpp"
#include "capture/tracker.hpp"
#include "names/match.hpp"
#include "format/out_layout.hpp"

namespace kerncap::capture {

struct Inventory {
  // Throws std::regex_error on a bad regex pattern (Config::regex) (the launcher checks it first).
  explicit Inventory(const Config& config)
      : matchers(make_matchers(config)),
        // A window of launches keeps every image: any kernel may be one of its launches.
        image_matchers(config.window_end.empty() && !config.window_graph && config.window_range.empty() ? matchers : std::vector<names::Matcher>{names::Matcher("", false)}),
        images(image_matchers, config.dump_images ? format::out::image_dump_dir(config.output).string() : "") {}
  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  // Whether any target's pattern names the kernel.
  bool matches_any(const std::string& mangled, const std::string& demangled) const {
    return std::any_of(matchers.begin(), matchers.end(), [&](const auto& m) { return m.matches(mangled, demangled); });
  }

  static std::vector<names::Matcher> make_matchers(const Config& config) {
    std::vector<names::Matcher> out;
    for (const auto& t : format::effective_targets(config))
      out.push_back(t.match == format::MatchKind::Exact ? names::Matcher::exact(t.kernel)
                                                        : names::Matcher(t.kernel, t.match == format::MatchKind::Regex));
    return out;
  }

  std::vector<names::Matcher> matchers;  // one per target, in their order
  std::vector<names::Matcher> image_matchers;  // the images kept: `matchers`, or every kernel for a window
  Tracker tracker;
  TextureTracker textures;  // CUDA arrays, texture and surface objects
  ImageStore images;  // refers to `matchers`
};

}  // namespace kerncap::capture
