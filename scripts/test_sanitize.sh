#!/usr/bin/env bash
# Runs every C++ test (ctest label "quick": all GoogleTest suites, the end-to-end CLI tests included)
# of ./build-sanitize under ASan + UBSan with the options of the 'sanitize' test preset. Any sanitizer
# report aborts its test, so the run fails on it. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --preset sanitize -j"$(nproc)" "$@"
