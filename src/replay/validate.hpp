#pragma once
// Compare what a replay left in memory with what the application's launch left: for
// every region, expected = BEFORE overlaid with the AFTER runs (pointer words into moved
// spans rewritten the same way as the restore), actual = the replay's device memory.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.hpp"
#include "compare/invariants.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

// One typed piece of a region (pieces_of) and what its comparison found; offsets in the
// piece's result are region-relative.
struct PieceVerdict {
  Piece piece;
  compare::Result result;
};

struct RegionVerdict {
  uint32_t id = 0;
  std::string kind;
  uint64_t base = 0, size = 0;
  uint64_t written = 0;  // bytes the application's launch changed in it
  compare::Result result;           // all pieces together
  std::vector<PieceVerdict> pieces;  // in address order; one piece when the spec has no span here
  // compare::summary of the region, or of each failing piece when spans type it.
  std::string summary() const;
};

struct Verdict {
  std::vector<RegionVerdict> regions;
  std::string spec_source;  // where the comparison spec came from
  // Regions where two replays of the captured image differed (the kernel is
  // nondeterministic there and was compared with tolerances); set by the caller.
  std::vector<uint32_t> nondeterministic;
  // Why the kernel was judged nondeterministic, for the line ("float atomics in its code
  // (REDG.E.ADD.F64...); two replays ... differ in 1 region(s)"); "" reads as the two replays'.
  std::string nondeterministic_cause;
  uint64_t written() const;  // bytes the application's launch changed, all regions
  // Strong validation (a footprint existed): the bytes the kernel writes, over how many
  // regions, and how many of them were poisoned before the replay.
  bool strong = false;
  uint64_t footprint_written = 0, footprint_regions = 0, poisoned = 0;
  // Of `poisoned`: bytes in regions whose writes probing proved (the sanitizer cannot see TMA
  // stores), and how many regions.
  uint64_t probed_poisoned = 0, probed_regions = 0;
  // A footprint, but nothing it lets a comparison prove: every byte the kernel writes it also
  // reads (none could be poisoned) and the application's launch left every byte as it was
  // (an in-place update that changed nothing), so a replay that skips its writes passes too.
  bool unproven() const { return strong && poisoned == 0 && written() == 0; }
  // The invariants of the written bytes, when any were asked for (a violation fails the verdict).
  std::optional<compare::InvariantReport> invariants;
  // The capture's closure: regions it omitted (no pointer reaches them; replayed as 0xCB),
  // and how many of those the application's launch changed anyway (their BEFORE is unknown).
  uint64_t omitted_regions = 0, closure_gaps = 0;
  // Where the comparison's work went: bytes the device vouched for (compare_plan.hpp), bytes
  // read back and compared on the host, and its wall time (invariants included).
  uint64_t compared_on_device = 0, read_back = 0;
  double compare_s = 0;
  // Of compare_s: reading the expected bytes from the capture (0 when the session keeps them),
  // copying the replay's bytes back, comparing them on the host. A profile, not the verdict.
  double expected_s = 0, read_back_s = 0, host_s = 0;
  bool expected_kept = false;  // the expected bytes came from the session's copy
  // The device compared the replay's bytes with its copy of the expected bytes (pieces of at
  // least kEqualOnDeviceBytes): only blocks that differ (or hold NaN/Inf) were read back.
  bool expected_on_device = false;
  // The candidate faulted (an illegal address, a trap): nothing it left can be compared, and
  // the verdict is FAIL naming the fault (the evaluation loop recovers its session).
  std::string fault;
  bool pass() const;       // no fault, every region matches and no invariant is violated
  uint64_t failing() const;
  uint64_t exact() const;
  std::string line() const;  // "Result: PASS (...)" / "Result: FAIL (...)"
  nlohmann::json to_json() const;
};

// What to check beyond the comparison: the invariants, and the element types that read the
// written bytes for them (`typing`: invariant_typing of the spec).
struct InvariantRequest {
  compare::Invariants checks;
  CompareSpec typing;
  // Per region (manifest order): byte runs (offset, count) the replay is known to write beyond
  // the application's AFTER runs — strong validation's poisoned bytes — so that the value
  // invariants also read what a replay wrote where the application's launch rewrote equal
  // bytes (a benchmark loop's later launch). Null: the AFTER runs only.
  const std::vector<std::vector<std::pair<uint64_t, uint64_t>>>* known_written = nullptr;
};

// The element types the invariants read the written bytes with: the comparison spec's types
// where it has them, the kernel's signature types (`signature`) in what it leaves as bytes.
CompareSpec invariant_typing(const CompareSpec& spec, const std::vector<TypedSpan>& signature);

// Reads every region's expected bytes into the session's copy now, for compare_with_after
// to use from then on, when they can be kept (no module globals, at most 512 MiB in all);
// otherwise does nothing. A one-shot comparison never keeps them. Where the comparison's
// device check loads and the device has the memory, a copy goes to the device too: from then
// on each piece of at least kEqualOnDeviceBytes is compared there first, block by block, and
// only blocks that differ, or whose expected elements hold NaN or Inf (which the comparator
// counts), are read back and compared on the host: the same verdict, its regions' results
// field for field, without reading back a region the replay left as expected.
void keep_expected_bytes(Session& session);
// Pieces smaller than this are compared on the host (a launch and its wait cost more).
inline constexpr uint64_t kEqualOnDeviceBytes = 256ull << 10;

// Every region, piece by piece as `spec` types it (pieces_of), streamed through the
// session's pinned staging buffers (the expected bytes from the session's copy when it keeps
// one, else from the capture); then, with `inv`, the invariants over the bytes the
// application's launch changed (its AFTER runs).
Verdict compare_with_after(Session& session, const CompareSpec& spec, const InvariantRequest* inv = nullptr);
// Records in a verdict what the capture's closure left out (omitted regions, and those of
// them the application's launch changed), so its line says what it cannot prove.
void note_closure(Verdict& v, const format::Manifest& m);

// A verdict's line turned into a FAIL by what else failed (`extra`: "fuzz trials failed", a
// speed-up below the one required): "Result: PASS (x)" becomes "Result: FAIL (extra; x)".
// Unchanged when `extra` is empty or the line fails already.
std::string fail_line(const std::string& line, const std::string& extra);
// JSON of an invariant report (inside Verdict::to_json, under "invariants").
nlohmann::json to_json(const compare::InvariantReport& r);

}  // namespace kerncap::replay
