#include "replay/window_poison.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/hex.hpp"
#include "replay/validate.hpp"
#include "replay/window_pieces.hpp"

namespace kerncap::replay {
namespace {

using WindowRuns = std::vector<std::pair<uint64_t, uint64_t>>;

// One candidate of the probe: a region's changed runs, all of them or one piece's.
struct PoisonUnit {
  size_t region = 0;  // manifest index
  WindowRuns runs;
};

// A plan poisoning the units `which` (indices into `units`); several units of one region merge.
PoisonPlan window_plan_of(size_t regions, const std::vector<PoisonUnit>& units, const std::vector<size_t>& which) {
  PoisonPlan p;
  p.runs.resize(regions);
  std::set<size_t> touched;
  for (size_t u : which) {
    const PoisonUnit& unit = units[u];
    auto& r = p.runs[unit.region];
    r.insert(r.end(), unit.runs.begin(), unit.runs.end());
    touched.insert(unit.region);
    for (const auto& [off, count] : unit.runs) p.bytes += count;
  }
  for (size_t i : touched) std::sort(p.runs[i].begin(), p.runs[i].end());
  p.written_bytes = p.bytes;
  p.written_regions = touched.size();
  return p;
}

// A read-first region is refined piece by piece only while the probe has made fewer replays
// than this: a region of many tensors costs about 2 log2(pieces) replays per read-first piece.
constexpr int kMaxProbeReplays = 256;

}  // namespace

WindowPoison probe_window_poison(Session& s, WindowReplay& captured, const std::optional<std::set<uint32_t>>& live) {
  const format::Capture& cap = s.capture();
  const format::Manifest& m = cap.manifest;
  WindowPoison out;
  // The candidates: per region (manifest order) its AFTER runs, for regions judged. Module
  // globals and CUDA arrays are left alone (restored by their own paths).
  std::vector<WindowRuns> runs(m.regions.size());
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < m.regions.size(); ++i) index[m.regions[i].id] = i;
  for (const auto& a : m.after) {
    const auto it = index.find(a.region);
    if (it == index.end() || (live && !live->count(a.region))) continue;
    const format::MemKind k = m.regions[it->second].kind;
    if (k == format::MemKind::Global || k == format::MemKind::Array) continue;
    runs[it->second].push_back({a.offset, a.size});
  }
  std::vector<PoisonUnit> units;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!runs[i].empty()) {
      std::sort(runs[i].begin(), runs[i].end());
      units.push_back({i, runs[i]});
    }
  if (units.empty()) {
    out.weak_reason = "the window changed no bytes in the regions judged: nothing to poison";
    return out;
  }
  // Whether the captured window reproduces AFTER everywhere with `which` poisoned (both patterns).
  auto reproduces = [&](const std::vector<size_t>& which) {
    const PoisonPlan plan = window_plan_of(m.regions.size(), units, which);
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
  // Bisection over `candidates`: the accepted units, and those that fail alone.
  std::vector<size_t> accepted;
  auto bisect = [&](std::vector<size_t> candidates, std::vector<size_t>* rejected) {
    std::vector<std::vector<size_t>> todo{std::move(candidates)};
    while (!todo.empty()) {
      std::vector<size_t> set = std::move(todo.back());
      todo.pop_back();
      if (reproduces(set)) {
        accepted.insert(accepted.end(), set.begin(), set.end());
        continue;
      }
      if (set.size() == 1) {
        rejected->push_back(set[0]);
        continue;
      }
      const auto mid = set.begin() + static_cast<std::ptrdiff_t>(set.size() / 2);
      todo.emplace_back(mid, set.end());
      todo.emplace_back(set.begin(), mid);
    }
  };
  std::vector<size_t> all(units.size());
  for (size_t u = 0; u < units.size(); ++u) all[u] = u;
  std::vector<size_t> read_first_units;
  bisect(all, &read_first_units);
  // A region read before written as a whole may hold tensors written only (a caching allocator's
  // segment: the window's input beside its intermediates and outputs). Cut where the window's
  // kernels point into it (window_pieces.hpp) and probe the pieces.
  std::vector<std::vector<uint8_t>> params;
  bool params_read = false;
  std::set<size_t> refined;  // regions probed piece by piece
  std::vector<size_t> still_read_first;
  for (size_t u : read_first_units) {
    const size_t region = units[u].region;
    if (out.replays >= kMaxProbeReplays) {
      still_read_first.push_back(u);
      continue;
    }
    if (!params_read) {
      const format::Window& w = captured.window();
      for (size_t i = 0; i < w.ops.size(); ++i)
        if (w.ops[i].kind == format::WindowOp::Kind::Kernel)
          params.push_back(cap.read(format::window_params_file(i), "a window kernel's parameters"));
      params_read = true;
    }
    std::vector<uint64_t> cuts;
    for (const auto& p : params) add_pointer_cuts(p, m.regions[region].base, m.regions[region].size, &cuts);
    auto pieces = split_runs_at_cuts(units[u].runs, std::move(cuts));
    if (pieces.size() < 2) {
      still_read_first.push_back(u);
      continue;
    }
    std::vector<size_t> piece_units;
    for (auto& piece : pieces) {
      piece_units.push_back(units.size());
      units.push_back({region, std::move(piece)});
    }
    refined.insert(region);
    bisect(piece_units, &still_read_first);
  }
  std::sort(accepted.begin(), accepted.end());
  out.plan = window_plan_of(m.regions.size(), units, accepted);
  // What the verdict counts as written: every byte the window changed in the regions judged.
  std::vector<size_t> whole;
  for (size_t u = 0; u < all.size(); ++u) whole.push_back(u);
  const PoisonPlan every = window_plan_of(m.regions.size(), units, whole);
  out.plan.written_bytes = every.written_bytes;
  out.plan.written_regions = every.written_regions;
  std::set<uint32_t> poisoned, read_first;
  for (size_t u : accepted) poisoned.insert(m.regions[units[u].region].id);
  for (size_t u : still_read_first) read_first.insert(m.regions[units[u].region].id);
  out.poisoned.assign(poisoned.begin(), poisoned.end());
  out.read_first.assign(read_first.begin(), read_first.end());
  for (size_t region : refined) {
    const uint32_t id = m.regions[region].id;
    size_t n = 0, ok = 0;
    for (size_t u = all.size(); u < units.size(); ++u)
      if (units[u].region == region) {
        ++n;
        ok += std::binary_search(accepted.begin(), accepted.end(), u);
      }
    out.pieces.push_back({id, n, ok});
  }
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
  if (!p.pieces.empty()) {
    size_t n = 0, ok = 0;
    for (const auto& r : p.pieces) n += r.pieces, ok += r.poisoned;
    s += fmt::format("; {} region(s) read before written as a whole probed piece by piece (cut where the window's "
                     "kernels point): {} of {} piece(s) poisoned",
                     p.pieces.size(), ok, n);
  }
  if (!p.read_first.empty())
    s += fmt::format("; {} region(s) with bytes the window reads before writing not poisoned there", p.read_first.size());
  return s;
}

}  // namespace kerncap::replay
