#!/usr/bin/python3
"""The bad-input matrix: each case caused for real.

Every case checks what applies of: the exit status (0, or 1 for an error);
one line on stderr per error, naming the path and the cause; every other file
processed (its outputs there and the oracle's bytes); no output for what
failed; no temp file left; sources unchanged. Races ("between the walk and
the open", "while it is read") are caused deterministically: the program runs
with -j 1 and a large file first (the largest file goes first); once
/proc/PID/fd shows that file open, the walk of the directory is over and the
other files wait in the queue, so the test changes one of them then.

Permission cases run the program as uid 65534 (setpriv), since CI runs as
root. The disk-full case mounts a 2 MiB tmpfs (skipped when mount is not
permitted). The file above 4 GiB and the 100,000 files in one directory
(class Slow) run only with PC_SLOW=1 (meson test 'badinput_slow', suite
'slow').
"""
import sys

sys.dont_write_bytecode = True
import gzip
import os
import random
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
import unittest

from pctest import (PROGRAM, PCTestCase, Result, br_oracle, child_env, decode, gz_oracle,
                    have_zstd_build, listing, load_manifest, main, make_world_accessible, manifest_by_path,
                    read, run, skipped_total, wait_open, source_snapshot, walk_all, words_data, write)

HAVE_SETPRIV = shutil.which("setpriv") is not None
PATH_MAX = 4096  # with its NUL: the longest path is 4095 bytes
NAME_MAX = 255
TMP_EXTRA = len(".") + len(".XXXXXX.tmp")  # a temp file's name: .NAME.EXT.XXXXXX.tmp


def about(line, path):
    """True if error line `line` names `path`, one of its outputs or one of its temp files."""
    if not line.startswith("precompress: ") or ": " not in line[len("precompress: "):]:
        return False
    body = line[len("precompress: "):]
    named = body[: body.rindex(": ")]
    if named in [path] + [path + "." + e for e in ("gz", "br", "zst")]:
        return True
    d, b = os.path.split(path)
    return os.path.dirname(named) == d and re.fullmatch(
        r"\." + re.escape(b) + r"\.(gz|br|zst)\.[A-Za-z0-9]{6}\.tmp", os.path.basename(named)) is not None


