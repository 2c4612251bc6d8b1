#include "inputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/profile_targets.hpp"
#include "format/kerncap_toml.hpp"
#include "format/out_layout.hpp"
#include "format/profile_records.hpp"
#include "replay/compare_spec.hpp"
#include "serve/protocol.hpp"
#include "source/locate_rules.hpp"
#include "../unit/scratch_capture.hpp"

namespace kerncap::fuzz {

namespace {

std::string slurp_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string& pick(const std::vector<std::string>& v, Rng& rng) { return v[rng() % v.size()]; }

}  // namespace

void spill_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

// A JSON text mutated as a tree (when it parses), as text (issue 38's duplicated keys and
// NUL bytes, deep nesting) or as bytes.
std::string mutate_json_text(std::string text, Rng& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
    case 2: {
      // Not a text already nested deep (records mutate a line more than once): the tree's
      // copies recurse, and 200,000 levels overflowed the fuzzer's own stack.
      if (std::count(text.begin(), text.end(), '[') + std::count(text.begin(), text.end(), '{') > 5000) break;
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) break;
      mutate_json(j, rng);
      text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      break;
    }
    case 3: duplicate_key(text, rng); break;
    case 4: nul_bytes(text, rng); break;
    case 5: deep_nesting(text, rng); break;
    default: {
      Bytes b(text.begin(), text.end());
      mutate_bytes(b, rng, {});
      text.assign(b.begin(), b.end());
      break;
    }
  }
  return text;
}

// Sometimes the file a command reads is not a file: a link out of the directory (to the
// sentinel's secret or FIFO, or to /dev/zero), a FIFO, a directory, or a huge sparse file.
void maybe_replace_file(const fs::path& p, const fs::path& sentinel, Rng& rng) {
  if (rng() % 6) return;
  fs::remove(p);
  switch (rng() % 6) {
    case 0: fs::create_symlink(sentinel / "secret", p); break;
    case 1: fs::create_symlink(sentinel / "fifo", p); break;
    case 2: fs::create_symlink("/dev/zero", p); break;
    case 3: ::mkfifo(p.c_str(), 0600); break;
    case 4: fs::create_directories(p); break;
    default:
      spill_text(p, "#");
      fs::resize_file(p, uint64_t{1} << (21 + rng() % 10));  // 2 MiB .. 1 GiB, sparse
      break;
  }
}

namespace {

// --- OUT/kerncap.toml and OUT/compare.json: read by lint and by every judge --------------

void prepare_outfiles(const Seeds& s, Rng& rng, const fs::path& work) {
  const fs::path out = work / "out";
  testing::write_small_capture(out);
  const TextSeeds& t = text_seeds();
  std::string toml = pick(t.tomls, rng);
  mutate_toml(toml, rng);
  spill_text(out / format::kKerncapTomlName, toml);
  maybe_replace_file(out / format::kKerncapTomlName, s.sentinel, rng);
  if (rng() % 2) {
    const fs::path spec = out / format::out::kCompareSpec;
    spill_text(spec, mutate_json_text(pick(t.compare_specs, rng), rng));
    maybe_replace_file(spec, s.sentinel, rng);
  }
}

int run_outfiles(const fs::path& work) {
  format::Manifest m;  // the small capture's one region, which the spans name
  m.regions = {{0, format::MemKind::Device, 0x7f0000000000ull, 256, "mem/0.bin", 0, ""}};
  return guarded([&] {
    int refused = 0;
    try {
      (void)format::load_kerncap_toml(work / "out");
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Internal) throw;
      ++refused;
    }
    (void)replay::default_spec(work / "out" / "capture", m);
    if (refused) input_error("kerncap.toml refused");
  });
}

// --- kerncap locate --rules FILE -----------------------------------------------------------

void prepare_locate(const Seeds&, Rng& rng, const fs::path& work) {
  std::string rules = pick(text_seeds().locate_rules, rng);
  mutate_toml(rules, rng);
  spill_text(work / "rules.toml", rules);
}

int run_locate(const fs::path& work) {
  return guarded([&] { (void)source::load_locate_rules({(work / "rules.toml").string()}); });
}

// --- extract --top N --from profile.json ----------------------------------------------------

void prepare_profile(const Seeds& s, Rng& rng, const fs::path& work) {
  std::string text = pick(text_seeds().profiles, rng);
  if (rng() % 10 == 0) {  // a huge kernel list
    const size_t n = 1000 + rng() % 200000;
    std::string list;
    list.reserve(n * 40);
    for (size_t i = 0; i < n; ++i)
      list += (i ? "," : "") + std::string("{\"rank\":") + std::to_string(rng() % 4 ? i + 1 : 1) + ",\"name\":\"_Z" +
              std::to_string(i) + "v\"}";
    text = "{\"format\":\"kerncap-profile\",\"version\":1,\"kernels\":[" + list + "]}";
  }
  text = mutate_json_text(std::move(text), rng);
  spill_text(work / "profile.json", text);
  maybe_replace_file(work / "profile.json", s.sentinel, rng);
}

