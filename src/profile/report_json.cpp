#include "profile/report_json.hpp"

#include "names/classify.hpp"
#include "names/shorten.hpp"

namespace kerncap::profile {
using nlohmann::json;

namespace {

json process_json(const ProcessSummary& p) {
  json devices = json::array();
  for (const auto& d : p.devices) {
    json dj = {{"id", d.id}};
    if (!d.name.empty()) {
      dj["name"] = d.name;
      dj["cc"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
      dj["sms"] = d.sms;
      dj["memory"] = d.memory;
    }
    devices.push_back(std::move(dj));
  }
  json errors = json::array();
  for (const auto& e : p.errors) errors.push_back({{"code", e.code}, {"message", e.message}});
  return {{"pid", p.info.pid},
          {"rank", p.info.rank >= 0 ? json(p.info.rank) : json(nullptr)},
          {"rank_source", p.info.rank_source},
          {"ppid", p.info.ppid},
          {"forked_from", p.info.forked_from},
          {"exe", p.info.exe},
          {"cmdline", p.info.cmdline},
          {"devices", std::move(devices)},
          {"kernels", p.kernels},
          {"kernel_ns", p.kernel_ns},
          // sampled: recorded in the timed windows only (sample_period != 0), a sample's counts
          {"memcpy", {{"count", p.memcpys}, {"ns", p.memcpy_ns}, {"bytes", p.memcpy_bytes}, {"sampled", p.sample_period != 0}}},
          {"memset", {{"count", p.memsets}, {"ns", p.memset_ns}, {"bytes", p.memset_bytes}, {"sampled", p.sample_period != 0}}},
          {"complete", p.complete},
          {"end_reason", p.end_reason},
          {"dropped", p.dropped},
          {"errors", std::move(errors)},
          {"record_file", p.file},
          {"sample_period", p.sample_period},                     // 0: every launch timed
          {"timed", p.sample_period ? p.timed : p.kernels}};
}

json kernel_json(const KernelStats& k, size_t rank) {
  json per = json::array();
  bool in_graph = false;  // some of its calls ran inside a CUDA graph launch
  for (const auto& kp : k.processes) in_graph = in_graph || kp.graph_calls > 0;
  for (const auto& kp : k.processes)
    per.push_back({{"pid", kp.pid},
                   {"rank", kp.rank >= 0 ? json(kp.rank) : json(nullptr)},
                   {"devices", kp.devices},
                   {"calls", kp.calls},
                   {"dispatch", kp.dispatch},
                   {"graph_calls", kp.graph_calls},
                   {"benchmark_calls", kp.benchmark_calls}});
  return {{"rank", rank},
          {"name", k.mangled},
          {"demangled", k.demangled},
          {"short", names::shorten(k.demangled, 100)},
          {"kind", names::to_string(k.cls.kind)},
          {"category", names::to_string(k.cls.category)},
          {"source_expected", k.cls.source_expected},
          {"calls", k.calls},
          {"benchmark_calls", k.benchmark_calls},
          {"total_ns", k.total_ns},
          {"samples", k.samples},      // timed launches (= calls unless sampled)
          {"estimated", k.estimated},  // total_ns = calls x timed mean (sampled timing)
          {"avg_ns", k.avg_ns},
          {"median_ns", k.median_ns},
          {"min_ns", k.min_ns},
          {"max_ns", k.max_ns},
          {"stddev_ns", k.stddev_ns},
          {"percent", k.percent},
          {"grid", k.grid},
          {"block", k.block},
          {"registers", k.registers},
          {"static_shared", k.static_shared},
          {"dynamic_shared", k.dynamic_shared},
          {"shapes", k.shapes},
          {"in_graph", in_graph},
          {"extract",
           {{"pattern", k.mangled},
            {"match", "substring of the mangled or demangled name, counted per process in launch order"},
            {"processes", std::move(per)}}}};
}

}  // namespace

json report_json(const Summary& s, const RunInfo& run) {
  json doc = {{"format", kReportFormat}, {"version", kReportVersion}, {"kerncap", KERNCAP_VERSION}};
  if (run.ran)
    doc["application"] = {{"command", run.command},
                          {"exited", run.exited},
                          {"code", run.code},
                          {"description", run.description}};
  else
    doc["application"] = nullptr;
  doc["totals"] = {{"launches", s.launches},
                   {"kernels", s.kernels.size()},
                   {"kernel_ns", s.total_kernel_ns},
                   {"estimated", s.estimated},
                   {"span_ns", s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0},
                   {"processes", s.processes.size()}};
  json procs = json::array();
  for (const auto& p : s.processes) procs.push_back(process_json(p));
  doc["processes"] = std::move(procs);
  json ranks = json::array();  // kernel time per (rank, device); rank null: not told
  for (const auto& r : s.ranks)
    ranks.push_back({{"rank", r.rank >= 0 ? json(r.rank) : json(nullptr)},
                     {"device", r.device},
                     {"launches", r.launches},
                     {"kernel_ns", r.kernel_ns},
                     {"pids", r.pids}});
  doc["by_rank_device"] = std::move(ranks);
  json kernels = json::array();
  for (size_t i = 0; i < s.kernels.size(); ++i) kernels.push_back(kernel_json(s.kernels[i], i + 1));
  doc["kernels"] = std::move(kernels);
  return doc;
}

}  // namespace kerncap::profile
