#include "format/events.hpp"

#include <algorithm>
#include <fstream>

#include "format/out_layout.hpp"
#include "format/protocol.hpp"

namespace kerncap::format::events {
namespace {

using nlohmann::json;

constexpr std::string_view kNames[] = {"start", "seen",  "ignored",  "skipped",  "graph_launch",
                                       "match", "error", "captured", "stopping", "unlaunched"};

json line(Kind k) { return {{"event", name(k)}}; }

}  // namespace

std::string_view name(Kind k) { return kNames[static_cast<size_t>(k)]; }

std::optional<Kind> kind_from_name(std::string_view s) {
  for (Kind k : kAllKinds)
    if (name(k) == s) return k;
  return std::nullopt;
}

json start(std::string_view mode) {
  json j = line(Kind::Start);
  j["mode"] = mode;
  j["tool"] = KERNCAP_VERSION;
  j["protocol"] = kProtocolVersion;
  return j;
}

void add_rank(json& j, int64_t rank, std::string_view source, bool selected) {
  if (rank >= 0) j["rank"] = rank;
  j["rank_source"] = source;
  j["selected"] = selected;
}

json seen(const std::string& mangled, const std::string& demangled, bool matches) {
  json j = line(Kind::Seen);
  j["mangled"] = mangled;
  j["demangled"] = demangled;
  j["matches"] = matches;
  return j;
}

json ignored(const std::string& mangled, std::string_view why) {
  json j = line(Kind::Ignored);
  j["mangled"] = mangled;
  j["why"] = why;
  return j;
}

std::string_view name(SkipReason r) {
  switch (r) {
    case SkipReason::CapturingStream: return "capturing_stream";
    case SkipReason::NestedGraph: return "nested_graph";
    case SkipReason::UnlaunchedGraph: break;
  }
  return "unlaunched_graph";
}

json skipped(const std::string& mangled, SkipReason reason) {
  json j = line(Kind::Skipped);
  j["mangled"] = mangled;
  switch (reason) {
    case SkipReason::CapturingStream: j["why"] = "stream is capturing a CUDA graph"; break;
    case SkipReason::NestedGraph: j["why"] = "graph launched on a stream capturing another CUDA graph"; break;
    case SkipReason::UnlaunchedGraph: j["why"] = "only in a CUDA graph that was never launched"; break;
  }
  j["reason"] = name(reason);
  return j;
}

void add_targets(json& j, const std::vector<int>& targets) { j["targets"] = targets; }
void add_target(json& j, int target) { j["target"] = target; }

json graph_launch() { return line(Kind::GraphLaunch); }

json unlaunched(const std::string& mangled, const std::string& demangled) {
  json j = line(Kind::Unlaunched);
  j["mangled"] = mangled;
  j["demangled"] = demangled;
  return j;
}

json match(uint64_t index, const std::string& mangled) {
  json j = line(Kind::Match);
  j["index"] = index;
  j["mangled"] = mangled;
  return j;
}

json error(const std::string& what) {
  json j = line(Kind::Error);
  j["what"] = what;
  return j;
}

json captured(const std::string& dir, bool keep_running) {
  json j = line(Kind::Captured);
  j["dir"] = dir;
  j["continue"] = keep_running;
  return j;
}

json stopping() { return line(Kind::Stopping); }

namespace {

// Whether a line concerns `target` (-1: every line does).
bool concerns(const json& e, int target) {
  if (target < 0) return true;
  auto t = e.find("target");
  if (t != e.end()) return t->is_number_integer() && t->get<int64_t>() == target;
  auto ts = e.find("targets");
  if (ts == e.end() || !ts->is_array()) return true;
  for (const auto& x : *ts)
    if (x.is_number_integer() && x.get<int64_t>() == target) return true;
  return false;
}

}  // namespace

void add_line(Log& log, std::string_view text, int target) {
  json e = json::parse(text, nullptr, false);
  if (e.is_discarded() || !e.is_object()) {
    ++log.unreadable_lines;
    return;
  }
  auto kind = kind_from_name(e.value("event", ""));
  if (!kind) return;
  // A name seen is seen by every target (the closest-names list); the rest is per target.
  if (*kind != Kind::Seen && !concerns(e, target)) return;
  auto str = [&](const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  switch (*kind) {
    case Kind::Start: {
      Start s;
      s.pid = e.value("pid", int64_t{0});
      s.mode = str("mode");
      s.tool = str("tool");
      auto p = e.find("protocol");
      s.protocol = p != e.end() && p->is_number_integer() ? p->get<int>() : 0;
      auto r = e.find("rank");
      if (r != e.end() && r->is_number_integer()) s.rank = r->get<int64_t>();
      s.rank_source = str("rank_source");
      auto sel = e.find("selected");
      if (sel != e.end() && sel->is_boolean()) s.selected = sel->get<bool>();
      log.starts.push_back(std::move(s));
      break;
    }
    case Kind::Seen: {
      std::string n = str("demangled");
      if (n.empty()) n = str("mangled");
      if (!n.empty() && std::find(log.seen.begin(), log.seen.end(), n) == log.seen.end()) log.seen.push_back(n);
      break;
    }
    case Kind::Ignored: log.ignored.push_back(str("mangled")); break;
    case Kind::Skipped: log.skipped.push_back({str("mangled"), str("reason")}); break;
    case Kind::GraphLaunch: log.graph_launch = true; break;
    case Kind::Match: {
      auto i = e.find("index");
      if (i != e.end() && i->is_number_unsigned()) log.matches.insert(i->get<uint64_t>());
      break;
    }
    case Kind::Error: log.errors.push_back(str("what")); break;
    case Kind::Captured: log.captured = true; break;
    case Kind::Stopping: log.stopping = true; break;
    case Kind::Unlaunched: {
      std::string n = str("demangled");
      if (n.empty()) n = str("mangled");
      if (!n.empty() && log.unlaunched.size() < kMaxUnlaunched &&
          std::find(log.unlaunched.begin(), log.unlaunched.end(), n) == log.unlaunched.end())
        log.unlaunched.push_back(std::move(n));
      break;
    }
  }
}

void add_stream(Log& log, std::istream& in, int target) {
  std::string text;
  while (std::getline(in, text))
    if (!text.empty()) add_line(log, text, target);
}

Log read_dir(const std::filesystem::path& state_dir, int target) {
  Log log;
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir, ec)) return log;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(state_dir, ec))
    if (out::is_events_file(e.path().filename().string())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    add_stream(log, in, target);
  }
  return log;
}

}  // namespace kerncap::format::events
