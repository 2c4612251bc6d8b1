#include "storage/disk_space.hpp"

#include <sys/statvfs.h>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::format {
namespace {

FreeBytesFn& override_fn() {
  static FreeBytesFn f;
  return f;
}

}  // namespace

uint64_t space_margin(uint64_t need) { return (uint64_t{64} << 20) + need / 50; }

std::optional<std::string> space_shortage(const fs::path& dir, uint64_t need, uint64_t free) {
  if (need + space_margin(need) <= free) return std::nullopt;
  return fmt::format("the capture needs up to {} of disk for BEFORE (before compression) and {} to spare, but {} has "
                     "{} free: free some space, extract to another directory (-o), or keep chunks on another "
                     "disk (--store DIR); the capture stopped before writing memory",
                     human_bytes(need), human_bytes(space_margin(need)), dir.string(), human_bytes(free));
}

std::optional<uint64_t> free_bytes(const fs::path& dir) {
  if (override_fn()) return override_fn()(dir);
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return uint64_t{st.f_bavail} * st.f_frsize;
}

void set_free_bytes_for_test(FreeBytesFn f) { override_fn() = std::move(f); }

void check_disk_space(const fs::path& dir, uint64_t need) {
  const std::optional<uint64_t> free = free_bytes(dir);
  if (!free) return;
  if (auto why = space_shortage(dir, need, *free)) device_error(*why);
}

}  // namespace kerncap::format
