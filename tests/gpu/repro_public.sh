#!/usr/bin/env bash
# The reproducer on real public CUDA code, fetched for testing and never committed:
#   HeCBench (HECBENCH_SRC: its src/ folder; each benchmark built with its own Makefile)
#     lulesh-cuda          several units, kernels launched every iteration
#     convolution1D-cuda   templated kernels, a __constant__ variable template
#     sort-cuda            kernels in headers (T a typedef), in a unit that includes Thrust (CUB's
#                          internal-linkage globals: issue 13's failure); and the CUB onesweep
#                          radix-sort kernel its thrust::sort runs (a library header's kernel)
#     segment-reduce-cuda  thrust::reduce_by_key: Thrust's own kernel (_kernel_agent<ReduceByKeyAgent…>),
#                          defined in the toolkit's headers: recompiled from main.cu with an
#                          editable copy of the header (library/...), the wrong edit made there
#   cuda-samples (CUDA_SAMPLES: the repository's root; each sample built with its own CMake)
#     lineOfSight          a unit that includes Thrust; one kernel reads a texture object
#     dmmaTensorCoreGemm   a unit that includes libcu++ (<cuda/barrier>, <cuda/std/...>), -rdc
# Each benchmark is copied to a scratch directory and built for this GPU (HeCBench: ARCH=sm_XX,
# compile_commands.json made from `make -nB`, what `bear -- make` would record; cuda-samples:
# its CMakeLists as shipped, CMAKE_EXPORT_COMPILE_COMMANDS=ON). Then, per kernel:
#   extract --source-dir --compile-commands -> source found? (how)
#   make recompile (unmodified)             -> time, and which unit it compiled
#   make validate-variant                    -> PASS byte-exact?
#   edit loop: append a comment to the kernel's file; make recompile validate-variant -> time
#   wrong edit: `return;` as the kernel body's first statement -> validate-variant must FAIL
#     (only after a strong PASS: where validate says the PASS is weak, nothing was proven and
#     the row says "n/a (weak)")
# Prints a table and "N passed, N failed". Exit 0/1, 77 without a GPU.
#
#   tests/gpu/repro_public.sh BUILD_DIR
#
# Environment: HECBENCH_SRC, CUDA_SAMPLES (at least one), PUBLIC_KERNELS (regex on row names:
# run only those), KERNCAP_GPU_KEEP=1, OUT (logs in $OUT/public-logs), KERNCAP_GPU_TIMEOUT (per
# command, default 300 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/repro_public.sh BUILD_DIR (with HECBENCH_SRC and/or CUDA_SAMPLES set)}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HEC=${HECBENCH_SRC:+$(cd "$HECBENCH_SRC" && pwd)}
CS=${CUDA_SAMPLES:+$(cd "$CUDA_SAMPLES" && pwd)}
[ -n "$HEC$CS" ] || { echo "set HECBENCH_SRC (HeCBench's src/) and/or CUDA_SAMPLES (cuda-samples' root)"; exit 2; }
ONLY=${PUBLIC_KERNELS:-}
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
command -v make >/dev/null || { echo "make is not installed"; exit 1; }
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH  # HeCBench's Makefiles call plain nvcc
SM=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .')

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-public.XXXXXX") || exit 1
LOGS=${OUT:+$OUT/public-logs}
LOGS=${LOGS:-$WORK/logs}
mkdir -p "$LOGS"
trap cleanup EXIT

# build_hec NAME: copy, build for $SM, write compile_commands.json from `make -nB`.
build_hec() {
  local d=$WORK/$1
  cp -r "$HEC/$1" "$d"
  make -C "$d" ARCH="$SM" >"$LOGS/build-$1.log" 2>&1 || { echo "building $1 failed (see $LOGS/build-$1.log)"; return 1; }
  python3 - "$d" "$SM" <<'PY' || return 1
import json, os, shlex, subprocess, sys
d, arch = sys.argv[1], sys.argv[2]
out = subprocess.run(["make", "-nB", "ARCH=" + arch], cwd=d, capture_output=True, text=True, check=True).stdout
entries = []
for line in out.splitlines():
    argv = shlex.split(line)
    if argv and argv[0].endswith("nvcc") and "-c" in argv:
        src = next(a for a in argv if a.endswith(".cu"))
        entries.append({"directory": d, "arguments": argv, "file": os.path.join(d, src)})
json.dump(entries, open(os.path.join(d, "compile_commands.json"), "w"), indent=1)
PY
}

