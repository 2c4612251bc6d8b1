#include "footprint/region_table.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::footprint {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

std::string describe(const format::Region& r) {
  if (r.kind == format::MemKind::Global) return fmt::format("region {} (global {})", r.id, r.global);
  return fmt::format("region {} ({} {}, {})", r.id, format::to_string(r.kind), hex_addr(r.base), human_bytes(r.size));
}

}  // namespace

uint64_t read_words(uint64_t size) { return ceil_div(ceil_div(size, 4), 32); }
uint64_t written_words(uint64_t size) { return ceil_div(size, 32); }

std::optional<size_t> RegionTable::find(uint64_t a) const {
  auto it = std::upper_bound(entries.begin(), entries.end(), a,
                             [](uint64_t x, const kc_fp_region& r) { return x < r.base; });
  if (it == entries.begin()) return std::nullopt;
  --it;
  if (a - it->base >= it->size) return std::nullopt;
  return static_cast<size_t>(it - entries.begin());
}

RegionTable build_region_table(const format::Manifest& m, std::span<const uint64_t> replay) {
  if (replay.size() != m.regions.size())
    fail(ErrorKind::Internal, fmt::format("{} replay addresses for {} regions", replay.size(), m.regions.size()));
  std::vector<size_t> order;
  for (size_t i = 0; i < m.regions.size(); ++i)
    if (m.regions[i].size > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return replay[a] < replay[b]; });
  RegionTable t;
  for (size_t i : order) {
    const format::Region& r = m.regions[i];
    if (!t.entries.empty()) {
      const kc_fp_region& prev = t.entries.back();
      if (replay[i] - prev.base < prev.size)
        input_error(fmt::format("{} and {} overlap in the replay's address space; their accesses could not be told "
                                "apart",
                                describe(m.regions[t.manifest_index.back()]), describe(r)));
    }
    if (replay[i] + r.size < replay[i])
      input_error(fmt::format("{} wraps around the end of the address space", describe(r)));
    kc_fp_region e{};
    e.base = replay[i];
    e.size = r.size;
    e.read_words = t.words;
    e.written_words = e.read_words + read_words(r.size);
    e.rbw_words = e.written_words + written_words(r.size);
    t.words = e.rbw_words + read_words(r.size);
    t.entries.push_back(e);
    t.manifest_index.push_back(i);
  }
  return t;
}

std::vector<format::RegionFootprint> collect_regions(const format::Manifest& m, const RegionTable& t,
                                                     std::span<const uint32_t> words) {
  if (words.size() != t.words)
    fail(ErrorKind::Internal, fmt::format("{} bitmap words came back, the table has {}", words.size(), t.words));
  std::vector<format::RegionFootprint> out(m.regions.size());
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    out[i].id = r.id;
    out[i].kind = r.kind;
    out[i].base = r.base;
    out[i].size = r.size;
    out[i].global = r.global;
    out[i].read = format::Bitmap(4, r.size);
    out[i].written = format::Bitmap(1, r.size);
    out[i].rbw = format::Bitmap(4, r.size);
  }
  for (size_t k = 0; k < t.entries.size(); ++k) {
    const kc_fp_region& e = t.entries[k];
    format::RegionFootprint& f = out[t.manifest_index[k]];
    f.read = format::Bitmap::from_words32(4, e.size, words.subspan(e.read_words, read_words(e.size)));
    f.written = format::Bitmap::from_words32(1, e.size, words.subspan(e.written_words, written_words(e.size)));
    f.rbw = format::Bitmap::from_words32(4, e.size, words.subspan(e.rbw_words, read_words(e.size)));
  }
  return out;
}

format::Escape to_escape(const kc_fp_escape& d, const format::Manifest& m, const RegionTable& t) {
  format::Escape e;
  e.address = d.address;
  e.pc = d.pc;
  e.size = d.size;
  e.read = d.flags & KC_FP_READ;
  e.write = d.flags & KC_FP_WRITE;
  e.atomic = d.flags & KC_FP_ATOMIC;
  if (t.entries.empty()) {
    e.nearest = "the capture has no regions";
    return e;
  }
  // The entry below and the one above; name the closer.
  auto above = std::upper_bound(t.entries.begin(), t.entries.end(), d.address,
                                [](uint64_t x, const kc_fp_region& r) { return x < r.base; });
  std::optional<uint64_t> dist_below, dist_above;
  if (above != t.entries.begin()) {
    const kc_fp_region& b = *(above - 1);
    if (d.address - b.base < b.size) {
      // Starts inside a region and runs past its end.
      e.nearest = fmt::format("runs {} B past the end of {}", d.address + d.size - (b.base + b.size),
                              describe(m.regions[t.manifest_index[above - 1 - t.entries.begin()]]));
      return e;
    }
    dist_below = d.address - (b.base + b.size);
  }
  if (above != t.entries.end()) dist_above = above->base - d.address;
  if (dist_below && (!dist_above || *dist_below <= *dist_above)) {
    e.nearest = fmt::format("{} B past the end of {}", *dist_below,
                            describe(m.regions[t.manifest_index[above - 1 - t.entries.begin()]]));
  } else {
    e.nearest = fmt::format("{} B before {}", *dist_above, describe(m.regions[t.manifest_index[above - t.entries.begin()]]));
  }
  return e;
}

}  // namespace kerncap::footprint
