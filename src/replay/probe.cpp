#include "replay/probe.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {

namespace {

// Which region (manifest order) an address points into, given each region's base: sorted by
// base, since up to 256 MiB of region memory is scanned word by word against every region.
class ProbeRegionIndex {
 public:
  ProbeRegionIndex(const format::Manifest& m, const std::vector<uint64_t>& bases) {
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (m.regions[i].size) sorted_.push_back({bases[i], m.regions[i].size, i});
    std::sort(sorted_.begin(), sorted_.end(), [](const Entry& x, const Entry& y) { return x.base < y.base; });
  }
  std::optional<size_t> find(uint64_t a) const {
    auto it = std::upper_bound(sorted_.begin(), sorted_.end(), a, [](uint64_t v, const Entry& e) { return v < e.base; });
    if (a == 0 || it == sorted_.begin()) return std::nullopt;
    --it;
    if (a - it->base >= it->size) return std::nullopt;
    return it->index;
  }

 private:
  struct Entry {
    uint64_t base, size;
    size_t index;
  };
  std::vector<Entry> sorted_;
};

// Whether the footprint saw any access to bytes [b, e) of a region.
bool probe_touched(const format::RegionFootprint& rf, uint64_t b, uint64_t e) {
  const uint64_t r = rf.read.next_set(b / rf.read.granule());
  if (r < rf.read.bits() && r * rf.read.granule() < e) return true;
  const uint64_t w = rf.written.next_set(b / rf.written.granule());
  return w < rf.written.bits() && w * rf.written.granule() < e;
}

// The regions (manifest order) of the CUDA arrays a surface object of the launch is over.
std::vector<size_t> surface_array_regions(const format::Manifest& m) {
  std::vector<size_t> out;
  for (const auto& o : m.textures.objects) {
    if (!o.surface || o.resource != format::ResourceType::Array) continue;
    const format::ArrayRecord* a = m.textures.find_array(o.array);
    if (!a) continue;
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (m.regions[i].id == a->region && m.regions[i].kind == format::MemKind::Array &&
          std::find(out.begin(), out.end(), i) == out.end())
        out.push_back(i);
  }
  return out;
}

}  // namespace

std::vector<ProbeSpan> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                        const format::Footprint& f, uint64_t max_region_bytes, size_t limit) {
  return probe_candidates(m, params, f, PointerMemory{}, max_region_bytes, limit);
}

