#include "replay/plan.hpp"

#include <algorithm>
#include <numeric>

namespace kerncap::replay {

std::vector<Span> plan_pieces(const std::vector<Span>& regions, uint64_t piece_align) {
  std::vector<Span> pieces;
  for (const auto& r : regions)
    if (r.size()) pieces.push_back({align_down(r.begin, piece_align), align_up(r.end, piece_align)});
  std::sort(pieces.begin(), pieces.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> merged;
  for (const auto& p : pieces) {
    if (!merged.empty() && p.begin <= merged.back().end) merged.back().end = std::max(merged.back().end, p.end);
    else merged.push_back(p);
  }
  return merged;
}

std::vector<Block> plan_blocks(const std::vector<Span>& regions, uint64_t block_align, uint64_t piece_align) {
  std::vector<uint32_t> order(regions.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return regions[a].begin < regions[b].begin; });
  std::vector<Block> blocks;
  for (uint32_t i : order) {
    const Span& r = regions[i];
    if (r.size() == 0) continue;
    Span s{align_down(r.begin, block_align), align_up(r.end, block_align)};
    if (!blocks.empty() && s.begin <= blocks.back().span.end) {
      blocks.back().span.end = std::max(blocks.back().span.end, s.end);
      blocks.back().regions.push_back(i);
    } else {
      blocks.push_back(Block{s, {}, {i}});
    }
  }
  for (auto& b : blocks) {
    std::vector<Span> rs;
    for (uint32_t i : b.regions) rs.push_back(regions[i]);
    b.pieces = plan_pieces(rs, piece_align);
  }
  return blocks;
}

std::vector<KindRun> split_by_kind(const Span& run, uint64_t step, const std::function<bool(const Span&)>& host) {
  std::vector<KindRun> out;
  if (!host(run)) return {{run, false}};  // the usual case: no host memory in it at all
  for (uint64_t a = run.begin; a < run.end; a += step) {
    const Span p{a, std::min(a + step, run.end)};
    const bool h = host(p);
    if (!out.empty() && out.back().host == h) out.back().span.end = p.end;
    else out.push_back({p, h});
  }
  return out;
}

}  // namespace kerncap::replay
