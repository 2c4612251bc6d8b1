#include "targets.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include <xxhash.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "format/region_bytes.hpp"
#include "format/window.hpp"
#include "inputs.hpp"
#include "reproducer/generator.hpp"
#include "reproducer/window_reproducer.hpp"
#include "../unit/scratch_capture.hpp"

namespace kerncap::fuzz {

namespace {

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spill(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

CaptureFiles read_tree(const fs::path& dir) {
  CaptureFiles files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return files;
}

void write_tree(const fs::path& dir, const CaptureFiles& files) {
  fs::create_directories(dir);
  for (const auto& [rel, bytes] : files) spill(dir / rel, bytes);
}

// --- code objects: cubin, fatbin, PTX ---------------------------------------------------

void prepare_code(const Seeds& s, Rng& rng, const fs::path& work) {
  Bytes b = s.code_objects[rng() % s.code_objects.size()];
  mutate_bytes(b, rng, s.code_objects);
  spill(work / "input.bin", b);
}

int run_code(const fs::path& work) {
  const Bytes b = slurp(work / "input.bin");
  return guarded([&] {
    (void)cubin::detect_kind(b);
    for (int sm : {0, 80, 90, 100}) {
      try {
        (void)cubin::parse_image(b, sm);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Internal) throw;
      }
    }
    (void)cubin::kernel_names(b);
  });
}

// --- the capture reader (src/format) ----------------------------------------------------

// The classes issue 38's outside fuzz run found and this fuzzer had not tried: a duplicated
// key, bytes after a NUL, huge AFTER run, parameter slot and stored run lists, an empty code
// image whose hash matches.
void issue38_class(CaptureFiles& files, Rng& rng) {
  Bytes& manifest = files["manifest.json"];
  std::string text(manifest.begin(), manifest.end());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  const size_t n = 1000 + rng() % 100000;
  switch (rng() % 6) {
    case 0: duplicate_key(text, rng); break;
    case 1: nul_bytes(text, rng); break;
    case 2: {  // n one-byte AFTER runs, apart (accepted) or some overlapping
      const bool overlap = rng() % 2;
      if (!j["regions"].is_array() || j["regions"].empty()) return;
      j["regions"][0]["size"] = 2 * n;
      if (j["regions"][0].contains("file")) files[j["regions"][0]["file"].get<std::string>()] = Bytes(2 * n, 1);
      j["regions"][0].erase("stored");
      j["regions"][0].erase("chunks");
      j["regions"][0]["file"] = "mem/0.bin";
      files["mem/0.bin"] = Bytes(2 * n, 1);
      nlohmann::json runs = nlohmann::json::array();
      for (size_t i = 0; i < n; ++i)
        runs.push_back({{"region", j["regions"][0]["id"]}, {"offset", overlap && i % 7 == 0 ? 0 : 2 * i}, {"size", 1},
                        {"file_offset", i}});
      j["after"]["runs"] = runs;
      files[j["after"]["file"].get<std::string>()] = Bytes(n, 2);
      text = j.dump();
      break;
    }
    case 3: {  // n parameter slots
      nlohmann::json slots = nlohmann::json::array();
      for (size_t i = 0; i < n; ++i) slots.push_back({{"offset", i % 8}, {"size", 1}});
      j["params"]["slots"] = slots;
      text = j.dump();
      break;
    }
    case 4: {  // n one-byte stored runs (a sparse region of a version 2 capture)
      if (!j["regions"].is_array() || j["regions"].empty() || !j["regions"][0].contains("file")) return;
      j["format_version"] = 2;
      j["regions"][0]["size"] = 2 * n;
      nlohmann::json stored = nlohmann::json::array();
      for (size_t i = 0; i < n; ++i) stored.push_back({2 * i, 1});
      j["regions"][0]["stored"] = stored;
      j["regions"][0].erase("xxh64");
      files[j["regions"][0]["file"].get<std::string>()] = Bytes(n, 3);
      text = j.dump();
      break;
    }
    default: {  // an empty code image whose hash matches
      if (!j["image"].is_object() || !j["image"]["file"].is_string()) return;
      files[j["image"]["file"].get<std::string>()] = {};
      j["image"]["xxh64"] = hex_addr(XXH3_64bits(nullptr, 0));
      text = j.dump();
      break;
    }
  }
  manifest.assign(text.begin(), text.end());
}

void prepare_reader(const Seeds& s, Rng& rng, const fs::path& work) {
  CaptureFiles files = s.captures[rng() % s.captures.size()];
  const fs::path dir = work / "out" / "capture";
  Bytes& manifest = files["manifest.json"];
  const uint64_t how = rng() % 12;
  if (how >= 10) {
    issue38_class(files, rng);  // instead of the edits below: they need a manifest that parses
  } else if (how < 6) {
    nlohmann::json j = nlohmann::json::parse(manifest.begin(), manifest.end());
    mutate_json(j, rng);
    std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (rng() % 10 == 0) deep_nesting(text, rng);
    manifest.assign(text.begin(), text.end());
  } else if (how < 8) {
    mutate_bytes(manifest, rng, {});
  } else {
    auto it = files.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng() % files.size()));
    mutate_bytes(it->second, rng, s.code_objects);
  }
  write_tree(dir, files);
  // OUT/capture as a link to another capture (prune rewrote that one through it).
  if (rng() % 16 == 0) {
    const fs::path other = work / "other" / "capture";
    fs::rename(dir, other.parent_path().string() + ".tmp");
    fs::create_directories(other.parent_path());
    fs::rename(other.parent_path().string() + ".tmp", other);
    fs::create_directory_symlink(other, dir);
    return;
  }
  // Sometimes a file becomes something else: a symlink out, a FIFO, a directory.
  if (rng() % 8 == 0) {
    auto it = files.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng() % files.size()));
    const fs::path victim = dir / it->first;
    fs::remove(victim);
    switch (rng() % 3) {
      case 0: fs::create_symlink(s.sentinel / "fifo", victim); break;
      case 1: fs::create_symlink(s.sentinel / "secret", victim); break;
      default: fs::create_directories(victim); break;
    }
  }
  // A window.json that is no file (every command asks whether a capture is a window first):
  // a directory, a FIFO, a link to the sentinel's FIFO or file.
  if (rng() % 16 == 0) {
    const fs::path w = dir / format::kWindowFile;
    switch (rng() % 4) {
      case 0: fs::create_directories(w); break;
      case 1: mkfifo(w.c_str(), 0600); break;
      case 2: fs::create_symlink(s.sentinel / "fifo", w); break;
      default: fs::create_symlink(s.sentinel / "secret", w); break;
    }
  }
}

