// Reading the per-process record files back (offline, in the CLI).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "format/profile_records.hpp"

namespace kerncap::format {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The longest line read: libkerncap's lines are short (the longest, a header's command line or a
// mangled name, stay far below); a longer one is a damaged or crafted file (or no record file),
// refused before it is held whole (a 1 GiB line of a sparse file took seconds and its size in
// memory).
constexpr size_t kMaxRecordLine = size_t{16} << 20;

// A number as T, `fallback` for anything else. The records are read leniently (a same-version
// writer may add keys), but never by a conversion with undefined behaviour: a fraction outside
// T's range (1e300 as an int) is not a number of T either. Integers convert as before.
template <typename T>
T as_num(const json& x, T fallback) {
  if (x.is_number_float()) {
    const double d = x.get<double>();
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits), lo = std::is_signed_v<T> ? -hi : 0.0;
    return d >= lo && d < hi ? static_cast<T>(d) : fallback;
  }
  return x.is_number() ? x.get<T>() : fallback;
}

template <typename T, size_t N>
std::array<T, N> arr(const json& j, const char* key) {
  std::array<T, N> a{};
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return a;
  // An element that is not a number (an array, a string: a damaged line) reads as 0, as a
  // missing key does; it was a type_error, an internal error of the CLI (the fuzzer, issue 38).
  for (size_t i = 0; i < N && i < it->size(); ++i) a[i] = as_num<T>((*it)[i], T{});
  return a;
}

template <typename T>
T num(const json& j, const char* key, T fallback = T{}) {
  auto it = j.find(key);
  return it != j.end() ? as_num<T>(*it, fallback) : fallback;
}

// std::getline bounded by kMaxRecordLine.
bool next_record_line(std::istream& in, std::string& line, const fs::path& file, size_t lineno) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) return !line.empty();
    if (c == '\n') return true;
    if (line.size() >= kMaxRecordLine)
      input_error(fmt::format("{}:{}: a line longer than {} MiB, which kerncap never writes: the file is damaged or "
                              "not a profile record file; remove it from the directory",
                              file.string(), lineno, kMaxRecordLine >> 20));
    line.push_back(static_cast<char>(c));
  }
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

void read_header(const json& j, const fs::path& file, ProcessRecords& out) {
  if (str(j, "t") != "header" || str(j, "format") != kRecordsFormat)
    input_error(fmt::format("{} is not a kerncap profile record file (its first line is not a "
                            "'{}' header); remove it from the directory or point at another one",
                            file.string(), kRecordsFormat));
  int version = num<int>(j, "version");
  if (version > kRecordsVersion)
    input_error(fmt::format("{} was written by a newer kerncap (record format {}, this kerncap reads up "
                            "to {}); analyze it with the kerncap that profiled the application",
                            file.string(), version, kRecordsVersion));
  if (version < 1)
    input_error(fmt::format("{} has an invalid record format version {}", file.string(), version));
  out.info.pid = num<int64_t>(j, "pid");
  out.info.ppid = num<int64_t>(j, "ppid");
  out.info.forked_from = num<int64_t>(j, "forked_from");
  out.info.exe = str(j, "exe");
  out.info.rank = num<int64_t>(j, "rank", -1);  // absent in files of single-process kerncaps
  out.info.rank_source = str(j, "rank_source");
  if (auto it = j.find("cmdline"); it != j.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) out.info.cmdline.push_back(a.get<std::string>());
}

// What later lines tell about the kernels: CUPTI delivers a launch's correlation records and
// its kernel record in any order, so they are joined at the end.
struct Joins {
  std::unordered_set<uint32_t> benchmark_calls;                          // "x" lines
  std::unordered_map<uint32_t, std::pair<uint32_t, int32_t>> params;      // "p": correlation -> name id, signature
  std::map<std::vector<ScalarWord>, int32_t> signature_ids;               // signatures, deduplicated
};

