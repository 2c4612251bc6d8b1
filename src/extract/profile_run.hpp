#pragma once
// `kerncap profile` without the printing: the records directory, running the application
// with the library in profile mode (refusing a library of another protocol), and the
// messages that tell the user why the profile is empty and what to run next.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "extract/launcher.hpp"
#include "format/profile_records.hpp"
#include "format/protocol.hpp"
#include "format/swaps.hpp"
#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"

namespace kerncap::extract {

namespace fs = std::filesystem;

// The records directory: a kept one (--records DIR, new or empty) or a temporary one
// removed when this object goes.
class RecordsDir {
 public:
  explicit RecordsDir(const std::string& keep);  // "" = temporary; throws Error(Usage)
  ~RecordsDir();
  RecordsDir(const RecordsDir&) = delete;
  RecordsDir& operator=(const RecordsDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool temporary_ = false;
};

struct AppCommand {
  std::string cmd;                // one shell command line, or
  std::vector<std::string> argv;  // an argument vector
  std::vector<std::string> as_argv() const;  // what actually runs
};

// A profiled run's settings beyond the records directory.
struct ProfiledRun {
  int verbose = 0;
  uint32_t sample = 0;                  // Config::profile_sample
  std::vector<format::SwapSpec> swaps;  // `kerncap run`: kernels served by variants (Config::swaps)
  // `extract --regimes`: the kernels whose launches get parameter signatures (Config::profile_params)
  std::vector<format::KernelPattern> params;
  int64_t rank = -1;                    // with swaps: only that rank's process swaps
  const AppOutput* output = nullptr;    // where the application's stdout/stderr go (null: ours)
  std::string_view doing = "profile";   // for the refusal when another CUDA tool is attached
};

// Runs the application with the library writing its records into `records`; throws
// Error(Input) when the library speaks another protocol. `sample`: Config::profile_sample.
AppExit run_profiled(const AppCommand& app, const fs::path& records, int verbose, uint32_t sample = 0);
AppExit run_profiled(const AppCommand& app, const fs::path& records, const ProfiledRun& how);
profile::RunInfo run_info(const AppCommand& app, const AppExit& exit);

// How the application ended, as an exit status for us to pass on (0 = fine).
int app_status(const AppExit& app);

// Why there is nothing to show, as precisely as the records allow (`app` null with --from).
std::string explain_empty(const std::vector<format::ProcessRecords>& records, const AppExit* app);

// "Next: capture the top kernel with\n  kerncap extract ..." for the first row that passes
// `filter` (may be null); "" when there is none.
std::string next_step(const profile::Summary& s, const AppCommand& app, const std::regex* filter);

std::string shell_quote(const std::string& s);

}  // namespace kerncap::extract
