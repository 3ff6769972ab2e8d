#!/usr/bin/python3
"""Byte identity with the real `python3 -m whitenoise.compress` (Debian python3-whitenoise)."""
import sys

sys.dont_write_bytecode = True
import os
import shutil
import subprocess
import unittest

from pctest import PCTestCase, fsb, has_ext, main, run, walk_all, words_data, SITE, SKIP_EXT

try:
    from whitenoise.compress import Compressor
except ImportError:
    Compressor = None

DJANGO_STATIC = "/usr/lib/python3/dist-packages/django/contrib/admin/static"


@unittest.skipIf(Compressor is None, "python3-whitenoise is not installed (apt-get install python3-whitenoise)")
class Whitenoise(PCTestCase):
    def compare(self, src, symlinks=True):
        wn_root = self.path("wn")
        pc_root = self.path("pc")
        shutil.copytree(src, wn_root, symlinks=symlinks, ignore_dangling_symlinks=True)
        shutil.copytree(src, pc_root, symlinks=symlinks, ignore_dangling_symlinks=True)
        before = set(walk_all(wn_root))
        p = subprocess.run(["/usr/bin/python3", "-m", "whitenoise.compress", "-q", wn_root],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = run(["-q", pc_root], timeout=300)
        self.assertEqual(r.rc, 0, r)

        wn_new = set(walk_all(wn_root)) - before
        pc_new = set(walk_all(pc_root)) - before
        wn_skip = [e for e in Compressor.SKIP_COMPRESS_EXTENSIONS]

        def considered(rel):  # a source both tools compress
            base = os.path.basename(rel)
            st = os.stat(os.path.join(fsb(pc_root), rel))
            return st.st_size > 0 and not has_ext(base, SKIP_EXT) and not has_ext(base, wn_skip)

        def split(rel):
            stem, ext = rel.rsplit(b".", 1)
            return stem, ext.decode()

        wn_out = {split(r) for r in wn_new}
        pc_out = {split(r) for r in pc_new if considered(split(r)[0])}
        self.assertTrue(all(considered(s) for s, _ in wn_out), "whitenoise wrote for a file we skip: %r" % wn_out)
        wn_br = {s for s, e in wn_out if e == "br"}
        wn_gz = {s for s, e in wn_out if e == "gz"}
        pc_br = {s for s, e in pc_out if e == "br"}
        pc_gz = {s for s, e in pc_out if e == "gz"}
        self.assertGreater(len(wn_br), 3, "whitenoise wrote almost nothing: the comparison would be empty")
        # whitenoise writes .br iff brotli pays, and .gz only when brotli paid too.
        self.assertEqual(sorted(pc_br), sorted(wn_br), ".br sets differ")
        self.assertEqual(sorted(pc_gz & pc_br), sorted(wn_gz), ".gz sets differ (where brotli paid)")
        for stem, ext in sorted(wn_out):
            rel = stem + b"." + ext.encode()
            with open(os.path.join(fsb(wn_root), rel), "rb") as f:
                a = f.read()
            with open(os.path.join(fsb(pc_root), rel), "rb") as f:
                b = f.read()
            self.assertEqual(len(b), len(a), "%r: size differs from whitenoise's" % rel)
            self.assertTrue(a == b, "%r: bytes differ from whitenoise's" % rel)
            # whitenoise copies the mtime too
            self.assertEqual(os.stat(os.path.join(fsb(pc_root), rel)).st_mtime_ns,
                             os.stat(os.path.join(fsb(pc_root), stem)).st_mtime_ns, rel)
        return len(wn_out)

    def test_fixture_site(self):
        src = self.path("src")
        shutil.copytree(SITE, src, symlinks=True)
        os.makedirs(os.path.join(src, "gen"))
        with open(os.path.join(src, "gen", "words.txt"), "wb") as f:
            f.write(words_data(300 * 1024, seed=5))
        n = self.compare(src)
        self.assertGreater(n, 20)

    @unittest.skipUnless(os.path.isdir(DJANGO_STATIC), "python3-django is not installed (no admin static files)")
    def test_django_admin_static(self):
        # like collectstatic: Debian's symlinks (jquery) copied as files
        n = self.compare(DJANGO_STATIC, symlinks=False)
        self.assertGreater(n, 100)


if __name__ == "__main__":
    main()