int run_reader(const fs::path& work) {
  return guarded([&] {
    const format::Capture c = format::open_capture(work / "out");
    if (format::is_window_capture(c.dir)) (void)format::read_window(c.dir);
    (void)format::read_file(c.path(c.manifest.params_file));
    const Bytes image = format::read_file(c.path(c.manifest.image_file));
    try {
      (void)cubin::parse_image(image, c.manifest.cc_major * 10 + c.manifest.cc_minor);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Internal) throw;
    }
    if (format::footprint_exists(c.dir)) (void)format::read_footprint(c.dir);
    // BEFORE bytes through the one reader every command uses (files, chunks, pruned ranges).
    std::vector<uint8_t> buf(64 << 10);
    for (const auto& r : c.manifest.regions) {
      if (r.size > (uint64_t{1} << 20)) continue;
      format::RegionBytes in(c, r);
      for (uint64_t off = 0; off < r.size; off += buf.size())
        in.read_at(off, buf.data(), std::min<uint64_t>(buf.size(), r.size - off));
    }
  });
}

// --- the reproducer writer (src/reproducer) ---------------------------------------------
// The capture stays one the reader accepts; what varies is what the generator copies into
// the Makefile, README and compile.json: names, the command, the device, the CC.

void prepare_reproducer(const Seeds& s, Rng& rng, const fs::path& work) {
  CaptureFiles files = s.captures[rng() % s.captures.size()];
  Bytes& manifest = files["manifest.json"];
  nlohmann::json j = nlohmann::json::parse(manifest.begin(), manifest.end());
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0: j["kernel"]["mangled"] = hostile_string(rng); break;
      case 1: j["kernel"]["demangled"] = hostile_string(rng); break;
      case 2: j["process"]["command"] = hostile_string(rng); break;
      case 3: j["device"]["name"] = hostile_string(rng); break;
      case 4: j["launch"]["api"] = hostile_string(rng); break;
      case 5: j["image"]["kind"] = hostile_string(rng); break;
      default: {
        const int64_t cc[] = {0, 1, 9, -1, 2147483647, -2147483647 - 1, 214748364, 1000};
        j["device"]["cc"] = {cc[rng() % std::size(cc)], cc[rng() % std::size(cc)]};
        break;
      }
    }
  }
  const std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  manifest.assign(text.begin(), text.end());
  write_tree(work / "out" / "capture", files);
}