std::vector<ProbeSpan> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                        const format::Footprint& f, const PointerMemory& memory,
                                        uint64_t max_region_bytes, size_t limit) {
  std::vector<ProbeSpan> out;
  const size_t n = m.regions.size();
  if (f.regions.size() != n) return out;
  std::vector<uint64_t> captured_bases(n);
  for (size_t i = 0; i < n; ++i) captured_bases[i] = m.regions[i].base;
  const std::vector<uint64_t>& replay_bases = memory.replay_bases.size() == n ? memory.replay_bases : captured_bases;
  // Per region: the region-relative offsets pointers point to (with where the first such
  // pointer was found), and the offsets of the pointer words the region itself holds.
  std::vector<std::vector<std::pair<uint64_t, size_t>>> starts(n);
  std::vector<std::vector<uint64_t>> holds(n);
  auto scan = [&](std::span<const uint8_t> bytes, const ProbeRegionIndex& index, const std::vector<uint64_t>& bases,
                  size_t from) {
    for (size_t o = 0; o + 8 <= bytes.size(); o += 8) {
      uint64_t a = 0;
      std::memcpy(&a, bytes.data() + o, 8);
      const auto i = index.find(a);
      if (!i) continue;
      starts[*i].emplace_back(a - bases[*i], from);
      if (from != kFromParams) holds[from].push_back(o);
    }
  };
  scan(params, ProbeRegionIndex(m, captured_bases), captured_bases, kFromParams);
  const ProbeRegionIndex replay_index(m, replay_bases);
  for (const auto& src : memory.sources)
    if (src.region < n) scan(src.bytes, replay_index, replay_bases, src.region);
  for (const size_t i : surface_array_regions(m)) starts[i].emplace_back(0, kFromSurface);
  for (size_t i = 0; i < n && out.size() < limit; ++i) {
    auto& s = starts[i];
    if (s.empty() || m.regions[i].size > max_region_bytes) continue;
    // By offset, the parameter buffer's pointer first among equal offsets (stable: it was scanned first).
    std::stable_sort(s.begin(), s.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    s.erase(std::unique(s.begin(), s.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
            s.end());
    auto& h = holds[i];
    std::sort(h.begin(), h.end());
    for (size_t k = 0; k < s.size() && out.size() < limit; ++k) {
      const uint64_t b = s[k].first, e = k + 1 < s.size() ? s[k + 1].first : m.regions[i].size;
      // A pointer word overlapping [b, e): the span is a table the kernel reads.
      const auto word = std::lower_bound(h.begin(), h.end(), b >= 7 ? b - 7 : 0);
      if (word != h.end() && *word < e) continue;
      if (!probe_touched(f.regions[i], b, e)) out.push_back({i, b, e, s[k].second});
    }
  }
  return out;
}

std::optional<format::Bitmap> classify_probe(std::span<const uint8_t> after_a, std::span<const uint8_t> after_b,
                                             std::span<const uint8_t> expected) {
  const uint64_t n = expected.size();
  if (after_a.size() != n || after_b.size() != n) return std::nullopt;
  format::Bitmap written(1, n);
  for (uint64_t k = 0; k < n; ++k) {
    if (after_a[k] == after_b[k]) {
      if (after_a[k] != expected[k]) return std::nullopt;  // written, but not what the application got
      written.set(k);
    } else if (after_a[k] != kProbePoisonA || after_b[k] != kProbePoisonB) {
      return std::nullopt;  // depends on the poison: the region is read
    }
  }
  return written;
}

namespace {

std::vector<uint8_t> read_region(Session& s, size_t i) {
  std::vector<uint8_t> out(s.capture().manifest.regions[i].size);
  if (!out.empty()) KC_CU(cuMemcpyDtoH(out.data(), s.address(i), out.size()));
  return out;
}

bool probe_inside(const std::vector<ProbeSpan>& spans, uint64_t k) {
  return std::any_of(spans.begin(), spans.end(), [k](const ProbeSpan& p) { return k >= p.begin && k < p.end; });
}

// Replays with `spans` (all in one region) filled with `pattern`; returns the region read
// back, or nothing when anything outside the spans differs from the unpoisoned replay
// (`reference`: the spans' region as that replay left it; other regions: the application's
// result). Then the poison was read.
std::optional<std::vector<uint8_t>> poisoned_run(Session& s, const CompareSpec& spec, const std::vector<ProbeSpan>& spans,
                                                 const std::vector<uint8_t>& reference, uint8_t pattern) {
  const size_t region = spans.front().region;
  FilterReach reach{{}, pattern};  // the spans alone, overwritten: a memset where it is a fill
  reach.ranges.resize(region + 1);
  for (const ProbeSpan& p : spans) reach.ranges[region].push_back({p.begin, p.end});
  s.set_restore_filter({[spans, region, pattern](size_t i, uint64_t off, uint8_t* data, uint64_t n) {
                          if (i != region) return;
                          for (const ProbeSpan& p : spans) {
                            const uint64_t b = std::max(off, p.begin), e = std::min(off + n, p.end);
                            if (b < e) std::memset(data + (b - off), pattern, e - b);
                          }
                        },
                        std::move(reach)});
  s.restore();
  s.set_restore_filter({});
  s.launch();
  const Verdict v = compare_with_after(s, spec);
  for (size_t i = 0; i < v.regions.size(); ++i)
    if (i != region && !v.regions[i].result.pass()) return std::nullopt;
  std::vector<uint8_t> now = read_region(s, region);
  for (uint64_t k = 0; k < now.size(); ++k)
    if (now[k] != reference[k] && !probe_inside(spans, k)) return std::nullopt;
  return now;
}

std::string probe_describe(const format::Manifest& m, const ProbeSpan& c) {
  const format::Region& r = m.regions[c.region];
  std::string where = fmt::format("region {} +{:#x} ({})", r.id, c.begin, human_bytes(c.end - c.begin));
  if (c.from == kFromSurface) where += ", a CUDA array under a surface object";
  else if (c.from != kFromParams) where += fmt::format(", pointed to from region {}'s memory", m.regions[c.from].id);
  return where;
}

// Pointer memory: every region small enough to hold a pointer table or tensor maps, as the
// session holds it now.
constexpr uint64_t kProbeScanRegionBytes = 16ull << 20, kProbeScanTotalBytes = 256ull << 20;
void probe_add_sources(Session& s, PointerMemory& mem) {
  const format::Manifest& m = s.capture().manifest;
  uint64_t total = 0;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const uint64_t size = m.regions[i].size;
    if (size < 8 || size > kProbeScanRegionBytes || m.regions[i].omitted || total + size > kProbeScanTotalBytes) continue;
    total += size;
    mem.sources.push_back({i, read_region(s, i)});
  }
}

constexpr size_t kProbeMaxRuns = 48;

}  // namespace

std::vector<uint32_t> probe_writes(Session& s, format::Footprint& f) {
  const format::Manifest& m = s.capture().manifest;
  const auto params = s.capture().read(m.params_file, "parameter bytes");
  std::vector<uint32_t> proven;
  PointerMemory mem;
  for (size_t i = 0; i < m.regions.size(); ++i) mem.replay_bases.push_back(s.address(i));
  s.set_restore_filter({});
  s.restore();
  probe_add_sources(s, mem);  // BEFORE: pointer arrays and tensor maps the application built
  if (probe_candidates(m, params, f, mem).empty()) return proven;
  const CompareSpec spec = default_spec(s.capture().dir, m);
  s.launch();
  if (!compare_with_after(s, spec).pass()) {
    log::info("footprint: the replay differs from the application's result, so memory the sanitizer saw no access "
              "to is not probed");
    return proven;
  }
  probe_add_sources(s, mem);  // AFTER: tensor maps the kernel wrote into its workspace
  const std::vector<ProbeSpan> candidates = probe_candidates(m, params, f, mem);
  mem = {};
  std::vector<std::vector<uint8_t>> reference(m.regions.size());
  for (const ProbeSpan& c : candidates)
    if (reference[c.region].empty()) reference[c.region] = read_region(s, c.region);

  size_t runs = 0;
  // Probes `spans` (one region) with both poisons: per span, the bytes written without being
  // read, or nothing when the runs show a read (or the budget is spent).
  auto probe = [&](const std::vector<ProbeSpan>& spans) -> std::optional<std::vector<format::Bitmap>> {
    if (runs + 2 > kProbeMaxRuns) return std::nullopt;
    const auto& ref = reference[spans.front().region];
    ++runs;
    auto a = poisoned_run(s, spec, spans, ref, kProbePoisonA);
    if (!a) return std::nullopt;
    ++runs;
    auto b = poisoned_run(s, spec, spans, ref, kProbePoisonB);
    if (!b) return std::nullopt;
    std::vector<format::Bitmap> out;
    for (const ProbeSpan& c : spans) {
      const auto len = static_cast<ptrdiff_t>(c.end - c.begin), at = static_cast<ptrdiff_t>(c.begin);
      auto w = classify_probe(std::span<const uint8_t>(a->data() + at, len), std::span<const uint8_t>(b->data() + at, len),
                              std::span<const uint8_t>(ref.data() + at, len));
      if (!w) return std::nullopt;
      out.push_back(std::move(*w));
    }
    return out;
  };
  auto record = [&](const ProbeSpan& c, const format::Bitmap& w) {
    const std::string where = probe_describe(m, c);
    if (w.count() == 0) {
      log::info("footprint: {}: not written", where);
      return;
    }
    format::RegionFootprint& rf = f.regions[c.region];
    w.for_each_run([&](uint64_t first, uint64_t count) { rf.written.set_range(c.begin + first, count); });
    rf.probed = true;
    const uint32_t id = m.regions[c.region].id;
    if (std::find(proven.begin(), proven.end(), id) == proven.end()) proven.push_back(id);
    log::info("footprint: {}: {} written without being read (found by probing)", where, human_bytes(w.bytes()));
  };
  // Each region's spans together first, for every region (a grouped GEMM's outputs: two
  // replays), then one by one where that showed a read, so that inputs probed in vain cannot
  // spend the budget before the outputs are reached.
  std::vector<std::vector<ProbeSpan>> failed;
  for (size_t k = 0; k < candidates.size();) {
    std::vector<ProbeSpan> group;
    for (const size_t region = candidates[k].region; k < candidates.size() && candidates[k].region == region; ++k)
      group.push_back(candidates[k]);
    log::info("footprint: {}{}: {} but the sanitizer saw no access; probing with poisons", probe_describe(m, group[0]),
              group.size() > 1 ? fmt::format(" and {} more span(s) of that region", group.size() - 1) : "",
              group[0].from == kFromSurface ? "the kernel can store into it through the surface" : "a pointer reaches it");
    if (auto together = probe(group)) {
      for (size_t j = 0; j < group.size(); ++j) record(group[j], (*together)[j]);
    } else {
      failed.push_back(std::move(group));
    }
  }
  for (const auto& group : failed)
    for (const ProbeSpan& c : group) {
      auto alone = group.size() > 1 ? probe({c}) : std::nullopt;
      if (alone) {
        record(c, alone->front());
      } else {
        log::info("footprint: {}: {}", probe_describe(m, c),
                  runs + 2 > kProbeMaxRuns ? "not probed: the probing budget is spent"
                                           : "read by the kernel (the result depends on its contents); left unmarked");
      }
    }
  s.restore();
  return proven;
}

}  // namespace kerncap::replay