// A "p" line: a launch's parameter signature, checked (a damaged one is refused, not guessed).
void read_params(const json& j, ProcessRecords& out, Joins& joins) {
  auto bad = [&](const std::string& what) {
    input_error(fmt::format("{}: a parameter signature line {}; the file was damaged after it was written",
                            out.file.string(), what));
  };
  const auto n = j.find("n");
  const auto c = j.find("c");
  const auto w = j.find("w");
  if (n == j.end() || !n->is_number_unsigned() || c == j.end() || !c->is_number_unsigned() || w == j.end() ||
      !w->is_array())
    bad("lacks its name id, correlation id or words");
  if (n->get<uint64_t>() >= out.names.size()) bad(fmt::format("refers to unknown name id {}", n->dump()));
  if (c->get<uint64_t>() > UINT32_MAX) bad("has a correlation id beyond 32 bits");
  if (w->size() > kMaxScalarWords) bad(fmt::format("holds {} words (at most {})", w->size(), kMaxScalarWords));
  std::vector<ScalarWord> words;
  for (const auto& e : *w) {
    if (!e.is_array() || e.size() != 4 || !std::all_of(e.begin(), e.end(), [](const json& x) { return x.is_number_unsigned(); }))
      bad("has a word that is not [slot, offset, size, value]");
    ScalarWord s{0, 0, 0, e[3].get<uint64_t>()};
    const uint64_t slot = e[0].get<uint64_t>(), offset = e[1].get<uint64_t>(), size = e[2].get<uint64_t>();
    if (slot >= kMaxWordOffset || offset >= kMaxWordOffset || size < 1 || size > 8 ||
        (size < 8 && s.value >> (8 * size) != 0))
      bad(fmt::format("has an impossible word [{}, {}, {}, {}]", slot, offset, size, s.value));
    s.slot = static_cast<uint32_t>(slot);
    s.offset = static_cast<uint32_t>(offset);
    s.size = static_cast<uint32_t>(size);
    if (!words.empty() && std::tie(s.slot, s.offset) <= std::tie(words.back().slot, words.back().offset))
      bad("has its words out of buffer order");
    words.push_back(s);
  }
  auto [it, fresh] = joins.signature_ids.emplace(std::move(words), static_cast<int32_t>(out.signatures.size()));
  if (fresh) out.signatures.push_back(it->first);
  joins.params[static_cast<uint32_t>(c->get<uint64_t>())] = {static_cast<uint32_t>(n->get<uint64_t>()), it->second};
}

void read_line(const json& j, ProcessRecords& out, Joins& joins) {
  const std::string t = str(j, "t");
  if (t == "k") {
    KernelRecord k;
    k.name_id = num<uint32_t>(j, "n");
    if (k.name_id >= out.names.size())
      input_error(fmt::format("{}: kernel record refers to unknown name id {}", out.file.string(), k.name_id));
    k.start_ns = num<uint64_t>(j, "s");
    k.end_ns = num<uint64_t>(j, "e");
    k.grid = arr<int32_t, 3>(j, "g");
    k.block = arr<int32_t, 3>(j, "b");
    k.cluster = arr<uint32_t, 3>(j, "cl");
    k.registers = num<uint32_t>(j, "r");
    k.static_shared = num<int32_t>(j, "ss");
    k.dynamic_shared = num<int32_t>(j, "ds");
    k.local_per_thread = num<uint32_t>(j, "lm");
    k.stream = num<uint32_t>(j, "st");
    k.device = num<uint32_t>(j, "d");
    k.context = num<uint32_t>(j, "c");
    k.correlation = num<uint32_t>(j, "corr");
    k.graph_id = num<uint32_t>(j, "gr");
    k.graph_node = num<uint64_t>(j, "gn");
    k.device_launched = num<int>(j, "dl") != 0;
    out.kernels.push_back(k);
  } else if (t == "name") {
    uint32_t id = num<uint32_t>(j, "id");
    if (id != out.names.size())
      input_error(fmt::format("{}: kernel name ids out of order (got {}, expected {})", out.file.string(), id,
                              out.names.size()));
    out.names.push_back(str(j, "s"));
  } else if (t == "m") {
    MemRecord m;
    m.memset = str(j, "op") == "memset";
    m.copy_kind = str(j, "ck");
    m.bytes = num<uint64_t>(j, "bytes");
    m.start_ns = num<uint64_t>(j, "s");
    m.end_ns = num<uint64_t>(j, "e");
    m.stream = num<uint32_t>(j, "st");
    m.device = num<uint32_t>(j, "d");
    m.context = num<uint32_t>(j, "c");
    m.correlation = num<uint32_t>(j, "corr");
    m.graph_id = num<uint32_t>(j, "gr");
    out.memops.push_back(std::move(m));
  } else if (t == "device") {
    DeviceInfo d;
    d.id = num<uint32_t>(j, "id");
    d.name = str(j, "name");
    auto cc = arr<int, 2>(j, "cc");
    d.cc_major = cc[0];
    d.cc_minor = cc[1];
    d.sms = num<uint32_t>(j, "sms");
    d.memory = num<uint64_t>(j, "memory");
    out.devices.push_back(std::move(d));
  } else if (t == "sampling") {
    out.sample_period = num<uint32_t>(j, "period");
    if (out.sample_period < 2)
      input_error(fmt::format("{}: a sampling line with period {} (at least 2)", out.file.string(), out.sample_period));
  } else if (t == "run") {
    LaunchRun r;
    r.name_id = num<uint32_t>(j, "n");
    if (r.name_id >= out.names.size())
      input_error(fmt::format("{}: a run of launches refers to unknown name id {}", out.file.string(), r.name_id));
    r.count = num<uint64_t>(j, "k");
    r.first_correlation = num<uint32_t>(j, "c0");
    r.last_correlation = num<uint32_t>(j, "c1");
    r.benchmark = num<int>(j, "b") != 0;
    out.runs.push_back(r);
  } else if (t == "x") {
    joins.benchmark_calls.insert(num<uint32_t>(j, "c"));
  } else if (t == "p") {
    read_params(j, out, joins);
  } else if (t == "error") {
    out.errors.push_back({str(j, "code"), str(j, "message")});
  } else if (t == "end") {
    out.complete = true;
    out.end_reason = str(j, "reason");
    out.dropped = num<uint64_t>(j, "dropped");
  }
  // Unknown line types are skipped: a same-version writer may add optional lines.
}

}  // namespace

