#!/usr/bin/env bash
# GPU suite for `kerncap serve`: a capture kept open in one process answers `kerncap validate`
# with the verdict an in-process validation reaches. On examples/vector_add (extracted and
# footprinted here, strong verdicts):
#   served_pass    validate --cubin (a recompiled copy) through the server: exit 0, "evaluated by
#                  kerncap serve (pid N)", --json result/strength/spec/regions/line equal to
#                  `--server off`'s, the text output identical
#   served_fail    a wrong variant (built here: c = a + b + 1) through the server: exit 1, same
#                  fields as `--server off` (which also exits 1)
#   captured       validate --baseline (the captured image) through the server: PASS strong
#   refused        an image without vectorAdd: exit 2 through the server, as in-process
#   judged_flags   --no-determinism-check --invariant no_nan --exact: the judge's flags travel to the
#                  server (one judge): served, PASS
#   in_process     --no-relocate (checked when a session opens): the server is not used, one line
#                  says why, PASS
#   make           the reproducer's `make validate-variant` (when extract wrote a Makefile) is served
#   timing         5 validations through the server, 5 with --server off: both medians printed,
#                  the server's must be lower
#   stop           `kerncap serve --stop`: the server exits 0 saying so; validate then falls back
#                  silently (no note) and PASSes
#   python         Python's Kerncap.serve starts a server and waits until it answers; a validate
#                  through the API is evaluated by it (its evaluation count grows by one); the
#                  `with` block's end stops it
# Prints one table row per case and "N passed, N failed". Exit 0 all passed, 1 some failed,
# 77 skipped (no GPU).
#
#   tests/gpu/serve_e2e.sh BUILD_DIR
#
# Environment: OUT (work files under it), KERNCAP_GPU_TIMEOUT (per command, default 300 s),
# KERNCAP_GPU_KEEP=1 keeps the work directory.
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/serve_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${TORCH_PY:-python3}
for f in "$KC" "$EX/vector_add" "$EX/vector_add.cubin" "$EX/driver_extra_kernel.cubin"; do
  [ -e "$f" ] || { echo "missing $f (build first: cmake --build $BUILD)"; exit 1; }
done
unset KERNCAP_SERVE
gpu_work_dir serve
LOG=$WORK/log.txt LOG_TAIL=6  # run (lib.sh): each command and the last 6 lines of its output there
echo "kerncap serve suite: work in $WORK"
SERVER_PID=""
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}
# The server goes whatever happens; the work directory too unless a case failed (or KERNCAP_GPU_KEEP=1).
KEEP_FAILED=1
trap 'stop_server; cleanup' EXIT

# serve_verdict NAME PROBLEMS DETAIL: the case's verdict and row (case_row), and a line "NAME: VERDICT (DETAIL)".
serve_verdict() {
  case_row "$1" "$2" "$3"
  echo "$1: $CASE_STATUS${3:+ ($3)}"
}

# v STEP ARGS...: kerncap validate $CAP ARGS (run, lib.sh): output in $WORK/STEP.out/.err, RC.
v() {
  local step=$1
  shift
  run "$step" "$KC" validate "$CAP" "$@"
}
served() { grep -q "^kerncap: evaluated by kerncap serve (pid $SERVER_PID)" "$WORK/$1.err"; }
# same_verdict A B: the --json outputs of steps A and B agree on what a verdict is.
same_verdict() {
  "$PY" - "$WORK/$1.out" "$WORK/$2.out" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def key(j):
    return {"result": j["result"], "strength": j["strength"], "spec": j["spec"], "line": j["line"],
            "written_bytes": j["written_bytes"], "poisoned_bytes": j["poisoned_bytes"],
            "nondeterministic_regions": j["nondeterministic_regions"], "kernel": j["kernel"], "image": j["image"],
            "regions": [{k: r[k] for k in ("id", "pass", "exact", "differing_bytes", "mismatches", "summary")}
                        for r in j["regions"]]}
ka, kb = key(a), key(b)
for k in ka:
    if ka[k] != kb[k]:
        print(f"{k}: served {ka[k]!r} vs in-process {kb[k]!r}"[:300])
sys.exit(0 if ka == kb else 1)
PYEOF
}

# The capture: vectorAdd of examples/vector_add, with its footprint (strong verdicts).
CAP=$WORK/cap
if ! run extract "$KC" extract vectorAdd -o "$CAP" -- "$EX/vector_add" 100000; then
  serve_verdict setup "extract failed: $(first_error extract)" ""
  summary
  exit 1
