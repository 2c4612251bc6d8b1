#pragma once
// The finder's verdicts in words: each sets Result::status, a one-line summary, and a
// detail that says what it means for the reproducer and what the user can do.
#include "source/finder.hpp"
#include "source/tree_search.hpp"

namespace kerncap::source {

void classify_triton(Result& r, bool forced);
void classify_library(Result& r);
void classify_no_source_dir(Result& r);
void classify_runtime(const Request& q, const TreeScan& scan, Result& r);
void classify_not_in_tree(const TreeScan& scan, Result& r);
void classify_ambiguous(const std::vector<Candidate>& left, Result& r);
// After a definition and translation unit were chosen: Found or NoCompileCommand.
void classify_found(Result& r, const std::string& no_command_reason);

// A path for messages: relative to the tree when inside it.
std::string display(const fs::path& p, const fs::path& tree);

}  // namespace kerncap::source
