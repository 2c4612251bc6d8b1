#pragma once
// `extract --rank R`: decided once, at cuInit, whether this process is the one to capture
// in. A process of another rank runs untouched: kerncap subscribes to nothing there, so it
// takes no snapshot, never synchronises and is never stopped (injection.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "capture/config.hpp"
#include "format/rank.hpp"

namespace kerncap::capture {

struct RankDecision {
  int64_t rank = -1;   // this process's rank, -1 when it cannot be told
  std::string source;  // the launcher variable, or format::kStartOrderSource
  bool selected = true;
};

// `env`: the launcher variables' verdict (format::rank_from_env). `take_slot` is called only
// when they name no rank: the process's index in cuInit order (format::take_start_slot).
// A process whose rank cannot be told at all is not selected: capturing in the wrong rank
// would be worse than capturing in none (extract then says why).
RankDecision decide_rank(const Config& config, const format::ProcessRank& env,
                         const std::function<std::optional<uint64_t>()>& take_slot);

// The process's launcher variables, read with getenv (config.cpp: the library's only getenv).
format::ProcessRank read_process_rank();

}  // namespace kerncap::capture
