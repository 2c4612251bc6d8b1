// Element types and float atomics read from a kernel's SASS (replay/sass_types.hpp), and their
// mapping onto a capture's regions (replay/sass_regions.hpp): instruction text written here,
// and fixture cubins from tests/fixtures/cubin/sass_types.cu on three SMs (nvdisasm needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cubin/cubin.hpp"
#include "lint/disassembler.hpp"
#include "lint/sass.hpp"
#include "lint_fixtures.hpp"
#include "replay/sass_regions.hpp"
#include "replay/sass_types.hpp"
#include "replay/signature.hpp"

namespace kerncap::replay {
namespace {
using compare::DType;

std::vector<lint::SassInstruction> code(std::initializer_list<const char*> lines) {
  std::string text = "\t.section\t.text.k,\"ax\",@progbits\n";
  int at = 0;
  for (const char* l : lines) text += fmt::format("        /*{:04x}*/                   {} ;\n", 16 * at++, l);
  return lint::parse_sass(text).at("k");
}

ValueType f(DType d) { return {ValueKind::Float, d}; }

// --- the walk, on instruction text -------------------------------------------------------------

TEST(SassTypes, StoresTakeTheTypeOfTheirArithmetic) {
  const SassFacts facts = analyse_sass(code({"LDC.64 R4, c[0x0][0x218]", "LDG.E R2, desc[UR4][R2.64]",
                                             "FFMA R7, R2, R9, 1", "IMAD.WIDE R4, R7, 0x4, R4",
                                             "STG.E desc[UR4][R4.64], R7"}),
                                       0x210);
  ASSERT_EQ(facts.stores.size(), 1u);
  EXPECT_EQ(facts.stores[0].value, f(DType::F32));
  EXPECT_EQ(facts.stores[0].width, 32u);
  EXPECT_EQ(facts.stores[0].param, 8u);  // c[0x0][0x218] is the parameter at offset 8
  EXPECT_TRUE(facts.float_atomics.empty());
}

// The half unit materialises constants (HFMA2.MMA R7, -RZ, RZ, 0, 5.96e-08 is the integer 1):
// that is no fp16 value, and an untyped REDG.E.ADD is an integer add.
TEST(SassTypes, ConstantsMadeByTheHalfUnitAreNotHalves) {
  const SassFacts facts = analyse_sass(
      code({"HFMA2.MMA R7, -RZ, RZ, 0, 5.9604644775390625e-08", "REDG.E.ADD.STRONG.GPU desc[UR4][R4.64], R7",
            "HFMA2.MMA R8, -RZ, RZ, 1.875, 0", "STG.E desc[UR4][R2.64], R8"}),
      0x210);
  ASSERT_EQ(facts.stores.size(), 2u);
  EXPECT_EQ(facts.stores[0].value.kind, ValueKind::Integer);
  EXPECT_EQ(facts.stores[1].value.kind, ValueKind::Unknown);
  EXPECT_TRUE(facts.float_atomics.empty());
}

TEST(SassTypes, PredicatedDefinitionsCombineWithTheOneBefore) {
  // out = cond ? x * 2 : i: a float on one path, an integer on the other.
  const SassFacts mixed = analyse_sass(
      code({"IADD3 R5, R0, 0x1, RZ", "@P0 FMUL R5, R2, 2", "STG.E desc[UR4][R2.64], R5"}), 0x210);
  EXPECT_EQ(mixed.stores.at(0).value.kind, ValueKind::Unknown);
  const SassFacts relu = analyse_sass(code({"FADD R5, R2, 1", "@!P0 MOV R5, RZ", "STG.E desc[UR4][R2.64], R5"}), 0x210);
  EXPECT_EQ(relu.stores.at(0).value, f(DType::F32));  // a zero is a zero in every type
}

TEST(SassTypes, WidthsAndConversions) {
  const SassFacts facts = analyse_sass(
      code({"DFMA R4, R2, R2, 0.5", "STG.E.64 desc[UR4][R6.64], R4",   // a double
            "STG.E desc[UR4][R6.64], R5",                              // half a double
            "F2FP.BF16.F32.PACK_AB R0, RZ, R0", "STG.E.U16 desc[UR4][R6.64], R0",
            "F2F.F64.F32 R8, R3", "STG.E.64 desc[UR4][R6.64], R8",
            "FADD R8, R8, 1", "FADD R9, R9, 2", "FADD R10, R10, 3", "FMUL R11, R11, R8",
            "STG.E.128 desc[UR4][R6.64], R8",                          // a float4
            "FMUL R12, R2, 3", "STG.E.U16 desc[UR4][R6.64], R12"}),   // an fp32 in 16 bits
      0x210);
  ASSERT_EQ(facts.stores.size(), 6u);
  EXPECT_EQ(facts.stores[0].value, f(DType::F64));
  EXPECT_EQ(facts.stores[1].value.kind, ValueKind::Unknown);
  EXPECT_EQ(facts.stores[2].value, f(DType::BF16));
  EXPECT_EQ(facts.stores[3].value, f(DType::F64));
  EXPECT_EQ(facts.stores[4].value, f(DType::F32));
  EXPECT_EQ(facts.stores[4].width, 128u);
  EXPECT_EQ(facts.stores[5].value.kind, ValueKind::Unknown);
}

TEST(SassTypes, FloatAtomicsGlobalAndCompareAndSwapLoops) {
  EXPECT_EQ(analyse_sass(code({"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R4.64], R3"}), 0).float_atomics.size(), 1u);
  EXPECT_EQ(analyse_sass(code({"ATOM.E.ADD.F16x2.RN.STRONG.GPU P0, RZ, desc[UR4][R4.64], R3"}), 0).float_atomics.size(),
            1u);
  // A float max through an integer max is order-independent: not counted.
  EXPECT_TRUE(analyse_sass(code({"REDG.E.MAX.S32.STRONG.GPU desc[UR6][R4.64], R7"}), 0).float_atomics.empty());
  // bf16 atomicAdd: a CAS loop whose new value is a HADD2.BF16_V2 packed by PRMT.
  const SassFacts bf16 = analyse_sass(code({"LD.E R7, desc[UR4][R4.64]", "SEL R0, R0, 0x7610, P0",
                                            "HADD2.BF16_V2 R3, R7, R2.H0_H0", "PRMT R3, R7, R0, R3",
                                            "ATOM.E.CAS.STRONG.GPU PT, R6, [R4], R7, R3"}),
                                      0);
  EXPECT_EQ(bf16.float_atomics.size(), 1u);
  // A CAS loop over an integer (a spin lock): not a float atomic.
  EXPECT_TRUE(analyse_sass(code({"IADD3 R3, R7, 0x1, RZ", "ATOMG.E.CAS.STRONG.GPU PT, R6, [R4.64], R7, R3"}), 0)
                  .float_atomics.empty());
}

// Values read back from shared memory take the one float type everything stored there has.
TEST(SassTypes, SharedMemoryHoldsWhatWasStoredThere) {
  const auto ins = {"STS.64 [R4], RZ", "LDS.64 R8, [R7]", "DADD R10, R2, R8",
                    "ATOMS.CAST.SPIN.64 R10, [R7], R8, R10", "LDS.64 R2, [R4]", "STG.E.64 desc[UR6][R6.64], R2"};
  const SassFacts facts = analyse_sass(code(ins), 0x210);
  EXPECT_EQ(facts.float_atomics.size(), 1u);
  ASSERT_EQ(facts.stores.size(), 1u);
  EXPECT_EQ(facts.stores[0].value, f(DType::F64));
  // An integer in shared memory too: what comes back is unknown.
  const SassFacts mixed = analyse_sass(code({"STS [R4+0x100], R0", "S2R R0, SR_TID.X", "STS [R4+0x100], R0",
                                             "LDS R2, [R4]", "STG.E desc[UR6][R6.64], R2"}),
                                       0x210);
  EXPECT_EQ(mixed.stores.at(0).value.kind, ValueKind::Unknown);
}

// nvcc's division and remainder subroutines store nothing: calling them leaves the kernel
// typed (CuPy's elementwise kernels divide 64-bit indices; a solver divides doubles). Its own
// __noinline__ functions and anything cuobjdump names only by address still count as calls.
TEST(SassTypes, BuiltinArithmeticSubroutinesAreNoCalls) {
  for (const char* c : {"CALL.REL.NOINC `($__internal_1_$__cuda_sm20_rem_s64)",
                        "CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_rn_f64_full)",
                        "CALL.REL.NOINC `($__internal_1_$__cuda_sm3x_div_rn_noftz_f32_slowpath)",
                        "CALL.ABS.NOINC `(__cuda_sm20_div_s64)", "CALL.ABS.NOINC `(__cuda_sm20_dsqrt_rn_f64_mediumpath_v1)",
                        "CALL.ABS.NOINC `(__cuda_sm70_barrier_sync_0)"})
    EXPECT_FALSE(analyse_sass(code({c, "REDG.E.ADD.F64.RN.STRONG.GPU desc[UR4][R4.64], R2"}), 0x210).calls) << c;
  for (const char* c : {"CALL.REL.NOINC `($k$_Z3putPdd)", "CALL.ABS.NOINC `(_Z3putPdd$1)", "CALL.REL.NOINC 0x3a0",
                        "CALL.ABS.NOINC `(__cuda_syscall_vprintf)",
                        "CALL.ABS.NOINC `(__cuda_sm70_wmma_m16n16k16_store_d_f32)"})
    EXPECT_TRUE(analyse_sass(code({c, "STG.E desc[UR4][R4.64], R2"}), 0x210).calls) << c;
}

// A cooperative launch's grid barrier: an integer atomic at an address made from the driver's
// own constants (below the parameters), which reaches no region of the capture; a launch
// dimension added to a parameter's pointer leaves the pointer found.
TEST(SassTypes, DriverConstantsAddressNoRegion) {
  const SassFacts facts = analyse_sass(
      code({"ULDC UR5, c[0x0][0x48]", "IMAD.U32 R14, RZ, RZ, UR5",
            "ATOM.E.ADD.STRONG.GPU PT, R3, desc[UR8][R14.64+0x4], R3",  // the barrier
            "LDC.64 R4, c[0x0][0x248]", "ULDC UR6, c[0x0][0x0]", "IADD3 R4, P0, R4, UR6, RZ",
            "REDG.E.ADD.F64.RN.STRONG.GPU desc[UR8][R4.64], R10"}),
      0x210);
  ASSERT_EQ(facts.stores.size(), 2u);
  EXPECT_TRUE(facts.stores[0].driver_memory);
  // sm_100: the barrier's address picked per cluster (LDCU with an index register).
  const SassFacts sm100 = analyse_sass(code({"R2UR UR5, R5", "LDCU UR5, c[0x0][UR5+0x254]", "IMAD.U32 R4, RZ, RZ, UR5",
                                             "ATOM.E.ADD.STRONG.GPU PT, R7, desc[UR40][R4.64+0x4], R7"}),
                                       0x380);
  EXPECT_TRUE(sm100.stores.at(0).driver_memory);
  // An indexed word of the parameters is not followed.
  EXPECT_FALSE(analyse_sass(code({"LDCU UR5, c[0x0][UR5+0x390]", "IMAD.U32 R4, RZ, RZ, UR5",
                                  "STG.E desc[UR40][R4.64], R7"}),
                            0x380)
                   .stores.at(0)
                   .driver_memory);
  EXPECT_FALSE(facts.stores[0].param);
  EXPECT_FALSE(facts.stores[1].driver_memory);
  EXPECT_EQ(facts.stores[1].param, 0x38u);
  EXPECT_EQ(facts.stores[1].value, f(DType::F64));
}

// --- the regions --------------------------------------------------------------------------------

format::Manifest two_regions() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x1000, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x1000, "mem/1.bin", 0, ""}};
  m.after = {{0, 0x10, 0x40, 0}, {1, 0x0, 0x100, 0x40}};
  return m;
}

