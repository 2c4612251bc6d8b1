#include "names/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "names/text.hpp"

namespace kerncap::names {

namespace {

constexpr std::string_view kStaticPrefix = "__nv_static_";

// __cxa_demangle of `name`, or nothing when it is not a valid mangled name.
std::optional<std::string> cxa_demangle(std::string_view name) {
  int status = 0;
  const std::string in(name);
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(in.c_str(), nullptr, nullptr, &status),
                                                 &std::free);
  if (status != 0 || !d) return std::nullopt;
  return std::string(d.get());
}

}  // namespace

std::string_view itanium_part(std::string_view name) {
  if (name.starts_with("_Z")) return name;
  if (!name.starts_with(kStaticPrefix)) return {};
  // The prefix's parts (a counter, hashes, the file name) are letters, digits and single
  // underscores; the Itanium name follows the first "__Z" that demangles. Names come from
  // captures (untrusted): a few candidates at most, so a name full of "__Z" costs no more than
  // a few demanglings.
  int tries = 0;
  for (size_t p = name.find("__Z", kStaticPrefix.size()); p != std::string_view::npos && tries++ < 4;
       p = name.find("__Z", p + 1))
    if (cxa_demangle(name.substr(p + 1))) return name.substr(p + 1);
  return {};
}

bool is_mangled(std::string_view name) { return !itanium_part(name).empty(); }

std::string demangle(std::string_view mangled) {
  const std::string_view part = itanium_part(mangled);
  if (part.empty()) return std::string(mangled);
  return cxa_demangle(part).value_or(std::string(mangled));
}

std::string function_name(std::string_view demangled) {
  std::string s(strip_void(demangled));
  replace_all(s, "(anonymous namespace)", "{anon}");
  size_t end = s.find_first_of("<(");
  return end == std::string::npos ? s : s.substr(0, end);
}

}  // namespace kerncap::names
