#!/usr/bin/env bash
# Make every artefact of a release (dist/README.md lists them) from the
# commit checked out, on a Debian 12 machine with Debian's archive in reach:
#
#   dist/release.sh VERSION [OUT]        (OUT: dist/out/VERSION)
#
# VERSION must be include/precompress.h's (dist/version.py prints it). What
# is built is HEAD as `git archive` gives it, never the working tree's
# uncommitted changes, so that a release is exactly a commit. Outputs are
# reproducible: timestamps are the commit's (SOURCE_DATE_EPOCH), archives
# sorted and owned by 0.
#
# The libraries linked in come from Debian's archive, checked from its
# signature down and unpacked into a private prefix per architecture
# (dist/debian_fetch.py): Debian 12's static archives of zlib, libuv, zstd,
# sqlite, jansson, xxhash, libdeflate, zopfli, OpenSSL and c-ares, and Debian
# 13's brotli 1.1.0 (its dictionary API); and a static libcurl built here
# from Debian 12's curl source package (static_curl below). Nothing is
# installed on the system for them, and the machine's own -dev packages are
# not used. The tools (compilers, qemu-user, podman; Node.js and npm for
# `npm pack`) are `.ci/deps release`.
#
# Environment: PC_RELEASE_CACHE (downloaded packages; default
# ~/.cache/precompress-release), PC_RELEASE_ARCHES (default
# "x86_64 aarch64"), PC_RELEASE_IMAGE=0 to make no image (no podman).
set -euo pipefail