int run_profile(const fs::path& work) {
  return guarded([&] {
    (void)extract::top_kernels_from_file(work / "profile.json", 3);
  });
}

// --- kerncap serve: one request line in, one response line back -----------------------------

void prepare_serve(const Seeds&, Rng& rng, const fs::path& work) {
  std::string line = pick(text_seeds().serve_lines, rng);
  if (rng() % 8 == 0) line.insert(line.size() - 1, ",\"big\":\"" + std::string(rng() % (128 << 10), 'x') + "\"");
  spill_text(work / "line.json", mutate_json_text(std::move(line), rng));
}

int run_serve(const fs::path& work) {
  const std::string line = slurp_text(work / "line.json");
  // Both directions; what decode accepts, encode writes and decode reads back the same.
  int refused = 0;
  const int req = guarded([&] {
    const serve::Request r = serve::decode_request(line);
    const serve::Request back = serve::decode_request(serve::encode(r));
    if (back.op != r.op || back.cubin != r.cubin || back.options != r.options)
      throw std::logic_error("a request does not survive encode + decode");
  });
  const int resp = guarded([&] {
    const serve::Response r = serve::decode_response(line);
    const serve::Response back = serve::decode_response(serve::encode(r));
    if (back.ok != r.ok || back.evaluation != r.evaluation || back.server != r.server)
      throw std::logic_error("a response does not survive encode + decode");
  });
  for (int rc : {req, resp}) {
    if (rc == kInternal) return kInternal;
    refused += rc == kRefused;
  }
  return refused == 2 ? kRefused : kAccepted;
}

// --- the profile record files (profile-<pid>.jsonl), "p" lines included ---------------------
// Read by `kerncap extract --regimes` and every command that takes a profile directory; the
// parameter signature lines key the regimes.

// A record file as libkerncap writes it: kernels, a memcpy, parameter signatures joined to
// their launches by correlation id, a sampled run, the end.
std::string record_seed_text(const fs::path& scratch) {
  fs::create_directories(scratch);
  format::RecordWriter w;
  format::ProcessInfo info;
  info.pid = 4242;
  info.ppid = 1;
  info.exe = "/bin/app";
  info.cmdline = {"app", "--flag"};
  if (!w.open(scratch, info)) return "";
  w.device({0, "NVIDIA H200", 9, 0, 132, uint64_t{141} << 30});
  const std::vector<format::ScalarWord> big = {{2, 0, 4, 4096}, {3, 0, 4, 0x3f000000}, {5, 8, 8, ~uint64_t{0}}};
  const std::vector<format::ScalarWord> small = {{2, 0, 4, 64}, {3, 0, 1, 1}};
  w.params("_Z4normPfi", 11, big);
  w.params("_Z4normPfi", 12, small);
  w.params("_Z4normPfi", 99, small);
  for (uint32_t corr : {11u, 12u, 13u}) {
    format::KernelRecord k;
    k.start_ns = 100 * corr;
    k.end_ns = 100 * corr + 50;
    k.grid = {4, 2, 1};
    k.block = {128, 1, 1};
    k.correlation = corr;
    k.graph_id = corr == 13 ? 3 : 0;
    w.kernel("_Z4normPfi", k);
  }
  w.memop({false, "HtoD", 4096, 1, 2, 7, 0, 1, 10, 0});
  w.benchmark_call(12);
  w.runs({{w.name_id("_Z4normPfi"), 3, 11, 13, false}});
  w.finish("exit");
  std::string text;
  for (const auto& e : fs::directory_iterator(scratch)) text += slurp_text(e.path());
  fs::remove_all(scratch);
  return text;
}

std::string hostile_p_line(Rng& rng) {
  const size_t n = rng() % 8 == 0 ? 60 + rng() % 100000 : rng() % 70;
  const uint64_t values[] = {0, 1, 8, 9, 255, 256, 32763, 32764, UINT32_MAX, uint64_t{1} << 32, UINT64_MAX};
  std::string words;
  for (size_t i = 0; i < n; ++i)
    words += fmt::format("{}[{},{},{},{}]", i ? "," : "", rng() % 2 ? i : values[rng() % std::size(values)],
                         rng() % 4 ? 0 : values[rng() % std::size(values)], rng() % 2 ? 4 : values[rng() % std::size(values)],
                         values[rng() % std::size(values)]);
  return fmt::format("{{\"t\":\"p\",\"n\":{},\"c\":{},\"w\":[{}]}}", rng() % 3, values[rng() % std::size(values)],
                     words);
}

