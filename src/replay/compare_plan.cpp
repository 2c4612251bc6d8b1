#include "replay/compare_plan.hpp"

#include <algorithm>

namespace kerncap::replay {
namespace {

uint64_t up8(uint64_t base, uint64_t off) { return (base + off + 7) / 8 * 8 - base; }
uint64_t down8(uint64_t base, uint64_t off) { return (base + off) / 8 * 8 - base; }

// The uniform range that holds all of [b, e), if any (`k`: a cursor that only moves forward,
// as blocks come in order).
const UniformRange* holding(const std::vector<UniformRange>& u, size_t& k, uint64_t b, uint64_t e) {
  while (k < u.size() && u[k].end <= b) ++k;
  return k < u.size() && u[k].begin <= b && e <= u[k].end ? &u[k] : nullptr;
}

}  // namespace

std::vector<UniformRange> expected_uniform(const std::vector<format::RegionBytes::Segment>& before,
                                           const std::vector<ByteRange>& after, uint64_t base, uint64_t size,
                                           const std::function<bool(uint64_t word)>& moved) {
  std::vector<UniformRange> out;
  // [lo, hi) of one fill value: trimmed to whole words inside the region (its own ends stay:
  // a word across them is partial and never rewritten).
  auto add = [&](uint64_t lo, uint64_t hi, uint8_t value) {
    const uint64_t b = lo == 0 ? 0 : std::min(up8(base, lo), hi);
    const uint64_t e = hi == size ? hi : std::max(down8(base, hi), b);
    if (b < e) out.push_back({b, e, value});
  };
  size_t k = 0;
  for (const auto& s : before) {
    if (!s.fill) continue;
    if (moved && moved(*s.fill * 0x0101010101010101ull)) continue;
    const uint64_t end = std::min(size, s.offset + s.size);
    while (k < after.size() && after[k].end <= s.offset) ++k;
    uint64_t at = s.offset;
    for (size_t j = k; j < after.size() && after[j].begin < end; ++j) {
      if (after[j].begin > at) add(at, after[j].begin, *s.fill);
      at = std::max(at, std::min(after[j].end, end));
    }
    if (at < end) add(at, end, *s.fill);
  }
  return out;
}

uint64_t CompareGrid::blocks() const {
  if (end <= begin || step == 0 || block == 0) return 0;
  const uint64_t len = end - begin, full = len / step, rest = len % step;
  return full * per_window() + (rest + block - 1) / block;
}

ByteRange CompareGrid::block_at(uint64_t index) const {
  const uint64_t w = index / per_window(), k = index % per_window();
  const uint64_t off = begin + w * step + k * block;
  const uint64_t window_end = std::min(end, begin + (w + 1) * step);
  return {off, std::min(off + block, window_end)};
}

std::vector<CompareStep> plan_compare(const CompareGrid& g, const std::vector<UniformRange>& uniform,
                                      std::span<const uint32_t> device) {
  std::vector<CompareStep> steps;
  if (g.end <= g.begin) return steps;
  const bool checked = !device.empty() && device.size() == g.blocks();
  if (!checked) {
    for (uint64_t off = g.begin; off < g.end; off += g.step) steps.push_back({off, std::min(g.step, g.end - off), {}});
    return steps;
  }
  size_t k = 0;
  const uint64_t n = g.blocks();
  for (uint64_t c = 0; c < n; ++c) {
    const ByteRange b = g.block_at(c);
    const UniformRange* u = holding(uniform, k, b.begin, b.end);
    std::optional<uint8_t> same;
    if (u && device[c] == u->value) same = u->value;
    // A block joins the step before when both are identical with one value, or both are
    // read back and lie in one window (the host reads at most a window at a time).
    const bool joins = !steps.empty() && steps.back().same == same &&
                       (same || (steps.back().offset - g.begin) / g.step == (b.begin - g.begin) / g.step);
    if (joins) steps.back().size += b.end - b.begin;
    else steps.push_back({b.begin, b.end - b.begin, same});
  }
  return steps;
}

std::vector<CompareStep> plan_compare_equal(const CompareGrid& g, std::span<const uint32_t> equal,
                                            std::span<const uint8_t> plain) {
  std::vector<CompareStep> steps;
  if (g.end <= g.begin) return steps;
  const uint64_t n = g.blocks();
  if (equal.size() != n || (!plain.empty() && plain.size() != n)) return plan_compare(g, {}, {});
  for (uint64_t c = 0; c < n; ++c) {
    const ByteRange b = g.block_at(c);
    const bool same = equal[c] == 0 && (plain.empty() || plain[c]);
    // Identical blocks join across windows (nothing is read); read-back blocks only within one.
    const bool joins = !steps.empty() && steps.back().equal == same &&
                       (same || (steps.back().offset - g.begin) / g.step == (b.begin - g.begin) / g.step);
    if (joins) steps.back().size += b.end - b.begin;
    else steps.push_back({b.begin, b.end - b.begin, std::nullopt, same});
  }
  return steps;
}

std::vector<uint8_t> plain_blocks(const CompareGrid& g, const uint8_t* expected,
                                  const std::function<bool(const uint8_t*, uint64_t)>& is_plain) {
  std::vector<uint8_t> out(g.blocks());
  for (uint64_t c = 0; c < out.size(); ++c) {
    const ByteRange b = g.block_at(c);
    out[c] = is_plain(expected + (b.begin - g.begin), b.end - b.begin) ? 1 : 0;
  }
  return out;
}

std::vector<UniformRange> uniform_from_answers(std::span<const uint32_t> answers, uint64_t size, uint64_t block) {
  std::vector<UniformRange> out;
  for (uint64_t c = 0; c < answers.size(); ++c) {
    if (answers[c] == kMixed) continue;
    const uint64_t b = c * block, e = std::min(size, b + block);
    const auto v = static_cast<uint8_t>(answers[c]);
    if (!out.empty() && out.back().end == b && out.back().value == v) out.back().end = e;
    else if (b < e) out.push_back({b, e, v});
  }
  return out;
}

bool worth_checking(const CompareGrid& g, const std::vector<UniformRange>& uniform, uint64_t min_bytes) {
  // Whole windows are counted by their blocks' overlap with the ranges, less a block at each
  // end of every range (a block across a range's edge is read back).
  uint64_t bytes = 0;
  for (const UniformRange& u : uniform) {
    const uint64_t b = std::max(u.begin, g.begin), e = std::min(u.end, g.end);
    if (e <= b) continue;
    const uint64_t len = e - b;
    bytes += len > 2 * g.block ? len - 2 * g.block : 0;
    if (bytes >= min_bytes) return true;
  }
  return false;
}

}  // namespace kerncap::replay
