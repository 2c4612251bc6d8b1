#include "replay/sass_regions.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/log.hpp"
#include "cubin/cubin.hpp"
#include "lint/disassembler.hpp"
#include "lint/sass.hpp"

namespace kerncap::replay {

KernelSass read_kernel_sass(const format::Capture& cap) {
  const format::Manifest& m = cap.manifest;
  KernelSass out;
  try {
    const std::vector<uint8_t> image = cap.read(m.image_file, "the code image");
    const std::vector<uint8_t> code = cubin::code_for(image, m.cc_major * 10 + m.cc_minor);
    if (cubin::detect_kind(code) != cubin::ImageKind::Cubin) {
      out.why = "the image holds the kernel as PTX, compiled by the driver at load time: no SASS to read";
      return out;
    }
    const cubin::Image parsed = cubin::parse_cubin(code);
    const cubin::KernelInfo* k = parsed.find_kernel(m.mangled_name);
    if (!k) {
      out.why = "the kernel is not in the image's cubin";
      return out;
    }
    const lint::Disassembly d = lint::disassemble(code);
    const lint::SassFunctions fns = lint::parse_sass(d.text);
    const auto fn = fns.find(m.mangled_name);
    if (fn == fns.end() || fn->second.empty()) {
      out.why = fmt::format("{} printed no code for the kernel", d.tool);
      return out;
    }
    out.disassembler = d.tool;
    out.facts = analyse_sass(fn->second, k->param_cbank_offset);
  } catch (const Error& e) {
    out.why = e.what();
  }
  return out;
}

WrittenExtents written_extents(const format::Manifest& m, const format::Footprint* footprint) {
  WrittenExtents out;
  auto add = [&](uint32_t id, uint64_t b, uint64_t e) {
    if (b >= e) return;
    auto [it, fresh] = out.try_emplace(id, b, e);
    if (!fresh) it->second = {std::min(it->second.first, b), std::max(it->second.second, e)};
  };
  for (const auto& a : m.after) add(a.region, a.offset, a.offset + a.size);
  if (footprint)
    for (const auto& r : footprint->regions) {
      uint64_t first = UINT64_MAX, last = 0;  // bits
      r.written.for_each_word([&](uint64_t w, uint64_t bits) {
        first = std::min(first, w * 64 + static_cast<uint64_t>(std::countr_zero(bits)));
        last = w * 64 + 63 - static_cast<uint64_t>(std::countl_zero(bits));
      });
      if (first == UINT64_MAX) continue;
      const uint64_t g = r.written.granule();
      add(r.id, first * g, std::min(r.size, (last + 1) * g));
    }
  return out;
}

namespace {

const format::Region* region_at(const format::Manifest& m, uint64_t a) {
  for (const auto& r : m.regions)
    if (a >= r.base && a - r.base < r.size) return &r;
  return nullptr;
}

}  // namespace

std::vector<TypedSpan> sass_spans(const SassFacts& f, const format::Manifest& m, const std::vector<uint8_t>& params,
                                  const WrittenExtents& written, const std::vector<TypedSpan>& signature) {
  if (f.calls) return {};  // stores in the callees are not seen
  // Stores by the region their parameter points into; the others may reach any region.
  std::map<uint32_t, std::vector<const SassStore*>> into;
  std::vector<const SassStore*> anywhere;
  for (const SassStore& s : f.stores) {
    if (s.driver_memory) continue;  // a grid barrier, the stack: no region of the capture
    const format::Region* r = nullptr;
    if (s.param && uint64_t{*s.param} + 8 <= params.size()) {
      uint64_t a = 0;
      std::memcpy(&a, params.data() + *s.param, 8);
      r = region_at(m, a);
    }
    if (r) into[r->id].push_back(&s);
    else anywhere.push_back(&s);
  }
  std::vector<TypedSpan> out;
  for (const auto& [id, extent] : written) {
    auto r = std::find_if(m.regions.begin(), m.regions.end(), [&](const format::Region& x) { return x.id == id; });
    // A CUDA array is written through surfaces (SUST), which are not stores of this analysis.
    if (r == m.regions.end() || r->kind == format::MemKind::Array) continue;
    const bool typed = std::any_of(signature.begin(), signature.end(), [&](const TypedSpan& t) {
      return t.base < r->base + r->size && t.base + t.size > r->base;
    });
    if (typed) continue;
    std::vector<const SassStore*> reach = anywhere;
    if (auto it = into.find(id); it != into.end()) reach.insert(reach.end(), it->second.begin(), it->second.end());
    ValueType t{ValueKind::Zero, compare::DType::Bytes};
    for (const SassStore* s : reach) {
      if (s->value.kind == ValueKind::Zero) continue;
      if (t.kind == ValueKind::Zero) t = s->value;
      else if (!(t == s->value)) t = {ValueKind::Unknown, compare::DType::Bytes};
    }
    if (t.kind != ValueKind::Float) continue;
    const uint64_t e = compare::dtype_size(t.dtype);
    const uint64_t b = extent.first / e * e;
    const uint64_t end = std::min(r->size, (extent.second + e - 1) / e * e);
    if (end < b + e) continue;
    out.push_back({r->base + b, end - b, t.dtype, compare::default_tolerance(t.dtype), "sass"});
  }
  std::sort(out.begin(), out.end(), [](const TypedSpan& a, const TypedSpan& b) { return a.base < b.base; });
  return out;
}

std::string describe_float_atomics(const SassFacts& f) {
  if (f.float_atomics.empty()) return "";
  std::string first = f.float_atomics.front();
  if (first.starts_with("@")) first = first.substr(std::min(first.find(' ') + 1, first.size()));
  first = first.substr(0, first.find(' '));
  if (f.float_atomics.size() == 1) return first;
  return fmt::format("{} and {} more", first, f.float_atomics.size() - 1);
}

}  // namespace kerncap::replay
