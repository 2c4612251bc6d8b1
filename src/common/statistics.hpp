#pragma once
// Statistics of a sample, in one place: the replay's timing summary (median, min, max, mean,
// standard deviation) and `kerncap run`'s medians with a distribution-free 95 % interval (run
// times are skewed and few, so no normal approximation: the interval is the pair of order
// statistics whose coverage of the median is at least 95 % by the binomial distribution; with
// fewer than 6 samples no such pair exists and the interval is the whole range).
#include <cstddef>
#include <vector>

namespace kerncap {

struct Stats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
};
// Median of an even count is the mean of the middle two; stddev is the sample standard
// deviation, 0 for one value. Empty input gives zeros.
Stats statistics(const std::vector<float>& ms);

struct MedianCI {
  size_t n = 0;
  double median = 0, low = 0, high = 0;
  bool exact95 = false;  // [low, high] covers the median with probability >= 95 %
};
MedianCI median_ci(std::vector<double> v);
// The ratio a[i] / b[i] of each pair (pairs with b <= 0 left out), then median_ci of them.
MedianCI paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kerncap
