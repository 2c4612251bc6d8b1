// `kerncap locate` on the look-alike repositories of tests/fixtures/locate (written for
// these tests; see its README): one case per rule, and names that must not match.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.hpp"
#include "source/locate.hpp"
#include "source/locate_output.hpp"

namespace kerncap::source {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& repo) { return fs::path(KERNCAP_FIXTURES) / "locate" / repo; }

LocateResult find(const std::string& repo, const std::string& name, const LocateOptions& opt = {}) {
  std::vector<RepoIndex> repos;
  if (!repo.empty()) repos.push_back(build_index(fixture(repo)));
  Locator loc(load_locate_rules({}), std::move(repos));
  return loc.locate(name, opt);
}

std::string where(const LocateResult& r) {
  return r.sources.empty() ? "" : r.sources.front().file + ":" + std::to_string(r.sources.front().line);
}

TEST(Locate, AtenFunctorIsTheAnswerAndItsOpGivesTheTest) {
  const auto r = find("torchish",
                      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
                      "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(r.rule, "aten");
  EXPECT_EQ(where(r), "aten/src/ATen/native/cuda/Fill.cu:5");  // not mps/, not build/, not .hidden/
  ASSERT_GE(r.sources.size(), 2u);
  EXPECT_EQ(r.sources[1].file, "aten/src/ATen/native/cuda/CUDALoops.cuh");
  EXPECT_EQ(r.test_command, "pytest test/test_torch.py -k fill_");
}

TEST(Locate, AtenCompareFunctorMapsToItsOpTestFile) {
  const auto r = find("torchish",
                      "void at::native::vectorized_elementwise_kernel<4, at::native::CompareEqFunctor<float>, std::array<char*, 3ul> >"
                      "(int, at::native::CompareEqFunctor<float>, std::array<char*, 3ul>)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "aten/src/ATen/native/cuda/CompareEQKernel.cu:3");
  EXPECT_EQ(r.test_command, "pytest test/test_binary_ufuncs.py -k eq");
}

TEST(Locate, AtenLambdaKernelPointsAtItsFunction) {
  const auto r = find(
      "torchish",
      "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda"
      "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>"
      "(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
      "const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, int)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "aten/src/ATen/native/cuda/Copy.cu:3");
  EXPECT_EQ(r.test_command, "pytest test/test_torch.py -k copy_");
}

TEST(Locate, AtenKernelTemplateInAnonymousNamespace) {
  const auto r = find("torchish",
                      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                      "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "aten/src/ATen/native/cuda/SoftMax.cu:6");
  EXPECT_EQ(r.test_command, "pytest test/test_nn.py -k softmax");
}

TEST(Locate, TritonJitByNameWithItsTests) {
  const auto r = find("tkern", "_matmul_ogs");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "triton_kernels/matmul_ogs.py:12");
  ASSERT_FALSE(r.tests.empty());
  EXPECT_EQ(r.tests.front().file, "tests/test_matmul.py");  // imports the wrapper; bench/ is no test
  EXPECT_EQ(r.tests.size(), 1u);
  EXPECT_EQ(r.test_command, "pytest tests/test_matmul.py -k matmul_ogs");
}

TEST(Locate, TritonSpecializedNameAndBareJitDecorator) {
  auto r = find("tkern", "_matmul_ogs_NNT_bf16xbf16_128x256");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "triton_kernels/matmul_ogs.py:12");
  r = find("tkern", "_topk_forward");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "triton_kernels/topk.py:5");
  // A plain function (no @triton.jit) of that name is no kernel.
  EXPECT_EQ(find("tkern", "_not_a_kernel").status, LocateStatus::NotFound);
  EXPECT_EQ(find("tkern", "matmul_ogs").status, LocateStatus::NotFound);
}

TEST(Locate, CxxKernelNamespacesMustMatch) {
  const auto r = find("vllmish",
                      "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, "
                      "c10::BFloat16 const*, float, int, int)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "csrc/layernorm_kernels.cu:5");
  EXPECT_EQ(r.sources.size(), 1u) << "legacy::rms_norm_kernel is a namesake";
  ASSERT_FALSE(r.tests.empty());
  EXPECT_EQ(r.tests.front().file, "tests/kernels/test_layernorm.py");  // mentions the host wrapper rms_norm
  EXPECT_EQ(r.test_command, "pytest tests/kernels/test_layernorm.py -k rms_norm");
}

TEST(Locate, CxxNamesOnlyInCommentsOrOtherNamespacesAreNotFound) {
  EXPECT_EQ(find("vllmish", "void vllm::fused_add_rms_norm_kernel<float>(float*)").status, LocateStatus::NotFound);
  EXPECT_EQ(find("vllmish", "void other::rms_norm_kernel<float>(float*)").status, LocateStatus::NotFound);
  // The mangled form of legacy::rms_norm_kernel<float>(float*) finds only that one.
  const auto r = find("vllmish", "_ZN6legacy15rms_norm_kernelIfEEvPT_");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "other/legacy.cu:4");
}

TEST(Locate, KernelDefinedThroughAMacro) {
  const auto r = find("vllmish", "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>, false>(flash::Flash_fwd_params)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "flash_fwd_launch.h:6");
}

TEST(Locate, CutlassSpecializationAndClosestUnitTest) {
  const std::string name =
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
      "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, "
      "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, "
      "cute::tuple<cute::C<128>, cute::C<128>, cute::C<64> >, cutlass::half_t>, void, void> >"
      "(cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, int, void, void>::Params)";
  const auto r = find("cutlassish", name);
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(r.rule, "cutlass");
  EXPECT_EQ(where(r), "include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp:3");
  ASSERT_GE(r.sources.size(), 2u);
  EXPECT_EQ(r.sources[1].file, "include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp");
  ASSERT_FALSE(r.tests.empty());
  EXPECT_EQ(r.tests.front().file, "test/unit/gemm/device/sm90_gemm_f16_cooperative.cu");
  EXPECT_EQ(r.test_command,
            "cmake --build build --target cutlass_test_unit_gemm_device_sm90 && ctest --test-dir build -R "
            "cutlass_test_unit_gemm_device_sm90");
}

TEST(Locate, ClosedSourceLibrariesAreNeverSearched) {
  for (const char* n : {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
                        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)",
                        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"}) {
    SCOPED_TRACE(n);
    const auto r = find("cutlassish", n);
    EXPECT_EQ(r.status, LocateStatus::ClosedSource);
    EXPECT_TRUE(r.sources.empty());
    EXPECT_FALSE(r.library.empty());
    EXPECT_FALSE(r.reproduce.empty());
  }
  EXPECT_NE(find("", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT").library.find("cuBLASLt"), std::string::npos);
}

TEST(Locate, InductorKernelIsGeneratedAndFoundInACapture) {
  auto r = find("tkern", "triton_poi_fused_add_mul_0");
  EXPECT_EQ(r.status, LocateStatus::Generated);
  EXPECT_TRUE(r.sources.empty());
  LocateOptions opt;
  opt.capture = fixture("capture");
  r = find("tkern", "triton_poi_fused_add_mul_0", opt);
  EXPECT_EQ(r.status, LocateStatus::Generated);
  ASSERT_EQ(r.sources.size(), 1u) << format_locate(r);
  EXPECT_EQ(r.sources[0].line, 5u);
  bool origin = false;
  for (const auto& n : r.notes) origin |= n.find("Original ATen: [aten.add, aten.mul]") != std::string::npos;
  EXPECT_TRUE(origin) << format_locate(r);
}

TEST(Locate, LlamaCppKernelsGetTestBackendOps) {
  auto r = find("llamaish", "void mul_mat_q<(ggml_type)12, 64, false>(char const*, int const*, float*)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "ggml/src/ggml-cuda/mmq.cuh:2");
  EXPECT_EQ(r.test_command, "./build/bin/test-backend-ops test -b CUDA0 -o MUL_MAT");
  r = find("llamaish", "_Z13quantize_q8_1PKfPvl");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(r.cls.category, names::Category::Quantize);
}

TEST(Locate, SeveralReposFirstHitWinsAndJsonCarriesSourceAndTest) {
  std::vector<RepoIndex> repos;
  repos.push_back(build_index(fixture("tkern")));
  repos.push_back(build_index(fixture("vllmish")));
  Locator loc(load_locate_rules({}), std::move(repos));
  const auto r = loc.locate("_ZN4vllm15rms_norm_kernelIfEEvPT_PKS1_S4_fii");
  ASSERT_EQ(r.status, LocateStatus::Found);
  const auto j = to_json(r);
  EXPECT_EQ(j["status"], "found");
  EXPECT_NE(j["source"].get<std::string>().find("csrc/layernorm_kernels.cu:5"), std::string::npos);
  EXPECT_EQ(j["test"]["command"], "pytest tests/kernels/test_layernorm.py -k rms_norm");
}

TEST(LocateIndex, SkipsBuildTreesHiddenFoldersAndBinaries) {
  const RepoIndex idx = build_index(fixture("torchish"));
  for (const auto& f : idx.files) {
    EXPECT_EQ(f.find("build/"), std::string::npos) << f;
    EXPECT_EQ(f.find(".hidden/"), std::string::npos) << f;
  }
  EXPECT_EQ(idx.files_with("FillFunctor").size(), 2u);  // cuda/Fill.cu and mps/Fill.mm.h
  EXPECT_THROW(build_index(fixture("no-such-repo")), Error);
}

TEST(LocateIndex, TritonScanner) {
  const auto defs = triton_functions(
      "@triton.autotune(configs=[\n  triton.Config({}),\n], key=[])\n@triton.jit\ndef k1(x):\n  pass\n"
      "@jit\ndef k2(x): pass\n@staticmethod\ndef not_kernel(x): pass\n\"\"\"@triton.jit\"\"\"\ndef k3(): pass\n");
  ASSERT_EQ(defs.size(), 2u);
  EXPECT_EQ(defs[0], (std::pair<std::string, uint32_t>{"k1", 5}));
  EXPECT_EQ(defs[1], (std::pair<std::string, uint32_t>{"k2", 8}));
}

TEST(LocateIndex, TestPaths) {
  EXPECT_TRUE(is_test_path("tests/kernels/test_layernorm.py"));
  EXPECT_TRUE(is_test_path("test/unit/gemm/device/x.cu"));
  EXPECT_TRUE(is_test_path("python/test_x.py"));
  EXPECT_TRUE(is_test_path("tests/test-backend-ops.cpp"));
  EXPECT_FALSE(is_test_path("csrc/layernorm_kernels.cu"));
  EXPECT_FALSE(is_test_path("latest/attestation.py"));
}

TEST(LocateRulesFile, UserRulesComeFirstAndBadOnesAreInputErrors) {
  LocateRules user = parse_locate_rules(
      "version = 1\n[[rule]]\nname = \"mine\"\nmatch = '^my_'\nstrategy = \"closed\"\nlibrary = \"libmine\"\n"
      "[ops]\nFillFunctor = \"fill\"\n",
      "mine.toml");
  ASSERT_EQ(user.rules.size(), 1u);
  EXPECT_EQ(user.rules[0].strategy, Strategy::Closed);
  try {
    parse_locate_rules("[[rule]]\nname = \"x\"\nstrategy = \"magic\"\n", "bad.toml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("bad.toml:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_locate_rules("[[rule]]\nstrategy = \"cxx\"\nmatch = '('\n", "re.toml"), Error);
  EXPECT_THROW(parse_locate_rules("[[rule]]\nstrategy = \"cxx\"\ntypo = 1\n", "typo.toml"), Error);
  EXPECT_THROW(load_locate_rules({"/no/such/rules.toml"}), Error);
  const LocateRules builtin = load_locate_rules({});
  EXPECT_GE(builtin.rules.size(), 10u);
}

}  // namespace
}  // namespace kerncap::source