class Base(PCTestCase):
    def setUp(self):
        super().setUp()
        os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

    def assertNoOutputs(self, path):
        for ext in ("gz", "br", "zst"):
            self.assertFalse(os.path.lexists(path + "." + ext), "an output was left for %s" % path)

    def assertAllOutputsDecode(self, root):
        """Every output under root decodes to its source (none is partial)."""
        n = 0
        for rel, st in walk_all(root).items():
            for fmt in ("gz", "br", "zst"):
                if rel.endswith(b"." + fmt.encode()) and stat.S_ISREG(st.st_mode):
                    src = os.path.join(os.fsencode(root), rel[: -len(fmt) - 1])
                    if os.path.isfile(src):
                        self.assertEqual(decode(fmt, os.path.join(os.fsencode(root), rel)), read(src), rel)
                        n += 1
        return n

    def assertErrors(self, r, want):
        """want: [(path, cause)]: exactly these error lines, in any order."""
        got = sorted(r.error_lines())
        self.assertEqual(got, sorted("precompress: %s: %s" % (p, c) for p, c in want), r)

    def popen(self, args, **kw):
        p = subprocess.Popen([PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=child_env(cache=False), **kw)
        p.pc_args = args
        return p

    def finish(self, p, timeout=120):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("precompress did not finish within %d s" % timeout)
        return Result(p.pc_args, p.returncode, out, err)

    def race_tree(self, victim="victim.js"):
        """root/0big.txt (8 MiB: the first job, ~0.5 s of gzip -9), a victim and others."""
        root = self.path("site")
        os.makedirs(root)
        big = os.path.join(root, "0big.txt")
        write(big, words_data(8 << 20, seed=5))
        v = os.path.join(root, victim)
        write(v, words_data(5000, seed=6))
        return root, big, v, self.others(root)

    def race(self, root, big, act, extra=()):
        """Runs -j 1 gzip-only on root; calls act() once big is open (the walk is done by then)."""
        p = self.popen(["--json", "-j", "1", "--no-brotli"] + list(extra) + [root])
        opened = wait_open(p.pid, big)
        if opened:
            time.sleep(0.05)  # the walk of any subdirectory: microseconds
            act()
        r = self.finish(p)
        self.assertTrue(opened, "precompress never opened %s: %r" % (big, r))
        return r


class Nobody(Base):
    def setUp(self):
        super().setUp()
        self.use_nobody()


@unittest.skipUnless(HAVE_SETPRIV, "setpriv missing")
class Permissions(Nobody):
    def test_unreadable_file(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        bad = os.path.join(root, "secret.js")
        write(bad, words_data(4000, seed=9))
        make_world_accessible(root)
        os.chmod(bad, 0)
        snap = source_snapshot(root)
        r = self.run_nobody(["--json", root])
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(bad, "Permission denied")])
        self.assertEqual(r.summary()["failed"], 1, r)
        self.assertNoOutputs(bad)
        self.assertProcessed(root, others)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_unreadable_files_among_many_small_ones_in_one_directory(self):
        # Small files of a directory are run in units by one worker: a failure stays with its
        # own file, the files before and after it in the unit are done.
        root = self.path("site")
        os.makedirs(os.path.join(root, "many"))
        rels, bad = [], []
        for i in range(200):
            rel = os.path.join("many", "f%03d.js" % i)
            write(os.path.join(root, rel), words_data(300 + 13 * i, seed=500 + i))
            (bad if i % 23 == 5 else rels).append(rel)
        make_world_accessible(root)
        for rel in bad:
            os.chmod(os.path.join(root, rel), 0)
        snap = source_snapshot(root)
        r = self.run_nobody(["--json", "-j", "2", root])
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(os.path.join(root, rel), "Permission denied") for rel in bad])
        self.assertEqual(r.summary()["failed"], len(bad), r)
        for rel in bad:
            self.assertNoOutputs(os.path.join(root, rel))
        self.assertProcessed(root, rels)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_unreadable_directory(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        locked = os.path.join(root, "locked")
        os.makedirs(locked)
        write(os.path.join(locked, "inside.js"), words_data(4000, seed=10))
        make_world_accessible(root)
        os.chmod(locked, 0)
        before = listing(locked)
        r = self.run_nobody(["--json", root])
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(locked, "Permission denied")])
        self.assertProcessed(root, others)
        self.assertEqual(listing(locked), before, "the locked directory changed")
        self.assertNoTemps(root)

    def test_read_only_directory(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        ro = os.path.join(root, "ro")
        os.makedirs(ro)
        names = ["a.js", "b.css", "c.html"]
        for i, n in enumerate(names):
            write(os.path.join(ro, n), words_data(3000, seed=20 + i))
        make_world_accessible(root)
        os.chmod(ro, 0o755)  # root's: nobody cannot create files in it
        for n in names:
            os.chmod(os.path.join(ro, n), 0o644)
        snap = source_snapshot(root)
        r = self.run_nobody(["--json", root])
        self.assertEqual(r.rc, 1, r)
        # One line for the directory, found before its files are read; each fails
        self.assertEqual(r.error_lines(), ["precompress: %s: cannot write outputs in this directory (Permission denied): its files "
                                           "are not compressed" % ro], r)
        self.assertEqual((r.summary()["failed"], r.summary()["errors"]), (len(names), 1), r)
        self.assertEqual(sorted(os.listdir(ro)), sorted(names), "something was written in the read-only dir")
        self.assertProcessed(root, others)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)


