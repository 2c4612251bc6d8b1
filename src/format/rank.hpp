#pragma once
// Which rank a process of a multi-process job is, for `extract --rank R`. The launchers'
// own variables name it (they are theirs, not kerncap's, so they are not in the KERNCAP_*
// table); when none is set, the process's place in the order in which the job's processes
// initialised CUDA (a slot file under OUT/.kerncap, taken at cuInit) stands in for it.
//
// Precedence, first set and well-formed wins:
//   RANK                  torchrun, torch.distributed.launch, DeepSpeed, Accelerate: global rank
//   LOCAL_RANK            the same launchers' rank on this node (set alone by some wrappers)
//   OMPI_COMM_WORLD_RANK  Open MPI's mpirun
//   PMI_RANK              MPICH / Intel MPI (Hydra), some srun set-ups
//   SLURM_PROCID          srun (one task per GPU)
// RANK comes first because torchrun started under srun or mpirun sees the outer launcher's
// variables too (inherited by every worker alike), while RANK tells its workers apart.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kerncap::format {

inline constexpr std::string_view kRankVars[] = {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                                 "SLURM_PROCID"};

// The exit status of a capturing rank that kerncap stops after the capture (without
// --continue): not 0, so the job's launcher sees a rank end early and ends the others
// (torchrun sends them SIGTERM; mpirun and srun abort the job) instead of leaving them
// waiting in a collective for the rank that is gone.
inline constexpr int kStoppedRankExitStatus = 75;

struct ProcessRank {
  std::optional<uint64_t> rank;  // nullopt: no launcher variable (use the start order)
  std::string source;           // the variable's name, or "" when none was set
};

// The process's rank from its launcher's variables (`lookup` is getenv in the library, a
// map in tests). A variable that is set but not a decimal number is skipped.
ProcessRank rank_from_env(const std::function<const char*(std::string_view)>& lookup);

// The fallback: takes the first free slot file OUT/.kerncap/rank-slot-<n> (O_EXCL, so two
// processes never get the same n) and returns n, its index in the order of cuInit among the
// job's processes; nullopt when no slot can be created (the folder is missing).
// `out` is OUT (Config::output).
std::optional<uint64_t> take_start_slot(const std::filesystem::path& out, uint64_t max_slots = 4096);

// The "source" of a rank that came from the start order.
inline constexpr std::string_view kStartOrderSource = "cuInit order";

}  // namespace kerncap::format
