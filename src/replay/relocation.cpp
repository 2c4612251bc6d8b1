#include "replay/relocation.hpp"

#include <algorithm>
#include <cstring>

namespace kerncap::replay {

void RelocationMap::add(Move m) {
  if (m.old_end <= m.old_begin || m.new_begin == m.old_begin) return;
  moves_.push_back(m);
  std::sort(moves_.begin(), moves_.end(), [](const Move& a, const Move& b) { return a.old_begin < b.old_begin; });
  lo_ = std::min(lo_, m.old_begin);
  hi_ = std::max(hi_, m.old_end);
}

void RelocationMap::drop_globals() {
  std::erase_if(moves_, [](const Move& m) { return m.global; });
  lo_ = UINT64_MAX;
  hi_ = 0;
  for (const Move& m : moves_) {
    lo_ = std::min(lo_, m.old_begin);
    hi_ = std::max(hi_, m.old_end);
  }
}

uint64_t RelocationMap::translate(uint64_t a) const {
  if (a < lo_ || a >= hi_) return a;
  auto it = std::upper_bound(moves_.begin(), moves_.end(), a, [](uint64_t v, const Move& m) { return v < m.old_begin; });
  if (it == moves_.begin()) return a;
  --it;
  if (a >= it->old_end) return a;
  return it->new_begin + (a - it->old_begin);
}

uint64_t RelocationMap::rewrite(uint8_t* data, uint64_t size, uint64_t addr) const {
  if (moves_.empty()) return 0;
  uint64_t count = 0;
  for (uint64_t off = (8 - addr % 8) % 8; off + 8 <= size; off += 8) {
    uint64_t v;
    std::memcpy(&v, data + off, 8);
    if (v < lo_ || v >= hi_) continue;  // the common case: one compare pair per word
    uint64_t t = translate(v);
    if (t != v) {
      std::memcpy(data + off, &t, 8);
      ++count;
    }
  }
  return count;
}

}  // namespace kerncap::replay