std::vector<uint8_t> pointers(uint64_t a, uint64_t b) {
  std::vector<uint8_t> p(16);
  std::memcpy(p.data(), &a, 8);
  std::memcpy(p.data() + 8, &b, 8);
  return p;
}

SassStore store(ValueType v, std::optional<uint32_t> param) {
  SassStore s;
  s.text = "STG.E";
  s.width = 32;
  s.value = v;
  s.param = param;
  return s;
}

TEST(SassRegions, EachRegionTakesTheTypeOfTheStoresThatReachIt) {
  const format::Manifest m = two_regions();
  SassFacts facts;
  facts.stores = {store(f(DType::F32), 0u), store({ValueKind::Integer, DType::Bytes}, 8u)};
  const auto spans = sass_spans(facts, m, pointers(0x10000, 0x20000), written_extents(m, nullptr), {});
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].base, 0x10010u);  // the written extent, whole fp32 elements
  EXPECT_EQ(spans[0].size, 0x40u);
  EXPECT_EQ(spans[0].dtype, DType::F32);
  EXPECT_EQ(spans[0].source, "sass");
  // A store whose address traces to no parameter may reach either region: both stay bytes.
  facts.stores.push_back(store({ValueKind::Unknown, DType::Bytes}, std::nullopt));
  EXPECT_TRUE(sass_spans(facts, m, pointers(0x10000, 0x20000), written_extents(m, nullptr), {}).empty());
}

