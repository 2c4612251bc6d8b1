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
// reads before writing (an in-place update, an accumulator) fails the probe and is not
// poisoned. The probe bisects: a window whose changed regions are all write-only costs two
// replays, k read regions about 2 k log2(regions) more.
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
  std::vector<uint32_t> read_first;    // candidate regions the window reads before writing (not poisoned)
  int replays = 0;                     // replays the probe made
  std::string weak_reason;             // non-empty: nothing can be poisoned, and why
};

// `captured`: the window as captured (no swaps), in session `s`. `live`: the regions judged
// (nullopt: every region). Leaves the session without a restore filter.
WindowPoison probe_window_poison(Session& s, WindowReplay& captured, const std::optional<std::set<uint32_t>>& live);

// The verdict line's statement of a window's strength (appended by `kerncap window validate`).
std::string window_strength_note(const WindowPoison& p);

}  // namespace kerncap::replay
