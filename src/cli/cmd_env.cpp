// `kerncap env`: the KERNCAP_* variables, printed from the one table in
// src/format/protocol.cpp (so this list, and docs/env.md made from --markdown, cannot
// drift from the code). `--paths` prints what this kerncap found instead: the capture
// library it would inject and the Python package it would use (a check of an installation).
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/document_versions.hpp"
#include "cli/validate_output.hpp"
#include "extract/environment.hpp"
#include "extract/launcher.hpp"
#include "extract/triton_step.hpp"
#include "format/protocol.hpp"

namespace kerncap::cli {
namespace {

// Throws Error(Usage) when no libkerncap.so is found: an installation that cannot capture.
void print_paths(bool json) {
  const extract::HostEnv h = extract::read_host_env();
  const std::filesystem::path library = extract::find_injection_library(h.library);
  const std::filesystem::path python = extract::python_dir(h);
  if (json) {
    std::cout << nlohmann::json{{"library", library.string()}, {"python_dir", python.string()}}.dump(1) << '\n';
  } else {
    std::cout << "library     " << library.string() << "\npython_dir  " << python.string() << '\n';
  }
}

}  // namespace

void add_env(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("env", "List the environment variables of kerncap and its capture library");
  cmd->footer("--markdown writes docs/env.md: kerncap env --markdown > docs/env.md\n"
              "--paths shows the libkerncap.so that extract and profile inject and the folder of the kerncap "
              "Python package (Triton shim and reproducer generator), as found from this kerncap's own location.");
  auto json = std::make_shared<bool>(false);
  auto markdown = std::make_shared<bool>(false);
  auto paths = std::make_shared<bool>(false);
  auto* j = cmd->add_flag("--json", *json, "Print the table as JSON (protocol version and every variable)");
  auto* m = cmd->add_flag("--markdown", *markdown, "Print the table as the Markdown page docs/env.md")->excludes(j);
  cmd->add_flag("--paths", *paths, "Print the capture library and Python package this kerncap uses (with --json: as JSON)")
      ->excludes(m);
  cmd->callback([json, markdown, paths, &exit_code] {
    if (*paths) print_paths(*json);
    else if (*json) {
      nlohmann::json doc = format::env_json();
      doc["documents"] = document_versions();
      // The keys validate --json can print, so that readers in other languages are checked
      // against the writer (python/tests/test_results_fields.py).
      doc["documents"][replay::kVerdictFormat]["keys"] = validate_document_keys();
      std::cout << doc.dump(1) << '\n';
    }
    else if (*markdown) std::cout << format::env_markdown();
    else std::cout << format::env_text();
    exit_code = 0;
  });
}

}  // namespace kerncap::cli
