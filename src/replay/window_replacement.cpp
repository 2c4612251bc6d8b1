#include "replay/window_replacement.hpp"

#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::replay {
namespace {

const format::JsonDoc kReplacementDoc{"replacement (--replace)",
                                      "see docs/window.md \"Replacements\" for the launches file"};
constexpr uint64_t kMaxReplacementJson = 1 << 20;
constexpr size_t kMaxReplacementLaunches = 256, kMaxReplacementArgs = 1024;

std::array<uint32_t, 3> replacement_dims(const format::JsonField& f, std::array<uint32_t, 3> hi) {
  if (f.array_size() != 3) f.fail("must have 3 elements");
  return {f.elem(0).u32(1, hi[0]), f.elem(1).u32(1, hi[1]), f.elem(2).u32(1, hi[2])};
}

template <typename T>
uint64_t replacement_bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

ReplacementArg replacement_arg(const format::JsonField& f, const format::Manifest& m) {
  f.object();
  const char* kUsage = "must be {\"region\": ID, \"offset\": BYTES} or one of {\"i32\": V}, {\"u32\": V}, {\"i64\": V}, "
                       "{\"u64\": V}, {\"f32\": V}, {\"f64\": V}";
  ReplacementArg a;
  using K = ReplacementArg::Kind;
  if (const auto r = f.find("region")) {
    if (f.json().size() > (f.find("offset") ? 2u : 1u)) f.fail(kUsage);
    a.region = r->u32();
    const format::Region* reg = m.find_region(a.region);
    if (!reg) r->fail(fmt::format("names region {}, which the capture does not have", a.region));
    if (const auto o = f.find("offset")) a.offset = o->u64(0, reg->size);
    return a;
  }
  if (f.json().size() != 1) f.fail(kUsage);
  const std::string key = f.json().begin().key();
  const format::JsonField v = f.at(key.c_str());
  if (key == "i32") a.kind = K::I32, a.bits = replacement_bits(static_cast<int32_t>(v.i32()));
  else if (key == "u32") a.kind = K::U32, a.bits = v.u32();
  else if (key == "i64") a.kind = K::I64, a.bits = replacement_bits(v.i64());
  else if (key == "u64") a.kind = K::U64, a.bits = v.u64();
  else if (key == "f32") a.kind = K::F32, a.bits = replacement_bits(static_cast<float>(v.number()));
  else if (key == "f64") a.kind = K::F64, a.bits = replacement_bits(v.number());
  else f.fail(kUsage);
  return a;
}

}  // namespace

Replacement replacement_from_json(const nlohmann::json& j, size_t from, size_t to, const std::filesystem::path& dir,
                                  const format::Manifest& m) {
  const format::JsonField top(j, kReplacementDoc);
  top.object();
  Replacement r;
  r.from = from;
  r.to = to;
  const format::JsonField launches = top.at("launches");
  const size_t n = launches.array_size(kMaxReplacementLaunches);
  if (n == 0) launches.fail("is empty: a replacement that launches nothing replaces nothing (use a no-op kernel)");
  bool fresh = false;
  for (size_t i = 0; i < n; ++i) {
    const format::JsonField l = launches.elem(i);
    l.object();
    ReplacementLaunch rl;
    if (const auto op = l.find("op")) {
      if (l.json().size() != 1) l.fail("is {\"op\": N} (the window's operation N as captured) with nothing beside it");
      rl.op = op->u64(from, to);
      r.launches.push_back(std::move(rl));
      continue;
    }
    const std::string image = l.at("image").str(4096);
    if (image.empty()) l.at("image").fail("is empty");
    rl.image = std::filesystem::path(image).is_absolute() ? std::filesystem::path(image) : dir / image;
    rl.kernel = l.at("kernel").str(64 << 10);
    if (rl.kernel.empty()) l.at("kernel").fail("is empty");
    rl.grid = replacement_dims(l.at("grid"), {2147483647u, 65535u, 65535u});
    rl.block = replacement_dims(l.at("block"), {1024u, 1024u, 64u});
    if (uint64_t{rl.block[0]} * rl.block[1] * rl.block[2] > 1024) l.at("block").fail("has more than 1024 threads");
    if (const auto s = l.find("shared_mem_bytes")) rl.shared_mem_bytes = s->u32(0, 1u << 20);
    const format::JsonField args = l.at("args");
    for (size_t k = 0, na = args.array_size(kMaxReplacementArgs); k < na; ++k)
      rl.args.push_back(replacement_arg(args.elem(k), m));
    r.launches.push_back(std::move(rl));
    fresh = true;
  }
  if (!fresh) launches.fail("has only {\"op\": N} entries: it launches nothing new (the captured window is validated without --replace)");
  return r;
}

Replacement read_replacement(const std::string& spec, const format::Window& w, const format::Manifest& m) {
  const size_t eq = spec.find('='), dots = spec.find("..");
  auto bad = [&] {
    usage_error(fmt::format("--replace '{}': expected FROM..TO=launches.json (operation indices of `kerncap window "
                            "info`, inclusive)",
                            spec));
  };
  if (eq == std::string::npos || dots == std::string::npos || dots > eq || eq + 1 == spec.size()) bad();
  const std::string a = spec.substr(0, dots), b = spec.substr(dots + 2, eq - dots - 2);
  if (a.empty() || b.empty() || a.size() > 9 || b.size() > 9 || a.find_first_not_of("0123456789") != std::string::npos ||
      b.find_first_not_of("0123456789") != std::string::npos)
    bad();
  const size_t from = std::stoull(a), to = std::stoull(b);
  if (from > to || to >= w.ops.size())
    usage_error(fmt::format("--replace {}..{}: the window has operations 0 to {} (FROM <= TO)", from, to,
                            w.ops.size() - 1));
  const std::filesystem::path file = spec.substr(eq + 1);
  const auto f = format::ReadOnlyFile::open(file);
  const std::vector<uint8_t> bytes = f.read_all(kMaxReplacementJson);
  const nlohmann::json j = format::parse_bounded_json(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), kReplacementDoc);
  Replacement r = replacement_from_json(j, from, to, std::filesystem::absolute(file).parent_path(), m);
  r.spec = spec;
  return r;
}

std::vector<uint8_t> pack_replacement_args(const std::vector<ReplacementArg>& args,
                                           const std::function<uint64_t(uint32_t)>& address,
                                           std::vector<format::ParamSlot>* slots) {
  std::vector<uint8_t> out;
  slots->clear();
  for (const auto& a : args) {
    using K = ReplacementArg::Kind;
    const uint32_t size = a.kind == K::I32 || a.kind == K::U32 || a.kind == K::F32 ? 4 : 8;
    const uint64_t v = a.kind == K::Pointer ? address(a.region) + a.offset : a.bits;
    const uint32_t at = static_cast<uint32_t>((out.size() + size - 1) / size * size);
    out.resize(at + size);
    std::memcpy(out.data() + at, &v, size);  // little-endian: the low bytes for a 32-bit value
    slots->push_back({at, size});
  }
  return out;
}

}  // namespace kerncap::replay
