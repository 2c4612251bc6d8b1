#include "common/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kerncap {

namespace {
// Of a sorted sample.
double median_of_sorted(const std::vector<double>& v) {
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
// P(X <= k) for X ~ Binomial(n, 1/2).
double binom_cdf_half(size_t n, size_t k) {
  double sum = 0, term = std::pow(0.5, static_cast<double>(n));  // C(n,0) / 2^n
  for (size_t i = 0; i <= k && i <= n; ++i) {
    sum += term;
    term = term * static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return sum;
}
}  // namespace

Stats statistics(const std::vector<float>& ms) {
  Stats s;
  if (ms.empty()) return s;
  std::vector<double> v(ms.begin(), ms.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = median_of_sorted(v);
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(n - 1));
  }
  return s;
}

MedianCI median_ci(std::vector<double> v) {
  MedianCI r;
  r.n = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  r.median = median_of_sorted(v);
  // The largest k with P(X <= k - 1) <= 2.5 %: the interval [x_(k), x_(n-k+1)] (1-based).
  size_t k = 0;
  while (k + 1 <= n / 2 && binom_cdf_half(n, k) <= 0.025) ++k;
  if (k == 0) {
    r.low = v.front();
    r.high = v.back();
    return r;
  }
  r.low = v[k - 1];
  r.high = v[n - k];
  r.exact95 = true;
  return r;
}

MedianCI paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (b[i] > 0 && std::isfinite(a[i] / b[i])) ratios.push_back(a[i] / b[i]);
  return median_ci(std::move(ratios));
}

}  // namespace kerncap
