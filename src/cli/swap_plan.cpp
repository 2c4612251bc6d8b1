#include "cli/swap_plan.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "extract/environment.hpp"
#include "extract/launcher.hpp"
#include "format/capture_dir.hpp"
#include "format/out_layout.hpp"
#include "format/strict_json.hpp"
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

std::string compile_triton_variant(const fs::path& out, const fs::path& py, const std::array<uint32_t, 3>& grid,
                                   const std::array<uint32_t, 3>& block, uint32_t shared,
                                   const std::array<uint32_t, 3>& cluster, std::string* verdict) {
  std::error_code ec;
  const fs::path reproducer = out / format::out::kReproducerPy;
  const fs::path own = out / format::out::kKernelVariantPy;
  if (!fs::is_regular_file(reproducer, ec))
    input_error(fmt::format("{} is a Python file, but {} has no {}: a kernel_variant.py is swapped through the "
                            "reproducer of a Triton capture (extract a Triton kernel)",
                            py.string(), out.string(), format::out::kReproducerPy));
  if (!fs::equivalent(py, own, ec))
    input_error(fmt::format("{}: give {} (the file the reproducer compiles; edit that one)", py.string(), own.string()));
  const extract::HostEnv host = extract::read_host_env();
  const std::string python = host.python.value_or("python3");
  const fs::path log = out / ".kerncap" / "swap-compile.log";
  fs::create_directories(log.parent_path(), ec);
  fs::remove(out / format::out::kCandidateJson, ec);
  const extract::AppOutput output{log, log};
  // Without --json the reproducer ends with the judge's one line, "Result: ..." (printed beside the swap).
  const extract::AppExit e = extract::run_application({python, reproducer.string()}, false, {}, &output);
  std::string text;
  {
    std::ifstream in(log, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (!e.exited || (e.code != 0 && e.code != 1) || !fs::is_regular_file(out / format::out::kCandidateJson, ec))
    input_error(fmt::format("the reproducer could not compile {} ({} {}; its output is in {}):\n{}", py.string(),
                            python, e.describe(), log.string(), text.size() > 1500 ? text.substr(text.size() - 1500) : text));
  if (const size_t p = text.rfind("\nResult:"); p != std::string::npos)
    *verdict = text.substr(p + 1, text.find('\n', p + 1) == std::string::npos ? std::string::npos
                                                                             : text.find('\n', p + 1) - p - 1);
  else if (text.starts_with("Result:"))
    *verdict = text.substr(0, text.find('\n'));
  const fs::path cand = out / format::out::kCandidateJson;
  std::ifstream in(cand, std::ios::binary);
  const std::string doc_text((std::istreambuf_iterator<char>(in)), {});
  const format::JsonDoc doc{"candidate.json " + cand.string(), "run the reproducer again"};
  const nlohmann::json j = format::parse_bounded_json(doc_text, doc);
  const format::JsonField root(j, doc);
  auto dims = [&](const char* key) {
    std::array<uint32_t, 3> d{};
    const format::JsonField f = root.at(key);
    if (f.array_size(3) != 3) f.fail("is not three numbers");
    for (size_t i = 0; i < 3; ++i) d[i] = f.elem(i).u32();
    return d;
  };
  const auto g = dims("grid"), b = dims("block"), c = dims("cluster");
  const uint32_t sh = root.at("shared_mem_bytes").u32();
  auto text3 = [](const std::array<uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); };
  auto same_cluster = [](const std::array<uint32_t, 3>& x, const std::array<uint32_t, 3>& y) {
    auto none = [](const std::array<uint32_t, 3>& d) { return d[0] <= 1 && d[1] <= 1 && d[2] <= 1; };
    return x == y || (none(x) && none(y));
  };
  if (g != grid || b != block || sh != shared || !same_cluster(c, cluster))
    input_error(fmt::format(
        "the edited {} changes the launch geometry (grid {} -> {}, block {} -> {}, shared {} -> {} bytes): a swap "
        "keeps the application's own grid and block for every launch, so this variant cannot serve them; keep "
        "BLOCK, num_warps and the other meta-parameters that decide the geometry (or change them in the "
        "application)",
        py.filename().string(), text3(grid), text3(g), text3(block), text3(b), shared, sh));
  return (out / format::out::kCandidateCubin).string();
}

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
  if (image_arg.ends_with(".py")) {
    // A Triton capture's kernel_variant.py: compiled by its reproducer into candidate.cubin.
    if (!is_capture(target))
      usage_error(fmt::format("--swap {}: a kernel_variant.py needs its capture as TARGET (OUT=OUT/kernel_variant.py)", arg));
    const fs::path cap = format::resolve_capture_dir(target);
    const fs::path out = cap.filename() == "capture" ? cap.parent_path() : cap;
    const format::Capture c = format::open_capture(cap);
    const format::Manifest& m = c.manifest;
    plan.compiled_from = fs::absolute(image_arg, ec).string();
    image_arg = compile_triton_variant(out, image_arg, m.grid, m.block, m.shared_mem_bytes, m.cluster,
                                       &plan.compile_verdict);
  }
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
