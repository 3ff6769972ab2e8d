#!/usr/bin/env bash
# bench/build_brotli11.sh [BUILD]: a release build of this tree linked, as the
# release binaries are, against Debian 13's brotli 1.1.0 and Debian 12's other
# static libraries, so that it can write .dcb (Debian 12's own libbrotli-dev is
# 1.0.9, which has no dictionary encoder: a plain `meson setup` here writes
# .dcz only). For bench/delta.sh:
#
#   bench/build_brotli11.sh && bench/delta.sh build-bench/src/cli/precompress
#
# The libraries come from the private prefix dist/release.sh fills (fetched
# here with dist/debian_fetch.py when it is missing: signed Debian indexes,
# into PC_RELEASE_CACHE). BUILD defaults to build-bench in this tree.
# PC_B11_TESTS=true builds the tests too (.ci/run runs the delta tests in it).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BUILD=${1:-$ROOT/build-bench}
cache=${PC_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/precompress-release}
arch=$(uname -m)
tri=$arch-linux-gnu
prefix=$cache/prefix-$arch

die() { echo "bench/build_brotli11: $*" >&2; exit 1; }

case $arch in x86_64) da=amd64 ;; aarch64) da=arm64 ;; *) die "no Debian architecture for $arch" ;; esac
if ! grep -qs '^Version: 1\.1\.' "$prefix/usr/lib/$tri/pkgconfig/libbrotlienc.pc"; then
    (
        cd "$ROOT"
        dist/debian_fetch.py --suite bookworm --arch "$da" --prefix "$prefix" --cache "$cache/debs" \
            zlib1g-dev libuv1-dev libzstd-dev libsqlite3-dev libjansson-dev libxxhash-dev \
            libdeflate-dev libzopfli-dev
        dist/debian_fetch.py --suite trixie --arch "$da" --prefix "$prefix" --cache "$cache/debs" \
            libbrotli-dev=1.1.0
    ) >&2
fi

native=$cache/native-$arch.ini
cat >"$native" <<EOF
[binaries]
pkgconfig = 'pkg-config'
[built-in options]
c_args = ['-I$prefix/usr/include', '-I$prefix/usr/include/$tri']
c_link_args = ['-L$prefix/usr/lib/$tri', '-L$prefix/usr/lib']
pkg_config_path = []
[properties]
pkg_config_libdir = ['$prefix/usr/lib/$tri/pkgconfig', '$prefix/usr/share/pkgconfig']
lib_dirs = ['$prefix/usr/lib/$tri', '$prefix/usr/lib']
EOF
if [[ ! -f $BUILD/build.ninja ]]; then
    rm -rf "$BUILD"
    PKG_CONFIG_LIBDIR=$prefix/usr/lib/$tri/pkgconfig \
        meson setup "$BUILD" "$ROOT" --native-file "$native" --buildtype=release \
        -Dstatic=true -Dtests="${PC_B11_TESTS:-false}" -Dwerror=true -Dzstd=enabled >/dev/null
fi
ninja -C "$BUILD" >/dev/null
v=$("$BUILD/src/cli/precompress" -V)
case $v in *"brotli 1.1"*) echo "$v" ;; *) die "-V says: $v" ;; esac
