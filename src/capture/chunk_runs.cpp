#include "capture/chunk_runs.hpp"

#include <algorithm>

namespace kerncap::capture {
namespace {

uint64_t chunk_end(size_t i, uint64_t size, uint32_t chunk) { return std::min<uint64_t>(size, (i + 1) * uint64_t{chunk}); }

}  // namespace

std::vector<ByteRun> nonzero_runs(const std::vector<uint64_t>& sig, uint64_t size, uint32_t chunk, uint64_t min_gap) {
  std::vector<ByteRun> runs;
  for (size_t i = 0; i < sig.size(); ++i) {
    if (sig[i] == 0) continue;
    const uint64_t begin = i * uint64_t{chunk}, end = chunk_end(i, size, chunk);
    if (!runs.empty() && begin - (runs.back().offset + runs.back().size) < min_gap)
      runs.back().size = end - runs.back().offset;  // the zeros between are stored too
    else
      runs.push_back({begin, end - begin});
  }
  return runs;
}

uint64_t merge_gap(uint64_t size, uint64_t max_runs, uint64_t floor) {
  return std::max(floor, max_runs ? size / max_runs : size);
}

std::vector<ByteRun> changed_runs(const std::vector<uint64_t>& before, const std::vector<uint64_t>& after,
                                  uint64_t size, uint32_t chunk) {
  std::vector<ByteRun> runs;
  for (size_t i = 0; i < after.size(); ++i) {
    if (i < before.size() && before[i] == after[i]) continue;
    const uint64_t begin = i * uint64_t{chunk}, end = chunk_end(i, size, chunk);
    if (!runs.empty() && runs.back().offset + runs.back().size == begin)
      runs.back().size = end - runs.back().offset;
    else
      runs.push_back({begin, end - begin});
  }
  return runs;
}

}  // namespace kerncap::capture
