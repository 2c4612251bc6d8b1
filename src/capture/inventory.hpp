#pragma once
// What the application holds that a capture needs, gathered from CUPTI callbacks while it
// runs: the pattern naming the target, the live allocations, and the code images that may
// hold the target. Filled by LaunchWatcher, read by Capturer at the target launch.
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
      : matcher(config.kernel, config.regex),
        images(matcher, config.dump_images ? format::out::image_dump_dir(config.output).string() : "") {}
  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  names::Matcher matcher;
  Tracker tracker;
  TextureTracker textures;  // CUDA arrays, texture and surface objects
  ImageStore images;  // refers to `matcher`
};

}  // namespace kerncap::capture
