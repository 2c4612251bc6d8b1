#!/usr/bin/env bash
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
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_required
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd) || exit 1
WHEEL=${2:-$(ls -t "$ROOT"/.whl/kerncap-*.whl 2>/dev/null | head -1)}
APP=$BUILD/examples/vector_add
PY=${KERNCAP_PYTHON:-python3}
for f in "$WHEEL" "$APP"; do
  [ -f "$f" ] || { echo "missing ${f:-the wheel (.whl/kerncap-*.whl)}: pip wheel . --no-deps -w .whl, and build the examples"; exit 1; }
done
WHEEL=$(cd "$(dirname "$WHEEL")" && pwd)/$(basename "$WHEEL")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kerncap-wheel.XXXXXX") || exit 1
trap cleanup EXIT
passed=0
failed=0
skipped=0
result() {  # result NAME OK NOTE   (OK: 1 pass, 0 fail, s skip)
  case $2 in
    1) passed=$((passed + 1)); printf '%-12s PASS  %s\n' "$1" "$3" ;;
    s) skipped=$((skipped + 1)); printf '%-12s SKIP  %s\n' "$1" "$3" ;;
    *) failed=$((failed + 1)); printf '%-12s FAIL  %s\n' "$1" "$3"
       [ -f "$WORK/$1.log" ] && tail -n 15 "$WORK/$1.log" | sed 's/^/    /' ;;
  esac
}
# run NAME CMD...: from an empty folder, with a clean environment; output in $WORK/NAME.log, status in RC.
V=$WORK/venv
clean_env=(env -u PYTHONPATH -u LD_LIBRARY_PATH)
while IFS= read -r var; do clean_env+=(-u "$var"); done < <(env | sed -n 's/^\(KERNCAP_[A-Za-z0-9_]*\)=.*/\1/p')
mkdir -p "$WORK/empty"
run() { local n=$1; shift; (cd "$WORK/empty" && "${clean_env[@]}" PATH="$V/bin:$PATH" "$@") >"$WORK/$n.log" 2>&1; RC=$?; }
ok_if() { if [ "$1" = 0 ]; then echo 1; else echo 0; fi; }

echo "wheel: $WHEEL"
# The venv sees the machine's packages (torch, a pip) but gets kerncap only from the wheel.
run venv "$PY" -m venv --system-site-packages "$V"
[ $RC = 0 ] || run venv "$PY" -m venv --without-pip --system-site-packages "$V"
run install "$V/bin/python" -m pip install --no-deps --no-index --disable-pip-version-check "$WHEEL"
result install "$(ok_if $RC)" "$(basename "$WHEEL")"
[ -x "$V/bin/kerncap" ] || { echo "0 passed, 1 failed"; exit 1; }
PKG=$("${clean_env[@]}" "$V/bin/python" -c 'import kerncap, os; print(os.path.dirname(os.path.realpath(kerncap.__file__)))')

run help sh -c 'kerncap --help && kerncap-replay --help'
result help "$(ok_if $RC)" "$(command -v "$V/bin/kerncap")"

run paths kerncap env --paths
grep -q "^library  *$PKG/lib/libkerncap.so\$" "$WORK/paths.log"
result paths "$(ok_if $?)" "$(tr -s ' \n' ' ' <"$WORK/paths.log")"

CAP=$WORK/vadd
run extract kerncap extract vectorAdd -o "$CAP" -- "$APP"
[ $RC = 0 ] && [ -f "$CAP/capture/manifest.json" ]
result extract "$(ok_if $?)" "$CAP"

run replay kerncap replay "$CAP" --iterations 20 --json
result replay "$(ok_if $RC)" "$(grep -o '"median_ms": *[0-9.e-]*' "$WORK/replay.log" | head -1)"

run validate kerncap validate "$CAP"
[ $RC = 0 ] && grep -q '^Result: PASS' "$WORK/validate.log"
result validate "$(ok_if $?)" "$(grep '^Result:' "$WORK/validate.log" | head -1)"

run replay_tool kerncap-replay "$CAP" --validate --json -n 10
res=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["validate"]["result"])' "$WORK/replay_tool.log" 2>/dev/null)
[ $RC = 0 ] && [ "$res" = PASS ]
result replay_tool "$(ok_if $?)" "validate: ${res:-no JSON}"

run engine "$V/bin/python" - "$CAP" "$PKG" <<'PYEOF'
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
result engine "$(ok_if $RC)" "$(tail -1 "$WORK/engine.log")"

run lint kerncap lint "$CAP"
result lint "$(ok_if $RC)" "$(grep '^Result:' "$WORK/lint.log" | head -1)"

if [ -f "$PKG/lib/libsanitizer-public.so" ]; then
  run footprint kerncap footprint "$CAP"
  result footprint "$(ok_if $RC)" "exit $RC"
else
  result footprint s "the wheel has no libsanitizer-public.so (built without the Compute Sanitizer API)"
fi

if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" = 0 ]