int run_reproducer(const fs::path& work) {
  return guarded([&] {
    source::Result none;
    none.summary = "no source (fuzzing)";
    (void)reproducer::generate_reproducer({work / "out", none, {}, "/opt/kerncap/bin/kerncap"});
  });
}

// --- the window's reproducer (src/reproducer/window_*.cpp) -------------------------------
// A window.json beside a capture the reader accepts: hostile kernel names, patterns, foreign
// examples and globals, extreme times and sizes, some documents JSON-mutated. What is written
// is then run where make is installed (`make -n` of every target, `make help` for real): a
// file the payloads create ("PWNED") is a finding, as an internal error or a crash is.

uint64_t window_fuzz_number(Rng& rng) {
  static const uint64_t kValues[] = {0, 1, 7, 1000, 4096, uint64_t{1} << 32, uint64_t{1} << 46, UINT64_MAX / 2,
                                     UINT64_MAX};
  return kValues[rng() % std::size(kValues)];
}

// Mostly within the reader's bounds (4 KiB patterns, 64 KiB names), so most windows reach the
// generator; one in four keeps its length.
std::string window_fuzz_string(Rng& rng) {
  std::string s = hostile_string(rng);
  if (rng() % 4) s.resize(std::min<size_t>(s.size(), 4000));
  return s;
}

void prepare_window_reproducer(const Seeds& s, Rng& rng, const fs::path& work) {
  CaptureFiles files = s.captures[rng() % s.captures.size()];
  format::Window w;
  w.from = rng() % 2 ? window_fuzz_string(rng) : "rms_norm";
  w.to = rng() % 2 ? window_fuzz_string(rng) : "silu";
  w.from_dispatch = window_fuzz_number(rng);
  w.stream = window_fuzz_number(rng);
  const size_t n = 1 + rng() % 24;
  for (size_t i = 0; i < n; ++i) {
    format::WindowOp op;
    const uint64_t kind = i == 0 ? 0 : rng() % 3;
    op.kind = kind == 0 ? format::WindowOp::Kind::Kernel
              : kind == 1 ? format::WindowOp::Kind::Memset
                          : format::WindowOp::Kind::CopyD2D;
    if (rng() % 2) op.in_app_ns = window_fuzz_number(rng);
    if (op.kind == format::WindowOp::Kind::Kernel) {
      op.mangled = rng() % 2 ? window_fuzz_string(rng) : std::string("_Z4gemmPKfS0_Pfi");
      op.image_kind = "cubin";
      op.image_hash = window_fuzz_number(rng);
      op.grid = {static_cast<uint32_t>(1 + rng() % 65536), 1, 1};
      op.shared_mem_bytes = static_cast<uint32_t>(rng() % 2 ? 0 : 49152);
      if (rng() % 4 == 0) op.uncaptured_globals = {window_fuzz_string(rng), window_fuzz_string(rng)};
    } else if (op.kind == format::WindowOp::Kind::Memset) {
      op.dst = window_fuzz_number(rng);
      op.element_size = 4;
      op.width = window_fuzz_number(rng) % ((uint64_t{1} << 44) + 1);
      if (rng() % 2) {
        op.height = 1 + rng() % 1024;
        op.pitch = op.width * op.element_size + rng() % 64;
      }
    } else {
      op.src = window_fuzz_number(rng);
      op.dst = window_fuzz_number(rng);
      op.bytes = window_fuzz_number(rng) % ((uint64_t{1} << 46) + 1);
    }
    w.ops.push_back(std::move(op));
  }
  if (rng() % 2) w.in_app_window_ns = window_fuzz_number(rng);
  if (rng() % 2) w.in_app_kernels_ns = window_fuzz_number(rng);
  w.foreign_ops = window_fuzz_number(rng);
  if (rng() % 2) w.foreign_examples = {window_fuzz_string(rng)};
  if (rng() % 2) {  // version 2: other streams, joined by an event record and a wait after it
    w.streams = static_cast<uint32_t>(2 + rng() % 3);
    for (uint32_t k = 0; k < w.streams; ++k) w.stream_handles.push_back(window_fuzz_number(rng));
    for (size_t i = 1; i < w.ops.size(); ++i) w.ops[i].stream = static_cast<uint32_t>(rng() % w.streams);
    w.events = 1;
    format::WindowOp rec, wait;
    rec.kind = format::WindowOp::Kind::EventRecord;
    rec.stream = static_cast<uint32_t>(rng() % w.streams);
    wait.kind = format::WindowOp::Kind::EventWait;
    wait.stream = static_cast<uint32_t>(rng() % w.streams);
    const size_t at = 1 + rng() % w.ops.size();
    w.ops.insert(w.ops.begin() + static_cast<std::ptrdiff_t>(at), rec);
    w.ops.insert(w.ops.begin() + static_cast<std::ptrdiff_t>(at + 1 + rng() % (w.ops.size() - at)), wait);
  }
  nlohmann::json j = format::to_json(w);
  if (w.streams == 1 && rng() % 4 == 0) {  // a window of the kerncap before streams (version 1)
    j["version"] = 1;
    for (const char* key : {"streams", "events", "stream_handles"}) j.erase(key);
    for (auto& op : j["ops"]) op.erase("stream");
  }
  if (rng() % 4 == 0) mutate_json(j, rng);
  const std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  files[format::kWindowFile].assign(text.begin(), text.end());
  write_tree(work / "out" / "capture", files);
}

