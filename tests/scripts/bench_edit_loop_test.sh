#!/usr/bin/env bash
# bench/edit_loop.sh without a GPU (CTest bench_edit_loop_args): every bench script parses
# (bash -n); the edit-loop benchmark's bad command lines are input errors (exit 2, one clear
# line); good ones, for examples/multifile and for an external application, get as far as the
# GPU check (exit 77, "SKIPPED: no GPU": a stub nvidia-smi that lists no GPU stands in front of
# PATH, even on a GPU machine). Then the loops run against stand-ins (an nvidia-smi listing a
# GPU, a kerncap whose reproducer's Makefile records what it builds): warm-up, the whole-unit
# comparison once, one recompile per iteration, the comment and code edits, the unit line, and
# a FAIL verdict or a failed rebuild stopping the run (exit 1).
#
#   tests/scripts/bench_edit_loop_test.sh
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCRIPT=$ROOT/bench/edit_loop.sh
T=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-bench-args.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
check() {  # check NAME WANT_RC WANT_TEXT ARGS...: run the script (nvidia-smi from NVSMI_DIR,
  # default the one listing no GPU), compare exit status and output
  local name=$1 want=$2 text=$3
  shift 3
  local out rc
  out=$(PATH="${NVSMI_DIR:-$T/stub}:$PATH" "$SCRIPT" "$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want" ] && grep -qF -- "$text" <<<"$out"; then
    echo "PASS $name"
  else
    echo "FAIL $name: exit $rc (want $want), output:"
    # shellcheck disable=SC2001 # indents every line
    sed 's/^/  /' <<<"$out"
    failed=1
  fi
}

