#!/usr/bin/env python3
"""Unpack Debian packages into a private prefix, checked from the archive's signature down.

    dist/debian_fetch.py --suite trixie --arch amd64 --prefix DIR [--cache DIR] PKG[=UPSTREAM]...

For each PKG: the suite's InRelease is checked with gpgv against the Debian archive keyring
(debian-archive-keyring), the Packages index for ARCH is checked against the SHA-256 that
InRelease gives it, the .deb against the SHA-256 the index gives it; then `dpkg-deb -x` unpacks
it into DIR (nothing is installed on the system: no maintainer script runs, dpkg's database is
untouched). `PKG=1.1.0` fails unless the suite's version of PKG is upstream 1.1.0 (any Debian
revision: a point release may patch it, as 1.1.0-2+deb13u1 does).

The pkg-config files unpacked are rewritten to point into DIR (prefix=/usr becomes
prefix=DIR/usr, likewise any variable set to a path under /usr), so that PKG_CONFIG_LIBDIR=DIR/usr/lib/TRIPLET/pkgconfig finds the
prefix's libraries, headers and static archives and nothing of the system's.

With --source DIR, each PKG names a source package instead: its files (.dsc, the upstream
tarball, Debian's changes), from the suite's Sources index checked the same way, are put in
DIR, and nothing is unpacked (dist/release.sh builds curl from the upstream tarball).

Downloads are kept in --cache (default: DIR/../debs) by the SHA-256 they must have, so a
second run fetches nothing. Only the standard library, gpgv and dpkg-deb are used.
"""
import argparse
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

MIRROR = os.environ.get("PC_DEBIAN_MIRROR", "http://deb.debian.org/debian")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def fail(msg):
    sys.exit("debian_fetch: " + msg)


def fetch(url, dest):
    tmp = dest + ".part"
    try:
        with urllib.request.urlopen(url, timeout=120) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
    except OSError as e:
        fail("%s: %s" % (url, e))
    os.replace(tmp, dest)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached(cache, url, digest=None):
    """url's body at a path in cache; with digest, checked (and kept under it)."""
    name = digest or hashlib.sha256(url.encode()).hexdigest() + "-" + os.path.basename(url)
    path = os.path.join(cache, name)
    if digest is not None and os.path.exists(path) and sha256(path) == digest:
        return path
    if digest is None and os.path.exists(path):
        os.unlink(path)  # an unsigned index is fetched afresh every time
    fetch(url, path)
    if digest is not None and sha256(path) != digest:
        os.unlink(path)
        fail("%s: SHA-256 is not the one the archive's signed index gives" % url)
    return path


