// Profile mode's parameter signatures (capture/param_signature.hpp) with a fake driver: only
// the kernels named are signed, pointer words (device buffers, host-mapped memory) are left
// out so that launches on other buffers sign alike, sizes and flags are kept, the driver is
// asked once per function and once per allocation, and every cache stays bounded.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstring>

#include "capture/param_signature.hpp"

using namespace kerncap::capture;
using kerncap::format::KernelPattern;
using kerncap::format::MatchKind;
using kerncap::format::ParamSlot;
using kerncap::format::ScalarWord;

namespace {

struct FakeDriver : SignatureDriver {
  std::map<const void*, std::string> names;
  std::map<const void*, std::vector<ParamSlot>> layouts;
  std::vector<Range> allocations;
  int name_calls = 0, layout_calls = 0, allocation_calls = 0;
  std::string kernel_name(const void* f) override {
    ++name_calls;
    auto it = names.find(f);
    return it == names.end() ? "" : it->second;
  }
  std::optional<std::vector<ParamSlot>> param_layout(const void* f) override {
    ++layout_calls;
    auto it = layouts.find(f);
    if (it == layouts.end()) return std::nullopt;
    return it->second;
  }
  std::optional<Range> allocation(uint64_t address) override {
    ++allocation_calls;
    for (const Range& r : allocations)
      if (address >= r.start && address < r.end) return r;
    return std::nullopt;
  }
};

// scale(const float* x, float* y, int n, float a), and the launch's kernelParams.
const int kScale = 0, kOther = 0;
const void* scale_fn = &kScale;
const void* other_fn = &kOther + 1;

struct Args {
  uint64_t x, y;
  int32_t n;
  float a;
  void* params[4] = {&x, &y, &n, &a};
};

FakeDriver fake() {
  FakeDriver d;
  d.names[scale_fn] = "_Z5scalePKfPfif";
  d.names[other_fn] = "_Z5otherPf";
  d.layouts[scale_fn] = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
  d.layouts[other_fn] = {{0, 8}};
  d.allocations = {{0x7f0000000000, 0x7f0000100000}, {0x7f0000200000, 0x7f0000300000}};
  return d;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(ParamSignatures, SizesAreKeptPointersLeftOut) {
  FakeDriver d = fake();
  ParamSignatures s({{"scale", MatchKind::Substring}}, d);
  Args a{0x7f0000000000, 0x7f0000200040, 4096, 0.5f};
  std::string mangled;
  std::vector<ScalarWord> words;
  ASSERT_TRUE(s.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
  EXPECT_EQ(mangled, "_Z5scalePKfPfif");
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0], (ScalarWord{2, 0, 4, 4096}));
  EXPECT_EQ(words[1], (ScalarWord{3, 0, 4, bits(0.5f)}));

  // Other buffers (the same allocations, other offsets; or swapped), the same size: the same words.
  Args b{0x7f0000200000, 0x7f00000fff00, 4096, 0.5f};
  std::vector<ScalarWord> again;
  ASSERT_TRUE(s.on_launch(scale_fn, b.params, nullptr, &mangled, &again));
  EXPECT_EQ(again, words);
  // Another n: another signature.
  Args c{0x7f0000000000, 0x7f0000200000, 64, 0.5f};
  ASSERT_TRUE(s.on_launch(scale_fn, c.params, nullptr, &mangled, &again));
  EXPECT_EQ(again[0].value, 64u);
  // The driver was asked about each function once and about each allocation once.
  EXPECT_EQ(d.name_calls, 1);
  EXPECT_EQ(d.layout_calls, 1);
  EXPECT_EQ(d.allocation_calls, 2);
}

TEST(ParamSignatures, OnlyTheKernelsNamedAreSigned) {
  FakeDriver d = fake();
  ParamSignatures s({{"^_Z5scale", MatchKind::Regex}}, d);
  uint64_t p = 0x7f0000000000;
  void* params[1] = {&p};
  std::string mangled;
  std::vector<ScalarWord> words;
  EXPECT_FALSE(s.on_launch(other_fn, params, nullptr, &mangled, &words));
  EXPECT_FALSE(s.on_launch(other_fn, params, nullptr, &mangled, &words));
  EXPECT_EQ(d.name_calls, 1);    // cached: a launch of another kernel costs one look-up
  EXPECT_EQ(d.layout_calls, 0);  // never asked for kernels not named
  // A kernel whose layout the driver cannot give is not signed (grouped by shape offline).
  d.layouts.erase(scale_fn);
  s.forget_handles();
  Args a{0x7f0000000000, 0x7f0000200000, 1, 1.0f};
  EXPECT_FALSE(s.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
  // A bad regex costs only that pattern.
  ParamSignatures bad({{"(", MatchKind::Regex}, {"_Z5scalePKfPfif", MatchKind::Exact}}, d);
  d.layouts[scale_fn] = fake().layouts[scale_fn];
  EXPECT_TRUE(bad.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
}

TEST(ParamSignatures, UnknownLargeValuesAndSmallOnesAreScalars) {
  FakeDriver d = fake();
  ParamSignatures s({{"scale", MatchKind::Substring}}, d);
  // A 64-bit size that looks like nothing the driver knows, and a null pointer.
  Args a{uint64_t{1} << 40, 0, 7, 2.0f};
  std::string mangled;
  std::vector<ScalarWord> words;
  ASSERT_TRUE(s.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
  ASSERT_EQ(words.size(), 4u);
  EXPECT_EQ(words[0], (ScalarWord{0, 0, 8, uint64_t{1} << 40}));
  EXPECT_EQ(words[1], (ScalarWord{1, 0, 8, 0}));  // below kLowestAddress: never asked
  EXPECT_EQ(d.allocation_calls, 1);
  ASSERT_TRUE(s.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
  EXPECT_EQ(d.allocation_calls, 1);  // remembered as not a pointer
}

TEST(ParamSignatures, StructsAreCutIntoWordsAndExtraBuffersRead) {
  FakeDriver d = fake();
  // k(Params p) with p = {float* data; int rows; int cols; int64_t stride; char flag} (32 bytes):
  // word 0 a pointer, word 8 rows|cols, word 16 the stride, word 24 the flag (and padding).
  const int kStruct = 0;
  d.names[&kStruct] = "_Z1k6Params";
  d.layouts[&kStruct] = {{0, 25}};
  ParamSignatures s({{"_Z1k6Params", MatchKind::Exact}}, d);
  alignas(8) uint8_t buf[32] = {};
  const uint64_t data = 0x7f0000000010, rc = (uint64_t{8} << 32) | 16, stride = 4096;
  std::memcpy(buf, &data, 8);
  std::memcpy(buf + 8, &rc, 8);
  std::memcpy(buf + 16, &stride, 8);
  buf[24] = 1;
  size_t size = 25;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  std::string mangled;
  std::vector<ScalarWord> words;
  ASSERT_TRUE(s.on_launch(&kStruct, nullptr, extra, &mangled, &words));
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0], (ScalarWord{0, 8, 8, rc}));
  EXPECT_EQ(words[1], (ScalarWord{0, 16, 8, stride}));
  EXPECT_EQ(words[2], (ScalarWord{0, 24, 1, 1}));
}

TEST(ParamSignatures, WordsAndBytesAreBounded) {
  // 100 int parameters: at most kMaxScalarWords words.
  std::vector<ParamSlot> slots;
  for (uint32_t i = 0; i < 100; ++i) slots.push_back({4 * i, 4});
  std::vector<uint8_t> buffer(400, 1);
  const auto words = scalar_words(buffer, slots, [](uint64_t) { return false; });
  EXPECT_EQ(words.size(), kerncap::format::kMaxScalarWords);
  // A parameter past kMaxSignatureBytes is not looked at.
  std::vector<uint8_t> big(8192, 0);
  EXPECT_TRUE(scalar_words(big, {{5000, 4}}, [](uint64_t) { return false; }).empty());
}

TEST(ParamSignatures, CachesStayBounded) {
  FakeDriver d = fake();
  ParamSignatures s({{"scale", MatchKind::Substring}}, d);
  std::string mangled;
  std::vector<ScalarWord> words;
  // Many distinct values the driver knows nothing of: the negative cache is cleared when full.
  for (uint64_t i = 0; i < ParamSignatures::kMaxNotPointers + 10; ++i) {
    Args a{(uint64_t{1} << 41) + i, 0, 1, 1.0f};
    ASSERT_TRUE(s.on_launch(scale_fn, a.params, nullptr, &mangled, &words));
  }
  EXPECT_EQ(d.allocation_calls, static_cast<int>(ParamSignatures::kMaxNotPointers + 10));
  // Many distinct functions: the function cache is cleared when full (each asked again after).
  std::vector<int> handles(ParamSignatures::kMaxFunctions + 5);
  for (int& h : handles) EXPECT_FALSE(s.on_launch(&h, nullptr, nullptr, &mangled, &words));
  EXPECT_EQ(d.name_calls, static_cast<int>(handles.size()) + 1);
}
