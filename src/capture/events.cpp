#include "capture/events.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

namespace kerncap::capture {
namespace {
std::mutex g_mu;
int g_fd = -1;
}  // namespace

void events_open(const std::string& output_dir) {
  std::lock_guard lk(g_mu);
  std::string dir = output_dir + "/.kerncap";
  ::mkdir(dir.c_str(), 0755);
  std::string path = dir + "/events-" + std::to_string(::getpid()) + ".jsonl";
  if (g_fd >= 0) ::close(g_fd);
  g_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void emit(nlohmann::json event) {
  try {
    event["pid"] = ::getpid();
    std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard lk(g_mu);
    if (g_fd >= 0) {
      ssize_t n = ::write(g_fd, line.data(), line.size());
      (void)n;
    }
  } catch (...) {
  }
}

}  // namespace kerncap::capture
