#!/usr/bin/python3
"""What a run leaves behind when things go wrong or another account shares
the tree:

- a file that fails keeps no old output under a served name: its old
  outputs no longer match it, or nothing shows they do;
- outputs take the source's owner and group (as root), or its group where
  the kernel lets a user give it;
- --dry-run and --check change nothing in the cache: no directory made, no
  entry refreshed, added or removed;
- a FIFO planted at a cache entry's name does not hang the run;
- a PATH given twice, or inside another, is walked once, and many file
  PATHs in one directory share one descriptor;
- two runs on one tree at once: neither takes the other's live temp file
  for a killed run's;
- identical files' outputs, and the cache's entries, come from the run's
  own bytes, never read back from output names another account may swap;
- the cache is private (entries 0600, directories 0700), and one another
  user owns or others can write is refused (exit 2);
- a tree deeper than PATH_MAX is walked and compressed: every directory
  is opened below its parent's descriptor by its name (a directory swapped
  for a link mid-walk: selection/test_links.py).
"""
import sys

sys.dont_write_bytecode = True
import gzip
import json
import os
import shutil
import stat
import subprocess
import threading
import time
import unittest

from pctest import (NOBODY, PROGRAM, STORE, PCTestCase, br_oracle, brotli, child_env, decode, gz_oracle, main,
                    make_world_accessible, run, sha256, store_exec, store_path, store_rows, temp_leftovers, walk_all,
                    words_data)


def outputs_of(root, rel):
    return sorted(e for e in ("gz", "br") if os.path.lexists(os.path.join(root, rel + "." + e)))