int run_window_reproducer(const fs::path& work) {
  return guarded([&] {
    const fs::path out = work / "out";
    (void)reproducer::generate_window_reproducer({out, "/opt/kerncap/bin/kerncap"});
    if (std::system("make --version >/dev/null 2>&1") != 0) return;
    for (const char* target : {"-n run", "-n time", "-n validate", "-n info", "help"})
      (void)std::system(("cd '" + out.string() + "' && make -s " + target + " >/dev/null 2>&1").c_str());
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().filename().string().find("PWNED") != std::string::npos)
        fail(ErrorKind::Internal, "the window's Makefile ran a command from the capture: " + e.path().string());
  });
}

}  // namespace

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets = {
      {"cubin", prepare_code, run_code},
      {"reproducer", prepare_reproducer, run_reproducer},
      {"window", prepare_window_reproducer, run_window_reproducer},
      {"reader", prepare_reader, run_reader, 4},
  };
  static const std::vector<Target> all = [] {
    std::vector<Target> v = targets;
    add_input_targets(v);
    add_set_targets(v);
    add_window_file_targets(v);
    return v;
  }();
  return all;
}

Seeds load_seeds(const fs::path& fixture_dir, const fs::path& scratch, const fs::path& sentinel) {
  Seeds s;
  s.sentinel = sentinel;
  std::error_code ec;
  if (!fixture_dir.empty() && fs::is_directory(fixture_dir, ec))
    for (const auto& e : fs::directory_iterator(fixture_dir))
      if (e.is_regular_file() && e.file_size() < (4u << 20)) s.code_objects.push_back(slurp(e.path()));
  const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n ret;\n}\n";
  s.code_objects.emplace_back(ptx.begin(), ptx.end());
  // Captures as the unit tests write them, with a stand-in image and with real code objects.
  fs::remove_all(scratch);
  testing::write_small_capture(scratch, 1);
  CaptureFiles base = read_tree(scratch / "capture");
  s.captures.push_back(base);
  for (size_t i = 0; i < s.code_objects.size() && i < 4; ++i) {
    CaptureFiles c = base;
    c["image/00000000000000ab.cubin"] = s.code_objects[i];
    nlohmann::json j = nlohmann::json::parse(c["manifest.json"].begin(), c["manifest.json"].end());
    j["device"]["cc"] = {9, 0};
    j["image"]["xxh64"] = hex_addr(XXH3_64bits(s.code_objects[i].data(), s.code_objects[i].size()));
    const std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
    c["manifest.json"].assign(text.begin(), text.end());
    s.captures.push_back(std::move(c));
  }
  // Format version 3: region 0 in chunks (compressible, random and repeated windows).
  fs::remove_all(scratch);
  std::vector<uint8_t> data(16384);
  for (size_t i = 0; i < data.size(); ++i) data[i] = i < 4096 || i >= 8192 ? static_cast<uint8_t>(i % 5) : static_cast<uint8_t>(i * 2654435761u >> 7);
  testing::write_chunked_capture(scratch, data, {{0, 100}, {4096, 12288}});
  s.captures.push_back(read_tree(scratch / "capture"));
  fs::remove_all(scratch);
  return s;
}

}  // namespace kerncap::fuzz
