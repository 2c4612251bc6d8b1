#pragma once
// SASS text of a cubin from the toolkit's own disassembler: nvdisasm, else cuobjdump -sass,
// each looked up on PATH and then in /usr/local/cuda/bin. Offline; no GPU.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kerncap::lint {

struct Disassembly {
  std::string tool;  // the program that ran, e.g. "/usr/local/cuda/bin/nvdisasm"
  std::string text;  // its standard output
};

// `tool`: a program to use instead of the search (a path or a name found on PATH).
// Throws Error(Usage) when no disassembler can be run (saying where it looked and how to
// get one), Error(Input) when it rejects the cubin (with its message).
Disassembly disassemble(std::span<const uint8_t> cubin, const std::string& tool = "");

// Runs argv[0] (PATH search as execvp), collecting stdout and stderr. nullopt when the
// program could not be started at all.
struct ToolRun {
  int status = 0;  // exit code, 128+signal when killed
  std::string out, err;
};
std::optional<ToolRun> run_tool(const std::vector<std::string>& argv);

}  // namespace kerncap::lint