class FailedFileOutputs(PCTestCase):
    def site(self):
        root = self.copy_site()
        self.run_ok([root])
        self.assertEqual(outputs_of(root, "js/app.js"), ["br", "gz"])
        return root

    def test_unreadable_changed_file_loses_its_old_outputs(self):
        """The file changes and becomes unreadable to the account that runs: it fails, and
        its outputs, made from the old bytes, go."""
        self.use_nobody()
        root = self.site()
        app = os.path.join(root, "js", "app.js")
        with open(app, "ab") as f:
            f.write(b"\n// new code\n" * 50)
        make_world_accessible(root)
        os.chmod(app, 0)
        r = self.run_nobody(["--json", root])
        self.assertEqual(r.rc, 1, r)
        self.assertIn("precompress: %s: Permission denied" % app, r.err_lines, r)
        self.assertEqual(outputs_of(root, "js/app.js"), [], "stale outputs of a failed file stayed")
        self.assertEqual(json.loads(r.out)["removed"], 2, r)
        # other files are untouched
        self.assertEqual(outputs_of(root, "index.html"), ["br", "gz"])

    def test_one_format_fails_the_other_old_output_goes(self):
        """.gz cannot be written (a directory took its name): the file fails, and its old .br,
        made from the old bytes, is removed rather than served beside a new file."""
        root = self.site()
        app = os.path.join(root, "js", "app.js")
        with open(app, "wb") as f:
            f.write(words_data(50000, seed=9))
        os.unlink(app + ".gz")
        os.mkdir(app + ".gz")
        r = run(["-v", root])
        self.assertEqual(r.rc, 1, r)
        self.assertTrue(any(l.startswith("precompress: %s.gz: " % app) for l in r.err_lines), r)
        self.assertFalse(os.path.exists(app + ".br"), "the old .br of a failed file stayed")
        self.assertTrue(os.path.isdir(app + ".gz"), "a directory is not ours to remove")

    def test_dry_run_removes_nothing(self):
        root = self.site()
        app = os.path.join(root, "js", "app.js")
        with open(app, "wb") as f:
            f.write(words_data(50000, seed=9))
        os.unlink(app + ".gz")
        os.mkdir(app + ".gz")
        def tree():  # what a run may change: names, kinds, sizes, mtimes (a read moves atime)
            return {k: (stat.S_IFMT(v.st_mode), v.st_size, v.st_mtime_ns) for k, v in walk_all(root).items()}
        before = tree()
        r = run(["-n", "--json", root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(tree(), before, "a dry run changed the tree")
        self.assertEqual(json.loads(r.out.strip().splitlines()[-1])["removed"], 1, r)

    def test_vanished_file_keeps_outputs(self):
        """A file gone since the listing is not a failure of its outputs: outputs whose source
        is gone are left alone (README), and so are these."""
        root = self.site()
        os.unlink(os.path.join(root, "js", "app.js"))
        r = self.run_ok([root])
        self.assertEqual(outputs_of(root, "js/app.js"), ["br", "gz"], r)


class Ownership(PCTestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("ownership cases need root")

    def test_root_gives_outputs_the_sources_owner_and_group(self):
        root = self.copy_site()
        app = os.path.join(root, "js", "app.js")
        os.chown(app, NOBODY, NOBODY)
        os.chmod(app, 0o640)
        self.run_ok([root])
        for ext in ("gz", "br"):
            st = os.lstat(app + "." + ext)
            self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (NOBODY, NOBODY, 0o640), ext)
            self.assertEqual(decode(ext, app + "." + ext), open(app, "rb").read())
        # a file of root's keeps root's
        st = os.lstat(os.path.join(root, "index.html.gz"))
        self.assertEqual((st.st_uid, st.st_gid), (0, 0))

    def test_user_keeps_its_own_group_when_it_may_not_give_the_sources(self):
        """nobody may not give its outputs group 0: the run still succeeds, outputs in
        nobody's group."""
        self.use_nobody()
        root = self.copy_site()
        make_world_accessible(root)
        app = os.path.join(root, "js", "app.js")
        os.chown(app, NOBODY, 0)
        os.chmod(app, 0o640)
        r = self.run_nobody([root])
        self.assertEqual(r.rc, 0, r)
        st = os.lstat(app + ".gz")
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (NOBODY, NOBODY, 0o640))


def cache_state(cache):
    """{rel: (mtime_ns, size)} of every file under the cache dir, and the dirs."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(cache):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[os.path.relpath(p, cache)] = (st.st_mtime_ns, st.st_size, stat.S_IFMT(st.st_mode))
    return out


class DryRunCache(PCTestCase):
    def test_dry_run_and_check_do_not_create_a_cache(self):
        root = self.copy_site()
        cache = self.path("cache")
        for mode in (["-n"], ["--check"]):
            with self.subTest(mode=mode):
                r = run(mode + ["-q", "--cache-dir", cache, root])
                self.assertIn(r.rc, (0, 1), r)
                self.assertFalse(os.path.lexists(cache), "%s created the cache directory" % mode)
                self.assertEqual(r.error_lines(), [l for l in r.error_lines() if "cache" not in l], r)

    def test_dry_run_and_check_leave_a_cache_as_it_is(self):
        root = self.copy_site()
        cache = self.path("cache")
        self.run_ok(["--cache-dir", cache, root])
        rows = store_rows(cache)
        self.assertTrue(rows)
        # old last-use times the refresh would move, and one corrupt entry a real run removes
        store_exec(cache, ("UPDATE entry SET used = 1000", ()),
                   ("UPDATE payload SET data = ? WHERE id = ?", (b"XX" + rows[0]["data"][2:], rows[0]["id"])))
        before = cache_state(cache)
        before_bytes = sha256(store_path(cache))
        for mode in (["-n"], ["--check"]):
            with self.subTest(mode=mode):
                fresh = self.copy_site("fresh-%s" % mode[0].strip("-"))
                # a changed file: a miss a real run would store
                with open(os.path.join(fresh, "js", "app.js"), "ab") as f:
                    f.write(b"// changed\n" * 40)
                r = run(mode + ["--cache-dir", cache, fresh])
                self.assertIn(r.rc, (0, 1), r)
                self.assertEqual(cache_state(cache), before, "%s changed the cache" % mode)
                self.assertEqual(sha256(store_path(cache)), before_bytes, "%s changed the store" % mode)


class CacheFifo(PCTestCase):
    def test_fifo_at_the_store_or_beside_it_does_not_hang_the_run(self):
        for name in (STORE, STORE + "-wal"):
            with self.subTest(fifo=name):
                root = self.copy_site("first-" + name)
                cache = self.path("cache-" + name)
                self.run_ok(["--cache-dir", cache, root])
                p = os.path.join(cache, name)
                if os.path.exists(p):
                    os.unlink(p)
                os.mkfifo(p, 0o600)
                fresh = self.copy_site("fresh-" + name)
                r = run(["--cache-dir", cache, fresh], timeout=60)
                self.assertEqual(r.rc, 1, r)
                self.assertIn("precompress: %s: not a precompress cache store, or a damaged one" % cache,
                              r.err_lines, r)
                for rel in ("js/app.js", "index.html"):
                    src = os.path.join(fresh, rel)
                    for ext in ("gz", "br"):
                        self.assertEqual(decode(ext, src + "." + ext), open(src, "rb").read())

    def test_symlink_at_the_store_is_refused(self):
        root = self.copy_site()
        cache = self.path("cache")
        os.makedirs(cache, mode=0o700)
        target = self.path("elsewhere.sqlite")
        os.symlink(target, os.path.join(cache, STORE))
        before = walk_all(root)
        r = run(["--cache-dir", cache, root])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("precompress: %s: refusing a cache another user owns or others can write" % cache,
                      r.err_lines, r)
        self.assertFalse(os.path.lexists(target), "the store was made through the link")
        self.assertEqual(sorted(walk_all(root)), sorted(before))


class OverlappingPaths(PCTestCase):
    def test_repeated_and_nested_paths_are_walked_once(self):
        """`ov ov/css ov ov/js/app.js`: every file once, under the one root; a second
        incremental run finds every file unchanged."""
        root = self.copy_site("ov")
        m = self.path("m.json")
        args = ["--json", "--manifest", m, root, os.path.join(root, "css"), root,
                os.path.join(root, "js", "app.js")]
        r = self.run_ok(args)
        first = json.loads(r.out)
        man = json.load(open(m))
        paths = [e["path"] for e in man["files"]]
        self.assertEqual(len(paths), len(set(paths)), paths)
        self.assertNotIn("roots", man)
        self.assertEqual(first["files"], len(paths))
        r = self.run_ok(args)
        second = json.loads(r.out)
        self.assertEqual(second["compressed"], 0, second)
        self.assertEqual(second["unchanged"], first["compressed"] + first["skipped"]["ratio"], second)

    def test_a_path_through_a_symlink_is_the_same_path(self):
        root = self.copy_site("real")
        link = self.path("link")
        os.symlink(root, link)
        once = json.loads(self.run_ok(["--json", "-q", root]).out)["files"]
        for args in ([root, link], [link, root]):
            with self.subTest(args=args):
                r = self.run_ok(["--json", "--force"] + args)
                self.assertEqual(json.loads(r.out)["files"], once, r)


class ManyPaths(PCTestCase):
    @unittest.skipUnless(shutil.which("prlimit"), "prlimit (util-linux) is missing")
    def test_1500_file_paths_under_ulimit_n_1024(self):
        d = self.path("many")
        os.makedirs(d)
        names = []
        for i in range(1500):
            p = os.path.join(d, "f%04d.js" % i)
            with open(p, "wb") as f:
                f.write(b"var x%d = 'hello world, hello world, hello world, hello world';\n" % i)
            names.append(p)
        r = run(["--nofile=1024", "--", os.environ["PRECOMPRESS"], "--json", "--no-brotli"] + names,
                program="prlimit", timeout=300)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(json.loads(r.out)["compressed"], 1500, r.out)


class ConcurrentRuns(PCTestCase):
    def test_two_runs_on_one_tree(self):
        """A second run starts while the first writes a big output: it must not take the
        first's live temp file for a killed run's. Both exit 0, outputs right, no temp left."""
        root = self.copy_site()
        big = os.path.join(root, "big.js")
        with open(big, "wb") as f:
            # gzip -9 takes a few seconds and spills its output to the temp file early
            f.write(words_data(24 << 20, seed=5))
        cmd = [os.environ["PRECOMPRESS"], "--no-brotli", "-j1", root]
        for _ in range(3):
            first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
            deadline = time.time() + 30
            # wait until the first run's temp for big.js.gz exists
            while time.time() < deadline and not any(n.startswith(".big.js.gz.") for n in os.listdir(root)):
                time.sleep(0.01)
            second = run(["--no-brotli", "-j1", root])
            out, err = first.communicate(timeout=120)
            self.assertEqual(second.rc, 0, second)
            self.assertEqual(first.returncode, 0, err.decode())
            self.assertEqual(temp_leftovers(root), [])
            with open(big, "rb") as f:
                self.assertEqual(decode("gz", big + ".gz"), f.read())

    def test_a_killed_runs_temp_is_still_removed(self):
        root = self.copy_site()
        stale = os.path.join(root, "js", ".app.js.gz.AbC123.tmp")
        with open(stale, "wb") as f:
            f.write(b"half")
        # made before the run, and nobody holds it
        self.run_ok([root])
        self.assertFalse(os.path.exists(stale))


class Swapper:
    """Another account's loop, for the life of a `with`: keeps renaming same-length garbage
    in at each target name ({path: size}). A link and a rename make a swap, microseconds each,
    so the window after the run's own rename is hit often; two inodes take turns per name,
    since a rename onto a link of the same inode does nothing. The spare files live in
    `scratch`, outside the walked tree (a file vanishing from a listing fails) but on its
    file system."""

    def __init__(self, scratch, targets):
        self.items = []
        for k, (target, size) in enumerate(sorted(targets.items())):
            spares = []
            for turn in (0, 1):
                p = os.path.join(scratch, "junk%d.%d" % (k, turn))
                with open(p, "wb") as f:
                    f.write(bytes([0x5a + turn]) * size)
                spares.append(p)
            self.items.append((target, spares, os.path.join(scratch, "swap%d" % k)))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop)

    def loop(self):
        turn = 0
        while not self.stop.is_set():
            for target, spares, link in self.items:
                try:
                    os.link(spares[turn & 1], link)
                    os.rename(link, target)
                except OSError:
                    pass
            turn += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


class DedupeCopies(PCTestCase):
    def test_swapped_leader_output_never_reaches_another_users_file(self):
        """Another account owns the directory of the first of many identical files and keeps
        swapping same-length garbage in at that file's output names. The copies beside the
        other files come from the leader's own bytes, never from those names: all decode."""
        data = words_data(20000, seed=77)
        for attempt in range(3):
            root = self.path("t%d" % attempt)
            a = os.path.join(root, "z")  # walked first (the walk's stack): its file leads
            b = os.path.join(root, "a")
            os.makedirs(a)
            os.makedirs(b)
            os.chown(a, NOBODY, NOBODY)
            with open(os.path.join(a, "lead.js"), "wb") as f:
                f.write(data)
            # other files beside it make its directory's unit the largest: it runs first
            for i in range(5):
                with open(os.path.join(a, "other%d.js" % i), "wb") as f:
                    f.write(words_data(20000, seed=100 + i))
            for i in range(40):
                os.makedirs(os.path.join(b, "%02d" % i))
                with open(os.path.join(b, "%02d" % i, "copy.js"), "wb") as f:
                    f.write(data)
            scratch = self.path("scratch%d" % attempt)
            os.makedirs(scratch)
            lead = os.path.join(a, "lead.js")
            with Swapper(scratch, {lead + ".gz": len(gz_oracle(data)), lead + ".br": len(br_oracle(data))}):
                r = run(["-j1", "--json", root])
            self.assertEqual(r.rc, 0, r)
            # they were copies, not compressed again (else this proves nothing)
            self.assertEqual(json.loads(r.out)["deduped"], 40, r.out)
            for i in range(40):
                p = os.path.join(b, "%02d" % i, "copy.js")
                for ext in ("gz", "br"):
                    try:
                        got = decode(ext, p + "." + ext)
                    except Exception as e:  # garbage does not even decode
                        self.fail("%s.%s: %s" % (p, ext, e))
                    self.assertEqual(got, data, "%s.%s holds another account's bytes" % (p, ext))


class CachePoisoning(PCTestCase):
    def test_swapped_output_never_reaches_the_cache(self):
        """Another account owns the directory of a file whose .gz (over 1 MiB, so written
        through its temp file) goes into a root-only cache, and keeps swapping same-length
        garbage in at that name. The entry comes from the run's own bytes: a later run in
        another tree takes a .gz from the cache that decodes to its source."""
        data = words_data(4 << 20, seed=21)
        n = len(gz_oracle(data))
        for attempt in range(3):
            cache = self.path("cache%d" % attempt)
            os.makedirs(cache, mode=0o700)
            tree = self.path("t%d" % attempt)
            z = os.path.join(tree, "z")
            os.makedirs(z)
            os.chown(z, NOBODY, NOBODY)
            with open(os.path.join(z, "big.js"), "wb") as f:
                f.write(data)
            scratch = self.path("scratch%d" % attempt)
            os.makedirs(scratch)
            with Swapper(scratch, {os.path.join(z, "big.js.gz"): n}):
                r = run(["-j1", "--no-brotli", "--cache-dir", cache, tree])
            self.assertEqual(r.rc, 0, r)
            other = self.path("other%d" % attempt)
            os.makedirs(other)
            with open(os.path.join(other, "big.js"), "wb") as f:
                f.write(data)
            r = run(["-v", "--no-brotli", "--cache-dir", cache, other])
            self.assertEqual(r.rc, 0, r)
            self.assertIn("cached %s/big.js" % other, " ".join(r.out_lines), r)
            out = os.path.join(other, "big.js.gz")
            try:
                got = decode("gz", out)
            except Exception as e:
                self.fail("the cache gave %s another account's bytes: %s" % (out, e))
            self.assertEqual(got, data)


class Openat2Refused(PCTestCase):
    """Under a seccomp profile that answers openat2 with EPERM (Docker before
    20.10, systemd-nspawn; here strace's injection), jobs open their directories one
    component at a time, each O_NOFOLLOW, instead of failing every file below the top."""

    def test_every_file_compressed_when_openat2_is_refused(self):
        if shutil.which("strace") is None:
            self.skipTest("strace is not installed")
        if os.environ.get("PC_PORTABLE") == "1":
            self.skipTest("-Dportable=true: no openat2 call to refuse (unit test portable)")
        root = self.copy_site()
        log = self.path("strace.log")
        env = child_env()
        # LeakSanitizer cannot run under ptrace (it aborts at exit).
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        p = subprocess.run(["strace", "-f", "-qq", "-o", log, "-e", "trace=openat2",
                            "-e", "inject=openat2:error=EPERM", PROGRAM, "-j2", root],
                           env=env, capture_output=True, timeout=120)
        with open(log) as f:
            injected = f.read().count("(INJECTED)")
        if p.returncode != 0 and injected == 0:
            self.skipTest("strace could not trace here: %s" % p.stderr.decode(errors="replace")[-300:])
        self.assertGreater(injected, 0, "no openat2 call was refused: the test tested nothing")
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        for rel in ("js/app.js", "css/site.css", "index.html"):
            src = os.path.join(root, rel)
            if not os.path.exists(src):
                continue
            for ext in ("gz", "br"):
                if os.path.exists(src + "." + ext):
                    self.assertEqual(decode(ext, src + "." + ext), open(src, "rb").read())
        deep = [rel for rel in walk_all(root) if rel.count(b"/") >= 2 and rel.endswith(b".gz")]
        self.assertTrue(deep, "no output below the top level")


class PlantedCacheLinks(PCTestCase):
    """Links planted in the cache directory at CACHE/v1/XX (the old per-file cache's layout,
    which the store does not read) to a private directory: neither the trim nor storing
    follows them, and that directory keeps its file and gets nothing new."""

    def test_trim_and_store_never_follow_links_in_the_cache_directory(self):
        private = self.path("private")
        os.makedirs(private, mode=0o700)
        with open(os.path.join(private, "f"), "wb") as f:
            f.write(b"keep me" * 1000)
        cache = self.path("cache")
        os.makedirs(os.path.join(cache, "v1"), mode=0o700)
        os.chmod(cache, 0o700)
        os.symlink(private, os.path.join(cache, "v1", "zz"))
        for k in range(256):
            os.symlink(private, os.path.join(cache, "v1", "%02x" % k) if k != 0x7a else os.path.join(cache, "v1", "x"))
        root = self.copy_site()
        # a limit far below what the run stores: a trim runs at its end
        r = run(["--cache-dir", cache, "--cache-max-size", "1k", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(sorted(os.listdir(private)), ["f"], "the run wrote or removed through a planted link")
        with open(os.path.join(private, "f"), "rb") as f:
            self.assertEqual(f.read(), b"keep me" * 1000)
        self.assertTrue(store_rows(cache) is not None)


class PrivateCache(PCTestCase):
    def test_entries_0600_directories_0700_whatever_the_umask(self):
        """A 0600 source's content must not become readable by others through the cache."""
        root = self.copy_site()
        cache = self.path("cache")
        r = run(["--cache-dir", cache, root], umask=0)
        self.assertEqual(r.rc, 0, r)
        for dirpath, dirnames, filenames in os.walk(cache):
            self.assertEqual(stat.S_IMODE(os.lstat(dirpath).st_mode), 0o700, dirpath)
            for n in filenames:
                p = os.path.join(dirpath, n)
                self.assertEqual(stat.S_IMODE(os.lstat(p).st_mode), 0o600, p)

    def test_a_cache_others_can_write_or_own_is_refused(self):
        root = self.copy_site()
        for name, setup in (("world-writable", lambda p: os.chmod(p, 0o777)),
                            ("group-writable", lambda p: os.chmod(p, 0o770)),
                            ("another user's", lambda p: os.chown(p, NOBODY, NOBODY))):
            with self.subTest(cache=name):
                cache = self.path("cache-" + name.replace(" ", "-").replace("'", ""))
                os.makedirs(cache, mode=0o700)
                setup(cache)
                before = walk_all(root)
                r = run(["--cache-dir", cache, root])
                self.assertEqual(r.rc, 2, r)
                self.assertIn("precompress: %s: refusing a cache another user owns or others can write"
                              % cache, r.err_lines, r)
                self.assertEqual(sorted(walk_all(root)), sorted(before), "a refused run wrote outputs")
                self.assertEqual(os.listdir(cache), [], "a refused cache was written")

    def test_a_cache_below_a_directory_others_can_write_is_refused(self):
        """SQLite opens the store by name: whoever can write a directory above the cache
        could rename it and put their own in its place between our check and that open.
        So every directory above it must be root's or ours and writable by no one else,
        unless sticky (/tmp: no one else may rename what is ours in it)."""
        root = self.copy_site()
        cases = (("world-writable parent", 1, lambda p: os.chmod(p, 0o777)),
                 ("group-writable grandparent", 2, lambda p: os.chmod(p, 0o775)),
                 ("another user's grandparent", 2, lambda p: os.chown(p, NOBODY, NOBODY)))
        for name, up, setup in cases:
            with self.subTest(case=name):
                top = self.path(name.replace(" ", "-").replace("'", ""))
                cache = os.path.join(top, "a", "cache")
                os.makedirs(cache, mode=0o700)
                os.chmod(top, 0o755)
                setup(os.path.join(top, "a") if up == 1 else top)
                before = walk_all(root)
                r = run(["--cache-dir", cache, root])
                self.assertEqual(r.rc, 2, r)
                self.assertIn("precompress: %s: refusing a cache another user owns or others can write"
                              % cache, r.err_lines, r)
                self.assertEqual(sorted(walk_all(root)), sorted(before), "a refused run wrote outputs")
                self.assertEqual(os.listdir(cache), [], "a refused cache was written")

    def test_a_sticky_directory_above_and_a_link_to_the_cache_are_fine(self):
        """/tmp's case: world-writable and sticky, with our own directory in it. And the
        cache may be named through a symlink: resolved once, the store is made at its
        target, and the link is left as it is."""
        sticky = self.path("sticky")
        os.makedirs(sticky)
        os.chmod(sticky, 0o1777)
        cache = os.path.join(sticky, "cache")
        link = self.path("link")
        os.symlink(cache, link)
        for arg in (cache, link):
            with self.subTest(cache=arg):
                r = run(["--json", "--cache-dir", arg, self.copy_site("site-" + os.path.basename(arg))])
                self.assertEqual(r.rc, 0, r)
                self.assertTrue(os.path.isfile(os.path.join(cache, STORE)), os.listdir(cache))
                self.assertTrue(os.path.islink(link))
        self.assertGreater(json.loads(r.out)["cached"], 0, "the second run, through the link, hit")

    def test_a_store_others_can_write_or_own_is_refused(self):
        """The store and SQLite's files beside it are checked like the directory: another
        account's file, one others can write, or a link at one of their names is refused
        before any work (exit 2), and nothing in the cache changes."""
        root = self.copy_site()
        cases = (("store owned by another user", STORE, lambda p: os.chown(p, NOBODY, NOBODY)),
                 ("store others can write", STORE, lambda p: os.chmod(p, 0o666)),
                 ("-wal owned by another user", STORE + "-wal", lambda p: os.chown(p, NOBODY, NOBODY)),
                 ("-shm a link", STORE + "-shm", None))
        for name, fname, setup in cases:
            with self.subTest(case=name):
                cache = self.path("cache-" + name.replace(" ", "-"))
                self.run_ok(["--cache-dir", cache, self.copy_site("first-" + name.replace(" ", "-"))])
                p = os.path.join(cache, fname)
                if setup is None:
                    os.symlink(self.path("elsewhere"), p)
                else:
                    if not os.path.exists(p):
                        with open(p, "wb"):
                            pass
                        os.chmod(p, 0o600)
                    setup(p)
                before = cache_state(cache)
                out_before = walk_all(root)
                r = run(["--cache-dir", cache, root])
                self.assertEqual(r.rc, 2, r)
                self.assertIn("precompress: %s: refusing a cache another user owns or others can write"
                              % cache, r.err_lines, r)
                self.assertEqual(sorted(walk_all(root)), sorted(out_before), "a refused run wrote outputs")
                self.assertEqual(cache_state(cache), before, "a refused cache was changed")




class DeepTree(PCTestCase):
    def test_a_tree_deeper_than_path_max(self):
        """60 levels of 80-byte names: paths of about 4,900 bytes, past PATH_MAX (4096). Each
        directory is opened below its parent by name, so the walk and the jobs reach the bottom
        and the outputs decode to their sources."""
        root = self.path("deep")
        os.makedirs(root)
        names = ["d%02d" % i + "x" * 77 for i in range(60)]
        files = {"app.js": words_data(20000, seed=9), "style.css": words_data(30000, seed=10)}
        m = self.path("m.json")
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for n in names:
                os.mkdir(n, dir_fd=fd)
                nfd = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nfd
            for name, data in files.items():
                w = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
                os.write(w, data)
                os.close(w)
            r = run(["-q", "--manifest", m, root])
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.error_lines(), [], r)
            for name, data in files.items():
                for ext, unpack in (("gz", gzip.decompress), ("br", brotli.decompress)):
                    o = os.open(name + "." + ext, os.O_RDONLY, dir_fd=fd)
                    with os.fdopen(o, "rb") as f:
                        self.assertEqual(unpack(f.read()), data, name + "." + ext)
        finally:
            os.close(fd)
        deep = "/".join(names)
        self.assertGreater(len(deep), 4096)
        paths = sorted(e["path"] for e in json.load(open(m))["files"])
        self.assertEqual(paths, [deep + "/" + n for n in sorted(files)])


if __name__ == "__main__":
    main()
