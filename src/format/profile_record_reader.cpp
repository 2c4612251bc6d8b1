// Reading the per-process record files back (offline, in the CLI).
#include <algorithm>
#include <fstream>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "format/profile_records.hpp"

namespace kerncap::format {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

template <typename T, size_t N>
std::array<T, N> arr(const json& j, const char* key) {
  std::array<T, N> a{};
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return a;
  for (size_t i = 0; i < N && i < it->size(); ++i) a[i] = (*it)[i].get<T>();
  return a;
}

template <typename T>
T num(const json& j, const char* key, T fallback = T{}) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<T>() : fallback;
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

void read_line(const json& j, ProcessRecords& out, std::unordered_set<uint32_t>& benchmark_calls) {
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
    benchmark_calls.insert(num<uint32_t>(j, "c"));
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
  // CUPTI delivers the window's correlation records and the kernels in any order: joined at the end.
  std::unordered_set<uint32_t> benchmark_calls;
  while (std::getline(in, line)) {
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
      read_line(j, out, benchmark_calls);
    }
  }
  if (!seen_header)
    input_error(fmt::format("{} is empty: its process was killed before it could write anything", file.string()));
  if (!benchmark_calls.empty())
    for (auto& k : out.kernels) k.benchmark = !k.device_launched && benchmark_calls.count(k.correlation) > 0;
  return out;
}

std::vector<ProcessRecords> read_records(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    input_error(fmt::format("{} is not a directory of profile records", dir.string()));
  std::vector<ProcessRecords> all;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.starts_with("profile-") || !name.ends_with(".jsonl")) continue;
    all.push_back(read_record_file(e.path()));
  }
  std::sort(all.begin(), all.end(), [](const ProcessRecords& a, const ProcessRecords& b) {
    return a.info.pid != b.info.pid ? a.info.pid < b.info.pid : a.file < b.file;
  });
  return all;
}

}  // namespace kerncap::format
