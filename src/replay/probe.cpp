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

std::vector<ProbeSpan> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                        const format::Footprint& f, uint64_t max_region_bytes, size_t limit) {
  std::vector<ProbeSpan> out;
  if (f.regions.size() != m.regions.size()) return out;
  // Region-relative offsets of every pointer word, per region.
  std::vector<std::vector<uint64_t>> starts(m.regions.size());
  for (size_t o = 0; o + 8 <= params.size(); o += 8) {
    uint64_t a = 0;
    std::memcpy(&a, params.data() + o, 8);
    if (a == 0) continue;
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (a >= m.regions[i].base && a - m.regions[i].base < m.regions[i].size) {
        starts[i].push_back(a - m.regions[i].base);
        break;
      }
  }
  for (size_t i = 0; i < m.regions.size() && out.size() < limit; ++i) {
    auto& s = starts[i];
    if (s.empty() || m.regions[i].size > max_region_bytes) continue;
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    const format::RegionFootprint& rf = f.regions[i];
    for (size_t k = 0; k < s.size() && out.size() < limit; ++k) {
      const uint64_t b = s[k], e = k + 1 < s.size() ? s[k + 1] : m.regions[i].size;
      bool touched = false;
      for (uint64_t g = b / 4; g < (e + 3) / 4 && !touched; ++g) touched = g < rf.read.bits() && rf.read.test(g);
      for (uint64_t g = b; g < e && !touched; ++g) touched = g < rf.written.bits() && rf.written.test(g);
      if (!touched) out.push_back({i, b, e});
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

// Replays with `span` filled with `pattern`; returns the span read back, or nothing when
// anything outside it differs from the unpoisoned replay (`reference`: the span's region as
// that replay left it; other regions: the application's result). Then the poison was read.
std::optional<std::vector<uint8_t>> poisoned_run(Session& s, const CompareSpec& spec, const ProbeSpan& span,
                                                 const std::vector<uint8_t>& reference, uint8_t pattern) {
  FilterReach reach{{}, pattern};  // the span alone, overwritten: a memset where it is a fill
  reach.ranges.resize(span.region + 1);
  reach.ranges[span.region].push_back({span.begin, span.end});
  s.set_restore_filter({[span, pattern](size_t i, uint64_t off, uint8_t* data, uint64_t n) {
                          if (i != span.region) return;
                          const uint64_t b = std::max(off, span.begin), e = std::min(off + n, span.end);
                          if (b < e) std::memset(data + (b - off), pattern, e - b);
                        },
                        std::move(reach)});
  s.restore();
  s.set_restore_filter({});
  s.launch();
  const Verdict v = compare_with_after(s, spec);
  for (size_t i = 0; i < v.regions.size(); ++i)
    if (i != span.region && !v.regions[i].result.pass()) return std::nullopt;
  const std::vector<uint8_t> now = read_region(s, span.region);
  if (!std::equal(now.begin(), now.begin() + static_cast<ptrdiff_t>(span.begin), reference.begin()) ||
      !std::equal(now.begin() + static_cast<ptrdiff_t>(span.end), now.end(),
                  reference.begin() + static_cast<ptrdiff_t>(span.end)))
    return std::nullopt;
  return std::vector<uint8_t>(now.begin() + static_cast<ptrdiff_t>(span.begin),
                              now.begin() + static_cast<ptrdiff_t>(span.end));
}

}  // namespace

std::vector<uint32_t> probe_writes(Session& s, format::Footprint& f) {
  const format::Manifest& m = s.capture().manifest;
  const auto params = s.capture().read(m.params_file, "parameter bytes");
  const std::vector<ProbeSpan> candidates = probe_candidates(m, params, f);
  std::vector<uint32_t> proven;
  if (candidates.empty()) return proven;
  const CompareSpec spec = default_spec(s.capture().dir, m);
  s.set_restore_filter({});
  s.restore();
  s.launch();
  if (!compare_with_after(s, spec).pass()) {
    log::info("footprint: the replay differs from the application's result, so memory the sanitizer saw no access "
              "to is not probed");
    return proven;
  }
  std::vector<std::vector<uint8_t>> reference(m.regions.size());
  for (const ProbeSpan& c : candidates)
    if (reference[c.region].empty()) reference[c.region] = read_region(s, c.region);
  for (const ProbeSpan& c : candidates) {
    const format::Region& r = m.regions[c.region];
    const std::string where = fmt::format("region {} +{:#x} ({})", r.id, c.begin, human_bytes(c.end - c.begin));
    log::info("footprint: {} is passed to the kernel but shows no access: probing it with poisons", where);
    const auto& ref = reference[c.region];
    auto a = poisoned_run(s, spec, c, ref, kProbePoisonA);
    auto b = a ? poisoned_run(s, spec, c, ref, kProbePoisonB) : std::nullopt;
    std::optional<format::Bitmap> w;
    if (a && b)
      w = classify_probe(*a, *b, std::span<const uint8_t>(ref).subspan(c.begin, c.end - c.begin));
    if (!w || w->count() == 0) {
      log::info("footprint: {}: {}", where,
                !w ? "read by the kernel (the result depends on its contents); left unmarked" : "not written");
      continue;
    }
    format::RegionFootprint& rf = f.regions[c.region];
    w->for_each_run([&](uint64_t first, uint64_t count) { rf.written.set_range(c.begin + first, count); });
    rf.probed = true;
    if (std::find(proven.begin(), proven.end(), r.id) == proven.end()) proven.push_back(r.id);
    log::info("footprint: {}: {} written without being read (found by probing)", where, human_bytes(w->bytes()));
  }
  s.restore();
  return proven;
}

}  // namespace kerncap::replay
