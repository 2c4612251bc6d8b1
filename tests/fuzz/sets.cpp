// The fuzz targets of regime sets (issue 38: every file a user can be handed): OUT/regimes.json
// ("regimes") and a set of sets, OUT/regime-kernels.json with one regime set per kernel
// directory ("regime-kernels"). Each input is a set as `kerncap extract --regimes` writes it
// (small captures as the unit tests write them), then its index mutated (tree, text or bytes;
// a directory named "..", an absolute path, a nested path) or its directories made hostile (a
// link to a set or a capture elsewhere, to the sentinel, a FIFO, a file). The run walks the set
// the way `kerncap validate OUT` does: the strict readers, every regime's directory resolved by
// the path the children take (cli::regime_dir), its capture opened, the set's verdict made.
// Beyond the fuzzer's checks, a resolved directory outside OUT is a finding.
#include <fstream>

#include <fmt/format.h>

#include "cli/validate_regimes.hpp"
#include "format/capture_dir.hpp"
#include "format/out_layout.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"
#include "inputs.hpp"

namespace kerncap::fuzz {

namespace {

void sets_write_tree(const fs::path& dir, const CaptureFiles& files) {
  for (const auto& [rel, bytes] : files) {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
  }
}

// A directory name an index could hold that must not lead out of OUT.
std::string hostile_dir_name(const fs::path& sentinel, Rng& rng) {
  const std::string names[] = {"..", ".", "../out", "/tmp", sentinel.string(), sentinel.parent_path().string(),
                               "00-k/../..", "a/b", "", ".hidden", std::string("00\0k", 4), "00-k/", "~", "00-k\n",
                               std::string(300, 'a')};
  return rng() % 4 ? names[rng() % std::size(names)] : hostile_string(rng);
}

// The directory `p` (absent or holding a set or a capture) made something else.
void hostile_dir(const fs::path& p, const fs::path& elsewhere, const fs::path& sentinel, Rng& rng) {
  std::error_code ec;
  fs::remove_all(p, ec);
  switch (rng() % 7) {
    case 0:
    case 1: fs::create_directory_symlink(elsewhere, p); break;  // a set or capture outside OUT
    case 2: fs::create_directory_symlink(sentinel, p); break;
    case 3: fs::create_directory_symlink("/", p); break;
    case 4: ::mkfifo(p.c_str(), 0600); break;
    case 5: spill_text(p, "not a directory\n"); break;
    default: break;  // missing
  }
}

format::RegimeParam random_param(uint32_t slot, Rng& rng) {
  format::RegimeParam p;
  p.slot = slot;
  p.offset = rng() % 4 == 0 ? 8 : 0;
  p.size = rng() % 2 ? 4 : 1 + rng() % 8;
  p.value = rng();
  if (p.size < 8) p.value &= (uint64_t{1} << (8 * p.size)) - 1;
  p.varies = rng() % 2;
  return p;
}

// A regime set as extract writes it into `out`, some of its regimes captured (the small
// capture), its index then mutated and its directories sometimes made hostile.
format::RegimesIndex write_regime_set(const fs::path& out, const fs::path& work, const Seeds& s, Rng& rng,
                                      bool mutate) {
  format::RegimesIndex idx;
  idx.mangled = "_Z10scaleShiftPKfPfif";
  idx.demangled = "scaleShift(float const*, float*, int, float)";
  idx.application = "./regimes";
  idx.pid = 42;
  const size_t n = 1 + rng() % 4;
  for (size_t i = 0; i < n; ++i) {
    format::RegimeEntry e;
    e.dir = fmt::format("{:02}-scaleShift", i);
    e.grid = {static_cast<int32_t>(1 + rng() % 65536), 1, 1};
    e.block = {static_cast<int32_t>(1 + rng() % 1024), 1, 1};
    e.launches = 1 + rng() % 1000;
    e.time_ns = rng() % 1000000;
    e.share = static_cast<double>(rng() % 1001) / 1000 / static_cast<double>(n);
    e.dispatch = rng() % 100;
    e.captured = rng() % 4 != 0;
    if (!e.captured) e.why = "never launched";
    if (rng() % 2)
      for (uint32_t slot = 2; slot < 2 + rng() % 4; ++slot) e.params.push_back(random_param(slot, rng));
    idx.launches += e.launches;
    idx.time_ns += e.time_ns;
    if (e.captured) sets_write_tree(out / e.dir / format::kCaptureDirName, s.captures[rng() % s.captures.size()]);
    idx.regimes.push_back(std::move(e));
  }
  idx.launches += rng() % 10;
  idx.time_ns += rng() % 1000;
  idx.app_time_ns = idx.time_ns * (1 + rng() % 4);
  nlohmann::json j = to_json(idx);
  if (mutate && rng() % 4 == 0) j["regimes"][rng() % n]["dir"] = hostile_dir_name(s.sentinel, rng);
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (mutate && rng() % 2) text = mutate_json_text(std::move(text), rng);
  spill_text(out / std::string(format::out::kRegimesIndex), text);
  if (!mutate) return idx;
  if (rng() % 4 == 0) {  // a regime's directory a link out of OUT (to a capture elsewhere), a FIFO, ...
    const fs::path elsewhere = work / "elsewhere" / fmt::format("{}", rng() % 1000);
    if (!fs::exists(elsewhere)) sets_write_tree(elsewhere / format::kCaptureDirName, s.captures[0]);
    hostile_dir(out / idx.regimes[rng() % n].dir, elsewhere, s.sentinel, rng);
  }
  maybe_replace_file(out / std::string(format::out::kRegimesIndex), s.sentinel, rng);
  return idx;
}

// Fails (an internal error: the fuzzer reports it) when `p` leads outside `out`.
void expect_inside(const fs::path& out, const fs::path& p) {
  std::error_code ec;
  const fs::path root = fs::canonical(out, ec);
  if (ec) return;
  const fs::path real = fs::weakly_canonical(p, ec);
  if (ec) return;
  const auto [r, _] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (r != root.end() || real == root)
    throw std::logic_error(fmt::format("{} leads outside OUT ({}) to {}", p.string(), out.string(), real.string()));
}

// One set judged as `kerncap validate OUT` does, each regime as its child would (`--regime
// PREFIX<dir>`): the regime's directory resolved, its capture opened. The verdicts stand in
// for the children's. Returns the regimes refused.
size_t walk_regime_set(const fs::path& root, const fs::path& set, const std::string& prefix) {
  const format::RegimesIndex idx = format::read_regimes(set);
  std::vector<replay::RegimeOutcome> outcomes;
  size_t refused = 0;
  for (const auto& e : idx.regimes) {
    (void)format::varying_params_text(e.params);
    if (!e.captured) {  // validate skips it; asked for by name, it is refused
      try {
        (void)cli::regime_dir(root, prefix + e.dir);
      } catch (const Error& err) {
        if (err.kind() == ErrorKind::Internal) throw;
      }
      continue;
    }
    try {
      const fs::path dir = cli::regime_dir(root, prefix + e.dir);
      expect_inside(root, dir);
      const format::Capture c = format::open_capture(dir);
      (void)format::read_file(c.path(c.manifest.params_file));
    } catch (const Error& err) {
      if (err.kind() == ErrorKind::Internal) throw;
      ++refused;
      continue;
    }
    nlohmann::json verdict = {{"result", e.share > 0.2 ? "PASS" : "FAIL"}, {"strength", "strong"}, {"line", e.why}};
    outcomes.push_back({e, std::move(verdict), "", e.share > 0 ? std::optional(0.5 + e.share) : std::nullopt});
  }
  for (const std::string name : {"..", "../out", "/tmp", "", ".", "a/../..", "00-scaleShift/.."}) {
    try {
      expect_inside(root, cli::regime_dir(root, prefix + name));
    } catch (const Error& err) {
      if (err.kind() == ErrorKind::Internal) throw;
    }
  }
  (void)replay::regime_verdict(idx, outcomes, 1.1, true).dump();
  (void)replay::regime_verdict(idx, outcomes, std::nullopt, false).dump();
  return refused;
}

// --- OUT/regimes.json ---------------------------------------------------------------------

void prepare_regimes(const Seeds& s, Rng& rng, const fs::path& work) {
  (void)write_regime_set(work / "out", work, s, rng, true);
}

int run_regimes(const fs::path& work) {
  return guarded([&] {
    const fs::path out = work / "out";
    if (!format::has_regimes(out)) input_error("no regimes.json");
    if (walk_regime_set(out, out, "")) input_error("a regime refused");
  });
}

// --- OUT/regime-kernels.json: one regime set per kernel -----------------------------------

void prepare_regime_kernels(const Seeds& s, Rng& rng, const fs::path& work) {
  const fs::path out = work / "out";
  format::RegimeKernels listing;
  listing.application = "./two_kernels";
  const size_t n = 1 + rng() % 3;
  for (size_t i = 0; i < n; ++i) {
    format::RegimeKernel k;
    k.dir = fmt::format("{:02}-kernel{}", i, i);
    const format::RegimesIndex idx = write_regime_set(out / k.dir, work, s, rng, rng() % 4 == 0);
    k.mangled = idx.mangled;
    k.demangled = idx.demangled;
    k.pid = idx.pid;
    k.launches = idx.launches;
    k.time_ns = idx.time_ns;
    k.app_time_ns = idx.app_time_ns;
    k.regimes = idx.regimes.size();
    for (const auto& e : idx.regimes) k.captured += e.captured;
    listing.kernels.push_back(std::move(k));
  }
  nlohmann::json j = to_json(listing);
  if (rng() % 4 == 0) j["kernels"][rng() % n]["dir"] = hostile_dir_name(s.sentinel, rng);
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (rng() % 2) text = mutate_json_text(std::move(text), rng);
  const fs::path index = out / std::string(format::out::kRegimeKernelsIndex);
  spill_text(index, text);
  if (rng() % 4 == 0) {  // a kernel's set a link to a set elsewhere, the sentinel, a FIFO, ...
    const fs::path elsewhere = work / "elsewhere-set";
    if (!fs::exists(elsewhere)) (void)write_regime_set(elsewhere, work, s, rng, false);
    hostile_dir(out / listing.kernels[rng() % n].dir, elsewhere, s.sentinel, rng);
  }
  maybe_replace_file(index, s.sentinel, rng);
}

int run_regime_kernels(const fs::path& work) {
  return guarded([&] {
    const fs::path out = work / "out";
    if (!format::has_regime_kernels(out)) input_error("no regime-kernels.json");
    const format::RegimeKernels listing = format::read_regime_kernels(out);
    size_t refused = 0;
    for (const auto& k : listing.kernels) {
      try {
        // The set as validate_regime_kernels reads it (cli/validate_regimes.cpp).
        const fs::path set = format::index_subdir(out, k.dir, "kernel set");
        expect_inside(out, set);
        refused += walk_regime_set(out, set, k.dir + "/");
      } catch (const Error& err) {
        if (err.kind() == ErrorKind::Internal) throw;
        ++refused;
      }
    }
    if (refused) input_error("a kernel's set or regime refused");
  });
}

}  // namespace

void add_set_targets(std::vector<Target>& out) {
  out.push_back({"regimes", prepare_regimes, run_regimes, 2});
  out.push_back({"regime-kernels", prepare_regime_kernels, run_regime_kernels, 3});
}

}  // namespace kerncap::fuzz
