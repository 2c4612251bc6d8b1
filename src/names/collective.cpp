#include "names/collective.hpp"

#include "names/classify.hpp"

namespace kerncap::names {

bool is_nccl_kernel(std::string_view mangled, std::string_view demangled) {
  for (std::string_view n : {mangled, demangled})
    if (n.find("ncclDevKernel_") != std::string_view::npos || n.find("ncclKernel_") != std::string_view::npos)
      return true;
  return classify(mangled, demangled).kind == Kind::Nccl;
}

std::string nccl_capture_note() {
  return "this is one of NCCL's own kernels, one rank's half of a collective: while it runs it waits for flags "
         "and data that the other ranks' kernels and NCCL's proxy thread write into its buffers. A replay runs "
         "this rank alone, so nobody answers: it would wait forever (or read the stale flags of BEFORE), and its "
         "time would not be the collective's. The capture is good for inspecting the launch (kerncap info: "
         "grid, parameters, the buffers it reaches); replay and validate refuse it. To study communication, "
         "profile the job (kerncap profile) or use NCCL's own tests (nccl-tests)";
}

}  // namespace kerncap::names
