#!/usr/bin/python3
"""A real collectstatic tree: Django's admin static files (Debian python3-django)."""
import sys

sys.dont_write_bytecode = True
import os
import shutil
import unittest

from pctest import PCTestCase, classify, main, run, source_snapshot, walk_all

DJANGO_STATIC = "/usr/lib/python3/dist-packages/django/contrib/admin/static"


@unittest.skipUnless(os.path.isdir(DJANGO_STATIC),
                     "python3-django is not installed: no %s (apt-get install python3-django)" % DJANGO_STATIC)
class Collectstatic(PCTestCase):
    def tree(self):
        root = self.path("static")
        # collectstatic copies file contents: Debian's symlinks (jquery) become files
        shutil.copytree(DJANGO_STATIC, root, symlinks=False, ignore_dangling_symlinks=True)
        return root

    def check(self, args, formats):
        root = self.tree()
        before = walk_all(root)
        snap = source_snapshot(root)
        self.assertGreater(len(snap), 100)
        cls = classify(root, formats=formats)
        r = run(args + ["-q", root], timeout=300)
        self.assertEqual(r.rc, 0, r)
        # every output decodes to its source and has the oracle's bytes; every output the rule
        # calls for is there; nothing else was written
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_gzip_only(self):
        self.check(["--no-brotli"], ("gz",))

    def test_gzip_and_brotli(self):
        self.check([], ("gz", "br"))


if __name__ == "__main__":
    main()
