// names::regex_search_text: other people's long text (kernel names, NVTX range names, source
// files) searched without libstdc++'s per-character recursion overflowing the caller's stack,
// also from a thread with a small stack (the injected library runs on the application's).
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <string>

#include "names/match.hpp"
#include "names/regex_search.hpp"

namespace kerncap::names {
namespace {

// Runs f on a thread whose stack is `stack` bytes, as an application's worker thread might be.
void on_small_stack(size_t stack, const std::function<void()>& f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, stack), 0);
  pthread_t t;
  auto* fn = new std::function<void()>(f);
  ASSERT_EQ(pthread_create(
                &t, &attr,
                [](void* p) -> void* {
                  auto* g = static_cast<std::function<void()>*>(p);
                  (*g)();
                  delete g;
                  return nullptr;
                },
                fn),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(t, nullptr);
}

TEST(NamesRegexSearch, AnswersAsStdRegexSearch) {
  const std::regex re("gemm<.*float>", std::regex::ECMAScript);
  EXPECT_TRUE(regex_search_text("void gemm<128, float>(int)", re));
  EXPECT_FALSE(regex_search_text("void gemv<128, float>(int)", re));
  std::string longer = "void gemm<" + std::string(5000, '1') + ", float>(int)";
  EXPECT_TRUE(regex_search_text(longer, re));
  longer[6] = 'v';
  EXPECT_FALSE(regex_search_text(longer, re));
  EXPECT_FALSE(regex_search_text("", re));
}

// 300,000 characters take about 100 MiB of stack on the caller's for `a.*x`: searched on the
// library's own thread from one with 256 KiB.
TEST(NamesRegexSearch, LongTextFromASmallStack) {
  const std::string text = std::string(300000, 'a') + "x";
  const std::regex re("a.*x", std::regex::ECMAScript);
  bool found = false, other = true;
  on_small_stack(256 << 10, [&] {
    found = regex_search_text(text, re);
    other = regex_search_text(text, std::regex("^a.*y"));  // anchored: one backtrack, not n of them
  });
  EXPECT_TRUE(found);
  EXPECT_FALSE(other);
}

TEST(NamesRegexSearch, OnlyTheFirstMegabyteIsSearched) {
  std::string text(kRegexMaxText + 10, 'a');
  text.back() = 'x';
  EXPECT_FALSE(regex_search_text(text, std::regex("x")));  // past the bound: documented
  text[kRegexMaxText - 1] = 'x';
  EXPECT_TRUE(regex_search_text(text, std::regex("x")));
}

// The injected library's matcher: a 100 KiB demangled name (a template-heavy kernel) matched
// by a user's --regex on a small stack, the answer kept for the next launch of that function.
TEST(NamesRegexSearch, MatcherOnAHugeNameFromASmallStack) {
  const std::string demangled = "void cutlass::Kernel<" + std::string(100000, 'T') + ">(Params)";
  const std::string mangled = "_ZN7cutlass6KernelI" + std::string(100000, 'T') + "EEvT_";
  const Matcher m("Kernel<T+>", true);
  bool first = false, second = false, miss = true;
  on_small_stack(256 << 10, [&] {
    first = m.matches(mangled, demangled);
    second = m.matches(mangled, demangled);
    miss = Matcher("Kernel<U", true).matches(mangled, demangled);
  });
  EXPECT_TRUE(first);
  EXPECT_TRUE(second);
  EXPECT_FALSE(miss);
}

}  // namespace
}  // namespace kerncap::names
