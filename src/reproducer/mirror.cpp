#include "reproducer/mirror.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "source/compile_db.hpp"

namespace kerncap::reproducer {
namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) input_error(fmt::format("cannot read {} to copy it into the reproducer", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  files::create_private_dirs(p.parent_path());
  files::replace_file(p, text);
}

std::string mirror_path(const fs::path& file, const fs::path& tree) {
  return (fs::path(kMirrorDir) / file.lexically_relative(tree)).string();
}

// Replaces `"spelled"` by `"target"` in the directive on 1-based `line`.
bool replace_on_line(std::vector<std::string>& lines, uint32_t line, const std::string& spelled,
                     const std::string& target) {
  if (line == 0 || line > lines.size()) return false;
  std::string& l = lines[line - 1];
  const size_t hash = l.find('#');
  const size_t at = l.find("\"" + spelled + "\"", hash == std::string::npos ? 0 : hash);
  if (hash == std::string::npos || at == std::string::npos) return false;
  l.replace(at, spelled.size() + 2, "\"" + target + "\"");
  return true;
}

}  // namespace

std::string rewrite_includes(const std::string& text, const fs::path& self, bool is_unit,
                             const source::IncludeClosure& closure, const fs::path& tree, int* count) {
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  int n = 0;
  for (const auto& e : closure.edges) {
    if (e.from != self || !e.directive.quoted || !e.to || e.directive.line == 0) continue;
    const bool next_to_self =
        source::canonical_or_self(self.parent_path() / e.directive.spelled) == *e.to;
    const bool in_tree = source::inside(*e.to, tree);
    std::string target;
    if (is_unit && in_tree) target = mirror_path(*e.to, tree);
    else if (next_to_self && !in_tree) target = e.to->string();
    else continue;
    if (replace_on_line(lines, e.directive.line, e.directive.spelled, target)) ++n;
  }
  if (count) *count = n;
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

Mirror write_mirror(const source::Result& found, const fs::path& out) {
  Mirror m;
  const fs::path& tree = found.tree;
  const fs::path unit = found.tu;
  m.kept_existing = fs::exists(out / kVariantSource);
  MirroredFile u{unit, kVariantSource, 0};
  if (!m.kept_existing)
    write_text(out / kVariantSource, rewrite_includes(read_text(unit), unit, true, found.includes, tree,
                                                      &u.rewritten_includes));
  m.files.push_back(u);
  for (const auto& f : found.includes.files) {
    MirroredFile mf{f, mirror_path(f, tree), 0};
    if (!m.kept_existing)
      write_text(out / mf.copy, rewrite_includes(read_text(f), f, false, found.includes, tree, &mf.rewritten_includes));
    m.files.push_back(mf);
  }
  m.edit_line = found.line;
  if (!found.library_root.empty()) {  // a library header: its copy, found first through -Ilibrary
    const std::string copy =
        (fs::path(kLibraryDir) / found.definition.lexically_relative(found.library_root)).generic_string();
    if (!m.kept_existing) write_text(out / copy, read_text(found.definition));
    m.files.push_back({found.definition, copy, 0});
    m.edit_file = copy;
    return m;
  }
  m.edit_file = found.definition == unit ? kVariantSource : mirror_path(found.definition, tree);
  return m;
}

}  // namespace kerncap::reproducer
