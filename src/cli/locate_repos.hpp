#pragma once
// Indexing the --source-repo trees for `kerncap locate` and `kerncap profile`, with a
// progress line on stderr while a large tree is read.
#include <string>
#include <vector>

#include "source/locate.hpp"

namespace kerncap::cli {

// Throws Error(Usage) for a repository that is not a directory, before any indexing.
std::vector<source::RepoIndex> index_repos(const std::vector<std::string>& dirs, bool quiet);

}  // namespace kerncap::cli