for f in "$ROOT"/bench/*.sh "$ROOT/tests/gpu/lib.sh"; do
  if bash -n "$f"; then echo "PASS bash -n ${f#"$ROOT"/}"; else echo "FAIL bash -n ${f#"$ROOT"/}"; failed=1; fi
done

# A build directory with a kerncap and a database (neither is run before the GPU check), an
# application tree, and nvidia-smi saying there is no GPU.
mkdir -p "$T/build/bin" "$T/stub" "$T/app"
printf '#!/bin/sh\nexit 1\n' >"$T/build/bin/kerncap"
printf '#!/bin/sh\nexit 9\n' >"$T/stub/nvidia-smi"
chmod +x "$T/build/bin/kerncap" "$T/stub/nvidia-smi"
echo '[]' >"$T/build/compile_commands.json"
echo '__global__ void k() {}' >"$T/app/k.cu"
EXT=(--app-cmd "$T/app/app" --kernel k --source-dir "$T/app" --compile-commands "$T/build/compile_commands.json"
  --touch "$T/app/k.cu" --rebuild-cmd "true")

check help 0 "usage: bench/edit_loop.sh BUILD_DIR" --help
check no_arguments 2 "usage: bench/edit_loop.sh BUILD_DIR"
check three_positionals 2 "usage:" "$T/build" 3 4
check bad_reps 2 "REPS must be a positive integer, not '0'" "$T/build" 0
check unknown_option 2 "unknown option --bogus" "$T/build" --bogus
check option_without_value 2 "--kernel needs a value" "$T/build" --kernel
check bad_edit_kind 2 "--edit is comment or code, not 'typo'" "$T/build" --edit typo
check edit_file_outside 2 "--edit-file Makefile: make recompile follows only" "$T/build" --edit-file Makefile
check missing_build 2 "build directory $T/nope does not exist" "$T/nope"
check build_without_kerncap 2 "missing $T/app/bin/kerncap" "$T/app"
check incomplete_external 2 "--touch is missing" "$T/build" --app-cmd x --kernel k --source-dir "$T/app" \
  --compile-commands "$T/build/compile_commands.json" --rebuild-cmd true
check missing_source_dir 2 "--source-dir $T/none is not a directory" "$T/build" "${EXT[@]}" --source-dir "$T/none"
check missing_database 2 "--compile-commands $T/none.json does not exist" "$T/build" "${EXT[@]}" --compile-commands "$T/none.json"
check missing_touch 2 "--touch $T/none.cu does not exist" "$T/build" "${EXT[@]}" --touch "$T/none.cu"
check multifile_no_gpu 77 "SKIPPED: no GPU" "$T/build" 3
check external_no_gpu 77 "SKIPPED: no GPU" "$T/build" 3 "${EXT[@]}" --edit code --edit-file src/k.cu \
  --extract-arg --dispatch --extract-arg 2

# The loops themselves, with stand-ins: nvidia-smi lists a GPU, and `kerncap extract` writes a
# reproducer whose Makefile only records what it was asked to build (in $STUB_OUT) and prints
# "Result: $STUB_RESULT". The application and its rebuild are `true` (or `false`).
mkdir -p "$T/gpu" "$T/fake/bin" "$T/out"
printf '#!/bin/sh\necho "GPU 0: stand-in"\n' >"$T/gpu/nvidia-smi"
cat >"$T/fake/bin/kerncap" <<'EOF'
#!/usr/bin/env bash
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
mkdir -p "$out/src"
printf '__global__ void k() {}' >"$out/src/k.cuh"  # no newline at the end: the edit adds one
echo '#include "src/k.cuh"' >"$out/kernel_variant.cu"
cp "$out/kernel_variant.cu" "$out/kernel_instance.cu"
printf '{"edit": {"file": "src/k.cuh", "line": 1}, "recompile": {"unit": "%s", "whole_unit_reason": "%s"}}\n' \
  "${STUB_UNIT:-kernel_instance.cu}" "${STUB_WHY:-}" >"$out/compile.json"
printf '%s\n' 'STUB_RESULT ?= PASS' 'optimized.cubin: kernel_variant.cu kernel_instance.cu src/k.cuh' \
  '	cp src/k.cuh $(STUB_OUT)/last_edit' '	echo "recompile$(if $(WHOLE_UNIT), whole)" >>$(STUB_OUT)/make.log' '	touch $@' \
  'recompile: optimized.cubin' 'validate-variant: optimized.cubin' '	@echo "Result: $(STUB_RESULT)"' >"$out/Makefile"
echo "  source: found (stand-in)"
EOF
chmod +x "$T/gpu/nvidia-smi" "$T/fake/bin/kerncap"
LOOP=(--app-cmd true --kernel k --source-dir "$T/app" --compile-commands "$T/build/compile_commands.json"
  --touch "$T/app/k.cu" --rebuild-cmd true)
loop() {  # loop NAME WANT_RC WANT_TEXT ARGS...: the benchmark with a GPU stand-in
  : >"$T/out/make.log"
  # SESSION=0, SERVE=0: the session and served loops need the real engine and a GPU
  SESSION=0 SERVE=0 NVSMI_DIR=$T/gpu STUB_OUT=$T/out check "$@"
}
has() {  # has NAME WHAT FILE PATTERN: grep -E PATTERN FILE (what a loop left there)
  if grep -qE -- "$4" "$3"; then echo "PASS $1"; else echo "FAIL $1: no '$4' in $2:"; sed 's/^/  /' "$3"; failed=1; fi
}
loop loop_instance 0 "ratio:" "$T/fake" 3 "${LOOP[@]}" --edit code
has loop_instance_unit "the recompiles" "$T/out/make.log" '^recompile whole$'
if [ "$(grep -c '^recompile$' "$T/out/make.log")" = 4 ]; then echo "PASS loop_instance_count"; else
  echo "FAIL loop_instance_count: want 4 instance recompiles (warm-up + 3)"; failed=1; fi
has loop_instance_edit "the last edit" "$T/out/last_edit" '^__device__ inline int kerncap_edit_loop_3\(int x\)'
loop loop_instance_lines 0 "for comparison, make -B recompile WHOLE_UNIT=1" "$T/fake" 1 "${LOOP[@]}"
has loop_comment_edit "the last edit" "$T/out/last_edit" '^// edit 1$'
has loop_first_line_kept "the last edit" "$T/out/last_edit" '^__global__ void k\(\) \{\}$'
STUB_UNIT=kernel_variant.cu STUB_WHY="the template is defined in the unit itself" \
  loop loop_whole_unit 0 "recompile unit: kernel_variant.cu (the template is defined in the unit itself)" "$T/fake" 1 "${LOOP[@]}"
STUB_RESULT=FAIL loop loop_validate_fails 1 "validate-variant did not PASS" "$T/fake" 1 "${LOOP[@]}"
loop loop_rebuild_fails 1 "rebuild+rerun failed" "$T/fake" 1 "${LOOP[@]}" --rebuild-cmd false
loop loop_no_such_edit_file 2 "the reproducer has no src/none.cuh to edit" "$T/fake" 1 "${LOOP[@]}" --edit-file src/none.cuh

[ "$failed" = 0 ] && echo "all passed"
exit "$failed"