ProcessRecords read_record_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) input_error(fmt::format("cannot read {}", file.string()));
  ProcessRecords out;
  out.file = file;
  std::string line;
  size_t lineno = 0;
  bool pending_bad = false;  // a bad line is fatal only if another line follows it
  bool seen_header = false;
  Joins joins;
  while (next_record_line(in, line, file, lineno + 1)) {
    ++lineno;
    if (line.empty()) continue;
    if (pending_bad)
      input_error(fmt::format("{}:{}: corrupt record line; the file was damaged after it was written",
                              file.string(), lineno - 1));
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      if (!seen_header)
        input_error(fmt::format("{} is not a kerncap profile record file (first line is not JSON)", file.string()));
      pending_bad = true;  // likely the tail cut off when the process was killed mid-write
      continue;
    }
    if (!seen_header) {
      read_header(j, file, out);
      seen_header = true;
    } else {
      read_line(j, out, joins);
    }
  }
  if (!seen_header)
    input_error(fmt::format("{} is empty: its process was killed before it could write anything", file.string()));
  if (!joins.benchmark_calls.empty())
    for (auto& k : out.kernels) k.benchmark = !k.device_launched && joins.benchmark_calls.count(k.correlation) > 0;
  // A signature belongs to the host launch of that correlation id and kernel (a graph's kernels
  // carry their graph launch's id, and a launch into a capturing stream runs no kernel of its own).
  if (!joins.params.empty())
    for (auto& k : out.kernels) {
      if (k.device_launched || k.graph_id) continue;
      const auto it = joins.params.find(k.correlation);
      if (it != joins.params.end() && it->second.first == k.name_id) k.signature = it->second.second;
    }
  return out;
}

std::vector<ProcessRecords> read_records(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    input_error(fmt::format("{} is not a directory of profile records", dir.string()));
  std::vector<ProcessRecords> all;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("profile-") || !name.ends_with(".jsonl")) continue;
    // libkerncap writes its record files itself, never links: a link among them (to another
    // profile's file, to /dev/zero, to a file outside) is refused, as a capture's files are,
    // not followed (records travel with bug reports).
    if (e.is_symlink(ec))
      input_error(fmt::format("{} is a symbolic link; a profile record file must be a plain file in {} (links are "
                              "not followed): remove it or copy the file it points to there",
                              e.path().string(), dir.string()));
    if (!e.is_regular_file(ec)) continue;
    all.push_back(read_record_file(e.path()));
  }
  std::sort(all.begin(), all.end(), [](const ProcessRecords& a, const ProcessRecords& b) {
    return a.info.pid != b.info.pid ? a.info.pid < b.info.pid : a.file < b.file;
  });
  return all;
}

}  // namespace kerncap::format
