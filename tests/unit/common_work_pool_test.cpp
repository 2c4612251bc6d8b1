// The process's work pool: every item runs once, failures come back to the caller, calls
// nest and come from several threads at once without waiting on each other.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/work_pool.hpp"

using namespace kerncap;

TEST(WorkPool, EveryItemRunsOnce) {
  std::vector<std::atomic<int>> hits(1000);
  pool::parallel_for(hits.size(), [&](size_t i) { ++hits[i]; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  pool::parallel_for(0, [&](size_t) { FAIL(); });
}

TEST(WorkPool, TheFirstFailureReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(pool::parallel_for(64, [&](size_t i) {
    ++ran;
    if (i == 3) throw std::runtime_error("bad chunk");
  }), std::runtime_error);
  EXPECT_GE(ran.load(), 1);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool::parallel_for(10, [&](size_t) { ++n; });
  EXPECT_EQ(n.load(), 10);
}

TEST(WorkPool, CallsNestAndComeFromSeveralThreads) {
  std::atomic<int> n{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      pool::parallel_for(8, [&](size_t) { pool::parallel_for(8, [&](size_t) { ++n; }); });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(n.load(), 4 * 8 * 8);
}

TEST(WorkPool, AtMostTheThreadsAsked) {
  std::atomic<int> running{0}, most{0};
  pool::parallel_for(64, [&](size_t) {
    const int now = ++running;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {}
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    --running;
  }, 1);
  EXPECT_EQ(most.load(), 1);
  EXPECT_GE(pool::threads(), 1u);
}
