#!/usr/bin/env bash
# Installs kerncap's build dependencies on Debian 12 (the CUDA 13 toolkit must already be
# under /usr/local/cuda or on PATH) and creates the project's Python environment, .venv/
# (Debian's python3 is externally managed: `pip install .` goes into a venv). Safe to run again.
# Then: .venv/bin/pip install '.[test]'  (README "Set up").
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(cmake ninja-build g++ pkg-config libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      libxxhash-dev libzstd-dev libtomlplusplus-dev python3 python3-venv python3-pytest
      chromium)  # a real headless browser: the report page's test (python/tests/test_report.py)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA 13 toolkit (nvcc, cuda.h, CUPTI) was not found under /usr/local/cuda" >&2
  exit 1
fi

# The Compute Sanitizer API (`kerncap footprint`): the wheel matching the CUDA 13.0 toolkit,
# unpacked with pip --target into .deps/ (project-local, no system or user site touched;
# Debian's python3 is externally managed). CMake looks there by default
# (KERNCAP_SANITIZER_ROOT). KERNCAP_DEPS_DIR moves it, e.g. to a shared cache.
SANITIZER_VERSION=13.0.85
deps_dir=${KERNCAP_DEPS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps}
sanitizer_dir=$deps_dir/sanitizer-api
if [ ! -f "$sanitizer_dir/nvidia/cu13/lib/libsanitizer-public.so" ] ||
   ! grep -qs "^Version: $SANITIZER_VERSION\$" "$sanitizer_dir"/nvidia_cuda_sanitizer_api-*.dist-info/METADATA; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip
  fi
  rm -rf "$sanitizer_dir"
  python3 -m pip install --quiet --no-deps --disable-pip-version-check --target "$sanitizer_dir" \
    "nvidia-cuda-sanitizer-api==$SANITIZER_VERSION"
fi
echo "install-deps: Compute Sanitizer API $SANITIZER_VERSION in $sanitizer_dir/nvidia/cu13"
if [ -n "${KERNCAP_DEPS_DIR:-}" ]; then
  echo "install-deps: configure with -DKERNCAP_SANITIZER_ROOT=$sanitizer_dir/nvidia/cu13"
fi

# SASS disassemblers for `kerncap lint` (nvdisasm; cuobjdump -sass runs it): the CUDA 13 wheels,
# pinned, beside the sanitizer in .deps/ (a toolkit without them is common). The build copies
# them next to bin/kerncap, where lint looks first.
TOOLS_VERSION=13.2.51
tools_dir=$deps_dir/cuda-tools
if [ ! -x "$tools_dir/nvidia/cu13/bin/nvdisasm" ]; then
  rm -rf "$tools_dir"
  python3 -m pip install --quiet --no-deps --disable-pip-version-check --target "$tools_dir" \
    "nvidia-cuda-nvdisasm==$TOOLS_VERSION" "nvidia-cuda-cuobjdump==13.4.92"
fi
echo "install-deps: nvdisasm and cuobjdump in $tools_dir/nvidia/cu13/bin"

# The project's Python environment: `pip install .` builds kerncap (scikit-build-core runs this
# CMake project in build/) and installs the `kerncap` command and the Python package into it.
# KERNCAP_VENV moves it; an existing one is kept.
venv=${KERNCAP_VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv}
if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
echo "install-deps: Python environment $venv (next: $venv/bin/pip install '.[test]')"