class Races(Base):
    """Changes between the walk and the open, and during the read (see the module doc)."""

    def test_file_deleted_between_walk_and_read(self):
        root, big, victim, others = self.race_tree()
        r = self.race(root, big, lambda: os.unlink(victim))
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(victim, "No such file or directory")])
        self.assertNoOutputs(victim)
        self.assertProcessed(root, others + ["0big.txt"], formats=("gz",))
        self.assertNoTemps(root)

    def changed(self, how, tries=5):
        """how(big) while big is read; loop (bounded) until the change lands inside the read."""
        for attempt in range(tries):
            shutil.rmtree(self.path("site"), ignore_errors=True)
            root, big, victim, others = self.race_tree()
            r = self.race(root, big, lambda: how(big))
            if r.rc == 0 and r.error_lines() == []:
                continue  # the change came after the read: try again
            self.assertEqual(r.rc, 1, r)
            self.assertErrors(r, [(big, "file changed while being read")])
            self.assertNoOutputs(big)
            self.assertProcessed(root, others + [os.path.basename(victim)], formats=("gz",))
            self.assertNoTemps(root)
            return attempt + 1
        self.fail("the change never landed inside the read in %d tries" % tries)

    def test_file_appended_while_read(self):
        def grow(p):
            with open(p, "ab") as f:
                f.write(b"\nappended while precompress was reading\n")
        self.changed(grow)

    def test_file_truncated_while_read(self):
        self.changed(lambda p: os.truncate(p, 1000))

    def test_file_rewritten_in_place_while_read(self):
        def rewrite(p):  # same size, new bytes: only the mtime tells
            with open(p, "r+b") as f:
                f.write(b"X" * 4096)
        self.changed(rewrite)

    def outside_secret(self):
        outside = self.path("outside")
        os.makedirs(outside)
        secret = os.path.join(outside, "secret.txt")
        data = b"root:x:0:0:a secret outside the tree, never to be served:/root:/bin/bash\n" * 40
        write(secret, data)
        return outside, secret, data

    def assertSecretNowhere(self, root, data):
        for rel, st in walk_all(root).items():
            for fmt in ("gz", "br", "zst"):
                if rel.endswith(b"." + fmt.encode()) and stat.S_ISREG(st.st_mode):
                    got = decode(fmt, os.path.join(os.fsencode(root), rel))
                    self.assertNotIn(data[:60], got, "%r holds the bytes of a file outside the tree" % rel)

    def test_file_replaced_by_symlink_between_walk_and_open(self):
        outside, secret, data = self.outside_secret()
        before = listing(outside)
        root, big, victim, others = self.race_tree(victim="victim.txt")

        def swap():
            tmp = victim + ".new-link"
            os.symlink(secret, tmp)
            os.rename(tmp, victim)

        r = self.race(root, big, swap)
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(victim, "Too many levels of symbolic links")])
        self.assertNoOutputs(victim)
        self.assertSecretNowhere(root, data)
        self.assertEqual(listing(outside), before, "something was written outside the tree")
        self.assertProcessed(root, others + ["0big.txt"], formats=("gz",))
        self.assertNoTemps(root)

    def test_parent_directory_replaced_by_symlink_between_walk_and_open(self):
        """O_NOFOLLOW guards the last name only: the directory above the file is swapped here."""
        outside, secret, data = self.outside_secret()
        before = listing(outside)
        root, big, victim, others = self.race_tree()
        sub = os.path.join(root, "zsub")
        os.makedirs(sub)
        write(os.path.join(sub, "secret.txt"), words_data(4000, seed=77))

        def swap():
            os.rename(sub, sub + ".real")
            os.symlink(outside, sub)

        r = self.race(root, big, swap)
        self.assertIn(r.rc, (0, 1), r)
        self.assertEqual(listing(outside), before, "something was written outside the tree: %r" % r)
        self.assertSecretNowhere(root, data)
        self.assertProcessed(root, others + ["0big.txt", os.path.basename(victim)], formats=("gz",))
        self.assertNoTemps(root)

    def test_file_replaced_by_fifo_between_walk_and_open(self):
        root, big, victim, others = self.race_tree()

        def swap():
            tmp = victim + ".fifo"
            os.mkfifo(tmp)
            os.rename(tmp, victim)

        r = self.race(root, big, swap)
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(victim, "not a regular file")])
        self.assertNoOutputs(victim)
        self.assertProcessed(root, others + ["0big.txt"], formats=("gz",))
        self.assertNoTemps(root)


class Collisions(Base):
    def test_output_name_taken_by_a_directory(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        js = os.path.join(root, "app.js")
        write(js, words_data(5000, seed=30))
        css = os.path.join(root, "app.css")
        write(css, words_data(5000, seed=31))
        for d in (js + ".gz", css + ".br"):
            os.makedirs(d)
            write(os.path.join(d, "keep.png"), b"a file inside the directory in the way\n")
        snap = source_snapshot(root)
        r = run(["--json", root])
        self.assertEqual(r.rc, 1, r)
        self.assertErrors(r, [(js + ".gz", "output name is taken by a directory"),
                              (css + ".br", "output name is taken by a directory")])
        self.assertEqual(r.summary()["failed"], 2, r)
        for d in (js + ".gz", css + ".br"):
            self.assertEqual(os.listdir(d), ["keep.png"], "the directory in the way was changed")
        # what was written beside them is whole
        self.assertAllOutputsDecode(root)
        self.assertProcessed(root, others)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)