die() { echo "release.sh: $*" >&2; exit 1; }
step() { echo "== $*" >&2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: dist/release.sh VERSION [OUT]"
cd "$(dirname "$0")/.."
root=$PWD
version=$1
want=$(dist/version.py)
[ "$version" = "$want" ] || die "VERSION $version is not the version in include/precompress.h ($want)"
out=${2:-dist/out/$version}
case $out in /*) ;; *) out=$root/$out ;; esac
cache=${PC_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/precompress-release}
arches=${PC_RELEASE_ARCHES:-x86_64 aarch64}
started=$(date +%s)

git rev-parse --verify -q HEAD >/dev/null || die "not a git checkout with a commit"
commit=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "release.sh: note: uncommitted changes are not in the release (it is $commit)" >&2
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
export TZ=UTC LC_ALL=C.UTF-8

.ci/deps release >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/precompress-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
git archive --format=tar HEAD | tar -C "$work/src" -xf -
rm -rf "$out"
mkdir -p "$out"

# Debian's names for an architecture, its GNU triplet and its toolchain.
deb_arch() { case $1 in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) die "no such architecture: $1" ;; esac; }
triplet() { echo "$1-linux-gnu"; }

# 1. The libraries, per architecture, into $cache/prefix-ARCH (from the
#    packages' signed indexes; a second release downloads nothing new).
#    What was unpacked ("SUITE ARCH PACKAGE (VERSION)" lines) goes to
#    $work/packages-ARCH: the codec packages' lines become -Dcodec_id, so
#    the remote cache's key names the build of the codecs linked in.
fetch_libs() {
  local arch=$1 prefix=$2 da
  da=$(deb_arch "$arch")
  rm -rf "$prefix"
  dist/debian_fetch.py --suite bookworm --arch "$da" --prefix "$prefix" --cache "$cache/debs" \
    zlib1g-dev libuv1-dev libzstd-dev libsqlite3-dev libjansson-dev libxxhash-dev \
    libdeflate-dev libzopfli-dev libssl-dev libc-ares-dev | tee "$work/packages-$arch" >&2
  dist/debian_fetch.py --suite trixie --arch "$da" --prefix "$prefix" --cache "$cache/debs" \
    libbrotli-dev=1.1.0 | tee -a "$work/packages-$arch" >&2
}

# 1b. libcurl for --cache-url, static: Debian 12's curl source package (the
#     upstream tarball and Debian's patches, security fixes included, checked
#     from the archive's signature down) built against the prefix's static
#     OpenSSL, zlib and c-ares alone, HTTP and HTTPS only. c-ares resolves
#     names itself (/etc/resolv.conf, /etc/hosts): glibc's getaddrinfo would
#     load NSS modules, which a static program must not. Debian's own
#     libcurl.a cannot be linked statically: it needs nghttp2, libidn2,
#     librtmp, libssh2, libpsl, GSSAPI and LDAP, whose static archives Debian
#     does not all ship. Built once per architecture, curl version and
#     configuration into $cache, then installed into the prefix. No CA path
#     is built in: src/store/remote.c finds the system's bundle at run time.
curl_conf=(
  --disable-shared --enable-static --with-openssl --with-zlib --enable-ares
  --without-libpsl --without-brotli --without-zstd --without-nghttp2 --without-nghttp3
  --without-ngtcp2 --without-libidn2 --without-librtmp --without-libssh2 --without-libssh
  --without-gssapi --without-libgsasl --without-hyper --without-ca-bundle --without-ca-path
  --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp
  --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt
  --disable-ftp --disable-file --disable-manual --disable-ntlm --disable-ntlm-wb
  --disable-netrc --disable-cookies --disable-alt-svc --disable-hsts --disable-doh
  --disable-mime --disable-dateparse --disable-progress-meter --disable-unix-sockets
)
static_curl() {
  local arch=$1 prefix=$2 cross=$3 tri src ver dir b host=()
  tri=$(triplet "$arch")
  src=$work/curl-src
  if [ ! -d "$src" ]; then
    dist/debian_fetch.py --suite bookworm --arch "$(deb_arch "$arch")" --source "$src" \
      --cache "$cache/debs" curl >&2
  fi
  ver=$(sed -n 's/^Version: //p' "$src"/curl_*.dsc)
  dir=$cache/curl-$arch-$ver-$(printf '%s\n' "${curl_conf[@]}" | sha256sum | cut -c1-12)
  if [ ! -f "$dir/usr/lib/$tri/libcurl.a" ]; then
    step "$arch: libcurl $ver (static; once, then from $cache)"
    b=$work/curl-$arch
    rm -rf "$b" "$dir.tmp"
    mkdir -p "$b"
    tar -C "$b" -xzf "$src"/curl_*.orig.tar.gz
    b=$(echo "$b"/curl-*)
    tar -C "$b" -xJf "$src"/curl_*.debian.tar.xz
    sed -e 's/#.*//' "$b/debian/patches/series" | while read -r p; do
      [ -z "$p" ] || patch -d "$b" -p1 -s -N <"$b/debian/patches/$p" || exit 1
    done || die "$arch: Debian's curl patches do not apply"
    [ "$cross" = 1 ] && host=(--host="$tri")
    (cd "$b" &&
      PKG_CONFIG_LIBDIR="$prefix/usr/lib/$tri/pkgconfig" \
        CPPFLAGS="-I$prefix/usr/include -I$prefix/usr/include/$tri" \
        LDFLAGS="-L$prefix/usr/lib/$tri" \
        ./configure "${host[@]}" --prefix=/usr --libdir="/usr/lib/$tri" "${curl_conf[@]}" &&
      make -j"$(nproc)" -C lib &&
      make -C lib install DESTDIR="$dir.tmp" &&
      make -C include install DESTDIR="$dir.tmp" &&
      make install-pkgconfigDATA DESTDIR="$dir.tmp") >"$work/curl-$arch.log" 2>&1 ||
      { tail -30 "$work/curl-$arch.log" >&2; die "$arch: libcurl's build failed"; }
    rm -f "$dir.tmp/usr/lib/$tri/libcurl.la"
    mv "$dir.tmp" "$dir"
  fi
  cp -a "$dir/usr/." "$prefix/usr/"
  # Its pkg-config file into the prefix, as debian_fetch.py does the packages'.
  sed -i -E "s#^(\w+)=/usr(/|\$)#\1=$prefix/usr\2#" "$prefix/usr/lib/$tri/pkgconfig/libcurl.pc"
}

# What identifies the codecs' build: their Debian packages and versions.
codec_id() {
  grep -E ' (zlib1g-dev|libbrotli-dev|libzstd-dev|libdeflate-dev|libzopfli-dev) ' \
    "$work/packages-$1" | sed 's/ *$//' | paste -sd ';' -
}

