#include "format/rank.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "format/out_layout.hpp"

namespace kerncap::format {

ProcessRank rank_from_env(const std::function<const char*(std::string_view)>& lookup) {
  for (std::string_view name : kRankVars) {
    const char* v = lookup(name);
    if (!v || !*v) continue;
    std::string_view s(v);
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size()) continue;  // not a rank: ask the next launcher
    return {n, std::string(name)};
  }
  return {};
}

std::optional<uint64_t> take_start_slot(const std::filesystem::path& out, uint64_t max_slots) {
  for (uint64_t n = 0; n < max_slots; ++n) {
    const std::string path = out::rank_slot_file(out, n).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      const std::string pid = std::to_string(::getpid());
      ssize_t w = ::write(fd, pid.data(), pid.size());
      (void)w;  // the file's existence is the slot; its content is for people
      ::close(fd);
      return n;
    }
    if (errno != EEXIST) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace kerncap::format
