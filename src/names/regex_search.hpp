#pragma once
// std::regex_search over text of any length without overflowing the caller's stack.
// libstdc++'s regex executor recurses once per character for patterns such as `a.*x` (about
// 300 bytes of stack a character on x86-64 here: 100,000 characters overflow an 8 MiB stack),
// and kernel names, NVTX range names and source files are other people's text: a 64 KiB
// demangled name once crashed `kerncap validate`, and the same search inside the injected
// library would crash the application. Short text is searched on the caller's stack; longer
// text on a thread of its own whose stack fits it (the caller waits).
#include <regex>
#include <string_view>

namespace kerncap::names {

// Text longer than this is searched on a thread with a stack sized for it.
inline constexpr size_t kRegexOnCallerStack = 256;
// Only the first this many bytes of longer text are searched (a bound on that thread's stack).
inline constexpr size_t kRegexMaxText = size_t{1} << 20;

// std::regex_search(text, re). False when the search cannot run (no thread could be started,
// or the regex engine gave up with std::regex_error): never a crash, never a throw.
bool regex_search_text(std::string_view text, const std::regex& re) noexcept;

}  // namespace kerncap::names
