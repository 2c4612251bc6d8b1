#include "common/work_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kerncap::pool {
namespace {

struct Job {
  size_t n = 0;
  const std::function<void(size_t)>* f = nullptr;
  unsigned helpers_left = 0;  // pool threads that may still join this job
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;  // items finished or skipped (under mu)
  std::exception_ptr failure;

  // Claims and runs items until none is left.
  void work() {
    size_t finished = 0;
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      if (!failed.load()) {
        try {
          (*f)(i);
        } catch (...) {
          std::lock_guard<std::mutex> l(mu);
          if (!failed.exchange(true)) failure = std::current_exception();
        }
      }
      ++finished;
    }
    if (!finished) return;
    std::lock_guard<std::mutex> l(mu);
    done += finished;
    if (done == n) cv.notify_all();
  }
};

class Pool {
 public:
  explicit Pool(unsigned workers) {
    for (unsigned t = 0; t < workers; ++t) threads_.emplace_back([this] { loop(); });
  }
  // Never destroyed: the pool lives as long as the process (threads blocked in wait at exit
  // are fine; joining them from a static destructor is not, other statics may be gone).
  void submit(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(job);
    }
    if (job->helpers_left == 1) cv_.notify_one();
    else cv_.notify_all();
  }
  unsigned size() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return !queue_.empty(); });
        job = queue_.front();
        // A job leaves the queue once enough threads took it or nothing is left to claim.
        if (--job->helpers_left == 0 || job->next.load() >= job->n) queue_.pop_front();
      }
      job->work();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> threads_;
};

unsigned hardware() { return std::max(1u, std::thread::hardware_concurrency()); }

Pool& the_pool() {
  static std::mutex mu;
  static Pool* pool = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> l(mu);
  if (!pool || owner != ::getpid()) {  // first use, or a forked child (the parent's threads are not in it)
    pool = new Pool(hardware() - 1);
    owner = ::getpid();
  }
  return *pool;
}

}  // namespace

unsigned threads() { return hardware(); }

void parallel_for(size_t n, const std::function<void(size_t)>& f, unsigned max_threads) {
  if (n == 0) return;
  const unsigned want = static_cast<unsigned>(std::min<size_t>(n, max_threads ? std::min(max_threads, hardware()) : hardware()));
  if (want <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->f = &f;
  Pool& pool = the_pool();
  job->helpers_left = std::min(want - 1, pool.size());
  if (job->helpers_left) pool.submit(job);
  job->work();
  std::unique_lock<std::mutex> l(job->mu);
  job->cv.wait(l, [&] { return job->done == job->n; });
  if (job->failure) std::rethrow_exception(job->failure);
}

}  // namespace kerncap::pool
