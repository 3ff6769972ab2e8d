#!/usr/bin/python3
"""-Dstatic=true: the program is one self-contained file (file, ldd, readelf say
so), and that file, alone in an empty root, writes the oracle's bytes.

Registered only in a build configured with -Dstatic=true (tests/meson.build).
"""
import sys

sys.dont_write_bytecode = True
import os
import shutil
import subprocess
import unittest

from pctest import (PROGRAM, SITE, PCTestCase, classify, decode, fsb, have_zstd_build, main,
                    source_snapshot, walk_all)


def tool(*cmd):
    if shutil.which(cmd[0]) is None:
        raise unittest.SkipTest("%s is not installed (apt-get install file binutils)" % cmd[0])
    p = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


def assert_static(tc, program):
    """Shared with test_examples.py (the Dockerfile's build stage)."""
    rc, out = tool("file", "-L", program)
    tc.assertEqual(rc, 0, out)
    tc.assertIn("statically linked", out, "file: %s" % out)
    tc.assertNotIn("dynamically linked", out, "file: %s" % out)
    tc.assertNotIn("interpreter", out, "file: %s" % out)
    rc, out = tool("ldd", program)
    tc.assertNotEqual(rc, 0, "ldd found dynamic dependencies: %s" % out)
    tc.assertIn("not a dynamic executable", out, "ldd: %s" % out)
    rc, out = tool("readelf", "-l", "-d", program)
    tc.assertEqual(rc, 0, out)
    tc.assertNotIn("INTERP", out, "readelf: a program interpreter is requested")
    tc.assertNotIn("(NEEDED)", out, "readelf: shared libraries are needed")


class StaticBinary(PCTestCase):
    def test_file_ldd_readelf_say_self_contained(self):
        assert_static(self, PROGRAM)

    def test_version_names_every_library(self):
        r = self.run_ok(["--version"])
        for lib in ("zlib", "brotli", "libuv"):
            self.assertIn(lib, r.out)
        if have_zstd_build():
            self.assertIn("zstd", r.out)

    def test_fixtures_match_the_oracle(self):
        root = self.copy_site()
        before = walk_all(root)
        snap = source_snapshot(root)
        cls = classify(root)
        self.run_ok(["-q", root])
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_zstd_outputs_decode(self):
        if not have_zstd_build():
            self.skipTest("built without zstd")
        if shutil.which("zstd") is None:
            self.skipTest("the zstd program is missing (apt-get install zstd)")
        root = self.copy_site()
        self.run_ok(["-q", "--zstd", "--no-gzip", "--no-brotli", root])
        n = 0
        for rel in walk_all(root):
            if rel.endswith(b".zst"):
                with open(os.path.join(fsb(root), rel[:-4]), "rb") as f:
                    self.assertEqual(decode("zst", os.path.join(fsb(root), rel)), f.read(), rel)
                n += 1
        self.assertGreater(n, 5)

    def test_runs_alone_in_an_empty_root(self):
        # What `COPY --from=build ... precompress` into a scratch image gives:
        # no /lib, no /etc, no /proc. chroot needs root.
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        chroot = shutil.which("chroot")
        if chroot is None:
            self.skipTest("chroot is missing (coreutils)")
        jail = self.path("jail")
        os.makedirs(os.path.join(jail, "bin"))
        shutil.copy2(PROGRAM, os.path.join(jail, "bin", "precompress"))
        site = shutil.copytree(SITE, os.path.join(jail, "site"), symlinks=True)
        before = walk_all(site)
        cls = classify(site)
        p = subprocess.run([chroot, jail, "/bin/precompress", "--manifest", "/site/precompress.json",
                            "/site"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180,
                           env={"PATH": "/bin"})
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        self.assertIn(b"compressed", p.stderr)
        self.assertTreeMatchesOracle(site, before, cls, extra_ok=[b"precompress.json"])


if __name__ == "__main__":
    main()
