#include "profile/trace.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "profile/aggregate.hpp"
#include "names/demangle.hpp"
#include "names/shorten.hpp"

namespace kerncap::profile {
namespace {

using format::json_quote;

uint64_t first_timestamp(const std::vector<ProcessRecords>& processes) {
  uint64_t first = UINT64_MAX;
  for (const auto& p : processes) {
    for (const auto& k : p.kernels) first = std::min(first, k.start_ns);
    for (const auto& m : p.memops) first = std::min(first, m.start_ns);
  }
  return first == UINT64_MAX ? 0 : first;
}

// Microseconds with nanosecond precision, as the format expects.
std::string us(uint64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }
uint64_t since(uint64_t t, uint64_t base) { return t > base ? t - base : 0; }
uint64_t dur(uint64_t s, uint64_t e) { return e > s ? e - s : 0; }

std::string process_label(const ProcessRecords& p) {
  std::string cmd;
  for (const auto& a : p.info.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  std::set<uint32_t> devs;
  for (const auto& k : p.kernels) devs.insert(k.device);
  std::string gpus;
  for (uint32_t d : devs) gpus += fmt::format("{}{}", gpus.empty() ? " GPU " : ",", d);
  return fmt::format("pid {} {}{}", p.info.pid, cmd.empty() ? p.info.exe : cmd, gpus);
}

}  // namespace

void write_trace(const std::vector<ProcessRecords>& processes, std::ostream& out) {
  const uint64_t base = first_timestamp(processes);
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"kerncap " KERNCAP_VERSION "\"},\"traceEvents\":[";
  bool first = true;
  auto event = [&](const std::string& e) {
    out << (first ? "\n" : ",\n") << e;
    first = false;
  };
  for (const auto& p : processes) {
    event(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})", p.info.pid,
                      json_quote(process_label(p))));
    std::set<uint32_t> streams;
    for (const auto& k : p.kernels) streams.insert(k.stream);
    for (const auto& m : p.memops) streams.insert(m.stream);
    for (uint32_t st : streams)
      event(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"stream {}"}}}})",
                        p.info.pid, st, st));

    std::vector<std::string> demangled, labels;
    for (const auto& n : p.names) {
      demangled.push_back(names::demangle(n));
      labels.push_back(json_quote(names::shorten(demangled.back(), 160)));
    }
    const std::vector<int64_t> dispatch = dispatch_indices(p, demangled);
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      const KernelRecord& k = p.kernels[i];
      std::string args = fmt::format(
          R"("name":{},"grid":[{},{},{}],"block":[{},{},{}],"registers":{},"static_shared":{},"dynamic_shared":{},"device":{},"correlation":{})",
          json_quote(p.names[k.name_id]), k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
          k.registers, k.static_shared, k.dynamic_shared, k.device, k.correlation);
      if (dispatch[i] >= 0) args += fmt::format(R"(,"dispatch":{})", dispatch[i]);
      if (k.graph_id) args += fmt::format(R"(,"graph":{})", k.graph_id);
      if (k.benchmark) args += R"(,"benchmark":true)";
      event(fmt::format(R"({{"name":{},"cat":"kernel","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{{}}}}})",
                        labels[k.name_id], us(since(k.start_ns, base)), us(dur(k.start_ns, k.end_ns)), p.info.pid,
                        k.stream, args));
    }
    for (const auto& m : p.memops) {
      std::string name = m.memset ? fmt::format("memset {} B", m.bytes)
                                  : fmt::format("memcpy {} {} B", m.copy_kind, m.bytes);
      event(fmt::format(R"({{"name":{},"cat":{},"ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{"bytes":{},"device":{}}}}})",
                        json_quote(name), m.memset ? R"("memset")" : R"("memcpy")", us(since(m.start_ns, base)),
                        us(dur(m.start_ns, m.end_ns)), p.info.pid, m.stream, m.bytes, m.device));
    }
  }
  out << "\n]}\n";
}

void write_trace_file(const std::vector<ProcessRecords>& processes, const std::filesystem::path& file) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) usage_error(fmt::format("cannot write the trace to {}: check the directory exists and is writable", file.string()));
  write_trace(processes, out);
  out.flush();
  if (!out) usage_error(fmt::format("writing the trace to {} failed (disk full?)", file.string()));
}

}  // namespace kerncap::profile
