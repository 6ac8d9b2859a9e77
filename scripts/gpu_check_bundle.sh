#!/usr/bin/env bash
# scripts/gpu_check_bundle.sh [BINARY] [DIR]: the simreplay binary (default build/simreplay) with the
# shared libraries it links that a CUDA image lacks (SimGrid, fmt, Boost, ns-3 and theirs; not libc,
# libm, libstdc++ or libgcc_s, which the machine's newer ones serve) in DIR (default .devlibs), stripped,
# and DIR/simreplay, a wrapper that sets LD_LIBRARY_PATH for the binary alone (torch in the same
# process tree must keep its own libraries). On the device machine: carry DIR and run
# SIMREPLAY=$PWD/DIR/simreplay scripts/gpu_check.sh (docs/gpu-check.md). DIR should be ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/simreplay}
dir=${2:-.devlibs}
[ -x "$bin" ] || { echo "gpu_check_bundle: no executable $bin (build it first: scripts/build.sh)" >&2; exit 2; }
rm -rf "$dir"
mkdir -p "$dir"
ldd "$bin" | awk '/=>/ {print $3}' | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s)\.so|ld-linux' | xargs -r -I{} cp -L {} "$dir"/
cp "$bin" "$dir/simreplay.bin"
strip "$dir"/*.so* "$dir/simreplay.bin" 2>/dev/null || true
cat >"$dir/simreplay" <<'WRAP'
#!/bin/sh
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/simreplay.bin" "$@"
WRAP
chmod +x "$dir/simreplay"
"$dir/simreplay" --version >/dev/null
echo "gpu_check_bundle: $dir ($(du -sh "$dir" | cut -f1)): carry it and set SIMREPLAY=\$PWD/$dir/simreplay"
