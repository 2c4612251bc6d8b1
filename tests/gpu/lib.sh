# shellcheck shell=bash
# shellcheck disable=SC2034  # RC, STEP_LOG, passed, BUILD, KC, EX...: read by the suites
# shellcheck disable=SC2119,SC2120  # optional arguments (first_error [NAME], summary [-s])
# The helpers the GPU suites (tests/gpu/*.sh) and the GPU benchmarks (bench/*.sh) share:
# sourced, never run.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"              (a suite)
#   . "$(dirname "${BASH_SOURCE[0]}")/../tests/gpu/lib.sh"  (a benchmark)
#
# One helper per job; where suites need it to behave differently, a parameter (an argument,
# or a variable the suite sets once) says how. A suite never defines a function of the same
# name as one here (its own would silently replace this one for everything that calls it).
#
#   start        gpu_required, gpu_build, gpu_work_dir, cleanup, want
#   commands     run, step, kc, first_error, result_of, result_word
#   JSON         json_get, manifest_get, info, chunk_stats
#   verdicts     tally, pass_if, pass_unless, verdict, check; note, bad, skip, case_status
#   tables       row, case_row, table, tsv_row, run_case, summary, tsv_summary
#   edits        wrong_edit_case
#   time         now, since, median
#   other        torch_ok, logged_step (the older name of run)
#
# State every suite starts with (it may set its own values after sourcing this file):
passed=0 failed=0 skipped=0 rows=()  # the counts of verdicts, and the rows `verdict` keeps
R_FAIL=0 R_SKIP=0 R_NOTE=""          # one case's state (note, bad, skip, case_status)
LOG="" LOGS="" D="" RC=0 LAST_OUTPUT=()  # the log, the logs, the case directory, the last command
TIMEOUT=${KERNCAP_GPU_TIMEOUT:-300}  # seconds one command may take (run, step, kc)

# ---- start --------------------------------------------------------------------------------------

# gpu_required: no GPU -> "SKIPPED: no GPU" and exit 77 (CTest's skip code), before anything is
# built or made.
gpu_required() {
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "SKIPPED: no GPU"
    exit 77
  fi
}

# gpu_build DIR: what a suite does after its usage line: gpu_required, then BUILD = DIR as an
# absolute path (exit 1 when it is no directory), KC = its kerncap, EX = its examples, and NVCC
# (unless set: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
gpu_build() {
  gpu_required
  BUILD=$(cd "$1" && pwd) || exit 1
  KC=$BUILD/bin/kerncap
  EX=$BUILD/examples
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
}

# gpu_work_dir NAME [in-work|apart|kept]: sets WORK to a new directory, $OUT/NAME-work.XXXXXX
# when OUT is set (OUT is created), else ${TMPDIR:-/tmp}/kerncap-NAME.XXXXXX; exits 1 when it
# cannot be made. in-work and apart also set LOGS: $OUT/NAME-logs when OUT is set, else
# WORK/logs (in-work: removed with WORK) or ${TMPDIR:-/tmp}/kerncap-NAME-logs.XXXXXX (apart:
# kept after the run). kept: WORK is $OUT/NAME itself, emptied first (what the device tool brings
# back), when OUT is set. ROWS = WORK/rows, an empty file for `row`, `tsv_row`. Nothing removes
# WORK unless the suite says `trap cleanup EXIT`.
gpu_work_dir() {
  local name=$1 logs=${2:-}
  WORK=""
  if [ "$logs" = kept ] && [ -n "${OUT:-}" ]; then
    rm -rf "${OUT:?}/$name" && mkdir -p "$OUT/$name" && WORK=$OUT/$name
  elif [ -n "${OUT:-}" ] && [ "$logs" != kept ]; then
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
  ROWS=$WORK/rows
  : >"$ROWS"
}

# cleanup: at exit (`trap cleanup EXIT`) the work directory goes, unless KERNCAP_GPU_KEEP=1, or
# the suite set KEEP_FAILED=1 and a case failed (that run's files stay to be looked at).
cleanup() {
  [ "${KERNCAP_GPU_KEEP:-0}" = 1 ] && return 0
  [ "${KEEP_FAILED:-0}" = 1 ] && [ "$failed" -gt 0 ] && return 0
  rm -rf "$WORK"
}