void prepare_records(const Seeds& s, Rng& rng, const fs::path& work) {
  static const std::string seed = record_seed_text(work / "record-seed");
  std::vector<std::string> lines;
  {
    std::istringstream in(seed);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !lines.empty(); ++e) {
    const size_t at = rng() % lines.size();
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: lines[at] = mutate_json_text(lines[at], rng); break;
      case 3: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at ? at : 1), hostile_p_line(rng)); break;
      case 4: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[rng() % lines.size()]); break;
      case 5: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at)); break;
      case 6: lines[at].resize(rng() % (lines[at].size() + 1)); break;  // cut mid-line
      default: {
        Bytes b(lines[at].begin(), lines[at].end());
        mutate_bytes(b, rng, {});
        lines[at].assign(b.begin(), b.end());
        break;
      }
    }
  }
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  if (rng() % 4 == 0) text.pop_back();  // the last line without its newline (a killed writer)
  const fs::path file = work / "records" / "profile-4242.jsonl";
  spill_text(file, text);
  if (rng() % 4 == 0) spill_text(work / "records" / "profile-7.jsonl", seed);
  maybe_replace_file(file, s.sentinel, rng);
}

int run_records(const fs::path& work) {
  return guarded([&] {
    for (const auto& p : format::read_records(work / "records"))
      for (const auto& k : p.kernels) {
        if (k.signature >= static_cast<int32_t>(p.signatures.size()) || k.signature < -1)
          throw std::logic_error("a kernel record's signature index is out of range");
        if (k.name_id >= p.names.size()) throw std::logic_error("a kernel record's name id is out of range");
      }
  });
}

}  // namespace

const TextSeeds& text_seeds() {
  static const TextSeeds seeds = [] {
    TextSeeds t;
    t.tomls = {format::default_kerncap_toml(),
               "[tolerances]\nfp32 = { atol = 1e-3, rtol = 1e-3 }\n[invariants]\nno_nan = true\n"
               "[artifact_checks]\nmax_registers = 64\nrequired_patterns = [\"HGMMA\"]\n[timing]\nmin_speedup = 1.2\n",
               "[timing]\nmin_speedup = 2\n", ""};
    t.compare_specs = {
        R"({"dtype": "fp32", "atol": 0.001, "rtol": 0.001})",
        R"({"spans": [{"base": "0x7f0000000000", "size": 16, "dtype": "fp16"}, {"base": "0x7f0000000010", "size": 64, "dtype": "i32"}]})",
        R"({"dtype": "bf16", "spans": [{"base": 139637976727552, "size": 256, "dtype": "fp32", "atol": 1, "rtol": null}]})",
    };
    t.locate_rules = {source::builtin_rules_text(),
                      "[[rule]]\nname = \"mine\"\nmatch = \"^my_kernel\"\nstrategy = \"cxx\"\nunder = [\"src\"]\n"
                      "[[test]]\nfile = \"src/.*\\\\.cu$\"\ncommand = \"make test_{kernel}\"\n[ops]\nMyFunctor = \"add\"\n"};
    t.profiles = {
        R"J({"format":"kerncap-profile","version":1,"kernels":[{"rank":1,"name":"_Z1av","demangled":"a()","in_graph":false,"total_ns":5},{"rank":2,"name":"_Z1bv","demangled":"b()","in_graph":true,"total_ns":3}]})J",
        R"J({"format":"kerncap-profile","version":1,"kernels":[]})J",
    };
    serve::Request ping;
    serve::Request eval;
    eval.op = serve::Op::Evaluate;
    eval.cubin = "/tmp/variant.cubin";
    eval.image = "variant.cubin";
    eval.options = {{"fuzz", 3}, {"tolerance", {"0:atol=1,rtol=0"}}, {"time", true}};
    serve::Response ok;
    ok.evaluation = {{"verdict", "PASS"}, {"regions", nlohmann::json::array({{{"id", 0}, {"match", true}}})}};
    serve::Response bad;
    bad.ok = false;
    bad.error = serve::WireError{"input", "no such file"};
    serve::Response pong;
    pong.server = {{"pid", 1}, {"capture", "/out/capture"}};
    t.serve_lines = {serve::encode(ping), serve::encode(eval), serve::encode(ok), serve::encode(bad), serve::encode(pong)};
    return t;
  }();
  return seeds;
}

void add_input_targets(std::vector<Target>& out) {
  out.push_back({"outfiles", prepare_outfiles, run_outfiles});
  out.push_back({"locate", prepare_locate, run_locate});
  out.push_back({"profile", prepare_profile, run_profile, 4});
  out.push_back({"serve", prepare_serve, run_serve});
  out.push_back({"records", prepare_records, run_records, 3});
}

}  // namespace kerncap::fuzz
