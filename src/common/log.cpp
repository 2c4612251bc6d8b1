#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace kerncap::log {
namespace {
std::atomic<Level> g_level{Level::Info};
std::mutex g_mu;
std::string& prefix_storage() {
  static std::string p = "kerncap";
  return p;
}
}  // namespace

void set_level(Level l) { g_level = l; }
Level level() { return g_level; }
void set_prefix(std::string_view p) {
  std::lock_guard lk(g_mu);
  prefix_storage() = std::string(p);
}
void write(std::string_view line) {
  std::lock_guard lk(g_mu);
  std::fprintf(stderr, "%s: %.*s\n", prefix_storage().c_str(), static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

}  // namespace kerncap::log
