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

// The entry's argv without ccache-style launchers: argv[0] is the compiler.
std::vector<std::string> compiler_argv(const CompileCommand& c);

// The entry's include search paths (-iquote, -I, -isystem, -include), made absolute.
SearchPaths search_paths_of(const CompileCommand& c);

}  // namespace kerncap::source
