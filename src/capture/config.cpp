#include "capture/config.hpp"

#include <cstdlib>
#include <string_view>

namespace kerncap::capture {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);  // the only getenv in the capture library
  return (v && *v) ? v : nullptr;
}

bool parse_u64(const char* s, uint64_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (!end || *end != '\0') return false;
  *out = v;
  return true;
}

bool truthy(const char* s) {
  std::string_view v(s);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

}  // namespace

const std::vector<EnvVar>& env_vars() {
  static const std::vector<EnvVar> vars = {
      {"KERNCAP_MODE", "capture | profile; unset = the library stays inert"},
      {"KERNCAP_OUTPUT", "directory for the capture or profile output (created by the launcher)"},
      {"KERNCAP_KERNEL", "kernel name pattern: substring of the demangled or mangled name"},
      {"KERNCAP_REGEX", "1 = KERNCAP_KERNEL is an ECMAScript regular expression"},
      {"KERNCAP_DISPATCH", "capture the Nth launch that matches (0 = first)"},
      {"KERNCAP_CONTINUE", "1 = let the application run on after the capture (default: stop it)"},
      {"KERNCAP_VERBOSE", "0 quiet, 1 progress, 2 debug"},
      {"KERNCAP_CHUNK_BYTES", "granularity of AFTER change detection in bytes (default 4096)"},
      {"KERNCAP_STAGING_BYTES", "size of the pinned staging buffer in bytes (default 64 MiB)"},
      {"KERNCAP_DUMP_IMAGES", "1 = save every code image the application loads under OUT/.kerncap/images"},
  };
  return vars;
}

Config read_config(std::vector<std::string>* problems) {
  Config c;
  auto problem = [&](std::string p) {
    if (problems) problems->push_back(std::move(p));
  };
  if (const char* m = env("KERNCAP_MODE")) {
    std::string_view v(m);
    if (v == "capture") c.mode = Mode::Capture;
    else if (v == "profile") c.mode = Mode::Profile;
    else problem("KERNCAP_MODE must be 'capture' or 'profile'");
  }
  if (const char* v = env("KERNCAP_OUTPUT")) c.output = v;
  if (const char* v = env("KERNCAP_KERNEL")) c.kernel = v;
  if (const char* v = env("KERNCAP_REGEX")) c.regex = truthy(v);
  if (const char* v = env("KERNCAP_DISPATCH"); v && !parse_u64(v, &c.dispatch))
    problem("KERNCAP_DISPATCH is not a number");
  if (const char* v = env("KERNCAP_CONTINUE")) c.keep_running = truthy(v);
  if (const char* v = env("KERNCAP_DUMP_IMAGES")) c.dump_images = truthy(v);
  if (const char* v = env("KERNCAP_VERBOSE")) c.verbose = std::atoi(v);
  uint64_t n = 0;
  if (const char* v = env("KERNCAP_CHUNK_BYTES")) {
    if (parse_u64(v, &n) && n >= 256 && (n & (n - 1)) == 0) c.chunk_bytes = static_cast<uint32_t>(n);
    else problem("KERNCAP_CHUNK_BYTES must be a power of two >= 256");
  }
  if (const char* v = env("KERNCAP_STAGING_BYTES")) {
    if (parse_u64(v, &n) && n >= (1u << 20)) c.staging_bytes = n & ~uint64_t{4095};
    else problem("KERNCAP_STAGING_BYTES must be at least 1 MiB");
  }
  if (c.mode != Mode::Off && c.output.empty()) {
    problem("KERNCAP_OUTPUT is not set");
    c.mode = Mode::Off;
  }
  if (c.mode == Mode::Capture && c.kernel.empty()) {
    problem("KERNCAP_KERNEL is not set");
    c.mode = Mode::Off;
  }
  return c;
}

nlohmann::json Config::to_json() const {
  return {{"mode", mode == Mode::Capture ? "capture" : mode == Mode::Profile ? "profile" : "off"},
          {"kernel", kernel},
          {"regex", regex},
          {"dispatch", dispatch},
          {"continue", keep_running},
          {"chunk_bytes", chunk_bytes},
          {"staging_bytes", staging_bytes}};
}

}  // namespace kerncap::capture
