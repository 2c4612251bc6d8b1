#pragma once
// The commands written in Python (`kerncap mcp`, `kerncap report`, `kerncap evaluate`): find the
// interpreter and the package that belong to this kerncap, and replace this process with
// `python -m kerncap.MODULE ARGS...`, so that the command works whatever Python environment
// the user has, and every kerncap the module runs is this one.
#include <string>
#include <vector>

namespace kerncap::cli {

struct PythonModule {
  std::string module;             // "kerncap.report"
  std::vector<std::string> args;  // after `-m MODULE`
  std::string python;             // --python; "" = $KERNCAP_PYTHON, else python3
  std::string needs;              // what the module needs, for the error ("matplotlib (pip install ...)")
};

// Sets KERNCAP_BIN to this executable (unless set) and PYTHONPATH to the user's, then this
// kerncap's package folder; execs. Returns only by throwing Error(Usage) when exec fails.
[[noreturn]] void exec_python_module(const PythonModule& m);

}  // namespace kerncap::cli
