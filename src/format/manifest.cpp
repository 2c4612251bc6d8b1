#include "format/manifest.hpp"


#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/chunk_store.hpp"
#include "format/textures_json.hpp"

namespace kerncap::format {
namespace {

constexpr std::array<std::pair<MemKind, const char*>, 9> kKinds{{
    {MemKind::Device, "device"},
    {MemKind::Pitch, "pitch"},
    {MemKind::Async, "async"},
    {MemKind::Managed, "managed"},
    {MemKind::HostMapped, "host_mapped"},
    {MemKind::HostRegistered, "host_registered"},
    {MemKind::Vmm, "vmm"},
    {MemKind::Global, "global"},
    {MemKind::Array, "array"},
}};

std::string bytes_to_hex(const std::vector<uint8_t>& b) {
  std::string s;
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

}  // namespace

uint64_t stored_bytes(const Region& r) {
  if (!r.stored) return r.size;
  uint64_t n = 0;
  for (const auto& s : *r.stored) n += s.size;  // check_regions made sure this does not wrap
  return n;
}

uint64_t pruned_bytes(const Region& r) {
  uint64_t n = 0;
  for (const auto& s : r.pruned) n += s.size;  // check_regions made sure this does not wrap
  return n;
}

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

size_t Manifest::peer_regions() const {
  size_t n = 0;
  for (const auto& r : regions) n += r.device >= 0 && r.device != device_ordinal;
  return n;
}

int format_version_for(const Manifest& m) {
  if (!m.textures.empty()) return kFormatVersion;
  for (const auto& r : m.regions)
    if (r.kind == MemKind::Array) return kFormatVersion;
  return 3;
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
  if (!m.device_uuid.empty()) j["device"]["uuid"] = m.device_uuid;
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
    json jr = {{"id", r.id}, {"kind", to_string(r.kind)}, {"base", hex_addr(r.base)}, {"size", r.size},
               {"xxh64", hex_addr(r.xxh64)}};
    // A file, or (version 3) chunks: [hash, bytes, stored bytes] each.
    if (!r.file.empty() || m.format_version < 3) {
      jr["file"] = r.file;
    } else {
      json chunks = json::array();
      for (const auto& c : r.chunks) chunks.push_back(json::array({chunk_hash_hex(c), c.size, c.stored}));
      jr["chunks"] = chunks;
    }
    if (!r.global.empty()) jr["global"] = r.global;
    if (r.omitted) jr["omitted"] = true;
    if (r.stored) {
      json st = json::array();
      for (const auto& s : *r.stored) st.push_back(json::array({s.offset, s.size}));
      jr["stored"] = st;
    }
    if (!r.pruned.empty()) {
      json pr = json::array();
      for (const auto& s : r.pruned) pr.push_back(json::array({s.offset, s.size}));
      jr["pruned"] = pr;
    }
    if (r.device >= 0) jr["device"] = r.device;
    regions.push_back(jr);
  }
  j["regions"] = regions;
  json runs = json::array();
  for (const auto& a : m.after)
    runs.push_back({{"region", a.region}, {"offset", a.offset}, {"size", a.size}, {"file_offset", a.file_offset}});
  if (m.external_store) j["chunk_store"] = {{"external", true}, {"hint", m.store_hint}};
  j["after"] = {{"file", m.after_file}, {"chunk_bytes", m.chunk_bytes}, {"runs", runs}};
  j["stats"] = {{"before_bytes", m.before_bytes}, {"after_bytes", m.after_bytes}, {"capture_seconds", m.capture_seconds}};
  if (!m.textures.empty()) j["textures"] = textures_to_json(m.textures);
  if (m.in_app_median_ns) j["in_app_median_ns"] = *m.in_app_median_ns;
  if (m.in_app_median_ns && m.in_app_samples) j["in_app_samples"] = m.in_app_samples;
  if (m.in_app_median_ns && m.in_app_launches) j["in_app_launches"] = m.in_app_launches;
  if (m.in_app_median_ns && m.in_app_between_ns) j["in_app_between_ns"] = *m.in_app_between_ns;
  return j;
}

}  // namespace kerncap::format
