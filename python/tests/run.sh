#!/usr/bin/env bash
# Runs the Python unit tests (python/tests) with the first interpreter that has pytest:
# $KERNCAP_PYTHON, the project's environment ($KERNCAP_VENV or .venv, made by
# scripts/install-deps.sh; `pip install '.[test]'` puts pytest there), python3, /usr/bin/python3
# (Debian's python3-pytest). Tests that need Triton skip when it is not importable.
# - An interpreter that imports kerncap by itself (pip install . or -e .) tests that installed
#   package (--installed): python/ is not put on sys.path, the package finds its own engine
#   and the `kerncap` command comes from the environment's bin/.
# - Otherwise the tests import python/kerncap of this checkout. Run from inside a CMake build
#   tree (CTest does: its working directory is BUILD/tests), they use that tree's
#   lib/libkerncap_replay.so and fail when it is missing; elsewhere they use the newest
#   build*/lib of the source tree and skip the engine's tests without one.
# Exit 77 (skipped) when no interpreter has pytest.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VENV=${KERNCAP_VENV:-$ROOT/.venv}
ENGINE=()
dir=$PWD
while [ "$dir" != / ]; do
  if [ -f "$dir/CMakeCache.txt" ]; then
    ENGINE=(--engine-lib "$dir/lib/libkerncap_replay.so")
    break
  fi
  dir=$(dirname "$dir")
done
for py in ${KERNCAP_PYTHON:-} "$VENV/bin/python" python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import pytest' 2>/dev/null; then
    if (cd / && "$py" -c 'import kerncap' 2>/dev/null); then
      # From the repository root: neither python/ nor python/tests' parent is on sys.path.
      bin=$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
      cd "$ROOT" && PATH="$bin:$PATH" exec "$py" -m pytest -q -p no:cacheprovider python/tests --installed "$@"
    fi
    cd "$HERE/.." && exec "$py" -m pytest -q -p no:cacheprovider tests "${ENGINE[@]}" "$@"
  fi
done
echo "SKIPPED: no python3 with pytest (apt-get install python3-pytest, or scripts/install-deps.sh and .venv/bin/pip install '.[test]')"
exit 77
