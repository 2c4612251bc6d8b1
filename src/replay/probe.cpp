#include "replay/probe.hpp"

#include <algorithm>
#include <cstring>

#include "common/driver.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {

std::vector<size_t> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                     const format::Footprint& f, uint64_t max_bytes, size_t limit) {
  std::vector<size_t> out;
  if (f.regions.size() != m.regions.size()) return out;
  for (size_t o = 0; o + 8 <= params.size(); o += 8) {
    uint64_t a = 0;
    std::memcpy(&a, params.data() + o, 8);
    if (a == 0) continue;
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const format::Region& r = m.regions[i];
      if (a < r.base || a - r.base >= r.size) continue;
      const format::RegionFootprint& rf = f.regions[i];
      if (r.size <= max_bytes && rf.read.count() == 0 && rf.written.count() == 0 &&
          std::find(out.begin(), out.end(), i) == out.end() && out.size() < limit)
        out.push_back(i);
      break;
    }
  }
  std::sort(out.begin(), out.end());
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

// Replays with region `index` filled with `pattern`; returns the region read back, or nothing
// when another region's result differs from the application's (the poison was read).
std::optional<std::vector<uint8_t>> poisoned_run(Session& s, const CompareSpec& spec, size_t index, uint8_t pattern) {
  s.set_restore_filter([index, pattern](size_t i, uint64_t, uint8_t* data, uint64_t n) {
    if (i == index) std::memset(data, pattern, n);
  });
  s.restore();
  s.set_restore_filter({});
  s.launch();
  const Verdict v = compare_with_after(s, spec);
  for (size_t i = 0; i < v.regions.size(); ++i)
    if (i != index && !v.regions[i].result.pass()) return std::nullopt;
  return read_region(s, index);
}

}  // namespace

std::vector<uint32_t> probe_writes(Session& s, format::Footprint& f) {
  const format::Manifest& m = s.capture().manifest;
  const auto params = format::read_file(s.capture().path(m.params_file));
  const std::vector<size_t> candidates = probe_candidates(m, params, f);
  std::vector<uint32_t> proven;
  if (candidates.empty()) return proven;
  const CompareSpec spec = default_spec(s.capture().dir, m);
  s.set_restore_filter({});
  s.restore();
  s.launch();
  if (!compare_with_after(s, spec).pass()) {
    log::info("footprint: the replay differs from the application's result, so regions the sanitizer saw no access "
              "to are not probed");
    return proven;
  }
  for (size_t i : candidates) {
    const format::Region& r = m.regions[i];
    log::info("footprint: region {} ({}) is passed to the kernel but shows no access: probing it with poisons", r.id,
              human_bytes(r.size));
    auto a = poisoned_run(s, spec, i, kProbePoisonA);
    auto b = a ? poisoned_run(s, spec, i, kProbePoisonB) : std::nullopt;
    std::optional<format::Bitmap> w;
    if (a && b) {
      s.restore();
      s.launch();
      w = classify_probe(*a, *b, read_region(s, i));  // the unpoisoned replay matched the application
    }
    if (!w || w->count() == 0) {
      log::info("footprint: region {}: {}", r.id,
                !w ? "read by the kernel (its result depends on the region's contents); left unmarked"
                   : "not written");
      continue;
    }
    f.regions[i].written = std::move(*w);
    f.regions[i].probed = true;
    proven.push_back(r.id);
    log::info("footprint: region {}: {} written without being read (found by probing)", r.id,
              human_bytes(f.regions[i].written.bytes()));
  }
  s.restore();
  return proven;
}

}  // namespace kerncap::replay
