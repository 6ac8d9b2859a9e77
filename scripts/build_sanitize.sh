#!/usr/bin/env bash
# Configures and builds the 'sanitize' preset into ./build-sanitize: clang-14 with AddressSanitizer +
# UndefinedBehaviorSanitizer, every C++ test, and the libFuzzer targets of fuzz/ (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j"$(nproc)"
