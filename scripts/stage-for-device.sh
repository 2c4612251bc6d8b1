#!/usr/bin/env bash
# Copies what the GPU machine needs from a build tree (bin/, lib/, examples/), stripped of
# debug info so it fits the device tool's 64 MiB transfer limit: stage-for-device.sh BUILD DEST
set -euo pipefail
build=${1:?build dir}; dest=${2:?destination}
rm -rf "$dest"; mkdir -p "$dest"; dest=$(cd "$dest" && pwd)
for d in bin lib examples bench tests/fixtures; do
  [ -d "$build/$d" ] || continue
  mkdir -p "$dest/$d"
  (cd "$build/$d" && find . -type f ! -path "*CMakeFiles*" ! -name "*.cmake" ! -name "*.o" -exec cp -p --parents {} "$dest/$d/" \;)
done
find "$dest" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'file -b "$1" | grep -q ELF && objcopy --strip-debug "$1"' _ {} \;
du -sh "$dest"
