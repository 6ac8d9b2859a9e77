#!/usr/bin/env bash
# Configures and builds simreplay into ./build (Release with debug info, the CLI and every test). A clean
# build, so the libraries are unity-built; compiles go through ccache when it is installed
# (scripts/ccache_env.sh: a clean clone at another path hits the cache of an earlier build). For
# day-to-day incremental work configure your own tree with -DSIMREPLAY_UNITY_BUILD=OFF.
#   SIMREPLAY_BUILD_BENCHMARKS=ON scripts/build.sh   also builds the Google Benchmark binaries
#                                                    (docs/performance.md; CI runs none of them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMREPLAY_UNITY_BUILD=ON \
  -DSIMREPLAY_BUILD_BENCHMARKS="${SIMREPLAY_BUILD_BENCHMARKS:-OFF}" >/dev/null
cmake --build build -j"$(nproc)"
