#pragma once
// The readable form of a demangled kernel name that tables, traces and reproducer titles
// show. Pure string work, unit tested.
#include <string>
#include <string_view>

namespace kerncap::names {

// A form that fits `width` columns: drops the return type, the parameter list and noisy
// namespaces (std::, c10::, at::, at::native::, cub's versioned namespace), then collapses
// nested template arguments, then truncates with "...".
std::string shorten(std::string_view demangled, size_t width);

}  // namespace kerncap::names