def release_hashes(cache, suite):
    """{path: sha256} of the suite's InRelease, after gpgv has checked its signature."""
    inrelease = cached(cache, "%s/dists/%s/InRelease" % (MIRROR, suite))
    with tempfile.NamedTemporaryFile(dir=cache) as out:
        p = subprocess.run(["gpgv", "--keyring", KEYRING, "--output", out.name, inrelease],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            fail("%s's InRelease: the signature does not check against %s:\n%s"
                 % (suite, KEYRING, p.stdout.decode(errors="replace")))
        text = open(out.name, encoding="utf-8").read()  # the signed part only
    hashes, section = {}, None
    for line in text.splitlines():
        if not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section == "SHA256":
            digest, _size, path = line.split()
            hashes[path] = digest
    return hashes


def packages(cache, suite, arch, hashes):
    """{name: {field: value}} of main's Packages index for arch."""
    path = "main/binary-%s/Packages.xz" % arch
    if path not in hashes:
        fail("%s has no %s" % (suite, path))
    index = cached(cache, "%s/dists/%s/%s" % (MIRROR, suite, path), hashes[path])
    out, cur, last = {}, {}, None
    for line in lzma.open(index, "rt", encoding="utf-8"):
        line = line.rstrip("\n")
        if not line:
            if "Package" in cur:
                out.setdefault(cur["Package"], cur)
            cur, last = {}, None
        elif line[0] in " \t":
            if last:
                cur[last] += "\n" + line
        else:
            last, _, value = line.partition(":")
            cur[last] = value.strip()
    if "Package" in cur:
        out.setdefault(cur["Package"], cur)
    return out


def sources(cache, suite, hashes):
    """{name: {field: value}} of main's Sources index."""
    path = "main/source/Sources.xz"
    if path not in hashes:
        fail("%s has no %s" % (suite, path))
    index = cached(cache, "%s/dists/%s/%s" % (MIRROR, suite, path), hashes[path])
    out, cur, last = {}, {}, None
    for line in lzma.open(index, "rt", encoding="utf-8"):
        line = line.rstrip("\n")
        if not line:
            if "Package" in cur:
                out.setdefault(cur["Package"], cur)
            cur, last = {}, None
        elif line[0] in " \t":
            if last:
                cur[last] += "\n" + line
        else:
            last, _, value = line.partition(":")
            cur[last] = value.strip()
    if "Package" in cur:
        out.setdefault(cur["Package"], cur)
    return out


def fetch_source(cache, index, spec, dest):
    """A source package's files, each checked against the index's SHA-256, copied into dest."""
    name, _, want = spec.partition("=")
    pkg = index.get(name)
    if pkg is None:
        fail("no source package %s" % name)
    version = pkg["Version"]
    upstream = re.sub(r"^\d+:", "", version).rsplit("-", 1)[0]
    if want and upstream != want:
        fail("source %s is %s, not upstream %s" % (name, version, want))
    os.makedirs(dest, exist_ok=True)
    for line in pkg["Checksums-Sha256"].strip().splitlines():
        digest, _size, fname = line.split()
        path = cached(cache, "%s/%s/%s" % (MIRROR, pkg["Directory"], fname), digest)
        shutil.copyfile(path, os.path.join(dest, fname))
    print("source %s (%s) in %s" % (name, version, dest))


def rewrite_pc(prefix):
    """prefix=/usr (and the like) in every unpacked .pc file points into prefix."""
    for d, _, names in os.walk(prefix):
        for n in names:
            if n.endswith(".pc"):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8") as f:
                    text = f.read()
                # Every variable set to a path under /usr (libuv-static.pc writes
                # libdir=/usr/lib/TRIPLET without ${prefix}).
                text = re.sub(r"^(\w+)=/usr(/|$)", r"\1=%s/usr\2" % prefix, text, flags=re.M)
                with open(p, "w", encoding="utf-8") as f:
                    f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--prefix")
    ap.add_argument("--source", metavar="DIR", help="fetch source packages into DIR")
    ap.add_argument("--cache")
    ap.add_argument("packages", nargs="+", metavar="PKG[=UPSTREAM]")
    a = ap.parse_args()
    if a.source:
        dest = os.path.abspath(a.source)
        cache = os.path.abspath(a.cache or os.path.join(dest, "..", "debs"))
        os.makedirs(cache, exist_ok=True)
        index = sources(cache, a.suite, release_hashes(cache, a.suite))
        for spec in a.packages:
            fetch_source(cache, index, spec, dest)
        return
    if not a.prefix:
        fail("--prefix DIR (or --source DIR) is needed")
    prefix = os.path.abspath(a.prefix)
    cache = os.path.abspath(a.cache or os.path.join(prefix, "..", "debs"))
    os.makedirs(cache, exist_ok=True)
    os.makedirs(prefix, exist_ok=True)
    hashes = release_hashes(cache, a.suite)
    index = packages(cache, a.suite, a.arch, hashes)
    for spec in a.packages:
        name, _, want = spec.partition("=")
        pkg = index.get(name)
        if pkg is None:
            fail("%s/%s has no package %s" % (a.suite, a.arch, name))
        version = pkg["Version"]
        upstream = re.sub(r"^\d+:", "", version).rsplit("-", 1)[0]
        if want and upstream != want:
            fail("%s in %s is %s, not upstream %s" % (name, a.suite, version, want))
        deb = cached(cache, "%s/%s" % (MIRROR, pkg["Filename"]), pkg["SHA256"])
        subprocess.run(["dpkg-deb", "-x", deb, prefix], check=True)
        print("%s %s %s (%s)" % (a.suite, a.arch, name, version))
    rewrite_pc(prefix)


if __name__ == "__main__":
    main()
