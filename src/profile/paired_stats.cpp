#include "profile/paired_stats.hpp"

#include <algorithm>
#include <cmath>

namespace kerncap::profile {

namespace {
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

MedianCI median_ci(std::vector<double> v) {
  MedianCI r;
  r.n = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  r.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

}  // namespace kerncap::profile
