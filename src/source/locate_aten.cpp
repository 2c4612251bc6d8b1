// `kerncap locate` for PyTorch's native kernels. What an ATen kernel does is in its template
// arguments, not its name: vectorized_elementwise_kernel<4, FillFunctor<float>, ...> is
// Fill.cu's FillFunctor, elementwise_kernel<..., direct_copy_kernel_cuda(...)::{lambda...}>
// is a lambda inside direct_copy_kernel_cuda. So the answer is, in this order, the functor,
// the function whose lambda is the kernel's body, and the __global__ template itself.
#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "source/cxx_scan.hpp"
#include "source/locate_internal.hpp"

namespace kerncap::source {
namespace {

// Launch helpers whose lambdas wrap the real one: never the answer.
bool helper(const std::string& fn) {
  return fn == "operator" || fn.starts_with("gpu_kernel") || fn.starts_with("launch_legacy") ||
         fn.starts_with("launch_vectorized") || fn.starts_with("opmath_") || fn.starts_with("elementwise_kernel") ||
         fn == "jitted_gpu_kernel" || fn.starts_with("_");
}

std::vector<std::string> functors(const std::string& demangled) {
  std::vector<std::string> out;
  static const std::regex re(R"([A-Za-z_]\w*)");
  for (std::sregex_iterator m(demangled.begin(), demangled.end(), re), e; m != e; ++m) {
    const std::string w = m->str();
    std::string lower = w;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (lower.find("functor") == std::string::npos) continue;
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  return out;
}

std::vector<std::string> lambda_functions(const std::string& demangled) {
  std::vector<std::string> out;
  static const std::regex re(R"(([A-Za-z_]\w*)\([^()]*\)(\s*const)?::\{lambda)");
  for (std::sregex_iterator m(demangled.begin(), demangled.end(), re), e; m != e; ++m) {
    const std::string fn = (*m)[1].str();
    if (!helper(fn) && std::find(out.begin(), out.end(), fn) == out.end()) out.push_back(fn);
  }
  return out;
}

std::string snake(const std::string& camel) {
  std::string out;
  for (size_t i = 0; i < camel.size(); ++i) {
    const char ch = camel[i];
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (i > 0 && camel[i - 1] != '_' && !std::isupper(static_cast<unsigned char>(camel[i - 1]))) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      out += ch;
    }
  }
  return out;
}

std::string strip(std::string s, const std::vector<std::string>& prefixes, const std::vector<std::string>& suffixes) {
  for (const auto& p : prefixes)
    if (s.starts_with(p) && s.size() > p.size()) s = s.substr(p.size());
  for (const auto& x : suffixes)
    if (s.ends_with(x) && s.size() > x.size()) s = s.substr(0, s.size() - x.size());
  return s;
}

// The ATen op a functor or kernel function implements: the [ops] table, else its name
// without the decoration ("AbsFunctor" -> "abs", "sigmoid_kernel_cuda" -> "sigmoid").
std::string op_of(const LocateRules& rules, const std::string& fn, bool functor) {
  if (auto it = rules.ops.find(fn); it != rules.ops.end()) return it->second;
  if (functor) return snake(strip(fn, {"CUDAFunctor_", "Compare"}, {"Functor", "_functor", "Functor_"}));
  return strip(fn, {"launch_"}, {"_kernel_cuda", "_cuda_kernel", "_kernel_impl", "_kernel", "_cuda"});
}

}  // namespace

void locate_aten(Locator::Context& c) {
  const auto fns = functors(c.out.demangled);
  const auto lambdas = lambda_functions(c.out.demangled);
  for (const auto& repo : c.repos) {
    std::vector<SourceRef> found;
    std::string op;
    for (const auto& f : fns) {
      bool hit = false;
      for (uint32_t id : files_under(repo, f, c.rule.under)) {
        const auto* toks = c.cache.tokens(repo.path(id));
        if (!toks) continue;
        for (const auto& d : type_definitions(*toks, f)) {
          found.push_back({repo.root, repo.files[id], d.line, "functor " + f});
          hit = true;
          break;
        }
        if (hit) break;
      }
      if (hit && op.empty()) op = op_of(c.rules, f, true);
    }
    for (const auto& fn : lambdas) {
      bool hit = false;
      for (uint32_t id : files_under(repo, fn, c.rule.under)) {
        const auto* toks = c.cache.tokens(repo.path(id));
        if (!toks) continue;
        for (uint32_t line : function_definitions(*toks, fn)) {
          found.push_back({repo.root, repo.files[id], line, fmt::format("function {} (the kernel runs its lambda)", fn)});
          hit = true;
          break;
        }
        if (hit) break;
      }
      if (hit && op.empty()) op = op_of(c.rules, fn, false);
    }
    auto kernels = kernel_definitions(c, repo, c.name.base, c.name.scopes, false, c.rule.under);
    if (kernels.empty()) kernels = kernel_definitions(c, repo, c.name.base, {}, true, c.rule.under);
    for (auto& k : kernels) k.what = (found.empty() ? "" : "kernel template ") + k.what;
    found.insert(found.end(), kernels.begin(), kernels.end());
    if (found.empty()) continue;
    const bool first = c.out.sources.empty();
    c.out.sources.insert(c.out.sources.end(), found.begin(), found.end());
    if (!first) continue;
    c.out.status = LocateStatus::Found;
    if (op.empty()) {
      // The kernel's own name can say it: softmax_warp_forward, vectorized_layer_norm_kernel.
      op = op_of(c.rules, c.name.base, false);
      if (op == c.name.base) op.clear();
    }
    if (!test_from_rules(c, repo, found.front().file, op)) {
      std::set<std::string> words = {c.name.base};
      if (!op.empty()) words.insert(op);
      find_tests(c, repo, words, op);
    }
  }
}

}  // namespace kerncap::source
