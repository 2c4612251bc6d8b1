#!/usr/bin/env bash
# The agent playbook on a GPU (docs/agents.md), through the Python API and, when the `mcp`
# package is importable, the MCP server: profile examples/templated.cu (three instantiations of
# one template), pick `transform_kernel<float, 4` by its template arguments, extract with its
# source, validate (strong + fuzz), replay, lint, baseline; a wrong edit + `make recompile`
# must FAIL, the original back must PASS with fuzzing and diff; a refusal is an input error.
# Prints one PASS/FAIL/SKIP line per step and "N passed, N failed". Exit 0 all passed,
# 1 some failed, 77 skipped (no GPU).
#
#   tests/gpu/agent_e2e.sh BUILD_DIR
#
# Environment: OUT (work under it), KERNCAP_PYTHON (default python3), NVCC, KERNCAP_CUDA_ARCH
# (default 90).
set -u -o pipefail

BUILD=${1:?usage: tests/gpu/agent_e2e.sh BUILD_DIR}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_build "$BUILD"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${KERNCAP_PYTHON:-python3}
ARCH=${KERNCAP_CUDA_ARCH:-90}
[ -x "$KC" ] || { echo "missing $KC"; exit 1; }
gpu_work_dir agent
echo "agent playbook suite: work in $WORK"

# The application and its compilation database, so that extract finds and recompiles the source.
SRC=$WORK/src
mkdir -p "$SRC"
cp "$REPO/examples/templated.cu" "$REPO/examples/common.cuh" "$SRC/"
CMD="$NVCC -O2 -std=c++17 -arch=sm_$ARCH -I$SRC -o $WORK/templated $SRC/templated.cu"
cat >"$SRC/compile_commands.json" <<JSON
[{"directory": "$SRC", "command": "$CMD", "file": "$SRC/templated.cu"}]
JSON
if ! $CMD >"$WORK/nvcc.log" 2>&1; then
  verdict build FAIL "$(tail -n 3 "$WORK/nvcc.log" | tr '\n' ' ')"
  summary
  exit 1
fi

"$PY" "$HERE/agent_flow.py" "$KC" "$WORK/templated" "$SRC" "$SRC/compile_commands.json" "$WORK"
rc=$?
[ $rc -eq 0 ] && [ "${KERNCAP_GPU_KEEP:-0}" != 1 ] && rm -rf "$WORK"
exit $rc
