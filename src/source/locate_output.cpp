#include "source/locate_output.hpp"

#include <fmt/format.h>

namespace kerncap::source {
namespace {

nlohmann::json ref_json(const SourceRef& s) {
  nlohmann::json j = {{"repo", s.repo.string()}, {"file", s.file}, {"path", s.path().string()}, {"what", s.what}};
  if (s.line) j["line"] = s.line;
  return j;
}

std::string where(const SourceRef& s) {
  return s.line ? fmt::format("{}:{}", s.path().string(), s.line) : s.path().string();
}

}  // namespace

nlohmann::json to_json(const LocateResult& r) {
  nlohmann::json j = {{"name", r.name},
                      {"demangled", r.demangled},
                      {"kind", names::to_string(r.cls.kind)},
                      {"category", names::to_string(r.cls.category)},
                      {"rule", r.rule},
                      {"strategy", to_string(r.strategy)},
                      {"status", to_string(r.status)},
                      {"sources", nlohmann::json::array()},
                      {"tests", nlohmann::json::array()},
                      {"notes", r.notes}};
  for (const auto& s : r.sources) j["sources"].push_back(ref_json(s));
  for (const auto& t : r.tests) j["tests"].push_back(ref_json(t));
  j["source"] = r.sources.empty() ? nlohmann::json(nullptr) : nlohmann::json(where(r.sources.front()));
  if (r.test_command.empty()) j["test"] = nullptr;
  else j["test"] = {{"command", r.test_command}, {"cwd", r.test_cwd.string()}};
  if (r.status == LocateStatus::ClosedSource) j["library"] = {{"name", r.library}, {"reproduce", r.reproduce}};
  return j;
}

std::string format_locate(const LocateResult& r) {
  std::string s = fmt::format("kernel   {}\n", r.demangled);
  s += fmt::format("kind     {} / {}  (rule {}, {})\n", names::to_string(r.cls.kind), names::to_string(r.cls.category),
                   r.rule.empty() ? "-" : r.rule, to_string(r.status));
  if (r.status == LocateStatus::ClosedSource) {
    s += fmt::format("source   closed: {}\n", r.library);
    if (!r.reproduce.empty()) s += fmt::format("repro    {}\n", r.reproduce);
  }
  for (size_t i = 0; i < r.sources.size(); ++i)
    s += fmt::format("{} {}  {}\n", i == 0 ? "source  " : "also    ", where(r.sources[i]), r.sources[i].what);
  if (r.status == LocateStatus::NotFound) s += "source   not found in the given repositories\n";
  for (const auto& t : r.tests) s += fmt::format("tests    {}\n", where(t));
  if (!r.test_command.empty()) s += fmt::format("test     (cd {} && {})\n", r.test_cwd.string(), r.test_command);
  for (const auto& n : r.notes) s += fmt::format("note     {}\n", n);
  return s;
}

std::string short_where(const LocateResult& r) {
  switch (r.status) {
    case LocateStatus::Found: {
      // "pytorch/aten/...": the repository's folder name says which --source-repo it is in.
      const auto& f = r.sources.front();
      const std::string file = f.repo.empty() ? f.file : (f.repo.filename() / f.file).string();
      return f.line ? fmt::format("{}:{}", file, f.line) : file;
    }
    case LocateStatus::ClosedSource: return "closed source: " + r.library;
    case LocateStatus::Generated:
      return r.sources.empty() ? "generated (Inductor)" : fmt::format("{}:{}", r.sources.front().file, r.sources.front().line);
    case LocateStatus::NotFound: return "not found";
  }
  return "?";
}

std::string format_index_summary(const std::vector<RepoIndex>& repos) {
  std::string s;
  for (const auto& r : repos)
    s += fmt::format("{}: {} files indexed in {:.2f} s ({} MiB read{})\n", r.root.string(), r.files.size(), r.seconds,
                     r.bytes >> 20, r.skipped ? fmt::format(", {} skipped", r.skipped) : "");
  return s;
}

}  // namespace kerncap::source
