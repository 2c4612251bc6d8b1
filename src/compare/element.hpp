#pragma once
// One element of a compared buffer, read from its bytes: elements sit at any alignment in the
// staging windows, so they are copied out, never dereferenced in place.
#include <cstdint>
#include <cstring>

namespace kerncap::compare {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace kerncap::compare
