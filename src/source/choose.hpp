#pragma once
// From candidate definitions to one (definition, translation unit, compile command).
#include <vector>

#include "source/finder.hpp"
#include "source/tree_search.hpp"

namespace kerncap::source {

// Fills r (definition, tu, command, search, includes, how, candidates, status). `db` may be null.
void choose_translation_unit(const Request& q, const TreeScan& scan, const std::vector<const Located*>& defs,
                             const CompileDb* db, SourceCache& cache, Result& r);

// True when the entry compiles CUDA (nvcc, clang with -x cuda or a .cu file), after launchers.
bool compiles_cuda(const CompileCommand& c);

}  // namespace kerncap::source
