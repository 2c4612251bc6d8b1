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

bool starts_with_any(const std::string& s, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return s.starts_with(p); });
}

// The identifiers of the name that the rule calls functors (FillFunctor, sum_functor,
// MeanOps), less those that only wrap another (BinaryFunctor<..., MulFunctor<float>>).
std::vector<std::string> functors(const LocateRule& rule, const std::string& demangled) {
  std::vector<std::string> out;
  if (!rule.functors_re) return out;
  for (auto w : identifiers(demangled)) {
    // No functor name is this long; std::regex recurses per character (untrusted names).
    if (w.size() > 1024) continue;
    const std::string s(w);
    if (!std::regex_search(s, *rule.functors_re)) continue;
    if (std::find(rule.wrappers.begin(), rule.wrappers.end(), s) != rule.wrappers.end()) continue;
    out.push_back(s);
  }
  // In the order the name spells them: the outer functor first.
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return demangled.find(a + "<") < demangled.find(b + "<");
  });
  return out;
}

// Backwards from `end` (one past a closing bracket) over a balanced (...) or <...>: the
// position of its opening bracket, or npos.
size_t open_of(const std::string& s, size_t end, char open, char close) {
  int depth = 0;
  for (size_t i = end; i-- > 0;) {
    if (s[i] == close) ++depth;
    else if (s[i] == open && --depth == 0) return i;
  }
  return std::string::npos;
}

// The function whose lambda each `...)::{lambda` of the name belongs to, innermost first:
// `direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}` -> direct_copy_kernel_cuda,
// `masked_fill_kernel<bool>(...)::{lambda...` -> masked_fill_kernel, and for a member
// `S<...>::operator()<...>(...)::{lambda` the class S. Launch helpers are left out.
std::vector<std::string> lambda_functions(const LocateRule& rule, const std::string& demangled) {
  std::vector<std::string> out;
  auto ident_end = [&](size_t end) {  // identifier ending at `end`
    size_t b = end;
    while (b > 0 && (std::isalnum(static_cast<unsigned char>(demangled[b - 1])) || demangled[b - 1] == '_')) --b;
    return demangled.substr(b, end - b);
  };
  auto skip_args = [&](size_t end) {  // before an optional <...>
    return end > 0 && demangled[end - 1] == '>' ? open_of(demangled, end, '<', '>') : end;
  };
  for (size_t at = demangled.find("::{lambda"); at != std::string::npos; at = demangled.find("::{lambda", at + 1)) {
    size_t end = at;
    if (end >= 6 && demangled.compare(end - 6, 6, " const") == 0) end -= 6;
    if (end == 0 || demangled[end - 1] != ')') continue;
    size_t p = open_of(demangled, end, '(', ')');
    if (p == std::string::npos) continue;
    p = skip_args(p);
    if (p == std::string::npos) continue;
    std::string fn;
    if (p >= 10 && demangled.compare(p - 10, 10, "operator()") == 0) {
      // A member's lambda: the class is what the source defines.
      size_t q = p - 10;
      if (q < 2 || demangled.compare(q - 2, 2, "::") != 0) continue;
      q = skip_args(q - 2);
      if (q == std::string::npos) continue;
      fn = ident_end(q);
    } else {
      fn = ident_end(p);
    }
    if (fn.empty() || starts_with_any(fn, rule.helpers)) continue;
    if (std::find(out.begin(), out.end(), fn) == out.end()) out.push_back(fn);
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
  // "nll_loss*": every kernel whose name starts so (nll_loss_forward_reduce_cuda_kernel_2d).
  for (const auto& [key, op] : rules.ops)
    if (key.ends_with("*") && fn.starts_with(std::string_view(key).substr(0, key.size() - 1))) return op;
  if (functor) return snake(strip(fn, {"CUDAFunctor_", "Compare"}, {"Functor", "_functor", "Functor_", "Ops"}));
  // GeluCUDAKernelImpl -> gelu; sigmoid_kernel_cuda -> sigmoid
  if (fn.ends_with("CUDAKernelImpl") || fn.ends_with("KernelImpl")) return snake(strip(fn, {}, {"CUDAKernelImpl", "KernelImpl"}));
  return strip(fn, {"launch_"}, {"_kernel_cuda", "_cuda_kernel", "_kernel_impl", "_kernel", "_cuda"});
}

}  // namespace

void locate_aten(Locator::Context& c) {
  const auto fns = functors(c.rule, c.out.demangled);
  const auto lambdas = lambda_functions(c.rule, c.out.demangled);
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
      // Written by a code generator into the build tree (torchgen's CUDAFunctor_add): the
      // function the generated functor calls holds the body.
      std::smatch g;
      if (!hit && c.rule.codegen_re && std::regex_search(f, g, *c.rule.codegen_re)) {
        const std::string fn = g[g.size() - 1].str();
        for (uint32_t id : files_under(repo, fn, c.rule.codegen_under)) {
          const auto* toks = c.cache.tokens(repo.path(id));
          if (!toks) continue;
          const auto lines = function_definitions(*toks, fn);
          if (lines.empty()) continue;
          found.push_back({repo.root, repo.files[id], lines.front(),
                           fmt::format("function {} (generated functor {} calls it)", fn, f)});
          hit = true;
          break;
        }
        // The ufunc's name is the op (CUDAFunctorOnSelf_add -> add), unless [ops] says otherwise.
        if (hit && op.empty() && !c.rules.ops.count(f)) op = fn;
      }
      if (hit && op.empty()) op = op_of(c.rules, f, true);
    }
    for (const auto& fn : lambdas) {
      bool hit = false;
      for (uint32_t id : files_under(repo, fn, c.rule.under)) {
        const auto* toks = c.cache.tokens(repo.path(id));
        if (!toks) continue;
        std::vector<std::pair<uint32_t, std::string>> lines;
        for (uint32_t line : function_definitions(*toks, fn)) lines.emplace_back(line, "function");
        for (const auto& d : type_definitions(*toks, fn)) lines.emplace_back(d.line, "class");
        if (!lines.empty()) {
          found.push_back({repo.root, repo.files[id], lines.front().first,
                           fmt::format("{} {} (the kernel runs its lambda)", lines.front().second, fn)});
          hit = true;
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
