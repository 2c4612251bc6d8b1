#include "replay/fuzz.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "replay/fuzz_outputs.hpp"
#include "replay/poison.hpp"
#include "replay/signature.hpp"

namespace kerncap::replay {
namespace fs = std::filesystem;
using compare::DType;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool fuzzable(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

uint16_t to_bf16(float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16); }

uint16_t to_half(float f) {  // round toward zero; enough for test inputs
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const uint32_t man = x & 0x7fffffu;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7bffu);  // largest finite
  if (exp <= 0) {                                               // denormal or zero
    if (exp < -10) return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | ((man | 0x800000u) >> (14 - exp)));
  }
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exp) << 10 | man >> 13);
}

void store(DType t, double v, uint8_t* p) {
  switch (t) {
    case DType::F64: std::memcpy(p, &v, 8); break;
    case DType::F32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::F16: {
      uint16_t h = to_half(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::BF16: {
      uint16_t h = to_bf16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    default: break;
  }
}

// Whether any bit of [first, end) of `m` is set (untouched blocks skipped whole).
bool any_set(const format::Bitmap& m, uint64_t first, uint64_t end) {
  return m.next_set(first) < std::min(end, m.bits());
}

}  // namespace

std::vector<FuzzInput> fuzz_inputs(const format::Footprint& f, const format::Manifest& m,
                                   const std::vector<TypedSpan>& signature) {
  std::vector<FuzzInput> out;
  for (const auto& s : signature) {
    if (!fuzzable(s.dtype)) continue;
    for (size_t i = 0; i < m.regions.size() && i < f.regions.size(); ++i) {
      const auto& r = m.regions[i];
      if (s.base < r.base || s.base >= r.base + r.size) continue;
      const auto& fp = f.regions[i];
      // An input: some of it is read, none of it written (an in-place buffer is an output).
      // Written first: an output's span (up to the next pointer, often most of a pool) is
      // written at its start and never read.
      const uint64_t b = s.base - r.base, e = std::min(r.size, b + s.size);
      const uint64_t wg = fp.written.granule(), rg = fp.read.granule();
      const bool written = any_set(fp.written, b / wg, (e + wg - 1) / wg);
      const bool read = !written && any_set(fp.read, b / rg, (e + rg - 1) / rg);
      if (read && !written) out.push_back({i, b, e, s.dtype});
    }
  }
  if (out.empty())
    input_error("--fuzz needs floating-point inputs the kernel reads and does not write (pointer parameters of "
                "type float*, double*, __half*, __nv_bfloat16* whose memory the footprint shows as read-only); "
                "this capture has none");
  return out;
}

double fuzz_value(uint64_t seed, uint64_t trial, uint64_t region, uint64_t index) {
  const uint64_t h = mix(mix(mix(seed) ^ trial) ^ (region << 48) ^ index);
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  const double sign = (h & 1) ? -1.0 : 1.0;
  switch ((h >> 1) % 20) {
    case 0:
    case 1: return 0.0;
    case 2: return sign * (1e3 + u * 3e4);                                 // large (fits fp16)
    case 3: return sign * std::numeric_limits<float>::denorm_min() * (1 + u * 1000);  // denormal
    default: return sign * u * 4.0;                                        // ordinary
  }
}

void apply_fuzz(const std::vector<FuzzInput>& inputs, const format::RegionFootprint& /*fp*/, uint64_t seed,
                uint64_t trial, size_t region, uint64_t offset, uint8_t* data, uint64_t n) {
  for (const auto& in : inputs) {
    if (in.region != region || in.end <= offset || in.begin >= offset + n) continue;
    const unsigned es = compare::dtype_size(in.dtype);
    // Whole elements of the input that lie inside this piece.
    uint64_t first = in.begin + (std::max(offset, in.begin) - in.begin + es - 1) / es * es;
    for (uint64_t at = first; at + es <= std::min(in.end, offset + n); at += es)
      store(in.dtype, fuzz_value(seed, trial, region, (at - in.begin) / es), data + (at - offset));
  }
}

std::string FuzzReport::line() const {
  if (pass())
    return fmt::format("Fuzz: PASS ({} trials, seed {}: {} float input(s), {} randomised per trial; the variant "
                       "matched the captured kernel within tolerance and wrote every byte it writes)",
                       trials, seed, inputs, human_bytes(input_bytes));
  const auto& f = failures.front();
  return fmt::format("Fuzz: FAIL ({} of {} trials; first: trial {} (seed {}), region {}{}: {})", failures.size(),
                     trials, f.trial, seed, f.region_id,
                     f.first_bad_offset ? fmt::format(", first bad byte offset {}", *f.first_bad_offset) : "",
                     f.summary);
}

nlohmann::json FuzzReport::to_json() const {
  nlohmann::json fails = nlohmann::json::array();
  for (const auto& f : failures) {
    nlohmann::json j = {{"trial", f.trial}, {"region", f.region_id}, {"summary", f.summary}};
    if (f.first_bad_offset) j["first_bad_offset"] = *f.first_bad_offset;
    fails.push_back(j);
  }
  return {{"result", pass() ? "PASS" : "FAIL"}, {"seed", seed},        {"trials", trials},
          {"inputs", inputs},                   {"input_bytes", input_bytes}, {"failures", fails},
          {"line", line()}};
}

namespace {

// A fresh private directory for the captured image's outputs, removed with everything in it:
// a predictable name in the shared temporary directory could be planted (a symlink) by
// another user.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kerncap-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      device_error(fmt::format("cannot create a temporary directory {}: {}", tmpl, std::strerror(errno)));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path file() const { return path_ / "outputs.bin"; }

 private:
  fs::path path_;
};

// What every trial shares: the inputs to randomise, the typed spans, the regions written.
struct Trials {
  const format::Footprint& f;
  uint64_t trials = 0, seed = 0;
  std::vector<FuzzInput> inputs;
  std::vector<TypedSpan> typed;
  std::vector<size_t> outputs;  // regions the kernel writes
};

Trials plan_trials(const Session& s, const format::Footprint& f, uint64_t trials, uint64_t seed, FuzzReport& rep) {
  Trials t{f, trials, seed, {}, {}, {}};
  const auto& m = s.capture().manifest;
  t.typed = signature_spans(m, s.capture().read(m.params_file, "parameter bytes"));
  t.inputs = fuzz_inputs(f, m, t.typed);
  for (const auto& in : t.inputs) rep.input_bytes += in.end - in.begin;
  rep.inputs = t.inputs.size();
  for (size_t i = 0; i < f.regions.size(); ++i)
    if (f.regions[i].written_bytes()) t.outputs.push_back(i);
  return t;
}

// Every trial of the image `s` launches: restore with `poison` in the write-only bytes and
// the trial's inputs, launch.
template <typename AfterLaunch>
void run_trials(Session& s, const Trials& t, uint8_t poison, AfterLaunch&& after) {
  const PoisonPlan plan = plan_poison(t.f, s.capture().manifest);
  uint64_t trial = 0;
  // What the filter changes: the poisoned bytes and the inputs (staged; the rest of a fill
  // stays a memset).
  FilterReach reach{poison_ranges(plan), std::nullopt};
  for (const FuzzInput& in : t.inputs) {
    if (reach.ranges.size() <= in.region) reach.ranges.resize(in.region + 1);
    reach.ranges[in.region].push_back({in.begin, in.end});
  }
  for (auto& rs : reach.ranges) rs = merge_ranges(std::move(rs));
  s.set_restore_filter({[&](size_t i, uint64_t off, uint8_t* d, uint64_t n) {
                          apply_poison(plan, i, off, d, n, poison);
                          apply_fuzz(t.inputs, t.f.regions[i], t.seed, trial, i, off, d, n);
                        },
                        std::move(reach)});
  for (trial = 0; trial < t.trials; ++trial) {
    s.restore();
    s.launch();
    after(trial);
  }
  s.set_restore_filter({});  // the filter refers to this frame
}

// The captured image's outputs of every trial, region after region, into `out`.
void record_captured(Session& s, const Trials& t, RecordedOutputs& out) {
  run_trials(s, t, 0xA5, [&](uint64_t) {
    for (size_t i : t.outputs) out.record(s, i);
  });
  out.finish();
}

// The variant's outputs of every trial against the captured image's, within tolerance.
void check_variant(Session& v, const Trials& t, RecordedOutputs& recorded, FuzzReport& rep) {
  const auto& m = v.capture().manifest;
  CompareSpec spec{.source = "fuzz"};
  spec.spans = t.typed;  // every typed span with its dtype's default tolerance
  // Another poison than the captured image's: outputs must not depend on it.
  run_trials(v, t, 0x5A, [&](uint64_t trial) {
    bool failed = false;
    for (size_t i : t.outputs) {
      const auto& r = m.regions[i];
      const std::vector<Piece> pieces = pieces_of(r, spec);
      const std::vector<compare::Result> results = recorded.compare_next(v, i, pieces);
      for (size_t k = 0; k < pieces.size(); ++k) {
        const auto& res = results[k];
        if (!res.pass() && !failed) {
          failed = true;
          FuzzTrialResult ft{trial, false, r.id, std::nullopt, compare::summary(res)};
          if (res.first_bad_offset) ft.first_bad_offset = *res.first_bad_offset + pieces[k].begin;
          rep.failures.push_back(ft);
        }
      }
    }
    log::info("fuzz trial {} of {}: {}", trial + 1, t.trials, failed ? "FAIL" : "ok");
  });
}

}  // namespace

FuzzReport fuzz_in_session(Session& s, const format::Footprint& f, uint64_t trials, uint64_t seed) {
  FuzzReport rep;
  rep.seed = seed;
  rep.trials = trials;
  TempDir tmp;
  const Session::Which was = s.active();
  const Session::RestoreFilter filter = s.restore_filter();
  // Whatever happens, the session runs its image again with its own restore filter.
  struct Back {
    Session& s;
    Session::Which was;
    const Session::RestoreFilter& filter;
    ~Back() {
      s.set_restore_filter(filter);
      try {
        s.use(was);
      } catch (...) {  // both images were loaded already: use() loads nothing here
      }
    }
  } back{s, was, filter};
  const Trials t = plan_trials(s, f, trials, seed, rep);
  s.use(Session::Which::Captured);
  RecordedOutputs outputs(tmp.file());
  record_captured(s, t, outputs);
  s.use(was);
  check_variant(s, t, outputs, rep);
  return rep;
}

}  // namespace kerncap::replay
