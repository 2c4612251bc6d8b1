// kerncap: profile a CUDA application, capture one kernel launch, replay and validate it.
// Typed errors from the libraries become messages and exit codes here, and only here.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "common/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "kerncap " KERNCAP_VERSION
      " - take one kernel launch out of a CUDA application and replay it standalone.\n\n"
      "  kerncap profile -- ./app ARGS          rank the application's kernels by GPU time\n"
      "  kerncap extract NAME --cmd \"./app\" -o DIR   capture one launch of kernel NAME (--regimes: one per shape)\n"
      "  kerncap replay DIR                     replay it alone, at its original addresses, and time it\n"
      "  kerncap validate DIR                   replay and compare with what the application wrote\n"
      "  kerncap serve DIR                      keep it open: validate DIR then answers in that process\n"
      "  kerncap info DIR                       show what a capture holds\n"
      "  kerncap locate NAME --source-repo DIR  find the kernel's source and tests in checked-out repositories\n"
      "  kerncap footprint DIR                  measure which bytes the launch reads and writes\n"
      "  kerncap lint DIR                       check the kernel's compiled code offline (no GPU)\n"
      "  kerncap baseline save NAME DIR         store time, resources and error for later comparison\n"
      "  kerncap diff DIR --baseline NAME       compare with a stored baseline, flag regressions\n"
      "  kerncap report DIR [--verdict V.json]  one self-contained HTML page: regimes, speed-ups, footprint\n"
      "  kerncap mcp                            serve these commands to an AI agent (MCP over stdio)\n"
      "  kerncap evaluate DIR --images V...     judge many candidate images on every GPU (JSON lines)\n"
      "  kerncap run --swap DIR=V.cubin -- APP  run the application with the kernel served by a variant, paired\n",
      "kerncap"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kerncap " KERNCAP_VERSION);
  int exit_code = 0;
  kerncap::cli::add_profile(app, exit_code);
  kerncap::cli::add_extract(app, exit_code);
  kerncap::cli::add_replay(app, exit_code);
  kerncap::cli::add_validate(app, exit_code);
  kerncap::cli::add_serve(app, exit_code);
  kerncap::cli::add_info(app, exit_code);
  kerncap::cli::add_lint(app, exit_code);
  kerncap::cli::add_baseline(app, exit_code);
  kerncap::cli::add_diff(app, exit_code);
  kerncap::cli::add_env(app, exit_code);
  kerncap::cli::add_footprint(app, exit_code);
  kerncap::cli::add_prune(app, exit_code);
  kerncap::cli::add_locate(app, exit_code);
  kerncap::cli::add_mcp(app, exit_code);
  kerncap::cli::add_evaluate(app, exit_code);
  kerncap::cli::add_window(app, exit_code);
  kerncap::cli::add_report(app, exit_code);
  kerncap::cli::add_run(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help) and gives its own codes (105 for a value out of
    // range, ...): a bad command line is a usage error like every other, exit 2.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kerncap::exit_code(kerncap::ErrorKind::Usage);
  } catch (const kerncap::Error& e) {
    std::fprintf(stderr, "kerncap: error: %s\n", e.what());
    return kerncap::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kerncap: internal error: %s\n(please report this with the command line)\n", e.what());
    return 70;
  }
  return exit_code;
}