# 2. A meson machine file: the compiler, and the prefix's headers and static
#    archives before the system's (pkg-config sees only the prefix's .pc).
machine_file() {
  local arch=$1 prefix=$2 file=$3 tri cross=0
  tri=$(triplet "$arch")
  [ "$arch" = "$(uname -m)" ] || cross=1
  {
    echo "[binaries]"
    if [ $cross = 1 ]; then
      echo "c = '$tri-gcc'"
      echo "ar = '$tri-gcc-ar'"
      echo "strip = '$tri-strip'"
    fi
    echo "pkgconfig = 'pkg-config'"
    echo "[built-in options]"
    echo "c_args = ['-I$prefix/usr/include', '-I$prefix/usr/include/$tri']"
    echo "c_link_args = ['-L$prefix/usr/lib/$tri', '-L$prefix/usr/lib']"
    echo "pkg_config_path = []"
    echo "[properties]"
    echo "pkg_config_libdir = ['$prefix/usr/lib/$tri/pkgconfig', '$prefix/usr/share/pkgconfig']"
    # meson.build's find_library() (zopfli, which has no .pc) looks here first.
    echo "lib_dirs = ['$prefix/usr/lib/$tri', '$prefix/usr/lib']"
    if [ $cross = 1 ]; then
      echo "[host_machine]"
      echo "system = 'linux'"
      echo "cpu_family = '$arch'"
      echo "cpu = '$arch'"
      echo "endian = 'little'"
    fi
  } >"$file"
  echo $cross
}

# 3. The static program for one architecture, checked: statically linked,
#    runs (under qemu-user when foreign), links brotli 1.1.0.
build_one() {
  local arch=$1 prefix=$cache/prefix-$1 build=$work/build-$1 mf=$work/$1.ini cross run strip
  step "$arch: libraries"
  fetch_libs "$arch" "$prefix"
  cross=$(machine_file "$arch" "$prefix" "$mf")
  static_curl "$arch" "$prefix" "$cross"
  step "$arch: build"
  if [ "$cross" = 1 ]; then mfopt=(--cross-file "$mf"); else mfopt=(--native-file "$mf"); fi
  PKG_CONFIG_LIBDIR="$prefix/usr/lib/$(triplet "$arch")/pkgconfig" \
    meson setup "$build" "$work/src" "${mfopt[@]}" --buildtype=release -Db_lto=true \
    -Dstatic=true -Dtests=false -Dzstd=enabled -Dlibdeflate=enabled -Dzopfli=enabled \
    -Dcurl=enabled -Dcodec_id="$(codec_id "$arch")" >"$work/setup-$arch.log" 2>&1 ||
    { tail -40 "$work/setup-$arch.log" >&2; die "$arch: meson setup failed"; }
  meson compile -C "$build" >"$work/compile-$arch.log" 2>&1 ||
    { tail -40 "$work/compile-$arch.log" >&2; die "$arch: build failed"; }
  if grep -i "warning" "$work/compile-$arch.log" >&2; then die "$arch: the link warned (above)"; fi
  strip=strip
  [ "$cross" = 1 ] && strip=$(triplet "$arch")-strip
  mkdir -p "$work/bin-$arch"
  "$strip" -o "$work/bin-$arch/precompress" "$build/src/cli/precompress"
  file -b "$work/bin-$arch/precompress" | grep -q "statically linked" ||
    die "$arch: not statically linked: $(file -b "$work/bin-$arch/precompress")"
  run=()
  [ "$cross" = 1 ] && run=("qemu-$arch-static")
  local v
  v=$("${run[@]}" "$work/bin-$arch/precompress" -V)
  echo "$arch: $v" >&2
  case $v in "precompress $version ("*"brotli 1.1.0"*"remote cache: libcurl"*) ;; *) die "$arch: -V says: $v" ;; esac
  cp "$build/man/precompress.1" "$work/precompress.1"
}

