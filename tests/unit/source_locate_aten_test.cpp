// `kerncap locate` for PyTorch kernel names as real profiles spell them, on the look-alike
// tree tests/fixtures/locate/torchish: wrapper functors, reduction ops, functors that
// torchgen writes into the build tree, lambdas of templated functions and of members, and
// the test file each gets. Also names that must not match.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.hpp"
#include "source/locate.hpp"
#include "source/locate_output.hpp"

namespace kerncap::source {
namespace {

namespace fs = std::filesystem;

LocateResult find(const std::string& name) {
  std::vector<RepoIndex> repos;
  repos.push_back(build_index(fs::path(KERNCAP_FIXTURES) / "locate" / "torchish"));
  Locator loc(load_locate_rules({}), std::move(repos));
  return loc.locate(name, {});
}

std::string where(const LocateResult& r) {
  return r.sources.empty() ? "" : r.sources.front().file + ":" + std::to_string(r.sources.front().line);
}

constexpr const char* kCuda = "aten/src/ATen/native/cuda/";

TEST(LocateAten, WrapperFunctorsGiveWayToTheOneTheyWrap) {
  for (const char* wrapper : {"BinaryFunctor", "AUnaryFunctor"}) {
    const auto r = find(std::string("void at::native::vectorized_elementwise_kernel<4, at::native::") + wrapper +
                        "<float, float, float, at::native::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
                        "at::native::" + wrapper + "<float, float, float, at::native::MulFunctor<float> >, "
                        "std::array<char*, 3ul>)");
    ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
    EXPECT_EQ(where(r), std::string(kCuda) + "BinaryMulKernel.cu:4") << wrapper;  // not Loops.cuh
    for (const auto& s : r.sources) EXPECT_NE(s.file, std::string(kCuda) + "Loops.cuh");
    EXPECT_EQ(r.test_command, "pytest test/test_binary_ufuncs.py -k mul");
  }
}

TEST(LocateAten, ReductionOpsStructsAreFunctors) {
  auto r = find("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
                "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, "
                "float, 4>)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "aten/src/ATen/native/SharedReduceOps.h:4");
  ASSERT_GE(r.sources.size(), 2u);  // ReduceOp is no functor: the kernel template comes next
  EXPECT_EQ(r.sources[1].file, std::string(kCuda) + "Reduce.cuh");
  EXPECT_EQ(r.test_command, "pytest test/test_reductions.py -k mean");
  r = find("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, "
           "unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)");
  EXPECT_EQ(where(r), "aten/src/ATen/native/SharedReduceOps.h:9");
  EXPECT_EQ(r.test_command, "pytest test/test_reductions.py -k argmax");
  // A [[test]] entry with `op` fits that op only: norms go to test_linalg.py.
  r = find("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float>, "
           "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float>, unsigned int, "
           "float, 4>)");
  EXPECT_EQ(where(r), "aten/src/ATen/native/SharedReduceOps.h:13");
  EXPECT_EQ(r.test_command, "pytest test/test_linalg.py -k norm");
}

TEST(LocateAten, GeneratedFunctorPointsAtTheUfuncItCalls) {
  const auto r = find("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
                      "std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), "aten/src/ATen/native/ufunc/add.h:5");  // not the namesake add() of cuda/Math.cuh
  EXPECT_NE(r.sources.front().what.find("generated functor CUDAFunctorOnSelf_add"), std::string::npos);
  EXPECT_EQ(r.test_command, "pytest test/test_binary_ufuncs.py -k add");
  // A functor the tree does define is its own answer, generator pattern or not.
  const auto own = find("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
  EXPECT_EQ(where(own), std::string(kCuda) + "BinaryAddSubKernel.cu:4");
}

TEST(LocateAten, LambdaOfATemplatedFunctionNotOfItsLaunchHelper) {
  const std::string impl =
      "at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, "
      "c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}";
  const std::string helper = "at::native::gpu_index_kernel<" + impl +
                             ">(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, " + impl +
                             " const&)::{lambda(int)#1}";
  auto r = find("void at::native::index_elementwise_kernel<128, 4, " + helper + ">(long, " + helper + ")");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), std::string(kCuda) + "IndexKernel.cu:13");  // index_kernel_impl, not gpu_index_kernel (:8)
  EXPECT_EQ(r.test_command, "pytest test/test_indexing.py");

  const std::string lam =
      "at::native::(anonymous namespace)::masked_fill_kernel<bool>(at::TensorIterator&, c10::Scalar const&)::"
      "{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float, bool)#1}";
  r = find("void at::native::vectorized_elementwise_kernel<4, " + lam + ", std::array<char*, 3ul> >(int, " + lam +
           ", std::array<char*, 3ul>)");
  EXPECT_EQ(where(r), std::string(kCuda) + "Indexing.cu:5");
  EXPECT_EQ(r.test_command, "pytest test/test_torch.py -k masked_fill");
}

TEST(LocateAten, LambdaOfAMemberIsItsClass) {
  const std::string lam =
      "at::native::_cuda_scatter_gather_internal_kernel<true, float>::operator()<at::native::ReduceAdd>"
      "(at::TensorIterator&, long, long, long, at::native::ReduceAdd const&)::{lambda(int)#1}";
  const auto r = find("void at::native::_scatter_gather_elementwise_kernel<128, 4, " + lam + ">(int, " + lam + ")");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), std::string(kCuda) + "ScatterGatherKernel.cu:8");
  EXPECT_NE(r.sources.front().what.find("class _cuda_scatter_gather_internal_kernel"), std::string::npos);
}

TEST(LocateAten, OpsFromKernelFunctionsAndNamePrefixes) {
  const std::string lam =
      "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
      "const::{lambda()#2}::operator()() const::{lambda(float)#1}";
  const std::string impl = "at::native::gpu_kernel_impl<" + lam + ">(at::TensorIteratorBase&, " + lam +
                           " const&)::{lambda(int)#1}";
  auto r = find("void at::native::elementwise_kernel<128, 2, " + impl + ">(int, " + impl + ")");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  EXPECT_EQ(where(r), std::string(kCuda) + "ActivationGeluKernel.cu:3");
  EXPECT_EQ(r.test_command, "pytest test/test_nn.py -k gelu");  // not -k GeluCUDAKernelImpl
  // [ops] "nll_loss*": every nll_loss_... kernel is the nll_loss op.
  r = find("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
           "(float*, float const*, long const*)");
  EXPECT_EQ(where(r), std::string(kCuda) + "LossNLL.cu:5");
  EXPECT_EQ(r.test_command, "pytest test/test_nn.py -k nll_loss");
}

TEST(LocateAten, RuleKeysAreChecked) {
  const std::string head = "version = 1\n[[rule]]\nstrategy = \"aten\"\n";
  EXPECT_NO_THROW(parse_locate_rules(head + "functors = 'Functor$'\nwrappers = [\"W\"]\nhelpers = [\"h\"]\n"
                                            "codegen = '^Gen_(\\w+)$'\ncodegen_under = [\"gen\"]\n", "r.toml"));
  try {
    parse_locate_rules(head + "codegen = '^Gen_\\w+$'\n", "r.toml");
    FAIL() << "a codegen pattern without a group was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("r.toml:4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_locate_rules(head + "functors = '('\n", "r.toml"), Error);
  EXPECT_THROW(parse_locate_rules("version = 1\n[[test]]\nfile = 'x'\nop = '['\ncommand = 'c'\n", "r.toml"), Error);
}

}  // namespace
}  // namespace kerncap::source
