#!/usr/bin/python3
"""Hostile I/O around the run: what --manifest and merge-manifests may replace, FIFOs and devices
where a manifest is read or written, `ulimit -f`, SIGPIPE and SIGHUP, --manifest -, and the
manifest and the cache directory inside a walked PATH. Each case is caused for real."""
import sys

sys.dont_write_bytecode = True
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
import unittest

from pctest import (PCTestCase, PROGRAM, SUMMARY_RE, child_env, decode, listing, load_manifest, main,
                    manifest_by_path, run, walk_all, words_data)

# The manifest and the tree alone: no content cache from the environment.
os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

HAVE_PRLIMIT = shutil.which("prlimit") is not None
REFUSED = "refusing to replace: not a precompress manifest"
NOT_MANIFEST = "valid JSON but not a precompress manifest"


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def errors(res):
    return [l for l in res.err_lines if not SUMMARY_RE.match(l)]


class Base(PCTestCase):
    def refused(self, args, target, what=REFUSED, root=None):
        """The run exits 2 with one line naming target, before touching root."""
        before = listing(root) if root else None
        r = run(args, timeout=20)
        self.assertEqual(r.rc, 2, r)
        self.assertEqual(errors(r), ["precompress: %s: %s" % (target, what)], r)
        self.assertEqual(r.out, "", r)
        if root:
            self.assertEqual(listing(root), before, "a refused run must not touch the tree")
        return r


class Readers(Base):
    """Every reader of a manifest opens it non-blocking and takes regular files only."""

    def test_dry_run_with_fifo_manifest_does_not_hang(self):
        root = self.copy_site()
        fifo = self.path("m.json")
        os.mkfifo(fifo)
        before = listing(root)
        r = run(["-n", "--manifest", fifo, root], timeout=20)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(errors(r), ["precompress: %s: not a regular file" % fifo], r)
        self.assertEqual(listing(root), before)

    def test_merge_input_fifo_does_not_hang(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        fifo = self.path("in.fifo")
        os.mkfifo(fifo)
        out = self.path("out.json")
        r = run(["merge-manifests", out, man, fifo], timeout=20)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(errors(r), ["precompress: %s: not a regular file" % fifo], r)
        self.assertFalse(os.path.lexists(out))

    def test_valid_json_that_is_not_a_manifest_says_so(self):
        root = self.copy_site()
        pkg = self.path("package.json")
        write(pkg, b'{"name": "site"}\n')
        r = run(["-n", "--manifest", pkg, root], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(errors(r), ["precompress: %s: %s" % (pkg, NOT_MANIFEST)], r)
        r = run(["merge-manifests", self.path("out.json"), pkg], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(errors(r), ["precompress: %s: %s" % (pkg, NOT_MANIFEST)], r)
        bad = self.path("bad.json")
        write(bad, b'{"precompress": 1, "files": [')
        r = run(["merge-manifests", self.path("out.json"), bad], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(errors(r), ["precompress: %s: not a precompress manifest (invalid JSON)" % bad], r)



if __name__ == "__main__":
    main()
