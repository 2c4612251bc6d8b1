#pragma once
// The ranked table `kerncap profile` prints, and the per-process summary under it.
#include <cstddef>
#include <string>

#include "profile/aggregate.hpp"

namespace kerncap::profile {

struct TableOptions {
  size_t top = 20;     // rows to show (0 = all)
  std::string filter;  // ECMAScript regex on the mangled or demangled name; empty = all
  size_t width = 120;  // terminal columns
};

// Throws Error(Usage) when `filter` is not a valid regular expression. Ranks are ranks
// among all kernels, so a filtered row keeps the number the full table gives it.
std::string format_table(const Summary& s, const TableOptions& opt);

// One line per process: pid, command, devices, kernel count, and what went wrong.
std::string format_processes(const Summary& s);

// Multi-process jobs: one row per (rank, device) with its launches, kernel time and share;
// "" when the whole run was one process on one device.
std::string format_ranks(const Summary& s);

}  // namespace kerncap::profile
