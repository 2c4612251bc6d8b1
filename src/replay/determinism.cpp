#include "replay/determinism.hpp"

#include <algorithm>

#include <xxhash.h>

#include "common/driver.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

RegionHashes hash_regions(Session& s, uint64_t chunk) {
  const auto& m = s.capture().manifest;
  auto* buf = static_cast<uint8_t*>(s.staging(0));
  const uint64_t step = std::max<uint64_t>(chunk, s.staging_bytes() / chunk * chunk);
  RegionHashes out(m.regions.size());
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const uint64_t size = m.regions[i].size;
    for (uint64_t off = 0; off < size;) {
      const uint64_t n = std::min(step, size - off);
      KC_CU(cuMemcpyDtoH(buf, s.address(i) + off, n));
      for (uint64_t c = 0; c < n; c += chunk) out[i].push_back(XXH3_64bits(buf + c, std::min(chunk, n - c)));
      off += n;
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

}  // namespace kerncap::replay