fi
run footprint "$KC" footprint "$CAP" || echo "  note: no footprint: $(first_error footprint)"
ARCH=$("$KC" info --json "$CAP" | json_get - '"sm_{}{}".format(*m["device"]["cc"])')
SAME=$EX/vector_add.cubin
WRONG=$WORK/wrong.cubin
sed 's/^  if (i < n) c\[i\] = a\[i\] + b\[i\];$/  if (i < n) c[i] = a[i] + b[i] + 1.0f;/' "$REPO/examples/vector_add.cu" >"$WORK/wrong.cu"
grep -q 'b\[i\] + 1.0f' "$WORK/wrong.cu" || echo "  note: the wrong variant's edit did not apply"
timeout "$TIMEOUT" "$NVCC" -cubin -arch="$ARCH" -O3 -I"$REPO/examples" "$WORK/wrong.cu" -o "$WRONG" >>"$LOG" 2>&1 ||
  echo "  note: nvcc could not build the wrong variant"

# In-process references, before any server runs.
v ref_pass --cubin "$SAME" --json --server off
REF_PASS_RC=$RC
v ref_pass_text --cubin "$SAME" --server off
v ref_fail --cubin "$WRONG" --json --server off
REF_FAIL_RC=$RC
v ref_refused --cubin "$EX/driver_extra_kernel.cubin" --server off
REF_REFUSED_RC=$RC

# The server, in the background; ready when it says so.
"$KC" serve "$CAP" --idle-timeout 900 >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
for _ in $(seq 1 600); do
  grep -q ' ready (pid ' "$WORK/serve.out" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.2
done
if ! grep -q ' ready (pid ' "$WORK/serve.out"; then
  serve_verdict setup "kerncap serve did not become ready: $(tail -n 3 "$WORK/serve.out" "$WORK/serve.err" | tr '\n' ' ' | cut -c1-200)" ""
  summary
  exit 1
fi
grep -h 'the captured image' "$WORK/serve.out" | head -1

P=""
v served_pass --cubin "$SAME" --json
[ $RC = 0 ] && [ $REF_PASS_RC = 0 ] || P+="exit $RC (in-process $REF_PASS_RC); "
served served_pass || P+="no 'evaluated by kerncap serve' line; "
d=$(same_verdict served_pass ref_pass) || P+="differs: $d; "
[ "$(json_get "$WORK/served_pass.out" strength)" = strong ] ||
  P+="not strong; "
v served_pass_text --cubin "$SAME"
diff "$WORK/served_pass_text.out" "$WORK/ref_pass_text.out" >"$WORK/text.diff" || P+="text differs: $(head -c 200 "$WORK/text.diff" | tr '\n' ' '); "
serve_verdict served_pass "$P" "$(grep -h -m1 '^Result' "$WORK/served_pass_text.out" | cut -c1-60)"

P=""
v served_fail --cubin "$WRONG" --json
[ $RC = 1 ] && [ $REF_FAIL_RC = 1 ] || P+="exit $RC (in-process $REF_FAIL_RC), expected 1; "
served served_fail || P+="no 'evaluated by kerncap serve' line; "
d=$(same_verdict served_fail ref_fail) || P+="differs: $d; "
serve_verdict served_fail "$P" "$(json_get "$WORK/served_fail.out" 'j["line"][:60]')"

P=""
v captured --baseline
[ $RC = 0 ] || P+="exit $RC; "
served captured || P+="not served; "
grep -q '^Result: PASS' "$WORK/captured.out" || P+="no PASS line; "
serve_verdict captured "$P" "$(grep -h -m1 '^Result' "$WORK/captured.out" | cut -c1-60)"

P=""
v refused --cubin "$EX/driver_extra_kernel.cubin"
[ $RC = 2 ] && [ $REF_REFUSED_RC = 2 ] || P+="exit $RC (in-process $REF_REFUSED_RC), expected 2; "
served refused || P+="not served; "
[ "$(grep -h 'error:' "$WORK/refused.err")" = "$(grep -h 'error:' "$WORK/ref_refused.err")" ] || P+="another message; "
serve_verdict refused "$P" "$(grep -h -m1 'error:' "$WORK/refused.err" | cut -c1-60)"

P=""
v judged_flags --cubin "$SAME" --no-determinism-check --invariant no_nan --exact
[ $RC = 0 ] || P+="exit $RC; "
served judged_flags || P+="not served; "
serve_verdict judged_flags "$P" "$(grep -h -m1 '^Result' "$WORK/judged_flags.out" | cut -c1-60)"

P=""
v in_process --cubin "$SAME" --no-relocate
[ $RC = 0 ] || P+="exit $RC; "
served in_process && P+="served; "
grep -q "not evaluated by kerncap serve (pid $SERVER_PID): --no-relocate" "$WORK/in_process.err" || P+="no line saying why; "
serve_verdict in_process "$P" "$(grep -h -m1 'not evaluated' "$WORK/in_process.err" | cut -c1-80)"

