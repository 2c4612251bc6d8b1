#pragma once
// The injected library's configuration: the launcher's Config (format/protocol.hpp), read
// from the environment here and nowhere else in the library.
#include <string>
#include <vector>

#include "format/protocol.hpp"

namespace kerncap::capture {

using format::Config;
using format::Mode;

// Reads the environment. Never throws: malformed values fall back to defaults and are
// reported in `problems`.
Config read_config(std::vector<std::string>* problems = nullptr);

}  // namespace kerncap::capture
