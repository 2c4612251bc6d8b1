#include "format/regimes_index.hpp"

#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "format/out_layout.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace {

constexpr std::string_view kFile = out::kRegimesIndex;
constexpr uint32_t kMaxParamOrdinal = 32763;  // a parameter buffer holds at most 32764 bytes
constexpr uint64_t kMaxIndexBytes = 8 << 20;  // 64 regimes of 64 parameter words each: under 1 MiB

nlohmann::json dims(const auto& d) { return nlohmann::json::array({d[0], d[1], d[2]}); }

template <typename T, typename Get>
std::array<T, 3> read_dims(const JsonField& f, Get get) {
  if (f.array_size(3) != 3) f.fail("must hold exactly 3 numbers");
  return {get(f.elem(0)), get(f.elem(1)), get(f.elem(2))};
}

// A regime's "params": strict, at most kMaxRegimeParams words in buffer order, each a
// possible word of a parameter buffer.
std::vector<RegimeParam> read_params(const JsonField& list) {
  std::vector<RegimeParam> out;
  const size_t n = list.array_size(kMaxRegimeParams);
  for (size_t i = 0; i < n; ++i) {
    const JsonField f = list.elem(i);
    f.object();
    RegimeParam p;
    p.slot = f.at("slot").u32(0, kMaxParamOrdinal);
    p.offset = f.at("offset").u32(0, kMaxParamOrdinal);
    p.size = f.at("size").u32(1, 8);
    p.value = f.at("value").u64();
    p.varies = f.at("varies").boolean();
    if (p.size < 8 && p.value >> (8 * p.size) != 0) f.at("value").fail(fmt::format("does not fit in {} bytes", p.size));
    if (!out.empty() && std::tie(p.slot, p.offset) <= std::tie(out.back().slot, out.back().offset))
      f.fail("is out of buffer order (or repeats a word)");
    out.push_back(p);
  }
  return out;
}

}  // namespace

std::string index_dir_name(const JsonField& f) {
  std::string s = f.str(256);
  if (s.empty() || s.front() == '.' || s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                           "0123456789._-") != std::string::npos)
    f.fail("must be one directory name inside OUT (letters, digits, '.', '-', '_'; not starting with '.')");
  return s;
}

std::filesystem::path index_subdir(const std::filesystem::path& out, const std::string& dir, const std::string& what) {
  const std::filesystem::path p = out / dir;
  std::error_code ec;
  const auto type = std::filesystem::symlink_status(p, ec).type();
  if (type == std::filesystem::file_type::symlink)
    input_error(fmt::format("{} (the {} the index lists) is a symbolic link (to {}); kerncap reads the sets inside "
                            "OUT and does not follow a link out of it: extract the set again, or name that "
                            "directory itself",
                            p.string(), what, std::filesystem::read_symlink(p, ec).string()));
  if (type == std::filesystem::file_type::not_found)
    input_error(fmt::format("{}: no such directory (the {} the index lists); the set is incomplete: extract it again",
                            p.string(), what));
  if (type != std::filesystem::file_type::directory)
    input_error(fmt::format("{} (the {} the index lists) is not a directory; the set is damaged: extract it again",
                            p.string(), what));
  return p;
}

std::string param_word_text(const RegimeParam& p) {
  std::string name = p.offset ? fmt::format("param {}+{}", p.slot, p.offset) : fmt::format("param {}", p.slot);
  // Types are unknown: small values read as integers (signed where the word's top bit says so),
  // others as bits.
  const bool negative = p.size >= 1 && p.size <= 8 && (p.value >> (8 * p.size - 1)) & 1;
  const int64_t as_signed = negative && p.size < 8 ? static_cast<int64_t>(p.value | (~uint64_t{0} << (8 * p.size)))
                                                   : static_cast<int64_t>(p.value);
  if (p.value < (uint64_t{1} << 32) && !negative) return fmt::format("{} = {}", name, p.value);
  if (negative && as_signed > -(int64_t{1} << 24)) return fmt::format("{} = {}", name, as_signed);
  return fmt::format("{} = {:#x}", name, p.value);
}

std::string varying_params_text(const std::vector<RegimeParam>& params) {
  std::string s;
  for (const RegimeParam& p : params)
    if (p.varies) s += (s.empty() ? "" : ", ") + param_word_text(p);
  return s;
}

double RegimesIndex::coverage() const {
  uint64_t ns = 0;
  for (const auto& r : regimes)
    if (r.captured) ns += r.time_ns;
  return time_ns ? static_cast<double>(ns) / static_cast<double>(time_ns) : 0;
}

