#include "names/regex_search.hpp"

#include <pthread.h>

#include <algorithm>

namespace kerncap::names {
namespace {

// Stack bytes a searched character may take, with room to spare (measured: under 330).
constexpr size_t kStackPerChar = 512;
constexpr size_t kStackBase = size_t{256} << 10;

struct Search {
  std::string_view text;
  const std::regex* re = nullptr;
  bool found = false;
};

bool search_here(std::string_view text, const std::regex& re) noexcept {
  try {
    return std::regex_search(text.begin(), text.end(), re);
  } catch (...) {  // std::regex_error (complexity, stack) or bad_alloc: no match, no throw
    return false;
  }
}

void* run_search(void* p) {
  auto* s = static_cast<Search*>(p);
  s->found = search_here(s->text, *s->re);
  return nullptr;
}

}  // namespace

bool regex_search_text(std::string_view text, const std::regex& re) noexcept {
  if (text.size() <= kRegexOnCallerStack) return search_here(text, re);
  Search s{text.substr(0, kRegexMaxText), &re, false};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  const size_t page = 4096;
  const size_t stack = (kStackBase + s.text.size() * kStackPerChar + page - 1) / page * page;
  pthread_t thread;
  const bool started = pthread_attr_setstacksize(&attr, std::max<size_t>(stack, PTHREAD_STACK_MIN)) == 0 &&
                       pthread_create(&thread, &attr, run_search, &s) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return false;
  pthread_join(thread, nullptr);
  return s.found;
}

}  // namespace kerncap::names
