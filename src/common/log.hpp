#pragma once
// Minimal leveled logging to stderr, prefixed so application output stays readable.
#include <fmt/format.h>

#include <string_view>

namespace kerncap::log {

enum class Level { Quiet = 0, Info = 1, Debug = 2 };

void set_level(Level level);
Level level();
void set_prefix(std::string_view prefix);  // e.g. "kerncap[1234]"
void write(std::string_view line);          // one line, prefix added, thread-safe

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::Info) write(fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::Debug) write(fmt::format(f, std::forward<Args>(args)...));
}
// Warnings always print: they are what a user must see.
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace kerncap::log
