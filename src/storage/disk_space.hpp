#pragma once
// Whether a capture fits on the disk before any of it is written: a clear refusal up front
// beats a disk that fills half-way through the snapshot (and the application's own files
// failing to write beside it). The free-space figure comes through a replaceable function
// so the decision is unit tested with made-up figures.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace kerncap::format {

namespace fs = std::filesystem;

// What is kept free beyond the estimate: 64 MiB plus 2 % (manifest, AFTER of small launches,
// the file system's own blocks).
uint64_t space_margin(uint64_t need);

// The refusal message when `need` bytes and the margin do not fit in `free_bytes` on dir's
// file system; none when they fit.
std::optional<std::string> space_shortage(const fs::path& dir, uint64_t need, uint64_t free_bytes);

// Free bytes on dir's file system for an unprivileged writer (statvfs f_bavail); none when
// it cannot be told.
using FreeBytesFn = std::function<std::optional<uint64_t>(const fs::path&)>;
std::optional<uint64_t> free_bytes(const fs::path& dir);
// Tests: replaces the statvfs figure (an empty function restores it).
void set_free_bytes_for_test(FreeBytesFn f);

// Throws Error(Device) with space_shortage's message; returns when the figure is unknown
// (the writes will say).
void check_disk_space(const fs::path& dir, uint64_t need);

}  // namespace kerncap::format
