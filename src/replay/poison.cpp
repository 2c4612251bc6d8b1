#include "replay/poison.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {

PoisonPlan plan_poison(const format::Footprint& f, const format::Manifest& m) {
  if (f.regions.size() != m.regions.size())
    input_error(fmt::format("the footprint describes {} regions but the capture has {}; measure it again with "
                            "`kerncap footprint --force`",
                            f.regions.size(), m.regions.size()));
  PoisonPlan p;
  p.runs.resize(m.regions.size());
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const auto& r = f.regions[i];
    if (r.id != m.regions[i].id || r.size != m.regions[i].size)
      input_error(fmt::format("footprint region {} does not match capture region {} (id or size); measure it again "
                              "with `kerncap footprint --force`",
                              r.id, m.regions[i].id));
    const uint64_t w = r.written_bytes();
    p.written_bytes += w;
    if (w) ++p.written_regions;
    const format::Bitmap wo = r.never_read();
    const uint64_t g = wo.granule();
    wo.for_each_run([&](uint64_t first, uint64_t count) {
      const uint64_t b = first * g, e = std::min(r.size, (first + count) * g);
      if (b < e) {
        p.runs[i].emplace_back(b, e - b);
        p.bytes += e - b;
      }
    });
  }
  return p;
}

void apply_poison(const PoisonPlan& p, size_t index, uint64_t offset, uint8_t* data, uint64_t n, uint8_t pattern) {
  if (index >= p.runs.size()) return;
  const auto& runs = p.runs[index];
  // The first run that ends after `offset`.
  auto it = std::upper_bound(runs.begin(), runs.end(), offset,
                             [](uint64_t off, const auto& run) { return off < run.first + run.second; });
  for (; it != runs.end() && it->first < offset + n; ++it) {
    const uint64_t b = std::max(it->first, offset), e = std::min(it->first + it->second, offset + n);
    std::memset(data + (b - offset), pattern, e - b);
  }
}

void mark_strong(Verdict& v, const PoisonPlan& p) {
  v.strong = true;
  v.footprint_written = p.written_bytes;
  v.footprint_regions = p.written_regions;
  v.poisoned = p.bytes;
}

void poison_restores(Session& s, const PoisonPlan& p, uint8_t pattern) {
  s.set_restore_filter([&p, pattern](size_t i, uint64_t off, uint8_t* data, uint64_t n) {
    apply_poison(p, i, off, data, n, pattern);
  });
}

}  // namespace kerncap::replay