class Special(Base):
    def test_fifo_socket_device_skipped_never_opened(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        fifo = os.path.join(root, "pipe.js")
        os.mkfifo(fifo)
        sock_path = os.path.join(root, "sock.css")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(sock_path)
        self.addCleanup(sock.close)
        specials = [fifo, sock_path]
        try:
            dev = os.path.join(root, "null.html")
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            specials.append(dev)
        except (PermissionError, OSError) as e:
            print("(mknod not permitted, no device node: %s)" % e)
        os.symlink("/dev/null", os.path.join(root, "devnull.txt"))
        os.symlink("pipe.js", os.path.join(root, "pipe-link.js"))
        specials += [os.path.join(root, "devnull.txt"), os.path.join(root, "pipe-link.js")]

        # A reader of the FIFO would let a non-blocking writer open it: watch for one.
        stop = threading.Event()
        opened = []

        def watch():
            while not stop.is_set():
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    time.sleep(0.0002)
                    continue
                opened.append(True)
                os.close(fd)
                return

        t = threading.Thread(target=watch)
        t.start()
        try:
            r = run(["-v", "--json", root], timeout=10)
            r2 = run(["-v", "--json", fifo, sock_path, os.path.join(root, "devnull.txt")], timeout=10)  # given as PATHs
        finally:
            stop.set()
            t.join()
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        for s in specials:
            self.assertIn("skipped %s (special)" % s, r.out_lines)
            self.assertNoOutputs(s)
        self.assertEqual(r.summary()["skipped"]["special"], len(specials), r)
        self.assertEqual(r2.rc, 0, r2)
        self.assertEqual(r2.summary()["skipped"]["special"], 3, r2)
        self.assertFalse(opened, "the FIFO was opened for reading")
        self.assertProcessed(root, others)
        self.assertNoTemps(root)


class Names(Base):
    NAMES = [b"with space.js", b"new\nline.css", b"tab\there.html", b"quote'single.js", b'quote"double.js',
             b"back\\slash.js", b"-rf.js", b"--help.css", b"-.txt", b"*.js", b"[a].js", b"caf\xc3\xa9.js",
             b"\xe6\x97\xa5\xe6\x9c\xac.html", b"latin1-caf\xe9.js", b"bad\xff\xfe.txt", b"ctl\x01\x1f.js",
             b" leading-space.js", b"trailing-space.js ", b"$(echo pwned).js", b"%s%n.js"]

    def test_odd_names_all_processed_manifest_valid(self):
        root = self.path("site")
        os.makedirs(root)
        broot = os.fsencode(root)
        for i, n in enumerate(self.NAMES):
            write(os.path.join(broot, n), words_data(2000 + 10 * i, seed=50 + i))
        os.makedirs(os.path.join(broot, b"dir \n\xff"))
        write(os.path.join(broot, b"dir \n\xff", b"in\\side.js"), words_data(2500, seed=90))
        man = self.path("m.json")
        r = run(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        m, raw = load_manifest(man)  # strict RFC 8259
        recs = manifest_by_path(m)
        rels = list(self.NAMES) + [b"dir \n\xff/in\\side.js"]
        self.assertEqual(sorted(recs), sorted(rels))
        for rel in rels:
            e = recs[rel]
            try:
                rel.decode("utf-8")
                self.assertNotIn("path_hex", e, rel)
            except UnicodeDecodeError:
                self.assertEqual(e.get("path_hex"), rel.hex(), rel)
            data = read(os.path.join(broot, rel))
            self.assertEqual(read(os.path.join(broot, rel + b".gz")), gz_oracle(data), rel)
            self.assertEqual(read(os.path.join(broot, rel + b".br")), br_oracle(data), rel)
            self.assertEqual(e["gz"]["size"], len(gz_oracle(data)))
        self.assertNoTemps(root)

    def test_leading_dash_path_argument(self):
        root = self.path("site")
        os.makedirs(root)
        write(os.path.join(root, "-rf.js"), words_data(3000, seed=60))
        write(os.path.join(root, "--version"), words_data(3000, seed=61))
        r = run(["--", "-rf.js", "--version"], cwd=root)
        self.assertEqual(r.rc, 0, r)
        self.assertProcessed(root, ["-rf.js", "--version"])


class Lengths(Base):
    """Long paths and deep trees. PATH_MAX is 4096 (4095 bytes and a NUL); a
    temp file's name is its output's plus 12 bytes (.NAME.EXT.XXXXXX.tmp)."""

    def deep_dir(self, total_len, comp=200):
        """A directory whose full path is exactly total_len bytes."""
        base = self.path("long")
        os.makedirs(base, exist_ok=True)
        path = base
        while total_len - len(path) > comp + 1 + 50:
            path = os.path.join(path, "d" * comp)
        path = os.path.join(path, "e" * (total_len - len(path) - 1))
        self.assertEqual(len(path), total_len)
        os.makedirs(path, exist_ok=True)
        return path

    def test_path_of_4000_bytes(self):
        root = self.path("long")
        d = self.deep_dir(3900)
        f = os.path.join(d, "f" * (4000 - len(d) - 1 - 3) + ".js")
        self.assertEqual(len(f), 4000)
        write(f, words_data(3000, seed=70))
        zst = have_zstd_build()
        r = run(["--json"] + (["--zstd"] if zst else []) + [root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertProcessed(root, [os.path.relpath(f, root)], formats=("gz", "br", "zst") if zst else ("gz", "br"))
        self.assertNoTemps(root)

    def near_limit(self, lengths, formats, name_of):
        """Files at the given lengths: processed when every name the run needs fits, else one
        error line (File name too long) naming it; never a crash, never a temp left."""
        root = self.path("long")
        files = {}
        for L in lengths:
            f = name_of(L)
            write(f, words_data(3000, seed=L))
            files[L] = f
        args = {("gz",): ["--formats", "gz"], ("gz", "br"): [], ("gz", "zst"): ["--formats", "gz,zst"]}[formats]
        r = run(["-v", "--json"] + args + [root])
        self.assertGreaterEqual(r.rc, 0, "killed by a signal: %r" % r)
        self.assertIn(r.rc, (0, 1), r)
        errs = r.error_lines()
        observed = {}
        for L, f in sorted(files.items()):
            mine = [l for l in errs if about(l, f)]
            worst_base = max(len(os.path.basename(f)) + 1 + len(x) for x in formats)
            # The tool names outputs relative to the file's directory: only the
            # name must fit NAME_MAX, whatever the length of the whole path.
            fits = worst_base <= NAME_MAX
            if mine:
                self.assertEqual(len(mine), 1, "more than one line for one file: %r" % mine)
                self.assertTrue(mine[0].endswith(": File name too long"), mine[0])
                self.assertNoOutputs(f)
                observed[L] = "error"
            else:
                self.assertProcessed(root, [os.path.relpath(f, root)], formats=formats)
                observed[L] = "ok"
            with self.subTest(length=L, output_fits=fits):
                # What the brief asks: an error only where an output name would not fit.
                self.assertEqual(observed[L], "ok" if fits else "error",
                                 "path of %d bytes, longest output name %d bytes: %s"
                                 % (len(f), worst_base, observed[L]))
        self.assertEqual(len(errs), list(observed.values()).count("error"), r)
        self.assertEqual(r.rc, 1 if "error" in observed.values() else 0, r)
        self.assertNoTemps(root)
        print("%s: %s" % (",".join(formats), ", ".join("%d:%s" % kv for kv in sorted(observed.items()))))

    def test_paths_at_the_path_max_limit(self):
        d = self.deep_dir(3950)

        def name_of(L):
            return os.path.join(d, "f" * (L - len(d) - 1))
        lengths = [4070, 4079, 4080, 4081, 4085, 4091, 4092, 4093, 4095]
        self.near_limit(lengths, ("gz", "br"), name_of)

    def test_names_at_the_name_max_limit(self):
        d = self.path("long")
        os.makedirs(d)

        def name_of(n):
            return os.path.join(d, "n" * n)
        self.near_limit([230, 240, 241, 245, 252, 253, 255], ("gz", "br"), name_of)

    def test_tree_200_levels_deep(self):
        root = self.path("deep")
        path = root
        want = []
        for level in range(200):
            path = os.path.join(path, "d%d" % (level % 10))
            if level % 20 == 19 or level == 199:
                os.makedirs(path, exist_ok=True)
                write(os.path.join(path, "f.js"), words_data(2000, seed=level))
                want.append(os.path.relpath(os.path.join(path, "f.js"), root))
        man = self.path("m.json")
        r = run(["--json", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(sorted(e["path"] for e in load_manifest(man)[0]["files"]), sorted(want))
        self.assertProcessed(root, want)
        self.assertNoTemps(root)

    def test_tree_200_levels_deep_beyond_path_max(self):
        """200 levels of 30-byte names: 6,200 bytes, past PATH_MAX. Made with *at() calls. The
        walk opens each directory below its parent and a job its directory a piece at a time:
        every file is processed, none fails."""
        root = self.path("deeper")
        os.makedirs(root)
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        length = len(root)
        lengths = {}
        try:
            for level in range(200):
                name = ("L%03d" % level) + "x" * 26
                os.mkdir(name, dir_fd=fd)
                nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nfd
                length += 1 + len(name)
                if level % 10 == 9:
                    ffd = os.open("f.js", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                    os.write(ffd, words_data(2000, seed=level))
                    os.close(ffd)
                    lengths[level] = length + len("/f.js")
        finally:
            os.close(fd)
        r = run(["-q", root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        ok = [lv for lv, L in lengths.items() if L + 3 + TMP_EXTRA <= PATH_MAX - 1]
        # the files within PATH_MAX are processed (deeper ones: test_safety.DeepTree reads
        # them through descriptors)
        path = root
        for level in range(max(ok) + 1):
            path = os.path.join(path, ("L%03d" % level) + "x" * 26)
            if level in ok:
                self.assertProcessed(root, [os.path.relpath(os.path.join(path, "f.js"), root)])
        self.assertEqual(r.rc, 1 if r.error_lines() else 0, r)
        print("deep tree past PATH_MAX: exit %d, %d error lines: %s" % (r.rc, len(r.error_lines()),
                                                                          [l[:40] + "..." + l[-30:] for l in r.error_lines()]))


class Sizes(Base):
    def test_empty_directory_and_empty_tree(self):
        root = self.path("empty")
        os.makedirs(root)
        man = self.path("m.json")
        r = run(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        s = r.summary()
        self.assertEqual((s["files"], s["compressed"], skipped_total(s), s["failed"]), (0, 0, 0, 0), r)
        self.assertEqual(load_manifest(man)[0]["files"], [])
        self.assertEqual(os.listdir(root), [])
        for d in ("a", "a/b", "a/b/c", "d"):
            os.makedirs(os.path.join(root, d))
        r = run(["--json", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.summary()["files"], 0, r)
        self.assertEqual(sorted(os.listdir(root)), ["a", "d"])
        self.assertEqual(walk_all(root).keys(), {b"a", b"a/b", b"a/b/c", b"d"})

    def test_zero_byte_file(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        z = os.path.join(root, "zero.js")
        write(z, b"")
        r = run(["-v", root])
        self.assertEqual(r.rc, 0, r)
        self.assertIn("skipped %s (empty)" % z, r.out_lines)
        self.assertNoOutputs(z)
        self.assertProcessed(root, others)

    def test_min_size_threshold(self):
        root = self.path("site")
        os.makedirs(root)
        for n in (999, 1000, 1023, 1024):
            write(os.path.join(root, "f%d.txt" % n), words_data(n, seed=n))
        r = run(["-v", "--min-size", "1000", root])
        self.assertEqual(r.rc, 0, r)
        self.assertIn("skipped %s/f999.txt (min-size)" % root, r.out_lines)
        self.assertNoOutputs(os.path.join(root, "f999.txt"))
        self.assertProcessed(root, ["f1000.txt", "f1023.txt", "f1024.txt"])
        for f in os.listdir(root):
            if f.endswith((".gz", ".br")):
                os.unlink(os.path.join(root, f))
        # k, kb, KiB, kB: 1024 each (as zstd reads them); 1024B in bytes.
        for size in ("1k", "1kb", "1KiB", "1kB", "1024B"):
            with self.subTest(size):
                for f in os.listdir(root):
                    if f.endswith((".gz", ".br")):
                        os.unlink(os.path.join(root, f))
                r = run(["-v", "--min-size", size, root])
                self.assertEqual(r.rc, 0, r)
                for n in (999, 1000, 1023):
                    self.assertIn("skipped %s/f%d.txt (min-size)" % (root, n), r.out_lines)
                    self.assertNoOutputs(os.path.join(root, "f%d.txt" % n))
                self.assertProcessed(root, ["f1024.txt"])


@unittest.skipUnless(os.geteuid() == 0, "mount needs root")
class DiskFull(Base):
    def test_disk_fills_up_mid_run(self):
        mnt = self.path("small")
        os.makedirs(mnt)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            self.skipTest("cannot mount a tmpfs here: %s" % p.stdout.decode(errors="replace").strip())
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        # base64 of random bytes: kept (about 76 %) but big outputs: the sources
        # fit, their outputs do not.
        import base64
        rnd = random.Random(3)
        files = []
        for i in range(14):
            rel = "f%02d.js" % i
            size = 300_000 if i == 0 else 80_000
            raw = rnd.randbytes(size * 3 // 4)
            write(os.path.join(mnt, rel), base64.encodebytes(raw)[:size])
            files.append(rel)
        snap = source_snapshot(mnt)
        r = run(["--json", "-j", "2", mnt], timeout=120)
        self.assertEqual(r.rc, 1, r)
        errs = r.error_lines()
        self.assertTrue(errs, "the disk never filled up: %r" % r)
        failed = set()
        for l in errs:
            self.assertTrue(l.endswith(": No space left on device"), l)
            named = [f for f in files if about(l, os.path.join(mnt, f))]
            self.assertEqual(len(named), 1, "the line names no file: %s" % l)
            self.assertNotIn(named[0], failed, "two lines for one file: %r" % errs)
            failed.add(named[0])
        self.assertEqual(r.summary()["failed"], len(failed), r)
        # every file is either fully processed or reported, and nothing partial is left
        for f in files:
            if f not in failed:
                self.assertProcessed(mnt, [f])
        n = self.assertAllOutputsDecode(mnt)
        self.assertSourcesUnchanged(snap, mnt)
        self.assertNoTemps(mnt)
        print("disk full: %d of %d files failed, %d outputs written and valid; lines like: %s"
              % (len(failed), len(files), n, errs[0]))


@unittest.skipUnless(os.environ.get("PC_SLOW") == "1", "suite 'slow' only (PC_SLOW=1)")
class Slow(Base):
    def test_100000_files_in_one_directory(self):
        root = self.path("many")
        os.makedirs(root)
        n = 100_000
        line = b"<li class=\"item\">precompress test entry, compressible text that repeats itself</li>\n"
        for i in range(n):
            with open(os.path.join(root, "f%06d.html" % i), "wb") as f:
                f.write(b"<!-- %d -->\n" % i + line * 3)
        t0 = time.monotonic()
        r = run(["-q", "--no-brotli", root], timeout=600)
        took = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        names = os.listdir(root)
        outs = [x for x in names if x.endswith(".gz")]
        self.assertEqual(len(outs), n)
        self.assertEqual(len(names), 2 * n, "something besides sources and .gz outputs")
        rnd = random.Random(1)
        for i in rnd.sample(range(n), 2000) + [0, n - 1]:
            src = os.path.join(root, "f%06d.html" % i)
            self.assertEqual(read(src + ".gz"), gz_oracle(read(src)))
        print("100,000 files: %.1f s" % took)


    def test_sparse_file_larger_than_4gib(self):
        root = self.path("huge")
        os.makedirs(root)
        big = os.path.join(root, "huge.txt")
        size = (4 << 30) + 12345
        head = words_data(1 << 20, seed=1)
        tail = words_data(1 << 20, seed=2)
        with open(big, "wb") as f:
            f.write(head)
            f.seek(size - len(tail))
            f.write(tail)
        self.assertEqual(os.path.getsize(big), size)
        snap = source_snapshot(root)
        t0 = time.monotonic()
        r = run(["-q", "--formats", "gz", root], timeout=1800)
        took = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        out = big + ".gz"
        with open(out, "rb") as f:
            f.seek(-4, os.SEEK_END)
            isize = int.from_bytes(f.read(4), "little")
        self.assertEqual(isize, size % (1 << 32), "ISIZE is not the size mod 2^32")
        # decode streaming and compare with the source streaming
        n = 0
        with gzip.open(out, "rb") as g, open(big, "rb") as s:
            while True:
                a = g.read(1 << 22)
                b = s.read(len(a)) if a else s.read(1)
                self.assertEqual(a == b, True, "the .gz differs from the source at offset %d" % n)
                if not a:
                    break
                n += len(a)
        self.assertEqual(n, size)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)
        print("4 GiB + 12345 bytes: gzip -9 in %.1f s, .gz %d bytes" % (took, os.path.getsize(out)))


if __name__ == "__main__":
    main()