# build_cs REL: a cuda-samples sample (REL under Samples/) with its own CMake, in a copy of the
# tree parts its CMakeLists reaches (Common/, cmake/): $WORK/cs/Samples/REL, built in its build/.
# nvcc --threads 0 compiles the CMakeLists' nine architectures in parallel (a flag the reproducer
# keeps, harmlessly).
build_cs() {
  local name=${1##*/} d=$WORK/cs
  command -v cmake >/dev/null || { echo "cmake is not installed (needed for cuda-samples)"; return 1; }
  mkdir -p "$d/Samples/${1%/*}"
  [ -d "$d/Common" ] || cp -r "$CS/Common" "$CS/cmake" "$d/"
  cp -r "$CS/Samples/$1" "$d/Samples/$1"
  cmake -S "$d/Samples/$1" -B "$d/Samples/$1/build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_CUDA_FLAGS="--threads 0" >"$LOGS/build-$name.log" 2>&1 &&
    cmake --build "$d/Samples/$1/build" -j "$(nproc)" >>"$LOGS/build-$name.log" 2>&1 ||
    { echo "building $name failed (see $LOGS/build-$name.log)"; return 1; }
  cp "$d/Samples/$1/build/compile_commands.json" "$d/Samples/$1/compile_commands.json"
}

# name | benchmark dir (under $WORK) | kernel pattern | dispatch | command
KERNELS=()
if [ -n "$HEC" ]; then
  for b in lulesh-cuda convolution1D-cuda sort-cuda segment-reduce-cuda; do
    if [ ! -d "$HEC/$b" ]; then echo "note: $HEC/$b missing, its rows skipped"; continue; fi
    build_hec "$b" || continue
    case $b in
      lulesh-cuda)
        LULESH="$WORK/lulesh-cuda/main -i 10 -s 32"
        KERNELS+=(
          "lulesh.fill_sig|lulesh-cuda|fill_sig|0|$LULESH"
          "lulesh.integrateStress|lulesh-cuda|integrateStress|0|$LULESH"
          "lulesh.hgc|lulesh-cuda|hgc(|0|$LULESH"
          "lulesh.fb|lulesh-cuda|fb(|0|$LULESH"
          "lulesh.calcVelocityForNodes#3|lulesh-cuda|calcVelocityForNodes|3|$LULESH"
          "lulesh.calcKinematicsForElems|lulesh-cuda|calcKinematicsForElems|0|$LULESH"
          "lulesh.calcMonotonicQGradientsForElems|lulesh-cuda|calcMonotonicQGradientsForElems|0|$LULESH"
          "lulesh.calcMonotonicQForElems|lulesh-cuda|calcMonotonicQForElems(|0|$LULESH"
          "lulesh.applyMaterialPropertiesForElems#2|lulesh-cuda|applyMaterialPropertiesForElems|2|$LULESH") ;;
      convolution1D-cuda)
        CONV="$WORK/convolution1D-cuda/main 65536 2"
        KERNELS+=(
          "conv1d<float>|convolution1D-cuda|conv1d<float>|0|$CONV"
          "conv1d_tiled<double>|convolution1D-cuda|conv1d_tiled<double>|0|$CONV"
          "conv1d_tiled_caching<short>|convolution1D-cuda|conv1d_tiled_caching<short>|1|$CONV") ;;
      sort-cuda)
        SORT="$WORK/sort-cuda/main 0 1"
        KERNELS+=(
          "sort.reduce|sort-cuda|reduce(unsigned int const|0|$SORT"
          "sort.top_scan#1|sort-cuda|top_scan|1|$SORT"
          "sort.bottom_scan#3|sort-cuda|bottom_scan|3|$SORT"
          "sort.cub.Onesweep|sort-cuda|DeviceRadixSortOnesweepKernel|0|$SORT") ;;
      segment-reduce-cuda)
        KERNELS+=("segred.ReduceByKeyAgent|segment-reduce-cuda|ReduceByKeyAgent|0|$WORK/segment-reduce-cuda/main 16 1") ;;
    esac
  done
fi
if [ -n "$CS" ]; then
  for s in 4_CUDA_Libraries/lineOfSight 3_CUDA_Features/dmmaTensorCoreGemm; do
    if [ ! -d "$CS/Samples/$s" ]; then echo "note: $CS/Samples/$s missing, its rows skipped"; continue; fi
    build_cs "$s" || continue
    n=${s##*/} b=cs/Samples/$s
    case $n in
      lineOfSight)
        KERNELS+=(
          "los.computeAngles(texture)|$b|computeAngles_kernel|0|$WORK/$b/build/$n"
          "los.computeVisibilities|$b|computeVisibilities_kernel|0|$WORK/$b/build/$n") ;;
      dmmaTensorCoreGemm)
        KERNELS+=("dmma.compute_dgemm*|$b|compute_dgemm|0|$WORK/$b/build/$n") ;;
    esac
  done
fi

# return_first_edit DIR: `return;` as the first statement of the captured kernel's body, in the file
# and at the line compile.json names (the definition's line): the first '{' after it outside
# parentheses (a default argument such as `DecomposerT decomposer = {}` is not the body).
return_first_edit() {
  python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
e = json.load(open(os.path.join(d, "compile.json")))["edit"]
path = os.path.join(d, e["file"])
lines = open(path).read().split("\n")
depth = 0
for i in range(int(e["line"]) - 1, min(len(lines), int(e["line"]) + 60)):
    for j, c in enumerate(lines[i]):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "{" and depth == 0:
            lines[i] = lines[i][: j + 1] + " return;  /* kerncap test: a wrong edit */" + lines[i][j + 1 :]
            open(path, "w").write("\n".join(lines))
            sys.exit(0)
sys.exit("no body brace within 60 lines of %s:%s" % (e["file"], e["line"]))
PY
}

