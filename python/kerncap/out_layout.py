"""Names inside a reproducer directory OUT that the Triton side writes or reads. The C++
definitions (src/format/out_layout.hpp) are the reference; python/tests/test_out_layout.py
checks these against them. Standard library only: copied into every Triton reproducer."""

TRITON = "triton"                      # what the Triton shim recorded; launch.json, name_map.json
TRITON_RECORDS = "records"             # OUT/triton/records/*.jsonl, the shim's records
TRITON_LAUNCH_PLAN = "launch.json"     # OUT/triton/launch.json, the generator's launch plan
TRITON_NAME_MAP = "name_map.json"      # OUT/triton/name_map.json
KERNEL_VARIANT_PY = "kernel_variant.py"
REPRODUCER_PY = "reproducer.py"
REPRO_RUNTIME = "kerncap_repro"        # the reproducer's runtime package (and engine library)
CANDIDATE_CUBIN = "candidate.cubin"
CANDIDATE_JSON = "candidate.json"
COMPARE_SPEC = "compare.json"          # the replay engine's comparison spec (kc_compare, validate)
REGIMES_INDEX = "regimes.json"         # extract --regimes: the regime set's index (format/regimes_index.hpp)
REGIME_KERNELS_INDEX = "regime-kernels.json"  # extract --regimes over several kernels (format/regime_kernels.hpp)
