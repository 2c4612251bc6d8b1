#include "capture/shadow.hpp"

#include <algorithm>
#include <cstring>

namespace kerncap::capture {

std::vector<ShadowRegion> shadow_regions(ShadowDriver& d, const std::vector<uint8_t>& params,
                                         const std::vector<format::ParamSlot>& slots,
                                         const std::vector<std::string>& dtypes) {
  std::vector<ShadowRegion> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto& s = slots[i];
    for (uint64_t o = (s.offset + 7) & ~uint64_t{7}; o + 8 <= uint64_t{s.offset} + s.size && o + 8 <= params.size();
         o += 8) {
      uint64_t word = 0;
      std::memcpy(&word, params.data() + o, 8);
      if (word < 4096) continue;  // null, small integers
      auto range = d.allocation_of(word);
      if (!range) continue;
      if (std::any_of(out.begin(), out.end(), [&](const ShadowRegion& r) { return r.base == range->first; })) continue;
      ShadowRegion r;
      r.base = range->first;
      r.size = range->second;
      r.param = static_cast<int>(i);
      if (i < dtypes.size() && !dtypes[i].empty())
        if (auto t = compare::dtype_from_string(dtypes[i]); t && s.size == 8) r.dtype = *t;
      out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const ShadowRegion& a, const ShadowRegion& b) { return a.base < b.base; });
  return out;
}

}  // namespace kerncap::capture
