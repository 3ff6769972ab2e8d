#!/usr/bin/python3
"""Symbolic links in the tree, each case caused for real:

- Symlinks: a link at an output's name is replaced by the output (or removed), never written
  through; a link to a file is compressed beside the link, its target untouched; a linked
  directory is not entered without --follow, and with it is entered once, loops left;
- Loops: with --follow, links round to an ancestor, to the root, a second way into a directory
  and links to links: every file recorded once, the broken ones skipped "broken-link";
  without it, a directory outside the tree is never entered;
- SymlinkedFiles: a link another account made is followed only to a file of its own, or
  beside or above the link in the PATH; else skipped ("link-owner") unread;
- WalkSwap: a directory swapped for a link after the walk listed it and before it opened it is
  not entered: nothing of the target reaches the manifest, stdout or stderr.
"""
import sys

sys.dont_write_bytecode = True
import fcntl
import json
import os
import shutil
import stat
import subprocess
import time

from pctest import (F_SETPIPE_SZ, NOBODY, PROGRAM, SETPRIV, PCTestCase, br_oracle, child_env, decode, fast_levels,
                    gz_oracle, json_lines, listing, load_manifest, main, manifest_by_path, pipe_bytes, read, run,
                    words_data, write)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()


class Symlinks(PCTestCase):
    def setUp(self):
        super().setUp()
        self.outside = self.path("outside")
        os.makedirs(self.outside)
        self.target = os.path.join(self.outside, "target.bin")
        write(self.target, b"precious bytes that must not be overwritten\n")
        os.utime(self.target, ns=(1_400_000_000_111_111_111, 1_400_000_000_222_222_222))

    def assertTargetUntouched(self):
        st = os.lstat(self.target)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(read(self.target), b"precious bytes that must not be overwritten\n")
        self.assertEqual(st.st_mtime_ns, 1_400_000_000_222_222_222)

    def test_symlink_at_output_name_is_replaced(self):
        root = self.copy_site()
        css = os.path.join(root, "css", "app.css")
        os.symlink(self.target, css + ".gz")
        os.symlink(os.path.join(self.outside, "nowhere"), css + ".br")     # dangling
        rnd = os.path.join(root, "assets", "random.bin")
        os.symlink(self.target, rnd + ".gz")                               # not kept: link removed
        outside_before = listing(self.outside)
        self.run_ok(["-q", root])
        data = read(css)
        for ext, oracle in (("gz", gz_oracle), ("br", br_oracle)):
            st = os.lstat(css + "." + ext)
            self.assertTrue(stat.S_ISREG(st.st_mode), "app.css.%s is still a symlink" % ext)
            self.assertEqual(read(css + "." + ext), oracle(data))
        self.assertFalse(os.path.lexists(rnd + ".gz"), "a symlink at an unwanted output name must be removed")
        self.assertTargetUntouched()
        self.assertEqual(listing(self.outside), outside_before, "something was written outside the tree")

    def test_symlink_to_file_is_compressed_beside_the_link(self):
        root = self.copy_site()
        os.symlink("app.js", os.path.join(root, "js", "alias.js"))
        ext_css = os.path.join(self.outside, "ext.css")
        write(ext_css, b".ext { color: blue; }\n" * 100)
        os.symlink(ext_css, os.path.join(root, "css", "ext.css"))
        outside_before = listing(self.outside)
        self.run_ok(["-q", root])
        for link, src in (("js/alias.js", "js/app.js"), ("css/ext.css", ext_css)):
            data = read(os.path.join(root, src))
            for ext, oracle in (("gz", gz_oracle), ("br", br_oracle)):
                out = os.path.join(root, link + "." + ext)
                self.assertTrue(stat.S_ISREG(os.lstat(out).st_mode), out)
                self.assertEqual(read(out), oracle(data), out)
            self.assertTrue(os.path.islink(os.path.join(root, link)), "the link itself was replaced")
        self.assertEqual(listing(self.outside), outside_before, "outputs must be beside the link, not the target")

    def make_linked_tree(self):
        root = self.copy_site()
        ext_dir = os.path.join(self.outside, "lib")
        os.makedirs(ext_dir)
        write(os.path.join(ext_dir, "lib.css"), b".lib { margin: 0; }\n" * 100)
        os.symlink(ext_dir, os.path.join(root, "linked"))
        os.symlink(".", os.path.join(root, "self"))                          # loop to the root
        os.symlink("../../..", os.path.join(root, "vendor", "lib", "deep", "up"))  # loop to an ancestor
        return root, ext_dir

    def test_symlinked_dir_not_entered_without_follow(self):
        root, ext_dir = self.make_linked_tree()
        outside_before = listing(self.outside)
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root], timeout=60)
        self.assertEqual(listing(self.outside), outside_before)
        paths = [e["path"] for e in load_manifest(man)[0]["files"]]
        self.assertFalse([p for p in paths if p.startswith(("linked/", "self/", "vendor/lib/deep/up/"))], paths)
        self.assertNotIn("linked", paths)

    def test_follow_enters_links_and_survives_loops(self):
        root, ext_dir = self.make_linked_tree()
        man = self.path("m.json")
        r = run(["-q", "--follow", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        out = os.path.join(root, "linked", "lib.css.gz")
        self.assertTrue(os.path.isfile(out), "--follow did not enter the symlinked directory")
        self.assertEqual(decode("gz", out), read(os.path.join(ext_dir, "lib.css")))
        paths = [e["path"] for e in load_manifest(man)[0]["files"]]
        self.assertIn("linked/lib.css", paths)
        self.assertEqual(paths.count("vendor/lib/deep/x.js"), 1)
        self.assertEqual(len(paths), len(set(paths)))
        self.assertFalse([p for p in paths if p.startswith(("self/", "vendor/lib/deep/up/"))],
                         "a loop was entered: %r" % paths)


class Loops(PCTestCase):
    def test_symlink_loops_with_follow(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        os.makedirs(os.path.join(root, "a", "b"))
        write(os.path.join(root, "a", "b", "deep.js"), words_data(3000, seed=40))
        os.symlink("..", os.path.join(root, "a", "b", "up"))        # to an ancestor
        os.symlink(".", os.path.join(root, "self"))                  # to the root
        os.symlink("../a", os.path.join(root, "sub", "side"))        # a second way into a/
        os.symlink("l2", os.path.join(root, "l1"))                   # link to link to link...
        os.symlink("l1", os.path.join(root, "l2"))
        man = self.path("m.json")
        r = run(["--json", "--follow", "--manifest", man, root], timeout=30)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        paths = [e["path"] for e in load_manifest(man)[0]["files"]]
        self.assertEqual(len(paths), len(set(paths)), "a file was recorded twice: %r" % paths)
        real = [p for p in paths if p.endswith("deep.js")]
        self.assertEqual(len(real), 1, "deep.js reached more than once (a loop entered): %r" % paths)
        e = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(e[b"l1"].get("skipped"), "broken-link")
        self.assertEqual(e[b"l2"].get("skipped"), "broken-link")
        self.assertProcessed(root, others + ["a/b/deep.js"])
        self.assertNoTemps(root)

    def test_symlinked_directory_outside_not_entered(self):
        root = self.path("site")
        os.makedirs(root)
        others = self.others(root)
        outside = self.path("outside")
        os.makedirs(os.path.join(outside, "lib"))
        write(os.path.join(outside, "lib", "lib.js"), words_data(4000, seed=41))
        os.symlink(outside, os.path.join(root, "ext"))
        os.symlink(os.path.join(outside, "lib"), os.path.join(root, "sub", "lib"))
        before = listing(outside)
        man = self.path("m.json")
        r = run(["--json", "--manifest", man, root], timeout=30)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(listing(outside), before, "something was written outside the tree")
        paths = [e["path"] for e in load_manifest(man)[0]["files"]]
        self.assertFalse([p for p in paths if p.startswith(("ext", "sub/lib"))], paths)
        self.assertProcessed(root, others)


class SymlinkedFiles(PCTestCase):
    """A symlinked file is followed only when its link is the run's user's, when the
    link's owner owns the file too, or when the file lies beside or above the link in the
    PATH; else it is skipped ("link-owner") unread."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("needs root and setpriv: the other account is uid %d" % NOBODY)
        os.chmod(self.tmp, 0o755)

    def build(self):
        secret_dir = self.path("root-only")
        os.makedirs(secret_dir, mode=0o700)
        self.secret = os.path.join(secret_dir, "secret.env")
        with open(self.secret, "wb") as f:
            f.write(b"DATABASE_PASSWORD=hunter2-and-more-to-make-it-compress\n" * 50)
        os.chmod(self.secret, 0o644)
        shared = self.path("shared")
        os.makedirs(shared)
        with open(os.path.join(shared, "lib.css"), "wb") as f:
            f.write(words_data(20000, seed=41))
        theirs = self.path("theirs")
        os.makedirs(theirs)
        with open(os.path.join(theirs, "own.css"), "wb") as f:
            f.write(words_data(20000, seed=42))
        os.chown(theirs, NOBODY, NOBODY)
        os.chown(os.path.join(theirs, "own.css"), NOBODY, NOBODY)
        t = self.path("t")
        os.makedirs(os.path.join(t, "css", "sub"))
        os.makedirs(os.path.join(t, "private"), mode=0o700)
        with open(os.path.join(t, "css", "app.css"), "wb") as f:
            f.write(words_data(20000, seed=43))
        with open(os.path.join(t, "private", "key.txt"), "wb") as f:
            f.write(b"a key of root's, in a 0700 directory of the tree\n" * 50)
        os.chmod(os.path.join(t, "private", "key.txt"), 0o644)
        for d in (t, os.path.join(t, "css"), os.path.join(t, "css", "sub")):
            os.chown(d, NOBODY, NOBODY)  # the other account may write the tree
        # root's own link: followed
        os.symlink(os.path.join(shared, "lib.css"), os.path.join(t, "lib.css"))
        # the other account's links
        for target, link in ((self.secret, "leak.css"),                   # root's file: skipped
                             ("private/key.txt", "peek.txt"),              # below, 0700: skipped
                             ("app.css", "css/hashed.css"),                # beside it: followed
                             ("../app.css", "css/sub/up.css"),             # above it: followed
                             (os.path.join(theirs, "own.css"), "own.css")):  # its own: followed
            subprocess.run(SETPRIV + ["ln", "-s", target, os.path.join(t, link)], check=True)
        return t

    SKIPPED = ("leak.css", "peek.txt")
    FOLLOWED = ("lib.css", "css/hashed.css", "css/sub/up.css", "own.css", "css/app.css")

    def test_links_another_account_made(self):
        t = self.build()
        m = self.path("m.json")
        r = run(["-v", "--json", "--manifest", m, t])
        for name in self.SKIPPED:
            for ext in ("gz", "br"):
                self.assertFalse(os.path.lexists(os.path.join(t, name + "." + ext)),
                                 "%s.%s written: a file behind another account's link was read" % (name, ext))
        self.assertEqual(r.rc, 0, r)
        lines = set(r.out_lines[:-1])
        for name in self.SKIPPED:
            self.assertIn("skipped %s/%s (link-owner)" % (t, name), lines, r)
        for name in self.FOLLOWED:
            p = os.path.join(t, name)
            for ext in ("gz", "br"):
                self.assertEqual(decode(ext, p + "." + ext), open(p, "rb").read(), name)
            self.assertTrue(any(l.startswith("compressed %s (" % p) or l.startswith("copied %s (" % p)
                                for l in lines), (name, r))
        s = r.summary()
        self.assertEqual(s["skipped"]["link-owner"], 2, s)
        files = {e["path"]: e for e in json.load(open(m))["files"]}
        for name in self.SKIPPED:
            self.assertEqual(files[name].get("skipped"), "link-owner", files[name])
            self.assertEqual(files[name]["size"], 0, files[name])
        r = run(["--json-lines", t])
        self.assertEqual(r.rc, 0, r)
        recs = json_lines(r)
        for name in self.SKIPPED:
            self.assertEqual((recs[name]["status"], recs[name].get("skip")), ("skipped", "link-owner"))
        self.assertIn(recs["css/hashed.css"]["status"], ("compressed", "copied"), recs["css/hashed.css"])


class WalkSwap(PCTestCase):
    def test_directory_swapped_for_a_symlink_mid_walk_is_not_entered(self):
        """`mv a a.old; ln -s SECRET a` after the walk listed the root (so `a`
        waits on its stack as a directory) and before it opened `a`. Nothing of SECRET may
        reach the manifest, stdout or stderr, and nothing there is reaped or written.

        The run is held at that point by its own -v lines: its stdout is a one-page pipe that
        nobody reads until the swap is done, and the "skipped z/..." lines of z (2,000 empty
        files, walked before a: the walk's stack) fill it, so the loop thread blocks inside z."""
        secret = self.path("secret")
        os.makedirs(secret)
        with open(os.path.join(secret, "secret.js"), "wb") as f:
            f.write(words_data(20000, seed=3))
        # a temp name of ours, made before the run and not locked: a killed run's, to a walk
        with open(os.path.join(secret, ".old.js.gz.AbC123.tmp"), "wb") as f:
            f.write(b"half")
        before = sorted(os.listdir(secret))
        root = self.path("t")
        a = os.path.join(root, "a")
        os.makedirs(a)
        with open(os.path.join(a, "real.js"), "wb") as f:
            f.write(words_data(20000, seed=4))
        z = os.path.join(root, "z")
        os.makedirs(z)
        for i in range(2000):
            open(os.path.join(z, "e%05d" % i), "wb").close()
        m = self.path("m.json")
        rfd, wfd = os.pipe()
        try:
            size = fcntl.fcntl(wfd, F_SETPIPE_SZ, 4096)
            with open(self.path("err"), "wb") as err:
                p = subprocess.Popen([PROGRAM, "-v", "--manifest", m, root], stdin=subprocess.DEVNULL,
                                     stdout=wfd, stderr=err, env=child_env())
            os.close(wfd)
            wfd = -1
            deadline = time.time() + 60
            while pipe_bytes(rfd) < size:
                self.assertIsNone(p.poll(), "the run ended before its stdout filled")
                self.assertLess(time.time(), deadline, "the run's stdout never filled")
                time.sleep(0.005)
            os.rename(a, a + ".old")
            os.symlink(secret, a)
            out = b""
            while True:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                out += chunk
            rc = p.wait(timeout=120)
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
        with open(self.path("err"), "rb") as f:
            err = f.read()
        for name in (b"secret.js", b".old.js.gz"):
            self.assertNotIn(name, out, "the link's target was listed")
            self.assertNotIn(name, err, "the link's target was listed")
        self.assertEqual(sorted(os.listdir(secret)), before, "wrote or removed in the link's target")
        paths = [e["path"] for e in json.load(open(m))["files"]]
        self.assertEqual([q for q in paths if not q.startswith("z/")], [],
                         "entered a, which was a link when the walk came to it")
        self.assertEqual(len(paths), 2000)
        self.assertEqual(rc, 0, err)


if __name__ == "__main__":
    main()
