#include "capture/events.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "format/out_layout.hpp"

namespace kerncap::capture {
namespace {
std::mutex g_mu;
int g_fd = -1;
thread_local int t_target = -1;
}  // namespace

EventTargetScope::EventTargetScope(int target) : previous_(t_target) { t_target = target; }
EventTargetScope::~EventTargetScope() { t_target = previous_; }

void events_open(const std::string& output_dir) {
  std::lock_guard lk(g_mu);
  ::mkdir(format::out::state_dir(output_dir).c_str(), 0755);
  const std::string path = format::out::events_file(output_dir, ::getpid()).string();
  if (g_fd >= 0) ::close(g_fd);
  g_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void emit(nlohmann::json event) {
  try {
    event["pid"] = ::getpid();
    if (t_target >= 0 && !event.contains("target")) {
      const std::string kind = event.value("event", "");
      if (kind == "error" || kind == "captured") event["target"] = t_target;
    }
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
