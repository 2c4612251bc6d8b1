// The strict manifest reader: a capture directory is untrusted input (it travels with bug
// reports), so every field is taken only when it has exactly the type and range it needs.
#include <fmt/format.h>

#include "common/error.hpp"
#include "format/chunk_store.hpp"
#include "format/manifest.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"
#include "format/textures_json.hpp"

namespace kerncap::format {
namespace {

const JsonDoc kDoc{"capture manifest", "the capture is damaged or was not written by kerncap; extract it again"};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Strict: std::stoul would accept "+1" or " 1".
std::vector<uint8_t> hex_bytes(const JsonField& f) {
  const std::string s = f.str(2 * kMaxLaunchAttrBytes);
  if (s.size() % 2) f.fail("is not hex bytes (odd length)");
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) f.fail(fmt::format("('{}') is not hex bytes", s.substr(0, 2 * kMaxLaunchAttrBytes)));
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

std::string opt_str(const JsonField& obj, const char* key, const std::string& def = "") {
  const auto f = obj.find(key);
  return f ? f->str() : def;
}

std::string file_name(const JsonField& f) {
  std::string name = f.str(4096);  // check_capture_name says what is wrong with a long one
  check_capture_name(name, f.path());
  return name;
}

std::array<uint32_t, 3> dims(const JsonField& f, const std::array<uint32_t, 3>& lo, const std::array<uint32_t, 3>& hi) {
  if (f.array_size() != 3) f.fail(fmt::format("has {} elements, expected 3", f.array_size()));
  std::array<uint32_t, 3> d{};
  for (size_t i = 0; i < 3; ++i) d[i] = f.elem(i).u32(lo[i], hi[i]);
  return d;
}

int read_version(const JsonField& top) {
  const JsonField v = top.at("format_version");
  if (!v.json().is_number_integer()) v.wrong_type("an integer");
  const int64_t n = v.json().is_number_unsigned() && v.json().get<uint64_t>() > INT64_MAX ? INT64_MAX : v.json().get<int64_t>();
  if (n > kFormatVersion)
    input_error(fmt::format("this capture was written by a newer kerncap (format version {}); this kerncap reads up "
                            "to version {}: update kerncap or extract again with this one",
                            n, kFormatVersion));
  if (n < kOldestFormatVersion)
    v.fail(fmt::format("is {}: not a capture format version (this kerncap reads {} to {})", n, kOldestFormatVersion,
                       kFormatVersion));
  return static_cast<int>(n);
}

void read_launch(const JsonField& l, Manifest& m) {
  m.launch_api = opt_str(l, "api", "cuLaunchKernel");
  m.grid = dims(l.at("grid"), {1, 1, 1}, {kMaxGridX, kMaxGridYZ, kMaxGridYZ});
  m.block = dims(l.at("block"), {1, 1, 1}, kMaxBlock);
  m.shared_mem_bytes = l.at("shared_mem_bytes").u32(0, kMaxSharedMemBytes);
  if (const auto f = l.find("cooperative")) m.cooperative = f->boolean();
  if (const auto f = l.find("cluster")) m.cluster = dims(*f, {0, 0, 0}, {kMaxClusterDim, kMaxClusterDim, kMaxClusterDim});
  if (const auto attrs = l.find("attributes"))
    for (size_t i = 0, n = attrs->array_size(); i < n; ++i) {
      const JsonField a = attrs->elem(i);
      const auto raw = a.find("raw");
      m.launch_attrs.push_back({a.at("id").i32(0), opt_str(a, "name"), raw ? hex_bytes(*raw) : std::vector<uint8_t>{}});
    }
  if (const auto attrs = l.find("function_attributes"))
    for (size_t i = 0, n = attrs->array_size(); i < n; ++i) {
      const JsonField a = attrs->elem(i);
      m.func_attrs.push_back({a.at("id").i32(0), opt_str(a, "name"), a.at("value").i32()});
    }
}

void read_memory(const JsonField& top, Manifest& m) {
  const JsonField regions = top.at("regions");
  for (size_t i = 0, n = regions.array_size(); i < n; ++i) {
    const JsonField r = regions.elem(i);
    Region reg;
    reg.id = r.at("id").u32();
    const JsonField kind = r.at("kind");
    const std::string k = kind.str(64);
    try {
      reg.kind = mem_kind_from_string(k);
    } catch (const Error&) {
      kind.fail(fmt::format("is an unknown memory kind '{}'", k));
    }
    if (reg.kind == MemKind::Array && m.format_version < 4)
      kind.fail("is 'array' in a capture of format version 3 or older (CUDA arrays came with version 4)");
    reg.base = r.at("base").hex();
    reg.size = r.at("size").u64();
    // Version 3: a file, or the chunks that hold the stored bytes; exactly one of them.
    const auto file = r.find("file");
    const auto chunks = r.find("chunks");
    if (chunks && m.format_version < 3)
      chunks->fail("appears in a format version 1 or 2 capture (chunks came with version 3)");
    if (m.format_version < 3 || !chunks) reg.file = file_name(r.at("file"));
    if (chunks) {
      if (file) chunks->fail("is given together with 'file' (a region's bytes are in one or the other)");
      for (size_t j = 0, nj = chunks->array_size(); j < nj; ++j) {
        const JsonField c = chunks->elem(j);
        if (c.array_size() != 3) c.fail(fmt::format("has {} elements, expected [hash, size, stored]", c.array_size()));
        ChunkRef ref;
        const JsonField h = c.elem(0);
        if (!parse_chunk_hash(h.str(64), ref)) h.fail("is not a chunk name (32 lowercase hex digits)");
        ref.size = c.elem(1).u64(1, kMaxChunkBytes);
        ref.stored = c.elem(2).u64(1, ref.size);
        reg.chunks.push_back(ref);
      }
    }
    if (const auto h = r.find("xxh64")) reg.xxh64 = h->hex();
    reg.global = opt_str(r, "global");
    if (const auto om = r.find("omitted")) {
      if (m.format_version < 2) om->fail("appears in a format version 1 capture (omitted regions came with version 2)");
      reg.omitted = om->boolean();
    }
    if (const auto st = r.find("stored")) {
      if (m.format_version < 2) st->fail("appears in a format version 1 capture (sparse regions came with version 2)");
      reg.stored.emplace();
      for (size_t j = 0, nj = st->array_size(); j < nj; ++j) {
        const JsonField run = st->elem(j);
        if (run.array_size() != 2) run.fail(fmt::format("has {} elements, expected [offset, size]", run.array_size()));
        reg.stored->push_back({run.elem(0).u64(), run.elem(1).u64(1)});
      }
    }
    if (const auto pr = r.find("pruned")) {
      if (m.format_version < 3) pr->fail("appears in a format version 1 or 2 capture (pruning came with version 3)");
      for (size_t j = 0, nj = pr->array_size(); j < nj; ++j) {
        const JsonField run = pr->elem(j);
        if (run.array_size() != 2) run.fail(fmt::format("has {} elements, expected [offset, size]", run.array_size()));
        reg.pruned.push_back({run.elem(0).u64(), run.elem(1).u64(1)});
      }
    }
    if (const auto d = r.find("device")) reg.device = d->i32(0, kMaxDeviceOrdinal);  // absent: not recorded
    m.regions.push_back(std::move(reg));
  }
  if (const auto cs = top.find("chunk_store")) {
    if (m.format_version < 3) cs->fail("appears in a format version 1 or 2 capture");
    if (const auto e = cs->find("external")) m.external_store = e->boolean();
    if (const auto h = cs->find("hint")) {
      m.store_hint = h->str(4096);  // printed in messages: plain text only
      for (const char ch : m.store_hint)
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) h->fail("holds a control character");
    }
  }
  const JsonField a = top.at("after");
  m.after_file = file_name(a.at("file"));
  if (const auto c = a.find("chunk_bytes")) m.chunk_bytes = c->u32(1);
  const JsonField runs = a.at("runs");
  for (size_t i = 0, n = runs.array_size(); i < n; ++i) {
    const JsonField r = runs.elem(i);
    m.after.push_back({r.at("region").u32(), r.at("offset").u64(), r.at("size").u64(), r.at("file_offset").u64()});
  }
}

Manifest read(const nlohmann::json& j) {
  const JsonField top(j, kDoc);
  if (!j.is_object() || !j.contains("format") || !j.at("format").is_string() || j.at("format") != kFormatName)
    input_error("not a kerncap capture manifest (no \"format\": \"kerncap-capture\")");
  const int version = read_version(top);
  Manifest m;
  m.format_version = version;
  m.tool_version = opt_str(top, "tool_version");
  if (const auto c = top.find("config"); c && !c->json().is_null()) {  // null: written without one
    c->object();
    m.config = c->json();  // depth already bounded by the parser
  }
  const JsonField proc = top.at("process");
  if (const auto f = proc.find("pid")) m.pid = f->i32();
  m.command = opt_str(proc, "command");

  const JsonField dev = top.at("device");
  m.device_ordinal = dev.at("ordinal").i32(0, kMaxDeviceOrdinal);
  m.device_name = opt_str(dev, "name");
  const JsonField cc = dev.at("cc");
  if (cc.array_size() != 2) cc.fail(fmt::format("has {} elements, expected 2 (major, minor)", cc.array_size()));
  m.cc_major = cc.elem(0).i32(0, kMaxComputeCapability);
  m.cc_minor = cc.elem(1).i32(0, kMaxComputeCapability);
  if (const auto f = dev.find("driver_version")) m.driver_version = f->i32(0);
  if (const auto f = dev.find("uuid")) m.device_uuid = f->str(64);  // absent before multi-GPU support

  const JsonField k = top.at("kernel");
  m.mangled_name = k.at("mangled").str(64 << 10);
  if (m.mangled_name.empty()) k.at("mangled").fail("is empty: the capture names no kernel");
  m.demangled_name = opt_str(k, "demangled", m.mangled_name);
  if (const auto f = k.find("dispatch")) m.dispatch = f->u64();
  if (const auto f = k.find("launch_index")) m.launch_index = f->u64();

  read_launch(top.at("launch"), m);

  const JsonField p = top.at("params");
  m.params_file = file_name(p.at("file"));
  m.params_size = p.at("size").u64(0, kMaxParamBytes);
  m.params_source = opt_str(p, "source");
  if (const auto slots = p.find("slots"))
    for (size_t i = 0, n = slots->array_size(kMaxParamSlots); i < n; ++i) {
      const JsonField s = slots->elem(i);
      m.params.push_back({s.at("offset").u32(), s.at("size").u32()});
    }

  const JsonField im = top.at("image");
  m.image_file = file_name(im.at("file"));
  m.image_kind = opt_str(im, "kind", "cubin");
  if (const auto h = im.find("xxh64")) m.image_hash = h->hex();

  read_memory(top, m);

  if (const auto st = top.find("stats")) {
    if (const auto f = st->find("before_bytes")) m.before_bytes = f->u64();
    if (const auto f = st->find("after_bytes")) m.after_bytes = f->u64();
    if (const auto f = st->find("capture_seconds")) m.capture_seconds = f->number();
  }
  if (const auto t = top.find("textures")) {
    if (m.format_version < 4)
      t->fail("appears in a capture of format version 3 or older (textures and surfaces came with version 4)");
    m.textures = textures_from_json(*t);
  }
  if (const auto f = top.find("in_app_median_ns")) {  // optional; when present, a number >= 0
    const double v = f->number();
    if (v < 0) f->fail("must be a number >= 0");
    m.in_app_median_ns = v;
  }
  if (const auto f = top.find("in_app_between_ns")) {  // optional; when present, a number >= 0
    const double v = f->number();
    if (v < 0) f->fail("must be a number >= 0");
    m.in_app_between_ns = v;
  }
  if (const auto f = top.find("in_app_samples")) m.in_app_samples = f->u64();
  if (const auto f = top.find("in_app_launches")) m.in_app_launches = f->u64();
  if (m.in_app_launches && m.in_app_samples > m.in_app_launches)
    input_error(fmt::format("manifest: in_app_samples ({}) exceeds in_app_launches ({})", m.in_app_samples,
                            m.in_app_launches));
  return m;
}

}  // namespace

Manifest from_json(const nlohmann::json& j) {
  Manifest m;
  try {
    m = read(j);
  } catch (const nlohmann::json::exception& e) {  // a path not covered above: still the input's fault
    kDoc.fail(fmt::format("unexpected content ({})", e.what()));
  }
  check_manifest(m);
  return m;
}

}  // namespace kerncap::format
