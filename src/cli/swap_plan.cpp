#include "cli/swap_plan.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "names/demangle.hpp"
#include "names/kernel_name.hpp"
#include "replay/signature.hpp"
#include "replay/variant_image.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

std::pair<std::string, std::string> split_swap_arg(const std::string& arg) {
  const size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    usage_error(fmt::format("--swap '{}': give TARGET=IMAGE (a capture or a kernel name, '=', a cubin, fatbin or "
                            "PTX file)",
                            arg));
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

namespace {

std::string layout_text(const std::vector<format::ParamSlot>& slots) {
  std::string s;
  for (const auto& p : slots) s += fmt::format("{}{}@{}", s.empty() ? "" : ", ", p.size, p.offset);
  return "[" + s + "]";
}

const cubin::KernelInfo* kernel_of(const cubin::Image& img, const std::string& name) { return img.find_kernel(name); }

bool is_capture(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) &&
         (fs::exists(p / format::kManifestName, ec) || fs::exists(p / "capture" / format::kManifestName, ec));
}

}  // namespace

namespace {
// The element type each parameter points at, from the kernel's C++ signature (shadow checking
// compares a region within its type's tolerance); empty without one.
std::vector<std::string> param_dtypes(const std::string& mangled) {
  const names::KernelName n = names::parse_kernel_name(mangled, names::demangle(mangled));
  std::vector<std::string> out;
  if (!n.cxx) return out;
  for (const auto& p : n.params) {
    const auto t = replay::pointee_dtype(p);
    out.push_back(t ? compare::to_string(*t) : "");
  }
  return out;
}
}  // namespace

SwapPlan plan_swap(const std::string& arg) {
  SwapPlan plan = plan_swap_names(arg);
  plan.spec.param_dtypes = param_dtypes(plan.spec.kernel);
  return plan;
}

SwapPlan plan_swap_names(const std::string& arg) {
  auto [target, image_arg] = split_swap_arg(arg);
  SwapPlan plan;
  plan.target = target;
  std::error_code ec;
  const fs::path image_path = fs::absolute(image_arg, ec);
  const replay::VariantImage image = replay::read_variant_image(image_path);
  plan.spec.image = fs::weakly_canonical(image_path, ec).string();
  if (plan.spec.image.empty()) plan.spec.image = image_path.string();
  cubin::Image parsed;
  bool readable = true;
  try {
    parsed = cubin::parse_image(image.bytes);
  } catch (const Error&) {
    readable = false;  // an image we cannot read is left to the driver, as validate --cubin does
  }

  if (is_capture(target)) {
    const format::Capture cap = format::open_capture(format::resolve_capture_dir(target));
    const format::Manifest& m = cap.manifest;
    plan.capture = cap.dir.string();
    plan.spec.kernel = m.mangled_name;
    plan.demangled = m.demangled_name;
    try {
      plan.spec.entry = replay::kernel_in_variant(image.bytes, image.desc, m.mangled_name);
    } catch (const Error& e) {
      // A C++ kernel's name spells its parameter types: a variant of another layout has
      // another name. Say so, when the image has a kernel of the same base name.
      const names::KernelName want = names::parse_kernel_name(m.mangled_name, m.demangled_name);
      if (readable && want.cxx)
        for (const auto& k : parsed.kernels) {
          const names::KernelName have = names::parse_kernel_name(k.name, names::demangle(k.name));
          if (have.cxx && have.base == want.base && have.scopes == want.scopes)
            input_error(fmt::format("--swap {}: the variant's {} takes ({}) where the captured kernel takes ({}): "
                                    "another parameter layout, refused before the application runs",
                                    arg, have.base, fmt::join(have.params, ", "), fmt::join(want.params, ", ")));
        }
      throw;
    }
    if (readable && !m.params.empty()) {
      if (const cubin::KernelInfo* k = kernel_of(parsed, plan.spec.entry); k && !k->params.empty()) {
        std::vector<format::ParamSlot> variant;
        for (const auto& p : k->params) variant.push_back({p.offset, p.size});
        if (variant.size() != m.params.size() ||
            !std::equal(variant.begin(), variant.end(), m.params.begin(), [](const auto& a, const auto& b) {
              return a.offset == b.offset && a.size == b.size;
            }))
          input_error(fmt::format(
              "--swap {}: the variant's kernel {} takes its parameters at another layout than the captured kernel "
              "(size@offset: variant {}, captured {}); a swapped launch would hand it the application's bytes at "
              "the wrong places, so it is refused before the application runs",
              arg, plan.spec.entry, layout_text(variant), layout_text(m.params)));
        plan.layout_checked = true;
      }
    }
    return plan;
  }

  // A kernel name: the whole mangled name, or a pattern naming one kernel of the image.
  if (!readable) {
    plan.spec.kernel = plan.spec.entry = target;
    plan.demangled = names::demangle(target);
    return plan;
  }
  std::vector<std::string> hits;
  for (const auto& k : parsed.kernels) {
    if (k.name == target) {
      hits = {k.name};
      break;
    }
    if (k.name.find(target) != std::string::npos || names::demangle(k.name).find(target) != std::string::npos)
      hits.push_back(k.name);
  }
  if (hits.size() != 1) {
    std::string have;
    for (const auto& k : parsed.kernels) have += "\n  " + names::demangle(k.name) + "  (" + k.name + ")";
    input_error(fmt::format("--swap {}: {} of the kernels in {} match '{}'; name one by its mangled name (or give "
                            "a capture of the kernel as TARGET). The image holds:{}",
                            arg, hits.empty() ? "none" : std::to_string(hits.size()), image.desc, target, have));
  }
  plan.spec.kernel = plan.spec.entry = hits.front();
  plan.demangled = names::demangle(hits.front());
  return plan;
}

std::vector<SwapPlan> plan_swaps(const std::vector<std::string>& args) {
  if (args.size() > format::kMaxSwaps) usage_error(fmt::format("at most {} --swap options", format::kMaxSwaps));
  std::vector<SwapPlan> plans;
  for (const auto& a : args) {
    SwapPlan p = plan_swap(a);
    for (const auto& q : plans)
      if (q.spec.kernel == p.spec.kernel)
        usage_error(fmt::format("--swap {} and --swap {} name the same kernel {}", q.target, p.target, p.demangled));
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace kerncap::cli
