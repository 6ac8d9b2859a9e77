# Sourced by the build scripts: ccache settings under which a clean clone of this tree at any path hits
# the cache that an earlier build filled (docs/reliability.md, "Build cache"). Paths under the tree are
# hashed relative to it (CCACHE_BASEDIR), the working directory is left out of the hash
# (CCACHE_NOHASHDIR), and the cache lives outside the tree, so a fresh clone does not start empty.
_simreplay_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$_simreplay_root}"
export CCACHE_NOHASHDIR=true
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/simreplay-ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-6G}"
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
unset _simreplay_root
