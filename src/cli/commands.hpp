#pragma once
// Each subcommand lives in its own file with its help text beside its parser.
#include <CLI/CLI.hpp>

namespace kerncap::cli {

// Each add_* registers a subcommand whose callback sets `exit_code`.
void add_extract(CLI::App& app, int& exit_code);
void add_replay(CLI::App& app, int& exit_code);
void add_validate(CLI::App& app, int& exit_code);
void add_info(CLI::App& app, int& exit_code);
void add_env(CLI::App& app, int& exit_code);
void add_profile(CLI::App& app, int& exit_code);
void add_footprint(CLI::App& app, int& exit_code);
void add_lint(CLI::App& app, int& exit_code);
void add_baseline(CLI::App& app, int& exit_code);
void add_diff(CLI::App& app, int& exit_code);
void add_locate(CLI::App& app, int& exit_code);
void add_mcp(CLI::App& app, int& exit_code);
void add_report(CLI::App& app, int& exit_code);
void add_prune(CLI::App& app, int& exit_code);
void add_serve(CLI::App& app, int& exit_code);
void add_evaluate(CLI::App& app, int& exit_code);
void add_window(CLI::App& app, int& exit_code);  // cmd_window.cpp: a window of launches
void add_run(CLI::App& app, int& exit_code);

}  // namespace kerncap::cli
