#pragma once
// What a kernel is, from its name alone: which library or compiler made it (kind), what
// it does (category), and whether kerncap can expect to find its source. Table-driven
// (classify.cpp holds the tables, ordered, first match wins) and unit tested with real
// names from PyTorch, cuBLAS, cuDNN, Triton/Inductor, vLLM and NCCL traces.
#include <optional>
#include <string>
#include <string_view>

namespace kerncap::names {

enum class Kind {
  Triton,          // @triton.jit kernels and Inductor's triton_poi_/per_/red_/tem_
  Cublas,          // cuBLAS (sm90_xmma_gemm_*, ampere_sgemm_*, gemv2T_kernel_val, ...)
  CublasLt,        // cuBLASLt (nvjet_*, cublasLt::*)
  Cutlass,         // CUTLASS templates (cutlass::*) or CUTLASS kernels shipped in a binary
  Cudnn,           // cuDNN (cudnn::*, xmma convolutions, generated SDPA)
  FlashAttention,  // flash-attention 2/3, also PyTorch's copy of it
  Aten,            // PyTorch's native kernels (at::native::*)
  CubThrust,       // cub:: / thrust:: algorithm kernels
  Nccl,            // NCCL collectives
  CudaLibrary,     // other CUDA math libraries (cuFFT, cuRAND, cuSPARSE, cuSOLVER)
  User,            // everything else: C++ CUDA kernels compiled from source
};

enum class Category {
  Attention, Gemm, MoeGemm, Norm, Softmax, Elementwise, Reduce, RouterTopk, KvCache,
  Copy, Memset, Collective, Quantize, Other,
};

struct Classification {
  Kind kind = Kind::User;
  Category category = Category::Other;
  // Whether kerncap's source finder can be expected to find the kernel's source: false
  // for kernels that come precompiled inside a library binary (cuBLAS, cuDNN, NCCL,
  // CUTLASS kernels inside cuBLAS, PyTorch's own kernels, flash-attention wheels).
  bool source_expected = true;
};

// `mangled` is the name CUPTI reported; `demangled` is demangle(mangled).
Classification classify(std::string_view mangled, std::string_view demangled);

std::string_view to_string(Kind k);
std::string_view to_string(Category c);

// The Kind that to_string spells `s` ("cublasLt", "flash-attn", ...); nullopt for any other text
// (case-sensitive, as written in locate_rules.toml).
std::optional<Kind> kind_from_string(std::string_view s);

}  // namespace kerncap::names
