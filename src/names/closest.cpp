#include "names/closest.hpp"

#include <algorithm>
#include <cctype>

namespace kerncap::names {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Edit distance of `a` against the best-matching window of `b` (so a short pattern is
// not penalised for the length of a long kernel name).
size_t window_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> prev(m + 1, 0), cur(m + 1);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({sub, prev[j] + 1, cur[j - 1] + 1});
    }
    std::swap(prev, cur);
  }
  return *std::min_element(prev.begin(), prev.end());
}

}  // namespace

std::vector<std::string> closest_names(const std::string& pattern, const std::vector<std::string>& names,
                                       size_t limit) {
  const std::string p = lower(pattern);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& name : names) {
    std::string n = lower(name);
    size_t score = n.find(p) != std::string::npos ? 0 : 1 + window_distance(p, n);
    scored.emplace_back(score, name);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < limit; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace kerncap::names
