#pragma once
// Fuzzing a variant: N trials in which the floating-point inputs the kernel reads (bytes the
// footprint says are read and never written, typed by the kernel's signature) are replaced
// by random values — zeros, large magnitudes, denormals, ordinary numbers — and the captured
// image and the variant run on the same inputs. Their outputs must agree within the element
// types' default tolerance. The captured image runs with one poison in the bytes it writes
// without reading and the variant with another, so a variant that leaves an output byte
// unwritten, or whose output depends on the old contents of its outputs, fails too. This
// closes what one captured input cannot: stale outputs, partial writes, results that only
// fit the captured data.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

struct FuzzInput {
  size_t region = 0;            // manifest index
  uint64_t begin = 0, end = 0;  // region-relative bytes of one typed input span
  compare::DType dtype = compare::DType::F32;
};

// The float inputs to fuzz; Error(Input) "no floating-point inputs ..." when there are none.
std::vector<FuzzInput> fuzz_inputs(const format::Footprint& f, const format::Manifest& m,
                                   const std::vector<TypedSpan>& signature);

// The value written at element `index` of an input in trial `trial`: order-independent, so
// every staged piece of a restore gets the same bytes.
double fuzz_value(uint64_t seed, uint64_t trial, uint64_t region, uint64_t index);

// A restore filter body: randomises the inputs inside this piece.
void apply_fuzz(const std::vector<FuzzInput>& inputs, const format::RegionFootprint& fp, uint64_t seed, uint64_t trial,
                size_t region, uint64_t offset, uint8_t* data, uint64_t n);

struct FuzzTrialResult {
  uint64_t trial = 0;
  bool pass = true;
  uint32_t region_id = 0;
  std::optional<uint64_t> first_bad_offset;
  std::string summary;
};

struct FuzzReport {
  uint64_t seed = 0, trials = 0, inputs = 0, input_bytes = 0;
  std::vector<FuzzTrialResult> failures;
  bool pass() const { return failures.empty(); }
  std::string line() const;
  nlohmann::json to_json() const;
};

// The fuzz trials (the judge's `fuzz`), in one open session: the captured image, then the image the session runs
// now (the captured one again when no variant is active). Leaves the session running that
// image with its own restore filter, its memory as the last trial left it (restore next).
FuzzReport fuzz_in_session(Session& s, const format::Footprint& f, uint64_t trials, uint64_t seed);

}  // namespace kerncap::replay