# want [-E] NAME: the case NAME is to run: KERNCAP_GPU_CASES is unset or empty, or names it
# (a space-separated list of names; with -E an extended regex, matching part of NAME).
want() {
  local re=0
  if [ "$1" = -E ]; then re=1; shift; fi
  [ -z "${KERNCAP_GPU_CASES:-}" ] && return 0
  if [ $re = 1 ]; then [[ $1 =~ $KERNCAP_GPU_CASES ]]; else [[ " $KERNCAP_GPU_CASES " == *" $1 "* ]]; fi
}

# ---- commands -----------------------------------------------------------------------------------

# run NAME CMD...: CMD under the time limit (TIMEOUT seconds, then killed 5 s later); its stdout
# in $D/NAME.out (STEP_OUT), its stderr in $D/NAME.err (STEP_ERR), D being the case's directory
# (default WORK); its exit status in RC, and returned. When the suite keeps a log in LOG, the
# command line and its output go there too (the last LOG_TAIL lines of each stream; default all).
run() {
  local name=$1
  shift
  STEP_OUT=${D:-$WORK}/$name.out STEP_ERR=${D:-$WORK}/$name.err
  LAST_OUTPUT=("$STEP_ERR" "$STEP_OUT")
  [ -z "$LOG" ] || printf '\n$ %s\n' "$*" >>"$LOG"
  timeout -k 5 "$TIMEOUT" "$@" >"$STEP_OUT" 2>"$STEP_ERR"
  RC=$?
  [ -z "$LOG" ] || { _log_lines "$STEP_OUT" '  out| '; _log_lines "$STEP_ERR" '  err| '; _log_exit; } >>"$LOG"
  return $RC
}

# step NAME CMD...: CMD under the time limit, its stdout and stderr together in STEP_LOG =
# $D/NAME.log (default: LOGS, else WORK); its exit status in RC, and returned. The command line
# goes before its output in LOG when the suite keeps one (with the output: its last LOG_TAIL
# lines), else at the top of STEP_LOG.
step() {
  local name=$1
  shift
  STEP_LOG=${D:-${LOGS:-$WORK}}/$name.log
  LAST_OUTPUT=("$STEP_LOG")
  if [ -n "$LOG" ]; then
    printf '\n$ %s\n' "$*" >>"$LOG"
    : >"$STEP_LOG"
  else
    printf '$ %s\n' "$*" >"$STEP_LOG"
  fi
  timeout -k 5 "$TIMEOUT" "$@" >>"$STEP_LOG" 2>&1
  RC=$?
  [ -z "$LOG" ] || { _log_lines "$STEP_LOG" '  | '; _log_exit; } >>"$LOG"
  return $RC
}
_log_lines() { if [ -n "${LOG_TAIL:-}" ]; then tail -n "$LOG_TAIL" "$1"; else cat "$1"; fi | sed "s/^/$2/"; }
_log_exit() { echo "  [exit $RC$([ "$RC" = 124 ] && echo ", timed out after ${TIMEOUT}s")]"; }

# logged_step STEP CMD...: run, with the last 6 lines of each output in LOG (the older name).
logged_step() { LOG_TAIL=${LOG_TAIL:-6} run "$@"; }

# kc ARGS...: kerncap with the time limit (its output where the caller sends it).
kc() { timeout "$TIMEOUT" "$KC" "$@"; }