# 4. The tarball of one architecture: binary, man page, completions, texts.
tarball() {
  local arch=$1 name=precompress-$version-linux-$1 d
  d=$work/stage/$name
  mkdir -p "$d/completions"
  install -m 755 "$work/bin-$arch/precompress" "$d/precompress"
  install -m 644 "$work/precompress.1" "$d/precompress.1"
  install -m 644 "$work/src/src/cli/completions/precompress.bash" \
    "$work/src/src/cli/completions/_precompress" \
    "$work/src/src/cli/completions/precompress.fish" "$d/completions/"
  install -m 644 "$work/src/LICENSE" "$work/src/README.md" "$work/src/CHANGELOG.md" "$d/"
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --format=gnu -C "$work/stage" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
}

# 5. The wheel of one architecture (python/build_backend.py with the binary
#    built above), and the sdist.
wheel() {
  local arch=$1
  (cd "$work/src" && python3 -c '
import sys
sys.path.insert(0, "python")
import build_backend
print(build_backend.build_wheel(sys.argv[1], {"binary": sys.argv[2], "arch": sys.argv[3], "man": sys.argv[4]}))
' "$out" "$work/bin-$arch/precompress" "$arch" "$work/precompress.1") >&2
}
sdist() {
  (cd "$work/src" && python3 -c '
import sys
sys.path.insert(0, "python")
import build_backend
print(build_backend.build_sdist(sys.argv[1]))
' "$out") >&2
}

# 5b. The npm packages (dist/npm_pack.py, with `npm pack`): one per
#     architecture holding its program, and @precompress/cli (npm/cli/) with
#     them as optional dependencies at this version.
npm_packages() {
  local arch args=()
  for arch in $arches; do args+=("$arch=$work/bin-$arch/precompress"); done
  (cd "$work/src" && python3 dist/npm_pack.py "$version" "$out" "${args[@]}") >&2
}

# 6. The image: FROM scratch, the binary and its licence, one per
#    architecture, in one OCI archive with an index (podman needs no
#    emulation: nothing runs at build time).
image() {
  local arch tag=localhost/precompress-release:$version-$$ ctx da images=()
  podman manifest rm "$tag" >/dev/null 2>&1 || true
  podman manifest create "$tag" >/dev/null
  for arch in $arches; do
    da=$(deb_arch "$arch")
    ctx=$work/image-$arch
    mkdir -p "$ctx"
    cp "$work/bin-$arch/precompress" "$work/src/LICENSE" "$ctx/"
    cat >"$ctx/Containerfile" <<EOF
FROM scratch
COPY LICENSE /LICENSE
COPY precompress /precompress
LABEL org.opencontainers.image.title="precompress" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$commit" \\
      org.opencontainers.image.licenses="MIT"
ENTRYPOINT ["/precompress"]
EOF
    podman build --quiet --isolation chroot --platform "linux/$da" --timestamp "$SOURCE_DATE_EPOCH" \
      -t "$tag-$da" "$ctx" >&2
    images+=("$tag-$da")
    podman manifest add "$tag" "containers-storage:$tag-$da" >/dev/null
  done
  # An OCI layout directory, then tarred as the other archives are (sorted,
  # the commit's time, owner 0): podman's own oci-archive stamps the push
  # time on every entry, and the release would differ run to run.
  podman manifest push --all --quiet "$tag" "oci:$work/oci:precompress:$version" >&2
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --format=gnu -C "$work/oci" -cf "$out/precompress-$version-oci.tar" oci-layout index.json blobs
  podman manifest rm "$tag" >/dev/null
  podman rmi "${images[@]}" >/dev/null
}

for arch in $arches; do
  build_one "$arch"
  step "$arch: tarball and wheel"
  tarball "$arch"
  wheel "$arch"
done
step "sdist"
sdist
step "npm packages"
npm_packages
if [ "${PC_RELEASE_IMAGE:-1}" != 0 ]; then
  step "image"
  image
fi
step "SHA256SUMS"
(cd "$out" && find . -maxdepth 1 -type f -printf '%f\n' | sort | xargs sha256sum >"$work/SHA256SUMS")
mv "$work/SHA256SUMS" "$out/SHA256SUMS"
echo "release.sh: precompress $version ($commit) in $out, $(($(date +%s) - started)) s:" >&2
(cd "$out" && ls -l --time-style=+ | tail -n +2 | awk '{print "  " $5 "\t" $NF}') >&2
