#include "capture/rank_gate.hpp"

namespace kerncap::capture {

RankDecision decide_rank(const Config& config, const format::ProcessRank& env,
                         const std::function<std::optional<uint64_t>()>& take_slot) {
  RankDecision d;
  if (config.rank < 0) return d;  // no --rank: every process may capture (the first claim wins)
  std::optional<uint64_t> rank = env.rank;
  d.source = env.source;
  if (!rank) {
    rank = take_slot();
    d.source = format::kStartOrderSource;
  }
  d.rank = rank ? static_cast<int64_t>(*rank) : -1;
  d.selected = rank && static_cast<int64_t>(*rank) == config.rank;
  return d;
}

}  // namespace kerncap::capture