# The output files of the last command (run: stderr, stdout; step: its log), or of run NAME.
_outputs() {
  if [ $# -gt 0 ]; then OUTPUTS=("${D:-$WORK}/$1.err" "${D:-$WORK}/$1.out"); else OUTPUTS=("${LAST_OUTPUT[@]}"); fi
}

# first_error [NAME]: the first line of the last command's output (run NAME's, given NAME) that
# reads like an error (ERROR_RE, an extended regex matched without case: default
# error|fail|refus), else its stderr's last line; at most 160 characters.
first_error() {
  local l
  _outputs "$@"
  l=$(grep -h -iE "${ERROR_RE:-error|fail|refus}" "${OUTPUTS[@]}" 2>/dev/null | head -n1)
  [ -n "$l" ] || l=$(tail -n1 "${OUTPUTS[0]}" 2>/dev/null)
  printf '%s\n' "${l:0:160}"
}

# result_of [NAME]: the "Result:" line of the last command's output (of run NAME's), at most 160
# characters; result_word [NAME]: its verdict alone (PASS, FAIL, ...).
result_of() { _outputs "$@"; grep -h '^Result:' "${OUTPUTS[@]}" 2>/dev/null | head -n1 | cut -c1-160; }
result_word() { result_of "$@" | grep -o '^Result: [A-Z]*' | cut -c9-; }

# ---- JSON ---------------------------------------------------------------------------------------

# json_get FILE EXPR: a value of the JSON document in FILE ("-": stdin): the whole file, else the
# first JSON object in it (lines around it ignored). EXPR is a dotted path (edit.file,
# validate.result, regions.0.size) or a Python expression over the document j (also named m;
# MiB and GiB are defined). A float is printed with the format spec JSON_FLOAT (default .4g;
# JSON_FLOAT='' prints it as Python does). No document, or no such value: nothing printed, exit
# status 1.
json_get() { python3 -c "$_JSON_GET_PY" "$1" "$2" "${JSON_FLOAT-.4g}" 2>/dev/null; }
_JSON_GET_PY='
import json, re, sys
path, expr, ffmt = sys.argv[1:4]
text = (sys.stdin if path == "-" else open(path, errors="replace")).read()
try:
    doc = json.loads(text)
except ValueError:
    dec, i, doc = json.JSONDecoder(), text.find("{"), None
    while i >= 0:
        try:
            doc = dec.raw_decode(text, i)[0]
            break
        except ValueError:
            i = text.find("{", i + 1)
    if doc is None:
        sys.exit(1)
if re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*", expr):
    v = doc
    for k in expr.split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
else:
    v = eval(expr, {"j": doc, "m": doc, "MiB": 1 << 20, "GiB": 1 << 30})
print(format(v, ffmt) if isinstance(v, float) else v)
'

# manifest_get CAP EXPR: a Python expression over the capture in CAP (an extract -o directory):
# m = its manifest, p = its parameter bytes, param(i, fmt) = parameter i unpacked with the struct
# format fmt, kinds = the regions' kinds in order, textures = its texture objects (handles,
# arrays, objects), after_bytes(kind) = the AFTER bytes in regions of that kind. An error (no
# capture, no such field) is printed in place of the value, on one line, with exit status 1.
manifest_get() { python3 -c "$_MANIFEST_GET_PY" "$1/capture" "$2" 2>/dev/null; }
_MANIFEST_GET_PY='
import json, struct, sys
def param(i, fmt):
    return struct.unpack_from(fmt, p, m["params"]["slots"][i]["offset"])[0]
def after_bytes(kind):
    of = {r["id"]: r["kind"] for r in m["regions"]}
    return sum(r["size"] for r in m["after"]["runs"] if of.get(r["region"]) == kind)
try:
    d = sys.argv[1]
    m = json.load(open(d + "/manifest.json"))
    try:
        p = open(d + "/" + m["params"]["file"], "rb").read()
    except (OSError, KeyError):
        p = b""
    kinds = [r["kind"] for r in m.get("regions", [])]
    textures = m.get("textures", {"arrays": [], "objects": [], "handles": []})
    print(eval(sys.argv[2]))
except Exception as e:
    print(" ".join(f"{type(e).__name__}: {e}".split())[:200])
    sys.exit(1)
'

# info EXPR: json_get over $D/info.json (a case's `kerncap info --json`), its manifest named m.
info() { json_get "$D/info.json" "$1"; }

# chunk_stats FILE: of `kerncap info --json` output in FILE ("-": stdin), "REGIONS OMITTED STORED
# COMPRESSED": the regions, those recorded by address and size only, the bytes their chunks hold
# and the bytes of the distinct chunks' files (what deduplication and zstd leave).
chunk_stats() {
  python3 -c '
import json, sys
m = json.load(sys.stdin if sys.argv[1] == "-" else open(sys.argv[1]))
seen, stored, comp = set(), 0, 0
for r in m["regions"]:
    for h, size, z in r.get("chunks", []):
        stored += size
        if h not in seen:
            seen.add(h)
            comp += z
print(len(m["regions"]), sum(1 for r in m["regions"] if r.get("omitted")), stored, comp)' "$1"
}

# ---- verdicts -----------------------------------------------------------------------------------

# tally STATUS: counts one verdict: PASS... in passed, SKIP... in skipped, anything else
# ("FAIL", "FAIL: why") in failed.
tally() {
  case $1 in
    PASS*) passed=$((passed + 1)) ;;
    SKIP*) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
}

# pass_if OK: PASS when OK is 1, else FAIL. pass_unless PROBLEMS: PASS when PROBLEMS (a list of
# "what; ") is empty, else "FAIL: PROBLEMS" (its last "; " dropped).
pass_if() { if [ "$1" = 1 ]; then echo PASS; else echo FAIL; fi; }
pass_unless() { if [ -z "$1" ]; then echo PASS; else echo "FAIL: ${1%; }"; fi; }

