#!/usr/bin/env bash
# The reproducer on real public CUDA code: HeCBench's lulesh (several units,
# kernels launched every iteration) and convolution1D (templated kernels, a __constant__
# variable template). HeCBench is fetched for testing and never committed: point the script
# at a directory holding lulesh-cuda/ and convolution1D-cuda/ (HeCBench's src/).
# Each benchmark is copied to a scratch directory, built with its own Makefile for this
# GPU's SM, and given a compile_commands.json made from `make -nB` (what `bear -- make`
# would record). Then, per kernel:
#   extract --source-dir --compile-commands -> source found? (how)
#   make recompile (unmodified)             -> time
#   make validate-variant                    -> PASS byte-exact?
#   edit loop: touch the kernel's file; make recompile && make validate-variant -> time
# Prints a table and "N passed, N failed". Exit 0/1, 77 without a GPU.
#
#   tests/gpu/repro_hecbench.sh BUILD_DIR HECBENCH_SRC
#
# Environment: HECBENCH_KERNELS (regex on row names: run only those), KERNCAP_GPU_KEEP=1,
# OUT (logs in $OUT/hecbench-logs), KERNCAP_GPU_TIMEOUT (per command, default 300 s).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/repro_hecbench.sh BUILD_DIR HECBENCH_SRC}
SRC=${2:?usage: tests/gpu/repro_hecbench.sh BUILD_DIR HECBENCH_SRC}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
BUILD=$(cd "$BUILD" && pwd) || exit 1
SRC=$(cd "$SRC" && pwd) || exit 1
KC=$BUILD/bin/kerncap
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-300}
ONLY=${HECBENCH_KERNELS:-}
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
for b in lulesh-cuda convolution1D-cuda; do [ -d "$SRC/$b" ] || { echo "missing $SRC/$b"; exit 1; }; done
command -v make >/dev/null || { echo "make is not installed"; exit 1; }
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH  # HeCBench's Makefiles call plain nvcc
SM=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .')

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-hecbench.XXXXXX") || exit 1
LOGS=${OUT:+$OUT/hecbench-logs}
LOGS=${LOGS:-$WORK/logs}
mkdir -p "$LOGS"
trap cleanup EXIT

# build_bench NAME: copy, build for $SM, write compile_commands.json from `make -nB`.
build_bench() {
  local d=$WORK/$1
  cp -r "$SRC/$1" "$d"
  make -C "$d" ARCH="$SM" >"$LOGS/build-$1.log" 2>&1 || { echo "building $1 failed (see $LOGS/build-$1.log)"; exit 1; }
  python3 - "$d" "$SM" <<'PY' || exit 1
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
build_bench lulesh-cuda
build_bench convolution1D-cuda
LULESH="$WORK/lulesh-cuda/main -i 10 -s 32"
CONV="$WORK/convolution1D-cuda/main 65536 2"

# name | benchmark dir | kernel pattern | dispatch | command
KERNELS=(
  "lulesh.fill_sig|lulesh-cuda|fill_sig|0|$LULESH"
  "lulesh.integrateStress|lulesh-cuda|integrateStress|0|$LULESH"
  "lulesh.hgc|lulesh-cuda|hgc(|0|$LULESH"
  "lulesh.fb|lulesh-cuda|fb(|0|$LULESH"
  "lulesh.calcVelocityForNodes#3|lulesh-cuda|calcVelocityForNodes|3|$LULESH"
  "lulesh.calcKinematicsForElems|lulesh-cuda|calcKinematicsForElems|0|$LULESH"
  "lulesh.calcMonotonicQGradientsForElems|lulesh-cuda|calcMonotonicQGradientsForElems|0|$LULESH"
  "lulesh.calcMonotonicQForElems|lulesh-cuda|calcMonotonicQForElems(|0|$LULESH"
  "lulesh.applyMaterialPropertiesForElems#2|lulesh-cuda|applyMaterialPropertiesForElems|2|$LULESH"
  "conv1d<float>|convolution1D-cuda|conv1d<float>|0|$CONV"
  "conv1d_tiled<double>|convolution1D-cuda|conv1d_tiled<double>|0|$CONV"
  "conv1d_tiled_caching<short>|convolution1D-cuda|conv1d_tiled_caching<short>|1|$CONV"
)

printf '%-42s %-6s %-44s %-10s %-14s %-10s %s\n' kernel result "source (how)" recompile validate-var edit-loop notes
passed=0 failed=0
for row in "${KERNELS[@]}"; do
  IFS='|' read -r name bench pattern dispatch cmd <<<"$row"
  [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]] && continue
  dir=$WORK/repro/$name log=$LOGS/$name.log ok=1 src=- rec=- val=- loop=- notes=""
  : >"$log"
  step() { printf '\n$ %s\n' "$*" >>"$log"; timeout -k 5 "$TIMEOUT" "$@" >"$WORK/step.out" 2>&1; local rc=$?; cat "$WORK/step.out" >>"$log"; return $rc; }
  if step "$KC" extract "$pattern" --dispatch "$dispatch" --cmd "$cmd" --source-dir "$WORK/$bench" \
      --compile-commands "$WORK/$bench/compile_commands.json" -o "$dir"; then
    src=$(grep -m1 -oE 'source: [a-z-]+' "$WORK/step.out" | cut -d' ' -f2)
    how=$(grep -oE 'how: (object file symbols|the captured image|the mangled|[0-9]+ definition)' "$WORK/step.out" | tail -n1 | cut -c6-)
    src="$src${how:+ ($how)}"
    notes="$(grep -m1 -oE '^captured .{0,60}' "$WORK/step.out")"
  else
    ok=0 src="extract failed"
  fi
  if [ $ok = 1 ] && [[ $src == found* ]]; then
    t0=$(now)
    if step make -C "$dir" recompile KERNCAP="$KC"; then rec="ok $(since "$t0")s"; else ok=0 rec=FAIL; fi
    if [ $ok = 1 ] && step make -C "$dir" validate-variant KERNCAP="$KC" && grep -Eq '^Result: PASS \(.*byte-exact' "$WORK/step.out"; then
      val="PASS exact"
    else
      ok=0 val="$(grep -m1 -oE '^Result: [A-Z]+' "$WORK/step.out" | cut -d' ' -f2)"
      val=${val:-error}
    fi
    if [ $ok = 1 ]; then
      edit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["edit"]["file"])' "$dir/compile.json")
      echo "// edit" >>"$dir/$edit"
      t0=$(now)
      if step make -C "$dir" recompile validate-variant KERNCAP="$KC" && grep -q '^Result: PASS' "$WORK/step.out"; then
        loop="$(since "$t0")s"
      else
        ok=0 loop=FAIL
      fi
    fi
  elif [ $ok = 1 ]; then
    ok=0
  fi
  if [ $ok = 1 ]; then passed=$((passed + 1)); res=PASS; else failed=$((failed + 1)); res=FAIL; fi
  printf '%-42s %-6s %-44s %-10s %-14s %-10s %s\n' "$name" "$res" "${src:0:44}" "$rec" "$val" "$loop" "$notes"
done
echo "logs: $LOGS"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
