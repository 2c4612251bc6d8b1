#include "capture/launch_sampler.hpp"

#include "format/profile_cupti.hpp"

namespace kerncap::capture {

LaunchSampler::LaunchSampler(uint32_t period, Intern intern, Resolve resolve, void* user)
    : period_(period < 2 ? 2 : period), intern_(intern), resolve_(resolve), user_(user) {}

bool LaunchSampler::timed(uint64_t index, uint32_t period) {
  if (index < format::kSampleExactLaunches) return true;
  // One window at the end of each cycle: the exact launches stand in for the first window, so
  // the next comes a whole cycle later and the windows lie evenly over the run (a window right
  // after the exact launches would time the run's start twice, and double a short run's cost).
  const uint64_t cycle = format::kSampleWindow * (period < 2 ? 2 : period);
  return (index - format::kSampleExactLaunches) % cycle >= cycle - format::kSampleWindow;
}

LaunchSampler::Records LaunchSampler::switch_to(bool on) {
  if (on == records_on_) return Records::Keep;
  records_on_ = on;
  return on ? Records::On : Records::Off;
}

LaunchSampler::Records LaunchSampler::on_launch(const void* function, const void* context, const char* symbol,
                                                uint32_t correlation, bool benchmark, size_t* pending) {
  std::lock_guard lk(mu_);
  auto it = names_.find({function, context});
  if (it == names_.end()) {
    // Once per handle: the name string, and its id in the record file.
    std::string name = symbol && *symbol ? std::string(symbol) : resolve_ ? resolve_(function) : std::string();
    if (name.empty()) name = "<unnamed kernel>";
    if (names_.size() >= 65536) names_.clear();  // bounded; a miss only costs a lookup
    it = names_.emplace(std::make_pair(function, context), intern_(user_, name)).first;
  }
  const uint32_t id = it->second;
  if (open_ && runs_.back().name_id == id && runs_.back().benchmark == benchmark) {
    ++runs_.back().count;
    runs_.back().last_correlation = correlation;
  } else {
    runs_.push_back(format::LaunchRun{id, 1, correlation, correlation, benchmark});
    open_ = true;
  }
  // The launch being made is number launches_: its record is wanted when it is timed.
  const uint64_t index = launches_++;
  if (pending) *pending = runs_.size();
  if (!sampling_) return Records::Keep;
  return switch_to(timed(index, period_));
}

LaunchSampler::Records LaunchSampler::on_graph_launch() {
  std::lock_guard lk(mu_);
  open_ = false;  // the graph's kernels come between this run and the next
  sampling_ = false;
  return switch_to(true);
}

void LaunchSampler::forget_handles() {
  std::lock_guard lk(mu_);
  names_.clear();
}

std::vector<format::LaunchRun> LaunchSampler::take_runs(bool all) {
  std::lock_guard lk(mu_);
  std::vector<format::LaunchRun> out;
  if (all || !open_) {
    out.swap(runs_);
    open_ = false;
  } else if (runs_.size() > 1) {
    out.assign(runs_.begin(), runs_.end() - 1);
    runs_.erase(runs_.begin(), runs_.end() - 1);
  }
  return out;
}

size_t LaunchSampler::pending_runs() const {
  std::lock_guard lk(mu_);
  return runs_.size();
}

uint64_t LaunchSampler::launches() const {
  std::lock_guard lk(mu_);
  return launches_;
}

bool LaunchSampler::records_wanted() const {
  std::lock_guard lk(mu_);
  return records_on_;
}

bool LaunchSampler::sampling() const {
  std::lock_guard lk(mu_);
  return sampling_;
}

}  // namespace kerncap::capture
