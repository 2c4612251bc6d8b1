#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "footprint/footprint.hpp"

namespace kerncap::footprint {

void check_matches(const format::Footprint& f, const format::Manifest& m) {
  auto stale = [](const std::string& what) {
    input_error(fmt::format("the capture's footprint was measured on another capture ({}); measure it again with "
                            "`kerncap footprint OUT --force`",
                            what));
  };
  if (f.kernel != m.mangled_name) stale(fmt::format("kernel {} instead of {}", f.kernel, m.mangled_name));
  if (f.image_hash != m.image_hash) stale("another code image");
  if (f.regions.size() != m.regions.size())
    stale(fmt::format("{} regions instead of {}", f.regions.size(), m.regions.size()));
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const auto& a = f.regions[i];
    const auto& b = m.regions[i];
    if (a.id != b.id || a.base != b.base || a.size != b.size || a.kind != b.kind)
      stale(fmt::format("region {} is {} B at {} there, {} B at {} here", b.id, a.size, hex_addr(a.base), b.size,
                        hex_addr(b.base)));
  }
}

std::optional<format::Footprint> load_or_none(const format::Capture& capture) {
  if (!format::footprint_exists(capture.dir)) return std::nullopt;
  format::Footprint f = format::read_footprint(capture.dir, &capture.manifest);
  check_matches(f, capture.manifest);
  return f;
}

}  // namespace kerncap::footprint
