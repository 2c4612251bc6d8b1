// The fuzz targets of the files a window validation reads besides window.json (issue 38: every
// file a user can be handed): the capture's window_liveout.json ("liveout"), and the launches
// file of `kerncap window validate --replace FROM..TO=launches.json` with its spec ("replace").
// Seeds are written the way the unit tests write valid ones, then mutated; the files are
// sometimes something else (a link out, a FIFO, a directory, a huge sparse file). Beyond the
// fuzzer's checks: a window_liveout.json that is present but not read (a directory, a FIFO, a
// link) is a finding, as issue 38 counted a directory named kerncap.toml silently ignored.
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "format/window.hpp"
#include "format/window_liveout.hpp"
#include "inputs.hpp"
#include "replay/window_replacement.hpp"

namespace kerncap::fuzz {

namespace {

// --- CAPTURE/window_liveout.json ----------------------------------------------------------

void prepare_liveout(const Seeds& s, Rng& rng, const fs::path& work) {
  const fs::path dir = work / "capture";
  fs::create_directories(dir);
  format::WindowLiveOut w;
  w.horizon = rng() % 2 ? 64 : rng();
  w.launches_observed = rng() % 100;
  w.ended = rng() % 2 ? "horizon" : "application ended";
  const size_t n = rng() % 32 == 0 ? 1000 + rng() % 60000 : rng() % 6;  // a long list (~8 MB)
  for (size_t i = 0; i < n; ++i)
    w.regions.push_back({static_cast<uint32_t>(rng() % 16 == 0 ? rng() : i), rng() % 2 == 0,
                         rng() % 4 || n > 100 ? fmt::format("launch {} of _Z4gemmPKfS0_Pfi (parameter word at offset 8)", i)
                                              : hostile_string(rng)});
  for (auto& r : w.regions) {  // version 2: where each region was reached, up to past the bound
    if (n > 100 || rng() % 2) continue;
    const size_t reads = rng() % 8 == 0 ? 250 + rng() % 20 : rng() % 4;
    const uint64_t edges[] = {0, 1, 4096, uint64_t{1} << 40, UINT64_MAX};
    for (size_t k = 0; k < reads; ++k)
      r.reads.emplace_back(rng() % 2 ? 16 * k : edges[rng() % std::size(edges)], rng() % 2 ? 1 : edges[rng() % std::size(edges)]);
    r.reads_complete = rng() % 2;
  }
  if (rng() % 8 == 0) w.version = 1;  // a file of the kerncap before reads
  std::string text = to_json(w).dump(n > 100 ? -1 : 1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (rng() % 2) text = mutate_json_text(std::move(text), rng);
  spill_text(dir / format::kWindowLiveOutFile, text);
  maybe_replace_file(dir / format::kWindowLiveOutFile, s.sentinel, rng);
}

int run_liveout(const fs::path& work) {
  return guarded([&] {
    const fs::path dir = work / "capture";
    const auto w = format::read_window_liveout(dir);
    std::error_code ec;
    if (!w) {
      if (fs::symlink_status(dir / format::kWindowLiveOutFile, ec).type() != fs::file_type::not_found)
        throw std::logic_error("window_liveout.json is there but was ignored (read as absent)");
      return;
    }
    for (const auto& r : w->regions) (void)w->find(r.id);
    (void)w->live();
    (void)to_json(*w).dump();
  });
}

// --- window validate --replace FROM..TO=launches.json -------------------------------------

format::Manifest replace_manifest() {
  format::Manifest m;
  format::Region a;
  a.id = 3;
  a.base = 0x1000;
  a.size = 4096;
  format::Region b = a;
  b.id = 7;
  b.base = 0x9000;
  m.regions = {a, b};
  return m;
}

const char* const kReplaceSeeds[] = {
    R"({"launches": [{"image": "fused.cubin", "kernel": "fused", "grid": [4, 1, 1], "block": [256, 1, 1],
       "args": [{"region": 3}, {"region": 7, "offset": 16}, {"i32": -2}, {"f32": 0.5}, {"u64": 9}]}]})",
    R"({"launches": [{"op": 2}, {"image": "/opt/fused.cubin", "kernel": "_Z5fusedPfS_i", "grid": [2147483647, 65535, 1],
       "block": [1024, 1, 1], "shared_mem_bytes": 49152, "args": [{"i64": -1}, {"u32": 4294967295}, {"f64": 1e-6}]},
       {"op": 3}]})",
    R"({"launches": [{"image": "a.cubin", "kernel": "a", "grid": [1, 1, 1], "block": [32, 1, 1], "args": []},
       {"image": "b.cubin", "kernel": "b", "grid": [1, 1, 1], "block": [32, 1, 1], "args": [{"region": 3, "offset": 4096}]}]})",
};

void prepare_replace(const Seeds& s, Rng& rng, const fs::path& work) {
  std::string text = kReplaceSeeds[rng() % std::size(kReplaceSeeds)];
  if (rng() % 10 == 0) {  // many launches or many arguments, past the bounds
    nlohmann::json j = nlohmann::json::parse(text);
    const size_t n = 100 + rng() % 3000;
    auto& list = rng() % 2 || !j["launches"][0].contains("args") ? j["launches"] : j["launches"][0]["args"];
    if (list.empty()) list.push_back({{"u32", 1}});
    for (size_t i = 0; i < n; ++i) list.push_back(list.back());
    text = j.dump();
  }
  if (rng() % 4) text = mutate_json_text(std::move(text), rng);
  spill_text(work / "launches.json", text);
  maybe_replace_file(work / "launches.json", s.sentinel, rng);
  // The spec: mostly a good range of the 6-operation window, sometimes a hostile one.
  const std::string specs[] = {"1..3", "0..5", "2..2", "3..1", "0..6", "1-3", "..", "1..", "999999999..999999999",
                                "18446744073709551616..1", "-1..2", " 1..2", "1..3..4", "0x1..2"};
  std::string spec = rng() % 3 ? specs[rng() % 3] : specs[rng() % std::size(specs)];
  spec += "=";
  if (rng() % 16) spec += rng() % 2 ? "launches.json" : (work / "launches.json").string();
  else spec += rng() % 2 ? (s.sentinel / "fifo").string() : "";
  spill_text(work / "spec.txt", spec);
}

int run_replace(const fs::path& work) {
  return guarded([&] {
    std::ifstream in(work / "spec.txt", std::ios::binary);
    const std::string spec{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    format::Window w;
    w.ops.resize(6);
    const format::Manifest m = replace_manifest();
    const replay::Replacement r = replay::read_replacement(spec, w, m);
    for (const auto& l : r.launches) {
      std::vector<format::ParamSlot> slots;
      (void)replay::pack_replacement_args(l.args, [](uint32_t id) { return 0x1000ull * id; }, &slots);
    }
  });
}

}  // namespace

void add_window_file_targets(std::vector<Target>& out) {
  out.push_back({"liveout", prepare_liveout, run_liveout, 8});
  out.push_back({"replace", prepare_replace, run_replace});
}

}  // namespace kerncap::fuzz