nlohmann::json to_json(const RegimesIndex& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const RegimeEntry& e : r.regimes) {
    nlohmann::json j = {{"dir", e.dir},
                        {"grid", dims(e.grid)},
                        {"block", dims(e.block)},
                        {"cluster", dims(e.cluster)},
                        {"dynamic_shared", e.dynamic_shared},
                        {"launches", e.launches},
                        {"time_ns", e.time_ns},
                        {"share", e.share},
                        {"dispatch", e.dispatch},
                        {"captured", e.captured}};
    if (!e.captured) j["why"] = e.why;
    if (!e.params.empty()) {
      nlohmann::json params = nlohmann::json::array();
      for (const RegimeParam& p : e.params)
        params.push_back(
            {{"slot", p.slot}, {"offset", p.offset}, {"size", p.size}, {"value", p.value}, {"varies", p.varies}});
      j["params"] = std::move(params);
    }
    list.push_back(std::move(j));
  }
  return {{"format", kRegimesFormat},
          {"version", kRegimesVersion},
          {"kernel", {{"mangled", r.mangled}, {"demangled", r.demangled}}},
          {"application", r.application},
          {"pid", r.pid},
          {"launches", r.launches},
          {"time_ns", r.time_ns},
          {"app_time_ns", r.app_time_ns},
          {"uncounted", r.uncounted},
          {"dropped", {{"regimes", r.dropped_regimes}, {"launches", r.dropped_launches}, {"time_ns", r.dropped_ns}}},
          {"regimes", std::move(list)}};
}

RegimesIndex regimes_from_json(std::string_view text, const std::string& file_name) {
  const JsonDoc doc{fmt::format("regime index {}", file_name),
                    "the regime set is damaged or crafted; extract it again with `kerncap extract KERNEL --regimes`"};
  const nlohmann::json j = parse_bounded_json(text, doc);
  const JsonField root(j, doc);
  root.object();
  if (root.at("format").str(64) != kRegimesFormat)
    root.at("format").fail(fmt::format("must be \"{}\"", kRegimesFormat));
  const int version = root.at("version").i32();
  if (version != kRegimesVersion)
    root.at("version").fail(fmt::format("is {}; this kerncap reads version {} (a newer kerncap wrote it?)", version,
                                        kRegimesVersion));
  RegimesIndex r;
  const JsonField kernel = root.at("kernel");
  kernel.object();
  r.mangled = kernel.at("mangled").str(64 << 10);
  r.demangled = kernel.at("demangled").str(64 << 10);
  r.application = root.at("application").str(64 << 10);
  r.pid = root.at("pid").i64(0);
  r.launches = root.at("launches").u64();
  r.time_ns = root.at("time_ns").u64();
  r.app_time_ns = root.at("app_time_ns").u64();
  r.uncounted = root.at("uncounted").u64();
  const JsonField dropped = root.at("dropped");
  dropped.object();
  r.dropped_regimes = dropped.at("regimes").u64();
  r.dropped_launches = dropped.at("launches").u64();
  r.dropped_ns = dropped.at("time_ns").u64();
  const JsonField list = root.at("regimes");
  const size_t n = list.array_size(kMaxRegimes);
  uint64_t launches = 0, time_ns = 0;
  for (size_t i = 0; i < n; ++i) {
    const JsonField f = list.elem(i);
    f.object();
    RegimeEntry e;
    e.dir = index_dir_name(f.at("dir"));
    for (const auto& other : r.regimes)
      if (other.dir == e.dir) f.at("dir").fail(fmt::format("repeats regime directory {}", e.dir));
    e.grid = read_dims<int32_t>(f.at("grid"), [](const JsonField& x) { return x.i32(1); });
    e.block = read_dims<int32_t>(f.at("block"), [](const JsonField& x) { return x.i32(1, 1024); });
    e.cluster = read_dims<uint32_t>(f.at("cluster"), [](const JsonField& x) { return x.u32(0, 1024); });
    e.dynamic_shared = f.at("dynamic_shared").i32(0);
    e.launches = f.at("launches").u64(1);
    e.time_ns = f.at("time_ns").u64();
    e.share = f.at("share").number();
    if (!(e.share >= 0 && e.share <= 1)) f.at("share").fail("must lie in [0, 1]");
    e.dispatch = f.at("dispatch").u64();
    e.captured = f.at("captured").boolean();
    if (auto why = f.find("why")) e.why = why->str(64 << 10);
    if (auto params = f.find("params")) e.params = read_params(*params);
    launches += e.launches;
    time_ns += e.time_ns;
    r.regimes.push_back(std::move(e));
  }
  // The parts cannot exceed the whole (a crafted share would skew the weighted speed-up).
  if (launches > r.launches || time_ns > r.time_ns)
    root.at("regimes").fail(fmt::format("add up to {} launches and {} ns, more than the kernel's {} and {}", launches,
                                        time_ns, r.launches, r.time_ns));
  return r;
}

bool has_regimes(const std::filesystem::path& out) {
  std::error_code ec;
  return std::filesystem::symlink_status(out / kFile, ec).type() != std::filesystem::file_type::not_found;
}

RegimesIndex read_regimes(const std::filesystem::path& out) {
  const ReadOnlyFile f = ReadOnlyFile::open_in(out, std::string(kFile), "the regime index");
  const std::vector<uint8_t> bytes = f.read_all(kMaxIndexBytes);
  return regimes_from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                           (out / kFile).string());
}

void write_regimes(const std::filesystem::path& out, const RegimesIndex& r) {
  files::replace_file(out / kFile, to_json(r).dump(2) + "\n");
}

}  // namespace kerncap::format
