// `kerncap run --swap TARGET=IMAGE -- ./app ARGS`: the application with a kernel served by a
// variant, in pairs against the unmodified application (docs/swap.md). The work lives in
// src/extract (swap_plan: resolving the swaps before anything runs; swap_run: the runs and
// their statistics) and in the injected library (capture/swapper.hpp); this file parses and
// prints.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "cli/swap_plan.hpp"
#include "extract/swap_run.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kRunFooter = R"(TARGET is a capture of the kernel (OUT or OUT/capture: its exact name, and its parameter
layout, which the variant's must equal or the swap is refused before the application runs)
or a kernel name (its whole mangled name, or text naming exactly one kernel of IMAGE; the
driver then checks the layout at the first launch). IMAGE is a cubin, fatbin or PTX file
holding the kernel under its name (a file-local kernel under its counterpart, as for
`validate --cubin`).

Every launch of the kernel in every process of the application is served by the variant:
runtime <<<>>> and cudaLaunchKernelEx, cuLaunchKernel[Ex] (attributes kept: clusters,
cooperative), cooperative launches, launches recorded into CUDA graphs by stream capture,
and kernel nodes of graphs built or updated by hand. The library writes the variant's
function into the launch's own arguments at its API entry: nothing else is launched, and
the application cannot tell apart from time. Launches from the device (dynamic
parallelism) are not swapped. A Triton kernel: IMAGE may be the capture's edited
OUT/kernel_variant.py: OUT/reproducer.py recompiles it with the application's Triton (and
judges it on the captured launch; its verdict is printed) into OUT/candidate.cubin, which
must keep the captured launch geometry (a swap keeps the application's grid and block).

The application runs --repeat N times in each arm, alternating: unmodified, swapped (after
--warmup K pairs that are judged but left out of the times). Both arms run with the same
instrumentation (CUPTI kernel records, the swap callbacks; the unmodified arm's swaps only
count), so their ratio is the variant's effect. Reported, each
as a median with a 95% interval (order statistics; with fewer than 6 runs per arm, the
range): wall time, GPU time of all kernels, the kernel's own GPU time, and the paired
ratios unmodified/swapped; each run's exit status; whether the swapped runs printed what
the unmodified run printed (stdout), and --check's verdict. --check CMD runs after every
run with KERNCAP_RUN_ARM (base|swap), KERNCAP_RUN_INDEX, KERNCAP_RUN_DIR and
KERNCAP_RUN_STDOUT (the application's stdout) set; exit 0 means the run's results are right.

--shadow runs the application's own kernel in the second arm and checks it: at every
--every'th launch, before it runs, the allocations its parameters point into are saved, the
variant runs on them on a stream of kerncap's, its results are kept and the saved bytes put
back; the original then runs as the application made it, and its results are compared with
the variant's by the judge's comparator (each allocation within the default tolerance of the
element type its parameter points at, from the kernel's C++ signature; bytes otherwise). The
application keeps the original's results. The report names the first launch that differs
(its index among the kernel's launches, grid, block, the parameter and what differs) and the
checking time per launch. Not followed: pointers stored in memory; graph kernel nodes are not
checked. A variant that faults takes the application with it: validate it first.

Verdicts: ok; shadow_failed (--shadow: a launch differs); not_checked; refused (the variant could not serve the kernel: layout, loading, shared
memory); not_swapped (a swapped run launched the kernel without the variant, or never);
app_failed; check_failed; output_differs (without --check, when the unmodified runs agree
among themselves).

Exit status: 0 for ok, 1 for any other verdict, 2 for bad usage or a variant refused before the
application runs (layout, geometry, no such kernel), 3 for a device error.

Examples:
  kerncap run --swap iso/vadd=v.cubin -- ./app 1000000
  kerncap run --swap iso/gemm=v.cubin --repeat 10 --check 'python check.py "$KERNCAP_RUN_STDOUT"' -- python train.py
  kerncap run --swap _Z6matmulPfS_S_i=v.cubin --json --cmd "./app --n 4096")";

struct SwapRunArgs {
  std::vector<std::string> swaps, argv;
  std::string cmd, check, dir;
  size_t repeat = 1, warmup = 0;
  bool json = false, shadow = false;
  uint64_t every = 1, shadow_max_bytes = 0;
  int64_t rank = -1;
  int verbose = 0;
};

void run_with_swaps(const SwapRunArgs& a, int& exit_code) {
  if (a.cmd.empty() == a.argv.empty())
    usage_error("give the application after -- (kerncap run --swap K=V.cubin -- ./app args), or as --cmd \"./app args\"");
  extract::SwapRunOptions o;
  o.app = {a.cmd, a.argv};
  o.plans = plan_swaps(a.swaps);  // refuses a wrong variant before anything runs
  o.pairs = a.repeat;
  o.warmup_pairs = a.warmup;
  o.check = a.check;
  o.verbose = a.verbose;
  o.rank = a.rank;
  if (a.shadow) {
    o.shadow_every = a.every;
    o.shadow_max_bytes = a.shadow_max_bytes;
  }
  if (a.dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "kerncap-run-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      usage_error(fmt::format("cannot create a directory under {}: set TMPDIR or give --dir", fs::temp_directory_path().string()));
    o.dir = tmpl;
  } else {
    o.dir = fs::absolute(a.dir);
    std::error_code ec;
    if (fs::exists(o.dir, ec) && (!fs::is_directory(o.dir, ec) || !fs::is_empty(o.dir, ec)))
      usage_error(fmt::format("--dir {} exists and is not an empty directory; choose a new one", a.dir));
  }
  const auto progress = [](const extract::RunArm& r, size_t total) {
    std::fprintf(stderr, "kerncap run: %zu/%zu %-10s %.3f s, the application %s%s\n", r.index + 1, total,
                 r.swapped ? "swapped" : "unmodified", r.wall_s, r.exit.describe().c_str(),
                 r.check_status ? (*r.check_status == 0 ? ", check passed" : ", check FAILED") : "");
  };
  const extract::SwapRunResult r = extract::run_swapped(o, progress);
  if (a.json) std::cout << extract::run_report_json(o, r).dump() << "\n";
  else std::cout << extract::run_report_text(o, r);
  exit_code = r.verdict == "ok" ? 0 : 1;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SwapRunArgs>();
  auto* cmd = app.add_subcommand("run", "Run the application with a kernel served by a variant, paired against the unmodified run");
  cmd->footer(kRunFooter);
  cmd->add_option("--swap", a->swaps, "TARGET=IMAGE: serve kernel TARGET (a capture or a name) from IMAGE (repeatable)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--repeat", a->repeat, "Pairs of runs (unmodified, swapped)")->default_val(1)->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", a->warmup,
                  "Pairs run first and left out of the times (first-run costs: JIT, caches, clocks); their results "
                  "are still judged")
      ->default_val(0)
      ->check(CLI::Range(0, 100));
  cmd->add_option("--check", a->check, "Shell command judging each run's results (exit 0: right)");
  cmd->add_flag("--shadow", a->shadow,
                "Instead of swapping: run the original, and check each launch against the variant run on the side");
  cmd->add_option("--every", a->every, "With --shadow: check every Kth launch of the kernel")
      ->default_val(1)
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--shadow-max-bytes", a->shadow_max_bytes,
                  "With --shadow: skip a launch that reaches more bytes than this (0: no limit)");
  cmd->add_option("--rank", a->rank,
                  "Multi-process jobs: swap (or check) only in the process of this rank (RANK, LOCAL_RANK, "
                  "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; else cuInit order); every process is timed")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--dir", a->dir, "Keep each run's records, stdout and check output in this new directory");
  cmd->add_flag("--json", a->json, "Print the report (kerncap-run-report 1) as one JSON line");
  cmd->add_option("--cmd", a->cmd, "The application as one shell command line (instead of -- APP ARGS)");
  cmd->add_flag("-v,--verbose", a->verbose, "Let the injected library report progress (repeatable)");
  cmd->add_option("app", a->argv, "The application and its arguments (after --)");
  cmd->callback([a, &exit_code] { run_with_swaps(*a, exit_code); });
}

}  // namespace kerncap::cli
