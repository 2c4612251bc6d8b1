#include "source/compile_db.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "source/args.hpp"

namespace kerncap::source {

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  if (!ec) return c;
  return fs::absolute(p, ec).lexically_normal();
}

std::vector<const CompileCommand*> CompileDb::for_file(const fs::path& file) const {
  const fs::path want = canonical_or_self(file);
  std::vector<const CompileCommand*> out;
  for (const auto& e : entries)
    if (e.file == want || canonical_or_self(e.file) == want) out.push_back(&e);
  return out;
}

CompileDb load_compile_db(const fs::path& path) {
  std::ifstream in(path);
  if (!in) input_error(fmt::format("cannot read {}: check the path given to --compile-commands", path.string()));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    input_error(fmt::format("{} is not a JSON compilation database (expected an array of entries); regenerate it "
                            "(cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON, or bear -- make)",
                            path.string()));
  CompileDb db;
  db.path = canonical_or_self(path);
  size_t index = 0;
  for (const auto& e : j) {
    auto bad = [&](const char* what) {
      input_error(fmt::format("{}: entry {} {}; regenerate the compilation database", path.string(), index, what));
    };
    if (!e.is_object() || !e.contains("directory") || !e.contains("file")) bad("lacks 'directory' or 'file'");
    CompileCommand c;
    try {
      c.directory = e.at("directory").get<std::string>();
      if (c.directory.is_relative()) c.directory = absolute_in(c.directory, db.path.parent_path());
      c.file = canonical_or_self(absolute_in(e.at("file").get<std::string>(), c.directory));
      if (e.contains("arguments")) c.argv = e.at("arguments").get<std::vector<std::string>>();
      else if (e.contains("command")) c.argv = shell_split(e.at("command").get<std::string>());
      else bad("has neither 'arguments' nor 'command'");
      if (e.contains("output")) c.output = absolute_in(e.at("output").get<std::string>(), c.directory);
    } catch (const nlohmann::json::exception& ex) {
      bad(fmt::format("has a field of the wrong type ({})", ex.what()).c_str());
    }
    if (c.argv.empty()) bad("has an empty command");
    if (!c.output) {
      auto args = parse_args(std::vector<std::string>(c.argv.begin() + 1, c.argv.end()));
      for (const auto& a : args)
        if (a.form != Arg::Form::Bare && a.is({"-o", "--output-file"})) c.output = absolute_in(a.value, c.directory);
    }
    db.entries.push_back(std::move(c));
    ++index;
  }
  return db;
}

std::vector<fs::path> find_compile_dbs(const fs::path& source_dir) {
  std::vector<fs::path> found;
  fs::path dir = canonical_or_self(source_dir);
  for (int up = 0; up < 3 && !dir.empty(); ++up) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "compile_commands.json", ec)) found.push_back(dir / "compile_commands.json");
    std::vector<fs::path> builds;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.starts_with("build") && it->is_directory(ec) && fs::is_regular_file(it->path() / "compile_commands.json", ec))
        builds.push_back(it->path() / "compile_commands.json");
    }
    std::sort(builds.begin(), builds.end());
    found.insert(found.end(), builds.begin(), builds.end());
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return found;
}

}  // namespace kerncap::source