printf '%-40s %-6s %-36s %-19s %-10s %-11s %-9s %-11s %s\n' kernel result "source (how)" unit recompile validate-var edit-loop wrong-edit notes
for k in "${KERNELS[@]}"; do
  IFS='|' read -r name bench pattern dispatch cmd <<<"$k"
  [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]] && continue
  dir=$WORK/repro/$name ok=1 src=- unit=- rec=- val=- loop=- wrong=- notes=""
  # step (lib.sh): each command's output in D/STEP.log, the command lines and outputs in LOG.
  D=$WORK/steps/${name//[^A-Za-z0-9._-]/_} LOG=$LOGS/${name//[^A-Za-z0-9._-]/_}.log
  mkdir -p "$D"
  : >"$LOG"
  if step extract "$KC" extract "$pattern" --dispatch "$dispatch" --cmd "$cmd" --source-dir "$WORK/$bench/" \
      --compile-commands "$WORK/$bench/compile_commands.json" -o "$dir"; then
    src=$(grep -m1 -oE 'source: [a-z-]+' "$STEP_LOG" | cut -d' ' -f2)
    how=$(grep -oE 'how: (object file symbols|the captured image|the mangled|[0-9]+ definition)' "$STEP_LOG" | tail -n1 | cut -c6-)
    src="$src${how:+ ($how)}"
    [[ $src == found* ]] || notes="$(grep -m1 -E 'source:' "$STEP_LOG" | cut -c1-150)"
  else
    ok=0 src="extract failed" notes="$(grep -m1 'error' "$STEP_LOG" | cut -c1-150)"
  fi
  if [ $ok = 1 ] && [[ $src == found* ]]; then
    unit=$(json_get "$dir/compile.json" recompile.unit)
    t0=$(now)
    if step recompile make -C "$dir" recompile KERNCAP="$KC"; then rec="ok $(since "$t0")s"; else ok=0 rec=FAIL notes="$(grep -m1 'error' "$STEP_LOG" | cut -c1-150)"; fi
    if [ $ok = 1 ] && step validate-variant make -C "$dir" validate-variant KERNCAP="$KC" && grep -Eq '^Result: PASS \(.*byte-exact' "$STEP_LOG"; then
      val="PASS exact"
      grep -q '^Result: PASS (strong' "$STEP_LOG" && val="PASS strong"
      notes="$(grep -m1 -oE '^Result: PASS \([^;]*' "$STEP_LOG" | cut -c15-110)"
    elif [ $ok = 1 ]; then
      ok=0 val="$(grep -m1 -oE '^Result: [A-Z]+' "$STEP_LOG" | cut -d' ' -f2)"
      val=${val:-error}
      notes="$(grep -m1 -E '^Result|error' "$STEP_LOG" | cut -c1-150)"
    fi
    if [ $ok = 1 ]; then
      edit=$(json_get "$dir/compile.json" edit.file)
      echo "// edit" >>"$dir/$edit"
      t0=$(now)
      if step edit-loop make -C "$dir" recompile validate-variant KERNCAP="$KC" && grep -q '^Result: PASS' "$STEP_LOG"; then
        loop="$(since "$t0")s"
      else
        ok=0 loop=FAIL
      fi
    fi
    if [ $ok = 1 ] && [ "$val" != "PASS strong" ]; then
      # A weak PASS (validate said nothing was proven: the launch rewrote what it read) cannot
      # tell a wrong edit from a right one, and says so: nothing to check here.
      wrong="n/a (weak)"
    elif [ $ok = 1 ]; then
      if ! return_first_edit "$dir" >>"$LOG" 2>&1; then
        ok=0 wrong="no body"
      elif step wrong-edit make -C "$dir" recompile validate-variant KERNCAP="$KC"; then
        ok=0 wrong="PASSED"  # a kernel that returns at once reproduced the launch: the validation proves nothing
      elif grep -q '^Result: FAIL' "$STEP_LOG"; then
        wrong="FAIL ok"
      else
        ok=0 wrong="error" notes="$(grep -m1 'error' "$STEP_LOG" | cut -c1-150)"
      fi
    fi
  elif [ $ok = 1 ]; then
    ok=0
  fi
  res=$(pass_if "$ok")
  tally "$res"
  printf '%-40s %-6s %-36s %-19s %-10s %-11s %-9s %-11s %s\n' "$name" "$res" "${src:0:36}" "$unit" "$rec" "$val" "$loop" "$wrong" "$notes"
done
echo "logs: $LOGS"
summary && [ "$passed" -gt 0 ]