if [ -f "$CAP/Makefile" ] && grep -q '^serve:' "$CAP/Makefile"; then
  P=""
  cp "$SAME" "$CAP/optimized.cubin"
  touch "$CAP/optimized.cubin"
  run make make -C "$CAP" validate-variant KERNCAP="$KC"
  [ $RC = 0 ] || P+="exit $RC; "
  served make || P+="not served; "
  rm -f "$CAP/optimized.cubin"
  serve_verdict make "$P" "make validate-variant"
else
  row "make | no reproducer Makefile with a serve target | SKIP"
fi

# Timing: whole `kerncap validate` processes, served and not.
P=""
: >"$WORK/served.times"
: >"$WORK/local.times"
for _ in 1 2 3 4 5; do
  t=$(now)
  "$KC" validate "$CAP" --cubin "$SAME" -q >/dev/null 2>&1 || P+="a served validation failed; "
  { SINCE_DECIMALS=3 since "$t"; echo; } >>"$WORK/served.times"
  t=$(now)
  "$KC" validate "$CAP" --cubin "$SAME" -q --server off >/dev/null 2>&1 || P+="an in-process validation failed; "
  { SINCE_DECIMALS=3 since "$t"; echo; } >>"$WORK/local.times"
done
SERVED_MED=$(median <"$WORK/served.times")
LOCAL_MED=$(median <"$WORK/local.times")
echo "validate --cubin: median ${SERVED_MED}s through kerncap serve, ${LOCAL_MED}s in its own process (5 each)"
awk -v s="$SERVED_MED" -v l="$LOCAL_MED" 'BEGIN { exit !(s < l) }' || P+="the server's median is not lower; "
serve_verdict timing "$P" "served ${SERVED_MED}s, in-process ${LOCAL_MED}s (medians of 5)"

P=""
run stop "$KC" serve --stop "$CAP" || P+="--stop exit $RC; "
for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVER_PID" 2>/dev/null; then
  P+="the server still runs; "
else
  wait "$SERVER_PID"
  src=$?
  [ $src = 0 ] || P+="the server exited $src; "
fi
grep -q 'stopped (stop requested)' "$WORK/serve.out" || P+="the server did not say it stopped; "
SERVED_PID=$SERVER_PID
SERVER_PID=""
v after_stop --cubin "$SAME"
[ $RC = 0 ] || P+="validate after stop exit $RC; "
grep -q 'kerncap serve' "$WORK/after_stop.err" && P+="validate after stop mentions kerncap serve; "
serve_verdict stop "$P" "server pid $SERVED_PID: $(grep -h -m1 'stopped' "$WORK/serve.out" | cut -c1-70)"

# Python: Kerncap.serve starts a server in the background and returns once `--status --json`
# says it answers; a validate through the API is then evaluated by it (the server's count of
# evaluations grows by one); leaving the `with` block stops it.
P=""
cat >"$WORK/py_serve.py" <<'PYEOF'
import json, sys
from kerncap import Kerncap
cap, same = sys.argv[1], sys.argv[2]
kc = Kerncap()
before_any = kc.serve_status(cap).serving
with kc.serve(cap) as s:
    before = s.status().server.get("served", 0)
    v = kc.validate(cap, cubin=same)
    after = s.status().server.get("served", 0)
    print(json.dumps({"before_any": before_any, "owned": s.owned, "pid": s.pid, "passed": v.passed,
                      "line": v.line, "served_before": before, "served_after": after,
                      "served_by": (v.served_by or {}).get("pid")}))
print(json.dumps({"serving_after": kc.serve_status(cap).serving}))
PYEOF
run python env PYTHONPATH="$REPO/python" KERNCAP_BIN="$KC" "$PY" "$WORK/py_serve.py" "$CAP" "$SAME"
[ $RC = 0 ] || P+="exit $RC: $(tail -n 2 "$WORK/python.err" | tr '\n' ' '); "
if [ $RC = 0 ]; then
  PYCHECK=$("$PY" - "$WORK/python.out" <<'PYEOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
a, b = lines[0], lines[1]
problems = []
if a["before_any"]: problems.append("a server ran before the case")
if not a["owned"]: problems.append("the server was not started by Kerncap.serve")
if not a["passed"]: problems.append("validate: " + a["line"])
if a["served_after"] != a["served_before"] + 1: problems.append(f"served {a['served_before']} -> {a['served_after']}")
if a["served_by"] != a["pid"]: problems.append(f"served_by {a['served_by']}, server pid {a['pid']}")
if b["serving_after"]: problems.append("still serving after the with block")
print("; ".join(problems) if problems else f"pid {a['pid']}: {a['line'][:50]}")
sys.exit(1 if problems else 0)
PYEOF
  ) || P+="$PYCHECK; "
fi
serve_verdict python "$P" "${PYCHECK:-}"

{
  table "case | detail | verdict"
  echo
  summary
} | tee -a "$LOG"
[ "$failed" -eq 0 ]