TEST(SassRegions, OneFloatTypeEverywhereTypesEveryWrittenRegion) {
  const format::Manifest m = two_regions();
  SassFacts facts;
  facts.stores = {store(f(DType::F64), std::nullopt), store({ValueKind::Zero, DType::Bytes}, std::nullopt)};
  const auto spans = sass_spans(facts, m, {}, written_extents(m, nullptr), {});
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].base, 0x10010u);  // 0x10..0x50 widened to whole doubles
  EXPECT_EQ(spans[0].size, 0x40u);
  EXPECT_EQ(spans[1].dtype, DType::F64);
  // The signature's types win: a region it types is left alone.
  const std::vector<TypedSpan> sig = {{0x20000, 0x1000, DType::F32, compare::default_tolerance(DType::F32), "signature"}};
  EXPECT_EQ(sass_spans(facts, m, {}, written_extents(m, nullptr), sig).size(), 1u);
  // A kernel that calls other code: its stores there are not seen.
  facts.calls = true;
  EXPECT_TRUE(sass_spans(facts, m, {}, written_extents(m, nullptr), {}).empty());
}

// The barrier's integer atomics reach no region: the solver's double result is typed.
TEST(SassRegions, DriverMemoryStoresReachNoRegion) {
  const format::Manifest m = two_regions();
  SassFacts facts;
  SassStore barrier = store({ValueKind::Integer, DType::Bytes}, std::nullopt);
  barrier.driver_memory = true;
  facts.stores = {barrier, store(f(DType::F64), 8u), store({ValueKind::Zero, DType::Bytes}, std::nullopt)};
  const auto spans = sass_spans(facts, m, pointers(0x10000, 0x20000), written_extents(m, nullptr), {});
  ASSERT_EQ(spans.size(), 1u);  // region 0: only the zero store may reach it, no type
  EXPECT_EQ(spans[0].base, 0x20000u);
  EXPECT_EQ(spans[0].dtype, DType::F64);
  barrier.driver_memory = false;  // the same atomic at an unknown address: nothing is typed
  facts.stores[0] = barrier;
  EXPECT_TRUE(sass_spans(facts, m, pointers(0x10000, 0x20000), written_extents(m, nullptr), {}).empty());
}

