#include "capture/config.hpp"
#include "capture/rank_gate.hpp"

#include <cstdlib>

namespace kerncap::capture {

Config read_config(std::vector<std::string>* problems) {
  return format::config_from_env(
      [](std::string_view name) {
        return std::getenv(std::string(name).c_str());  // the only getenv in the capture library
      },
      problems);
}

format::ProcessRank read_process_rank() {
  return format::rank_from_env([](std::string_view name) { return std::getenv(std::string(name).c_str()); });
}

}  // namespace kerncap::capture
