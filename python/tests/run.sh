#!/usr/bin/env bash
# Runs the Python unit tests (python/tests) with the first interpreter that has pytest:
# $KERNCAP_PYTHON, python3, /usr/bin/python3 (Debian's python3-pytest, installed by
# scripts/install-deps.sh). Tests that need Triton skip when it is not importable.
# Exit 77 (skipped) when no interpreter has pytest.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for py in ${KERNCAP_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import pytest' 2>/dev/null; then
    cd "$HERE/.." && exec "$py" -m pytest -q -p no:cacheprovider tests "$@"
  fi
done
echo "SKIPPED: no python3 with pytest (apt-get install python3-pytest)"
exit 77
