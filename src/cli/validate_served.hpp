#pragma once
// `kerncap validate --server auto`: hands the evaluation to a running `kerncap serve` of the
// same directory when its verdict is the one this process would reach (serve_route.hpp), and
// prints it exactly as validate prints its own. Falls back — returns false — when no server
// listens (silently), or when one cannot answer this validation or gave no answer (with one
// line saying why).
#include <optional>
#include <string>

#include "cli/replay_options.hpp"
#include "cli/serve_route.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::cli {

// `c`: the validation's options with its variant (with_fresh_variant). True when the server
// answered: the result was printed and `exit_code` set. An input or usage error the server
// reports for the image is thrown as this process would throw it.
bool validate_served(const ReplayCommon& c, const format::Capture& cap, const ValidateShape& shape, ServerUse use,
                     const std::optional<std::string>& toml, int& exit_code);

}  // namespace kerncap::cli
