#include "replay/window_poison.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/hex.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {
namespace {

// A plan poisoning the candidates `which` (indices into `runs`, per region index).
PoisonPlan window_plan_of(const std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& runs,
                          const std::vector<size_t>& which) {
  PoisonPlan p;
  p.runs.resize(runs.size());
  for (size_t i : which) {
    p.runs[i] = runs[i];
    uint64_t n = 0;
    for (const auto& [off, count] : runs[i]) n += count;
    p.bytes += n;
    p.written_bytes += n;
    ++p.written_regions;
  }
  return p;
}

}  // namespace

WindowPoison probe_window_poison(Session& s, WindowReplay& captured, const std::optional<std::set<uint32_t>>& live) {
  const format::Manifest& m = s.capture().manifest;
  WindowPoison out;
  // The candidates: per region (manifest order) its AFTER runs, for regions judged. Module
  // globals and CUDA arrays are left alone (restored by their own paths).
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> runs(m.regions.size());
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < m.regions.size(); ++i) index[m.regions[i].id] = i;
  for (const auto& a : m.after) {
    const auto it = index.find(a.region);
    if (it == index.end() || (live && !live->count(a.region))) continue;
    const format::MemKind k = m.regions[it->second].kind;
    if (k == format::MemKind::Global || k == format::MemKind::Array) continue;
    runs[it->second].push_back({a.offset, a.size});
  }
  std::vector<size_t> candidates;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].empty()) {
      std::sort(runs[i].begin(), runs[i].end());
      candidates.push_back(i);
    }
  if (candidates.empty()) {
    out.weak_reason = "the window changed no bytes in the regions judged: nothing to poison";
    return out;
  }
  // Whether the captured window reproduces AFTER everywhere with `which` poisoned (both patterns).
  auto reproduces = [&](const std::vector<size_t>& which) {
    const PoisonPlan plan = window_plan_of(runs, which);
    for (const uint8_t pattern : {uint8_t{0xA5}, uint8_t{0x5A}}) {
      if (which.empty() && pattern != 0xA5) break;
      if (which.empty()) s.set_restore_filter({});
      else poison_restores(s, plan, pattern);
      s.restore();
      captured.enqueue(s.stream());
      s.synchronize();
      ++out.replays;
      const bool same = compare_with_after(s, CompareSpec{}).pass();
      s.set_restore_filter({});
      if (!same) return false;
    }
    return true;
  };
  if (!reproduces({})) {
    out.weak_reason = "the captured window does not reproduce AFTER byte for byte here, so no byte can be proven "
                      "write-only";
    return out;
  }
  std::vector<size_t> accepted;
  std::vector<std::vector<size_t>> todo{candidates};
  while (!todo.empty()) {
    std::vector<size_t> set = std::move(todo.back());
    todo.pop_back();
    if (reproduces(set)) {
      accepted.insert(accepted.end(), set.begin(), set.end());
      continue;
    }
    if (set.size() == 1) {
      out.read_first.push_back(m.regions[set[0]].id);
      continue;
    }
    const auto mid = set.begin() + static_cast<std::ptrdiff_t>(set.size() / 2);
    todo.emplace_back(mid, set.end());
    todo.emplace_back(set.begin(), mid);
  }
  std::sort(accepted.begin(), accepted.end());
  std::sort(out.read_first.begin(), out.read_first.end());
  out.plan = window_plan_of(runs, accepted);
  // What the verdict counts as written: every byte the window changed in the regions judged.
  const PoisonPlan all = window_plan_of(runs, candidates);
  out.plan.written_bytes = all.written_bytes;
  out.plan.written_regions = all.written_regions;
  for (size_t i : accepted) out.poisoned.push_back(m.regions[i].id);
  if (accepted.empty())
    out.weak_reason = fmt::format("the window reads every region it changes before writing it ({} region(s)): "
                                  "nothing could be poisoned",
                                  out.read_first.size());
  return out;
}

std::string window_strength_note(const WindowPoison& p) {
  if (!p.weak_reason.empty()) return fmt::format("window weak: {}", p.weak_reason);
  std::string s = fmt::format("window strong: {} changed by the window in {} region(s) poisoned before the replay, "
                              "write-only as probed (the captured window, with them poisoned with 0xA5 and with "
                              "0x5A, reproduces AFTER byte for byte; {} probe replays)",
                              human_bytes(p.plan.bytes), p.poisoned.size(), p.replays);
  if (!p.read_first.empty())
    s += fmt::format("; {} region(s) the window reads before writing not poisoned", p.read_first.size());
  return s;
}

}  // namespace kerncap::replay
