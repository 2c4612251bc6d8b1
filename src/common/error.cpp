#include "common/error.hpp"

namespace kerncap {

void fail(ErrorKind kind, const std::string& what) { throw Error(kind, what); }

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage:
    case ErrorKind::Input: return 2;
    case ErrorKind::Device: return 3;
    case ErrorKind::Mismatch: return 1;
    case ErrorKind::Internal: return 70;
  }
  return 70;
}

}  // namespace kerncap
