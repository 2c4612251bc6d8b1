#include "format/manifest.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::format {
namespace {

constexpr std::array<std::pair<MemKind, const char*>, 8> kKinds{{
    {MemKind::Device, "device"},
    {MemKind::Pitch, "pitch"},
    {MemKind::Async, "async"},
    {MemKind::Managed, "managed"},
    {MemKind::HostMapped, "host_mapped"},
    {MemKind::HostRegistered, "host_registered"},
    {MemKind::Vmm, "vmm"},
    {MemKind::Global, "global"},
}};

std::string bytes_to_hex(const std::vector<uint8_t>& b) {
  std::string s;
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

// Strict: std::stoul would accept "+1" or " 1" and throw std::invalid_argument on "zz".
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::vector<uint8_t> hex_to_bytes(const std::string& s) {
  if (s.size() % 2) input_error("manifest: odd-length hex string");
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      input_error(fmt::format("capture manifest: '{}' is not hex bytes; the capture is damaged, extract again", s));
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

template <typename T>
T get(const nlohmann::json& j, const char* key) {
  if (!j.contains(key))
    input_error(fmt::format("capture manifest is missing '{}': the capture is incomplete or damaged; "
                            "extract it again",
                            key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    input_error(fmt::format("capture manifest field '{}' has the wrong type ({})", key, e.what()));
  }
}

}  // namespace

std::string to_string(MemKind k) {
  for (auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "device";
}

MemKind mem_kind_from_string(const std::string& s) {
  for (auto& [kind, name] : kKinds)
    if (s == name) return kind;
  input_error(fmt::format("capture manifest: unknown memory kind '{}'", s));
}

const Region* Manifest::find_region(uint32_t id) const {
  for (const auto& r : regions)
    if (r.id == id) return &r;
  return nullptr;
}

nlohmann::json to_json(const Manifest& m) {
  using nlohmann::json;
  json j;
  j["format"] = kFormatName;
  j["format_version"] = m.format_version;
  j["tool_version"] = m.tool_version;
  j["config"] = m.config;
  j["process"] = {{"pid", m.pid}, {"command", m.command}};
  j["device"] = {{"ordinal", m.device_ordinal},
                 {"name", m.device_name},
                 {"cc", {m.cc_major, m.cc_minor}},
                 {"driver_version", m.driver_version}};
  json attrs = json::array();
  for (const auto& a : m.launch_attrs) attrs.push_back({{"id", a.id}, {"name", a.name}, {"raw", bytes_to_hex(a.raw)}});
  json fattrs = json::array();
  for (const auto& a : m.func_attrs) fattrs.push_back({{"id", a.id}, {"name", a.name}, {"value", a.value}});
  j["kernel"] = {{"mangled", m.mangled_name},
                 {"demangled", m.demangled_name},
                 {"dispatch", m.dispatch},
                 {"launch_index", m.launch_index}};
  j["launch"] = {{"api", m.launch_api},
                 {"grid", m.grid},
                 {"block", m.block},
                 {"shared_mem_bytes", m.shared_mem_bytes},
                 {"cooperative", m.cooperative},
                 {"cluster", m.cluster},
                 {"attributes", attrs},
                 {"function_attributes", fattrs}};
  json slots = json::array();
  for (const auto& p : m.params) slots.push_back({{"offset", p.offset}, {"size", p.size}});
  j["params"] = {{"file", m.params_file}, {"size", m.params_size}, {"source", m.params_source}, {"slots", slots}};
  j["image"] = {{"file", m.image_file}, {"kind", m.image_kind}, {"xxh64", hex_addr(m.image_hash)}};
  json regions = json::array();
  for (const auto& r : m.regions) {
    json jr = {{"id", r.id},   {"kind", to_string(r.kind)}, {"base", hex_addr(r.base)},
               {"size", r.size}, {"file", r.file},          {"xxh64", hex_addr(r.xxh64)}};
    if (!r.global.empty()) jr["global"] = r.global;
    regions.push_back(jr);
  }
  j["regions"] = regions;
  json runs = json::array();
  for (const auto& a : m.after)
    runs.push_back({{"region", a.region}, {"offset", a.offset}, {"size", a.size}, {"file_offset", a.file_offset}});
  j["after"] = {{"file", m.after_file}, {"chunk_bytes", m.chunk_bytes}, {"runs", runs}};
  j["stats"] = {{"before_bytes", m.before_bytes}, {"after_bytes", m.after_bytes}, {"capture_seconds", m.capture_seconds}};
  if (m.in_app_median_ns) j["in_app_median_ns"] = *m.in_app_median_ns;
  return j;
}

Manifest from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("format", "") != kFormatName)
    input_error("not a kerncap capture manifest (no \"format\": \"kerncap-capture\")");
  Manifest m;
  m.format_version = get<int>(j, "format_version");
  if (m.format_version > kFormatVersion)
    input_error(fmt::format("this capture was written by a newer kerncap (format version {}); this kerncap "
                            "reads up to version {}: update kerncap or extract again with this one",
                            m.format_version, kFormatVersion));
  if (m.format_version < 1) input_error(fmt::format("invalid capture format version {}", m.format_version));
  m.tool_version = j.value("tool_version", "");
  m.config = j.value("config", nlohmann::json::object());
  const auto& proc = get<nlohmann::json>(j, "process");
  m.pid = proc.value("pid", 0);
  m.command = proc.value("command", "");
  const auto dev = get<nlohmann::json>(j, "device");
  m.device_ordinal = get<int>(dev, "ordinal");
  m.device_name = dev.value("name", "");
  auto cc = get<std::array<int, 2>>(dev, "cc");
  m.cc_major = cc[0];
  m.cc_minor = cc[1];
  m.driver_version = dev.value("driver_version", 0);
  const auto k = get<nlohmann::json>(j, "kernel");
  m.mangled_name = get<std::string>(k, "mangled");
  m.demangled_name = k.value("demangled", m.mangled_name);
  m.dispatch = k.value("dispatch", uint64_t{0});
  m.launch_index = k.value("launch_index", uint64_t{0});
  const auto l = get<nlohmann::json>(j, "launch");
  m.launch_api = l.value("api", "cuLaunchKernel");
  m.grid = get<std::array<uint32_t, 3>>(l, "grid");
  m.block = get<std::array<uint32_t, 3>>(l, "block");
  m.shared_mem_bytes = get<uint32_t>(l, "shared_mem_bytes");
  m.cooperative = l.value("cooperative", false);
  m.cluster = l.value("cluster", std::array<uint32_t, 3>{0, 0, 0});
  for (const auto& a : l.value("attributes", nlohmann::json::array()))
    m.launch_attrs.push_back({get<int>(a, "id"), a.value("name", ""), hex_to_bytes(a.value("raw", ""))});
  for (const auto& a : l.value("function_attributes", nlohmann::json::array()))
    m.func_attrs.push_back({get<int>(a, "id"), a.value("name", ""), get<int>(a, "value")});
  const auto p = get<nlohmann::json>(j, "params");
  m.params_file = get<std::string>(p, "file");
  m.params_size = get<uint64_t>(p, "size");
  m.params_source = p.value("source", "");
  for (const auto& s : p.value("slots", nlohmann::json::array()))
    m.params.push_back({get<uint32_t>(s, "offset"), get<uint32_t>(s, "size")});
  const auto im = get<nlohmann::json>(j, "image");
  m.image_file = get<std::string>(im, "file");
  m.image_kind = im.value("kind", "cubin");
  m.image_hash = parse_hex_addr(im.value("xxh64", "0x0"));
  for (const auto& r : get<nlohmann::json>(j, "regions")) {
    Region reg;
    reg.id = get<uint32_t>(r, "id");
    reg.kind = mem_kind_from_string(get<std::string>(r, "kind"));
    reg.base = parse_hex_addr(get<std::string>(r, "base"));
    reg.size = get<uint64_t>(r, "size");
    reg.file = get<std::string>(r, "file");
    reg.xxh64 = parse_hex_addr(r.value("xxh64", "0x0"));
    reg.global = r.value("global", "");
    m.regions.push_back(reg);
  }
  const auto a = get<nlohmann::json>(j, "after");
  m.after_file = get<std::string>(a, "file");
  m.chunk_bytes = a.value("chunk_bytes", 4096u);
  for (const auto& r : get<nlohmann::json>(a, "runs")) {
    AfterRun run{get<uint32_t>(r, "region"), get<uint64_t>(r, "offset"), get<uint64_t>(r, "size"),
                 get<uint64_t>(r, "file_offset")};
    const Region* reg = m.find_region(run.region);
    if (!reg || run.offset + run.size > reg->size)
      input_error(fmt::format("capture manifest: AFTER run for region {} lies outside it", run.region));
    m.after.push_back(run);
  }
  const auto st = j.value("stats", nlohmann::json::object());
  m.before_bytes = st.value("before_bytes", uint64_t{0});
  m.after_bytes = st.value("after_bytes", uint64_t{0});
  m.capture_seconds = st.value("capture_seconds", 0.0);
  if (j.contains("in_app_median_ns")) {  // optional; when present, a number >= 0
    const auto& v = j["in_app_median_ns"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      input_error(fmt::format("capture manifest field 'in_app_median_ns' must be a number >= 0, not {}", v.dump()));
    m.in_app_median_ns = v.get<double>();
  }
  return m;
}

}  // namespace kerncap::format
