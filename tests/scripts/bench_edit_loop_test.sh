#!/usr/bin/env bash
# bench/edit_loop.sh without a GPU (CTest bench_edit_loop_args): every bench script parses
# (bash -n); the edit-loop benchmark's bad command lines are input errors (exit 2, one clear
# line); good ones, for examples/multifile and for an external application, get as far as the
# GPU check (exit 77, "SKIPPED: no GPU"). A stub nvidia-smi that lists no GPU stands in front
# of PATH, so this never starts the benchmark, even on a GPU machine.
#
#   tests/scripts/bench_edit_loop_test.sh
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCRIPT=$ROOT/bench/edit_loop.sh
T=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-bench-args.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
check() {  # check NAME WANT_RC WANT_TEXT ARGS...: run the script, compare exit status and output
  local name=$1 want=$2 text=$3
  shift 3
  local out rc
  out=$(PATH="$T/stub:$PATH" "$SCRIPT" "$@" 2>&1)
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

[ "$failed" = 0 ] && echo "all passed"
exit "$failed"
