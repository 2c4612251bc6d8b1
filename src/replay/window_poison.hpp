#pragma once
// Strong validation of a window (docs/window.md "Strong validation"): the one-launch strong
// validation poisons the bytes a kernel writes without reading them, from its measured
// footprint (poison.hpp). A window has no footprint (the Compute Sanitizer measures one
// launch), so its write-only bytes are probed instead: among the bytes the window changed (its
// AFTER runs; with a live-out list, those of its regions only), the regions whose runs can be
// poisoned — with 0xA5, then with 0x5A — while the captured window still reproduces AFTER byte
// for byte in every region. Those regions' runs are the plan; the validation then poisons them
// through the one poison code (poison_restores, mark_strong), so a replacement that skips one
// of those writes cannot pass on the bytes the application left there. A region the window
// reads before writing (an in-place update, an accumulator) fails the probe; it is then cut
// where the window's kernels point into it (the tensors of a caching allocator's segment,
// window_pieces.hpp) and its pieces are probed the same way, so the written-only tensors beside
// a read one are poisoned (while the probe has made fewer than 256 replays). The probe bisects:
// a window whose changed regions are all write-only costs two replays, k read regions about
// 2 k log2(regions) more, and each of those about 2 r log2(pieces) for its r read pieces.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "replay/poison.hpp"
#include "replay/session.hpp"
#include "replay/window_replay.hpp"

namespace kerncap::replay {

struct WindowPoison {
  PoisonPlan plan;                     // the write-only runs of the candidate regions
  std::vector<uint32_t> poisoned;      // regions whose changed bytes are poisoned
  std::vector<uint32_t> read_first;    // candidate regions with bytes the window reads before writing (not poisoned)
  // Regions read before written as a whole, probed piece by piece (a segment of many tensors):
  // how many pieces, how many poisoned. Such a region may be in both lists above.
  struct Pieces {
    uint32_t region = 0;
    size_t pieces = 0, poisoned = 0;
  };
  std::vector<Pieces> pieces;
  int replays = 0;                     // replays the probe made
  std::string weak_reason;             // non-empty: nothing can be poisoned, and why
};

// `captured`: the window as captured (no swaps), in session `s`. `live`: the regions judged
// (nullopt: every region). Leaves the session without a restore filter.
WindowPoison probe_window_poison(Session& s, WindowReplay& captured, const std::optional<std::set<uint32_t>>& live);

// The verdict line's statement of a window's strength (appended by `kerncap window validate`).
std::string window_strength_note(const WindowPoison& p);

}  // namespace kerncap::replay
