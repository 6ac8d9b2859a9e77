#!/usr/bin/env bash
# Installs everything simreplay needs on Debian 12, from Debian's archive only. Idempotent: packages
# already present are left alone. Run as root (or through sudo).
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  # compiler cache: a clean clone rebuilds from the cache of an earlier build (scripts/ccache_env.sh)
  ccache
  # C++ libraries
  libsimgrid-dev libeigen3-dev libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev zlib1g-dev
  libgtest-dev libbenchmark-dev
  # malloc for the simulating programs (1.7x faster at 1024 ranks, docs/performance.md)
  libtcmalloc-minimal4
  # sanitizer build and fuzzing (docs/reliability.md): clang, its ASan/UBSan/libFuzzer runtimes, and
  # llvm-symbolizer for readable sanitizer stack traces
  clang-14 libclang-rt-14-dev llvm-14
  # capture package, bench pipeline and its real media
  python3 python3-torch python3-torchvision python3-av python3-lmdb python3-h5py python3-psutil
  python3-numpy python3-pil python3-pytest python3-crcmod opencv-doc
  # the real-Slurm test of sharded sweeps (ctest slurm_sweep starts its own private daemons)
  slurm-wlm munge
  # the network-namespace harness of the multi-node validation (ip netns, veth, bridge, tc)
  iproute2
  # headless browser: the plan and diagnosis reports' rendering tests
  chromium
  # the advice validation's storage-bound pipeline: a real FUSE file system with object-store latency
  # (validation/advice/slowfs.py)
  fuse3 python3-fusepy
  # the real HTTP object server of the remote-storage tests and validation (validation/remote/): nginx,
  # and its Lua module for the server-side first-byte latency
  nginx libnginx-mod-http-lua
  # the S3 probe (simreplay probe storage s3://...: simreplay_capture.probe_s3, through boto3)
  python3-boto3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
