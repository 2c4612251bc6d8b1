#include "reproducer/rewrite.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "source/args.hpp"
#include "source/includes.hpp"

namespace kerncap::reproducer {
namespace {

using source::Arg;

// Flags that choose what nvcc/clang produces or which GPUs it targets: replaced by ours.
bool dropped_bare(std::string_view w) {
  static const std::vector<std::string_view> v = {
      "-c", "--compile", "-dc", "--device-c", "-dw", "--device-w", "-cuda", "--cuda", "-ptx", "--ptx", "-cubin",
      "--cubin", "-fatbin", "--fatbin", "-E", "--preprocess", "-M", "-MM", "-MD", "-MMD", "-MP",
      "--generate-dependencies", "--generate-nonsystem-dependencies", "--generate-dependencies-with-compile",
      "--generate-nonsystem-dependencies-with-compile", "-dlink", "--device-link", "-lib", "--lib", "-link",
      "--link", "-run", "--run", "-dlto", "--dlink-time-opt", "-keep", "--keep", "-rdc=true", "-fgpu-rdc",
      "--cuda-device-only", "--cuda-host-only", "-S", "-emit-llvm", "-save-temps"};
  return std::find(v.begin(), v.end(), w) != v.end() || w.starts_with("--cuda-gpu-arch=") ||
         w.starts_with("--offload-arch=") || w.starts_with("-gencode=") || w.starts_with("-arch=") ||
         w.starts_with("-code=") || w.starts_with("--gpu-architecture=") || w.starts_with("--gpu-code=") ||
         w.starts_with("--generate-code=") || w.starts_with("-fgpu-rdc") || w.starts_with("-flto") ||
         w.starts_with("-Wp,-M");
}

bool dropped_valued(const Arg& a) {
  return a.is({"-o", "--output-file", "-MF", "-MT", "-MQ", "-MJ", "--dependency-output", "--dependency-target-name",
               "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code", "-odir",
               "--output-directory", "--keep-dir", "-keep-dir", "--cuda-gpu-arch", "--offload-arch"});
}

bool rdc_on(const Arg& a) {
  if (a.form == Arg::Form::Bare) return a.opt == "-dc" || a.opt == "--device-c" || a.opt == "-rdc=true" ||
                                        a.opt.starts_with("-fgpu-rdc");
  return a.is({"-rdc", "--relocatable-device-code"}) && a.value == "true";
}

}  // namespace

std::string define_flag(std::string_view def) {
  if (def.starts_with("-D")) def.remove_prefix(2);
  if (def.empty() || def.front() == '=')
    usage_error(fmt::format("-D '{}': give a macro name, as NAME or NAME=VALUE", def));
  return "-D" + std::string(def);
}

std::vector<std::string> CompileSpec::argv() const {
  std::vector<std::string> v = {compiler};
  v.insert(v.end(), flags.begin(), flags.end());
  v.insert(v.end(), defines.begin(), defines.end());
  v.push_back("-o");
  v.push_back(output);
  v.push_back(source);
  return v;
}

CompileSpec rewrite_command(const source::CompileCommand& cmd, const RewriteInputs& in) {
  std::vector<std::string> argv = cmd.argv;
  CompileSpec s;
  while (argv.size() > 1 && source::is_launcher(argv.front())) {
    s.removed.push_back(argv.front());
    argv.erase(argv.begin());
  }
  if (argv.empty()) input_error("the compile command is empty");
  const source::Compiler kind = source::compiler_of(argv.front());
  if (kind == source::Compiler::Other)
    input_error(fmt::format("the compile command runs '{}', not nvcc or clang: kerncap can only rewrite CUDA "
                            "compiles (is this the right translation unit?)",
                            argv.front()));
  s.compiler = argv.front();
  if (!fs::path(s.compiler).is_absolute() && s.compiler.find('/') != std::string::npos)
    s.compiler = source::absolute_in(s.compiler, cmd.directory).string();
  s.arch = in.arch;
  s.source = in.source;
  s.output = in.output;

  bool rdc = false;
  auto args = source::parse_args(std::vector<std::string>(argv.begin() + 1, argv.end()));
  for (Arg a : args) {
    if (a.form == Arg::Form::Bare && !a.opt.starts_with("-")) {  // an input file
      if (source::canonical_or_self(source::absolute_in(a.opt, cmd.directory)) == cmd.file) continue;
      s.flags.push_back(a.opt);
      continue;
    }
    if (rdc_on(a)) rdc = true;
    if ((a.form == Arg::Form::Bare && dropped_bare(a.opt)) || (a.form != Arg::Form::Bare && dropped_valued(a)) ||
        (a.form != Arg::Form::Bare && a.is({"-rdc", "--relocatable-device-code"}))) {
      auto w = a.words();
      std::string text = w[0];
      for (size_t i = 1; i < w.size(); ++i) text += " " + w[i];
      s.removed.push_back(text);
      continue;
    }
    if (source::is_include_dir_option(a) || source::is_force_include_option(a)) {
      const fs::path abs = source::canonical_or_self(source::absolute_in(a.value, cmd.directory));
      if (source::inside(abs, in.tree) || abs == in.tree) {
        Arg mirrored = a;
        mirrored.value = (fs::path(in.mirror_dir) / abs.lexically_relative(in.tree)).lexically_normal().string();
        if (mirrored.value.ends_with("/.")) mirrored.value.resize(mirrored.value.size() - 2);
        for (auto& w : mirrored.words()) s.flags.push_back(w);
        if (source::is_force_include_option(a)) continue;  // the mirror always has forced includes
      }
      a.value = abs.string();
    } else if (a.form != Arg::Form::Bare && a.is({"-ccbin", "--compiler-bindir", "-optf", "--options-file"}) &&
               a.value.find('/') != std::string::npos) {
      a.value = source::absolute_in(a.value, cmd.directory).string();
    }
    for (auto& w : a.words()) s.flags.push_back(w);
  }
  if (kind == source::Compiler::Nvcc) {
    s.flags.push_back("-cubin");
    s.flags.push_back("-arch=" + in.arch);
  } else {
    s.flags.push_back("--cuda-device-only");
    s.flags.push_back("--cuda-gpu-arch=" + in.arch);
    s.flags.push_back("-c");
    s.notes.push_back("clang CUDA: the variant is compiled with --cuda-device-only (experimental in kerncap)");
  }
  for (const auto& d : in.defines) s.defines.push_back(define_flag(d));
  if (rdc)
    s.notes.push_back("the unit was compiled with relocatable device code (-rdc/-dc); the variant is compiled "
                      "whole-program, so kernels that call __device__ functions defined in other units will "
                      "not link: copy those functions into kernel_variant.cu");
  return s;
}

}  // namespace kerncap::reproducer
