#pragma once
// How `kerncap locate` and `kerncap profile --source-repo` show a LocateResult: a block of
// text for the terminal, a short "where" for a table row, and JSON (docs/locate.md).
#include <string>

#include <nlohmann/json.hpp>

#include "source/locate.hpp"

namespace kerncap::source {

nlohmann::json to_json(const LocateResult& r);
std::string format_locate(const LocateResult& r);
// "pytorch/aten/src/ATen/native/cuda/Fill.cu:20" (the repository's folder name first), "closed source: cuBLAS (libcublas)", "generated (Inductor)", "not found".
std::string short_where(const LocateResult& r);
// One line per repository: "pytorch: 21034 files indexed in 3.2 s (12 skipped)".
std::string format_index_summary(const std::vector<RepoIndex>& repos);

}  // namespace kerncap::source
