#!/usr/bin/python3
"""A release made by dist/release.sh holds what dist/README.md lists, and its programs run
where nothing else is: the x86_64 one in an empty root (no /etc/passwd, no library, no /proc),
the aarch64 one there too under qemu-user, each writing outputs that decode to their sources
and are the oracle's bytes.

The release directory comes from the environment variable PRECOMPRESS_RELEASE (.ci/run makes
one with `dist/release.sh VERSION` and sets it); without it every test here is skipped. The
oracle is Debian 12's python3-brotli (brotli 1.0.9) and zlib, while the release links
brotli 1.1.0: the byte comparisons are also the check that both write the same bytes.
"""
import sys

sys.dont_write_bytecode = True
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import unittest
import zipfile

from pctest import (SITE, SRC_ROOT, PCTestCase, classify, decode, expected_outputs, fsb, main, sha256, walk_all)

RELEASE = os.environ.get("PRECOMPRESS_RELEASE", "")
ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}
QEMU = {"x86_64": None, "aarch64": "qemu-aarch64-static"}
WHEEL_TAG = "py3-none-manylinux_2_17_{0}.manylinux2014_{0}.musllinux_1_1_{0}"


def version():
    return subprocess.run([sys.executable, os.path.join(SRC_ROOT, "dist", "version.py")],
                          stdout=subprocess.PIPE, check=True, text=True).stdout.strip()


class Base(PCTestCase):
    def setUp(self):
        super().setUp()
        if not RELEASE:
            self.skipTest("PRECOMPRESS_RELEASE is not set: make a release with dist/release.sh "
                          "VERSION DIR and set it to DIR (.ci/run does)")
        self.version = version()
        self.release = RELEASE

    def rel(self, name):
        return os.path.join(self.release, name)

    def expected_files(self):
        v = self.version
        names = ["precompress-%s-linux-%s.tar.gz" % (v, a) for a in ARCHES]
        names += ["precompress-%s-%s.whl" % (v, WHEEL_TAG.format(a)) for a in ARCHES]
        names += ["precompress-%s.tar.gz" % v, "precompress-%s-oci.tar" % v, "SHA256SUMS"]
        # the npm packages (tests/packaging/test_npm.py checks what they hold)
        names += ["precompress-cli-%s.tgz" % v] + ["precompress-cli-linux-%s-%s.tgz" % (a, v) for a in ("x64", "arm64")]
        return sorted(names)

    def binary(self, arch):
        """The program of arch's tarball, unpacked into this test's directory."""
        name = "precompress-%s-linux-%s" % (self.version, arch)
        dest = self.path("unpacked-" + arch)
        with tarfile.open(self.rel(name + ".tar.gz")) as t:
            t.extractall(dest)
        return os.path.join(dest, name, "precompress")


