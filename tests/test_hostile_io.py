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


@unittest.skipUnless(HAVE_PRLIMIT, "prlimit (util-linux) is missing")
class FileSizeLimit(Base):
    def test_ulimit_f_fails_the_big_file_only(self):
        root = self.copy_site()
        big = os.path.join(root, "data", "big.txt")
        write(big, words_data(3 * 1024 * 1024, seed=5))
        man = self.path("m.json")
        r = run(["prlimit", "--fsize=262144", PROGRAM, "-j", "2", "--manifest", man, root], timeout=60,
                program="/usr/bin/env")
        self.assertEqual(r.rc, 1, r)
        errs = errors(r)
        self.assertEqual(len(errs), 1, r)
        self.assertTrue(errs[0].startswith("precompress: %s" % big), errs)
        self.assertTrue(errs[0].endswith(": File too large"), errs)
        self.assertNoTemps(root)
        for ext in ("gz", "br"):
            self.assertFalse(os.path.lexists(big + "." + ext))
        self.assertEqual(decode("gz", os.path.join(root, "css", "app.css.gz")),
                         read(os.path.join(root, "css", "app.css")))
        m = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(m[b"data/big.txt"].get("error"), "File too large")
        self.assertIn("size", m[b"css/app.css"]["gz"])


class Signals(Base):
    def big_tree(self, n=3, size=1536 * 1024):
        root = self.path("big")
        os.makedirs(root)
        for i in range(n):
            write(os.path.join(root, "part%d.txt" % i), words_data(size, seed=i))
        return root

    def check_stopped(self, root, man):
        self.assertNoTemps(root)
        m, _ = load_manifest(man)
        self.assertIs(m.get("incomplete"), True, "an interrupted run's manifest says so")
        for rel in walk_all(root):
            for fmt in ("gz", "br"):
                if rel.endswith(b"." + fmt.encode()):
                    full = os.path.join(os.fsencode(root), rel)
                    self.assertEqual(decode(fmt, full), read(full[: -len(fmt) - 1]), rel)
        return m

    def test_sighup_stops_cleanly_with_129(self):
        root = self.big_tree()
        man = self.path("m.json")
        p = subprocess.Popen([PROGRAM, "-q", "-j", "2", "--manifest", man, root], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env())
        time.sleep(0.7)
        p.send_signal(signal.SIGHUP)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("precompress did not stop within 20 s of SIGHUP")
        self.assertEqual(p.returncode, 129, err)
        self.check_stopped(root, man)

    def test_sighup_ignored_by_nohup_is_left_alone(self):
        root = self.big_tree(n=2, size=768 * 1024)
        man = self.path("m.json")

        def nohup():
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        p = subprocess.Popen([PROGRAM, "-q", "-j", "2", "--manifest", man, root], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(), preexec_fn=nohup)
        time.sleep(0.3)
        p.send_signal(signal.SIGHUP)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        m, _ = load_manifest(man)
        self.assertNotIn("incomplete", m)
        self.assertEqual(len(m["files"]), 2)

    def test_sigpipe_on_verbose_output_stops_cleanly_with_141(self):
        # Many small files: -v lines keep coming while there is work left.
        root = self.path("many")
        blob = words_data(4 * 1024 * 1024, seed=7)
        for d in range(8):
            os.makedirs(os.path.join(root, "d%d" % d))
        for i in range(800):
            write(os.path.join(root, "d%d" % (i % 8), "f%04d.txt" % i), blob[i * 5000:(i + 1) * 5000])
        man = self.path("m.json")
        p = subprocess.Popen([PROGRAM, "-v", "-j", "2", "--progress", "never", "--manifest", man, root],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
        first = p.stdout.readline()  # like `| head -1`
        p.stdout.close()
        self.assertTrue(first.startswith(b"compressed "), first)
        try:
            err = p.stderr.read()
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self.fail("precompress did not stop after its stdout was closed")
        self.assertEqual(p.returncode, 141, err)
        self.assertNotIn(b"error writing", err)
        m = self.check_stopped(root, man)
        self.assertLess(len(m["files"]), 800, "the run was meant to be stopped half done")

    def test_verbose_to_a_closed_pipe_exits_141(self):
        root = self.copy_site()
        rfd, wfd = os.pipe()
        os.close(rfd)
        try:
            p = subprocess.run([PROGRAM, "-v", root], stdout=wfd, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=child_env(), timeout=60)
        finally:
            os.close(wfd)
        self.assertEqual(p.returncode, 141, p.stderr)
        self.assertNotIn(b"error writing", p.stderr)


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
