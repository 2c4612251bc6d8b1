#include "names/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "names/text.hpp"

namespace kerncap::names {

bool is_mangled(std::string_view name) { return name.starts_with("_Z"); }

std::string demangle(std::string_view mangled) {
  if (!is_mangled(mangled)) return std::string(mangled);
  int status = 0;
  std::string in(mangled);
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(in.c_str(), nullptr, nullptr, &status),
                                                 &std::free);
  return (status == 0 && d) ? std::string(d.get()) : in;
}

std::string function_name(std::string_view demangled) {
  std::string s(strip_void(demangled));
  replace_all(s, "(anonymous namespace)", "{anon}");
  size_t end = s.find_first_of("<(");
  return end == std::string::npos ? s : s.substr(0, end);
}

}  // namespace kerncap::names
