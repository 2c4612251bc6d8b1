# shellcheck shell=bash
# shellcheck disable=SC2034  # RC, R_FAIL, R_SKIP, STEP_LOG, passed...: read by the suites
# Shared by the GPU suites (tests/gpu/*.sh) and the GPU benchmarks (bench/*.sh): sourced,
# never run. Only what several of them had word for word lives here; a suite that needs a
# different helper of the same name defines its own after sourcing this file, and its own
# one is the one that runs.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"            (a suite)
#   . "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"  (a benchmark)

# No GPU: "SKIPPED: no GPU" and exit 77 (CTest's skip code), before anything is built or made.
gpu_required() {
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "SKIPPED: no GPU"
    exit 77
  fi
}

# gpu_work_dir NAME [in-work|apart]: sets WORK to a new directory, $OUT/NAME-work.XXXXXX when
# OUT is set (OUT is created), else ${TMPDIR:-/tmp}/kerncap-NAME.XXXXXX; exits 1 when it
# cannot be made. With a second word it also sets LOGS: $OUT/NAME-logs when OUT is set, else
# WORK/logs (in-work: removed with WORK) or ${TMPDIR:-/tmp}/kerncap-NAME-logs.XXXXXX (apart:
# kept after the run). Nothing removes WORK unless the suite says `trap cleanup EXIT`.
gpu_work_dir() {
  local name=$1 logs=${2:-}
  if [ -n "${OUT:-}" ]; then
    if [ -n "$logs" ]; then
      mkdir -p "$OUT/$name-logs" && WORK=$(mktemp -d "$OUT/$name-work.XXXXXX") && LOGS=$OUT/$name-logs
    else
      mkdir -p "$OUT" && WORK=$(mktemp -d "$OUT/$name-work.XXXXXX")
    fi
  else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-$name.XXXXXX")
    case $logs in
      in-work) [ -n "$WORK" ] && LOGS=$WORK/logs && mkdir -p "$LOGS" ;;
      apart) [ -n "$WORK" ] && LOGS=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-$name-logs.XXXXXX") ;;
    esac
  fi
  [ -n "${WORK:-}" ] || exit 1
}

# The work directory goes at exit unless KERNCAP_GPU_KEEP=1 (`trap cleanup EXIT`; a suite
# keeps a failed run's files with `trap - EXIT`).
cleanup() { [ "${KERNCAP_GPU_KEEP:-0}" = 1 ] || rm -rf "$WORK"; }

# check NAME DETAIL STATUS: one case's verdict (STATUS 0 passes): a PASS/FAIL line, the counts
# passed/failed and a table row in rows (the suite sets passed=0 failed=0 rows=() first).
check() {
  local name=$1 detail=$2 ok=$3
  if [ "$ok" = 0 ]; then
    echo "PASS $name: $detail"
    passed=$((passed + 1))
    rows+=("| $name | PASS | $detail |")
  else
    echo "FAIL $name: $detail"
    failed=$((failed + 1))
    rows+=("| $name | FAIL | $detail |")
  fi
}

# want NAME: the case is to run (KERNCAP_GPU_CASES unset, or a space-separated list naming it).
want() { [ -z "${KERNCAP_GPU_CASES:-}" ] || [[ " $KERNCAP_GPU_CASES " == *" $1 "* ]]; }

# run NAME CMD...: with the time limit; output in $WORK/NAME.out / .err, exit status in RC.
run() { local n=$1; shift; timeout "$TIMEOUT" "$@" >"$WORK/$n.out" 2>"$WORK/$n.err"; RC=$?; }

# kc ARGS...: kerncap with the time limit.
kc() { timeout "$TIMEOUT" "$KC" "$@"; }

# logged_step STEP CMD...: with the time limit; output in $D/STEP.out / .err, the command line
# and the last LOG_TAIL (default 6) lines of each output in $LOG; returns the exit status.
logged_step() {
  local step=$1
  shift
  printf '\n$ %s\n' "$*" >>"$LOG"
  timeout "$TIMEOUT" "$@" >"$D/$step.out" 2>"$D/$step.err"
  local rc=$?
  tail -n "${LOG_TAIL:-6}" "$D/$step.out" "$D/$step.err" >>"$LOG" 2>/dev/null
  return $rc
}

# step NAME CMD...: with the time limit (killed 5 s after it); the command line and all its
# output in $LOGS/NAME.log (STEP_LOG); returns its exit status.
step() {
  local name=$1
  shift
  STEP_LOG=$LOGS/$name.log
  printf '$ %s\n' "$*" >"$STEP_LOG"
  timeout -k 5 "$TIMEOUT" "$@" >>"$STEP_LOG" 2>&1
}

# A case's verdict as it goes: note WHAT (said in its row), bad WHAT (and it fails), skip WHAT
# (and it is skipped), in R_NOTE, R_FAIL, R_SKIP.
note() { R_NOTE="${R_NOTE:+$R_NOTE; }$*"; }
bad() { R_FAIL=1; note "$*"; }
skip() { R_SKIP=1; note "$*"; }

# A markdown table row, into $ROWS: row CELL | CELL | ...
row() { printf '| %s |\n' "$*" >>"$ROWS"; }

# Seconds: now, and since START with SINCE_DECIMALS decimals (default 2).
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" -v f="%.${SINCE_DECIMALS:-2}f" 'BEGIN { printf f, b - a }'; }
# The median of the numbers on stdin, one a line (the mean of the middle two for an even count).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Whether $PY imports torch with CUDA.
torch_ok() { "$PY" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

# For suites that keep each case's files in $D: the first error line of step NAME, and a
# Python expression over $D/info.json (m).
first_error() { grep -h -m1 -iE 'error|fail|refus' "$D/$1.err" "$D/$1.out" 2>/dev/null | cut -c1-140; }
info() { "$PY" -c "import json,sys; m=json.load(open('$D/info.json')); print($1)"; }

# The end of a suite whose $ROWS is tab-separated with the verdict (PASS, FAIL, SKIP) second:
# the counts, the time since T0, LOGS, and "N passed, N failed"; false when some failed (the
# suite's exit status, as its last command).
tsv_summary() {
  passed=$(awk -F'\t' '$2 == "PASS"' "$ROWS" | wc -l)
  failed=$(awk -F'\t' '$2 == "FAIL"' "$ROWS" | wc -l)
  skipped=$(awk -F'\t' '$2 == "SKIP"' "$ROWS" | wc -l)
  echo
  echo "total $(since "$T0")s; $skipped skipped; logs in $LOGS"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
