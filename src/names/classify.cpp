// Kernel classification tables. Each table is ordered; the first matching row wins.
// Patterns are ECMAScript regular expressions. Kind rows look at the bare function name
// (template arguments hold other libraries' types: at::native kernels instantiate
// thrust::complex, vLLM kernels c10::BFloat16) unless they say Full. Category rows look at
// the full demangled name, because what an ATen kernel does is in its functor argument
// (vectorized_elementwise_kernel<4, FillFunctor<float>, ...> is a memset).
#include "names/classify.hpp"

#include <optional>
#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

#include "names/demangle.hpp"

namespace kerncap::names {
namespace {

enum class Field { Base, Full };

struct KindRule {
  Field field;
  const char* pattern;
  Kind kind;
  bool source_expected;
};

// Libraries first (their names are distinctive), then PyTorch, then generic templates.
const KindRule kKindRules[] = {
    {Field::Base, R"(^nccl|^\{anon\}::nccl)", Kind::Nccl, false},
    // flash-attention 2 (flash_fwd_kernel), PyTorch's copy (pytorch_flash::), FA3
    // (cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>).
    {Field::Base, R"(flash_fwd|flash_bwd|(^|::)flash::|^pytorch_flash::)", Kind::FlashAttention, false},
    {Field::Full, R"(^(void )?cutlass::device_kernel<flash::)", Kind::FlashAttention, false},
    {Field::Base,
     R"(cudnn|^sm\d+_xmma_(fprop|dgrad|wgrad)|xmma_cudnn|implicit_convolve_|explicit_convolve_|)"
     R"(precomputed_convolve_|winograd|^nchwToNhwc|^nhwcToNchw|^fft2d_|^conv2d_grouped_direct)",
     Kind::Cudnn, false},
    {Field::Base, R"(^nvjet_|cublasLt)", Kind::CublasLt, false},
    {Field::Base,
     R"(cublas|^sm\d+_xmma_|^(maxwell|pascal|volta|turing|ampere|hopper|blackwell)_|^gemv2[NT]_kernel|)"
     R"(^gemvx?::|^gemmSN_[NT]N_kernel|^gemmk1_kernel|^splitKreduce_kernel|^gemvNSP_kernel)",
     Kind::Cublas, false},
    {Field::Full, R"(cublas)", Kind::Cublas, false},  // gemv/dot kernels take cublas*Params
    // PyTorch: at::native, its mem-efficient attention (built on CUTLASS), and the
    // kernels in PersistentSoftmax.cuh that live in an anonymous namespace.
    {Field::Base,
     R"(^at::|^c10::|^at_cuda_detail::(?!cub::)|^fmha_cutlass[FB]|^\{anon\}::(masked_)?softmax_warp_(forward|backward))",
     Kind::Aten, false},
    {Field::Full, R"(PyTorchMemEffAttention)", Kind::Aten, false},
    // CUTLASS kernels precompiled into cuBLAS and friends ("cutlass_80_tensorop_...",
    // "cutlass3x_sm90_...") versus CUTLASS templates instantiated in the user's code.
    {Field::Full, R"(cutlass_\d+_(tensorop|simt|wmma)|cutlass3x_)", Kind::Cutlass, false},
    {Field::Base, R"(^cutlass::|^cutlass_)", Kind::Cutlass, true},
    {Field::Base, R"((^|::)(cub|thrust)::)", Kind::CubThrust, true},
    {Field::Base, R"(cufft|cusparse|cusolver|curand|^(regular|vector)_fft|^npp)", Kind::CudaLibrary, false},
    {Field::Full, R"(curand|cufft)", Kind::CudaLibrary, false},
};

struct CategoryRule {
  const char* pattern;
  Category category;
};

// Order matters: KV-cache writers before attention (reshape_and_cache_flash_kernel says
// "flash"), attention before softmax (attention kernels fuse one), routing before
// softmax (topk_softmax), MoE before plain GEMM, Inductor's own naming before the generic
// words (triton_poi_fused__to_copy_add_0 is elementwise work, not a copy).
const CategoryRule kCategoryRules[] = {
    {R"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce|ncclKernel|ncclDevKernel)",
     Category::Collective},
    {R"(reshape_and_cache|concat_and_cache|copy_blocks|swap_blocks|store_kv_?cache|kv_?cache_(write|store|update|copy)|write_to_kv_?cache|append_paged_kv)",
     Category::KvCache},
    {R"(attention|attn|fmha|flash|(^|[^a-z])mha|sdpa|prefill|batchdecode|decode_kernel|(^|[_:])mla[_:])",
     Category::Attention},
    {R"(topk|top_k|moe_align|align_block_size|count_and_sort_expert|expert_(map|count|ids|index)|router|gating|moe_permute|moe_unpermute|token_to_expert|radixselect|bitonicsortkv)",
     Category::RouterTopk},
    {R"(fused_moe|moe_?gemm|moe_?mm|moefc|grouped_?gemm|fused_experts|experts?_gemm|moe_wna16)",
     Category::MoeGemm},
    {R"(rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|l2_?norm|gammabeta|rowwisemoments|welford|rsqrt.*(var_mean|mean)|(var_mean|mean).*rsqrt)",
     Category::Norm},
    {R"(softmax)", Category::Softmax},
    // Inductor: the kernel name lists the ATen ops it fuses.
    {R"(^triton_poi_fused_((_to_copy|clone|cat|copy|permute|transpose|view|_unsafe_view|expand|slice|select|index|embedding|constant_pad_nd|t)_)+\d+$)",
     Category::Copy},
    {R"(^triton_poi_)", Category::Elementwise},
    {R"(^triton_(per|red)_)", Category::Reduce},
    {R"(^triton_tem_)", Category::Gemm},
    // Quantized matrix products and stand-alone (de)quantization, which is its own kind of
    // work (llama.cpp's quantize_q8_1/quantize_mmq_q8_1, vLLM's scaled_fp8_quant_kernel), not
    // elementwise arithmetic. The older dequantize_mul_mat_vec is a GEMV that dequantizes
    // inside; quantize_mmq_q8_1 says "mmq" but only prepares mul_mat_q's input.
    {R"(dequantize_mul_mat)", Category::Gemm},
    {R"((^|[\s:_])(de)?quantiz|(^|[\s:])\w*_quant(_kernel)?[<(])", Category::Quantize},
    {R"((^|[^a-z])(mul_mat|mmvq|mmq|mmvf|mmf)([^a-z]|$)|matmul_ogs)", Category::Gemm},
    {R"(gemm|gemv|xmma|nvjet|matmul|(^|[^a-z])(b|add|addb)?mm([^a-z]|$)|wgmma|hgmma|tensorop|s1688|s16816|h1688|h16816|i8816|conv(\d+d|olution|olve|_)|fprop|dgrad|wgrad|splitkreduce|cutlass::kernel)",
     Category::Gemm},
    {R"(memset|fillfunctor|fill_kernel|zeros?_kernel|(^|[^a-z])fill_)", Category::Memset},
    {R"(copy|memcpy|(^|[^a-z])cpy_|get_rows|catarray|transpose|permute|contiguous|index_?select|gather|scatter|clone|concat|nchwtonhwc|nhwctonchw|im2col|col2im|unfold|(^|[^a-z])cat_)",
     Category::Copy},
    {R"(reduce|reduction|scan|cumsum|cumprod|argmax|argmin|histogram|moe_sum|(^|[^a-z])(sum|mean|amax|amin)([^a-z]|$))",
     Category::Reduce},
    {R"(elementwise|pointwise|vectorized|unrolled|activation|act_and_mul|silu|gelu|relu|swiglu|geglu|sigmoid|tanh|dropout|rotary|rope|bias|(^|[^a-z])(add|mul|sub|div|axpy|scal)(_|[^a-z]|$)|quant|cast|convert|apply)",
     Category::Elementwise},
};

struct CompiledKindRule {
  std::regex re;
  const KindRule* rule;
};

const std::vector<CompiledKindRule>& kind_rules() {
  static const std::vector<CompiledKindRule> rules = [] {
    std::vector<CompiledKindRule> v;
    for (const auto& r : kKindRules) v.push_back({std::regex(r.pattern, std::regex::ECMAScript), &r});
    return v;
  }();
  return rules;
}

const std::vector<std::pair<std::regex, Category>>& category_rules() {
  static const std::vector<std::pair<std::regex, Category>> rules = [] {
    std::vector<std::pair<std::regex, Category>> v;
    for (const auto& r : kCategoryRules)
      v.emplace_back(std::regex(r.pattern, std::regex::ECMAScript | std::regex::icase), r.category);
    return v;
  }();
  return rules;
}

// A name that is not mangled C++ and no library claimed: Triton (whose kernels are
// plain identifiers) or an `extern "C"` CUDA kernel, which the name cannot tell apart.
bool looks_like_triton(std::string_view mangled, std::string_view base) {
  if (is_mangled(mangled)) return false;
  if (base.starts_with("triton_")) return true;
  // A plain identifier, checked by hand: std::regex matching recurses once per character, and a
  // 64 KiB name from an untrusted capture overflowed the stack (issue 38's fuzz run).
  if (base.empty() || !(std::isalpha(static_cast<unsigned char>(base[0])) || base[0] == '_')) return false;
  return std::all_of(base.begin(), base.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

// The part of a name the classifier's regular expressions look at: libstdc++'s matcher recurses
// per character, so an untrusted name is cut to a length no real kernel name (CUTLASS's are a
// few KiB) comes near; what tells a library apart is at its start.
constexpr size_t kClassifyBytes = 8192;

// Categories a kind implies whatever the name says (cuBLAS only does GEMM-like work).
std::optional<Category> forced_category(Kind k) {
  switch (k) {
    case Kind::Nccl: return Category::Collective;
    case Kind::FlashAttention: return Category::Attention;
    case Kind::Cublas:
    case Kind::CublasLt: return Category::Gemm;
    default: return std::nullopt;
  }
}

// When no category row matched: what the library mostly does.
Category fallback_category(Kind k) {
  switch (k) {
    case Kind::Cutlass:
    case Kind::Cudnn: return Category::Gemm;
    default: return Category::Other;
  }
}

}  // namespace

Classification classify(std::string_view mangled, std::string_view demangled) {
  const std::string base = function_name(demangled.substr(0, kClassifyBytes));
  const std::string full(demangled.substr(0, kClassifyBytes));
  Classification c;
  bool kind_found = false;
  for (const auto& r : kind_rules()) {
    const std::string& hay = r.rule->field == Field::Base ? base : full;
    if (std::regex_search(hay, r.re)) {
      c.kind = r.rule->kind;
      c.source_expected = r.rule->source_expected;
      kind_found = true;
      break;
    }
  }
  if (!kind_found && looks_like_triton(mangled, base)) {
    c.kind = Kind::Triton;
    c.source_expected = true;  // the Triton shim records the source
  }
  if (auto f = forced_category(c.kind)) {
    c.category = *f;
    return c;
  }
  for (const auto& [re, cat] : category_rules()) {
    if (std::regex_search(full, re)) {
      c.category = cat;
      return c;
    }
  }
  c.category = fallback_category(c.kind);
  return c;
}

std::string_view to_string(Kind k) {
  switch (k) {
    case Kind::Triton: return "triton";
    case Kind::Cublas: return "cublas";
    case Kind::CublasLt: return "cublasLt";
    case Kind::Cutlass: return "cutlass";
    case Kind::Cudnn: return "cudnn";
    case Kind::FlashAttention: return "flash-attn";
    case Kind::Aten: return "aten";
    case Kind::CubThrust: return "cub/thrust";
    case Kind::Nccl: return "nccl";
    case Kind::CudaLibrary: return "cuda-lib";
    case Kind::User: return "user";
  }
  return "?";
}

std::optional<Kind> kind_from_string(std::string_view s) {
  for (Kind k : {Kind::Triton, Kind::Cublas, Kind::CublasLt, Kind::Cutlass, Kind::Cudnn, Kind::FlashAttention,
                 Kind::Aten, Kind::CubThrust, Kind::Nccl, Kind::CudaLibrary, Kind::User})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

std::string_view to_string(Category c) {
  switch (c) {
    case Category::Attention: return "attention";
    case Category::Gemm: return "gemm";
    case Category::MoeGemm: return "moe_gemm";
    case Category::Norm: return "norm";
    case Category::Softmax: return "softmax";
    case Category::Elementwise: return "elementwise";
    case Category::Reduce: return "reduce";
    case Category::RouterTopk: return "router/topk";
    case Category::KvCache: return "kv_cache";
    case Category::Copy: return "copy";
    case Category::Memset: return "memset";
    case Category::Collective: return "collective";
    case Category::Quantize: return "quantize";
    case Category::Other: return "other";
  }
  return "?";
}

}  // namespace kerncap::names