class Contents(Base):
    def test_every_artefact_and_nothing_else(self):
        self.assertEqual(sorted(os.listdir(self.release)), self.expected_files())

    def test_sha256sums_cover_every_file_and_check(self):
        with open(self.rel("SHA256SUMS")) as f:
            lines = [l.split() for l in f.read().splitlines()]
        self.assertEqual(sorted(n for _, n in lines), [n for n in self.expected_files() if n != "SHA256SUMS"])
        for digest, name in lines:
            self.assertEqual(sha256(self.rel(name)), digest, name)
        p = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=self.release,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_tarballs_hold_the_program_its_page_and_completions(self):
        for arch in ARCHES:
            name = "precompress-%s-linux-%s" % (self.version, arch)
            with tarfile.open(self.rel(name + ".tar.gz")) as t:
                members = {m.name: m for m in t.getmembers()}
            want = {name + "/" + f for f in ("precompress", "precompress.1", "LICENSE", "README.md",
                                             "CHANGELOG.md", "completions/precompress.bash",
                                             "completions/_precompress", "completions/precompress.fish")}
            self.assertEqual({n for n, m in members.items() if m.isfile()}, want, arch)
            prog = members[name + "/precompress"]
            self.assertEqual(prog.mode & 0o777, 0o755)
            self.assertEqual((prog.uid, prog.gid), (0, 0))
            out = subprocess.run(["file", "-b", self.binary(arch)], stdout=subprocess.PIPE, text=True).stdout
            self.assertIn("statically linked", out, arch)
            self.assertIn({"x86_64": "x86-64", "aarch64": "ARM aarch64"}[arch], out)

    def test_wheels_carry_the_tarballs_program_and_the_page(self):
        for arch in ARCHES:
            whl = self.rel("precompress-%s-%s.whl" % (self.version, WHEEL_TAG.format(arch)))
            with zipfile.ZipFile(whl) as z:
                names = set(z.namelist())
                self.assertIn("precompress/bin/precompress", names)
                self.assertIn("precompress/django.py", names)
                self.assertIn("precompress-%s.data/data/share/man/man1/precompress.1" % self.version, names)
                info = z.getinfo("precompress/bin/precompress")
                self.assertEqual((info.external_attr >> 16) & 0o777, 0o755)
                inside = hashlib.sha256(z.read("precompress/bin/precompress")).hexdigest()
                wheel = z.read("precompress-%s.dist-info/WHEEL" % self.version).decode()
            self.assertEqual(inside, sha256(self.binary(arch)), arch)
            self.assertIn("Tag: py3-none-manylinux_2_17_%s" % arch, wheel)
            self.assertIn("Tag: py3-none-musllinux_1_1_%s" % arch, wheel)

    def test_sdist_holds_the_sources_at_this_version(self):
        name = "precompress-%s" % self.version
        with tarfile.open(self.rel(name + ".tar.gz")) as t:
            names = set(t.getnames())
        for f in ("meson.build", "include/precompress.h", "dist/version.py", "pyproject.toml",
                  "python/build_backend.py", "src/run/run.c", "man/options.md", "PKG-INFO"):
            self.assertIn(name + "/" + f, names)
        self.assertFalse([n for n in names if "/.git/" in n or n.endswith("/.git")])

    def test_image_is_scratch_with_the_program_and_licence_per_platform(self):
        """The OCI archive's index names linux/amd64 and linux/arm64; each image's one layer
        holds /precompress (the tarball's program) and /LICENSE, nothing else."""
        with tarfile.open(self.rel("precompress-%s-oci.tar" % self.version)) as t:
            def blob(digest):
                return t.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()
            index = json.loads(t.extractfile("index.json").read())
            self.assertEqual(len(index["manifests"]), 1)
            self.assertEqual(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
                             "precompress:%s" % self.version)
            inner = json.loads(blob(index["manifests"][0]["digest"]))
            platforms = {}
            for m in inner["manifests"]:
                platforms[(m["platform"]["os"], m["platform"]["architecture"])] = json.loads(blob(m["digest"]))
            self.assertEqual(set(platforms), {("linux", "amd64"), ("linux", "arm64")})
            for arch, deb in ARCHES.items():
                manifest = platforms[("linux", deb)]
                config = json.loads(blob(manifest["config"]["digest"]))
                self.assertEqual(config["architecture"], deb)
                self.assertEqual(config["config"]["Entrypoint"], ["/precompress"])
                files = {}
                for layer in manifest["layers"]:
                    with tarfile.open(fileobj=io.BytesIO(blob(layer["digest"]))) as lt:
                        for m in lt.getmembers():
                            if m.isfile():
                                files[m.name.lstrip("./")] = hashlib.sha256(lt.extractfile(m).read()).hexdigest()
                self.assertEqual(sorted(files), ["LICENSE", "precompress"], arch)
                self.assertEqual(files["precompress"], sha256(self.binary(arch)), arch)