TEST(SassRegions, IntegerOnlyKernelsGetNoType) {
  const format::Manifest m = two_regions();
  SassFacts facts;
  facts.stores = {store({ValueKind::Integer, DType::Bytes}, std::nullopt)};
  EXPECT_TRUE(sass_spans(facts, m, {}, written_extents(m, nullptr), {}).empty());
}

// --- fixture cubins -------------------------------------------------------------------------------

struct Fixture {
  std::vector<uint8_t> cubin;
  lint::SassFunctions fns;
  cubin::Image image;
  SassFacts facts(const std::string& kernel) const {
    const cubin::KernelInfo* k = image.find_kernel(kernel);
    EXPECT_TRUE(k) << kernel;
    EXPECT_TRUE(fns.count(kernel)) << kernel;
    return k && fns.count(kernel) ? analyse_sass(fns.at(kernel), k->param_cbank_offset) : SassFacts{};
  }
};

Fixture load(const std::string& name, const std::string& nvdisasm) {
  Fixture fx;
  fx.cubin = cubin::testing::fixture(name);
  fx.image = cubin::parse_cubin(fx.cubin);
  fx.fns = lint::parse_sass(lint::disassemble(fx.cubin, nvdisasm).text);
  return fx;
}

std::string static_name(const Fixture& fx) {
  for (const auto& k : fx.image.kernels)
    if (k.name.starts_with("__nv_static_") && k.name.ends_with("__Z10static_f64PKdPdi")) return k.name;
  return "";
}

