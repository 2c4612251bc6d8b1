#!/usr/bin/env bash
# Runs the Python unit tests (python/tests) with the first interpreter that has pytest:
# $KERNCAP_PYTHON, python3, /usr/bin/python3 (Debian's python3-pytest, installed by
# scripts/install-deps.sh). Tests that need Triton skip when it is not importable.
# Run from inside a CMake build tree (CTest does: its working directory is BUILD/tests), the
# tests use that tree's lib/libkerncap_replay.so and fail when it is missing; elsewhere they
# use the newest build*/lib of the source tree and skip the engine's tests without one.
# Exit 77 (skipped) when no interpreter has pytest.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ENGINE=()
dir=$PWD
while [ "$dir" != / ]; do
  if [ -f "$dir/CMakeCache.txt" ]; then
    ENGINE=(--engine-lib "$dir/lib/libkerncap_replay.so")
    break
  fi
  dir=$(dirname "$dir")
done
for py in ${KERNCAP_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import pytest' 2>/dev/null; then
    cd "$HERE/.." && exec "$py" -m pytest -q -p no:cacheprovider tests "${ENGINE[@]}" "$@"
  fi
done
echo "SKIPPED: no python3 with pytest (apt-get install python3-pytest)"
exit 77