class EmptyRoot(Base):
    """Each program alone in an empty root: no /etc (no passwd, no nsswitch.conf), no /lib,
    no /proc, no /dev. strace, outside the root, sees every file it opens: nothing but the
    tree, the manifest and the cache (no library, no NSS file)."""

    def run_in_empty_root(self, arch):
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        jail = self.path("jail-" + arch)
        os.makedirs(jail)
        shutil.copy2(self.binary(arch), os.path.join(jail, "precompress"))
        cmd = ["/precompress"]
        if QEMU[arch]:
            qemu = shutil.which(QEMU[arch])
            if qemu is None:
                self.skipTest("%s is missing (.ci/deps release)" % QEMU[arch])
            shutil.copy2(qemu, os.path.join(jail, "qemu"))
            cmd = ["/qemu", "/precompress"]
        site = shutil.copytree(SITE, os.path.join(jail, "site"), symlinks=True)
        before = walk_all(site)
        cls = classify(site)
        self.assertEqual(sorted(os.listdir(jail)), sorted(["precompress", "site"] + (["qemu"] if QEMU[arch] else [])))
        chroot = shutil.which("chroot")
        r = subprocess.run([chroot, jail] + cmd + ["-V"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={}, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.decode(), r"^precompress %s \(zlib [^,]+, brotli 1\.1\.0, libuv [^,]+, zstd "
                         % re.escape(self.version))
        trace = self.path("strace-" + arch)
        strace = ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2,execve", "-o", trace] \
            if shutil.which("strace") and not QEMU[arch] else []
        r = subprocess.run(strace + [chroot, jail] + cmd +
                           ["--zstd", "--manifest", "/m.json", "--cache-dir", "/cache", "/site"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Every output the keep rule calls for, the oracle's bytes for .gz and .br (Debian
        # 12's zlib and brotli 1.0.9 against the release's brotli 1.1.0); .zst decodes.
        want = expected_outputs(cls)
        got = set(walk_all(site)) - set(before)
        zst = {p for p in got if p.endswith(b".zst")}
        self.assertEqual(sorted(got - zst), sorted(want))
        for rel, blob in want.items():
            with open(os.path.join(fsb(site), rel), "rb") as f:
                self.assertEqual(f.read(), blob, rel)
        self.assertGreater(len(zst), 5)
        for rel in zst:
            with open(os.path.join(fsb(site), rel[:-4]), "rb") as f:
                self.assertEqual(decode("zst", os.path.join(fsb(site), rel)), f.read(), rel)
        if strace:
            self.assertNoForeignOpens(trace)
        return jail

    def assertNoForeignOpens(self, trace):
        with open(trace) as f:
            lines = f.read().splitlines()
        start = [i for i, l in enumerate(lines) if 'execve("/precompress"' in l]
        self.assertTrue(start, "strace saw no execve of /precompress")
        opened = []
        for l in lines[start[0] + 1:]:
            m = re.search(r'open(?:at2?)?\((?:[^,]+, )?"([^"]*)"', l)
            if m:
                opened.append(m.group(1))
        # "/": --cache-dir is walked from the root one directory at a time, so that no
        # component of its path is taken on trust.
        allowed = re.compile(r'^(/site|/cache|/m\.json|/\.m\.json\.[A-Za-z0-9]+\.tmp$|\.\.?$|[^/])|^/$|^/proc/|^/sys/fs/cgroup/|^/dev/urandom$')
        foreign = sorted({p for p in opened if not allowed.match(p)})
        self.assertEqual(foreign, [], "the program opened files outside its tree: %s" % foreign)
        self.assertFalse([p for p in opened if ".so" in p or p.startswith("/etc/")])

    def test_x86_64_runs_alone_and_opens_nothing_else(self):
        self.run_in_empty_root("x86_64")

    def test_aarch64_runs_alone_under_qemu_user(self):
        self.run_in_empty_root("aarch64")


if __name__ == "__main__":
    main()