ValueType only_store(const SassFacts& facts) {
  EXPECT_FALSE(facts.stores.empty());
  ValueType v{ValueKind::Zero, DType::Bytes};
  for (const auto& s : facts.stores)
    if (s.value.kind != ValueKind::Zero) v = v.kind == ValueKind::Zero || v == s.value ? s.value : ValueType{};
  return v;
}

class SassFixtures : public ::testing::TestWithParam<const char*> {};

TEST_P(SassFixtures, TypesAndAtomicsOfEachKernel) {
  KC_NEED_FIXTURES();
  KC_NEED_NVDISASM(nvdisasm);
  const Fixture fx = load(GetParam(), nvdisasm);

  const SassFacts scale = fx.facts("scale_f32");
  EXPECT_EQ(only_store(scale), f(DType::F32));
  EXPECT_EQ(scale.stores.at(0).param, 8u);  // y
  EXPECT_TRUE(scale.float_atomics.empty());

  const SassFacts sum = fx.facts("sum_f64_atomic");
  EXPECT_FALSE(sum.float_atomics.empty());
  EXPECT_EQ(only_store(sum), f(DType::F64));
  EXPECT_EQ(sum.stores.at(0).param, 8u);  // out

  const SassFacts rows = fx.facts("rows_shared_f64");
  EXPECT_FALSE(rows.float_atomics.empty()) << "a shared-memory double atomicAdd (CAS loop over DADD)";
  EXPECT_EQ(only_store(rows), f(DType::F64));
  EXPECT_EQ(rows.stores.at(0).param, 8u);

  EXPECT_EQ(only_store(fx.facts("half_from_f32")), f(DType::F16));
  EXPECT_EQ(only_store(fx.facts("half_add")), f(DType::F16));

  const SassFacts ints = fx.facts("int_only");
  EXPECT_EQ(only_store(ints).kind, ValueKind::Integer);
  EXPECT_TRUE(ints.float_atomics.empty());
  const SassFacts hist = fx.facts("hist_int");
  EXPECT_EQ(only_store(hist).kind, ValueKind::Integer);
  EXPECT_TRUE(hist.float_atomics.empty());

  // Two outputs of two types, told apart by the parameter each store's address comes from.
  const SassFacts both = fx.facts("float_and_index");
  ASSERT_EQ(both.stores.size(), 2u);
  for (const SassStore& s : both.stores) {
    ASSERT_TRUE(s.param) << s.text;
    ASSERT_TRUE(*s.param == 8 || *s.param == 16) << s.text;
    if (*s.param == 8) {
      EXPECT_EQ(s.value, f(DType::F32)) << s.text;
    } else {
      EXPECT_EQ(s.value.kind, ValueKind::Integer) << s.text;
    }
  }

  EXPECT_EQ(only_store(fx.facts("copy_words")).kind, ValueKind::Unknown);

  // CuPy's scatter_add as its NVRTC source has it: calls of nvcc's 64-bit division and
  // remainder subroutines, a loaded double added atomically through a struct's pointer.
  const SassFacts scatter = fx.facts("scatter_add_f64");
  EXPECT_FALSE(scatter.calls);
  EXPECT_FALSE(scatter.float_atomics.empty());
  EXPECT_EQ(only_store(scatter), f(DType::F64));
  const auto a_data = scatter.stores.at(0).param;  // a.data, where the walk traces it
  EXPECT_TRUE(!a_data || *a_data == 32u) << *a_data;

  // A cooperative solver's step: grid barriers (the driver's memory), a double division.
  const SassFacts grid = fx.facts("grid_dot_f64");
  EXPECT_FALSE(grid.calls);
  EXPECT_FALSE(grid.float_atomics.empty());
  bool barrier = false;
  for (const SassStore& s : grid.stores) {
    if (s.driver_memory) {
      barrier = true;
      continue;
    }
    if (s.value.kind == ValueKind::Zero) continue;  // *result = 0: any type
    ASSERT_TRUE(s.param) << s.text;
    if (*s.param == 24) {
      EXPECT_TRUE(s.value == f(DType::F64) || s.value.kind == ValueKind::Zero) << s.text;  // result
    } else {
      EXPECT_EQ(*s.param, 16u) << s.text;  // x
      EXPECT_EQ(s.value, f(DType::F32)) << s.text;
    }
  }
  EXPECT_TRUE(barrier) << "no grid barrier store seen";

  const std::string st = static_name(fx);
  ASSERT_FALSE(st.empty()) << "no __nv_static_ kernel in " << GetParam();
  EXPECT_EQ(only_store(fx.facts(st)), f(DType::F64));
}

