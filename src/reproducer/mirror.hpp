#pragma once
// The editable copy of the kernel's translation unit: kernel_variant.cu, and under src/ a
// mirror of every local include it reaches (paths relative to the source tree), so edits
// never touch the original tree. nvcc has no virtual file system overlay, so paths are
// rewritten instead:
//   - in kernel_variant.cu, quoted includes of tree files become "src/<path in tree>"
//     (the unit no longer sits next to its siblings);
//   - in any copied file, a quoted include found next to the original file but outside the
//     tree becomes its absolute path (the mirror has no copy of it);
//   - everything else is untouched: quoted includes inside the tree resolve inside the
//     mirror (same layout) and -I directories are remapped by the compile command.
// A kernel defined in a library header outside the tree (source/library_headers.hpp) gets a
// copy of that header under library/, at its include path, searched first (-Ilibrary).
#include <filesystem>
#include <string>
#include <vector>

#include "format/out_layout.hpp"
#include "source/finder.hpp"

namespace kerncap::reproducer {

namespace fs = std::filesystem;

struct MirroredFile {
  fs::path original;
  std::string copy;  // relative to the reproducer directory: "kernel_variant.cu" or "src/..."
  int rewritten_includes = 0;
};

struct Mirror {
  std::vector<MirroredFile> files;  // the unit first, then includes in the order first reached
  std::string edit_file;            // where the kernel's definition is, relative to OUT
  uint32_t edit_line = 0;
  bool kept_existing = false;       // kernel_variant.cu was there already: nothing rewritten
};

inline constexpr const char* kVariantSource = format::out::kKernelVariantCu.data();
inline constexpr const char* kMirrorDir = format::out::kMirrorDir.data();
inline constexpr const char* kLibraryDir = format::out::kLibraryDir.data();

// Rewrites the includes of one file's text (exposed for tests). `self` is the file's
// original path, `is_unit` selects the kernel_variant.cu rules.
std::string rewrite_includes(const std::string& text, const fs::path& self, bool is_unit,
                             const source::IncludeClosure& closure, const fs::path& tree, int* count = nullptr);

// Writes kernel_variant.cu and src/ under `out`, unless kernel_variant.cu exists (then the
// user's edits are kept and only the file list is computed). Throws Error(Input) on I/O errors.
Mirror write_mirror(const source::Result& found, const fs::path& out);

}  // namespace kerncap::reproducer
