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

from pctest import (fast_levels, wait_open, PCTestCase, PROGRAM, child_env, decode, listing, load_manifest, main, manifest_by_path,
                    read, run, walk_all, words_data, write)

# The manifest and the tree alone: no content cache from the environment.
os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

HAVE_PRLIMIT = shutil.which("prlimit") is not None
REFUSED = "refusing to replace: not a precompress manifest"
NOT_MANIFEST = "valid JSON but not a precompress manifest"


class Base(PCTestCase):
    def refused(self, args, target, what=REFUSED, root=None):
        """The run exits 2 with one line naming target, before touching root."""
        before = listing(root) if root else None
        r = run(args, timeout=20)
        self.assertEqual(r.rc, 2, r)
        # refused before any work: that line alone, no summary
        self.assertEqual(r.err_lines, ["precompress: %s: %s" % (target, what)], r)
        self.assertEqual(r.out, "", r)
        if root:
            self.assertEqual(listing(root), before, "a refused run must not touch the tree")
        return r


class ManifestTarget(Base):
    """--manifest FILE may replace nothing, a symlink (as a name), an empty file or a manifest."""

    def test_source_file_is_refused(self):
        root = self.copy_site()
        src = os.path.join(root, "js", "app.js")
        data = read(src)
        self.refused(["--manifest", src, root], src, root=root)
        self.assertEqual(read(src), data)

    def test_output_names_are_refused(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        what = "refusing to write a manifest under an output's name (.gz, .br, .zst)"
        for name in (os.path.join(root, "js", "app.js.gz"), os.path.join(root, "index.html.br"),
                     self.path("m.json.zst"), self.path("new.json.gz")):
            with self.subTest(name=name):
                old = read(name) if os.path.exists(name) else None
                self.refused(["--manifest", name, root], name, what=what, root=root)
                if old is None:
                    self.assertFalse(os.path.lexists(name))
                else:
                    self.assertEqual(read(name), old)

    def test_fifo_is_refused_without_hanging(self):
        root = self.copy_site()
        fifo = self.path("m.json")
        os.mkfifo(fifo)
        t0 = time.monotonic()
        self.refused(["--manifest", fifo, root], fifo, root=root)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")

    def test_device_is_refused(self):
        root = self.copy_site()
        dev = self.path("null")
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            self.skipTest("mknod is not permitted here")
        self.refused(["--manifest", dev, root], dev, root=root)
        st = os.lstat(dev)
        self.assertTrue(stat.S_ISCHR(st.st_mode), "the device node was replaced")
        self.assertEqual(st.st_rdev, os.makedev(1, 3))

    def test_socket_and_directory_are_refused(self):
        root = self.copy_site()
        sock_path = self.path("m.sock")
        s = socket.socket(socket.AF_UNIX)
        self.addCleanup(s.close)
        s.bind(sock_path)
        self.refused(["--manifest", sock_path, root], sock_path, root=root)
        self.assertTrue(stat.S_ISSOCK(os.lstat(sock_path).st_mode))
        d = self.path("adir")
        os.mkdir(d)
        self.refused(["--manifest", d, root], d, root=root)
        self.assertTrue(os.path.isdir(d))

    def test_json_and_garbage_that_are_not_manifests_are_refused(self):
        root = self.copy_site()
        for name, data in (("package.json", b'{"name": "site", "version": "1.0.0"}\n'),
                           ("array.json", b"[1, 2, 3]\n"),
                           ("notes.txt", b"this is not JSON\n"),
                           ("binary.bin", b"\x00\xff\xfe{\n")):
            with self.subTest(name=name):
                p = self.path(name)
                write(p, data)
                self.refused(["--manifest", p, root], p, root=root)
                self.assertEqual(read(p), data)

    def test_truncated_manifest_is_refused(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        raw = read(man)
        write(man, raw[: len(raw) // 2])
        self.refused(["--manifest", man, root], man, root=root)
        self.assertEqual(read(man), raw[: len(raw) // 2])
        # --force reads nothing back, and still may not replace it.
        self.refused(["--force", "--manifest", man, root], man, root=root)

    def test_manifest_empty_file_and_symlink_are_replaced(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        raw = read(man)
        # A manifest of another version is still one: it cannot be read (one error line, exit 1),
        # but it is replaced.
        write(man, b'{"precompress": 2, "future": true}\n')
        r = run(["-q", "--manifest", man, root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: %s" % (man, NOT_MANIFEST)], r)
        self.assertEqual(read(man), raw)
        # An empty file (mktemp) holds nothing to lose: no error, replaced.
        os.unlink(man)
        write(man, b"")
        r = self.run_ok(["--json", "--manifest", man, root])
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(read(man), raw)
        # A symlink, even to a source of the tree, is replaced as a name, never written through,
        # and its target is compressed like any other file.
        src = os.path.join(root, "js", "app.js")
        data = read(src)
        os.unlink(man)
        os.symlink(src, man)
        os.unlink(src + ".gz")
        r = self.run_ok(["-q", "--manifest", man, root])
        self.assertFalse(os.path.islink(man))
        self.assertEqual(read(man), raw)
        self.assertEqual(read(src), data)
        self.assertEqual(decode("gz", src + ".gz"), data, "the link's target must still be compressed")

    def test_rewritten_manifest_keeps_its_mode(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root], umask=0o022)
        self.assertEqual(stat.S_IMODE(os.stat(man).st_mode), 0o644)
        os.chmod(man, 0o600)
        ino = os.stat(man).st_ino
        p = os.path.join(root, "js", "app.js")
        with open(p, "ab") as f:
            f.write(b"\n// one more line\n")
        self.run_ok(["-q", "--manifest", man, root], umask=0o022)
        st = os.stat(man)
        self.assertNotEqual(st.st_ino, ino, "the manifest was not rewritten")
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, "a rewritten manifest must keep its mode")
        # An empty 0600 file, as mktemp makes it, stays 0600.
        man2 = self.path("m2.json")
        write(man2, b"")
        os.chmod(man2, 0o600)
        self.run_ok(["-q", "--force", "--manifest", man2, root], umask=0o022)
        self.assertEqual(stat.S_IMODE(os.stat(man2).st_mode), 0o600)
        self.assertIn(b'"precompress": 1', read(man2))


class InsideTheTree(Base):
    def test_new_manifest_inside_the_tree_is_never_an_input(self):
        root = self.copy_site()
        man = os.path.join(root, "css", "precompress.json")
        for args in (["-q"], ["-q"], ["-q", "--force"]):
            self.run_ok(args + ["--manifest", man, root])
            m, _ = load_manifest(man)
            self.assertNotIn(b"css/precompress.json", manifest_by_path(m))
            for ext in ("gz", "br"):
                self.assertFalse(os.path.lexists(man + "." + ext))

    def test_manifest_temp_of_a_killed_run_is_not_an_input(self):
        root = self.copy_site()
        man = os.path.join(root, "precompress.json")
        self.run_ok(["-q", "--manifest", man, root])
        raw = read(man)
        tmp = os.path.join(root, ".precompress.json.AbC123.tmp")
        write(tmp, raw[:100])
        self.run_ok(["-q", "--manifest", man, root])
        self.assertNotIn(b".precompress.json.AbC123.tmp", manifest_by_path(load_manifest(man)[0]))
        self.assertFalse(os.path.lexists(tmp + ".gz"))
        self.assertFalse(os.path.lexists(tmp), "a killed run's manifest temp is removed")

    def test_cache_dir_inside_the_tree_is_never_walked(self):
        for name, sub in (("a", ("vendor", "cache")), ("b", ())):
            root = self.copy_site(name)
            cache = os.path.join(root, *sub)
            with self.subTest(cache=cache):
                for _ in range(2):
                    man = self.path("m.json")
                    r = self.run_ok(["-v", "--force", "--cache-dir", cache, "--manifest", man, root])
                    self.assertTrue(os.path.isfile(os.path.join(cache, "cache.sqlite")))
                    walked = [l for l in r.out_lines if "cache.sqlite" in l or "vendor/cache" in l]
                    self.assertEqual(walked, [], r)
                    for e in load_manifest(man)[0]["files"]:
                        self.assertFalse(e["path"].startswith(("vendor/cache", "cache.sqlite")), e)
                    self.assertFalse(os.path.lexists(os.path.join(cache, "cache.sqlite.gz")),
                                     "the store was compressed as a source")


class ManifestToStdout(Base):
    def test_manifest_dash_writes_stdout(self):
        root = self.copy_site()
        r = run(["--manifest", "-", root], cwd=self.tmp)
        self.assertEqual(r.rc, 0, r)
        self.assertFalse(os.path.lexists(self.path("-")), "a file named '-' was written")
        # the summary line still goes to stderr: the one a run with a manifest file prints
        other = self.copy_site("site2")
        r3 = self.run_ok(["--manifest", self.path("m3.json"), other])
        self.assertEqual(len(r.err_lines), 1, r)
        self.assertEqual(r.err_lines[0].rsplit("; ", 1)[0], r3.err_lines[-1].rsplit("; ", 1)[0],
                         "the summary (but its time) differs from a run's without --manifest -: %r" % r)
        m = json.loads(r.out_b)
        self.assertEqual(m["precompress"], 1)
        # The same bytes a manifest file gets; no reading back from '-' (nothing unchanged).
        man = self.path("m.json")
        self.run_ok(["-q", "--force", "--manifest", man, root])
        r2 = run(["-q", "--manifest", "-", root], cwd=self.tmp)
        self.assertEqual(r2.rc, 0, r2)
        self.assertEqual(r2.out_b, read(man))
        self.assertEqual(r2.err, "")

    def test_manifest_dash_with_other_stdout_users_is_a_usage_error(self):
        root = self.copy_site()
        before = listing(root)
        for extra in (["--json"], ["-v"], ["--dry-run"], ["--check"]):
            with self.subTest(extra=extra):
                r = run(extra + ["--manifest", "-", root], cwd=self.tmp)
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(len(r.err_lines), 1, r)
                self.assertIn("--manifest -", r.err_lines[0])
                self.assertIn("precompress --help", r.err_lines[0])
                self.assertEqual(r.out, "")
                self.assertEqual(listing(root), before)

    def test_manifest_dash_to_a_closed_pipe_exits_141(self):
        root = self.copy_site()
        rfd, wfd = os.pipe()
        os.close(rfd)
        try:
            p = subprocess.run([PROGRAM, "-q", "--manifest", "-", root], stdout=wfd, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=child_env(), timeout=60, cwd=self.tmp)
        finally:
            os.close(wfd)
        self.assertEqual(p.returncode, 141, p.stderr)
        self.assertNotIn(b"error writing", p.stderr)
        self.assertFalse(os.path.lexists(self.path("-")))
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.gz")))


@unittest.skipUnless(HAVE_PRLIMIT, "prlimit (util-linux) is missing")
class FileSizeLimit(Base):
    def test_ulimit_f_fails_the_big_file_only(self):
        root = self.copy_site()
        big = os.path.join(root, "data", "big.txt")
        write(big, words_data(3 * 1024 * 1024, seed=5))
        man = self.path("m.json")
        # Brotli 5: the outputs' size past the limit is the point, not their bytes.
        r = run(["prlimit", "--fsize=262144", PROGRAM, "--json", "-j", "2", "--brotli-quality", "5",
                 "--manifest", man, root], timeout=60,
                program="/usr/bin/env")
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.summary()["failed"], 1, r)
        errs = r.error_lines()
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
        # SIGHUP at its default in the child whatever this test inherited (a CI job under
        # nohup ignores it, and precompress leaves an ignored SIGHUP alone on purpose)
        p = subprocess.Popen([PROGRAM, "-q", "-j", "2", "--manifest", man, root], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(),
                             preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        # mid-work: a part is open (its brotli 11 takes seconds)
        self.assertTrue(wait_open(p.pid, root + "/"), "the run never opened a file")
        time.sleep(0.05)
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
        root = self.big_tree(n=2, size=256 * 1024)
        man = self.path("m.json")

        def nohup():
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        p = subprocess.Popen([PROGRAM, "-q", "-j", "2", "--manifest", man, root], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(), preexec_fn=nohup)
        # mid-work: a part is open (its brotli 11 takes a fraction of a second)
        self.assertTrue(wait_open(p.pid, root + "/"), "the run never opened a file")
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
        r = run(["-q", "-n", "--manifest", fifo, root], timeout=20)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: not a regular file" % fifo], r)
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
        self.assertEqual(r.err_lines, ["precompress: %s: not a regular file" % fifo], r)
        self.assertFalse(os.path.lexists(out))

    def test_merge_out_must_be_nothing_or_a_manifest(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        src = os.path.join(root, "js", "app.js")
        data = read(src)
        self.refused(["merge-manifests", fifo, man], fifo)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.refused(["merge-manifests", src, man], src)
        self.assertEqual(read(src), data)
        out = self.path("merged.json.gz")
        self.refused(["merge-manifests", out, man], out,
                     what="refusing to write a manifest under an output's name (.gz, .br, .zst)")
        self.assertFalse(os.path.lexists(out))
        # A manifest there, or an empty file, is replaced; its mode kept.
        other = self.path("other.json")
        shutil.copy(man, other)
        os.chmod(other, 0o600)
        r = run(["merge-manifests", other, man])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(read(other), read(man))
        self.assertEqual(stat.S_IMODE(os.stat(other).st_mode), 0o600)

    def test_valid_json_that_is_not_a_manifest_says_so(self):
        root = self.copy_site()
        pkg = self.path("package.json")
        write(pkg, b'{"name": "site"}\n')
        r = run(["-q", "-n", "--manifest", pkg, root], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: %s" % (pkg, NOT_MANIFEST)], r)
        r = run(["merge-manifests", self.path("out.json"), pkg], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.err_lines, ["precompress: %s: %s" % (pkg, NOT_MANIFEST)], r)
        bad = self.path("bad.json")
        write(bad, b'{"precompress": 1, "files": [')
        r = run(["merge-manifests", self.path("out.json"), bad], timeout=30)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.err_lines, ["precompress: %s: not a precompress manifest (invalid JSON)" % bad], r)


if __name__ == "__main__":
    main()
