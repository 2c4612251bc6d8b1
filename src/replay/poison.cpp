#include "replay/poison.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {

namespace {

// The runs of RegionFootprint::never_read() (written bytes whose read granule the launch
// never loaded), maximal and in order, as f(begin, end); `written` gets the written bytes.
// Walks the written runs instead of building never_read()'s bitmap: a 100 GiB pool's is
// 13 GiB to allocate and sweep, for the few MiB a launch writes.
template <typename F>
void never_read_runs(const format::RegionFootprint& r, uint64_t& written, F&& f) {
  const uint64_t wg = r.written.granule(), rg = r.read.granule();
  bool open = false;
  uint64_t run_b = 0, run_e = 0;
  r.written.for_each_run([&](uint64_t first, uint64_t count) {
    const uint64_t e = std::min(r.size, (first + count) * wg);
    written += e > first * wg ? e - first * wg : 0;
    for (uint64_t b = first * wg; b < e;) {
      const uint64_t k = b / rg, ge = std::min(e, (k + 1) * rg);
      if (!r.read.test(k)) {
        if (open && run_e == b) {
          run_e = ge;
        } else {
          if (open) f(run_b, run_e);
          run_b = b;
          run_e = ge;
          open = true;
        }
      }
      b = ge;
    }
  });
  if (open) f(run_b, run_e);
}

}  // namespace

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
    uint64_t w = 0, poisoned = 0;
    never_read_runs(r, w, [&](uint64_t b, uint64_t e) {
      p.runs[i].emplace_back(b, e - b);
      poisoned += e - b;
    });
    p.bytes += poisoned;
    if (r.probed && poisoned) {
      p.probed_bytes += poisoned;
      ++p.probed_regions;
    }
    p.written_bytes += w;
    if (w) ++p.written_regions;
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
  v.probed_poisoned = p.probed_bytes;
  v.probed_regions = p.probed_regions;
}

std::vector<std::vector<ByteRange>> poison_ranges(const PoisonPlan& p) {
  std::vector<std::vector<ByteRange>> out(p.runs.size());
  for (size_t i = 0; i < p.runs.size(); ++i)
    for (const auto& [offset, count] : p.runs[i]) out[i].push_back({offset, offset + count});
  return out;
}

void poison_restores(Session& s, const PoisonPlan& p, uint8_t pattern) {
  // The poison overwrites its runs whatever they held: inside fills restore memsets them on
  // the device, so only the stored bytes around them are staged.
  s.set_restore_filter({[&p, pattern](size_t i, uint64_t off, uint8_t* data, uint64_t n) {
                          apply_poison(p, i, off, data, n, pattern);
                        },
                        FilterReach{poison_ranges(p), pattern}});
}

}  // namespace kerncap::replay
