#pragma once
// Medians with a distribution-free 95 % interval (`kerncap run --repeat`): run times are
// skewed and few, so no normal approximation. The interval is the pair of order statistics
// whose coverage of the median is at least 95 % by the binomial distribution; with fewer than
// 6 samples no such pair exists and the interval is the whole range (`exact95` false).
#include <cstddef>
#include <vector>

namespace kerncap::profile {

struct MedianCI {
  size_t n = 0;
  double median = 0, low = 0, high = 0;
  bool exact95 = false;  // [low, high] covers the median with probability >= 95 %
};

MedianCI median_ci(std::vector<double> v);
// The ratio a[i] / b[i] of each pair (pairs with b <= 0 left out), then median_ci of them.
MedianCI paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kerncap::profile
