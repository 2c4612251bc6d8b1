#pragma once
// A kernel's regimes: its launches grouped by launch signature — shape (grid, block, cluster,
// dynamic shared memory) and the scalar words of its parameters (sizes, strides, flags: the
// records' "p" lines, when the profiled run was told to sign the kernel's launches) — each
// with how many launches it stands for, its share of the kernel's GPU time, and the
// `extract --dispatch` index (for the kernel's exact mangled name) of its first launch, so
// that one capture per regime can be taken in a second run of the application.
//
// Pointer words are not in a signature (two launches on different buffers are one regime),
// nor the sizes of the memory they reach (an allocation's size says what the allocator
// handed out, not what the kernel reads). A word that takes more than kMaxWordValues values
// over the kernel's launches (a step counter, a seed, a length that grows at every decode
// step) is left out of the key and named in a note, so that it cannot split the kernel
// into one regime per launch. Launches without a signature (graph launches; kernels no
// pattern named) are grouped by shape alone.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "format/manifest.hpp"
#include "format/profile_records.hpp"
#include "format/regimes_index.hpp"

namespace kerncap::profile {

struct Regime {
  std::array<int32_t, 3> grid{}, block{};
  std::array<uint32_t, 3> cluster{};
  int32_t dynamic_shared = 0;
  uint64_t launches = 0;   // launches of this shape
  uint64_t time_ns = 0;    // their GPU time
  double share = 0;        // of the kernel's GPU time (0..1)
  uint64_t dispatch = 0;   // extract --dispatch of its first launch (exact-name match)
  uint64_t first_ns = 0;   // when that launch started (orders regimes as the application met them)
  bool signed_launches = false;             // its launches had a parameter signature
  std::vector<format::RegimeParam> params;  // the signature's words in the key, in buffer order
  bool operator==(const Regime&) const = default;
};

// More distinct values than this over one kernel's launches: the word is not a regime key.
inline constexpr size_t kMaxWordValues = 16;

// A word left out of the key: more than kMaxWordValues values, or (`address`) a value that
// looks like a host address (address_like): uninitialized padding or stack bytes beside a
// 32-bit field (PyTorch's offset calculators hold such words), or a host pointer. Its value
// means nothing from run to run, so it would split one regime in two and make the second
// run's launch look like another regime.
struct VolatileWord {
  uint32_t slot = 0, offset = 0, size = 0;
  bool address = false;
  bool operator==(const VolatileWord&) const = default;
};

// A 64-bit value in [2^40, 2^47): where a 64-bit process's host heap, stack and libraries
// live (device pointers are known to the driver and never reach a signature), and far above
// any size, stride or count a kernel is given.
bool address_like(uint64_t value);

struct RegimeSet {
  std::string mangled;
  int64_t pid = 0;                 // the process whose launches these are
  uint64_t launches = 0, time_ns = 0;  // the kernel's, in that process
  uint64_t app_time_ns = 0;        // every kernel's GPU time, in that process
  std::vector<Regime> regimes;     // the kept ones, by share (largest first)
  uint64_t dropped = 0;            // regimes beyond `max`
  uint64_t dropped_launches = 0, dropped_ns = 0;
  uint64_t uncounted = 0;          // launches extract does not count (device-launched, benchmark)
  size_t other_processes = 0;      // processes that also launched the kernel (not used)
  uint64_t unsigned_launches = 0;  // counted launches without a parameter signature
  std::vector<VolatileWord> volatile_words;
};

// The regimes of `mangled` in the first process (in the records' order) that launched it
// from the host, at most `max` (the largest shares; ties: the earlier). Empty `regimes`
// when no process launched it. Sampled records (profile --sample > 1) are refused by the
// caller: their dispatch indices and times are not per launch.
RegimeSet find_regimes(const std::vector<format::ProcessRecords>& processes, const std::string& mangled, size_t max);

// What the user should know about the signatures of a set: words left out of the key,
// launches without a signature. Empty when there is nothing to say.
std::vector<std::string> signature_notes(const RegimeSet& set);

// Whether a captured launch's parameter buffer (`slots`: its layout) holds the regime's
// scalar words: "" when it does, else the first that differs, in words ("param 2 = 4096 in
// the profiled run, 8192 in the captured one").
//
// Two kinds of difference do not make the launch another regime, since the launch at the
// same place in the application's launch order with the same shape is the same work:
// - a word that tells none of the set's regimes apart (`varies` false: one value over all
//   of them in the profiled run) — uninitialized bytes in a struct parameter (PyTorch's
//   TensorIterator offset calculators leave unused entries unset) differ from run to run;
// - a word whose upper four bytes are non-zero in both runs and differ (padding beside a
//   32-bit field, or a host address);
// - a word inside a struct parameter (a slot wider than 8 bytes): the application fills a
//   struct field by field, and what it leaves unset (padding, unused array entries) holds
//   whatever the stack held, so two regimes of one shape may even differ only there.
//   Whole scalar parameters (an int, a size_t) are always set by the caller, so they must
//   match.
// Such words are not a mismatch; when `unstable` is given they are appended to it (with the
// captured run's value) so the caller can drop them from the key. A word that does tell
// regimes apart and differs otherwise is a mismatch (the application launched in another
// order, or with other sizes).
std::string params_mismatch(const std::vector<format::RegimeParam>& params, const std::vector<format::ParamSlot>& slots,
                            const std::vector<uint8_t>& buffer,
                            std::vector<format::RegimeParam>* unstable = nullptr);

// The rule above: both values have non-zero upper halves, and those differ.
bool differs_between_runs_only(uint64_t profiled, uint64_t captured);

}  // namespace kerncap::profile