# verdict NAME STATUS [DETAIL]: one case's verdict: STATUS PASS, FAIL or SKIP (or a longer text
# that starts with one of them), counted (tally) and printed the way the suite's VERDICT_STYLE says:
#   line    (default) "STATUS NAME: DETAIL"; the row "| NAME | STATUS | DETAIL |" kept in rows,
#           for the table `summary` prints
#   row     the row "| NAME | STATUS | DETAIL |" at once, NAME padded to VERDICT_WIDTH
#   rows    that row into $ROWS (for `table`), nothing printed
#   column  "NAME  STATUS  DETAIL", NAME padded to VERDICT_WIDTH
#   status  "STATUS  NAME DETAIL", NAME padded to VERDICT_WIDTH
# With VERDICT_TAIL=N, a FAIL also shows the last N lines of the last command's errors (run's
# stderr, step's log).
verdict() {
  local name=$1 status=$2 detail=${3:-} w=${VERDICT_WIDTH:-0}
  tally "$status"
  case ${VERDICT_STYLE:-line} in
    row) printf "| %-${w}s | %-4s | %s |\n" "$name" "$status" "$detail" ;;
    rows) row "$name | $status | $detail" ;;
    column) printf "%-${w}s %s  %s\n" "$name" "$status" "$detail" ;;
    status) printf "%s  %-${w}s %s\n" "$status" "$name" "$detail" ;;
    *) echo "$status $name: $detail"; rows+=("| $name | $status | $detail |") ;;
  esac
  if [ -n "${VERDICT_TAIL:-}" ] && [[ $status != PASS* && $status != SKIP* ]] && [ ${#LAST_OUTPUT[@]} -gt 0 ] &&
    [ -f "${LAST_OUTPUT[0]}" ]; then
    tail -n "$VERDICT_TAIL" "${LAST_OUTPUT[0]}" | sed 's/^/        | /'
  fi
  return 0
}

# check NAME DETAIL STATUS: verdict NAME, PASS when STATUS (an exit status) is 0, else FAIL.
check() { if [ "$3" = 0 ]; then verdict "$1" PASS "$2"; else verdict "$1" FAIL "$2"; fi; }

# A case's state as it goes (for suites that write one row per case at its end): note WHAT (said
# in its row), bad WHAT (and it fails), skip WHAT (and it is skipped); case_status: its verdict,
# FAIL after bad, else SKIP after skip, else PASS.
note() { R_NOTE="${R_NOTE:+$R_NOTE; }$*"; }
bad() { R_FAIL=1; note "$*"; }
skip() { R_SKIP=1; note "$*"; }
case_status() { if [ "$R_FAIL" = 1 ]; then echo FAIL; elif [ "$R_SKIP" = 1 ]; then echo SKIP; else echo PASS; fi; }

# ---- tables -------------------------------------------------------------------------------------

# row CELL | CELL | ...: a markdown table row, into $ROWS.
row() { printf '| %s |\n' "$*" >>"$ROWS"; }

# case_row NAME PROBLEMS "CELL | CELL ...": a case judged by the problems it found (pass_unless),
# counted (tally), its row "NAME | CELLS | VERDICT" into $ROWS; the verdict also in CASE_STATUS.
case_row() {
  CASE_STATUS=$(pass_unless "$2")
  tally "$CASE_STATUS"
  row "$1 | $3 | $CASE_STATUS"
}

# table "COLUMN | COLUMN | ...": a blank line, then the markdown table of the rows `row` wrote.
table() {
  local sep="" i n
  n=$(awk -F'|' '{ print NF }' <<<"$1")
  for ((i = 0; i < n; i++)); do sep+="| --- "; done
  echo
  echo "| $1 |"
  echo "$sep|"
  cat "$ROWS"
}

# tsv_row NAME: the case's row, tab-separated, into $ROWS: NAME, case_status, the values of the
# variables CASE_COLUMNS names (an array), R_NOTE (tabs and newlines made spaces).
tsv_row() {
  local v cells=("$1" "$(case_status)")
  for v in "${CASE_COLUMNS[@]}"; do cells+=("${!v}"); done
  cells+=("$(printf '%s' "$R_NOTE" | tr '\t\n' '  ')")
  (IFS=$'\t' && echo "${cells[*]}") >>"$ROWS"
}

# run_case NAME: the case function case_NAME in a subshell (what it sets stays there), with
# D = $WORK/NAME (made), LOG = $LOGS/NAME.log (emptied) and the case state as the suite left it;
# then its row (tsv_row; R_TIME holds the case's seconds), or a FAIL row "case script died" when
# it wrote none. Prints "[VERDICT] NAME (Ns)"; a failed case's last log lines go to the file
# FAILTAILS when the suite names one, else they are printed at once.
run_case() {
  local name=$1 t0 result v died
  D=$WORK/$name LOG=$LOGS/$name.log
  mkdir -p "$D"
  : >"$LOG"
  t0=$(now)
  (
    "case_$name"
    R_TIME="$(since "$t0")s"
    tsv_row "$name"
  )
  if ! grep -q "^$name	" "$ROWS"; then
    died="$name	FAIL"
    for v in "${CASE_COLUMNS[@]}"; do died+="	-"; done
    printf '%s\tcase script died (see log)\n' "$died" >>"$ROWS"
  fi
  result=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$ROWS")
  echo "[$result] $name ($(since "$t0")s)"
  if [ "$result" = FAIL ]; then
    if [ -n "${FAILTAILS:-}" ]; then _fail_tail "$name" >>"$FAILTAILS"; else _fail_tail "$name"; fi
  fi
}
_fail_tail() { echo "---- $1: last lines of $LOG"; tail -n 12 "$LOG" | cut -c1-200; }

# summary [-s|-S] [NOTE]: the end of a suite: the table of the rows `verdict` kept (when any),
# then the closing line "N passed, N failed" all.sh looks for, with ", N skipped" (-s: always;
# -S: when some were) and NOTE after it. Returns false when a case failed: as the suite's last
# command it gives the exit status.
summary() {
  local sk=""
  case ${1:-} in
    -s) sk=", $skipped skipped"; shift ;;
    -S) if [ "$skipped" -gt 0 ]; then sk=", $skipped skipped"; fi; shift ;;
  esac
  if [ ${#rows[@]} -gt 0 ]; then
    echo
    echo "| case | result | detail |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
  fi
  echo "$passed passed, $failed failed$sk${1:+ $1}"
  [ "$failed" -eq 0 ]
}

# tsv_summary: summary of a suite whose $ROWS is tab-separated with the verdict second (tsv_row):
# the counts from it, the time since T0 and LOGS first.
tsv_summary() {
  passed=$(awk -F'\t' '$2 == "PASS"' "$ROWS" | wc -l)
  failed=$(awk -F'\t' '$2 == "FAIL"' "$ROWS" | wc -l)
  skipped=$(awk -F'\t' '$2 == "SKIP"' "$ROWS" | wc -l)
  echo
  echo "total $(since "$T0")s; $skipped skipped; logs in $LOGS"
  summary
}

# ---- edits --------------------------------------------------------------------------------------

# wrong_edit_case LABEL DIR FILE ORIGINAL SED WHAT: in the reproducer DIR, FILE (the file that
# holds the kernel) put back to ORIGINAL, then changed by the sed expression SED so that the
# kernel's results change (WHAT says how); `make recompile` must work and `make
# validate-variant` FAIL with a verdict (not a refusal: the globals still bind). Its verdict
# LABEL; the steps' logs are LABEL-recompile and LABEL-validate.
wrong_edit_case() {
  local label=$1 dir=$2 file=$3 orig=$4 expr=$5 what=$6
  cp "$orig" "$file"
  sed -i "$expr" "$file"
  if cmp -s "$orig" "$file"; then verdict "$label" FAIL "edit not applied"; return; fi
  if ! step "$label-recompile" make -C "$dir" recompile KERNCAP="$KC"; then
    verdict "$label" FAIL "recompile failed: $(first_error)"
    return
  fi
  step "$label-validate" make -C "$dir" validate-variant KERNCAP="$KC"
  if [ "$RC" -ne 0 ] && grep -q '^Result: FAIL' "$STEP_LOG"; then
    verdict "$label" PASS "$what: FAIL as wanted; $(grep -m1 '^  region' "$STEP_LOG" | cut -c1-120)"
  else
    verdict "$label" FAIL "$what: rc=$RC $(grep -m1 -E '^Result' "$STEP_LOG" || first_error)"
  fi
}

# ---- time ---------------------------------------------------------------------------------------

# Seconds: now, and since START with SINCE_DECIMALS decimals (default 2).
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" -v f="%.${SINCE_DECIMALS:-2}f" 'BEGIN { printf f, b - a }'; }
# The median of the numbers on stdin, one a line (the mean of the middle two for an even count).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- other --------------------------------------------------------------------------------------

# torch_ok [PYTHON]: whether PYTHON (default $PY, else python3) imports torch with CUDA.
torch_ok() { "${1:-${PY:-python3}}" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; }
