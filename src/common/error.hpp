#pragma once
// Typed errors for the offline tools. Inside the application (src/capture) these are
// caught at every callback boundary and turned into log lines; in the CLI they become
// messages and exit codes in main() only.
#include <stdexcept>
#include <string>

namespace kerncap {

enum class ErrorKind {
  Usage,     // the user asked for something impossible (bad flag, missing dir)
  Input,     // a file the user gave us is wrong (truncated, newer format, no kernel)
  Device,    // the GPU or driver refused (no GPU, out of memory, launch failure)
  Mismatch,  // validation found a difference (exit 1, not a crash)
  Internal,  // a bug in kerncap
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string what) : std::runtime_error(std::move(what)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void fail(ErrorKind kind, const std::string& what);
inline void usage_error [[noreturn]] (const std::string& what) { fail(ErrorKind::Usage, what); }
inline void input_error [[noreturn]] (const std::string& what) { fail(ErrorKind::Input, what); }
inline void device_error [[noreturn]] (const std::string& what) { fail(ErrorKind::Device, what); }

// Exit code for an error kind (2 usage/input, 3 device, 1 mismatch, 70 internal).
int exit_code(ErrorKind kind);

}  // namespace kerncap
