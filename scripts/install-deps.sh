#!/usr/bin/env bash
# Installs kerncap's build dependencies on Debian 12 (the CUDA 13 toolkit must already be
# under /usr/local/cuda or on PATH). Safe to run again.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(cmake ninja-build g++ pkg-config libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      libxxhash-dev libzstd-dev python3 python3-pytest)
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
