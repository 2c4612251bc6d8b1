#!/usr/bin/env bash
# kerncap-gpu-suite: alone
# (all.sh leaves it out: it needs a wheel built first, `pip wheel . -w dist`, and exits 1 without one)
# The wheel end to end (GPU): `pip wheel .` output installed offline into a fresh venv, then one
# capture, replay and validation with nothing but what the wheel installed:
#   install       python3 -m venv --system-site-packages; pip install --no-deps --no-index WHEEL
#   help          the venv's `kerncap --help` and `kerncap-replay --help` run
#   paths         `kerncap env --paths` names the package's own lib/libkerncap.so and site-packages
#   extract       `kerncap extract vectorAdd` of BUILD/examples/vector_add
#   replay        `kerncap replay --iterations 20 --json`
#   validate      `kerncap validate`: Result: PASS
#   replay_tool   `kerncap-replay --validate --json`: Result: PASS
#   engine        the venv's Python: kerncap.engine finds the package's libkerncap_replay.so,
#                 restores, launches and compares (PASS)
#   lint          `kerncap lint` (the disassembler travels in the package's bin/)
#   footprint     `kerncap footprint` (libsanitizer-public.so in the package's lib/); SKIP when
#                 the wheel was built without the Compute Sanitizer API
# Everything runs from an empty folder with no KERNCAP_* variable, PYTHONPATH or LD_LIBRARY_PATH
# set, so nothing can come from the source or build tree. Only the example application comes
# from BUILD. Prints one line per case and "N passed, N failed". Exit 0 all passed, 1 some
# failed, 77 skipped (no GPU).
#
#   pip wheel . --no-deps -w .whl          # on the build machine (CI's build tree is reused)
#   tests/gpu/wheel_e2e.sh BUILD_DIR [WHEEL]   # WHEEL: default the newest .whl/kerncap-*.whl
# KERNCAP_PYTHON picks the interpreter (default python3).
set -u -o pipefail
ulimit -c 0

BUILD=${1:?usage: tests/gpu/wheel_e2e.sh BUILD_DIR [WHEEL]}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WHEEL=${2:-$(ls -t "$ROOT"/.whl/kerncap-*.whl 2>/dev/null | head -1)}
APP=$EX/vector_add
PY=${KERNCAP_PYTHON:-python3}
for f in "$WHEEL" "$APP"; do
  [ -f "$f" ] || { echo "missing ${f:-the wheel (.whl/kerncap-*.whl)}: pip wheel . --no-deps -w .whl, and build the examples"; exit 1; }
done
WHEEL=$(cd "$(dirname "$WHEEL")" && pwd)/$(basename "$WHEEL")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-wheel.XXXXXX") || exit 1
trap cleanup EXIT
LOG=$WORK/log.txt  # step (lib.sh): the command lines there, each step's output alone in $WORK/NAME.log
VERDICT_STYLE=column VERDICT_WIDTH=12 VERDICT_TAIL=15  # verdict: "NAME  PASS  NOTE", a failure's log tail
# Every step runs with a clean environment (IN_VENV: no KERNCAP_* variable, PYTHONPATH or
# LD_LIBRARY_PATH; the venv first on PATH) from an empty folder.
V=$WORK/venv
clean_env=(env -u PYTHONPATH -u LD_LIBRARY_PATH)
while IFS= read -r var; do clean_env+=(-u "$var"); done < <(env | sed -n 's/^\(KERNCAP_[A-Za-z0-9_]*\)=.*/\1/p')
IN_VENV=("${clean_env[@]}" PATH="$V/bin:$PATH")
mkdir -p "$WORK/empty" && cd "$WORK/empty" || exit 1

echo "wheel: $WHEEL"
# The venv sees the machine's packages (torch, a pip) but gets kerncap only from the wheel.
step venv "${IN_VENV[@]}" "$PY" -m venv --system-site-packages "$V" ||
  step venv "${IN_VENV[@]}" "$PY" -m venv --without-pip --system-site-packages "$V"
step install "${IN_VENV[@]}" "$V/bin/python" -m pip install --no-deps --no-index --disable-pip-version-check "$WHEEL"
check install "$(basename "$WHEEL")" $RC
if [ ! -x "$V/bin/kerncap" ]; then
  [ "$RC" != 0 ] || verdict kerncap FAIL "installing the wheel made no $V/bin/kerncap"
  summary -S
  exit 1
fi
PKG=$("${clean_env[@]}" "$V/bin/python" -c 'import kerncap, os; print(os.path.dirname(os.path.realpath(kerncap.__file__)))')

step help "${IN_VENV[@]}" sh -c 'kerncap --help && kerncap-replay --help'
check help "$(command -v "$V/bin/kerncap")" $RC

step paths "${IN_VENV[@]}" kerncap env --paths
grep -q "^library  *$PKG/lib/libkerncap.so\$" "$STEP_LOG"
ok=$?
check paths "$(tr -s ' \n' ' ' <"$STEP_LOG")" $ok

CAP=$WORK/vadd
step extract "${IN_VENV[@]}" kerncap extract vectorAdd -o "$CAP" -- "$APP"
[ $RC = 0 ] && [ -f "$CAP/capture/manifest.json" ]
check extract "$CAP" $?

step replay "${IN_VENV[@]}" kerncap replay "$CAP" --iterations 20 --json
check replay "$(grep -o '"median_ms": *[0-9.e-]*' "$STEP_LOG" | head -1)" $RC

step validate "${IN_VENV[@]}" kerncap validate "$CAP"
[ $RC = 0 ] && grep -q '^Result: PASS' "$STEP_LOG"
ok=$?
check validate "$(result_of)" $ok

step replay_tool "${IN_VENV[@]}" kerncap-replay "$CAP" --validate --json -n 10
res=$(json_get "$STEP_LOG" validate.result)
[ $RC = 0 ] && [ "$res" = PASS ]
check replay_tool "validate: ${res:-no JSON}" $?

step engine "${IN_VENV[@]}" "$V/bin/python" - "$CAP" "$PKG" <<'PYEOF'
import os, sys
from kerncap import engine
cap, pkg = sys.argv[1], sys.argv[2]
lib = engine.locate()
assert lib == os.path.join(pkg, "lib", engine.LIBRARY_NAME), f"engine {lib} is not the package's"
with engine.Session(cap) as s:
    s.restore()
    s.launch()
    r = s.compare()
print(lib)
print(r.get("line") or r["result"])
sys.exit(0 if r["result"] == "PASS" else 1)
PYEOF
check engine "$(tail -1 "$STEP_LOG")" $RC

step lint "${IN_VENV[@]}" kerncap lint "$CAP"
check lint "$(result_of)" $RC

if [ -f "$PKG/lib/libsanitizer-public.so" ]; then
  step footprint "${IN_VENV[@]}" kerncap footprint "$CAP"
  check footprint "exit $RC" $RC
else
  verdict footprint SKIP "the wheel has no libsanitizer-public.so (built without the Compute Sanitizer API)"
fi

summary -S
