#include "cli/serve_route.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "serve/protocol.hpp"

namespace kerncap::cli {
using nlohmann::json;

ServerUse server_use_from(const std::string& flag, const std::optional<std::string>& env) {
  auto parse = [](const std::string& v, const std::string& what) {
    if (v == "auto") return ServerUse::Auto;
    if (v == "off") return ServerUse::Off;
    usage_error(fmt::format("{}: expected auto or off", what));
  };
  if (!flag.empty()) return parse(flag, "--server " + flag);
  if (env && !env->empty()) return parse(*env, "KERNCAP_SERVE=" + *env);
  return ServerUse::Auto;
}

json ServerInfo::to_json() const {
  return {{"pid", pid},
          {"dir", dir},
          {"device", device},
          {"device_option", device_option ? json(*device_option) : json(nullptr)},
          {"strong", strong},
          {"footprint", footprint},
          {"device_line", device_line},
          {"compare_json", compare_json},
          {"placement", placement},
          {"kerncap", kerncap}};
}

ServerInfo ServerInfo::from_json(const json& j) {
  ServerInfo s;
  try {
    s.pid = j.at("pid").get<pid_t>();
    s.dir = j.at("dir").get<std::string>();
    s.device = j.at("device").get<int>();
    if (!j.at("device_option").is_null()) s.device_option = j.at("device_option").get<int>();
    s.strong = j.at("strong").get<bool>();
    s.footprint = j.at("footprint").get<std::string>();
    s.device_line = j.at("device_line").get<std::string>();
    s.compare_json = j.at("compare_json").get<std::string>();
    s.placement = j.at("placement");
    for (const char* k : {"blocks", "blocks_at_hint", "runs_fallback", "runs_relocated", "mapped_bytes"})
      (void)s.placement.at(k).get<uint64_t>();
    s.kerncap = j.at("kerncap").get<std::string>();
  } catch (const json::exception& e) {
    throw serve::ProtocolError(fmt::format("the server's description is incomplete: {}", e.what()));
  }
  return s;
}

std::string why_not_served(const ValidateShape& v, const ServerInfo& s, const std::string& dir) {
  if (s.dir != dir) return fmt::format("it serves {}, not {}", s.dir, dir);
  if (s.kerncap != KERNCAP_VERSION) return fmt::format("it is kerncap {}, this is kerncap {}", s.kerncap, KERNCAP_VERSION);
  if (v.geometry) return "--grid/--block change the launch its session opened with";
  if (v.no_relocate) return "--no-relocate is checked when a session opens";
  if (v.collide) return "--collide is a test hook of a session's opening";
  if (v.verify) return "--verify checks the capture files as this process reads them";
  if (v.device ? *v.device != s.device : s.device_option.has_value())
    return fmt::format("it replays on device {}{}", s.device,
                       v.device ? fmt::format(", not {}", *v.device) : " (its --device), not on the default choice");
  const bool strong_here = v.footprint != FootprintUse::Never;
  if (strong_here && !s.strong)
    return "its session is weak (no footprint) and this validation would be strong or measure the footprint";
  if (!strong_here && s.strong) return "its session is strong and --footprint never asks for a weak validation";
  if (v.fuzz && !s.strong) return "--fuzz needs the footprint, which its session does not have";
  return "";
}

std::string spec_source_here(const std::string& served, const ServerInfo& s, const std::string& own_compare_json) {
  if (s.compare_json.empty() || served.compare(0, s.compare_json.size(), s.compare_json) != 0) return served;
  return own_compare_json + served.substr(s.compare_json.size());
}

}  // namespace kerncap::cli
