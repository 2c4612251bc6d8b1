// `kerncap locate NAME --source-repo DIR`: where a kernel is defined in the repositories the
// user has checked out, and how to test it. The work lives in src/source (locate*.cpp).
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/document_versions.hpp"
#include "cli/locate_repos.hpp"
#include "common/error.hpp"
#include "source/locate_output.hpp"

namespace kerncap::cli {

namespace {

constexpr const char* kFooter = R"(NAME is a kernel name as `kerncap profile` shows it: mangled (_Z...), demangled, or a
plain Triton / extern "C" name. Each --source-repo is indexed once (C/C++/CUDA and Python
files; hidden folders, build trees, binary and unreadable files are skipped); the rules
(share/kerncap/locate_rules.toml, built in; add yours with --rules) decide how to search:

  PyTorch (at::native::...)     the functor / the function whose lambda is the kernel / the
                                __global__ template, under aten/; pytest command for its op
  @triton.jit kernels           the def by name; test files that import or call it
  C++ kernels (vLLM, FA, yours) the __global__ definition (namespaces must match); tests that
                                mention it or the host function launching it
  CUTLASS device_kernel<...>    the kernel and collective specializations it instantiates;
                                the closest example or unit test
  cuBLAS, cuBLASLt, cuDNN, NCCL closed source: which library, and how to log and replay the call
  Inductor triton_poi_/per_/... generated at run time; with --capture OUT, its recorded source

Examples:
  kerncap locate 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)' --source-repo ~/pytorch
  kerncap locate _matmul_ogs_NNT_bf16xbf16 --source-repo ~/triton/python/triton_kernels --json
  kerncap profile --source-repo ~/vllm --source-repo ~/pytorch -- python serve.py

Exit status: 0 when every name was found, was closed source or generated; 1 when one was
not found; 2 for bad arguments or a bad rules file.)";

struct LocateArgs {
  std::vector<std::string> names;
  std::vector<std::string> repos;
  std::vector<std::string> rules;
  std::string capture;
  bool json = false;
  bool quiet = false;
};

void run_locate(const LocateArgs& a, int& exit_code) {
  source::LocateRules rules = source::load_locate_rules(a.rules);
  if (a.repos.empty() && !a.json)
    std::fprintf(stderr, "kerncap: no --source-repo given: only closed-source and generated kernels can be answered\n");
  auto repos = index_repos(a.repos, a.quiet || a.json);
  source::Locator loc(std::move(rules), std::move(repos));
  source::LocateOptions opt;
  if (!a.capture.empty()) opt.capture = a.capture;
  nlohmann::json all = nlohmann::json::array();
  exit_code = 0;
  for (size_t i = 0; i < a.names.size(); ++i) {
    const source::LocateResult r = loc.locate(a.names[i], opt);
    if (r.status == source::LocateStatus::NotFound) exit_code = 1;
    if (a.json) all.push_back(source::to_json(r));
    else std::cout << (i ? "\n" : "") << source::format_locate(r);
  }
  if (a.json) {
    nlohmann::json doc = {{"format", "kerncap-locate"}, {"version", kLocateVersion}, {"results", all}, {"repos", nlohmann::json::array()}};
    for (const auto& r : loc.repos())
      doc["repos"].push_back({{"root", r.root.string()}, {"files", r.files.size()}, {"seconds", r.seconds}, {"skipped", r.skipped}});
    std::cout << doc.dump() << std::endl;
  } else if (!a.quiet && !loc.repos().empty()) {
    std::cerr << "\n" << source::format_index_summary(loc.repos());
  }
}

}  // namespace

void add_locate(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LocateArgs>();
  auto* cmd = app.add_subcommand("locate", "Find where a kernel is defined in checked-out repositories, and how to test it");
  cmd->footer(kFooter);
  cmd->add_option("name", args->names, "Kernel name(s): mangled, demangled or plain")->required();
  cmd->add_option("--source-repo", args->repos, "A checked-out repository to search (repeatable)")
      ->allow_extra_args(false);  // one folder per flag: `--source-repo DIR NAME` leaves NAME a name
  cmd->add_option("--rules", args->rules, "A TOML rules file tried before the built-in rules (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--capture", args->capture, "A capture directory (OUT) whose recorded Triton sources to search");
  cmd->add_flag("--json", args->json, "Print one JSON document on stdout");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress or index summary on stderr");
  cmd->callback([args, &exit_code] { run_locate(*args, exit_code); });
}

}  // namespace kerncap::cli
