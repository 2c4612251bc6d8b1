#pragma once
// Small string helpers shared by the files of names/ (not part of its interface).
#include <string>
#include <string_view>

namespace kerncap::names {

inline void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// A demangled function template carries its return type in front: "void f<int>(int)".
inline std::string_view strip_void(std::string_view s) { return s.starts_with("void ") ? s.substr(5) : s; }

}  // namespace kerncap::names
