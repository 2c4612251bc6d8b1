#pragma once
// "Did you mean": the kernel names most like a pattern that matched nothing. Offline only
// (the CLI's diagnosis after an extract that captured nothing); the injected library never
// links it.
#include <cstddef>
#include <string>
#include <vector>

namespace kerncap::names {

// The names most like `pattern`: case-insensitive substring hits first, then by edit
// distance of the pattern to the best-matching window of the name; at most `limit`, ties
// in the order given.
std::vector<std::string> closest_names(const std::string& pattern, const std::vector<std::string>& names,
                                       size_t limit = 5);

}  // namespace kerncap::names
