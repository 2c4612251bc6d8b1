#include "replay/determinism.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <xxhash.h>

#include "common/driver.hpp"
#include "compare/compare.hpp"
#include "replay/session.hpp"
#include "replay/uniform_check.hpp"

namespace kerncap::replay {

RegionHashes hash_regions(Session& s, uint64_t chunk) {
  const auto& m = s.capture().manifest;
  auto* buf = static_cast<uint8_t*>(s.staging(0));
  const uint64_t step = std::max<uint64_t>(chunk, s.staging_bytes() / chunk * chunk);
  RegionHashes out(m.regions.size());
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const uint64_t size = m.regions[i].size;
    // Chunks that hold one value everywhere (a pool's zeros) are named by the device check
    // instead of read back: two replays then compare them without PCIe. The name is a
    // function of the contents, like the hash, so equal contents still give equal entries.
    std::vector<uint32_t> same;
    if (size >= (4ull << 20))
      if (UniformCheck* check = s.uniform_check()) same = check->run(s.address(i), {0, size, step, chunk}, s.stream());
    for (uint64_t c = 0, at = 0; at < size;) {
      if (!same.empty() && same[c] != kMixed) {
        out[i].push_back((uint64_t{1} << 63) ^ (std::min(chunk, size - at) << 8) ^ same[c]);
        ++c;
        at += chunk;
        continue;
      }
      // The chunks up to the next uniform one, at most a staging buffer of them.
      uint64_t n = 0;
      for (uint64_t k = c; at + n < size && n < step && (same.empty() || same[k] == kMixed); ++k)
        n += std::min(chunk, size - at - n);
      KC_CU(cuMemcpyDtoH(buf, s.address(i) + at, n));
      for (uint64_t o = 0; o < n; o += chunk, ++c) out[i].push_back(XXH3_64bits(buf + o, std::min(chunk, n - o)));
      at += n;
    }
  }
  return out;
}

std::vector<uint32_t> nondeterministic_regions(Session& s) {
  RegionHashes first;
  for (int k = 0; k < 2; ++k) {
    s.restore();
    s.launch();
    RegionHashes h = hash_regions(s);
    if (k == 0) {
      first = std::move(h);
      continue;
    }
    std::vector<uint32_t> ids;
    const auto& m = s.capture().manifest;
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (h[i] != first[i]) ids.push_back(m.regions[i].id);
    return ids;
  }
  return {};
}

CompareSpec tolerant_spec(const CompareSpec& base, const std::vector<TypedSpan>& typed,
                          const std::vector<uint32_t>& ids, const format::Manifest& m) {
  CompareSpec out = base;
  for (const auto& t : typed) {
    auto r = std::find_if(m.regions.begin(), m.regions.end(),
                          [&](const format::Region& x) { return t.base >= x.base && t.base - x.base < x.size; });
    if (r == m.regions.end() || std::find(ids.begin(), ids.end(), r->id) == ids.end()) continue;
    out.spans.push_back(t);
  }
  // Spans of `base` come first in address ties; pieces_of keeps the lowest base on overlap.
  std::stable_sort(out.spans.begin(), out.spans.end(), [](auto& a, auto& b) { return a.base < b.base; });
  out.source = base.source + " + signature types (nondeterministic kernel)";
  return out;
}

namespace {

const format::Region* region_by_id(const format::Manifest& m, uint32_t id) {
  for (const auto& r : m.regions)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace

std::map<uint32_t, double> replay_spread(Session& s, const CompareSpec& typed, const std::vector<uint32_t>& ids,
                                         uint64_t max_region_bytes) {
  const auto& m = s.capture().manifest;
  std::map<uint32_t, std::vector<uint8_t>> first;
  std::map<uint32_t, double> out;
  for (int k = 0; k < 2; ++k) {
    s.restore();
    s.launch();
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const format::Region& r = m.regions[i];
      if (std::find(ids.begin(), ids.end(), r.id) == ids.end() || r.size > max_region_bytes) continue;
      std::vector<uint8_t> now(r.size);
      if (!now.empty()) KC_CU(cuMemcpyDtoH(now.data(), s.address(i), now.size()));
      if (k == 0) {
        first[r.id] = std::move(now);
        continue;
      }
      double spread = 0;
      for (const Piece& p : pieces_of(r, typed)) {
        if (!compare::is_float(p.dtype)) continue;
        compare::Comparator cmp(p.dtype, {});
        cmp.feed(first[r.id].data() + p.begin, now.data() + p.begin, p.end - p.begin, 0);
        spread = std::max(spread, cmp.result().max_abs_error);
      }
      out[r.id] = spread;
    }
  }
  return out;
}

CompareSpec widen_by_spread(CompareSpec spec, const std::map<uint32_t, double>& spread, const format::Manifest& m,
                            double factor) {
  bool widened = false;
  for (auto& t : spec.spans) {
    if (!compare::is_float(t.dtype)) continue;
    for (const auto& [id, d] : spread) {
      const format::Region* r = region_by_id(m, id);
      if (!r || t.base < r->base || t.base - r->base >= r->size || factor * d <= t.tol.atol) continue;
      t.tol.atol = factor * d;
      widened = true;
    }
  }
  if (widened) spec.source += fmt::format(" + atol from the kernel's own spread ({}x)", factor);
  return spec;
}

}  // namespace kerncap::replay