INSTANTIATE_TEST_SUITE_P(Arch, SassFixtures,
                         ::testing::Values("sass_types_sm80.cubin", "sass_types_sm90.cubin", "sass_types_sm100.cubin"));

// The whole path on a capture directory: the kernel's cubin found, disassembled, its regions
// typed. The file-static kernel keeps its __nv_static_ name in the image.
TEST(SassRegions, ReadFromACaptureOfAFileStaticKernel) {
  KC_NEED_FIXTURES();
  KC_NEED_NVDISASM(nvdisasm);
  const std::vector<uint8_t> image = cubin::testing::fixture("sass_types_sm90.cubin");
  const std::string name = static_name({image, {}, cubin::parse_cubin(image)});
  ASSERT_FALSE(name.empty());
  lint::testing::TempDir tmp;
  format::Capture cap = lint::testing::make_capture(tmp.path(), image, name, 32);
  // The search read_kernel_sass uses: PATH (nvdisasm may sit only beside bin/kerncap).
  const std::string dir = std::filesystem::path(nvdisasm).parent_path().string();
  const std::string old = std::getenv("PATH") ? std::getenv("PATH") : "";
  if (!dir.empty()) ::setenv("PATH", (dir + ":" + old).c_str(), 1);
  const KernelSass k = read_kernel_sass(cap);
  ::setenv("PATH", old.c_str(), 1);
  ASSERT_TRUE(k.facts) << k.why;
  EXPECT_EQ(only_store(*k.facts), f(DType::F64));
  EXPECT_TRUE(k.facts->float_atomics.empty());
}

TEST(SassRegions, APtxImageHasNoSassToRead) {
  KC_NEED_FIXTURES();
  lint::testing::TempDir tmp;
  format::Capture cap = lint::testing::make_capture(tmp.path(), cubin::testing::fixture("kernels.ptx"), "k", 32);
  const KernelSass k = read_kernel_sass(cap);
  EXPECT_FALSE(k.facts);
  EXPECT_NE(k.why.find("PTX"), std::string::npos) << k.why;
}

}  // namespace
}  // namespace kerncap::replay
